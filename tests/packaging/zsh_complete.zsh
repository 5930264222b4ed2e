# SPDX-License-Identifier: Apache-2.0
# Types LINE and TAB at an interactive zsh on a pseudo-terminal (zpty), whose fpath starts with
# DIR and whose completion system is initialised (compinit), then prints the completed line
# (by going to its start and making it a print command). Succeeds when that line, its words
# joined by single spaces, is EXPECTED; run it under timeout(1).
#   zsh -f zsh_complete.zsh DIR LINE EXPECTED
zmodload zsh/zpty || exit 1
local dir=$1 line=$2 expected=$3 out
zpty z zsh -f -i
zpty -w z "PS1='%% '; bindkey -e; fpath=(${(q)dir} \$fpath); autoload -U compinit; compinit -u -D; unsetopt zle_bracketed_paste; echo READY"
zpty -r -m z out '*READY*'
# The echoed input reads 'DONE\:', the command's output 'DONE:'.
zpty -w z "$line"$'\t\C-aprint -r -- DONE\\:\C-e END'
zpty -r -m z out '*DONE:*END*'
zpty -d z
out=${${out##*DONE:}%% END*}
print -r -- "$line<TAB> -> $out"
[[ $out == "$expected" ]]
