#!/bin/bash
# Configures and builds rcp. usage: scripts/build.sh [--asan] [BUILD_DIR]
# --asan builds with AddressSanitizer + UndefinedBehaviorSanitizer (default dir build-asan).
set -euo pipefail
cd "$(dirname "$0")/.."
san=OFF dir=build
if [ "${1:-}" = --asan ]; then san=ON dir=build-asan; shift; fi
dir=${1:-$dir}
jobs=$(nproc)
cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRCP_SANITIZE=$san > /dev/null
ninja -C "$dir" -j "$jobs"
