#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Build the .deb from this tree, hold it to lintian, then install it, run
# it and remove it again in a throwaway overlay of / (tests/system/overlay.sh),
# so the machine running this is not changed.
#
#   packaging/build-deb.sh [OUTDIR]      (default OUTDIR: build/packages)
#
# Steps: copy the tracked files of the tree (git ls-files; every file when
# the tree is not a git checkout) to a scratch directory, place
# packaging/debian there as debian/, run "dpkg-buildpackage -us -uc -b",
# run lintian (any error fails), then in new mount, UTS, IPC, network and
# PID namespaces:
# dpkg -i, "hpcinit --version", check the installed files, dpkg --purge,
# and check that nothing but dpkg's own records is left behind.
# Needs root (namespaces, mounts) and the Build-Depends of debian/control.
set -euo pipefail

SRC=$(cd "$(dirname "$0")/.." && pwd)

if [ "${1:-}" = --inner ]; then
	# In the namespaces: $2 scratch mount point, $3 the .deb, $4 version.
	T=$2 DEB=$3 VERSION=$4
	. "$SRC/tests/system/overlay.sh"
	overlay_root "$T"
	R=$OVERLAY_ROOT U=$OVERLAY_UPPER
	export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8 DEBIAN_FRONTEND=noninteractive
	in_root() { chroot "$R" "$@"; }
	step() { echo "--- $*"; }
	fail() { echo "build-deb: FAIL: $*" >&2; exit 1; }

	# The man-db trigger would rebuild the whole manual index: not our test.
	echo 'man-db man-db/auto-update boolean false' | in_root debconf-set-selections
	rm -f "$R/var/lib/man-db/auto-update"
	# Forget earlier installs of hpcinit on this machine, if any.
	if in_root dpkg-query -W hpcinit >/dev/null 2>&1; then
		in_root dpkg --purge hpcinit >/dev/null
	fi
	cp "$DEB" "$R/tmp/"
	before=$T/before
	(cd "$U" && find . -not -type d | sort) > "$before"

	step "dpkg -i $(basename "$DEB")"
	in_root dpkg -i "/tmp/$(basename "$DEB")"
	step "hpcinit --version"
	v=$(in_root hpcinit --version)
	echo "$v"
	[ "$v" = "hpcinit $VERSION" ] || fail "hpcinit --version printed '$v', want 'hpcinit $VERSION'"
	in_root hpcinit --help > /dev/null || fail "hpcinit --help failed"
	for f in /usr/sbin/hpcinit /usr/libexec/hpcinit/hpcinit-ssh /lib/systemd/system/hpcinit.service \
		/usr/share/man/man8/hpcinit.8.gz /usr/share/man/man5/hpcinit.yaml.5.gz \
		/usr/share/hpcinit/systemd/slurmd-wait-hpcinit.conf \
		/usr/lib/tmpfiles.d/hpcinit.conf \
		/usr/share/doc/hpcinit/examples/full.yaml \
		/usr/share/doc/hpcinit/examples/cloud-init/vmss-compute.yaml \
		/usr/share/doc/hpcinit/copyright; do
		[ -e "$R$f" ] || fail "$f is not installed"
	done
	grep -qx 'ExecStart=/usr/sbin/hpcinit apply' "$R/lib/systemd/system/hpcinit.service" ||
		fail "hpcinit.service does not start /usr/sbin/hpcinit"
	# deb-systemd-helper enabled the unit for the next boot.
	[ -L "$R/etc/systemd/system/multi-user.target.wants/hpcinit.service" ] ||
		fail "hpcinit.service is not enabled after install"
	if [ -e "$R/lib/systemd/system/hpcinit-refresh.timer" ]; then
		[ -L "$R/etc/systemd/system/timers.target.wants/hpcinit-refresh.timer" ] ||
			fail "hpcinit-refresh.timer is not enabled after install"
	fi
	if [ -e "$R/lib/systemd/system/hpcinit-check.timer" ]; then
		[ -L "$R/etc/systemd/system/timers.target.wants/hpcinit-check.timer" ] ||
			fail "hpcinit-check.timer is not enabled after install"
	fi
	in_root man -w hpcinit > /dev/null || fail "man cannot find hpcinit(8)"
	echo "installed: $(in_root dpkg-query -W -f='${Package} ${Version} ${Status}' hpcinit)"

	step "dpkg --remove hpcinit"
	in_root dpkg --remove hpcinit
	[ ! -e "$R/usr/sbin/hpcinit" ] || fail "/usr/sbin/hpcinit is still there after remove"
	step "dpkg --purge hpcinit"
	in_root dpkg --purge hpcinit
	in_root dpkg-query -W hpcinit > /dev/null 2>&1 && fail "dpkg still knows hpcinit after purge"
	rm -f "$R/tmp/$(basename "$DEB")"

	# Removed cleanly: every file the install added is gone again, and no
	# file of the system was deleted (a deletion shows as a whiteout, a
	# character device, in the overlay's upper layer).  dpkg's and debconf's
	# own records may change.
	(cd "$U" && find . -not -type d | sort) > "$T/after"
	left=$(comm -13 "$before" "$T/after" |
		grep -Ev '^\./var/(lib/dpkg|log|cache/debconf|lib/systemd/deb-systemd-helper-(enabled|masked))/' || true)
	if [ -n "$left" ]; then
		(cd "$U" && echo "$left" | xargs ls -ld)
		fail "after purge the files above were left behind (c---------: a deleted system file)"
	fi
	echo "removed cleanly"
	exit 0
fi

fail() { echo "build-deb: FAIL: $*" >&2; exit 1; }
OUT=${1:-$SRC/build/packages}
for tool in dpkg-buildpackage dh lintian unshare chroot; do
	command -v "$tool" > /dev/null || fail "$tool not found (Debian: dpkg-dev debhelper lintian util-linux coreutils)"
done
[ "$(id -u)" = 0 ] || fail "run as root: the install test uses namespaces and mounts"

VERSION=$(sed -n 's/^AC_INIT(\[hpcinit\], *\[\([^]]*\)\].*/\1/p' "$SRC/configure.ac")
DEBVERSION=$(sed -n '1s/^hpcinit (\([^)]*\)).*/\1/p' "$SRC/packaging/debian/changelog")
[ -n "$VERSION" ] || fail "cannot read the version from configure.ac"
[ "$DEBVERSION" = "$VERSION" ] || [ "${DEBVERSION%-*}" = "$VERSION" ] ||
	fail "packaging/debian/changelog has $DEBVERSION, configure.ac has $VERSION: add a changelog entry"

W=$(mktemp -d /tmp/hpcinit-deb.XXXXXX)
trap 'rm -rf "$W"' EXIT
TREE=$W/hpcinit-$VERSION
mkdir "$TREE"
if git -C "$SRC" rev-parse --is-inside-work-tree > /dev/null 2>&1; then
	(cd "$SRC" && git ls-files -z | xargs -0 tar -cf - --no-recursion) | tar -C "$TREE" -xf -
else
	(cd "$SRC" && tar -cf - --exclude='./build*' --exclude=./debian .) | tar -C "$TREE" -xf -
fi
rm -rf "$TREE/debian"
cp -a "$SRC/packaging/debian" "$TREE/debian"

echo "=== dpkg-buildpackage -us -uc -b (log: $OUT/dpkg-buildpackage.log)"
mkdir -p "$OUT"
if ! (cd "$TREE" && DEB_BUILD_OPTIONS="parallel=$(nproc) ${DEB_BUILD_OPTIONS:-}" \
	dpkg-buildpackage -us -uc -b) > "$OUT/dpkg-buildpackage.log" 2>&1; then
	tail -60 "$OUT/dpkg-buildpackage.log"
	fail "dpkg-buildpackage failed"
fi
ARCH=$(dpkg --print-architecture)
DEB=$W/hpcinit_${DEBVERSION}_$ARCH.deb
CHANGES=$W/hpcinit_${DEBVERSION}_$ARCH.changes
[ -f "$DEB" ] || { ls "$W"; fail "no $DEB"; }

echo "=== lintian"
rc=0
lintian --fail-on error --display-info --tag-display-limit 0 "$CHANGES" > "$OUT/lintian.txt" 2>&1 || rc=$?
cat "$OUT/lintian.txt"
[ "$rc" -eq 0 ] || fail "lintian reports errors (above)"
grep -q '^E: ' "$OUT/lintian.txt" && fail "lintian reports errors (above)"

echo "=== install, run, remove (in a throwaway overlay of /)"
mkdir "$W/ns"
unshare --mount --uts --ipc --net --pid --fork --propagation private -- \
	bash "$0" --inner "$W/ns" "$DEB" "$VERSION" || fail "install test failed"

# Every binary package (hpcinit, hpcinit-rdma, hpcinit-mpi), with the .changes.
cp "$W"/hpcinit*_"$DEBVERSION"_"$ARCH".deb "$CHANGES" "$W"/hpcinit_*.buildinfo "$OUT/" 2>/dev/null ||
	cp "$W"/hpcinit*_"$DEBVERSION"_"$ARCH".deb "$OUT/"
echo "=== built"
dpkg-deb --info "$OUT/$(basename "$DEB")" | sed -n 's/^ \(Package\|Version\|Architecture\|Depends\|Installed-Size\):/  &/p'
dpkg-deb --contents "$OUT/$(basename "$DEB")" | awk '{print "  " $6}' | grep -v '/$'
echo "build-deb: OK $OUT/$(basename "$DEB")"
