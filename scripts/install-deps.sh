#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs the Debian 12 packages perf-monitor needs to build and test, when they are missing.
# Runs as root (apt-get); does nothing when everything is there already.
#   scripts/install-deps.sh          build and test
#   scripts/install-deps.sh bench    also what bench/ compares against (bpftrace, bc)
set -euo pipefail

packages=(
  g++ cmake make pkg-config          # toolchain
  libfmt-dev                         # formatting of text output
  libcli11-dev                       # command-line parsing (subcommands, --help)
  libtomlplusplus-dev                # the TOML configuration file, with line/column errors
  nlohmann-json3-dev                 # JSON Lines output
  googletest libgtest-dev            # tests
  libbenchmark-dev                   # bench/: Google Benchmark
  linux-perf                         # tests: `perf stat`, the independent check of the counters
  clang llvm                         # compiling the eBPF programs (bpf/*.bpf.c)
  libclang-rt-14-dev                 # fuzz/: libFuzzer and clang's sanitizer runtimes (make fuzz, make test)
  bpftool                            # vmlinux.h from the kernel's BTF, and the skeletons
  libbpf-dev libelf-dev zlib1g-dev   # loading the eBPF programs (libbpf and what it links)
  liblzma-dev                        # probes: symbols in the xz-compressed .gnu_debugdata
  libdw-dev                          # probes: where a function without a symbol was inlined (DWARF)
  libiberty-dev                      # probes: C++ and Rust (legacy and v0) names demangled
  rustc rustfilt                     # tests: Rust programs probed by name, demangling checked against rustfilt
  binutils xz-utils                  # tests: build a MiniDebugInfo binary (objcopy, xz)
  libncurses-dev                     # perf-monitor top: the full-screen view on a terminal
  tmux                               # tests: perf-monitor top driven and read as a person sees it
  dpkg-dev file                      # cpack -G DEB: dpkg-shlibdeps works out the package's dependencies
  help2man                           # the manual pages, made from --help at build time
  lintian                            # tests: Debian's checker on the .deb
  man-db bsdextrautils               # tests: man -l renders the pages (col)
  bash-completion zsh                # tests: the completions load and complete in both shells
  init-system-helpers                # tests: the maintainer scripts' deb-systemd-helper
  prometheus                         # tests: promtool's linter and a real server scraping perf-monitor
  fio bpftrace stress-ng                    # tests: fio's own byte counts and bpftrace's run-queue waits as truths
  libjs-chart.js                     # report: Chart.js, compiled into the binary (self-contained pages)
  chromium fonts-dejavu-core         # tests: report pages loaded in headless Chromium
)

if [ "${1:-}" = bench ]; then
  packages+=(bc util-linux)   # bench/sched_overhead.sh: arithmetic, taskset
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
