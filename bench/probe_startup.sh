#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# What symbol loading and demangling add to `perf-monitor run --probe` start-up, side by side:
# a Rust program of 1,000 functions (generated here, built by rustc in both manglings) probed by
# a path (`app::m7::f7_3`), against a C program probed by its one function. Both commands exit
# at once, so what is timed is perf-monitor: start-up, attach, the end. Each case runs ROUNDS
# times, interleaved; the median wall and CPU (user + system, perf-monitor and its command) are
# printed, and what the Rust cases add over the C one (the goal: <= 50 ms).
#   bench/probe_startup.sh [BUILD_DIR] [ROUNDS]      KEEP=1 keeps the generated programs
set -euo pipefail
build=${1:-build}
rounds=${2:-7}
pm="$(realpath "$build/perf-monitor")"
command -v rustc > /dev/null || { echo "probe_startup: rustc is missing (apt-get install rustc)" >&2; exit 1; }
dir=$(mktemp -d /tmp/pm-probe-startup.XXXXXX)
[ "${KEEP:-0}" = 1 ] && echo "programs in $dir" || trap 'rm -rf "$dir"' EXIT
ulimit -l unlimited 2> /dev/null || true

# 100 modules of 10 functions, a trait impl per module; main calls one of each through a table.
{
  echo "mod app {"
  for m in $(seq 0 99); do
    echo "  pub mod m$m {"
    echo "    pub trait Step { fn step(&self, x: u64) -> u64; }"
    echo "    pub struct S;"
    echo "    impl Step for S { #[inline(never)] fn step(&self, x: u64) -> u64 { x.wrapping_mul($m + 3) } }"
    for f in $(seq 0 8); do
      echo "    #[inline(never)] pub fn f${m}_$f(x: u64) -> u64 { std::hint::black_box(x).wrapping_add($f) }"
    done
    echo "  }"
  done
  echo "}"
  echo "fn main() {"
  echo "  let mut x: u64 = std::env::args().count() as u64;"
  for m in $(seq 0 99); do
    echo "  { use app::m$m::Step; x = app::m$m::S.step(x);"
    for f in $(seq 0 8); do echo "    x = app::m$m::f${m}_$f(x);"; done
    echo "  }"
  done
  echo "  println!(\"{}\", x);"
  echo "}"
} > "$dir/many.rs"
rustc -O --crate-name many "$dir/many.rs" -o "$dir/rust-legacy" 2> /dev/null
rustc -O --crate-name many -C symbol-mangling-version=v0 "$dir/many.rs" -o "$dir/rust-v0" 2> /dev/null ||
  { echo "probe_startup: this rustc has no v0 mangling: legacy only" >&2; rm -f "$dir/rust-v0"; }
printf '#include <stdio.h>\n__attribute__((noinline)) int one(int x) { return x + 1; }\nint main(void) { printf("%%d\\n", one(1)); return 0; }\n' > "$dir/one.c"
cc -O2 "$dir/one.c" -o "$dir/c-one"
n=$(nm "$dir/rust-legacy" | grep -c ' [tT] ')
echo "the Rust program: $n function symbols ($(nm "$dir/rust-legacy" | grep -c ' [tT] .*many') of its own), legacy$([ -e "$dir/rust-v0" ] && echo " and v0") mangling"

# One timed run: "wall_ms cpu_ms" (CPU of perf-monitor and its command, from bash's times).
timed() {
  local t0 t1 c0 c1 me=$BASHPID
  c0=$(awk '{print $14+$15+$16+$17}' /proc/$me/stat)
  t0=$(date +%s%N)
  "$pm" run --format json -o /dev/null "$@" > /dev/null 2>&1 || { echo "probe_startup: failed: $*" >&2; exit 1; }
  t1=$(date +%s%N)
  c1=$(awk '{print $14+$15+$16+$17}' /proc/$me/stat)
  echo "$(((t1 - t0) / 1000000)) $(((c1 - c0) * 1000 / $(getconf CLK_TCK)))"
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

declare -A wall cpu
cases=(c rust-legacy rust-legacy-trait)
[ -e "$dir/rust-v0" ] && cases+=(rust-v0)
for ((r = 0; r < rounds; r++)); do
  for c in "${cases[@]}"; do
    case $c in
      c) read -r w u < <(timed --probe "$dir/c-one:one" -- "$dir/c-one") ;;
      rust-legacy) read -r w u < <(timed --probe "$dir/rust-legacy:app::m7::f7_3" -- "$dir/rust-legacy") ;;
      rust-legacy-trait) read -r w u < <(timed --probe "$dir/rust-legacy:<app::m7::S as app::m7::Step>::step" -- "$dir/rust-legacy") ;;
      rust-v0) read -r w u < <(timed --probe "$dir/rust-v0:app::m7::f7_3" -- "$dir/rust-v0") ;;
    esac
    wall[$c]+="$w "
    cpu[$c]+="$u "
  done
done
base_w=$(tr ' ' '\n' <<< "${wall[c]}" | grep . | median)
base_c=$(tr ' ' '\n' <<< "${cpu[c]}" | grep . | median)
printf '%-20s %10s %10s %12s %12s\n' case "wall ms" "CPU ms" "+wall vs C" "+CPU vs C"
for c in "${cases[@]}"; do
  w=$(tr ' ' '\n' <<< "${wall[$c]}" | grep . | median)
  u=$(tr ' ' '\n' <<< "${cpu[$c]}" | grep . | median)
  printf '%-20s %10s %10s %12s %12s\n' "$c" "$w" "$u" "$((w - base_w))" "$((u - base_c))"
done
echo "(median of $rounds; the goal: a Rust binary of 1,000 functions adds <= 50 ms)"
