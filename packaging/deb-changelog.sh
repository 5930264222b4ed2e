#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Writes the Debian package's changelog from CHANGELOG.md (Keep a Changelog), newest first:
#   deb-changelog.sh CHANGELOG.md PACKAGE VERSION "NAME <EMAIL>" >changelog
# Each "## [X.Y.Z] - YYYY-MM-DD" section becomes an entry for version X.Y.Z dated that day, its
# "### Added"/"### Fixed"/... groups become "* Added:" with the items below, rewrapped to fit
# 80 columns and stripped of Markdown. VERSION (the package's) must be the newest release in
# CHANGELOG.md; while it is not released yet, the "Unreleased" section is its entry
# (distribution UNRELEASED, dated SOURCE_DATE_EPOCH or now). Fails, saying why, when VERSION is
# released but is not the newest.
set -eu
[ $# -eq 4 ] || { echo "usage: $0 CHANGELOG.md PACKAGE VERSION 'NAME <EMAIL>'" >&2; exit 2; }
now=$(date -u -R ${SOURCE_DATE_EPOCH:+-d "@$SOURCE_DATE_EPOCH"})
LC_ALL=C awk -v package="$2" -v version="$3" -v maintainer="$4" -v now="$now" '
function plain(s) {
  gsub(/\*\*|`/, "", s)
  while (match(s, /\[[^]]*\]\([^)]*\)/)) {              # [text](url) -> text
    t = substr(s, RSTART + 1); t = substr(t, 1, index(t, "]") - 1)
    s = substr(s, 1, RSTART - 1) t substr(s, RSTART + RLENGTH)
  }
  return s
}
function wrap(text, first, rest,   n, w, i, line, out, started) {
  n = split(text, w, /[ \t]+/); line = first; started = 0; out = ""
  for (i = 1; i <= n; i++) {
    if (w[i] == "") continue
    if (started && length(line) + 1 + length(w[i]) > 79) { out = out line "\n"; line = rest w[i] }
    else { line = line (started ? " " : "") w[i]; started = 1 }
  }
  return out line "\n"
}
function end_item() {
  if (item != "") { body[nsec] = body[nsec] wrap(plain(item), indent "- ", indent "  "); item = "" }
}
function end_para() {
  if (para != "") { body[nsec] = body[nsec] wrap(plain(para), "  * ", "    "); para = "" }
}
/^## \[/ {
  end_item(); end_para()
  nsec++; v = $0; sub(/^## \[/, "", v); sub(/\].*/, "", v); ver[nsec] = v
  d = $0; date[nsec] = (d ~ /\] - [0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]/) ? substr(d, index(d, "] - ") + 4, 10) : ""
  indent = "  "; next
}
nsec == 0 { next }
/^### / {
  end_item(); end_para()
  cat = substr($0, 5); body[nsec] = body[nsec] "  * " plain(cat) ":\n"; indent = "    "; next
}
/^[-*] / { end_item(); end_para(); item = substr($0, 3); next }
/^[ \t]+[^ \t]/ && item != "" { item = item " " $0; next }
/^[ \t]*$/ { end_item(); end_para(); next }
{ end_item(); para = para " " $0 }
END {
  end_item(); end_para()
  first_released = 0; unreleased = 0; found = 0
  for (i = 1; i <= nsec; i++) {
    if (ver[i] == "Unreleased") { unreleased = i; continue }
    if (!first_released) first_released = i
    if (ver[i] == version) found = i
  }
  if (found && found != first_released) {
    print "deb-changelog: CHANGELOG.md has " ver[first_released] " newer than the package version " version > "/dev/stderr"
    exit 1
  }
  if (!found && first_released && system("dpkg --compare-versions " version " gt " ver[first_released]) != 0) {
    print "deb-changelog: the package version " version " is older than " ver[first_released] " in CHANGELOG.md" > "/dev/stderr"
    exit 1
  }
  if (!found && !unreleased) {
    print "deb-changelog: CHANGELOG.md has neither a [" version "] nor an [Unreleased] section" > "/dev/stderr"
    exit 1
  }
  out = 0
  for (i = 1; i <= nsec; i++) {
    if (ver[i] == "Unreleased") {
      if (found) continue
      v = version; dist = "UNRELEASED"; stamp = now
    } else {
      if (date[i] == "") { print "deb-changelog: [" ver[i] "] has no date (## [X.Y.Z] - YYYY-MM-DD)" > "/dev/stderr"; exit 1 }
      v = ver[i]; dist = "unstable"
      cmd = "date -u -R -d " date[i]; cmd | getline stamp; close(cmd)
    }
    b = body[i]; if (b == "") b = "  * No changes for users.\n"
    if (out++) printf "\n"
    printf "%s (%s) %s; urgency=medium\n\n%s\n -- %s  %s\n", package, v, dist, b, maintainer, stamp
  }
}' "$1"
