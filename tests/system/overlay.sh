# SPDX-License-Identifier: MIT
#
# A throwaway copy of the running system to change freely: source this file
# in a shell that already runs in its own mount namespace (unshare --mount
# --propagation private), then call overlay_root DIR.
#
# It mounts a tmpfs on DIR and an overlay of / on DIR/root (lower = the
# host's /, upper = the tmpfs), then gives the overlay its own /proc (with
# /proc/sys read-only), a read-only /sys, empty /run and /tmp, and a /dev
# holding only null, zero, full, random and urandom (no console, no disks).  Whatever runs chrooted
# in DIR/root writes only to the tmpfs, which disappears with the mount
# namespace: the host's / is never written.  Used by cloud-init-e2e.sh and
# packaging/build-deb.sh.

# overlay_root DIR: prints nothing; sets OVERLAY_ROOT and OVERLAY_UPPER.
overlay_root() {
	local t=$1 d n
	# Refuse to run in the host's mount namespace: every mount below must
	# vanish with the namespace.
	if [ "$(readlink /proc/self/ns/mnt)" = "$(readlink /proc/1/ns/mnt)" ] &&
		[ "${OVERLAY_ALLOW_HOST_NS:-}" != yes ]; then
		echo "overlay_root: not in a private mount namespace" >&2
		return 1
	fi
	mount -t tmpfs -o mode=0700 hpcinit-overlay "$t"
	mkdir "$t/upper" "$t/work" "$t/root"
	mount -t overlay overlay -o "lowerdir=/,upperdir=$t/upper,workdir=$t/work" "$t/root"
	OVERLAY_ROOT=$t/root
	OVERLAY_UPPER=$t/upper
	mount -t proc proc "$OVERLAY_ROOT/proc"
	# The new /proc is this PID namespace's, but /proc/sys and
	# /proc/sysrq-trigger still reach the host's kernel: read-only.
	for d in sys sysrq-trigger; do
		[ -e "$OVERLAY_ROOT/proc/$d" ] || continue
		mount --bind "$OVERLAY_ROOT/proc/$d" "$OVERLAY_ROOT/proc/$d"
		mount -o remount,bind,ro "$OVERLAY_ROOT/proc/$d"
	done
	mount -t sysfs -o ro sysfs "$OVERLAY_ROOT/sys"
	for d in run tmp dev; do
		mount -t tmpfs -o mode=0755 "overlay-$d" "$OVERLAY_ROOT/$d"
	done
	chmod 1777 "$OVERLAY_ROOT/tmp"
	for n in null zero full random urandom; do
		: > "$OVERLAY_ROOT/dev/$n"
		mount --bind "/dev/$n" "$OVERLAY_ROOT/dev/$n"
	done
	ln -s /proc/self/fd "$OVERLAY_ROOT/dev/fd"
	ln -s /proc/self/fd/0 "$OVERLAY_ROOT/dev/stdin"
	ln -s /proc/self/fd/1 "$OVERLAY_ROOT/dev/stdout"
	ln -s /proc/self/fd/2 "$OVERLAY_ROOT/dev/stderr"
}
