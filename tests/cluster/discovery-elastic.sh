#!/bin/bash
# SPDX-License-Identifier: MIT
#
# An elastic scale set (Slurm power saving) on simulated nodes: the head
# (expect 1) is up alone, computes (expect 4, wait 10m, as the shipped
# vmss-compute.yaml) resume one at a time, the set shrinks to one node and
# grows again.  expect is a formation target, not a gate: a compute that
# joins a formed cluster (a member's record says "formed: true") and every
# refresh return at once instead of waiting out discovery.wait.  A new
# cluster still waits, and a forged "formed" record without the cluster's
# HMAC is rejected like any forged record.  The 10 minute wait would show
# as a killed run (timeout 120 s is only the net under it, never the claim).
SIM_PREFIX=del SIM_NET=198.19.15
. "$(dirname "$0")/lib.sh"

H=$(node 1) C2=$(node 2) C3=$(node 3) C4=$(node 4)
sim up 4 --shared "$SHARED" >/dev/null
NODES=$SHARED/.hpcinit/$CLUSTER/nodes

# espec ROLE EXPECT WAIT [CLUSTER]
espec() {
	cat <<-EOF
	version: 1
	cluster: {name: ${4:-$CLUSTER}, role: $1, network: $SIM_NET.0/24, secret_file: /etc/hpcinit/cluster.key}
	discovery: {method: shared, dir: $SHARED/.hpcinit, expect: $2, wait: $3, lease: 5m}
	hostfile: {}
	EOF
}
espec head 1 10m > "$T/head.yaml"
espec compute 4 10m > "$T/compute.yaml"
install_spec "$H" "$T/head.yaml"
for n in "$C2" "$C3" "$C4"; do install_spec "$n" "$T/compute.yaml"; done
# capped NODE OUT ARGS...: hpcinit under a 120 s net (a wait of 10 minutes is killed: rc 124)
capped() { local n=$1 out=$2; shift 2; rc=0; on "$n" timeout 120 "$HPCINIT" "$@" >"$out" 2>&1 || rc=$?; }

# --- the head alone: expect 1, formed from its first apply ---
capped "$H" "$T/head" apply
check "the head's apply exits 0" test "$rc" = 0
check "the head's record says the cluster formed" grep -qx 'formed: true' "$NODES/$H.rec"

# --- a compute resumes: 2 of expect 4, and no wait ---
capped "$C2" "$T/c2" apply -v
check "a compute joining the formed cluster exits 0 (rc $rc; 124: it waited out discovery.wait)" test "$rc" = 0
check "it reports 2 nodes known, without waiting" contains "$T/c2" "2 nodes known (expect 4)"
check "it says why it did not wait" contains "$T/c2" "the cluster has formed: $H's record says so"
check "it lists the head in its hostfile" hostfiles_list "$C2" "$H" "$C2"
check "its own record now says formed too" grep -qx 'formed: true' "$NODES/$C2.rec"

# --- refreshes below expect return at once ---
capped "$C2" "$T/c2-refresh" "${REFRESH[@]}"
check "a refresh below expect exits 0 at once (rc $rc)" test "$rc" = 0

# --- shrink to one: the head is gone (deleted VM: its record removed), only C2 is left ---
rm -f "$NODES/$H.rec"
capped "$C3" "$T/c3" apply -v
check "with only a compute left, a new compute still joins at once (rc $rc)" test "$rc" = 0
check "because the remaining compute's record says so" contains "$T/c3" "the cluster has formed: $C2's record says so"
check "it lists the two computes" hostfiles_list "$C3" "$C2" "$C3"

# --- a new cluster still waits at first; a refresh there does not ---
espec compute 3 3s newc > "$T/new.yaml"
install_spec "$C4" "$T/new.yaml"
capped "$C4" "$T/new" apply
check "a node of a new cluster (expect 3, wait 3s) waits and degrades (rc $rc)" test "$rc" = 3
check "it says it waited" contains "$T/new" "only 1 of 3 expected nodes after waiting 3 s"
espec compute 3 10m newc > "$T/new.yaml"
install_spec "$C4" "$T/new.yaml"
capped "$C4" "$T/new-refresh" "${REFRESH[@]}"
check "its refresh with wait 10m returns at once, degraded (rc $rc)" test "$rc" = 3
check "and says a refresh does not wait" contains "$T/new-refresh" "a refresh does not wait for them"
check "its record does not claim the new cluster formed" not_contains "$SHARED/.hpcinit/newc/nodes/$C4.rec" "formed:"

# --- a forged "formed: true" (no cluster secret) is rejected and does not stop the wait ---
sed -e "s/^hostname: .*/hostname: ${SIM_PREFIX}9/" -e "s/^addr: .*/addr: $SIM_NET.99/" \
	-e 's/^updated: .*/&\nformed: true/' -e '/^hmac:/d' "$SHARED/.hpcinit/newc/nodes/$C4.rec" \
	> "$SHARED/.hpcinit/newc/nodes/${SIM_PREFIX}9.rec"
espec compute 3 3s newc > "$T/new.yaml"
install_spec "$C4" "$T/new.yaml"
capped "$C4" "$T/forged" apply -v
check "a forged formed record without HMAC does not end the wait (rc $rc)" test "$rc" = 3
check "it is rejected for its missing HMAC" contains "$T/forged" "no HMAC while cluster.secret_file is set; rejected"
check "and the node still waited" contains "$T/forged" "after waiting 3 s"

done_testing
