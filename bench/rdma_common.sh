# Sourced by bench/rdma_pair.sh and bench/rdma_qps.sh: the setup both share. Expects $bin
# (build dir), $mib (file size) and $1 = rdma_cm port (the TCP port is the next one).
# Sets srv, dev_srv, dev_cli (the link: RXE_ADDR_B / RXE_DEV_B / RXE_DEV_A inside
# tests/vm/rxe-run, else this host's first address and device), w (work dir with export/f.bin,
# src.bin and back/), dp (the rcpd serving export/ as module b), and mbps FILE (the last
# "N MB/s" in a log).
rdma_bench_setup() {
  local port=$1
  srv=${RXE_ADDR_B:-$(ip -4 -o addr show | awk '$2 != "lo" {sub("/.*","",$4); print $4; exit}')}
  dev_srv=${RXE_DEV_B:-$(ls /sys/class/infiniband | head -n1)}
  dev_cli=${RXE_DEV_A:-$dev_srv}
  w=$(mktemp -d /tmp/rcp-rdma-bench.XXXXXX)
  mkdir -p "$w/export" "$w/back"
  head -c $((mib << 20)) /dev/urandom > "$w/export/f.bin"
  cp "$w/export/f.bin" "$w/src.bin"
  "$bin/rcpd/rcpd" --listen "$srv:$port" --tcp-port $((port + 1)) --transport rdma --export b="$w/export" \
      2> "$w/rcpd.log" &
  dp=$!
  for _ in $(seq 200); do grep -q ready "$w/rcpd.log" && break; sleep 0.05; done
}
mbps() { grep -o '[0-9.]* MB/s' "$1" | tail -n1 | cut -d' ' -f1; }
