#!/bin/bash
# The RDMA part of scripts/demo.sh, run where RDMA devices exist (natively, or inside
# tests/vm/rxe-run): pulls and pushes a SIZE MiB file with rcp over RDMA and runs ib_read_bw
# with the same message size (the chunk size, 1 MiB) on the same link.
#
# One round first as a warm-up, shown but not counted: a cold first copy measures connection
# setup and first use of the device and buffers, not the data path (in the soft-RoCE guest a
# cold pull showed 0.42 x ib_read_bw where warm ones showed 0.93). Then RUNS measured rounds;
# the table ends with their medians and the ratios to ib_read_bw.
# Every copy is compared with its source; exits 1 if any copy failed or differs.
# usage: scripts/demo_rdma.sh BUILD_DIR [SIZE_MIB] [RUNS]
set -u
bin=${1:?usage: demo_rdma.sh BUILD_DIR [SIZE_MIB] [RUNS]}
mib=${2:-48} runs=${3:-3}
. "$(dirname "$0")/../bench/rdma_common.sh"
rdma_bench_setup 7481
trap 'kill $dp 2>/dev/null; wait $dp 2>/dev/null; rm -rf "$w"' EXIT
failed=0

# pull|push: one copy; prints its MB/s, or "-" and the error on stderr.
copy() {
  local log=$w/$1.err
  if [ "$1" = pull ]; then
    rm -f "$w/back/f.bin"
    "$bin/rcp/rcp" -v --transport rdma -P 7481 "$srv:b/f.bin" "$w/back/f.bin" 2> "$log" &&
      cmp -s "$w/src.bin" "$w/back/f.bin"
  else
    rm -f "$w/export/pushed.bin"
    "$bin/rcp/rcp" -v --transport rdma -P 7481 "$w/src.bin" "$srv:b/pushed.bin" 2> "$log" &&
      cmp -s "$w/src.bin" "$w/export/pushed.bin"
  fi || { echo "demo_rdma: $1 failed or differs from the source:" >&2; cat "$log" >&2; echo -; return 1; }
  mbps "$log"
}

# One ib_read_bw measurement, tried up to 3 times. The client retries until the server
# listens (a fixed sleep loses that race on a loaded host and leaves the server waiting
# forever); the server gives up after 120 s. In the loaded TCG guest a run occasionally
# reports 0 MB/s: that counts as a failed try. Prints MB/s, or "-" when all tries failed
# (a missing reference is a warning; the copies are what the demo checks).
ib_once() {
  timeout 120 ib_read_bw -d "$dev_srv" -R -F -s 1048576 -n "$mib" > "$w/ibs.log" 2>&1 &
  local sp=$! ok=0
  for _ in $(seq 60); do
    sleep 0.5
    if timeout 60 ib_read_bw -d "$dev_cli" -R -F -s 1048576 -n "$mib" "$srv" > "$w/ibc.log" 2>&1; then ok=1; break; fi
    kill -0 "$sp" 2>/dev/null || break
  done
  kill "$sp" 2>/dev/null
  wait "$sp" 2>/dev/null
  [ $ok = 1 ] && awk '/^ *1048576/ {v = $4 * 1.048576} END {if (v > 0) print v}' "$w/ibc.log"
}
ib_ref() {
  local v
  for _ in 1 2 3; do
    v=$(ib_once)
    [ -n "$v" ] && { echo "$v"; return 0; }
  done
  echo "demo_rdma: warning: ib_read_bw gave no figure in 3 tries; its last output:" >&2
  tail -n 5 "$w/ibc.log" >&2
  echo -
}

one() { if [ -z "$1" ] || [ "$1" = - ]; then echo -; else printf '%.1f' "$1"; fi; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }

pulls=() pushes=() refs=()
printf '%-22s %10s %10s %16s\n' "${mib} MiB, MB/s" "rcp pull" "rcp push" "ib_read_bw 1 MiB"
for i in $(seq 0 "$runs"); do
  p=$(copy pull) || failed=1
  q=$(copy push) || failed=1
  r=$(ib_ref)
  if [ "$i" = 0 ]; then
    label="warm-up (not counted)"
    head -n1 "$w/pull.err" | sed 's/^/  /' >&2
  else
    label="run $i"
    pulls+=("$p") pushes+=("$q")
    [ "$r" != - ] && refs+=("$r")
  fi
  printf '%-22s %10s %10s %16s\n' "$label" "$(one "$p")" "$(one "$q")" "$(one "$r")"
done
if [ $failed = 0 ]; then
  p=$(median "${pulls[@]}") q=$(median "${pushes[@]}") r=-
  [ ${#refs[@]} -gt 0 ] && r=$(median "${refs[@]}")
  printf '%-22s %10.1f %10.1f %16s\n' "median of $runs warm runs" "$p" "$q" "$(one "$r")"
  awk -v p="$p" -v q="$q" -v r="$r" \
    'BEGIN { if (r > 0) printf "warm ratio pull/ib_read_bw %.2f   push/ib_read_bw %.2f\n", p/r, q/r }'
fi
exit $failed
