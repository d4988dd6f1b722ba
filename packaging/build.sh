#!/bin/bash
# Builds the distribution packages from a clean checkout and lints them:
#   dist/rcp_VERSION_ARCH.deb, dist/rcpd_VERSION_ARCH.deb (+ their -dbgsym packages)
#   dist/rcp-VERSION-1.ARCH.rpm, dist/rcpd-VERSION-1.ARCH.rpm
# usage: packaging/build.sh [--deb-only|--rpm-only] [--no-lint] [--rpm-nocheck] [TREEISH]
# --rpm-nocheck: the RPM is built without its unit tests (rpmbuild --without check); CI uses it
# because it has just run them on the same tree, and the .deb build runs them again.
# TREEISH (default HEAD) is exported with `git archive`, so uncommitted changes are not
# packaged; the .deb is built from that tree with dpkg-buildpackage -us -uc -b, the .rpm with
# rpmbuild from the same tarball (on a non-RPM host such as Debian: --nodeps, and the cmake
# and systemd macros from packaging/rpm-macros.compat). Needs: dpkg-dev, debhelper, rpm,
# lintian, rpmlint and the build dependencies (scripts/install-deps.sh installs them).
# Lint gate: lintian 0 errors and 0 warnings, rpmlint 0 errors; informational tags are shown.
set -euo pipefail
prog=packaging/build.sh
cd "$(dirname "$0")/.."
top=$PWD

deb=1 rpm=1 lint=1 rpm_check=1 treeish=HEAD
for arg in "$@"; do
  case "$arg" in
    --deb-only) rpm=0 ;;
    --rpm-only) deb=0 ;;
    --no-lint) lint=0 ;;
    --rpm-nocheck) rpm_check=0 ;;
    -h|--help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
    -*) echo "$prog: unknown option $arg" >&2; exit 2 ;;
    *) treeish=$arg ;;
  esac
done

# One version everywhere: CMakeLists.txt, debian/changelog and the spec must agree.
version=$(git show "$treeish:CMakeLists.txt" | sed -n 's/^project(rcp VERSION \([0-9.]*\).*/\1/p')
deb_version=$(git show "$treeish:debian/changelog" | sed -n '1s/^rcp (\([^)]*\)).*/\1/p')
rpm_version=$(git show "$treeish:packaging/rcp.spec" | sed -n 's/^Version: *//p')
if [ "$version" != "$deb_version" ] || [ "$version" != "$rpm_version" ]; then
  echo "$prog: version mismatch: CMakeLists.txt $version, debian/changelog $deb_version, rcp.spec $rpm_version" >&2
  exit 1
fi
if [ "$treeish" = HEAD ] && [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "$prog: note: the work tree has uncommitted changes; packaging HEAD without them" >&2
fi

work=$(mktemp -d /tmp/rcp-pkg.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p dist
tarball=$work/rcp-$version.tar.gz
git archive --format=tar.gz --prefix="rcp-$version/" -o "$tarball" "$treeish"
echo "$prog: rcp $version from $(git rev-parse --short "$treeish^{commit}")"

status=0
if [ $deb = 1 ]; then
  echo "=== .deb (dpkg-buildpackage -us -uc -b)"
  mkdir "$work/deb"
  tar -C "$work/deb" -xzf "$tarball"
  (cd "$work/deb/rcp-$version" && dpkg-buildpackage -us -uc -b) > "$work/deb.log" 2>&1 || {
    tail -n 60 "$work/deb.log"; echo "$prog: dpkg-buildpackage failed" >&2; exit 1; }
  rm -f dist/*.deb
  cp "$work"/deb/*.deb dist/
  ls -l dist/*.deb
  if [ $lint = 1 ]; then
    echo "=== lintian"
    # --fail-on error,warning: the gate. Info tags are printed (-I) and explained in README.md.
    lintian -I --fail-on error,warning --suppress-tags-from-file /dev/null \
        "$work"/deb/rcp_"$version"_*.changes || { echo "$prog: lintian: errors or warnings" >&2; status=1; }
  fi
fi

if [ $rpm = 1 ]; then
  echo "=== .rpm (rpmbuild -bb)"
  mkdir -p "$work"/rpm/{BUILD,RPMS,SOURCES,SPECS,SRPMS}
  cp "$tarball" "$work/rpm/SOURCES/"
  tar -C "$work" -xzf "$tarball" "rcp-$version/packaging/rcp.spec" "rcp-$version/packaging/rpm-macros.compat" \
      "rcp-$version/packaging/rpmlint.toml" "rcp-$version/packaging/rcpd.sysusers"
  cp "$work/rcp-$version/packaging/rcpd.sysusers" "$work/rpm/SOURCES/"
  extra=()
  [ $rpm_check = 1 ] || extra+=(--without check)
  if [ -z "$(rpm --eval '%{?cmake}')" ] || ! rpm -q rpm >/dev/null 2>&1; then
    # Not an RPM distribution: no build dependencies in the rpm database, no cmake macros.
    extra+=(--nodeps --load "$work/rcp-$version/packaging/rpm-macros.compat")
  fi
  packager=$(git show "$treeish:debian/control" | sed -n 's/^Maintainer: *//p')
  rpmbuild --define "_topdir $work/rpm" --define "packager $packager" "${extra[@]}" -bb "$work/rcp-$version/packaging/rcp.spec" \
      > "$work/rpm.log" 2>&1 || { tail -n 60 "$work/rpm.log"; echo "$prog: rpmbuild failed" >&2; exit 1; }
  rm -f dist/*.rpm
  find "$work/rpm/RPMS" -name '*.rpm' -exec cp {} dist/ \;
  ls -l dist/*.rpm
  if [ $lint = 1 ]; then
    echo "=== rpmlint"
    # packaging/rpmlint.toml: the one filtered tag (no-signature) and why.
    rpmlint -c "$work/rcp-$version/packaging/rpmlint.toml" dist/*.rpm || { echo "$prog: rpmlint: errors" >&2; status=1; }
  fi
fi
exit $status
