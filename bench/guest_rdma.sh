#!/bin/bash
# The RDMA half of bench/run, run where RDMA devices exist — normally inside the soft-RoCE
# guest: tests/vm/rxe-run -- bash bench/guest_rdma.sh BIN_DIR MIB NFILES FILE_KIB REPEATS
# BIN_DIR holds rcp and rcpd (or is a build dir: BIN_DIR/rcp/rcp, BIN_DIR/rcpd/rcpd).  Client on side A (rxe0), daemon/servers on side B (rxe1).
# Per repeat, in turn: rcp pull and push of a MIB file, ib_read_bw -R -F -s 1048576 moving
# the same bytes, rdma-core rcopy of the same file, rcp push of NFILES x FILE_KIB files
# (given as arguments) and, when this rcp has -r, rcp -r pull of that directory.  Prints RAW/NA records (bench/lib.sh) on stdout, progress on stderr.
set -u
bin=$(cd "${1:?usage: guest_rdma.sh BIN_DIR MIB NFILES FILE_KIB REPEATS}" && pwd) || exit 2
if [ -x "$bin/rcp/rcp" ]; then rcp_bin=$bin/rcp/rcp rcpd_bin=$bin/rcpd/rcpd   # a build dir
else rcp_bin=$bin/rcp rcpd_bin=$bin/rcpd; fi                                 # a flat copy (bench/run)
cd "$(dirname "$0")/.." || exit 1
. bench/lib.sh
mib=${2:-48} nfiles=${3:-1000} kib=${4:-16} reps=${5:-3}
base=${BENCH_PORT_BASE:-18470}
p_cm=$((base + 1)) p_tcp=$((base + 2)) p_rcopy=$((base + 6)) p_ib=$((base + 7))
srv=${RXE_ADDR_B:-$(ip -4 -o addr show | awk '$2 != "lo" {sub("/.*","",$4); print $4; exit}')}
dev_srv=${RXE_DEV_B:-$(ls /sys/class/infiniband | head -n1)}
dev_cli=${RXE_DEV_A:-$dev_srv}
RAW=-
D=$(mktemp -d /dev/shm/rcp-bench.XXXXXX)      # data: tmpfs
W=$D/w LOG=$D/w/log
mkdir -p "$W" "$D/exp/up" "$D/down" "$D/rc" "$D/small"
pids=()
cleanup() {
    local p
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    if [ -s "$LOG" ]; then echo "bench: ---- guest command log ----" >&2; cat "$LOG" >&2; fi
    rm -rf "$D"
}
trap cleanup EXIT

bytes=$((mib << 20))
sbytes=$((nfiles * kib * 1024))
say "guest: ${mib} MiB file, ${nfiles} x ${kib} KiB files, ${reps} repeat(s); $dev_cli -> $dev_srv ($srv)"
head -c "$bytes" /dev/urandom > "$D/src.bin"
ln "$D/src.bin" "$D/exp/src.bin"
(cd "$D/small" && head -c "$sbytes" /dev/urandom | split -b "${kib}K" -a 5 -d - f)
cp -r "$D/small" "$D/exp/small"              # the source of the -r pull
has_r=0
"$rcp_bin" --help 2>&1 | grep -q -- '-r,--recursive' && has_r=1

rcpd_ok=1
"$rcpd_bin" --transport rdma --listen "$srv:$p_cm" --tcp-port "$p_tcp" --export b="$D/exp" 2> "$W/rcpd.log" &
dpid=$!
pids+=("$dpid")
if ! wait_for_line "$W/rcpd.log" ready 400; then
    rcpd_ok=0
    why="rcpd did not start: $(tail -n 2 "$W/rcpd.log" | tr '\n' ' ')"
    for k in rdma_pull rdma_push rdma_small_push rdma_small_pull_r; do na "$k" "$why"; done
fi
rcopy_ok=1
command -v rcopy > /dev/null || { rcopy_ok=0; na rcopy "rcopy not installed (apt-get install rdmacm-utils)"; }
if [ "$rcopy_ok" = 1 ]; then
    (cd "$D/rc" && exec rcopy -p "$p_rcopy") > "$W/rcopy-srv.log" 2>&1 &
    rcopy_pid=$!
    pids+=("$rcopy_pid")
fi
ib_ok=1
command -v ib_read_bw > /dev/null || { ib_ok=0; na ibbw "ib_read_bw not installed (apt-get install perftest)"; }
sleep 1

rcp=("$rcp_bin" -v --transport rdma -P "$p_cm" --tcp-port "$p_tcp")
v_pull()  { cmp -s "$D/src.bin" "$D/down/src.bin"; }
v_push()  { cmp -s "$D/src.bin" "$D/exp/up/src.bin"; }
v_rcopy() { cmp -s "$D/src.bin" "$D/rc/out.bin"; }
v_small() { diff -rq "$D/small" "$D/exp/sd" > /dev/null; }
v_small_pull() { diff -rq "$D/small" "$D/down/small" > /dev/null; }
[ "$rcpd_ok" = 0 ] || [ "$has_r" = 1 ] || na rdma_small_pull_r "this rcp has no -r"
small=()
for f in "$D"/small/f*; do small+=("${f##*/}"); done

# Untimed warm-up: the first start of each program in the guest reads it over 9p and the
# first connection of each kind sets up rxe state; neither belongs to the first repeat.
say "guest: warm-up (untimed)"
if [ "$rcpd_ok" = 1 ]; then
    "${rcp[@]}" "$srv:b/src.bin" "$D/down/" > /dev/null 2>&1
    rm -f "$D/down/src.bin"
fi
if [ "$ib_ok" = 1 ]; then
    timeout 60 ib_read_bw -d "$dev_srv" -R -F -s 1048576 -n 5 -p "$p_ib" > /dev/null 2>&1 &
    sleep 1
    ib_read_bw -d "$dev_cli" -R -F -s 1048576 -n 5 -p "$p_ib" "$srv" > /dev/null 2>&1
    wait $!
fi
if [ "$rcopy_ok" = 1 ]; then
    rcopy "$D/src.bin" "$srv:$D/rc/out.bin" -p "$p_rcopy" > /dev/null 2>&1
    rm -f "$D/rc/out.bin"
fi

for run in $(seq "$reps"); do
    say "guest: repeat $run/$reps"
    if [ "$rcpd_ok" = 1 ]; then
        rm -f "$D/down/src.bin"; warm "$bytes" "$D"
        measure rdma_pull "$run" "$bytes" 1 "$dpid" own_rcp v_pull -- \
            "${rcp[@]}" "$srv:b/src.bin" "$D/down/"
        rm -f "$D/exp/up/src.bin"; warm "$bytes" "$D"
        measure rdma_push "$run" "$bytes" 1 "$dpid" own_rcp v_push -- \
            "${rcp[@]}" "$D/src.bin" "$srv:b/up/"
    fi
    if [ "$ib_ok" = 1 ]; then
        # server on B wrapped in time(1) for its CPU; the client (A) is what is timed
        /usr/bin/time -f '%e %U %S %M' -o "$W/ibs.time" timeout 300 \
            ib_read_bw -d "$dev_srv" -R -F -s 1048576 -n "$mib" -p "$p_ib" > "$W/ibs.log" 2>&1 &
        ibs=$!
        sleep 1
        measure ibbw "$run" "$bytes" 1 "" own_ibbw -- \
            ib_read_bw -d "$dev_cli" -R -F -s 1048576 -n "$mib" -p "$p_ib" "$srv"
        wait "$ibs"
    fi
    if [ "$rcopy_ok" = 1 ]; then
        rm -f "$D/rc/out.bin"; warm "$bytes" "$D"
        measure rcopy "$run" "$bytes" 1 "$rcopy_pid" own_rcopy v_rcopy -- \
            rcopy "$D/src.bin" "$srv:$D/rc/out.bin" -p "$p_rcopy"   # client: SRC SERVER:DST first
    fi
    if [ "$rcpd_ok" = 1 ]; then
        rm -rf "$D/exp/sd"; mkdir "$D/exp/sd"; warm "$sbytes" "$D"
        cd "$D/small" || exit 1
        measure rdma_small_push "$run" "$sbytes" "$nfiles" "$dpid" own_rcp v_small -- \
            "${rcp[@]}" "${small[@]}" "$srv:b/sd/"
        cd - > /dev/null || exit 1
        if [ "$has_r" = 1 ]; then
            rm -rf "$D/down/small"; warm "$sbytes" "$D"
            measure rdma_small_pull_r "$run" "$sbytes" "$nfiles" "$dpid" own_rcp v_small_pull -- \
                "${rcp[@]}" -r "$srv:b/small" "$D/down/"
        fi
    fi
done
exit 0
