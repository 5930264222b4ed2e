# SPDX-License-Identifier: Apache-2.0
# The two commands of the quick start:
#   make run    installs only what the binary needs (scripts/install-deps.sh run), builds only
#               perf-monitor (no tests, benchmarks, manual pages or debug information), and
#               starts the live system-wide monitor
#   make test   installs what is missing, builds, and runs the whole test suite, then again
#               under AddressSanitizer + UndefinedBehaviorSanitizer
#   make fuzz   builds the libFuzzer targets (clang) and runs each for a million executions
# Other targets: build (with the benchmarks), build-tests (without), bench, clean.

JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan
FUZZ_BUILD ?= build-fuzz
FUZZ_RUNS ?= 1000000
# Warnings are errors in the project's own builds (make test, CI), never in a packager's cmake.
WERROR ?= -DPM_WERROR=ON

.PHONY: run test deps build build-tests build-asan build-fuzz fuzz bench clean

deps:
	@scripts/install-deps.sh

# The tests, benchmarks and debug information on explicitly: after `make run` (which turns them
# off in the same build directory), the CMake cache would otherwise keep them off.
build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON -DPM_BENCH=ON -DPM_DEBUG_INFO=ON $(WERROR)
	cmake --build $(BUILD) -j $(JOBS)

# What `make test` runs, without the benchmarks (no test runs them): `make bench` or `make build`
# afterwards adds them to the same tree, the library and binary as they are.
build-tests: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=ON -DPM_BENCH=OFF -DPM_DEBUG_INFO=ON $(WERROR)
	cmake --build $(BUILD) -j $(JOBS)

build-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPM_SANITIZE=ON -DPM_BENCH=OFF $(WERROR)
	cmake --build $(ASAN_BUILD) -j $(JOBS)

# The fuzzers: every parser of outside input, under clang's libFuzzer with ASan and UBSan.
build-fuzz: deps
	cmake -S . -B $(FUZZ_BUILD) -DPM_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo $(WERROR)
	cmake --build $(FUZZ_BUILD) -j $(JOBS)

fuzz: build-fuzz
	fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_RUNS)

# The quickest way to the live monitor on a bare Debian 12 (bench/first_run.sh measures it).
run:
	@scripts/install-deps.sh run
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DBUILD_TESTING=OFF -DPM_BENCH=OFF -DPM_DEBUG_INFO=OFF $(WERROR)
	cmake --build $(BUILD) -j $(JOBS) --target perf-monitor
	./$(BUILD)/perf-monitor

# After each run, the reason of every skipped test (a feature this host lacks) is printed.
SKIP_REASONS = grep -h -A1 ': Skipped$$' Testing/Temporary/LastTest.log | grep -v -- '^--$$' | paste - - | sed 's/^/skipped: /' || true

# A failed test fails `make test` (the skip reasons are printed either way).
# Two tests at a time (the tests that compare two measurements run alone: RUN_SERIAL).
# Under the sanitizers: the sanitizer build's unit tests and the tests that run perf-monitor's
# code in their own process; then the release build's test programs that drive the binary
# (label `integration`), driving the sanitizer build's binary. (The programs are the same in
# either build: compiled once.)
TEST_JOBS ?= 2
SANITIZER_ENV = ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1
test: build-tests build-asan build-fuzz
	cd $(BUILD) && { ctest --output-on-failure -j $(TEST_JOBS); rc=$$?; $(SKIP_REASONS); exit $$rc; }
	cd $(ASAN_BUILD) && { $(SANITIZER_ENV) ctest --output-on-failure -j $(TEST_JOBS); rc=$$?; $(SKIP_REASONS); exit $$rc; }
	cd $(BUILD) && { $(SANITIZER_ENV) PM_TEST_SANITIZED=1 PM_TEST_BINARY=$(abspath $(ASAN_BUILD))/perf-monitor \
	  ctest -L integration --output-on-failure -j $(TEST_JOBS); rc=$$?; $(SKIP_REASONS); exit $$rc; }
	cd $(FUZZ_BUILD) && ctest --output-on-failure -j $(TEST_JOBS)

bench: build
	@scripts/install-deps.sh bench
	bench/run-all.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD) $(FUZZ_BUILD)
