#!/usr/bin/env zsh
# Drives packaging/completion/_rcp in a real interactive zsh under a pseudo-terminal
# (zsh/zpty): types LINE and TAB, and checks the completed line or the listing.
# usage: zsh_completion_test.zsh COMPLETION_DIR FAKE_RCP_BIN_DIR   (run by completion_test.sh)
zmodload zsh/zpty
fdir=$1 bindir=$2
fails=0
# expect LINE TEXT: after LINE<TAB> (and a second TAB for the listing), the terminal shows TEXT.
expect() {
  local line=$1 want=$2 out chunk i
  zpty z env PATH="$bindir:$PATH" TERM=dumb XDG_CONFIG_HOME="${XDG_CONFIG_HOME:-}" zsh -f -i
  zpty -w z "fpath=($fdir \$fpath); autoload -U compinit; compinit -u -D; PS1='PROMPT> '; zstyle ':completion:*' format 'GROUP:%d'; setopt nobeep; bindkey '^I' complete-word; zstyle ':completion:*' menu no"
  sleep 0.5
  zpty -w -n z "$line"$'\t'
  sleep 0.5
  zpty -w -n z $'\t'
  out=
  for i in {1..60}; do
    if zpty -r -t z chunk; then out+=$chunk; else sleep 0.1; fi
    [[ $out == *"$want"* ]] && break
  done
  zpty -d z
  if [[ $out == *"$want"* ]]; then
    print -r -- "ok (zsh): '$line' -> '$want'"
  else
    print -r -- "FAIL (zsh): '$line': no '$want' in:"
    print -r -- "${out//$'\r'/}" | tail -n 6
    fails=$((fails + 1))
  fi
}
expect "rcp host:do" "PROMPT> rcp host:docs/"
expect "rcp u@host:b" "PROMPT> rcp u@host:backup/"
expect "rcp [::1]:da" "PROMPT> rcp [::1]:data/"
expect "rcp host:" "docs    -- documentation"
expect "rcp rcp://host:7000/d" "GROUP:module on host"
expect "rcp --trans" "PROMPT> rcp --transport="
expect "rcp --transport=" "rdma  -- RDMA or fail"
expect "rcp --digest=s" "PROMPT> rcp --digest=sha256"
expect "rcp back" "PROMPT> rcp backup-host:"
exit $(( fails > 0 ))
