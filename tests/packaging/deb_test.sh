#!/bin/sh
# `cpack -G DEB` builds a .deb that holds the binary, the systemd unit, the documentation and
# the examples, depends on the libraries the binary links, and whose binary runs.
#   deb_test.sh BUILD_DIR      (exit 77: skipped, with the reason)
set -eu
build=$1
for tool in cpack dpkg-deb dpkg-shlibdeps; do
  if ! command -v "$tool" >/dev/null; then
    echo "skipped: $tool not installed (cmake, dpkg, dpkg-dev; scripts/install-deps.sh installs them)"
    exit 77
  fi
done
out=$(mktemp -d "$build/deb-test.XXXXXX")
trap 'rm -rf "$out"' EXIT
cd "$build"
if ! cpack -G DEB -B "$out" >"$out/cpack.log" 2>&1; then
  cat "$out/cpack.log"
  exit 1
fi
deb=$(ls "$out"/*.deb)
echo "built $(basename "$deb")"
contents=$(dpkg-deb -c "$deb")
for f in ./usr/bin/perf-monitor ./usr/lib/systemd/system/perf-monitor.service \
         ./usr/share/doc/perf-monitor/README.md ./usr/share/doc/perf-monitor/metrics.md \
         ./usr/share/doc/perf-monitor/examples/prometheus.yml \
         ./usr/share/doc/perf-monitor/examples/grafana-dashboard.json; do
  if ! echo "$contents" | grep -q " $f\$"; then
    echo "$deb lacks $f; it holds:"
    echo "$contents"
    exit 1
  fi
done
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
if echo "$depends" | grep -q libcpp-httplib; then echo "Depends names libcpp-httplib, which is not linked"; exit 1; fi
echo "$depends" | grep -q libbpf || { echo "Depends lacks libbpf"; exit 1; }
dpkg-deb -x "$deb" "$out/root"
version=$("$out/root/usr/bin/perf-monitor" --version)
echo "$version"
[ "$version" = "$("$build/perf-monitor" --version)" ] || { echo "packaged binary says '$version'"; exit 1; }
