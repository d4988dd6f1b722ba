#!/bin/bash
# install-deps.sh -- install everything needed to build and test rcp on Debian 12 (bookworm).
#
# Usage (as root):  scripts/install-deps.sh [--no-vm] [--no-packaging] [--dry-run]
#   --no-vm     skip the packages only needed by the soft-RoCE test VM (tests/vm/rxe-run):
#               qemu-system-x86 linux-image-amd64 busybox-static cpio
#   --no-packaging  skip the tools that build and lint the .deb and .rpm (packaging/build.sh,
#               tests/packaging/test.sh): debhelper dpkg-dev lintian rpm rpmlint git man-db
#   --dry-run   only print which packages are missing
#
# Idempotent: packages are checked with dpkg-query first; `apt-get update` and
# `apt-get install` only run when something is missing.
#
# linux-image-amd64 is installed only so that tests/vm/rxe-run can boot it under QEMU; it
# is never booted on the host.  The install is run with INITRD=No, which makes
# /etc/kernel/postinst.d/initramfs-tools skip building an initramfs for it (slow, and
# useless to us: rxe-run builds its own tiny one).  Later `update-initramfs -u` triggers
# only refresh initramfs images that already exist, so nothing is generated then either.
set -euo pipefail

prog=install-deps.sh

build_pkgs=(
    build-essential cmake pkg-config ninja-build
    libibverbs-dev librdmacm-dev liburing-dev libssl-dev libcli11-dev doctest-dev libxxhash-dev libfmt-dev
    libtomlplusplus-dev libsystemd-dev
    mandoc       # `mandoc -Tlint man/*` checks the man pages
)
# tests/fuzz (libFuzzer): clang and its compiler-rt (fuzzer, ASan and UBSan runtimes).
fuzz_pkgs=(clang libclang-rt-14-dev)
runtime_pkgs=(
    ibverbs-providers rdma-core ibverbs-utils rdmacm-utils perftest iproute2 kmod
    iperf3 rsync socat netcat-openbsd   # bench/run anchors (socat, tar|nc)
    zsh
    bsdutils     # script(1): the cli suite runs rcp under a pseudo-terminal
    jq           # rcp-merge-reports (packaging/) and the shard suite
    attr acl     # getfattr/setfattr, getfacl/setfacl: the xattr suite (-X/-A against rsync)
    parallel     # the shard suite runs packaging/examples/parallel-shards.sh
    python3-yaml # the Kubernetes example's manifest check (tests/integration/k8s_manifest_check.py)
    python3      # the block suite holds a device with O_EXCL (and the manifest check above)
    slurm-wlm munge  # tests/integration/shard_slurm.sh: a single-node Slurm job array on localhost
    strace       # the copy suite checks the source takes O_NONBLOCK off before reading through io_uring
)
vm_pkgs=(qemu-system-x86 linux-image-amd64 busybox-static cpio)
# systemd: systemd-analyze (unit scoring) and systemd-sysusers (the rcpd user) in the package test.
packaging_pkgs=(debhelper dpkg-dev lintian rpm rpmlint git man-db systemd)

with_vm=1
with_packaging=1
dry_run=0
for arg in "$@"; do
    case "$arg" in
        --no-vm) with_vm=0 ;;
        --no-packaging) with_packaging=0 ;;
        --dry-run|-n) dry_run=1 ;;
        -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        *) echo "$prog: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
    esac
done

pkgs=("${build_pkgs[@]}" "${runtime_pkgs[@]}" "${fuzz_pkgs[@]}")
[ $with_vm = 1 ] && pkgs+=("${vm_pkgs[@]}")
[ $with_packaging = 1 ] && pkgs+=("${packaging_pkgs[@]}")

if [ -r /etc/os-release ]; then
    . /etc/os-release
    if [ "${ID:-}" != debian ] || [ "${VERSION_ID:-}" != 12 ]; then
        echo "$prog: warning: written for Debian 12, this is ${PRETTY_NAME:-unknown}" >&2
    fi
fi

missing=()
for p in "${pkgs[@]}"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [ "$status" = installed ] || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "$prog: all ${#pkgs[@]} packages already installed$([ $with_vm = 0 ] && echo ' (VM packages skipped)')"
    exit 0
fi
echo "$prog: missing: ${missing[*]}"
[ $dry_run = 1 ] && exit 0

if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null; then
        echo "$prog: not root, re-running with sudo"
        exec sudo -- "$0" "$@"
    fi
    echo "$prog: error: must be run as root" >&2
    exit 1
fi

export DEBIAN_FRONTEND=noninteractive
echo "$prog: apt-get update"
apt-get update -q
echo "$prog: apt-get install ${missing[*]}"
INITRD=No apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "$prog: done"
