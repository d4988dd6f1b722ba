#!/bin/bash
# Rails per copy (rcp --rails): rcp pull and push of a SIZE MiB file over one rail (the default)
# and over two (--rails auto), in the soft-RoCE guest with two links
# (tests/vm/rxe-run --links 2 -- bash bench/rdma_rails.sh build 48 5). Prints medians in MB/s
# and the guest's CPU time per GiB moved (all CPUs, from /proc/stat: soft-RoCE does its packet
# work in the kernel, outside rcp's and rcpd's own times).
# usage: bench/rdma_rails.sh BUILD_DIR [SIZE_MIB] [REPEATS]
set -u
bin=${1:?usage: rdma_rails.sh BUILD_DIR [SIZE_MIB] [REPEATS]}
mib=${2:-48} reps=${3:-3}
[ -n "${RXE_ADDR_D:-}" ] || { echo "rdma_rails: needs tests/vm/rxe-run --links 2" >&2; exit 2; }
srv=$RXE_ADDR_B port=7485
w=$(mktemp -d /tmp/rcp-rails-bench.XXXXXX)
mkdir -p "$w/export" "$w/back"
head -c $((mib << 20)) /dev/urandom > "$w/export/f.bin"
cp "$w/export/f.bin" "$w/src.bin"
# One namespace holds both "hosts": rcpd offers only its side's devices (B and D).
"$bin/rcpd/rcpd" --listen "*:$port" --transport rdma --rails "$RXE_DEV_B,$RXE_DEV_D" --export b="$w/export" \
    2> "$w/rcpd.log" &
dp=$!
for _ in $(seq 200); do grep -q ready "$w/rcpd.log" && break; sleep 0.05; done
busy() { awk '/^cpu / {print $2 + $3 + $4 + $7 + $8}' /proc/stat; }   # user nice system irq softirq (ticks)
hz=$(getconf CLK_TCK)
mbps() { grep -o '[0-9.]* MB/s' "$1" | tail -n1 | cut -d' ' -f1; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
declare -A pulls pushes cpu_pull cpu_push
run() {  # KIND(pull|push) RAILS(1|2)
  local k=$1 n=$2 opt=() b0 b1
  [ "$n" = 2 ] && opt=(--rails auto)
  b0=$(busy)
  if [ "$k" = pull ]; then
    rm -f "$w/back/f.bin"
    "$bin/rcp/rcp" -v --transport rdma -P $port "${opt[@]}" "$srv:b/f.bin" "$w/back/f.bin" 2> "$w/log" || cat "$w/log" >&2
    cmp -s "$w/src.bin" "$w/back/f.bin" || echo "PULL DATA MISMATCH ($n rails)"
  else
    rm -f "$w/export/pushed.bin"   # (else the quick check finds it up to date and nothing moves)
    "$bin/rcp/rcp" -v --transport rdma -P $port "${opt[@]}" "$w/src.bin" "$srv:b/pushed.bin" 2> "$w/log" || cat "$w/log" >&2
    cmp -s "$w/src.bin" "$w/export/pushed.bin" || echo "PUSH DATA MISMATCH ($n rails)"
  fi
  b1=$(busy)
  cp "$w/log" "$w/$k.$n"
  echo "$(mbps "$w/log") $(awk -v t=$((b1 - b0)) -v hz="$hz" -v m="$mib" 'BEGIN {printf "%.1f", t / hz / (m / 1024)}')"
}
# Rounds interleave 1 and 2 rails, so load from elsewhere hits both alike.
for i in $(seq "$reps"); do
  for n in 1 2; do
    read -r m c < <(run pull $n); pulls[$n]+=" $m"; cpu_pull[$n]+=" $c"
    read -r m c < <(run push $n); pushes[$n]+=" $m"; cpu_push[$n]+=" $c"
  done
done
printf '%-6s %10s %14s %10s %14s   %s\n' rails "pull MB/s" "pull CPU s/GiB" "push MB/s" "push CPU s/GiB" "(${mib} MiB, median of ${reps}; all pulls / pushes)"
for n in 1 2; do
  printf '%-6s %10.1f %14.1f %10.1f %14.1f   pulls%s / pushes%s\n' "$n" "$(median ${pulls[$n]})" "$(median ${cpu_pull[$n]})" \
      "$(median ${pushes[$n]})" "$(median ${cpu_push[$n]})" "${pulls[$n]}" "${pushes[$n]}"
done
grep -h "^rcp: rail" "$w/pull.2" | sed 's/^/      last pull over 2 rails: /'
kill $dp; wait $dp 2>/dev/null
rm -rf "$w"
