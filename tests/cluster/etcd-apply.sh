#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Four simulated nodes meet through a real 3-member etcd cluster
# (discovery method etcd).  "hpcinit apply" runs on all four at once; each
# waits until etcd knows four nodes.  Real tools judge the result: the
# hostfiles list all four, real mpirun (strict host-key checking) runs MPI
# hello on every rank.  Then the faults: one member killed changes nothing;
# all three killed make discovery fail naming every endpoint and what it
# answered, and the last good hostfiles stay.
SIM_PREFIX=eap SIM_NET=198.19.31
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/etcd-lib.sh"

N1=$(node 1) N2=$(node 2) N3=$(node 3) N4=$(node 4)
ALL=("$N1" "$N2" "$N3" "$N4")
sim up 4 >/dev/null
etcd_up
# Nothing renews the records here (no watch, no timer): the lease (the default, 5 min) outlives
# the test, whose checks compare with the first apply's membership.  (With 30 s, at load 25 the
# 4 keys ran out 30 s after the apply, before the last checks: "hostfiles still list exactly the
# 4 nodes" failed.)
etcd_spec 300s 4 > "$T/node.yaml"
for n in "${ALL[@]}"; do install_spec "$n" "$T/node.yaml"; done

check "apply on 4 nodes at once: every one exits 0" apply_all "$T/apply" "${ALL[@]}"
check "apply reports 4 nodes known through etcd" contains "$T/apply.$N1" "4 nodes known through etcd (expect 4)"

# One key a node under /hpcinit/<cluster>/nodes/, the record with the node's host key and HMAC,
# each attached to a lease.
keys_ok() {
	local n key rec
	same_text "$(etcdctl_ get --prefix --keys-only "/hpcinit/$CLUSTER/nodes/" | sed '/^$/d')" \
		"$(printf "/hpcinit/$CLUSTER/nodes/%s\n" "${ALL[@]}")" || return 1
	for n in "${ALL[@]}"; do
		rec=$(etcdctl_ get --print-value-only "/hpcinit/$CLUSTER/nodes/$n")
		key=$(on "$n" cut -d' ' -f1,2 /etc/ssh/ssh_host_ed25519_key.pub)
		grep -qxF "  - $key" <<<"$rec" || { echo "  $n: host key $key not in its record"; return 1; }
		grep -qx "addr: $(sim addr "$n")" <<<"$rec" || { echo "  $n: wrong addr"; echo "$rec"; return 1; }
		grep -q '^hmac: [0-9a-f]\{64\}$' <<<"$rec" || { echo "  $n: no hmac"; return 1; }
		etcdctl_ get -w json "/hpcinit/$CLUSTER/nodes/$n" | grep -q '"lease":[1-9]' ||
			{ echo "  $n: key has no lease"; return 1; }
	done
}
check "one key a node in etcd, with its address, host key, HMAC and a lease" keys_ok

for n in "${ALL[@]}"; do
	check "$n: hostfiles (openmpi, mpich, plain) list all 4 nodes with their slots" \
		hostfiles_list "$n" "${ALL[@]}"
done
SLOTS=$(on "$N1" nproc)
NP=$((4 * SLOTS))
MPIRUN=(mpirun --allow-run-as-root --mca btl tcp,self --mca btl_tcp_if_include eth0
	--mca oob_tcp_if_include eth0 --bind-to none)
if [ -x "$MPI_HELLO" ]; then
	rc=0
	on "$N2" timeout 60 "${MPIRUN[@]}" --hostfile /etc/hpcinit/hostfile.openmpi -np "$NP" "$MPI_HELLO" \
		>"$T/mpi.out" 2>&1 || rc=$?
	mpi_ok() {
		[ "$rc" = 0 ] || { echo "  mpirun exited $rc"; sed 's/^/  | /' "$T/mpi.out"; return 1; }
		contains "$T/mpi.out" "allreduce: $NP of $NP ranks" || return 1
		[ "$(grep -c '^hello from rank' "$T/mpi.out")" = "$NP" ]
	}
	check "mpirun --hostfile hostfile.openmpi (strict host keys): $NP ranks over the 4 nodes" mpi_ok
else
	not_ok "mpi-hello not built (configure found no Open MPI): cannot run the MPI check"
fi

# Idempotence: the second apply puts nothing (an unchanged record wakes no watcher).
rev0=$(etcdctl_ get -w json "/hpcinit/$CLUSTER/nodes/$N1" | sed 's/.*"mod_revision":\([0-9]*\).*/\1/')
run_hpc "$T/again" "$N1" apply
check "second apply exits 0 with discovery ok" grep -q '^discovery  *ok ' "$T/again"
rev1=$(etcdctl_ get -w json "/hpcinit/$CLUSTER/nodes/$N1" | sed 's/.*"mod_revision":\([0-9]*\).*/\1/')
check "second apply did not rewrite the key (mod_revision $rev0 stays)" test "$rev0" = "$rev1"
run_hpc "$T/check" "$N2" check
check "check on a converged node exits 0" test "$rc" = 0

# expect is a formation target, not a gate: with this boot's ready mark gone (as after a reboot)
# and expect 9, wait 10m, a node joins the formed cluster at once (the 120 s cap is only a net).
etcd_spec 300s 9 | sed 's/wait: 60s/wait: 10m/' | on "$N1" tee /etc/hpcinit/expect9.yaml >/dev/null
on "$N1" rm -f /run/hpcinit/discovery-ready
rc=0
on "$N1" timeout 120 "$HPCINIT" apply -c /etc/hpcinit/expect9.yaml -v >"$T/expect9" 2>&1 || rc=$?
check "a node joining the formed cluster with expect 9 exits 0 without waiting (rc $rc; 124: it waited)" \
	test "$rc" = 0
check "... because the members' records say the cluster formed" contains "$T/expect9" "the cluster has formed: "

# Records in etcd get the checks of every record: a planted one (edited: its HMAC no longer
# matches) and a key that names no valid host are rejected and logged, as cluster findings:
# another node's record is never this node's problem (the run stays ready, nobody drains).
printf '%s\n' "$(etcdctl_ get --print-value-only "/hpcinit/$CLUSTER/nodes/$N1" | sed 's/^hostname: .*/hostname: intruder/')" |
	etcdctl_ put "/hpcinit/$CLUSTER/nodes/intruder" >/dev/null
etcdctl_ put "/hpcinit/$CLUSTER/nodes/bad..name" "x" >/dev/null
run_hpc "$T/planted" "$N2" "${REFRESH[@]}" -v
check "a planted record: refresh exits 0 (a cluster finding, not this node's problem)" test "$rc" = 0
check "... the edited record is rejected for its HMAC" \
	contains "$T/planted" "record intruder: bad HMAC (tampered, or written with another cluster secret); rejected"
check "... the key with an invalid host name is rejected" \
	contains "$T/planted" "key /hpcinit/$CLUSTER/nodes/bad..name: not a valid host name; rejected"
check "$N2: hostfiles still list exactly the 4 nodes" hostfiles_list "$N2" "${ALL[@]}"
etcdctl_ del "/hpcinit/$CLUSTER/nodes/intruder" >/dev/null
etcdctl_ del "/hpcinit/$CLUSTER/nodes/bad..name" >/dev/null

# A record with a good HMAC that the cluster's rules (admit.c) refuse - its address is outside
# cluster.network - is counted among the rejections like any other: the summary says so.
GEN=$TOP_BUILDDIR/tests/bench/gen-records
[ -x "$GEN" ] || make -s -C "$TOP_BUILDDIR" tests/bench/gen-records
mkdir -p "$T/gen"
"$GEN" -s "$T/cluster.key" -p "${SIM_PREFIX}x" "$T/gen" "$CLUSTER" 1
etcdctl_ put "/hpcinit/$CLUSTER/nodes/${SIM_PREFIX}x1" <"$T/gen/${SIM_PREFIX}x1.rec" >/dev/null
run_hpc "$T/outside" "$N2" "${REFRESH[@]}" -v
check "a signed record from outside cluster.network: refresh exits 0 (a cluster finding)" test "$rc" = 0
check "... rejected, naming why" contains "$T/outside" \
	"record ${SIM_PREFIX}x1: address 10.200.0.2 is outside cluster.network $SIM_NET.0/24; rejected"
check "... and counted in the summary" contains "$T/outside" "records rejected, see details"
check "$N2: hostfiles still list exactly the 4 nodes" hostfiles_list "$N2" "${ALL[@]}"
etcdctl_ del "/hpcinit/$CLUSTER/nodes/${SIM_PREFIX}x1" >/dev/null

# One member of three down: nothing changes.
etcd_kill 1
run_hpc "$T/one-down" "$N3" "${REFRESH[@]}"
check "refresh with member 1 of 3 killed exits 0" test "$rc" = 0
check "... and still knows 4 nodes" contains "$T/one-down" "4 nodes known through etcd (expect 4)"
check "$N3: hostfiles still list all 4" hostfiles_list "$N3" "${ALL[@]}"

# All down: a clear failure naming every endpoint, and the last good files stay.
etcd_stop_members
before=$(on "$N4" cat /etc/hpcinit/hostfile.openmpi /etc/hpcinit/hostfile.plain)
run_hpc "$T/all-down" "$N4" "${REFRESH[@]}" -v
check "refresh with every etcd member down exits 1" test "$rc" = 1
check "... discovery failed: none of the 3 endpoints answered" \
	contains "$T/all-down" "none of the 3 etcd endpoints answered"
for i in 1 2 3; do
	check "... the failure names endpoint $(etcd_client_url "$i") and its answer" \
		grep -qF "$(etcd_client_url "$i"): Couldn't connect to server" "$T/all-down"
done
check "... hostfile was not run (needs discovery)" grep -q '^hostfile  *skipped ' "$T/all-down"
check "... the last good hostfiles are unchanged" \
	same_text "$(on "$N4" cat /etc/hpcinit/hostfile.openmpi /etc/hpcinit/hostfile.plain)" "$before"

# The same with discovery.on_unreachable: degrade: discovery goes on with the last membership etcd
# gave in this boot (its records checked again), ends degraded (exit 3) naming every endpoint,
# and ssh and hostfile run on it: the files stay as they were.
etcd_spec 300s 4 | sed "s/lease: 300s}/lease: 300s, on_unreachable: degrade}/" > "$T/degrade.yaml"
grep -q 'on_unreachable: degrade' "$T/degrade.yaml" || echo "  the degrade spec was not made"
install_spec "$N4" "$T/degrade.yaml"
run_hpc "$T/degrade" "$N4" "${REFRESH[@]}" -v
check "degrade: refresh with every etcd member down exits 3 (degraded)" test "$rc" = 3
check "... discovery: 4 nodes from the last membership etcd gave" \
	contains "$T/degrade" "4 nodes from the last membership etcd gave: none of the 3 etcd endpoints answered"
for i in 1 2 3; do
	check "... names endpoint $(etcd_client_url "$i") and its answer" \
		grep -qF "$(etcd_client_url "$i"): Couldn't connect to server" "$T/degrade"
done
check "... hostfile ran on it (not skipped)" grep -Eq '^hostfile  *(ok|changed) ' "$T/degrade"
check "... the hostfiles are unchanged" \
	same_text "$(on "$N4" cat /etc/hpcinit/hostfile.openmpi /etc/hpcinit/hostfile.plain)" "$before"
on "$N4" rm -f /run/hpcinit/etcd-members
run_hpc "$T/degrade0" "$N4" "${REFRESH[@]}"
check "degrade without a membership from etcd in this boot: fails (exit 1)" test "$rc" = 1
check "... saying there is nothing to degrade to" contains "$T/degrade0" "nothing to degrade to"
check "... and the hostfiles stay" \
	same_text "$(on "$N4" cat /etc/hpcinit/hostfile.openmpi /etc/hpcinit/hostfile.plain)" "$before"

# The key belongs to method etcd: the spec check refuses it elsewhere, naming it.
spec 30s 4 | sed 's/^discovery: {/discovery: {on_unreachable: degrade, /' > "$T/shared-degrade.yaml"
rc=0; "$HPCINIT" validate "$T/shared-degrade.yaml" >"$T/validate" 2>&1 || rc=$?
check "on_unreachable with method shared: the spec is refused, naming the key" \
	test "$rc" != 0 -a -n "$(grep 'discovery.on_unreachable' "$T/validate")"

done_testing
