#!/bin/bash
# Checks that scripts/demo.sh — the README's first command — exits 0 after a good run and
# leaves nothing behind (no /tmp/rcp-demo.*, no rcpd), and that a demo stopped with SIGTERM
# mid-copy cleans up too. Runs the TCP part only unless --rdma is given (the RDMA part boots
# a soft-RoCE guest where the host has no RDMA device: minutes under TCG).
# Not in ctest: demo.sh installs packages and builds build/ itself.
# usage: tests/integration/demo_check.sh [--rdma]
set -u
cd "$(dirname "$0")/../.."
args=(--no-rdma)
[ "${1:-}" = --rdma ] && args=()
fails=0
say() { echo "demo_check: $*"; }
leftovers() { ls -d /tmp/rcp-demo.* 2>/dev/null | grep -vxF -f <(printf '%s\n' "${before[@]}") ; }
# rcpd processes the demo starts listen on its own port 17472.
demo_daemons() { pgrep -f -- '--tcp-port 17472' 2>/dev/null | grep -v "^$$\$" || true; }

mapfile -t before < <(ls -d /tmp/rcp-demo.* 2>/dev/null; echo /nonexistent)

log=$(mktemp /tmp/demo-check-log.XXXXXX)  # not rcp-demo*: that is what we look for
bash scripts/demo.sh "${args[@]}" > "$log" 2>&1
rc=$?
if [ $rc -eq 0 ]; then say "ok: demo.sh ${args[*]} exited 0"; else say "FAIL: demo.sh exited $rc"; tail -20 "$log"; fails=$((fails + 1)); fi
grep -q "both copies verified" "$log" || { say "FAIL: no 'both copies verified' line"; fails=$((fails + 1)); }
if [ -n "$(leftovers)" ]; then say "FAIL: left behind: $(leftovers)"; fails=$((fails + 1)); else say "ok: nothing left in /tmp"; fi
if [ -n "$(demo_daemons)" ]; then say "FAIL: rcpd still running: $(demo_daemons)"; fails=$((fails + 1)); else say "ok: no rcpd left"; fi

# Stopped mid-copy: SIGTERM once the TCP part has begun.
bash scripts/demo.sh --no-rdma > "$log" 2>&1 &
demo=$!
for _ in $(seq 600); do grep -q "=== TCP" "$log" && break; sleep 0.1; done
sleep 1
kill -TERM "$demo"
wait "$demo"
rc=$?
if [ $rc -ne 0 ]; then say "ok: a demo stopped with SIGTERM exits $rc"; else say "FAIL: a stopped demo exited 0"; fails=$((fails + 1)); fi
sleep 0.5
if [ -n "$(leftovers)" ]; then say "FAIL: stopped demo left: $(leftovers)"; fails=$((fails + 1)); else say "ok: stopped demo left nothing in /tmp"; fi
if [ -n "$(demo_daemons)" ]; then say "FAIL: stopped demo left rcpd: $(demo_daemons)"; fails=$((fails + 1)); else say "ok: stopped demo left no rcpd"; fi
rm -f "$log"
[ $fails -eq 0 ] && say "all checks passed"
exit $((fails > 0))
