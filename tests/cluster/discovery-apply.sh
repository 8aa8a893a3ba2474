#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Four simulated nodes (network namespaces, real sshd) share a directory
# (the simulation of the NFS share).  "hpcinit apply" runs on all four at
# once; each waits until discovery knows four nodes.  Then the real tools
# judge the result: every node's hostfiles list all four with the right
# slots, real mpirun runs MPI hello on every rank with --hostfile and with
# the Open MPI default hostfile, real nodeset and clush expand the group.
SIM_PREFIX=dap SIM_NET=198.19.11
. "$(dirname "$0")/lib.sh"

N1=$(node 1) N2=$(node 2) N3=$(node 3) N4=$(node 4)
ALL=("$N1" "$N2" "$N3" "$N4")
sim up 4 --shared "$SHARED" >/dev/null
spec 1m 4 > "$T/node.yaml"
for n in "${ALL[@]}"; do install_spec "$n" "$T/node.yaml"; done

check "apply on 4 nodes at once: every one exits 0" apply_all "$T/apply" "${ALL[@]}"
check "apply reports 4 nodes known" contains "$T/apply.$N1" "4 nodes known (expect 4)"

# /etc/hosts, hostfile.etc_hosts auto: the names are resolved once a run where that suffices.
# With the block gone, the first name that does not resolve decides that the block is
# written, which then answers for every name: DNS is asked about one name, not each node
# (at 1,000 nodes that was 2,000 queries from every node at every cold start).  The sim's
# resolver cannot be reached, so each query is a connect to port 53 that fails at once.
dns_connects() { grep -c 'connect(.*htons(53)' "$1" || true; }
dns_once() {
	local one all
	on "$N4" strace -f -e trace=connect -o /tmp/dns-one.trace getent ahosts "no-such-$SIM_PREFIX" >/dev/null || true
	on "$N4" sed -i '/^# BEGIN hpcinit/,/^# END hpcinit/d' /etc/hosts
	on "$N4" strace -f -e trace=connect -o /tmp/dns-all.trace "$HPCINIT" apply --only discovery,hostfile >"$T/dns-apply" 2>&1 ||
		{ sed 's/^/  | /' "$T/dns-apply"; return 1; }
	on "$N4" cat /tmp/dns-one.trace >"$T/dns-one.trace"
	on "$N4" cat /tmp/dns-all.trace >"$T/dns-all.trace"
	one=$(dns_connects "$T/dns-one.trace") all=$(dns_connects "$T/dns-all.trace")
	echo "  DNS connects: $all for the apply, $one for one name"
	[ "$one" -gt 0 ] && [ "$all" -le "$one" ] && on "$N4" grep -q "^# BEGIN hpcinit" /etc/hosts
}
check "a cold /etc/hosts: DNS asked about one name, then the block is written" dns_once

# The records: one a node, root-owned, 0644, carrying the node's real host key.
records_ok() {
	local n key rec
	[ "$(ls "$SHARED/.hpcinit/$CLUSTER/nodes" | sort | tr '\n' ' ')" = "$N1.rec $N2.rec $N3.rec $N4.rec " ] ||
		{ ls -la "$SHARED/.hpcinit/$CLUSTER/nodes"; return 1; }
	for n in "${ALL[@]}"; do
		rec=$SHARED/.hpcinit/$CLUSTER/nodes/$n.rec
		[ "$(stat -c '%u %a' "$rec")" = "0 644" ] || { stat "$rec"; return 1; }
		key=$(on "$n" cut -d' ' -f1,2 /etc/ssh/ssh_host_ed25519_key.pub)
		grep -qxF "  - $key" "$rec" || { echo "  $n: host key $key not in $rec"; return 1; }
		grep -qx "addr: $(sim addr "$n")" "$rec" || { echo "  $n: wrong addr"; cat "$rec"; return 1; }
		grep -q '^hmac: [0-9a-f]\{64\}$' "$rec" || { echo "  $n: no hmac"; return 1; }
	done
}
check "one root-owned record a node, with its address, host key and HMAC" records_ok

for n in "${ALL[@]}"; do
	check "$n: hostfiles (openmpi, mpich, plain) list all 4 nodes with their slots" \
		hostfiles_list "$n" "${ALL[@]}"
done
SLOTS=$(on "$N1" nproc)
NP=$((4 * SLOTS))

# Real mpirun with the generated hostfile: every rank runs and the allreduce sees all.
MPIRUN=(mpirun --allow-run-as-root --mca btl tcp,self --mca btl_tcp_if_include eth0
	--mca oob_tcp_if_include eth0 --bind-to none)
if [ -x "$MPI_HELLO" ]; then
	rc=0
	on "$N2" timeout 60 "${MPIRUN[@]}" --hostfile /etc/hpcinit/hostfile.openmpi -np "$NP" "$MPI_HELLO" \
		>"$T/mpi.out" 2>&1 || rc=$?
	mpi_ok() {
		local n
		[ "$rc" = 0 ] || { echo "  mpirun exited $rc"; sed 's/^/  | /' "$T/mpi.out"; return 1; }
		contains "$T/mpi.out" "allreduce: $NP of $NP ranks" || return 1
		[ "$(grep -c '^hello from rank' "$T/mpi.out")" = "$NP" ] || return 1
		for n in "${ALL[@]}"; do
			[ "$(grep -c "^hello from rank .* on $n\$" "$T/mpi.out")" = "$SLOTS" ] ||
				{ echo "  $n does not run $SLOTS ranks"; sed 's/^/  | /' "$T/mpi.out"; return 1; }
		done
	}
	check "mpirun --hostfile hostfile.openmpi: $NP ranks, $SLOTS on each of the 4 nodes, allreduce over all" mpi_ok
else
	not_ok "mpi-hello not built (configure found no Open MPI): cannot run the MPI check"
fi

# A bare mpirun (no --hostfile) reads Open MPI's default hostfile: the managed block.
rc=0
on "$N3" timeout 60 "${MPIRUN[@]}" -np "$NP" hostname >"$T/bare.out" 2>&1 || rc=$?
bare_ok() {
	local n
	[ "$rc" = 0 ] || { echo "  mpirun exited $rc"; sed 's/^/  | /' "$T/bare.out"; return 1; }
	for n in "${ALL[@]}"; do
		[ "$(grep -cx "$n" "$T/bare.out")" = "$SLOTS" ] || { sed 's/^/  | /' "$T/bare.out"; return 1; }
	done
}
check "bare mpirun uses the cluster through the Open MPI default hostfile block" bare_ok
check "the default hostfile keeps Open MPI's own text around the block" \
	contains <(on "$N3" cat /etc/openmpi/openmpi-default-hostfile) "# This is the default hostfile for Open MPI."

# Real clustershell: the group resolves with the stock configuration.
check "nodeset -f @$CLUSTER (default group source) gives all 4" \
	same_text "$(on "$N4" nodeset -f "@$CLUSTER")" "${SIM_PREFIX}[1-4]"
check "nodeset -f @hpcinit:$CLUSTER (hpcinit.yaml source) gives all 4" \
	same_text "$(on "$N4" nodeset -f "@hpcinit:$CLUSTER")" "${SIM_PREFIX}[1-4]"
rc=0
on "$N4" timeout 60 clush -g "$CLUSTER" -N -o '-oStrictHostKeyChecking=yes' hostname >"$T/clush.out" 2>&1 || rc=$?
check "clush -g $CLUSTER runs on all 4 nodes" \
	same_text "$(sort "$T/clush.out"; echo "rc=$rc")" "$(printf '%s\n' "${ALL[@]}"; echo "rc=0")"

# Idempotence: a second apply changes nothing and keeps mtimes.
before=$(on "$N1" stat -c '%n %Y.%y' /etc/hpcinit/hostfile.openmpi /etc/hpcinit/hostfile.mpich \
	/etc/hpcinit/hostfile.plain /etc/clustershell/groups.d/hpcinit.yaml)
run_hpc "$T/again" "$N1" apply
check "second apply exits 0" test "$rc" = 0
check "second apply: discovery ok (lease refresh is not a change)" grep -q '^discovery  *ok ' "$T/again"
check "second apply: hostfile ok" grep -q '^hostfile  *ok ' "$T/again"
after=$(on "$N1" stat -c '%n %Y.%y' /etc/hpcinit/hostfile.openmpi /etc/hpcinit/hostfile.mpich \
	/etc/hpcinit/hostfile.plain /etc/clustershell/groups.d/hpcinit.yaml)
check "second apply leaves the hostfiles' mtimes alone" same_text "$after" "$before"
run_hpc "$T/check" "$N2" check
check "check on a converged node exits 0" test "$rc" = 0

done_testing
