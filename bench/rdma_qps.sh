#!/bin/bash
# Queue pairs per copy: rcp pull and push of a SIZE MiB file with --streams N for each N given,
# next to ib_read_bw -q N (the same number of QPs, 1 MiB messages) on the same link. Runs
# where RDMA devices exist (natively or inside tests/vm/rxe-run); prints medians in MB/s.
# usage: bench/rdma_qps.sh BUILD_DIR [SIZE_MIB] [REPEATS] [N...]   (default N: 1 2 4)
set -u
bin=${1:?usage: rdma_qps.sh BUILD_DIR [SIZE_MIB] [REPEATS] [N...]}
mib=${2:-48} reps=${3:-3}
shift $(( $# < 3 ? $# : 3 ))
ns=("$@"); [ ${#ns[@]} -gt 0 ] || ns=(1 2 4)
. "$(dirname "$0")/rdma_common.sh"
rdma_bench_setup 7483
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
declare -A pulls pushes refs
# Rounds interleave the QP counts, so load from anything else on the host hits all of them alike.
for i in $(seq "$reps"); do
  for n in "${ns[@]}"; do
    rm -f "$w/back/f.bin"
    "$bin/rcp/rcp" -v --transport rdma -P 7483 --streams "$n" "$srv:b/f.bin" "$w/back/f.bin" 2> "$w/pull.$n" || cat "$w/pull.$n"
    cmp -s "$w/src.bin" "$w/back/f.bin" || echo "PULL DATA MISMATCH ($n QPs)"
    pulls[$n]+=" $(mbps "$w/pull.$n")"
    "$bin/rcp/rcp" -v --transport rdma -P 7483 --streams "$n" "$w/src.bin" "$srv:b/pushed.bin" 2> "$w/push.$n" || cat "$w/push.$n"
    cmp -s "$w/src.bin" "$w/export/pushed.bin" || echo "PUSH DATA MISMATCH ($n QPs)"
    pushes[$n]+=" $(mbps "$w/push.$n")"
    ib_read_bw -d "$dev_srv" -R -F -q "$n" -s 1048576 -n "$mib" > "$w/ibs.log" 2>&1 &
    sp=$!
    sleep 1
    ib_read_bw -d "$dev_cli" -R -F -q "$n" -s 1048576 -n "$mib" "$srv" > "$w/ibc.log" 2>&1
    wait $sp
    refs[$n]+=" $(awk '/^ *1048576/ {print $4 * 1.048576}' "$w/ibc.log" | tail -n1)"
  done
done
printf '%-5s %10s %10s %12s   %s\n' "QPs" "pull MB/s" "push MB/s" "ib_read_bw" "(${mib} MiB, median of ${reps}; all pulls / pushes)"
for n in "${ns[@]}"; do
  printf '%-5s %10.1f %10.1f %12.1f   pulls%s / pushes%s\n' "$n" "$(median ${pulls[$n]})" "$(median ${pushes[$n]})" \
      "$(median ${refs[$n]:-0})" "${pulls[$n]}" "${pushes[$n]}"
  grep -h "chunks read per queue pair" "$w/pull.$n" | sed 's/^/      last pull: /'
done
kill $dp; wait $dp 2>/dev/null
rm -rf "$w"
