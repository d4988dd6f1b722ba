#!/bin/bash
# rcp sharded by GNU parallel: N runs of rcp --shard I/N, on this host or over ssh on several,
# together copy every file of a list exactly once; their --json reports are merged into one
# on standard output (rcp-merge-reports(1)); the exit status is rcp-merge-reports's.
#
# usage: parallel-shards.sh N SRC LIST DEST [SSHLOGIN...] [-- RCP_OPTION...]
#   N         number of shards (and of rcp processes)
#   SRC       the directory the listed paths are relative to (the same path on every host)
#   LIST      the file list, made once:  (cd SRC && find . -type f -print0) > LIST
#             (NUL-separated lists are detected; the same path on every host)
#   DEST      HOST:MODULE/PATH
#   SSHLOGIN  hosts to run the shards on (parallel --sshlogin; "user@host", ":" for this one);
#             none: all N on this host. rcp must be on each host's PATH (or set RCP).
# examples:
#   parallel-shards.sh 4 /data/project /data/project.list backup:replicas/project
#   parallel-shards.sh 8 /shared/p /shared/p.list backup:replicas/p node1 node2 node3 node4 -- -v
# Rerunning copies only what is missing or changed (the quick check skips the rest).
set -euo pipefail
[ $# -ge 4 ] || { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0" >&2; exit 2; }
n=$1 src=$2 list=$3 dest=$4
shift 4
logins=()
while [ $# -gt 0 ] && [ "$1" != -- ]; do logins+=(--sshlogin "$1"); shift; done
[ "${1:-}" = -- ] && shift
opts=("$@")
command -v parallel > /dev/null || { echo "parallel-shards.sh: GNU parallel is not installed" >&2; exit 2; }
rcp=${RCP:-rcp}
merge=${RCP_MERGE_REPORTS:-rcp-merge-reports}
from0=()
[ "$(tr -d -c '\000' < "$list" | head -c 1 | wc -c)" = 1 ] && from0=(--from0)
# Every shard at once: all N here, or N/hosts (rounded up) on each ssh login. Each job's
# stdout is its one-line report (parallel prints a job's output whole), which
# rcp-merge-reports reads.
hosts=$(( ${#logins[@]} / 2 ))
jobs=$n
[ "$hosts" -gt 0 ] && jobs=$(( (n + hosts - 1) / hosts ))
# (-q: parallel quotes each word, here and over ssh, so paths with spaces pass; {} is the index.)
seq 0 $((n - 1)) |
  parallel --will-cite -q --jobs "$jobs" "${logins[@]}" --halt never \
    "$rcp" --shard "{}/$n" --files-from "$list" "${from0[@]}" --json "${opts[@]}" "$src" "$dest" |
  "$merge"
