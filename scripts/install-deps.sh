#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages perf-monitor needs, when they are missing.
# Runs as root (apt-get); does nothing when everything is there already.
#   scripts/install-deps.sh run      only what building and running the binary needs (make run)
#   scripts/install-deps.sh [test]   that, and what the tests, fuzzers, manual pages and the
#                                    .deb need (make build, make test; the default)
#   scripts/install-deps.sh bench    that, and what bench/ compares against (make bench)
set -euo pipefail

mode=${1:-test}
case $mode in
  run | test | bench) ;;
  *) echo "usage: scripts/install-deps.sh [run|test|bench]" >&2; exit 2 ;;
esac

# The binary: every find_package/find_program/find_library/pkg_check_modules of CMakeLists.txt
# and src/report/CMakeLists.txt that is REQUIRED.
packages=(
  g++ cmake make pkg-config          # toolchain
  libfmt-dev                         # formatting of text output
  libcli11-dev                       # command-line parsing (subcommands, --help)
  libtomlplusplus-dev                # the TOML configuration file, with line/column errors
  nlohmann-json3-dev                 # JSON Lines output
  clang                              # compiling the eBPF programs (bpf/*.bpf.c)
  bpftool                            # vmlinux.h from the kernel's BTF, and the skeletons
  libbpf-dev libelf-dev zlib1g-dev   # loading the eBPF programs (libbpf and what it links)
  liblzma-dev                        # probes: symbols in the xz-compressed .gnu_debugdata
  libdw-dev                          # probes: where a function without a symbol was inlined (DWARF)
  libiberty-dev                      # probes: C++ and Rust (legacy and v0) names demangled
  libncurses-dev                     # perf-monitor top: the full-screen view on a terminal
  libsnappy-dev                      # --remote-write: snappy compression (Prometheus remote write)
  libjs-chart.js                     # report: Chart.js, compiled into the binary (self-contained pages)
)

if [ "$mode" != run ]; then
  packages+=(
    googletest libgtest-dev            # tests
    libbenchmark-dev                   # bench/: Google Benchmark
    linux-perf                         # tests: `perf stat`, the independent check of the counters
    llvm                               # tests and fuzz/: llvm-symbolizer, LLVM's tools
    libclang-rt-14-dev                 # fuzz/: libFuzzer and clang's sanitizer runtimes (make fuzz, make test)
    rustc rustfilt                     # tests: Rust programs probed by name, demangling checked against rustfilt
    binutils xz-utils                  # tests: build a MiniDebugInfo binary (objcopy, xz)
    tmux                               # tests: perf-monitor top driven and read as a person sees it
    dpkg-dev file                      # cpack -G DEB: dpkg-shlibdeps works out the package's dependencies
    help2man                           # the manual pages, made from --help at build time
    lintian                            # tests: Debian's checker on the .deb
    man-db bsdextrautils               # tests: man -l renders the pages (col)
    bash-completion zsh                # tests: the completions load and complete in both shells
    init-system-helpers                # tests: the maintainer scripts' deb-systemd-helper
    prometheus                         # tests: promtool's linter and a real server scraping perf-monitor
    fio bpftrace stress-ng             # tests: fio's own byte counts and bpftrace's run-queue waits as truths
    chromium fonts-dejavu-core         # tests: report pages loaded in headless Chromium
    nodejs                             # tests: OTLP decoded by OpenTelemetry's own code (npm's otlp-transformer)
  )
fi
if [ "$mode" = bench ]; then
  packages+=(bc util-linux hyperfine)   # bench/: arithmetic, taskset, start-up timings (startup.sh)
  packages+=(libbpf-tools)              # bench/stacks_overhead.sh: offcputime, beside --stacks=off
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: run as root (or install: apt-get install ${missing[*]})" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
