#!/usr/bin/env bash
# A fuzzing campaign: each target in turn (one process: -jobs=1, so that a shared machine keeps
# a CPU), RUNS executions from its seeds and the corpus of earlier campaigns, then one line per
# target: executions, seconds, executions per second, and the finding if there was one (the
# input is kept as BUILD_DIR/fuzz/crash-*, and the run stops at the first finding of a target).
#   fuzz/run.sh [BUILD_DIR] [RUNS] [TARGET...]
set -uo pipefail
build=${1:-build-fuzz}
runs=${2:-1000000}
shift 2 2> /dev/null || shift $#
targets=("$@")
if ((${#targets[@]} == 0)); then
  targets=(proc_parsers system_parsers powercap config event_spec listen_address symbols elf http_request recording)
fi
dir="$build/fuzz"
status=0
printf '%-16s %12s %10s %10s  %s\n' target executions seconds "exec/s" finding
for t in "${targets[@]}"; do
  mkdir -p "$dir/corpus/$t"
  log="$dir/campaign-$t.log"
  start=$(date +%s.%N)
  (cd "$dir" && "./fuzz_$t" -runs="$runs" -jobs=1 -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
     "corpus/$t" "seeds/$t") > "$log" 2>&1
  rc=$?
  end=$(date +%s.%N)
  execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
  secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')
  finding=none
  if ((rc != 0)); then
    finding=$(grep -m1 -E 'ERROR: (libFuzzer|AddressSanitizer|LeakSanitizer)|runtime error|SUMMARY' "$log" | cut -c1-100)
    status=1
  fi
  rate=$(awk -v n="${execs:-0}" -v s="$secs" 'BEGIN { printf "%.0f", (s > 0) ? n / s : 0 }')
  printf '%-16s %12s %10s %10s  %s\n' "$t" "${execs:-0}" "$secs" "$rate" "$finding"
done
exit $status
