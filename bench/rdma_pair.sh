#!/bin/bash
# One RDMA measurement, run where RDMA devices exist (natively or inside tests/vm/rxe-run):
# rcp pull and push of a SIZE MiB file (default 48) next to ib_read_bw with the same message
# size (the chunk size, 1 MiB) on the same link, printed as MB/s and as ratios.
# usage: bench/rdma_pair.sh BUILD_DIR [SIZE_MIB] [REPEATS]
set -u
bin=${1:?usage: rdma_pair.sh BUILD_DIR [SIZE_MIB] [REPEATS]}
mib=${2:-48} reps=${3:-1}
. "$(dirname "$0")/rdma_common.sh"
rdma_bench_setup 7481
pulls=() pushes=() refs=()
for i in $(seq "$reps"); do
  rm -f "$w/back/f.bin"
  "$bin/rcp/rcp" -v --transport rdma -P 7481 "$srv:b/f.bin" "$w/back/f.bin" 2> "$w/pull.err" || cat "$w/pull.err"
  cmp -s "$w/src.bin" "$w/back/f.bin" || echo "PULL DATA MISMATCH"
  pulls+=("$(mbps "$w/pull.err")")
  "$bin/rcp/rcp" -v --transport rdma -P 7481 "$w/src.bin" "$srv:b/pushed.bin" 2> "$w/push.err" || cat "$w/push.err"
  pushes+=("$(mbps "$w/push.err")")
  ib_read_bw -d "$dev_srv" -R -F -s 1048576 -n "$mib" > "$w/ibs.log" 2>&1 &
  sp=$!
  sleep 1
  ib_read_bw -d "$dev_cli" -R -F -s 1048576 -n "$mib" "$srv" > "$w/ibc.log" 2>&1
  wait $sp
  refs+=("$(awk '/^ *1048576/ {print $4 * 1.048576}' "$w/ibc.log" | tail -n1)")
done
kill $dp; wait $dp 2>/dev/null
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
p=$(median "${pulls[@]}") q=$(median "${pushes[@]}") r=$(median "${refs[@]}")
head -n1 "$w/pull.err"
printf '%-34s %10s\n' "what (${mib} MiB, ${reps} run(s), median)" "MB/s"
printf '%-34s %10.1f\n' "rcp pull (RDMA READ, xxh128)" "$p"
printf '%-34s %10.1f\n' "rcp push (RDMA READ, xxh128)" "$q"
printf '%-34s %10.1f\n' "ib_read_bw -s 1048576 (rdma_cm)" "$r"
awk -v p="$p" -v q="$q" -v r="$r" 'BEGIN { if (r > 0) printf "ratio pull/ib_read_bw %.2f   push/ib_read_bw %.2f\n", p/r, q/r }'
rm -rf "$w"
