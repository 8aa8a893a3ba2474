#!/bin/bash
# SPDX-License-Identifier: MIT
#
# What a node's first apply reads twice, and no longer does.  The announce after the steps
# (agent/core/iso.c), in the discovery step's child moments after the step, puts the record
# again with the node's state: it takes the step's addresses and boot id rather than listing
# the interfaces again (node_facts_known), reads its old record once, through the
# directory's descriptor, not again by path to compare (a record carries its time: the
# rendezvous's puts_differ), and reads /run/hpcinit/shared-written once for each write of it.
# On NFS each of those reads is a round trip to the server, for every node of a boot.
# Real binary on a fake root, in a network namespace of its own with one interface in
# cluster.network (so the address comes from the interfaces, not HPCINIT_ADDRESS); strace
# shows the calls.
. "$(dirname "$0")/lib.sh"
command -v strace >/dev/null || { echo "SKIP: needs strace"; exit 77; }
if [ -z "${HPCINIT_TEST_IN_NETNS:-}" ]; then
	[ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null || { echo "SKIP: needs root and unshare -n"; exit 77; }
	rm -rf "$T"
	trap - EXIT
	exec env HPCINIT_TEST_IN_NETNS=1 unshare -n bash "$0" "$@"
fi
ip link set lo up
ip link add eth0 type veth peer name eth1
ip addr add 10.0.0.7/24 dev eth0
ip link set eth1 up
ip link set eth0 up

R=$T/root
mkroot "$R"
mkdir -p "$R/etc/hpcinit" "$R/shared"
openssl rand -hex 32 > "$R/etc/hpcinit/cluster.key"
chmod 0600 "$R/etc/hpcinit/cluster.key"
cat > "$T/node.yaml" <<-EOF
version: 1
cluster: {name: annc, network: 10.0.0.0/24, secret_file: /etc/hpcinit/cluster.key}
discovery: {method: shared, dir: /shared/.hpcinit, expect: 1}
hostfile: {etc_hosts: always}
EOF
REC=$R/shared/.hpcinit/annc/nodes/n1.rec
rc=0
# (LeakSanitizer cannot run under ptrace: an ASan build's leak check is off for this one run)
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace -f -qq -e trace=openat,sendto,rename \
	-o "$T/calls" "$HPCINIT" apply --root "$R" -c "$T/node.yaml" --hostname n1 >"$T/out" 2>&1 || rc=$?
check "the cold apply exits 0" test "$rc" = 0
check "it announced: the record says ready" grep -qx 'state: ready' "$REC"
check "the record holds the address the interfaces gave" grep -qx 'addr: 10.0.0.7' "$REC"
check "the record was written twice (the step, the announce)" \
	test "$(grep -c "rename(\"$REC\.hpcinit-tmp\." "$T/calls" || true)" = 2
check "the interfaces were listed once (one RTM_GETADDR dump)" \
	test "$(grep -c 'RTM_GETADDR' "$T/calls" || true)" = 1
check "the announce read the old record once, through the directory" \
	test "$(grep -c 'openat([0-9]*, "n1\.rec", O_RDONLY.*) = [0-9]' "$T/calls" || true)" = 1
check "and never opened it by its path" test "$(grep -c "openat(AT_FDCWD, \"$REC\"" "$T/calls" || true)" = 0
check "shared-written was read once for each of its two writes" \
	test "$(grep -c 'openat(AT_FDCWD, "[^"]*/run/hpcinit/shared-written", O_RDONLY' "$T/calls" || true)" = 2
[ "$rc" = 0 ] || sed 's/^/  | /' "$T/out"
done_testing
