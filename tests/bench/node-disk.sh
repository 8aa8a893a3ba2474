# SPDX-License-Identifier: MIT
# Sourced by the cluster benchmarks (etcd-converge.sh, etcd-load.sh): where the simulated nodes'
# disks live.  A node's /etc, /run and the shared directory are files on this machine, and what
# creating a file costs depends on the file system under them, not on hpcinit:
#   BENCH_DISK=node (default): a journaled ext4 made for the run (a sparse image in /dev/shm,
#       loop-mounted), the file system a VM's root disk has.
#   BENCH_DISK=host: this machine's own file system, as it is.
# Why it matters (measured with perf on 128 nodes' cold starts, shared method): this machine's
# root is ext4 without a journal, where the inode allocator skips every inode freed in the last
# 60-300 s (ext4's recently_deleted(), used only when there is no journal) by reading the inode
# table; after the tests and the bench's own teardowns have freed thousands, each file a node
# creates costs ~1 ms of its CPU in openat: 26 ms a node on the host's disk, 18.7 ms on a fresh
# journaled ext4, for the same work.  A node's disk on Azure is journaled ext4 or xfs.
#
# node_disk DIR: DIR becomes the node disk (created; mounted unless BENCH_DISK=host); prints
# one line saying which.  node_disk_release: unmount it (call before removing DIR's parent).
NODE_DISK_DIR="" NODE_DISK_IMG=""
node_disk() {
	local dir=$1
	mkdir -p "$dir"
	case ${BENCH_DISK:-node} in
	host)
		echo "node disks: this machine's file system ($(findmnt -no FSTYPE -T "$dir"), BENCH_DISK=host)" ;;
	node)
		NODE_DISK_IMG=$(mktemp /dev/shm/hpcinit-bench-disk.XXXXXX)
		truncate -s "${BENCH_DISK_SIZE:-8G}" "$NODE_DISK_IMG"
		mkfs.ext4 -q -F -E lazy_itable_init=0 "$NODE_DISK_IMG"
		mount -o loop "$NODE_DISK_IMG" "$dir"
		chmod 0755 "$dir"
		NODE_DISK_DIR=$dir
		echo "node disks: a fresh journaled ext4 (loop, image in /dev/shm; BENCH_DISK=host for this machine's own)" ;;
	*)
		echo "BENCH_DISK: node or host" >&2
		return 2 ;;
	esac
}
node_disk_release() {
	if [ -n "$NODE_DISK_DIR" ]; then
		umount "$NODE_DISK_DIR" 2>/dev/null || umount -l "$NODE_DISK_DIR" 2>/dev/null || true
		NODE_DISK_DIR=""
	fi
	if [ -n "$NODE_DISK_IMG" ]; then
		rm -f "$NODE_DISK_IMG"
		NODE_DISK_IMG=""
	fi
}
# node_disk_sim: for a benchmark on tests/cluster/lib.sh's simulated nodes: their disks
# (SIM_STATE) and the shared directory (SHARED) on $T/disk (node_disk; the line saying which
# in $T/disk.txt), and lib.sh's teardown releasing it after the nodes are down.
node_disk_sim() {
	node_disk "$T/disk" >"$T/disk.txt"
	SIM_STATE=$T/disk/sim SHARED=$T/disk/shared
	mkdir -m 0755 "$SHARED"
	export SIM_STATE
	_cleanup() {
		local rc=$?
		bash "$SIM_SH" down || true
		node_disk_release
		rm -rf "$T"
		exit $rc
	}
}

