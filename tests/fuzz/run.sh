#!/bin/bash
# Runs every libFuzzer harness of tests/fuzz for a bounded time and fails on any crash, leak,
# timeout or sanitizer report. Self-contained: configures and builds build-fuzz (clang,
# -DRCP_FUZZ=ON) first. The committed seed corpus is copied, never written to.
#
# usage: tests/fuzz/run.sh [SECONDS_PER_HARNESS] [HARNESS...]   (default 60, all harnesses)
# env:   RCP_FUZZ_DIR  build directory (default build-fuzz)
#        RCP_FUZZ_JOBS ninja jobs (default nproc)
# Prints one line per harness with its executions, and the total; exit 0 only if all ran clean.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}
shift || true
case "$secs" in ''|*[!0-9]*) echo "run.sh: SECONDS must be a number, got '$secs'" >&2; exit 2 ;; esac
all=(wire hello auth_messages config access frames)
harnesses=("$@")
[ ${#harnesses[@]} -eq 0 ] && harnesses=("${all[@]}")

dir=${RCP_FUZZ_DIR:-build-fuzz}
command -v clang++ >/dev/null || { echo "run.sh: clang++ not found (scripts/install-deps.sh installs it)" >&2; exit 1; }
# Quiet when it works; on a failure the build's own output says why (it once failed silently).
blog=$(mktemp); trap 'rm -f "$blog"' EXIT
if ! { cmake -S . -B "$dir" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DRCP_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
       ninja -C "$dir" -j "${RCP_FUZZ_JOBS:-$(nproc)}" fuzz_make_corpus $(printf 'fuzz_%s ' "${harnesses[@]}"); } > "$blog" 2>&1; then
  echo "run.sh: building the fuzz harnesses failed:" >&2; tail -n 40 "$blog" >&2; exit 1
fi

# The committed seeds must be what make_corpus.cc writes today: every seed's header carries the
# protocol version, and after a bump a stale seed is refused before it reaches a decoder.
fresh=$(mktemp -d)
"$dir/tests/fuzz/fuzz_make_corpus" "$fresh"
stale=$(cd "$fresh" && find . -type f | sort | while read -r f; do cmp -s "$f" "$OLDPWD/tests/fuzz/corpus/$f" || echo "${f#./}"; done)
rm -rf "$fresh"
if [ -n "$stale" ]; then
    echo "run.sh: seed corpus out of date ($(echo $stale)); regenerate: $dir/tests/fuzz/fuzz_make_corpus tests/fuzz/corpus" >&2
    exit 1
fi

declare -A max_len=([wire]=8400 [hello]=64 [auth_messages]=256 [config]=8192 [access]=2048 [frames]=16384)
work="$dir/fuzz-run"
rm -rf "$work"
total=0 failed=0
printf '%-15s %12s %10s %s\n' harness executions exec/s result
for h in "${harnesses[@]}"; do
    bin="$dir/tests/fuzz/fuzz_$h"
    [ -x "$bin" ] || { echo "run.sh: no harness $h" >&2; exit 2; }
    mkdir -p "$work/$h/corpus" "$work/$h/artifacts"
    cp tests/fuzz/corpus/"$h"/* "$work/$h/corpus/"
    dict=()
    [ -f "tests/fuzz/$h.dict" ] && dict=("-dict=tests/fuzz/$h.dict")
    rc=0
    "$bin" -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len="${max_len[$h]:-4096}" \
        -print_final_stats=1 -artifact_prefix="$work/$h/artifacts/" "${dict[@]}" \
        "$work/$h/corpus" >"$work/$h/log" 2>&1 || rc=$?
    execs=$(awk '/stat::number_of_executed_units/ {print $2}' "$work/$h/log" | tail -1)
    speed=$(awk '/stat::average_exec_per_sec/ {print $2}' "$work/$h/log" | tail -1)
    artifacts=$(find "$work/$h/artifacts" -type f | wc -l)
    result=ok
    if [ $rc -ne 0 ] || [ "$artifacts" -ne 0 ] || [ -z "$execs" ]; then
        result="FAILED (exit $rc, $artifacts artifacts; log: $work/$h/log)"
        failed=1
        grep -m5 -E 'ERROR|SUMMARY|runtime error' "$work/$h/log" >&2 || true
    fi
    total=$((total + ${execs:-0}))
    printf '%-15s %12s %10s %s\n' "$h" "${execs:-?}" "${speed:-?}" "$result"
done
printf '%-15s %12s\n' total "$total"
exit $failed
