#!/usr/bin/env bash
# The fuzzers' seed corpora: the captured /proc and /sys files of tests/fixtures (with the byte
# that picks their parser in front), configuration files, event lists, addresses, probe specs,
# small ELF files (one with MiniDebugInfo), HTTP requests and recordings for `report`.
#   fuzz/make_seeds.sh SOURCE_DIR OUT_DIR COMPILER
set -euo pipefail
src=$1
out=$2
cc=$3  # compiles the ELF seeds
fx=$src/tests/fixtures
rm -rf "$out"
mkdir -p "$out"/{proc_parsers,system_parsers,powercap,config,event_spec,listen_address,symbols,elf,http_request,recording}

# A seed of parser N: the byte N, then the file.
seed() { { printf "\\x$(printf %02x "$2")"; cat "$3"; } > "$out/$1/$(basename "$3")-$2"; }
seed proc_parsers 0 "$fx/proc/pid/stat"
seed proc_parsers 0 "$fx/proc/pid/stat_weird_comm"
seed proc_parsers 1 "$fx/proc/pid/status"
seed proc_parsers 2 "$fx/proc/pid/smaps_rollup"
seed proc_parsers 3 "$fx/proc/pid/io"
seed proc_parsers 0 "$fx/proc/top/task_stat"
seed proc_parsers 1 "$fx/proc/top/status"
seed proc_parsers 4 "$fx/proc/top/schedstat"
seed proc_parsers 5 "$fx/proc/top/statm"
seed proc_parsers 6 "$fx/proc/top/cmdline"
seed proc_parsers 7 "$fx/proc/top/cgroup"
printf '\x08usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\n' > "$out/proc_parsers/cpu.stat"
seed system_parsers 0 "$fx/proc/stat"
seed system_parsers 1 "$fx/proc/meminfo"
seed system_parsers 2 "$fx/sys/devices/system/node/node0/meminfo"
seed system_parsers 3 "$fx/proc/vmstat"
for f in cpu io memory; do seed system_parsers 4 "$fx/proc/pressure/$f"; done
seed system_parsers 5 "$fx/proc/loadavg"
seed system_parsers 6 "$fx/sys/class/thermal/thermal_zone0/temp"
printf '\x070-3,8-11\n' > "$out/system_parsers/cpulist"

# Powercap: the provider's fields (count, then per zone dir, energy, range, name, flags).
i=0
for z in "$fx"/sys/class/powercap/intel-rapl:*; do
  { printf '\x02'; printf '%s' "$(basename "$z")"; printf '\\'; cat "$z/energy_uj"; cat "$z/max_energy_range_uj";
    cat "$z/name"; printf '\x01\x01\xff\xff\xff\xff\xff\xff\xff\x7f'; } > "$out/powercap/zone$i"
  i=$((i + 1))
done

# Configuration: the example in docs/usage.md and small files of each section.
awk '/^```toml$/{on=1; next} /^```$/{on=0} on' "$src/docs/usage.md" > "$out/config/readme.toml"
printf '[pmc]\ninterval_secs = 1\nevents = ["instructions", "cycles", "cache_misses"]\n[output]\nformat = "json"\n' > "$out/config/legacy.toml"
printf '[[probes]]\nbinary = "./shop"\nfunction = "shop::process_request"\nrequest_id_arg = 1\n' > "$out/config/probes.toml"
printf '[prometheus]\nlisten = "[::1]:9464"\n[process_tree]\ninterval = "100ms"\n' > "$out/config/prometheus.toml"
printf 'a = { b = [1, 2.5, "x", \x27y\x27, """z"""], c.d = 1979-05-27T07:32:00Z }\n' > "$out/config/values.toml"

# Event lists against the fixture PMUs.
n=0
for e in 'cycles,instructions' 'cpu/event=0x2e,umask=0x41/' 'cpu/cache-misses/,power/energy-pkg/' 'r01c2,L1-dcache-load-misses' \
         'software/config=1/,software/config= 1/' 'cpu/event=0x3c,inv,edge,cmask=2/' 'msr/tsc/,task_clock'; do
  printf '%s' "$e" > "$out/event_spec/list$n"; n=$((n + 1))
done

n=0
for a in 9464 :9464 localhost:9464 0.0.0.0:9464 '[::1]:9464' '[::]:80' 192.0.2.7:65535; do
  printf '%s' "$a" > "$out/listen_address/addr$n"; n=$((n + 1))
done

# Symbols: the provider's selector first (0 spec, 1 demangle, 2 base name, 3 match).
printf '\x00./shop:shop::Cart::add(int):arg2' > "$out/symbols/spec"
printf '\x01N4shop4Cart3addEPKci' > "$out/symbols/demangle"
printf '\x02std::vector<int, std::allocator<int> >::push_back(int const&)' > "$out/symbols/base"
printf '\x03\x00Cart::add(char const *,int)' > "$out/symbols/match"
printf '\x03\x00shop::proces_request' > "$out/symbols/closest"

# ELF: a small shared library, and the same with its symbols in an xz-compressed .gnu_debugdata.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf 'int f(int x) { return x + 1; }\nint g(int x) { return f(x) * 2; }\n' > "$tmp/tiny.cpp"
"$cc" -shared -fPIC -nostdlib -O1 -o "$tmp/tiny.so" "$tmp/tiny.cpp"
cp "$tmp/tiny.so" "$out/elf/tiny.so"
if command -v objcopy > /dev/null && command -v xz > /dev/null; then
  objcopy --only-keep-debug "$tmp/tiny.so" "$tmp/mini"
  xz -f "$tmp/mini"
  objcopy --strip-all "$tmp/tiny.so" "$tmp/stripped"
  objcopy --add-section .gnu_debugdata="$tmp/mini.xz" "$tmp/stripped" "$out/elf/minidebuginfo.so"
fi

# HTTP: what Prometheus, curl and a browser send.
printf 'GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:9464\r\nUser-Agent: Prometheus/2.42.0\r\nAccept: text/plain;version=0.0.4;q=0.5,*/*;q=0.1\r\nAccept-Encoding: gzip\r\nX-Prometheus-Scrape-Timeout-Seconds: 10\r\n\r\n' > "$out/http_request/prometheus"
printf 'GET /metrics HTTP/1.1\r\nHost: localhost:9464\r\nUser-Agent: curl/7.88.1\r\nAccept: */*\r\n\r\n' > "$out/http_request/curl"
printf 'HEAD / HTTP/1.0\n\n' > "$out/http_request/head"

# Recordings for `report`: the fixture, one line of each record type, and odd shapes.
cp "$fx/report/bimodal.jsonl" "$out/recording/bimodal.jsonl"
cat > "$out/recording/types.jsonl" << 'EOF'
{"type":"header","schema_version":2,"mode":"run","command":["./app","-x"],"host":"h","cpus":2}
{"type":"interval","timestamp":"2026-11-30T00:00:01Z","interval_s":1.0,"cpu":{"utilisation_percent":{"all":{"user":12.5,"idle":80}}},"scheduler":{"runq_latency_seconds":{"count":3,"sum":0.5,"p50":null,"bucket_base":1e-09,"buckets":[0,1,2,0]}}}
{"type":"interval","timestamp":"2026-11-30T00:00:02Z","interval_s":1.0,"block_io":{"requests":{"vda":4}},"note":"x"}
{"type":"span","function":"f","request_id":4,"start":"2026-11-30T00:00:01Z","latency_s":0.003,"on_cpu_s":0.001}
{"type":"summary","mode":"run","exit_code":0,"duration_s":2.0,"proc_cpu_user_seconds":0.5,"probe":{"latency_seconds":{"f":{"count":1,"sum":0.003,"bucket_base":1e-09,"buckets":[0,1]}}}}
EOF
printf '{"type":"interval","a":[[[[1]]]],"b":{"__proto__":1e308},"c":"\\u00e9","a":2}\n{"timestamp":"t","x":1}\n' > "$out/recording/odd.jsonl"
