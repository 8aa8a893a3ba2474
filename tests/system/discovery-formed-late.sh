#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Many nodes starting at once on the shared directory: a node may read a record that
# says "formed: true" after it has listed the directory, so records written before
# that mark but after its listing are missing from its view; it must not declare
# itself ready on that partial list.  Made to happen at one exact moment by
# late_shim.so (a stand-in for the timing of 1,000 nodes): c2-c4's records arrive
# just before c5 opens c1's record, which says the cluster formed.  The real binary
# on one fake root with the rendezvous in it.
. "$(dirname "$0")/lib.sh"

SHIM=$TOP_BUILDDIR/tests/system/late_shim.so
[ -f "$SHIM" ] || make -s -C "$TOP_BUILDDIR" tests/system/late_shim.so
R=$T/root
mkroot "$R"
mkdir -p "$R/shared" "$R/etc/hpcinit" "$T/late"
openssl rand -hex 32 > "$R/etc/hpcinit/cluster.key"
chmod 0600 "$R/etc/hpcinit/cluster.key"
NODES=$R/shared/.hpcinit/lateclust/nodes
spec() {
	cat <<-EOF
	version: 1
	cluster: {name: lateclust, network: 10.0.0.0/24, secret_file: /etc/hpcinit/cluster.key}
	discovery: {method: shared, dir: /shared/.hpcinit, expect: $1, wait: 10s, lease: 5m}
	hostfile: {etc_hosts: always}
	EOF
}
spec 1 > "$T/one.yaml"
spec 5 > "$T/five.yaml"

# as NODE ARGS...: hpcinit ARGS as node NODE (address 10.0.0.<n>, its own /run/hpcinit)
as() {
	local n=$1
	shift
	rm -rf "$R/run/hpcinit"
	rc=0
	HPCINIT_ADDRESS=10.0.0.${n#c} LD_PRELOAD=${AS_PRELOAD:-} HPCINIT_LATE_SHIM=${AS_SHIM:-} \
		hpcinit "$@" --root "$R" --hostname "$n" >"$T/$n.out" 2>&1 || rc=$?
}
# An ASan build checks that its runtime comes first; the shim comes before it here.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"
# c1 formed (its record says so); c2-c4 wrote theirs, moved aside to arrive late.
for n in c1 c2 c3 c4; do as "$n" apply --only discovery -c "$T/one.yaml"; done
check "c1's record says the cluster formed" grep -qx 'formed: true' "$NODES/c1.rec"
mv "$NODES/c2.rec" "$NODES/c3.rec" "$NODES/c4.rec" "$T/late/"

AS_SHIM="c1.rec:$T/late:$NODES" AS_PRELOAD=$SHIM as c5 apply --only discovery,hostfile -c "$T/five.yaml"
check "c5 applies (exit 0)" test "$rc" = 0
check "the late records arrived during c5's run (the shim fired)" test ! -e "$T/late/c2.rec"
check "c5 knows all 5 nodes, not the 2 of its first listing" contains "$T/c5.out" "5 nodes known (expect 5)"
check "c5's hostfile lists all 5" test "$(grep -vc '^#' "$R/etc/hpcinit/hostfile.plain")" = 5
done_testing
