#!/bin/bash
# Scheduled replication jobs (issue 12, rcp-sync(8)): a job file in a jobs directory run by the
# real rcp-sync against a real rcpd over TCP on loopback — what it copies, its exit codes, its
# errors naming file, line and key — and the systemd generator's schedule drop-ins, checked
# with systemd-analyze where it exists.
#
# usage: sync_suite.sh --bin DIR [--work DIR]
# Prints PASS/FAIL lines and ends with "N passed, N failed"; exit status 1 if any failed.
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"  # suite_args, suite_bins
suite_args sync_suite "$@"
RCP=$(cd "$bin/../rcp" 2>/dev/null && pwd)/rcp; [ -x "$RCP" ] || RCP=$bin/rcp
RCPD=$(cd "$bin/../rcpd" 2>/dev/null && pwd)/rcpd; [ -x "$RCPD" ] || RCPD=$bin/rcpd
SYNC=$(cd "$bin/../rcp-sync" 2>/dev/null && pwd)/rcp-sync; [ -x "$SYNC" ] || SYNC=$bin/rcp-sync
here=$(cd "$(dirname "$0")" && pwd)
for b in "$RCP" "$RCPD" "$SYNC"; do [ -x "$b" ] || { echo "sync_suite: $b not built" >&2; exit 2; }; done

[ -n "$work" ] || work=$(mktemp -d /tmp/rcp-sync.XXXXXX)
exp=$work/export jobs=$work/jobs src=$work/src gen=$work/gen
mkdir -p "$exp" "$jobs" "$src/tree/sub" "$gen"
export XDG_CONFIG_HOME=$work/config HOME=$work/home
# Below the kernel's ephemeral ports (32768-60999): see copy_suite.sh.
base=$(( 20000 + (($$ + 4099) % 790) * 16 ))
tport=$((base + 1))
dpid=
cleanup() {
  [ -n "$dpid" ] && { kill -TERM "$dpid" 2>/dev/null; wait "$dpid" 2>/dev/null; }
  if [ "$fail" = 0 ]; then rm -rf "$work"; else echo "sync_suite: kept $work"; fi
}
trap cleanup EXIT
trap 'exit 143' TERM INT

"$RCPD" --listen "127.0.0.1:$tport" --transport tcp --export data="$exp" > "$work/rcpd.log" 2>&1 &
dpid=$!
for _ in $(seq 100); do grep -q "rcpd: ready" "$work/rcpd.log" 2>/dev/null && break; sleep 0.05; done

head -c 1500000 /dev/urandom > "$src/tree/big.bin"
echo one > "$src/tree/sub/one.txt"
echo solo > "$src/solo.txt"
sync() { "$SYNC" --jobs-dir "$jobs" --rcp "$RCP" "$@" > "$work/out" 2> "$work/err"; }

# --- a job copies what it names
cat > "$jobs/tree.toml" <<TOML
# a test job
sources = ["$src/tree", "$src/solo.txt"]
destination = "127.0.0.1:data/replica/"
options = ["-r", "--tcp-port=$tport"]
transport = "tcp"
TOML
mkdir -p "$exp/replica"
sync tree; rc=$?
check "rcp-sync NAME runs the job (exit $rc)" test "$rc" = 0
check "  ... the tree arrives" cmp -s "$src/tree/big.bin" "$exp/replica/tree/big.bin"
check "  ... with its subdirectory and the single file" \
  bash -c "cmp -s '$src/tree/sub/one.txt' '$exp/replica/tree/sub/one.txt' && cmp -s '$src/solo.txt' '$exp/replica/solo.txt'"
check "  ... and the command it ran is logged (the journal, under systemd)" grep -q "rcp-sync: job tree: .*--tcp-port=$tport" "$work/err"
check "  ... and rcp's --json report is the one line on stdout (files_transferred 3)" \
  bash -c "[ \$(wc -l < '$work/out') = 1 ] && grep -q '\"files_transferred\":3' '$work/out' && grep -q '\"exit_code\":0' '$work/out'"
sync tree; rc=$?
check "a second run of the job moves nothing (exit $rc, bytes_transferred 0)" \
  bash -c "[ $rc = 0 ] && grep -q '\"bytes_transferred\":0' '$work/out' && grep -q '\"files_transferred\":0' '$work/out'"

# --- --print shows the command and runs nothing
rm -rf "$exp/replica"/*
sync -n tree; rc=$?
check "rcp-sync -n prints the rcp command (exit $rc)" \
  bash -c "[ $rc = 0 ] && grep -qF -- '--transport=tcp -r --tcp-port=$tport --json -- $src/tree $src/solo.txt 127.0.0.1:data/replica/' '$work/out'"
check "  ... and copies nothing" test -z "$(ls -A "$exp/replica")"

# --- a job given by path
sync "$jobs/tree.toml"; rc=$?
check "rcp-sync FILE runs a job file by path (exit $rc)" test "$rc" = 0 -a -f "$exp/replica/solo.txt"

# --- rcp's exit status is the job's: a vanished source
cat > "$jobs/partial.toml" <<TOML
sources = ["$src/solo.txt", "$src/does-not-exist"]
destination = "127.0.0.1:data/"
options = ["--tcp-port=$tport"]
transport = "tcp"
json = false
TOML
sync partial; rc=$?
check "a job with a missing source fails with rcp's exit status (exit $rc, not 0)" test "$rc" != 0 -a "$rc" != 1
check "  ... naming the source" grep -q "does-not-exist" "$work/err"

# --- job file errors: file, line and key; exit 1; rcp not run
printf 'sources = ["/x"]\ndestination = "127.0.0.1:data/"\noptions = ["-r", "500M"]\n' > "$jobs/bad.toml"
sync bad; rc=$?
check "an option element that is not an option is refused (exit $rc), naming file:line" \
  bash -c "[ $rc = 1 ] && grep -q 'bad.toml:3:.*element 2' '$work/err'"
printf 'sources = ["/x"]\ndestination = "127.0.0.1:data/"\nshedule = "daily"\n' > "$jobs/typo.toml"
sync typo; rc=$?
check "an unknown key is refused (exit $rc), naming it" bash -c "[ $rc = 1 ] && grep -q \"typo.toml:3:1: unknown key 'shedule'\" '$work/err'"
sync nosuchjob; rc=$?
check "a job that does not exist (exit $rc) names its file" bash -c "[ $rc = 1 ] && grep -q '$jobs/nosuchjob.toml' '$work/err'"
sync 'x/../../etc'; rc=$?
check "  ... and a name is never a path outside the jobs directory unless given as one (exit $rc)" test "$rc" = 1
rm -f "$jobs/bad.toml" "$jobs/typo.toml"

# --- the generator: schedules into drop-ins, nothing for jobs without one, bad files skipped
printf 'sources = ["/x"]\ndestination = "h:m/"\nschedule = "*-*-* 02:00:00"\n' > "$jobs/nightly.toml"
printf 'sources = ["/x"]\ndestination = "h:m/"\nschedule = "Mon *-*-* 03:30"\nbogus = 1\n' > "$jobs/broken.toml"
"$SYNC" --jobs-dir "$jobs" --generate "$gen" "$gen.early" "$gen.late" 2> "$work/err"; rc=$?
check "the generator exits 0 even with a bad job file (exit $rc)" test "$rc" = 0
check "  ... writes the nightly job's OnCalendar" \
  bash -c "grep -qx 'OnCalendar=\*-\*-\* 02:00:00' '$gen/rcp-sync@nightly.timer.d/50-schedule.conf' && grep -qx 'OnCalendar=' '$gen/rcp-sync@nightly.timer.d/50-schedule.conf'"
check "  ... nothing for a job without a schedule" test ! -e "$gen/rcp-sync@tree.timer.d"
check "  ... and reports and skips the bad one" bash -c "[ ! -e '$gen/rcp-sync@broken.timer.d' ] && grep -q 'broken.toml:4:1: unknown key' '$work/err'"

# --- the units, as systemd reads them
if command -v systemd-analyze > /dev/null; then
  units=$work/units; mkdir -p "$units"
  sed "s|/usr/bin/rcp-sync|$SYNC|" "$here/../../packaging/rcp-sync@.service" > "$units/rcp-sync@nightly.service"
  cp "$here/../../packaging/rcp-sync@.timer" "$units/rcp-sync@nightly.timer"
  mkdir -p "$units/rcp-sync@nightly.timer.d"; cp "$gen/rcp-sync@nightly.timer.d/50-schedule.conf" "$units/rcp-sync@nightly.timer.d/"
  (cd "$units" && SYSTEMD_LOG_LEVEL=warning systemd-analyze verify --man=no ./rcp-sync@nightly.timer ./rcp-sync@nightly.service) > "$work/err" 2>&1
  # (outside a booted systemd, verify may only complain that it cannot reach the manager)
  check "systemd-analyze verify accepts the templates and the drop-in" \
    bash -c "! grep -v -e 'Failed to' -e 'System has not been booted' -e 'Failed to connect' -e 'not been booted' '$work/err' | grep -qi -e 'unknown' -e 'invalid' -e 'bad'"
  systemd-analyze calendar "*-*-* 02:00:00" > /dev/null 2>&1
  check "  ... and the example's schedule is a valid calendar expression" test $? = 0
else
  echo "SKIP (LOUD): systemd-analyze not installed: the units are not verified"
fi

echo "sync_suite: $pass passed, $fail failed"
[ "$fail" = 0 ]
