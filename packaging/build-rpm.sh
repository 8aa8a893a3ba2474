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
for f in /usr/sbin/hpcinit /usr/lib/systemd/system/hpcinit.service /usr/lib/tmpfiles.d/hpcinit.conf \
	/usr/share/man/man8/hpcinit.8 /usr/share/man/man5/hpcinit.yaml.5; do
	grep -q "^$f" "$W/files" || { cat "$W/files"; fail "$f is not in the rpm"; }
done
# Install it with the real rpm into scratch roots (their own rpm databases;
# the libraries come from this machine), scriptlets run: rpm runs them
# chrooted into the root with its /bin/sh (dash and its libraries, copied)
# and /dev/null.  Root "image" has no systemd (an image being built); root
# "node" has a named stand-in systemctl that records what it was asked.
# --nodeps: the roots hold no nfs-utils, openssh-clients or libc package.
# (Debian's rpm warns "use Alien instead" on every install: dropped.)
mkroot_sh() {
	local r=$1 lib
	mkdir -p "$r/bin" "$r/dev" "$r/var/log"
	cp /bin/dash "$r/bin/sh"
	for lib in $(ldd /bin/dash | grep -o '/[^ ]*'); do
		mkdir -p "$r$(dirname "$lib")"
		cp -L "$lib" "$r$lib"
	done
	mknod -m 666 "$r/dev/null" c 1 3 2> /dev/null || fail "cannot make $r/dev/null (mknod needs root)"
	rpm --root "$r" --initdb
}
rpm_quiet() { "$@" 2>&1 | grep -v '^rpm: ' || true; }
want_files() {   # ROOT: every file and unit where the spec puts it
	local r=$1 f
	while read -r f; do
		[ -e "$r$f" ] || [ -L "$r$f" ] || fail "$f (rpm -ql) is missing from the root $r"
	done < "$W/files"
	rpm --root "$r" --verify --nodeps hpcinit || fail "rpm --verify reports changed files in $r"
}
for r in image node; do
	mkroot_sh "$W/$r"
done
cat > "$W/node/usr-bin-systemctl" << 'EOF2'
#!/bin/sh
# A stand-in for systemctl (no systemd in this root): records its arguments.
echo "$*" >> /var/log/systemctl.args
EOF2
mkdir -p "$W/node/usr/bin"
install -m 0755 "$W/node/usr-bin-systemctl" "$W/node/usr/bin/systemctl"
rm "$W/node/usr-bin-systemctl"
UNITS="hpcinit.service hpcinit-leave.service hpcinit-refresh.timer hpcinit-check.timer"
for r in image node; do
	rpm_quiet rpm --root "$W/$r" --install --nodeps "$RPM" > "$W/install-$r.log"
	cat "$W/install-$r.log"
	! grep -qi 'scriptlet failed\|error' "$W/install-$r.log" || fail "rpm --install into the $r root: a scriptlet failed"
	rpm --root "$W/$r" -q hpcinit > /dev/null || fail "rpm --install into the $r root installed nothing"
	want_files "$W/$r"
done
[ ! -e "$W/image/var/log/systemctl.args" ] || fail "the image root has no systemctl, yet something recorded"
want="--no-reload preset $UNITS"
[ "$(cat "$W/node/var/log/systemctl.args")" = "$want" ] ||
	fail "%post asked systemctl '$(cat "$W/node/var/log/systemctl.args")', not '$want'"
echo "  %post in a root with systemctl: systemctl $want"
v=$("$W/image/usr/sbin/hpcinit" --version)
[ "$v" = "hpcinit $VERSION" ] || fail "the packaged hpcinit --version printed '$v'"
for r in image node; do
	rpm_quiet rpm --root "$W/$r" --erase --nodeps hpcinit > "$W/erase-$r.log"
	! grep -qi 'scriptlet failed\|error' "$W/erase-$r.log" || { cat "$W/erase-$r.log"; fail "rpm --erase in the $r root: a scriptlet failed"; }
	rpm --root "$W/$r" -q hpcinit > /dev/null 2>&1 && fail "rpm --erase left hpcinit installed in $r"
	[ ! -e "$W/$r/usr/sbin/hpcinit" ] || fail "rpm --erase left /usr/sbin/hpcinit in $r"
	[ ! -e "$W/$r/usr/lib/systemd/system/hpcinit.service" ] || fail "rpm --erase left hpcinit.service in $r"
done
printf '%s\n' "$want" "--no-reload disable --now $UNITS" "daemon-reload" > "$W/want.args"
cmp -s "$W/node/var/log/systemctl.args" "$W/want.args" ||
	{ diff -u "$W/want.args" "$W/node/var/log/systemctl.args"; fail "%preun/%postun asked systemctl something else"; }
echo "  %preun, %postun on erase: systemctl --no-reload disable --now $UNITS; systemctl daemon-reload"

cp "$RPM" "$OUT/"
echo "=== built"
rpm -qip "$RPM" | sed -n 's/^\(Name\|Version\|Release\|Architecture\|Size\) *:/  &/p'
sed 's/^/  /' "$W/files"
echo "build-rpm: OK $OUT/$(basename "$RPM")"
