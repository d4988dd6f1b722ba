# shellcheck shell=bash
# bench/lib.sh — helpers shared by bench/run (host) and bench/guest_rdma.sh (inside the
# soft-RoCE guest).  Sourced, not run.  Written to avoid forks and execs where it is cheap
# to do so: every exec of a dynamically linked program costs 0.1-0.5 s in the TCG guest.
#
# Callers set:  W    a scratch directory for per-run files (time output, logs)
#               RAW  where records go: a file, or "-" for stdout (the guest streams them)
#               LOG  a file collecting every command's stderr
#
# One record per timed run, tab-separated, first field "RAW":
#   RAW key run rc wall_s bytes files cli_user_s cli_sys_s cli_maxrss_kib
#       daemon_cpu_s daemon_hwm_kib own_MBps checksum
# and for a row that could not be measured:
#   NA key reason
# ("-" where a value does not exist).  bench/run turns them into the table.

CLK_TCK=${CLK_TCK:-$(getconf CLK_TCK)}
DAEMON_SETTLE=${DAEMON_SETTLE:-0.3}   # s: let a forking daemon reap its session children

say() { echo "bench: $*" >&2; }

emit() {   # fields...  -> one tab-separated line
    local IFS=$'\t'
    if [ "$RAW" = - ]; then printf '%s\n' "$*"; else printf '%s\n' "$*" >> "$RAW"; fi
}
na() { emit NA "$1" "$2"; say "n/a $1: $2"; }

# Free page reporting (virtio-balloon): this kind of VM hands the pages a process frees back
# to the hypervisor, and the next use of each faults in the host. A 1 GiB dd into /dev/shm,
# run after run with the file removed between, took 0.49-0.70 s or 2.0-2.7 s (3 runs of 12),
# by whether its pages had been reported; rcp's pushes swung 2,100 <-> 370-830 MB/s with them,
# socat's too (bench/README.md, "Free page reporting"). hold_page_reporting raises, where the
# kernel lets root, min_free_ms (how long a page stays free before it is reported) to 60000,
# the most this kernel accepts, and max_waiting_mib (free memory waiting that starts a report
# at once) to 1048576, and sets PR_NOTE to what it did; release_page_reporting puts them back
# (call it at exit).
PR_DIR=/sys/module/page_reporting/parameters PR_WAS=() PR_NOTE='free page reporting: no knobs here'
# shellcheck disable=SC2034  # PR_NOTE is read by the scripts that source this file
hold_page_reporting() {
    local k v was kv
    for kv in min_free_ms=60000 max_waiting_mib=1048576; do
        k=${kv%=*} v=${kv#*=}
        [ -w "$PR_DIR/$k" ] || continue
        was=$(cat "$PR_DIR/$k") || continue
        if echo "$v" > "$PR_DIR/$k" 2>/dev/null; then PR_WAS+=("$k=$was"); fi
    done
    [ ${#PR_WAS[@]} = 0 ] || PR_NOTE="free page reporting held (${PR_WAS[*]} raised to 60000 / 1048576, restored at exit)"
}
release_page_reporting() {
    local kv
    for kv in "${PR_WAS[@]}"; do echo "${kv#*=}" > "$PR_DIR/${kv%=*}" 2>/dev/null; done
    PR_WAS=()
}

# bench_scratch NAME: w = a fresh directory /dev/shm/rcp-NAME.*, free page reporting held (its
# note on stderr); at exit the processes listed in BG_PIDS (the script's daemons, a perf) are
# stopped, w removed and reporting restored.
BG_PIDS=()
bench_scratch() {
    w=$(mktemp -d "${SCRATCH:-/dev/shm}/rcp-$1.XXXXXX")  # SCRATCH=DIR: another file system
    trap '[ ${#BG_PIDS[@]} = 0 ] || kill -TERM "${BG_PIDS[@]}" 2> /dev/null || true; wait 2> /dev/null || true
          rm -rf "$w"; release_page_reporting' EXIT
    hold_page_reporting
    echo "$PR_NOTE" >&2
}

# bench_bins SCRIPT TOOL...: rcp and rcpd = the binaries of BUILD (a build directory, default
# build) as absolute paths; exits 2, naming SCRIPT, when one of them or a TOOL is missing.
bench_bins() {
    local s=$1 t b
    shift
    b=$(cd "${BUILD:-build}" && pwd) || exit 2
    rcp=$b/rcp/rcp rcpd=$b/rcpd/rcpd
    for t in "$@" "$rcp" "$rcpd"; do command -v "$t" > /dev/null || { echo "$s: needs $t" >&2; exit 2; }; done
}

# rcpd_ready SCRIPT LOG: waits (5 s at most) until the rcpd logging to LOG is ready, or fails
# naming SCRIPT and showing the log.
rcpd_ready() {
    for _ in $(seq 100); do grep -q "rcpd: ready" "$2" && return 0; sleep 0.05; done
    echo "$1: rcpd did not start" >&2; cat "$2" >&2; exit 1
}

# one_file_setup DIR MIB: DIR/exp and DIR/down, DIR/src.bin of MIB MiB of random bytes, and
# twice that of tmpfs written once and freed, so those pages were reported before a hold
# (hold_page_reporting first; the A/B and profiling scripts on one large file).
one_file_setup() {
    mkdir -p "$1/exp" "$1/down"
    head -c $(($2 << 20)) /dev/urandom > "$1/src.bin"
    head -c $((2 * $2 << 20)) /dev/zero > "$1/warm" && rm -f "$1/warm"
}

# proc_cpu PID -> REPLY = utime+stime+cutime+cstime of PID in clock ticks (children count
# once they have been reaped: rsync --daemon and sshd fork one process tree per session),
# or "" when there is no such process.
proc_cpu() {
    local line f
    REPLY=''
    [ -n "${1:-}" ] || return 0
    { read -r line < "/proc/$1/stat"; } 2>/dev/null || return 0
    # shellcheck disable=SC2206  # the fields after "comm)" are plain numbers
    f=(${line##*) })               # f[0] is field 3 (state): utime is field 14 -> f[11]
    REPLY=$(( f[11] + f[12] + f[13] + f[14] ))
}
# proc_hwm PID -> REPLY = VmHWM in KiB (peak resident set since start or the last reset)
proc_hwm() {
    local k v
    REPLY=''
    [ -n "${1:-}" ] || return 0
    { while read -r k v _; do
          if [ "$k" = VmHWM: ]; then REPLY=$v; break; fi
      done < "/proc/$1/status"; } 2>/dev/null
}
# hwm_reset PID: writing 5 to clear_refs resets VmHWM to the current RSS (Linux >= 4.0)
hwm_reset() { [ -z "${1:-}" ] || { echo 5 > "/proc/$1/clear_refs"; } 2>/dev/null || true; }
ticks_to_s() { printf '%d.%03d' $(( $1 / CLK_TCK )) $(( ($1 % CLK_TCK) * 1000 / CLK_TCK )); }
last_line() { local l; REPLY=''; while IFS= read -r l; do REPLY=$l; done < "$1"; }

# warm BYTES DIR: write and delete a file of BYTES in DIR (tmpfs) right before a timed run
# that writes that much there, so the run does not pay the VM's first-touch cost
# (/work/shared/docs/measuring.md: ~1 s of CPU per GiB when memory was handed back).
warm() {
    local mib=$(( ($1 + (1 << 20) - 1) >> 20 ))
    dd if=/dev/zero of="$2/.warm" bs=1M count="$mib" status=none
    rm -f "$2/.warm"
}

# Parsers of a tool's own throughput figure: set OWN (MB/s, 10^6) and CSUM from
# $W/cmd.out / $W/cmd.err.
own_none() { OWN=-; CSUM=-; }
own_rcp() {   # "rcp: tcp: 1 file(s), N bytes in T s, X MB/s, checksum xxh128"
    local l re='([0-9.]+) MB/s, checksum ([A-Za-z0-9_-]+)'
    OWN=-; CSUM=-
    while IFS= read -r l; do
        if [[ $l =~ $re ]]; then OWN=${BASH_REMATCH[1]}; CSUM=${BASH_REMATCH[2]}; fi
    done < "$W/cmd.err"
}
own_iperf3() {   # -J: end.sum_received.bits_per_second
    OWN=$(awk '/"sum_received"/ { f = 1 } f && /"bits_per_second"/ { gsub(/[^0-9.e+-]/, "", $2); printf "%.1f", $2 / 8e6; exit }' "$W/cmd.out")
    OWN=${OWN:--}; CSUM=-
}
own_ibbw() {     # perftest prints MiB/s ("BW average[MB/sec]", 4th column)
    OWN=$(awk '$1 == 1048576 && NF >= 5 { v = $4 * 1.048576 } END { if (v != "") printf "%.1f", v }' "$W/cmd.out")
    OWN=${OWN:--}; CSUM=-
}
own_rcopy() {    # "N bytes in T seconds = X Gb/sec" (timed from the first rsend to the last ack)
    local l re='bytes in [0-9.]+ seconds = ([0-9.]+) Gb/sec'
    OWN=-; CSUM=-
    while IFS= read -r l; do
        if [[ $l =~ $re ]]; then OWN=${BASH_REMATCH[1]}; fi
    done < "$W/cmd.out"
    [ "$OWN" = - ] || OWN=$(awk -v g="$OWN" 'BEGIN { printf "%.1f", g * 1000 / 8 }')   # Gb/s -> MB/s
}

# measure KEY RUN BYTES FILES DAEMON_PID PARSER [VERIFY_FN] -- CMD...
# Times CMD under /usr/bin/time (wall time from $EPOCHREALTIME around it: every tool pays the
# same exec of time(1)), takes the daemon's CPU (utime+stime from /proc/PID/stat, before and
# after) and peak RSS (VmHWM, reset before the run), runs VERIFY_FN (untimed; non-zero marks
# the run failed), and emits one record.
measure() {
    local key=$1 run=$2 bytes=$3 files=$4 dpid=$5 parse=$6 verify=':'
    shift 6
    if [ "$1" != -- ]; then verify=$1; shift; fi
    shift
    local d0 d1 dcpu=- dhwm=- t0 t1 rc cu=- cs=- crss=-
    proc_cpu "$dpid"; d0=$REPLY
    hwm_reset "$dpid"
    t0=${EPOCHREALTIME/./}
    /usr/bin/time -f '%e %U %S %M' -o "$W/time.out" "$@" > "$W/cmd.out" 2> "$W/cmd.err"
    rc=$?
    t1=${EPOCHREALTIME/./}
    if [ -n "$dpid" ]; then
        sleep "$DAEMON_SETTLE"
        proc_cpu "$dpid"; d1=$REPLY
        [ -n "$d0" ] && [ -n "$d1" ] && dcpu=$(ticks_to_s $(( d1 - d0 )))
        proc_hwm "$dpid"; dhwm=${REPLY:--}
    fi
    last_line "$W/time.out"
    read -r _ cu cs crss <<< "$REPLY"
    "$parse"
    local shown="$*"
    [ $# -le 12 ] || shown="${*:1:10} ... ${*: -1} ($# args)"
    { echo "== $key run $run rc=$rc: $shown"; cat "$W/cmd.err"; } >> "$LOG"
    if [ "$rc" != 0 ]; then
        say "$key run $run failed (rc=$rc): $(tail -n 3 "$W/cmd.err" | tr '\n' ' ')"
    elif ! "$verify"; then
        say "$key run $run: copy differs from the source"
        echo "   VERIFY FAILED" >> "$LOG"
        rc=99
    fi
    local dt=$(( t1 - t0 ))
    emit RAW "$key" "$run" "$rc" "$(printf '%d.%06d' $(( dt / 1000000 )) $(( dt % 1000000 )))" \
        "$bytes" "$files" "${cu:--}" "${cs:--}" "${crss:--}" "$dcpu" "$dhwm" "$OWN" "$CSUM"
    return 0
}

# wait_for_line FILE PATTERN [TRIES]: poll (every 0.05 s) until FILE has a line matching PATTERN
wait_for_line() {
    local i l n=${3:-200}
    for (( i = 0; i < n; i++ )); do
        if [ -f "$1" ]; then
            while IFS= read -r l; do [[ $l == *$2* ]] && return 0; done < "$1"
        fi
        sleep 0.05
    done
    return 1
}

# measure_pair KEY RUN BYTES FILES PORT [VERIFY_FN] -- SERVER_CMD... -- CLIENT_CMD...
# For the pipe anchors (socat, tar|nc), whose receiving or sending end is a one-shot
# listener rather than a daemon: starts SERVER_CMD under time(1), waits until PORT listens,
# then times CLIENT_CMD; the wall time runs until BOTH ends have exited (the last byte is in
# the file), and the "daemon" CPU is the server's (user+sys, its children included).
measure_pair() {
    local key=$1 run=$2 bytes=$3 files=$4 port=$5 verify=':'
    shift 5
    if [ "$1" != -- ]; then verify=$1; shift; fi
    shift
    local srv=() t0 t1 rc src=0 cu=- cs=- crss=- su=- ss=- i
    while [ $# -gt 0 ] && [ "$1" != -- ]; do srv+=("$1"); shift; done
    shift
    /usr/bin/time -f '%e %U %S %M' -o "$W/stime.out" "${srv[@]}" > "$W/srv.out" 2> "$W/srv.err" &
    local spid=$!
    for (( i = 0; i < 100; i++ )); do
        [ -n "$(ss -Hltn "( sport = :$port )" 2>/dev/null)" ] && break
        sleep 0.02
    done
    t0=${EPOCHREALTIME/./}
    /usr/bin/time -f '%e %U %S %M' -o "$W/time.out" "$@" > "$W/cmd.out" 2> "$W/cmd.err"
    rc=$?
    wait "$spid" || src=$?
    t1=${EPOCHREALTIME/./}
    [ "$rc" != 0 ] || rc=$src
    last_line "$W/time.out"; read -r _ cu cs crss <<< "$REPLY"
    last_line "$W/stime.out"; read -r _ su ss _ <<< "$REPLY"
    local dcpu=-
    [ -z "$su" ] || [ "$su" = - ] || dcpu=$(awk -v u="$su" -v s="$ss" 'BEGIN { printf "%.3f", u + s }')
    { echo "== $key run $run rc=$rc: server ${srv[*]} | client $*"; cat "$W/srv.err" "$W/cmd.err"; } >> "$LOG"
    if [ "$rc" != 0 ]; then
        say "$key run $run failed (rc=$rc): $(tail -n 3 "$W/srv.err" "$W/cmd.err" | tr '\n' ' ')"
    elif ! "$verify"; then
        say "$key run $run: copy differs from the source"
        echo "   VERIFY FAILED" >> "$LOG"
        rc=99
    fi
    local dt=$(( t1 - t0 ))
    emit RAW "$key" "$run" "$rc" "$(printf '%d.%06d' $(( dt / 1000000 )) $(( dt % 1000000 )))" \
        "$bytes" "$files" "${cu:--}" "${cs:--}" "${crss:--}" "$dcpu" - - -
    return 0
}

# med: the median of the numbers on stdin, one a line (the lower middle of an even count),
# as the A/B and side-by-side scripts print their rows.
med() { sort -n | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
