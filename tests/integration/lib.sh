# Shared by the integration suites (sourced, not run).

# writing_into DIR: a copy has a file of DIR's tree open for writing and not yet in place.
# A file that replaces an existing one is written as a named temp file (.NAME.rcp-XXXXXXXX);
# a new file is written unnamed (O_TMPFILE, lib/fs/tempfile.h), visible only as an open fd
# whose link reads "DIR/.../#INODE (deleted)" in some process's /proc/PID/fd. Used both to
# see that a copy is mid-file and, negated, that nothing is left behind: neither a temp
# name in the tree nor an unnamed file still held open by rcp or rcpd.
writing_into() {
  [ -n "$(find "$1" -name '.*.rcp-*' ! -name '*.rcp-partial' 2>/dev/null)" ] && return 0
  local d
  d=$(cd "$1" 2>/dev/null && pwd -P) || return 1
  # Only rcp's and rcpd's fds: scanning every process's took seconds per call in the TCG
  # guest, long enough for a slowed copy to finish before a suite saw it start.
  local p
  for p in $(pgrep -x 'rcpd?'); do
    find "/proc/$p/fd" -lname "$d/*#* (deleted)" -print -quit 2>/dev/null | grep -q . && return 0
  done
  return 1
}

# no_temps DIR: nothing of an unfinished copy in DIR's tree (see writing_into).
no_temps() { ! writing_into "$1"; }

# logged FILE REGEX: FILE has a line matching REGEX, waiting for it up to 5 s: a daemon logs
# a refused connection after closing it, so the peer it refused may be back first.
logged() {
  local _
  for _ in $(seq 100); do grep -q -- "$2" "$1" 2> /dev/null && return 0; sleep 0.05; done
  return 1
}

# suite_args NAME "$@": the arguments every suite takes, --bin DIR (required), --transport
# tcp|rdma (default tcp), --addr ADDR (default 127.0.0.1), --work DIR; sets bin, transport,
# addr and work, and exits 2 naming NAME on anything else.
suite_args() {
  local name=$1
  shift
  bin= transport=tcp addr=127.0.0.1 work=
  while [ $# -gt 0 ]; do
    case "$1" in
      --bin) bin=$2; shift 2 ;;
      --transport) transport=$2; shift 2 ;;
      --addr) addr=$2; shift 2 ;;
      --work) work=$2; shift 2 ;;
      *) echo "$name: unknown argument $1" >&2; exit 2 ;;
    esac
  done
  [ -n "$bin" ] || { echo "$name: --bin DIR is required" >&2; exit 2; }
}

# suite_bins NAME: RCP and RCPD from --bin (a build tree's rcp/ and rcpd/, or one directory
# holding both); exits 2 naming NAME when either is not built.
suite_bins() {
  RCP=$(cd "$bin/../rcp" 2>/dev/null && pwd)/rcp; [ -x "$RCP" ] || RCP=$bin/rcp
  RCPD=$(cd "$bin/../rcpd" 2>/dev/null && pwd)/rcpd; [ -x "$RCPD" ] || RCPD=$bin/rcpd
  local b
  for b in "$RCP" "$RCPD"; do [ -x "$b" ] || { echo "$1: $b not built" >&2; exit 2; }; done
}

# The suites' tally: ok NAME; bad NAME [WHY], which also shows the last ERR_TAIL (default 5)
# lines of $work/err, where a suite keeps the stderr of its last client command; check NAME
# CMD... is ok when CMD succeeds. Each suite ends saying "$pass passed, $fail failed".
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "PASS $1"; }
bad() {
  fail=$((fail + 1)); echo "FAIL $1${2:+: $2}"
  if [ -n "${work:-}" ] && [ -s "$work/err" ]; then sed 's/^/    stderr: /' "$work/err" | tail -n "${ERR_TAIL:-5}"; fi
}
check() { local name=$1; shift; if "$@"; then ok "$name"; else bad "$name"; fi; }

# stuck_report: every rcp and rcpd process still there, with its state, and the kernel stack
# of each of its threads. A process the guest kernel holds (seen over soft-RoCE: a thread in
# rdma_destroy_id for an id on a downed link, "cm_destroy_id_wait_timeout" on the console
# every 10 s) cannot be ended by any signal; this names where it is instead of a silent hang.
stuck_report() {
  local p t
  for p in $(pgrep -x 'rcpd?'); do
    echo "    stuck: pid $p state $(sed 's/.*) //; s/ .*//' "/proc/$p/stat" 2>/dev/null): $(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | cut -c1-160)"
    for t in /proc/"$p"/task/*; do
      [ -r "$t/stack" ] || continue
      echo "      thread ${t##*/} ($(cat "$t/comm" 2>/dev/null), $(sed 's/.*) //; s/ .*//' "$t/stat" 2>/dev/null)):"
      sed 's/^/        /' "$t/stack" 2>/dev/null | head -n 12
    done
  done
}

# reap PID SECS: PID's exit status (PID a child of this shell), waiting for it at most SECS.
# After that: stuck_report, and 124 without waiting (`wait` on a process the kernel holds
# would hang the suite until the guest's own limit). Polls /proc rather than `wait`, which
# cannot time out; a zombie (Z) has exited and `wait` returns at once. Sets reap_stuck=1.
reap() {
  local pid=$1 end=$((SECONDS + $2)) st
  while :; do
    st=$(sed 's/.*) //; s/ .*//' "/proc/$pid/stat" 2>/dev/null)
    if [ -z "$st" ] || [ "$st" = Z ]; then wait "$pid"; return; fi
    [ $SECONDS -lt $end ] || break
    sleep 0.2
  done
  echo "    pid $pid still running after $2 s:"
  stuck_report
  reap_stuck=1
  return 124
}
