#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Every source file says its license in its first lines (SPDX-License-Identifier):
#   scripts/spdx-headers.sh           adds the line where it is missing
#   scripts/spdx-headers.sh --check   lists the files without it (or with the wrong one), exit 1
# The eBPF programs and the headers they share with user space (bpf/) are "GPL-2.0-only OR
# BSD-2-Clause", the kernel's "Dual BSD/GPL", which their license section must also say;
# everything else is Apache-2.0 (see LICENSE and the README's License section).
# Captured /proc and /sys files (tests/fixtures/) are data and carry no header; JSON cannot.
set -eu
cd "$(dirname "$0")/.."
check=0
[ "${1:-}" = --check ] && check=1

files() {
  dirs="src bpf include tests bench examples scripts packaging cmake .ci"
  if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # Tracked files and new ones not yet added (but not ignored build output).
    git ls-files --cached --others --exclude-standard -- $dirs CMakeLists.txt Makefile | sort -u
  else
    { find $dirs -type f; echo CMakeLists.txt; echo Makefile; } 2>/dev/null | sort -u
  fi
}

license_of() {
  case $1 in
    bpf/*) echo "GPL-2.0-only OR BSD-2-Clause" ;;
    *) echo "Apache-2.0" ;;
  esac
}

# The comment that carries the identifier, or nothing for files that take no header.
comment_of() {
  case $1 in
    tests/fixtures/*|*.json|*.md) return ;;
    *.c|*.h|*.cpp|*.hpp|*.h.in) echo "//" ;;
    *CMakeLists.txt|*.cmake|Makefile|*.sh|*.bash|*.zsh|*.toml|*.yml|*.yaml|*.service|*.overrides) echo "#" ;;
    *)
      # Scripts without an extension (.ci/run, maintainer scripts, completions): by their first line.
      if head -n1 "$1" | grep -q '^#'; then echo "#"; fi ;;
  esac
}

bad=0
for f in $(files); do
  [ -f "$f" ] || continue
  c=$(comment_of "$f")
  [ -n "$c" ] || continue
  want="$c SPDX-License-Identifier: $(license_of "$f")"
  if head -n 3 "$f" | grep -qF "$want"; then
    :
  elif head -n 3 "$f" | grep -q 'SPDX-License-Identifier:'; then
    echo "$f: $(head -n 3 "$f" | grep 'SPDX-License-Identifier:') (should be: $want)"
    bad=1
  elif [ $check = 1 ]; then
    echo "$f: no '$want' in its first lines"
    bad=1
  else
    # After a #! line or zsh's #compdef line, which must stay first.
    if head -n1 "$f" | grep -q '^#!\|^#compdef'; then
      { head -n1 "$f"; echo "$want"; tail -n +2 "$f"; } >"$f.spdx"
    else
      { echo "$want"; cat "$f"; } >"$f.spdx"
    fi
    cat "$f.spdx" >"$f" && rm "$f.spdx"
    echo "added: $f"
  fi
done

# The license the kernel is told must be the one the files say.
for f in bpf/*.bpf.c; do
  if ! grep -q 'SEC("license") = "Dual BSD/GPL";' "$f"; then
    echo "$f: its license section is not \"Dual BSD/GPL\" (GPL-2.0-only OR BSD-2-Clause)"
    bad=1
  fi
done
exit $bad
