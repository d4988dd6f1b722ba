#!/bin/bash
# Where each end's CPU goes, rcp's and socat's side by side: copies of one SIZE MiB file from
# /dev/shm over 127.0.0.1 into /dev/shm, `perf record` on each of the four processes (the
# sending and the receiving end of rcp and of socat), every sample put in one of a few
# classes by the function it hit. Prints one markdown table, ms of CPU per GiB moved.
#
#   bash bench/profile_ends.sh [SIZE_MIB] [RUNS] [push|pull]   # default 1024 MiB, 3 runs, push
#
# push: rcp sends to rcpd; socat's connecting end sends to its listener. pull: rcpd sends to
# rcp; socat's listener sends (`-U`) to its connecting end — the pairs bench/run measures.
#   BUILD=build-other bash bench/profile_ends.sh      # another build directory (default build)
#   KEEP=DIR bash bench/profile_ends.sh               # keep the perf.data files in DIR
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
size=${1:-1024} runs=${2:-3} dir=${3:-push}
case $dir in push | pull) ;; *) echo "profile_ends.sh: direction '$dir': push or pull" >&2; exit 2 ;; esac
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
[ "$dir" = push ] || cp "$w/src.bin" "$w/exp/src.bin"
for i in $(seq "$runs"); do
  if [ "$dir" = push ]; then
    rm -f "$w/exp/up.bin"
    from=$w/src.bin to=$w/exp/up.bin args=("$w/src.bin" 127.0.0.1:b/up.bin)
  else
    rm -f "$w/down/src.bin"
    from=$w/exp/src.bin to=$w/down/src.bin args=(127.0.0.1:b/src.bin "$w/down/")
  fi
  perf record -q -F 4999 -o "$w/perf/rcp.$i" -- "$rcp" --transport tcp --tcp-port 18571 "${args[@]}" > /dev/null 2>&1
  cmp -s "$from" "$to" || { echo "profile_ends.sh: rcp $dir $i did not arrive whole" >&2; exit 1; }
done
kill -INT "$ppid_rec"; wait "$ppid_rec" 2>/dev/null || true
kill -TERM "$dpid"; wait "$dpid" 2>/dev/null || true
BG_PIDS=()

# socat (-b 1 MiB: rcp's chunk size). push: a listener writing the file, the connecting end
# reading it; pull: the listener reads the file (-U), the connecting end writes it.
for i in $(seq "$runs"); do
  rm -f "$w/exp/socat.bin"
  if [ "$dir" = push ]; then
    lis=(-u "OPEN:$w/exp/socat.bin,creat,trunc") con=(-u "OPEN:$w/src.bin") lrole=recv crole=send
  else
    lis=(-U "OPEN:$w/src.bin,rdonly") con=(-U "OPEN:$w/exp/socat.bin,creat,trunc") lrole=send crole=recv
  fi
  perf record -q -F 4999 -o "$w/perf/socat-$lrole.$i" -- socat "${lis[0]}" -b 1048576 TCP-LISTEN:18572,reuseaddr \
    "${lis[1]}" > /dev/null 2>&1 & lpid=$!
  for _ in $(seq 100); do ss -ltn 2>/dev/null | grep -q ':18572 ' && break; sleep 0.05; done
  perf record -q -F 4999 -o "$w/perf/socat-$crole.$i" -- socat "${con[0]}" -b 1048576 "${con[1]}" TCP:127.0.0.1:18572 > /dev/null 2>&1
  wait "$lpid" || true
  cmp -s "$w/src.bin" "$w/exp/socat.bin" || { echo "profile_ends.sh: socat run $i did not arrive whole" >&2; exit 1; }
done

if [ -n "${KEEP:-}" ]; then mkdir -p "$KEEP" && cp "$w"/perf/* "$KEEP"/; fi

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
if [ "$dir" = push ]; then
  read -r -a s_rs <<< "$(classes "$w"/perf/rcp.*)"; read -r -a s_rr <<< "$(classes "$w/perf/rcpd")"
  h_rs="rcp sends" h_rr="rcpd receives" verb=pushed
else
  read -r -a s_rs <<< "$(classes "$w/perf/rcpd")"; read -r -a s_rr <<< "$(classes "$w"/perf/rcp.*)"
  h_rs="rcpd sends" h_rr="rcp receives" verb=pulled
fi
read -r -a s_ss <<< "$(classes "$w"/perf/socat-send.*)"
read -r -a s_sr <<< "$(classes "$w"/perf/socat-recv.*)"
ms() { echo "$1 / 4.999 / $gib" | bc -l | xargs printf '%.0f'; }
echo "| ms of CPU per GiB ($runs × $size MiB $verb, $(git -C "$(dirname "$0")" rev-parse --short HEAD)) | $h_rs | socat sends | $h_rr | socat receives |"
echo "|---|---:|---:|---:|---:|"
label=("memory copies (socket, file pages)" "digest (xxh128)" "pvm_irq_enable (this VM)" "user space otherwise" "kernel otherwise")
t1=0 t2=0 t3=0 t4=0
for k in 0 1 2 3 4; do
  echo "| ${label[$k]} | $(ms "${s_rs[$k]}") | $(ms "${s_ss[$k]}") | $(ms "${s_rr[$k]}") | $(ms "${s_sr[$k]}") |"
  t1=$((t1 + s_rs[k])) t2=$((t2 + s_ss[k])) t3=$((t3 + s_rr[k])) t4=$((t4 + s_sr[k]))
done
echo "| **all** | **$(ms $t1)** | **$(ms $t2)** | **$(ms $t3)** | **$(ms $t4)** |"
echo "| both ends | **$(ms $((t1 + t3)))** rcp | **$(ms $((t2 + t4)))** socat | | |"
