# SPDX-License-Identifier: Apache-2.0
# The two commands of the quick start:
#   make run    installs what is missing, builds, and starts the live system-wide monitor
#   make test   installs what is missing, builds, and runs the whole test suite, then again
#               under AddressSanitizer + UndefinedBehaviorSanitizer
# Other targets: build, bench, clean.

JOBS ?= $(shell nproc)
BUILD ?= build
ASAN_BUILD ?= build-asan

.PHONY: run test deps build build-asan bench clean

deps:
	@scripts/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build $(BUILD) -j $(JOBS)

build-asan: deps
	cmake -S . -B $(ASAN_BUILD) -DCMAKE_BUILD_TYPE=Debug -DPM_SANITIZE=ON -DPM_BENCH=OFF
	cmake --build $(ASAN_BUILD) -j $(JOBS)

run: build
	./$(BUILD)/perf-monitor

# After each run, the reason of every skipped test (a feature this host lacks) is printed.
SKIP_REASONS = grep -h -A1 ': Skipped$$' Testing/Temporary/LastTest.log | grep -v -- '^--$$' | paste - - | sed 's/^/skipped: /' || true

test: build build-asan
	cd $(BUILD) && ctest --output-on-failure -j 2 && $(SKIP_REASONS)
	cd $(ASAN_BUILD) && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j 2 && $(SKIP_REASONS)

bench: build
	@scripts/install-deps.sh bench
	bench/run-all.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(ASAN_BUILD)
