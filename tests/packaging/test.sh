#!/bin/bash
# The distribution packages as a user gets them, on a Debian 12 machine, as root:
#  1. builds dist/*.deb and dist/*.rpm from a clean checkout and lints them (packaging/build.sh),
#  2. scores the systemd unit (systemd-analyze security --offline, exposure <= 4.0),
#  3. installs the .debs with apt-get (dependencies from the archive): rcp --version, man -w,
#     the conffile, the rcpd user,
#  4. the /usr/bin/rcp alternative shared with rsh-client, in both install orders, removing
#     either package and checking the other's rcp and rcp(1) still work,
#  5. starts the installed /usr/sbin/rcpd as the rcpd user, copies a file both ways through it
#     with the installed rcp,
#  6. purges everything and checks that nothing is left but the rcpd system user (which Debian
#     policy lets a package leave behind).
# usage: tests/packaging/test.sh [--no-build]     (--no-build: test dist/ as it is)
# Installs and removes packages on this machine (rcp, rcpd, rsh-client); rsh-client is put back
# afterwards if it was installed before.
set -euo pipefail
cd "$(dirname "$0")/../.."
top=$PWD
build=1
[ "${1:-}" = --no-build ] && build=0
[ "$(id -u)" = 0 ] || { echo "tests/packaging/test.sh: must run as root" >&2; exit 2; }

export DEBIAN_FRONTEND=noninteractive
apt=(apt-get -y -q -o DPkg::Lock::Timeout=600)
t0=$(date +%s)
step() { echo; echo "--- $* ($(( $(date +%s) - t0 )) s)"; }
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
work=$(mktemp -d /tmp/rcp-pkgtest.XXXXXX)
rsh_before=$(dpkg-query -W -f='${db:Status-Status}' rsh-client 2>/dev/null || true)
cleanup() {
  [ -n "${rcpd_pid:-}" ] && kill "$rcpd_pid" 2>/dev/null || true
  rm -rf "$work"
  if [ "$rsh_before" = installed ] && [ "$(dpkg-query -W -f='${db:Status-Status}' rsh-client 2>/dev/null)" != installed ]; then
    "${apt[@]}" install rsh-client > /dev/null || true
  fi
}
trap cleanup EXIT
installed() { [ "$(dpkg-query -W -f='${db:Status-Status}' "$1" 2>/dev/null)" = installed ]; }
# What the packages could leave behind, by name, outside the checkout and /tmp.
leftovers() {
  find /etc /usr /lib /var/lib /var/cache/man /srv -xdev \
       \( -name '*rcpd*' -o -name 'rcp.rdma*' -o -path /etc/alternatives/rcp -o -path /var/lib/dpkg/alternatives/rcp \
          -o -name 'rcp_*' -o -name 'rcp.list' -o -name 'rcp.md5sums' -o -name 'rcp.conffiles' \
          -o -name 'rcp.p*' -o -name 'rcp.shlibs' -o -name 'rcp.triggers' \) 2>/dev/null |
    grep -v -e "^$top" -e '^/var/cache/apt/' -e '^/var/lib/apt/lists/' | sort || true
}

step "build and lint (packaging/build.sh)"
if [ $build = 1 ]; then
  # The RPM without its unit tests: scripts/test.sh ran them on this tree (twice) before, and
  # the .deb build runs them again; this saves compiling the tests a third time (~2 min).
  bash packaging/build.sh --rpm-nocheck
else
  echo "--no-build: using dist/ as it is"
fi
deb_rcp=$(ls dist/rcp_*_*.deb) deb_rcpd=$(ls dist/rcpd_*_*.deb)
version=$(dpkg-deb -f "$deb_rcp" Version)
ls dist/*.rpm > /dev/null || fail "no RPM in dist/"

step "systemd unit: hardening score"
score=$(systemd-analyze security --offline=yes packaging/rcpd.service 2>/dev/null |
        sed -n 's/.*Overall exposure level for rcpd.service: \([0-9.]*\).*/\1/p')
echo "systemd-analyze security --offline: exposure $score"
awk -v s="$score" 'BEGIN { exit !(s != "" && s <= 4.0) }' || fail "exposure $score > 4.0"
ok "exposure $score <= 4.0"

step "clean slate: no rcp, rcpd, rsh-client"
"${apt[@]}" purge rcp rcpd rsh-client > /dev/null 2>&1 || true
before=$(leftovers)
[ ! -e /usr/bin/rcp ] || fail "/usr/bin/rcp exists before any install"

# The rcp alternative: who owns /usr/bin/rcp and rcp(1) right now.
expect_ours() {
  [ "$(readlink -f /usr/bin/rcp)" = /usr/bin/rcp.rdma ] || fail "/usr/bin/rcp -> $(readlink -f /usr/bin/rcp), want rcp.rdma ($1)"
  rcp --version | grep -qx "rcp $version" || fail "rcp --version: $(rcp --version 2>&1) ($1)"
  [ "$(readlink -f "$(man -w rcp)")" = /usr/share/man/man1/rcp.rdma.1.gz ] || fail "man -w rcp: $(man -w rcp) ($1)"
  ok "rcp is ours, rcp --version = rcp $version, man -w rcp -> rcp.rdma.1.gz ($1)"
}
expect_netkit() {
  [ "$(readlink -f /usr/bin/rcp)" = /usr/bin/netkit-rcp ] || fail "/usr/bin/rcp -> $(readlink -f /usr/bin/rcp), want netkit-rcp ($1)"
  [ -x /usr/bin/rcp ] || fail "/usr/bin/rcp not executable ($1)"
  [ "$(readlink -f "$(man -w rcp)")" = /usr/share/man/man1/netkit-rcp.1.gz ] || fail "man -w rcp: $(man -w rcp) ($1)"
  ok "rcp is rsh-client's netkit-rcp, man -w rcp -> netkit-rcp.1.gz ($1)"
}

step "install the .debs with apt-get (dependencies from the archive)"
"${apt[@]}" install "./$deb_rcp" "./$deb_rcpd" > "$work/apt.log" 2>&1 || { cat "$work/apt.log"; fail "apt-get install"; }
installed rcp && installed rcpd || fail "rcp/rcpd not installed"
expect_ours "rcp and rcpd installed"
/usr/sbin/rcpd --version | grep -qx "rcpd $version" || fail "rcpd --version"
[ "$(readlink -f "$(man -w rcpd)")" = /usr/share/man/man8/rcpd.8.gz ] || fail "man -w rcpd: $(man -w rcpd)"
if [ -e "$top/man/rcpd.conf.5" ]; then
  [ "$(man -w 5 rcpd.conf)" = /usr/share/man/man5/rcpd.conf.5.gz ] || fail "man -w 5 rcpd.conf"
fi
dpkg-query -W -f='${Conffiles}\n' rcpd | grep -q '^ /etc/rcpd.conf ' || fail "/etc/rcpd.conf is not a conffile"
getent passwd rcpd > /dev/null || fail "no rcpd user"
[ -e /lib/systemd/system/rcpd.service ] || fail "no rcpd.service"
ok "rcpd --version, man -w rcpd, conffile /etc/rcpd.conf, user rcpd, rcpd.service"
for f in /usr/share/bash-completion/completions/rcp /usr/share/zsh/vendor-completions/_rcp \
         /usr/bin/rcp-sync /lib/systemd/system/rcp-sync@.service /lib/systemd/system/rcp-sync@.timer \
         /lib/systemd/system-generators/rcp-sync-generator /usr/share/doc/rcp/examples/nightly.toml \
         /usr/bin/rcp-merge-reports /usr/share/doc/rcp/examples/slurm-shards.sbatch \
         /usr/share/doc/rcp/examples/k8s-indexed-job.yaml /usr/share/doc/rcp/examples/parallel-shards.sh; do
  [ -e "$f" ] || fail "$f not installed"
done
[ -d /etc/rcp/jobs ] || fail "no /etc/rcp/jobs"
[ "$(man -w rcp-sync)" = /usr/share/man/man8/rcp-sync.8.gz ] || fail "man -w rcp-sync: $(man -w rcp-sync)"
rcp-sync -n /usr/share/doc/rcp/examples/nightly.toml | grep -q '^/usr/bin/rcp.rdma .* -- /srv/data/ backup@backup-host:replicas/data/$' \
  || fail "rcp-sync -n on the example job: $(rcp-sync -n /usr/share/doc/rcp/examples/nightly.toml 2>&1)"
[ "$(man -w rcp-merge-reports)" = /usr/share/man/man1/rcp-merge-reports.1.gz ] || fail "man -w rcp-merge-reports"
ok "completion (bash, zsh), rcp-sync with its units, generator, man page, example job, rcp-merge-reports, shard examples"

step "alternatives, order 1: rcp first, then rsh-client"
"${apt[@]}" install rsh-client > /dev/null
expect_ours "rcp, then rsh-client installed"
"${apt[@]}" remove rsh-client > /dev/null
expect_ours "rsh-client removed"
"${apt[@]}" install rsh-client > /dev/null
"${apt[@]}" remove rcp > /dev/null
expect_netkit "rcp removed, rsh-client stays"

step "alternatives, order 2: rsh-client first, then rcp"
"${apt[@]}" install "./$deb_rcp" > /dev/null
expect_ours "rsh-client, then rcp installed"
"${apt[@]}" remove rsh-client > /dev/null
expect_ours "rsh-client removed, rcp stays"
"${apt[@]}" install rsh-client > /dev/null
expect_ours "rsh-client reinstalled over rcp"
"${apt[@]}" remove rsh-client > /dev/null

step "the packaged /etc/rcpd.conf serves nothing, and says so"
port0=$(( 20000 + RANDOM % 20000 ))
(ulimit -l unlimited 2>/dev/null || true; exec timeout 5 runuser -u rcpd -- /usr/sbin/rcpd --config /etc/rcpd.conf \
   --listen 127.0.0.1 --tcp-port "$port0" --transport tcp) > "$work/empty.log" 2>&1 &
empty_pid=$!
for _ in $(seq 50); do grep -q ready "$work/empty.log" && break; sleep 0.1; done
grep -q "configures no module: serving nothing" "$work/empty.log" || { cat "$work/empty.log"; fail "the packaged config: no 'serving nothing' line"; }
kill "$empty_pid" 2>/dev/null; wait "$empty_pid" 2>/dev/null || true
ok "the packaged config starts rcpd, which logs that it serves nothing"

step "the installed rcpd serves a file to the installed rcp"
mkdir -p "$work/export" "$work/back"
chown rcpd: "$work/export"
chmod 755 "$work"
head -c $((8 << 20)) /dev/urandom > "$work/sample.bin"
# The installed config plus one read-write test module.
cp /etc/rcpd.conf "$work/rcpd.conf"
printf '\n[modules.t]\npath = "%s"\nread_only = false\n' "$work/export" >> "$work/rcpd.conf"
module_args=(--config "$work/rcpd.conf")
port=$(( 20000 + RANDOM % 20000 ))
# As the unit runs it: user rcpd, LimitMEMLOCK=infinity (io_uring fixed buffers are locked
# memory). Where even root may not raise the limit (a container without CAP_SYS_RESOURCE), a
# small pool (256 KiB x 8) fits the usual 8 MiB default.
(ulimit -l unlimited 2>/dev/null || echo "(cannot raise RLIMIT_MEMLOCK here: $(ulimit -l) KiB)"
 exec runuser -u rcpd -- /usr/sbin/rcpd --listen 127.0.0.1 -P "$port" --tcp-port $((port + 1)) \
     --transport tcp --chunk-size 256 --window 8 "${module_args[@]}") > "$work/rcpd.log" 2>&1 &
rcpd_pid=$!
for _ in $(seq 100); do grep -q ready "$work/rcpd.log" && break; sleep 0.1; done
grep -q ready "$work/rcpd.log" || { cat "$work/rcpd.log"; fail "rcpd did not start"; }
rcp -P "$port" --tcp-port $((port + 1)) "$work/sample.bin" 127.0.0.1:t/sample.bin || { cat "$work/rcpd.log"; fail "push"; }
rcp -P "$port" --tcp-port $((port + 1)) 127.0.0.1:t/sample.bin "$work/back/" || { cat "$work/rcpd.log"; fail "pull"; }
cmp "$work/sample.bin" "$work/export/sample.bin" || fail "pushed file differs"
cmp "$work/sample.bin" "$work/back/sample.bin" || fail "pulled file differs"
[ "$(stat -c %U "$work/export/sample.bin")" = rcpd ] || fail "pushed file not written by the rcpd user"
kill "$rcpd_pid"; wait "$rcpd_pid" 2>/dev/null || true; rcpd_pid=
ok "8 MiB pushed and pulled through the installed rcpd (running as rcpd), byte for byte"

step "purge: nothing left but the rcpd user"
"${apt[@]}" purge rcp rcpd > /dev/null
installed rcp || installed rcpd && fail "still installed after purge"
dpkg-query -W rcp rcpd > /dev/null 2>&1 && fail "dpkg still knows rcp/rcpd after purge"
[ ! -e /usr/bin/rcp ] && [ ! -L /usr/bin/rcp ] || fail "/usr/bin/rcp left after purge"
after=$(leftovers)
if [ "$after" != "$before" ]; then
  echo "left behind:"; comm -13 <(echo "$before") <(echo "$after")
  fail "files left after purge"
fi
getent passwd rcpd > /dev/null && echo "(the rcpd system user stays, as Debian policy allows)"
ok "purged: no files, no alternative, no unit links left"

step "packaging test: ALL PASSED"
