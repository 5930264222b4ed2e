# SPDX-License-Identifier: Apache-2.0
# bash completion for perf-monitor (installed as
# /usr/share/bash-completion/completions/perf-monitor, where bash-completion loads it on first use).
#
# Nothing here lists a subcommand or a flag: they come from the binary's own `--help` and
# `SUBCOMMAND --help`, and counter event names from `perf-monitor list`, read when first needed
# and remembered until the binary changes. So completion offers exactly what the perf-monitor
# being completed accepts, whatever its version. A flag's value is completed from what --help
# says of it: its choices ({text,json}), event names for --events, PIDs for --pid, files where
# the flag takes a FILE or BINARY; nothing for durations and addresses.

declare -gA _perf_monitor_cache

# The flags of `BIN [SUB] --help`, one per line: "NAMES<US>VALUE<US>DESCRIPTION" (US: the
# ASCII unit separator, so that an empty VALUE stays a field), NAMES
# comma-separated (-f,--format), VALUE as --help shows it (TEXT:{text,json}; empty for a switch).
_perf_monitor_flags() {
  "$1" ${2:+"$2"} --help 2>/dev/null | awk '
    function flush() { if (names != "") print names "\037" value "\037" desc; names = "" }
    /^  -/ {
      flush(); line = substr($0, 3); i = index(line, "  ")
      spec = i ? substr(line, 1, i - 1) : line
      desc = i ? substr(line, i) : ""; sub(/^ +/, "", desc)
      names = spec; sub(/ .*/, "", names)
      value = (index(spec, " ") ? substr(spec, index(spec, " ") + 1) : "")
      next
    }
    names != "" && desc == "" && /^          +[^ ]/ { desc = $0; sub(/^ +/, "", desc); next }
    { flush() }
    END { flush() }'
}

# The subcommands `BIN --help` lists, one per line.
_perf_monitor_subcommands() {
  "$1" --help 2>/dev/null | awk '
    tolower($0) ~ /^subcommands:$/ { on = 1; next }
    on && /^  [a-z]/ { print $1; next }
    on { exit }'
}

# The positionals of `BIN SUB --help` (the command of `run`), one name per line.
_perf_monitor_positionals() {
  "$1" "$2" --help 2>/dev/null | awk '
    tolower($0) ~ /^positionals:$/ { on = 1; next }
    on && /^  [a-z]/ { print $1; next }
    on { exit }'
}

# The counter events `BIN list` names (the table headed EVENT), one per line.
_perf_monitor_events() {
  "$1" list 2>/dev/null | awk '
    /^EVENT / { on = 1; next }
    on && (/^$/ || /^\(/) { exit }
    on { print $1 }'
}

# Cached: _perf_monitor_get WHAT BIN [SUB] prints what _perf_monitor_WHAT prints.
_perf_monitor_get() {
  local what=$1 bin=$2 sub=${3:-} path stamp
  path=$(type -P -- "$bin") || return 1
  stamp=$(stat -L -c %Y.%s -- "$path" 2>/dev/null)
  local key="$what|$path|$stamp|$sub"
  if [[ -z ${_perf_monitor_cache[$key]+set} ]]; then
    _perf_monitor_cache[$key]=$("_perf_monitor_$what" "$path" $sub)
  fi
  printf '%s\n' "${_perf_monitor_cache[$key]}"
}

# The flags line of NAME among FLAGS (the output of _perf_monitor_flags).
_perf_monitor_flag() {
  local name=$1 names rest
  while IFS=$'\x1f' read -r names rest; do
    [[ ,$names, == *",$name,"* ]] && { printf '%s\x1f%s\n' "$names" "$rest"; return 0; }
  done <<<"$2"
  return 1
}

_perf_monitor_value() {
  local bin=$1 flagline=$2 cur=$3 names value desc
  IFS=$'\x1f' read -r names value desc <<<"$flagline"
  if [[ $value == *'{'*'}'* ]]; then
    local choices=${value#*\{}
    choices=${choices%%\}*}
    COMPREPLY=($(compgen -W "${choices//,/ }" -- "$cur"))
  elif [[ ,$names, == *,--events,* ]]; then
    # A comma-separated list: complete its last item.
    local done_part="" last=$cur
    [[ $cur == *,* ]] && { done_part=${cur%,*},; last=${cur##*,}; }
    COMPREPLY=($(compgen -P "$done_part" -W "$(_perf_monitor_get events "$bin")" -- "$last"))
  elif [[ ,$names, == *,--pid,* || $desc == PID* ]]; then
    COMPREPLY=($(compgen -W "$(cd /proc && printf '%s ' [0-9]*)" -- "$cur"))
  elif [[ "$value $desc" == *FILE* || "$value $desc" == *BINARY* || $desc == *" file"* ]]; then
    if declare -F _filedir >/dev/null; then _filedir; else COMPREPLY=($(compgen -f -- "$cur")); fi
  else
    COMPREPLY=()
  fi
}

_perf_monitor() {
  local cur prev words cword split=false
  if declare -F _init_completion >/dev/null; then
    _init_completion -s || return
  else
    words=("${COMP_WORDS[@]}")
    cword=$COMP_CWORD
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
  fi
  local bin=${words[0]}
  local subs flags sub="" command_at=0 i w
  subs=$(_perf_monitor_get subcommands "$bin") || return
  flags=$(_perf_monitor_get flags "$bin")

  # Where the words before the cursor put us: the subcommand, and where run's command starts.
  for ((i = 1; i < cword; i++)); do
    w=${words[i]}
    if [[ $w == -- ]]; then
      command_at=$((i + 1))
      break
    elif [[ $w == -* ]]; then
      local line
      if [[ $w != *=* ]] && line=$(_perf_monitor_flag "$w" "$flags") && [[ -n $(cut -d$'\x1f' -f2 <<<"$line") ]]; then
        ((i++))   # its value
      fi
    elif [[ -z $sub ]] && grep -qxF -- "$w" <<<"$subs"; then
      sub=$w
      flags=$(_perf_monitor_get flags "$bin" "$sub")
    elif [[ -n $sub ]] && grep -qxF command <<<"$(_perf_monitor_get positionals "$bin" "$sub")"; then
      command_at=$i
      break
    fi
  done

  if ((command_at > 0 && cword >= command_at)); then
    if declare -F _command_offset >/dev/null; then
      _command_offset "$command_at"
    elif ((cword == command_at)); then
      COMPREPLY=($(compgen -c -- "$cur"))
    else
      COMPREPLY=($(compgen -f -- "$cur"))
    fi
    return
  fi

  local line
  if [[ $prev == -* ]] && line=$(_perf_monitor_flag "$prev" "$flags") && [[ -n $(cut -d$'\x1f' -f2 <<<"$line") ]]; then
    _perf_monitor_value "$bin" "$line" "$cur"
    return
  fi
  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(cut -d$'\x1f' -f1 <<<"$flags" | tr , ' ')" -- "$cur"))
    return
  fi
  if [[ -z $sub ]]; then
    COMPREPLY=($(compgen -W "$subs" -- "$cur"))
  elif grep -qxF command <<<"$(_perf_monitor_get positionals "$bin" "$sub")"; then
    COMPREPLY=($(compgen -c -- "$cur"))
  fi
}

complete -F _perf_monitor perf-monitor
