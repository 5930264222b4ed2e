#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# A newcomer's first run: how long, on a bare Debian 12 with a fresh clone, `make run` takes from
# being typed to the live monitor's first block on its standard output (the first line starting
# with `--- `). Goal: <= 120 s.
#
# The bare Debian 12 is a chroot made by debootstrap (bookworm, --variant=minbase) with git and
# make added (a newcomer has them: setup, not timed), kept as a tarball and unpacked afresh for
# each run, so the timed run always starts without any of the build's packages. The repository's
# committed HEAD is cloned into it (uncommitted changes are not measured). /proc, /sys (with the
# kernel's BTF, cgroups, tracefs and debugfs where the host has them mounted) and /dev are
# bind-mounted, and unmounted again on exit whatever happens.
#
# It prints the seconds to the first block and their split: scripts/install-deps.sh run
# (apt-get update and install: the downloads come from the host's Debian mirror over this
# machine's network, so this part measures that network too), cmake's configure, the build of
# perf-monitor, and the binary's start to its first block.
#   bench/first_run.sh [--new-base]     as root; --new-base makes the base tarball again
# Environment: FIRSTRUN_DIR (default /var/tmp/firstrun: base.tar, the chroot, the logs),
# FIRSTRUN_LIMIT (default 900: seconds before the run is given up).
set -euo pipefail

dir=${FIRSTRUN_DIR:-/var/tmp/firstrun}
limit=${FIRSTRUN_LIMIT:-900}
repo=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
[ "$(id -u)" -eq 0 ] || { echo "first_run: run as root (debootstrap, chroot, mounts)" >&2; exit 1; }
[ "${1:-}" = --new-base ] && rm -f "$dir/base.tar"
mkdir -p "$dir"

# The host's Debian mirror (deb822 or one-line sources), else deb.debian.org.
mirror=$(sed -n 's/^URIs:[[:space:]]*\([^[:space:]]*\/debian\)\/\{0,1\}$/\1/p' /etc/apt/sources.list.d/*.sources 2>/dev/null | head -1)
[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $2 ~ /\/debian\/?$/ { print $2; exit }' /etc/apt/sources.list 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}

root=$dir/root
mounts=()
pid=
cleanup() {
  if [ -n "$pid" ]; then kill -TERM -- "-$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount -R "${mounts[i]}" 2>/dev/null || umount -R -l "${mounts[i]}" 2>/dev/null || true
  done
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Setup, not timed: the base chroot (once), a fresh copy of it, the clone.
if [ ! -f "$dir/base.tar" ]; then
  command -v debootstrap >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap; }
  echo "first_run: making the base chroot (debootstrap bookworm minbase + git, make) from $mirror"
  rm -rf "$dir/base"
  debootstrap --variant=minbase --include=git,make bookworm "$dir/base" "$mirror" >"$dir/debootstrap.log" 2>&1 ||
    { tail -20 "$dir/debootstrap.log" >&2; exit 1; }
  # A Debian 12 install's sources: the release, its updates and the security archive.
  security=${mirror%/debian}/debian-security
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s bookworm-security main\n' \
    "$mirror" "$mirror" "$security" >"$dir/base/etc/apt/sources.list"
  chroot "$dir/base" apt-get clean
  rm -rf "$dir/base/var/lib/apt/lists/"*
  tar -C "$dir/base" -cf "$dir/base.tar" .
  rm -rf "$dir/base"
fi
rm -rf "$root"
mkdir -p "$root"
tar -C "$root" -xf "$dir/base.tar"
cp /etc/resolv.conf "$root/etc/resolv.conf"
git clone -q --no-hardlinks "$repo" "$root/root/perf-monitor"
commit=$(git -C "$root/root/perf-monitor" rev-parse --short=12 HEAD)
mount -t proc proc "$root/proc" && mounts+=("$root/proc")
mount --rbind /sys "$root/sys" && mounts+=("$root/sys") && mount --make-rslave "$root/sys"
mount --rbind /dev "$root/dev" && mounts+=("$root/dev") && mount --make-rslave "$root/dev"

# Timed: `make run` in the clone, its output read line by line with the time each line came.
# Make prints each command before running it: the lines that start the configure, the build
# and the binary split the time.
echo "first_run: make run in a fresh clone of $commit on bare Debian 12 ($(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg))"
log=$dir/make-run.log
: >"$log"
fifo=$dir/out.fifo
rm -f "$fifo"
mkfifo "$fifo"
now() { local t=$EPOCHREALTIME; echo $((${t/./} / 10000)); }   # in hundredths of a second
secs() { printf '%d.%02d' $(($1 / 100)) $(($1 % 100)); }
base_packages=$(chroot "$root" dpkg-query -W -f='${db:Status-Abbrev}\n' | grep -c '^ii')
start=$(now)
setsid chroot "$root" /usr/bin/env -i HOME=/root TERM=xterm LANG=C.UTF-8 \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  bash -c 'cd /root/perf-monitor && exec make run' >"$fifo" 2>&1 &
pid=$!
exec 3<"$fifo"
t_configure= t_build= t_binary= t_block=
while :; do
  left=$((limit - ($(now) - start) / 100))
  ((left > 0)) || { echo "first_run: no first block within $limit s (log: $log)" >&2; exit 1; }
  IFS= read -r -t "$left" line <&3 || { echo "first_run: make run ended without a first block (log: $log)" >&2; tail -15 "$log" >&2; exit 1; }
  t=$(($(now) - start))
  printf '%7s %s\n' "$(secs "$t")" "$line" >>"$log"
  case $line in
    "cmake -S "*) t_configure=${t_configure:-$t} ;;
    "cmake --build "*) t_build=${t_build:-$t} ;;
    ./*/perf-monitor*) t_binary=${t_binary:-$t} ;;
    "--- "*) t_block=$t; break ;;
  esac
done
kill -TERM -- "-$pid" 2>/dev/null || true
wait "$pid" 2>/dev/null || true
pid=
exec 3<&-
rm -f "$fifo"

downloaded=$(du -sm "$root/var/cache/apt/archives" | cut -f1)
packages=$(chroot "$root" dpkg-query -W -f='${db:Status-Abbrev}\n' | grep -c '^ii')
echo "first_run: $(secs "$t_block") s from \`make run\` to the first live block (goal <= 120 s)"
printf '  install-deps.sh run  %7s s  (%d packages, %d MB downloaded from %s: the network of this machine)\n' \
  "$(secs "$t_configure")" "$((packages - base_packages))" "$downloaded" "$mirror"
printf '  cmake configure      %7s s\n' "$(secs $((t_build - t_configure)))"
printf '  build perf-monitor   %7s s  (-j %d)\n' "$(secs $((t_binary - t_build)))" "$(nproc)"
printf '  start to 1st block   %7s s\n' "$(secs $((t_block - t_binary)))"
echo "  log: $log; load average at the end $(cut -d' ' -f1-3 /proc/loadavg)"
