#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The .deb the way a user meets it, installed by dpkg into a throwaway root: dpkg --root with
# --force-script-chrootless, so that dpkg unpacks, runs the maintainer scripts (with DPKG_ROOT
# set, which deb-systemd-helper honours) and removes exactly as on a host, but nothing outside
# the root is touched and no chroot with its own shell and libraries is needed. The root's dpkg
# database holds the host's entries of the packages perf-monitor depends on, so dpkg checks the
# Depends for real. Then: the installed binary runs; `man` finds and renders the pages from the
# root's /usr/share/man; bash-completion loads the completion from the root's
# /usr/share/bash-completion/completions and `perf-monitor ru<TAB>` gives `run`; zsh's compinit
# finds _perf-monitor in /usr/share/zsh/vendor-completions (on Debian's default fpath) and
# completes the same at a real zsh prompt; removal leaves only what policy keeps until purge
# (the unit's mask and deb-systemd-helper's state), and purge leaves no file at all.
#   deb_install_test.sh DEB_DIR BUILD_DIR      (exit 77: skipped, with the reason)
set -eu
debs=$1
build=$2
deb=$(ls "$debs"/perf-monitor_*.deb 2>/dev/null) || { echo "no .deb in $debs (deb_build.sh failed)"; exit 1; }
if [ "$(id -u)" -ne 0 ]; then
  echo "skipped: installing a package with dpkg (even into a scratch root) needs root"
  exit 77
fi
fail() { echo "FAILED: $*"; exit 1; }
root=$(mktemp -d "$build/deb-root.XXXXXX")
trap 'rm -rf "$root"' EXIT
dpkg_root() { dpkg --root="$root" --force-script-chrootless --log=/dev/null "$@"; }

# --- install
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates"
touch "$root/var/lib/dpkg/available" "$root/var/lib/dpkg/status"
for p in $(dpkg-deb -f "$deb" Depends | tr ',' '\n' | awk '{ print $1 }'); do
  dpkg-query -s "$p" >/dev/null 2>&1 || fail "the host lacks $p, which the package depends on"
  { dpkg-query -s "$p" | grep -v '^Conffiles:\|^ /'; echo; } >>"$root/var/lib/dpkg/status"
  touch "$root/var/lib/dpkg/info/$(dpkg-query -W -f='${Package}:${Architecture}' "$p").list"
done
dpkg_root -i "$deb" || fail "dpkg -i"
[ "$(dpkg-query --root="$root" -W -f='${Status}' perf-monitor)" = "install ok installed" ] || fail "not installed"
echo "installed into $root"

# --- the installed binary runs
"$root/usr/bin/perf-monitor" --version || fail "the installed binary does not run"
"$root/usr/bin/perf-monitor" --help >/dev/null || fail "--help"

# --- man finds and renders the pages
pages=$(MANPATH="$root/usr/share/man" MANWIDTH=100 LC_ALL=C.UTF-8 man -P cat perf-monitor 2>&1) || fail "man perf-monitor: $pages"
echo "$pages" | grep -q '^NAME' && echo "$pages" | grep -q 'perf-monitor - ' || fail "man perf-monitor shows no NAME section: $pages"
for page in "$root"/usr/share/man/man1/*.1.gz; do
  out=$(LC_ALL=C.UTF-8 MANWIDTH=100 man --warnings -l "$page" 2>&1 >/dev/null) || fail "man -l $page"
  [ -z "$out" ] || fail "groff warns about $(basename "$page"): $out"
  MANWIDTH=100 man -l "$page" | head -n 4 | tail -n 1 | sed 's/^ */man: /'
done

# --- bash: bash-completion loads the completion on first use, and ru<TAB> gives run
if [ -f /usr/share/bash-completion/bash_completion ]; then
  got=$(XDG_DATA_DIRS="$root/usr/share" PATH="$root/usr/bin:$PATH" bash --norc --noprofile -c '
    . /usr/share/bash-completion/bash_completion
    __load_completion perf-monitor || { echo "bash-completion found no completion for perf-monitor"; exit 1; }
    complete -p perf-monitor >&2
    COMP_LINE="perf-monitor ru"; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(perf-monitor ru); COMP_CWORD=1
    _perf_monitor perf-monitor ru perf-monitor
    echo "${COMPREPLY[*]}"') || fail "bash completion: $got"
  [ "$got" = run ] || fail "bash-completion: perf-monitor ru<TAB> gave '$got', not 'run'"
  echo "bash (bash-completion): perf-monitor ru<TAB> -> $got"
else
  echo "not checked: loading by bash-completion (the bash-completion package is not installed)"
fi
# The file alone, sourced into a plain bash.
got=$(PATH="$root/usr/bin:$PATH" bash --norc --noprofile -c '
  . "$0"
  complete -p perf-monitor >&2
  COMP_LINE="perf-monitor ru"; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(perf-monitor ru); COMP_CWORD=1
  _perf_monitor perf-monitor ru perf-monitor
  echo "${COMPREPLY[*]}"' "$root/usr/share/bash-completion/completions/perf-monitor") || fail "bash completion: $got"
[ "$got" = run ] || fail "bash: perf-monitor ru<TAB> gave '$got', not 'run'"
echo "bash (sourced): perf-monitor ru<TAB> -> $got"

# --- zsh: where its default fpath looks, found by compinit, and ru<TAB> at a prompt gives run
if command -v zsh >/dev/null; then
  zsh -fc 'print -l $fpath' | grep -qx /usr/share/zsh/vendor-completions ||
    fail "zsh's fpath lacks /usr/share/zsh/vendor-completions"
  comps=$(zsh -fc 'fpath=("$1" $fpath); autoload -U compinit; compinit -u -D; print -r -- $_comps[perf-monitor]' zsh \
    "$root/usr/share/zsh/vendor-completions")
  [ "$comps" = _perf-monitor ] || fail "compinit does not bind perf-monitor to _perf-monitor (got '$comps')"
  # A real interactive zsh on a pseudo-terminal: type the line and TAB, wait for the line to change.
  PATH="$root/usr/bin:$PATH" timeout 60 zsh -f "$(dirname "$0")/zsh_complete.zsh" \
    "$root/usr/share/zsh/vendor-completions" "perf-monitor ru" "perf-monitor run" && got=run || got=""
  [ "$got" = run ] || fail "zsh: perf-monitor ru<TAB> did not become 'perf-monitor run'"
  echo "zsh: perf-monitor ru<TAB> -> run"
else
  echo "not checked: zsh completion (zsh is not installed)"
fi

# --- removal leaves only what policy keeps until purge; purge leaves no file
installed=$(dpkg-query --root="$root" -L perf-monitor)
dpkg_root -r perf-monitor || fail "dpkg -r"
left=$(cd "$root" && find . -path ./var/lib/dpkg -prune -o ! -type d -print | sort)
echo "after removal: ${left:-nothing}"
for f in $left; do
  case $f in
    ./etc/systemd/system/perf-monitor.service) [ "$(readlink "$root/$f")" = /dev/null ] || fail "$f is not a mask" ;;
    ./var/lib/systemd/deb-systemd-helper-*/perf-monitor.service*) ;;
    *) fail "removal left $f" ;;
  esac
done
for f in $installed; do
  [ -d "$root/$f" ] || [ ! -e "$root/$f" ] || fail "removal left $f"
done
dpkg_root -P perf-monitor || fail "dpkg -P"
left=$(cd "$root" && find . -path ./var/lib/dpkg -prune -o ! -type d -print)
[ -z "$left" ] || fail "purge left: $left"
# Directories: only those of systemd's own hierarchy that deb-systemd-helper made here (on a host
# they belong to systemd).
dirs=$(cd "$root" && find . -path ./var/lib/dpkg -prune -o -type d -print | sort | tr '\n' ' ')
for d in $dirs; do
  case $d in
    .|./etc|./etc/systemd|./etc/systemd/system|./var|./var/lib|./var/lib/systemd) ;;
    *) fail "purge left the directory $d" ;;
  esac
done
[ "$(dpkg-query --root="$root" -W -f='${Status}' perf-monitor 2>/dev/null || true)" != "install ok installed" ] || fail "still installed"
echo "after purge: no file left"
