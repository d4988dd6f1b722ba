#!/bin/bash
# What authentication costs on the data path: a push of one random file over TCP on
# 127.0.0.1 (/dev/shm -> /dev/shm) to a module without auth_users (xxh128 chunk digests, no MACs)
# and to one with auth_users (HMAC-SHA256 chunk MACs under the session key, and a MAC on every
# control message). Prints one markdown table: median seconds and MB/s over REPEATS runs.
#   bash bench/auth_cost.sh [BUILD_DIR] [MIB] [REPEATS]      (defaults: build 256 3)
# Ports 18478 (rdma_cm, unused) and 18479 (TCP), away from bench/run's 18471-18477.
set -eu
build=${1:-build} mib=${2:-256} repeats=${3:-3}
RCP=$(cd "$build/rcp" && pwd)/rcp RCPD=$(cd "$build/rcpd" && pwd)/rcpd
w=$(mktemp -d /dev/shm/rcp-authcost.XXXXXX)
dpid=
trap '[ -n "$dpid" ] && kill -TERM $dpid 2>/dev/null; wait 2>/dev/null; rm -rf "$w"' EXIT
mkdir -p "$w/open" "$w/auth"
head -c $((mib << 20)) /dev/urandom > "$w/src.bin"
secret=$(head -c 24 /dev/urandom | base64 | tr -d '/+=')
printf 'bench:%s\n' "$secret" > "$w/secrets"; chmod 600 "$w/secrets"
cat > "$w/rcpd.conf" <<TOML
[daemon]
listen = ["127.0.0.1"]
port = 18478
tcp_port = 18479
[modules.open]
path = "$w/open"
read_only = false
[modules.auth]
path = "$w/auth"
read_only = false
auth_users = ["bench"]
secrets_file = "$w/secrets"
TOML
"$RCPD" --config "$w/rcpd.conf" --transport tcp > "$w/rcpd.log" 2>&1 &
dpid=$!
for _ in $(seq 100); do grep -q "rcpd: ready" "$w/rcpd.log" && break; sleep 0.05; done
run() {  # MODULE USERPREFIX -> seconds of one push
  rm -f "$w/$1/src.bin"
  local t0 t1
  t0=$(date +%s.%N)
  RCP_PASSWORD=${3:-} "$RCP" --transport tcp -P 18478 --tcp-port 18479 "$w/src.bin" "$2127.0.0.1:$1/src.bin"
  t1=$(date +%s.%N)
  cmp -s "$w/src.bin" "$w/$1/src.bin" || { echo "auth_cost: $1 copy differs" >&2; exit 1; }
  echo "$t1 - $t0" | bc -l
}
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# Interleaved, so load from other processes on a shared machine hits both alike.
: > "$w/open.t"; : > "$w/auth.t"
for _ in $(seq "$repeats"); do
  run open "" >> "$w/open.t"
  run auth "bench@" "$secret" >> "$w/auth.t"
done
open_t=$(median < "$w/open.t") auth_t=$(median < "$w/auth.t")
mbs() { echo "$mib * 1048576 / $1 / 1000000" | bc -l; }
printf '| %d MiB push, TCP loopback, median of %d | seconds | MB/s |\n|---|---|---|\n' "$mib" "$repeats"
printf '| no auth (xxh128 chunk digests) | %.3f | %.0f |\n' "$open_t" "$(mbs "$open_t")"
printf '| auth_users (HMAC-SHA256 chunk MACs + control MACs) | %.3f | %.0f |\n' "$auth_t" "$(mbs "$auth_t")"
printf '\nruns (s): no auth %s; auth %s\n' "$(tr '\n' ' ' < "$w/open.t")" "$(tr '\n' ' ' < "$w/auth.t")"
printf 'cost: %+.0f%% time (%s, %s cores, load %s, %s)\n' "$(echo "($auth_t / $open_t - 1) * 100" | bc -l)" \
  "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')" "$(nproc)" "$(cut -d' ' -f1 /proc/loadavg)" "$(git -C "$(dirname "$0")" rev-parse --short HEAD)"
