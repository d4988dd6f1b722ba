#!/bin/bash
# How often each end of a push sleeps, and what it asks of the kernel, rcp's and socat's side
# by side: pushes of one SIZE MiB file from /dev/shm over 127.0.0.1 into /dev/shm, interleaved
# (one run of each tool, then the next round), `perf stat` on the sender and on the receiver
# (rcpd attached for the run). Prints per GiB moved, medians of the rounds: context switches,
# system calls, io_uring requests submitted, requests that found their socket not ready and
# armed a poll, requests punted to io-wq workers, and task_work items (completions run on the
# submitter's thread).
#
#   bash bench/wakeups.sh [SIZE_MIB] [RUNS]      # default 1024 MiB, 3 rounds
#   BUILD=build-other bash bench/wakeups.sh      # another build directory (default build)
#
# Free page reporting is held as in bench/lib.sh. Ports 18590-18592.
set -eu -o pipefail
size=${1:-1024} runs=${2:-3}
. "$(dirname "$0")/lib.sh"
bench_bins wakeups.sh perf socat   # sets rcp, rcpd (lib.sh)
bench_scratch wk   # sets w (lib.sh)
one_file_setup "$w" "$size"
"$rcpd" --transport tcp --listen 127.0.0.1:18591 -P 18590 --export b="$w/exp" > "$w/rcpd.log" 2>&1 & dpid=$!; BG_PIDS+=("$dpid")
rcpd_ready wakeups.sh "$w/rcpd.log"
events=context-switches,raw_syscalls:sys_enter,io_uring:io_uring_submit_req,io_uring:io_uring_poll_arm
events=$events,io_uring:io_uring_queue_async_work,io_uring:io_uring_task_add
names=(cs syscalls submitted poll_armed io_wq task_work)
stat() { perf stat -x, -e "$events" "$@"; }
# per GiB: "cs syscalls ..." from a perf stat -x, file
per_gib() { awk -F, -v s="$size" '$3 ~ /./ {printf "%d ", $1 * 1024 / s}' "$1"; }
for _ in $(seq "$runs"); do
  for tool in socat rcp; do
    rm -f "$w/exp/up.bin" "$w/down/out.bin"
    if [ $tool = socat ]; then
      stat -o "$w/recv" -- socat -u -b 1048576 TCP-LISTEN:18592,reuseaddr "OPEN:$w/down/out.bin,creat,trunc" & rpid=$!
      for _ in $(seq 100); do ss -ltn | grep -q ':18592 ' && break; sleep 0.02; done
      stat -o "$w/send" -- socat -u -b 1048576 "OPEN:$w/src.bin" TCP:127.0.0.1:18592
      wait "$rpid"
      out=$w/down/out.bin
    else
      perf stat -x, -e "$events" -o "$w/recv" -p "$dpid" & spid=$!   # (perf itself: SIGINT ends its count)
      sleep 0.3   # perf attached
      stat -o "$w/send" -- "$rcp" --transport tcp --tcp-port 18591 "$w/src.bin" 127.0.0.1:b/up.bin
      kill -INT "$spid"; wait "$spid" || true
      out=$w/exp/up.bin
    fi
    cmp -s "$w/src.bin" "$out" || { echo "wakeups.sh: $tool did not arrive whole" >&2; exit 1; }
    echo "$tool send $(per_gib "$w/send")"
    echo "$tool recv $(per_gib "$w/recv")"
  done
done | tee "$w/runs"
echo "| per GiB, medians of $runs | $(printf '%s | ' "${names[@]}")"
echo "|---|$(printf -- '---:|%.0s' "${names[@]}")"
for row in "socat send" "rcp send" "socat recv" "rcp recv"; do
  line="| $row |"
  for c in $(seq 3 $((2 + ${#names[@]}))); do
    line="$line $(awk -v r="$row" -v c="$c" '$1 " " $2 == r {print $c}' "$w/runs" | med) |"
  done
  echo "$line"
done
echo "($runs rounds of $size MiB pushed over 127.0.0.1; $(git -C "$(dirname "$0")" rev-parse --short HEAD 2>/dev/null); $(date -u +%FT%TZ))"
