#!/bin/bash
# Checks packaging/completion/rcp.bash without a terminal: a fake `rcp` on PATH answers
# --help and the module listing (NAME<TAB>COMMENT per line), and each case sets COMP_LINE /
# COMP_WORDS as bash would and compares COMPREPLY. Also syntax-checks the zsh function
# when zsh is installed and drives it in a pseudo-terminal (zsh_completion_test.zsh).
# usage: tests/completion/completion_test.sh
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/rcp-completion-test.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/files/sub dir" "$tmp/cfg/rcp"
cat > "$tmp/bin/rcp" <<'EOF'
#!/bin/bash
case "$*" in
  --help) printf '%s\n' 'Options:' '  -h,--help   Print this help' '  -v,--verbose  say more' \
                        '  --transport TEXT  auto, rdma or tcp' '  -P,--port UINT  port' '  --progress  show progress' ;;
  "-q host:"|"-q host::"|"-q u@host:"|"-q [::1]:"|"-q rcp://host:7000/")
    printf 'data\tthe data\ndocs\tdocumentation\nbackup\t\n' ;;
  *) echo "rcp: cannot list $*" >&2; exit 10 ;;
esac
EOF
chmod +x "$tmp/bin/rcp"
touch "$tmp/files/alpha.txt" "$tmp/files/alps.bin" "$tmp/files/a:b"
printf '[hosts."backup-host"]\nport = 1\n[hosts.archive]\nstreams = 2\n' > "$tmp/cfg/rcp/config.toml"
export PATH="$tmp/bin:$PATH" XDG_CONFIG_HOME="$tmp/cfg"
# shellcheck source=../../packaging/completion/rcp.bash
. "$here/packaging/completion/rcp.bash"
cd "$tmp/files" || exit 1

fails=0
# complete LINE -> COMPREPLY, one per line, sorted
complete_line() {
  COMP_LINE=$1 COMP_POINT=${#1}
  # bash splits words at COMP_WORDBREAKS; ':' becomes its own word, as in a real shell.
  local spaced=${1//:/ : }
  read -ra COMP_WORDS <<< "$spaced"
  [[ $1 == *" " ]] && COMP_WORDS+=("")
  COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
  COMPREPLY=()
  _rcp 2>/dev/null
  printf '%s\n' "${COMPREPLY[@]}" | sort
}
expect() {
  local line=$1 want got
  want=$(printf '%s\n' "${@:2}" | sort)
  got=$(complete_line "$line")
  if [[ $got != "$want" ]]; then
    echo "FAIL: '$line'"
    echo "  want: $(echo "$want" | tr '\n' '|')"
    echo "  got:  $(echo "$got" | tr '\n' '|')"
    fails=$((fails + 1))
  else
    echo "ok: '$line' -> $(echo "$got" | tr '\n' ' ')"
  fi
}

# Options come from `rcp --help`.
expect "rcp --tr" --transport
expect "rcp --p" --port --progress
expect "rcp -" -h --help -v --verbose --transport -P --port --progress
# Option values.
expect "rcp --transport " auto rdma tcp
expect "rcp --transport r" rdma
expect "rcp --digest s" sha256
expect "rcp --port " ""
# Module names from the daemon; bash keeps what is before the last ':' itself.
expect "rcp host:" data/ docs/ backup/
expect "rcp host:d" data/ docs/
expect "rcp host::do" docs/
expect "rcp -r u@host:b" backup/
expect "rcp f [::1]:" data/ docs/ backup/
# bash replaces only the text after the last ":" (here "7000/da").
expect "rcp rcp://host:7000/da" 7000/data/
# A host that does not answer: nothing, and no error text on the terminal.
expect "rcp nohost:" ""
# Inside a module: nothing to offer.
expect "rcp host:data/x" ""
# Local files, and config hosts as "NAME:".
expect "rcp al" alpha.txt alps.bin
expect "rcp ./a" ./a:b ./alpha.txt ./alps.bin
expect "rcp a" a:b alpha.txt alps.bin archive:
expect "rcp back" backup-host:
expect "rcp su" "sub dir"
RCP_COMPLETE_REMOTE=0 expect "rcp host:" ""

if command -v zsh > /dev/null; then
  if zsh -n "$here/packaging/completion/_rcp"; then echo "ok: zsh -n _rcp"; else echo "FAIL: zsh -n _rcp"; fails=$((fails + 1)); fi
  zsh "$here/tests/completion/zsh_completion_test.zsh" "$here/packaging/completion" "$tmp/bin" || fails=$((fails + 1))
else
  echo "skip: zsh not installed"
fi
if [[ $fails -gt 0 ]]; then
  echo "$fails completion case(s) failed"
  exit 1
fi
echo "all completion cases passed"
