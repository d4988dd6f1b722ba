# bash completion for rcp                                         -*- shell-script -*-
# Installed as /usr/share/bash-completion/completions/rcp.
#
# Completes rcp's options (read from `rcp --help`, so new options appear without
# editing this file), the values of --transport and --digest, and:
#   HOST:<TAB>  HOST::<TAB>  USER@HOST:<TAB>  [v6]:<TAB>  rcp://HOST[:PORT]/<TAB>
#     module names, from the daemon's listing (`rcp HOST:` prints NAME<TAB>COMMENT);
#   anything else: local files, plus "NAME:" for the hosts named in the client
#   config ([hosts."NAME"] in ~/.config/rcp/config.toml and /etc/rcp/config.toml).
# Paths inside a module are not completed (that would need a remote listing).
# RCP_COMPLETE_REMOTE=0 turns the daemon queries off; each waits at most 3 s.
# Works with and without the bash-completion package.

_rcp_options() {
  local help
  help=$("${1:-rcp}" --help 2>/dev/null)
  if [[ -n $help ]]; then
    # CLI11 prints "  -v,--verbose ..." and "  --transport TEXT ..."
    printf '%s\n' "$help" | grep -oE -- '(^|[ ,])--?[A-Za-z0-9][-A-Za-z0-9]*' | sed 's/^[ ,]*//' | sort -u
  else
    printf '%s\n' -v --verbose -q --quiet -r --recursive -V --version -h --help --transport --digest \
      -P --port --tcp-port --chunk-size --buffer-size --window --streams --rails --bind --device --no-zerocopy --encrypt --hash-threads \
      --fsync --progress --no-progress --copy-devices --write-devices --devices-as-files --force --direct \
      -c --checksum --ignore-existing --existing -u --update -W --whole-file --partial --stats --json \
      --exclude --include --exclude-from --include-from --files-from --shard -0 --from0 --delete --delete-after \
      -n --dry-run -i --itemize-changes --bwlimit --timeout --contimeout \
      -a --archive -p --perms -t --times -o --owner -g --group -l --links -L --copy-links -D --devices --specials \
      -H --hard-links --numeric-ids -S --sparse --discard -X --xattrs -A --acls
  fi
}

# The hosts named in the client config files.
_rcp_config_hosts() {
  local f
  for f in "${XDG_CONFIG_HOME:-$HOME/.config}/rcp/config.toml" /etc/rcp/config.toml; do
    [[ -r $f ]] && sed -nE 's/^[[:space:]]*\[hosts\.("([^"]+)"|([A-Za-z0-9_.-]+))\].*/\2\3/p' "$f"
  done 2>/dev/null | sort -u
}

# Module names of the daemon named by $1 (an argument rcp lists modules for).
_rcp_modules() {
  [[ ${RCP_COMPLETE_REMOTE:-1} == 0 ]] && return
  local cmd=${2:-rcp}
  if command -v timeout > /dev/null; then
    timeout 3 "$cmd" -q "$1" 2>/dev/null
  else
    "$cmd" -q "$1" 2>/dev/null
  fi | cut -f1
}

_rcp() {
  local line=${COMP_LINE:0:COMP_POINT}
  # The word being completed, with ':' and '@' kept (COMP_WORDBREAKS would split them).
  local cur=${line##*[[:space:]]}
  local prev=${COMP_WORDS[COMP_CWORD-1]}
  local cmd=${COMP_WORDS[0]}
  COMPREPLY=()

  # "--opt VALUE": complete the value. (bash splits --opt=VALUE at '=', giving prev '='.)
  if [[ $prev == = && $COMP_CWORD -ge 2 ]]; then
    prev=${COMP_WORDS[COMP_CWORD-2]}
    cur=${cur#*=}
  fi
  case $prev in
    --transport) COMPREPLY=($(compgen -W "auto rdma tcp" -- "$cur")); return ;;
    --digest) COMPREPLY=($(compgen -W "xxh128 sha256 none" -- "$cur")); return ;;
    --device) COMPREPLY=($(compgen -W "$(ls /sys/class/infiniband 2>/dev/null)" -- "$cur")); return ;;
    --bind) COMPREPLY=($(compgen -A hostname -- "$cur")); return ;;
    -P|--port|--tcp-port|--chunk-size|--buffer-size|--window|--streams|--rails|--hash-threads|--bwlimit|--shard|--timeout|--contimeout) return ;;
    --exclude|--include) return ;;  # a pattern
    --exclude-from|--include-from|--files-from) COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac

  if [[ $cur == -* ]]; then
    COMPREPLY=($(compgen -W "$(_rcp_options "$cmd")" -- "$cur"))
    return
  fi

  local prefix="" query="" partial=""
  if [[ $cur =~ ^([Rr][Cc][Pp]://[^/]+/)([^/]*)$ ]]; then
    prefix=${BASH_REMATCH[1]} partial=${BASH_REMATCH[2]} query=$prefix
  elif [[ $cur =~ ^(([^/:@]+@)?(\[[^]/]*\]|[A-Za-z0-9_.-]+)::?)([^/]*)$ ]]; then
    prefix=${BASH_REMATCH[1]} partial=${BASH_REMATCH[4]} query=$prefix
  fi

  local -a replies=()
  if [[ -n $query ]]; then
    local m
    while IFS= read -r m; do
      [[ -n $m && $m == "$partial"* ]] && replies+=("$prefix$m/")
    done < <(_rcp_modules "$query" "$cmd")
    compopt -o nospace 2>/dev/null
  elif [[ $cur == *:*/* && $cur != */*:* && $cur != [./]* ]]; then
    return  # a path inside a remote module: nothing to offer
  else
    if [[ $cur != */* ]]; then
      local h
      while IFS= read -r h; do
        [[ -n $h && $h == "$cur"* ]] && replies+=("$h:")
      done < <(_rcp_config_hosts)
    fi
    # Hosts end in ':' and take no space; with only files, readline adds the '/' after a
    # directory and the space after a file itself (-o filenames).
    [[ ${#replies[@]} -gt 0 ]] && compopt -o nospace 2>/dev/null
    local f
    while IFS= read -r f; do
      replies+=("$f")
    done < <(compgen -f -- "$cur")
    compopt -o filenames 2>/dev/null
  fi

  # bash replaces only the part of the word after the last COMP_WORDBREAKS character
  # (':' and '@' by default): strip what is already on the line before that point.
  local trim=""
  if [[ $COMP_WORDBREAKS == *:* && $cur == *:* ]]; then
    trim=${cur%"${cur##*:}"}
  fi
  if [[ $COMP_WORDBREAKS == *@* && ${cur#"$trim"} == *@* ]]; then
    local rest=${cur#"$trim"}
    trim+=${rest%"${rest##*@}"}
  fi
  local r
  for r in "${replies[@]}"; do
    COMPREPLY+=("${r#"$trim"}")
  done
}

complete -F _rcp rcp
