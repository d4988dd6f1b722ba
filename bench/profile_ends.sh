#!/bin/bash
# Where each end's CPU goes, rcp's and socat's side by side: pushes of one SIZE MiB file from
# /dev/shm over 127.0.0.1 into /dev/shm, `perf record` on each of the four processes (rcp
# sending, rcpd receiving, socat sending, socat receiving), every sample put in one of a few
# classes by the function it hit. Prints one markdown table, ms of CPU per GiB moved.
#
#   bash bench/profile_ends.sh [SIZE_MIB] [RUNS]      # default 1024 MiB, 3 runs of each tool
#   BUILD=build-other bash bench/profile_ends.sh      # another build directory (default build)
#
# Classes (the function a sample hit, no call chains; perf at 4999 Hz, so ms = samples / 5):
#   copy    the kernel's and libc's memory copies: socket <-> user memory, user memory <-> file pages
#   digest  libxxhash (rcp's xxh128; socat has none)
#   pvm     pvm_irq_enable: the paravirtualised host's interrupt enabling (this machine's
#           kind of VM; it is in every profile, rcp's and socat's alike)
#   user    the rest of user space (the program, libc, liburing)
#   kernel  the rest of the kernel (TCP, io_uring, page allocation, scheduling)
# Free page reporting is held as in bench/lib.sh. Ports 18570-18572.
set -eu
size=${1:-1024} runs=${2:-3}
. "$(dirname "$0")/lib.sh"
bench_bins profile_ends.sh perf socat   # sets rcp, rcpd (lib.sh)
bench_scratch prof   # sets w (lib.sh)
one_file_setup "$w" "$size"
mkdir -p "$w/perf"

# rcp: one rcpd, recorded over all runs; each rcp client recorded on its own.
"$rcpd" --transport tcp --listen 127.0.0.1:18571 -P 18570 --export b="$w/exp" > "$w/rcpd.log" 2>&1 & dpid=$!; BG_PIDS+=("$dpid")
rcpd_ready profile_ends.sh "$w/rcpd.log"
perf record -q -F 4999 -p "$dpid" -o "$w/perf/rcpd" > /dev/null 2>&1 & ppid_rec=$!; BG_PIDS+=("$ppid_rec")
sleep 1   # perf attached
for i in $(seq "$runs"); do
  rm -f "$w/exp/up.bin"
  perf record -q -F 4999 -o "$w/perf/rcp.$i" -- "$rcp" --transport tcp --tcp-port 18571 "$w/src.bin" 127.0.0.1:b/up.bin > /dev/null 2>&1
  cmp -s "$w/src.bin" "$w/exp/up.bin" || { echo "profile_ends.sh: rcp push $i did not arrive whole" >&2; exit 1; }
done
kill -INT "$ppid_rec"; wait "$ppid_rec" 2>/dev/null || true
kill -TERM "$dpid"; wait "$dpid" 2>/dev/null || true
BG_PIDS=()

# socat: a listener writing the file, a sender reading it (-b 1 MiB: rcp's chunk size).
for i in $(seq "$runs"); do
  rm -f "$w/exp/socat.bin"
  perf record -q -F 4999 -o "$w/perf/socat-recv.$i" -- socat -u -b 1048576 TCP-LISTEN:18572,reuseaddr \
    "OPEN:$w/exp/socat.bin,creat,trunc" > /dev/null 2>&1 & lpid=$!
  for _ in $(seq 100); do ss -ltn 2>/dev/null | grep -q ':18572 ' && break; sleep 0.05; done
  perf record -q -F 4999 -o "$w/perf/socat-send.$i" -- socat -u -b 1048576 "OPEN:$w/src.bin" TCP:127.0.0.1:18572 > /dev/null 2>&1
  wait "$lpid" || true
  cmp -s "$w/src.bin" "$w/exp/socat.bin" || { echo "profile_ends.sh: socat run $i did not arrive whole" >&2; exit 1; }
done

# Samples per class for a set of perf.data files: "copy digest pvm user kernel".
classes() {
  for f in "$@"; do perf report -i "$f" --no-children --sort dso,sym --stdio -F sample,dso,sym 2> /dev/null; done |
    awk '/^ *[0-9]+ / {
      n = $1; dso = $2; sym = $0; sub(/^ *[0-9]+ +[^ ]+ +\[[^]]*\] +/, "", sym)
      if (sym ~ /copy|memcpy|memmove|rep_movs|movs_alternative/) c["copy"] += n
      else if (dso ~ /xxhash/ || sym ~ /^XXH/) c["digest"] += n
      else if (sym ~ /pvm_irq_enable/) c["pvm"] += n
      else if (dso ~ /kernel/) c["kernel"] += n
      else c["user"] += n
    } END { printf "%d %d %d %d %d\n", c["copy"], c["digest"], c["pvm"], c["user"], c["kernel"] }'
}
gib=$(echo "$size * $runs / 1024" | bc -l)
read -r -a s_rcp <<< "$(classes "$w"/perf/rcp.*)"
read -r -a s_rcpd <<< "$(classes "$w/perf/rcpd")"
read -r -a s_ss <<< "$(classes "$w"/perf/socat-send.*)"
read -r -a s_sr <<< "$(classes "$w"/perf/socat-recv.*)"
ms() { echo "$1 / 4.999 / $gib" | bc -l | xargs printf '%.0f'; }
echo "| ms of CPU per GiB ($runs × $size MiB pushed, $(git -C "$(dirname "$0")" rev-parse --short HEAD)) | rcp sends | socat sends | rcpd receives | socat receives |"
echo "|---|---:|---:|---:|---:|"
label=("memory copies (socket, file pages)" "digest (xxh128)" "pvm_irq_enable (this VM)" "user space otherwise" "kernel otherwise")
t1=0 t2=0 t3=0 t4=0
for k in 0 1 2 3 4; do
  echo "| ${label[$k]} | $(ms "${s_rcp[$k]}") | $(ms "${s_ss[$k]}") | $(ms "${s_rcpd[$k]}") | $(ms "${s_sr[$k]}") |"
  t1=$((t1 + s_rcp[k])) t2=$((t2 + s_ss[k])) t3=$((t3 + s_rcpd[k])) t4=$((t4 + s_sr[k]))
done
echo "| **all** | **$(ms $t1)** | **$(ms $t2)** | **$(ms $t3)** | **$(ms $t4)** |"
echo "| both ends | **$(ms $((t1 + t3)))** rcp | **$(ms $((t2 + t4)))** socat | | |"
