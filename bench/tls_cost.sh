#!/bin/bash
# What rcp --encrypt costs in CPU: one push of a random file over TCP on 127.0.0.1
# (/dev/shm -> /dev/shm) without and with TLS 1.3, counting the CPU-seconds (user + system) of
# rcp (from /usr/bin/time) and of rcpd (from /proc/PID/stat around the copy) — CPU-seconds,
# not wall time, because this runs on shared machines. Prints one markdown table, CPU-s per GiB.
#   bash bench/tls_cost.sh [BUILD_DIR] [MIB] [REPEATS]      (defaults: build 1024 1)
# Ports 18480 (rdma_cm, unused) and 18481 (TCP), away from bench/run's and auth_cost's.
set -eu
build=${1:-build} mib=${2:-1024} repeats=${3:-1}
RCP=$(cd "$build/rcp" && pwd)/rcp RCPD=$(cd "$build/rcpd" && pwd)/rcpd
w=$(mktemp -d /dev/shm/rcp-tlscost.XXXXXX)
dpid=
trap '[ -n "$dpid" ] && kill -TERM $dpid 2>/dev/null; wait 2>/dev/null; rm -rf "$w"' EXIT
mkdir -p "$w/open"
head -c $((mib << 20)) /dev/urandom > "$w/src.bin"
cat > "$w/rcpd.conf" <<TOML
[daemon]
listen = ["127.0.0.1"]
port = 18480
tcp_port = 18481
[modules.open]
path = "$w/open"
read_only = false
TOML
"$RCPD" --config "$w/rcpd.conf" --transport tcp > "$w/rcpd.log" 2>&1 &
dpid=$!
for _ in $(seq 100); do grep -q "rcpd: ready" "$w/rcpd.log" && break; sleep 0.05; done
tck=$(getconf CLK_TCK)
dcpu() { awk -v t="$tck" '{print ($14 + $15) / t}' "/proc/$dpid/stat"; }
run() {  # [--encrypt] -> "client_cpu daemon_cpu" of one push
  rm -f "$w/open/src.bin"
  local d0 d1 c
  d0=$(dcpu)
  c=$( { /usr/bin/time -f '%U %S' "$RCP" --transport tcp -P 18480 --tcp-port 18481 "$@" "$w/src.bin" \
          127.0.0.1:open/src.bin 2>&1 >/dev/null; } | tail -n 1 | awk '{print $1 + $2}')
  d1=$(dcpu)
  cmp -s "$w/src.bin" "$w/open/src.bin" || { echo "tls_cost: copy differs" >&2; exit 1; }
  echo "$c $(echo "$d1 - $d0" | bc -l)"
}
: > "$w/plain.t"; : > "$w/tls.t"
for _ in $(seq "$repeats"); do  # interleaved, so other load hits both alike
  run >> "$w/plain.t"
  run --encrypt >> "$w/tls.t"
done
per_gib() { awk -v m="$mib" '{c += $1; d += $2; n++} END {printf "%.2f | %.2f | %.2f", c/n*1024/m, d/n*1024/m, (c+d)/n*1024/m}' "$1"; }
printf '| %d MiB push, TCP loopback, mean of %d | rcp CPU-s/GiB | rcpd CPU-s/GiB | total CPU-s/GiB |\n|---|---|---|---|\n' "$mib" "$repeats"
printf '| plain | %s |\n' "$(per_gib "$w/plain.t")"
head -c 1000 /dev/urandom > "$w/small.bin"
how=$("$RCP" -v --encrypt --transport tcp -P 18480 --tcp-port 18481 "$w/small.bin" 127.0.0.1:open/small.bin 2>&1 |
      grep -o 'encrypted: .*' | head -n 1 || true)
printf '| --encrypt (%s) | %s |\n' "${how#encrypted: }" "$(per_gib "$w/tls.t")"
printf '\nruns (rcp rcpd CPU-s): plain %s; --encrypt %s\n' "$(tr '\n' ';' < "$w/plain.t")" "$(tr '\n' ';' < "$w/tls.t")"
printf '(%s, %s cores, load %s, %s)\n' "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" "$(nproc)" \
  "$(cut -d' ' -f1 /proc/loadavg)" "$(git -C "$(dirname "$0")" rev-parse --short HEAD)"
