#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A share whose client answers as a FUSE client does when its daemon goes -- ENOTCONN for a new
# call, ECONNABORTED for a call in flight then (the kernel's fuse_abort_conn) -- is a share
# away, not this node sick: discovery fails with discovery.rendezvous.unreachable, which this
# node's record turns into "degraded" when the share is back (modules/discovery/node.c), so no
# peer drops a live node.  Found by the fault campaign (seed 4801): ECONNABORTED was "refused",
# the step failed as discovery.failed, the record said failed and two peers' hostfiles dropped
# the node for 5 s.  The real binary on a fake root; the errno from estale_shim.so (LD_PRELOAD:
# the host kernel here has no FUSE share to kill mid-call on cue), on every open of the nodes
# directory in the run (its records' own opens pass: the list is what fails).
. "$(dirname "$0")/lib.sh"

SHIM=$TOP_BUILDDIR/tests/system/estale_shim.so
[ -f "$SHIM" ] || { echo "discovery-unreachable: $SHIM not built (make check builds it)" >&2; exit 1; }
openssl rand -hex 32 > "$T/cluster.key"
mkdir -p "$T/share"
chmod 0755 "$T/share"
R=$T/c1
mkroot "$R"
mkdir -p "$R/etc/hpcinit"
install -m 0600 "$T/cluster.key" "$R/etc/hpcinit/cluster.key"
ln -sfn "$T/share" "$R/shared"
cat >"$R/etc/hpcinit/node.yaml" <<YAML
version: 1
cluster: {name: away, network: 10.0.0.0/24, secret_file: /etc/hpcinit/cluster.key}
discovery: {method: shared, dir: /shared/.hpcinit, expect: 1, wait: 0s, lease: 5m}
hostfile: {}
YAML
# apply_as OUT [ERRNO]: hpcinit apply on c1, the nodes directory's first open failing with ERRNO
apply_as() {
	local pre=()
	[ -z "${2:-}" ] || pre=(env LD_PRELOAD="$SHIM" HPCINIT_ESTALE_SHIM="nodes:1000:0:$2")
	rc=0
	"${pre[@]}" env HPCINIT_ADDRESS=10.0.0.1 ${HPCINIT_WRAPPER:-} "$HPCINIT" apply --only discovery,hostfile \
		--root "$R" -c "$R/etc/hpcinit/node.yaml" --hostname c1 >"$1" 2>&1 || rc=$?
}
# the tags of the findings in the run's status (the node's reason is the worst one's)
tags() { grep -o '"tag": *"[^"]*"' "$R/run/hpcinit/status.json" | sed 's/.*"\([^"]*\)"$/\1/' | tr '\n' ' '; }

apply_as "$T/first.out"
check "c1's first apply: ready, its record written (exit 0)" test "$rc" = 0 -a -f "$T/share/.hpcinit/away/nodes/c1.rec"
for e in ECONNABORTED ENOTCONN; do
	apply_as "$T/$e.out" "$e"
	check "$e on the nodes directory: the apply fails (exit 1)" test "$rc" = 1
	check "... the share is unreachable: $(grep -m1 -o 'rendezvous directory [^ ]* unreachable ([^)]*)' "$T/$e.out")" \
		grep -q 'rendezvous directory [^ ]* unreachable (listing: ' "$T/$e.out"
	check "... an outage of the share, not of this node (the finding's text)" grep -q 'an outage of the share, not of this node' "$T/$e.out"
	check "... discovery's finding is discovery.rendezvous.unreachable (its record says degraded for it), not a refusal: $(tags)" \
		test "$(tags | cut -d' ' -f1)" = discovery.rendezvous.unreachable
	check "... the hostfile keeps the last known members" grep -qx c1 "$R/etc/hpcinit/hostfile.plain"
done
apply_as "$T/back.out"
check "the share back: ready again (exit 0)" test "$rc" = 0
done_testing
