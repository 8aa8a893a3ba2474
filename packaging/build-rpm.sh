#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Build the .rpm from this tree with rpmbuild and packaging/rpm/hpcinit.spec.
#
#   packaging/build-rpm.sh [OUTDIR]      (default OUTDIR: build/packages)
#
# The tracked files of the tree (git ls-files; every file when the tree is
# not a git checkout) become Source0, hpcinit-VERSION.tar.gz, in a scratch
# _topdir.  On Debian the BuildRequires (RHEL package names) cannot be
# satisfied by rpm's database, so rpmbuild runs with --nodeps and the Debian
# -dev packages provide the libraries; debuginfo extraction is off there.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)
fail() { echo "build-rpm: FAIL: $*" >&2; exit 1; }
OUT=${1:-$SRC/build/packages}
command -v rpmbuild > /dev/null || fail "rpmbuild not found (Debian package rpm)"

VERSION=$(sed -n 's/^AC_INIT(\[hpcinit\], *\[\([^]]*\)\].*/\1/p' "$SRC/configure.ac")
SPECVERSION=$(sed -n 's/^Version: *//p' "$SRC/packaging/rpm/hpcinit.spec")
[ -n "$VERSION" ] || fail "cannot read the version from configure.ac"
[ "$SPECVERSION" = "$VERSION" ] || fail "hpcinit.spec has Version $SPECVERSION, configure.ac has $VERSION"

W=$(mktemp -d /tmp/hpcinit-rpm.XXXXXX)
trap 'rm -rf "$W"' EXIT
mkdir -p "$W/SOURCES" "$W/hpcinit-$VERSION"
if git -C "$SRC" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
	(cd "$SRC" && git ls-files -z | xargs -0 tar -cf - --no-recursion) | tar -C "$W/hpcinit-$VERSION" -xf -
else
	(cd "$SRC" && tar -cf - --exclude='./build*' .) | tar -C "$W/hpcinit-$VERSION" -xf -
fi
tar -C "$W" -czf "$W/SOURCES/hpcinit-$VERSION.tar.gz" "hpcinit-$VERSION"

extra=()
if [ -e /etc/debian_version ]; then
	extra=(--nodeps --define 'debug_package %{nil}')
fi
mkdir -p "$OUT"
echo "=== rpmbuild -bb hpcinit.spec (log: $OUT/rpmbuild.log)"
if ! rpmbuild -bb "${extra[@]}" --define "_topdir $W" \
	--define "_smp_mflags -j$(nproc)" \
	"$SRC/packaging/rpm/hpcinit.spec" > "$OUT/rpmbuild.log" 2>&1; then
	tail -60 "$OUT/rpmbuild.log"
	fail "rpmbuild failed"
fi
RPM=$(find "$W/RPMS" -name "hpcinit-$VERSION-*.rpm" | head -1)
[ -n "$RPM" ] || fail "rpmbuild made no hpcinit rpm"

# What an admin would check first: the binary, the unit, the man pages.
rpm -qlp "$RPM" > "$W/files"
for f in /usr/sbin/hpcinit /usr/lib/systemd/system/hpcinit.service \
	/usr/share/man/man8/hpcinit.8 /usr/share/man/man5/hpcinit.yaml.5; do
	grep -q "^$f" "$W/files" || { cat "$W/files"; fail "$f is not in the rpm"; }
done
# Install it with rpm into a scratch root (its own rpm database; the
# libraries come from this machine) and run the packaged binary.
rpm --root "$W/root" --initdb
# (Debian's rpm warns "use Alien instead" on every install: dropped.)
if ! rpm --root "$W/root" --install --nodeps --noscripts "$RPM" > "$W/install.log" 2>&1; then
	cat "$W/install.log"
	fail "rpm --install into a scratch root failed"
fi
grep -v '^rpm: ' "$W/install.log" || true
rpm --root "$W/root" --verify --nodeps hpcinit || fail "rpm --verify reports changed files"
v=$("$W/root/usr/sbin/hpcinit" --version)
[ "$v" = "hpcinit $VERSION" ] || fail "the packaged hpcinit --version printed '$v'"
rpm --root "$W/root" --erase --nodeps --noscripts hpcinit 2>&1 | grep -v '^rpm: ' || true
rpm --root "$W/root" -q hpcinit > /dev/null 2>&1 && fail "rpm --erase left hpcinit installed"
[ ! -e "$W/root/usr/sbin/hpcinit" ] || fail "rpm --erase left /usr/sbin/hpcinit"

cp "$RPM" "$OUT/"
echo "=== built"
rpm -qip "$RPM" | sed -n 's/^\(Name\|Version\|Release\|Architecture\|Size\) *:/  &/p'
sed 's/^/  /' "$W/files"
echo "build-rpm: OK $OUT/$(basename "$RPM")"
