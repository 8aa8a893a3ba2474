#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Scale-out and scale-in on simulated nodes.  Four nodes apply; a fifth
# joins (VM scale-set scale-out) and after one "hpcinit refresh" every old
# node's hostfiles list five, and mpirun runs on all five.  Then a node
# leaves (its VM is deleted, so it stops refreshing): while its lease runs
# the others still list it, after the lease every node drops it and its
# record is pruned.  The lease is 6 s here (5 min by default).
SIM_PREFIX=dsc SIM_NET=198.19.12
. "$(dirname "$0")/lib.sh"
# Long enough that "within the lease" still holds on a loaded 2-core machine.
LEASE=12

N1=$(node 1) N2=$(node 2) N3=$(node 3) N4=$(node 4) N5=$(node 5)
sim up 4 --shared "$SHARED" >/dev/null
spec "${LEASE}s" 4 > "$T/node.yaml"
for n in "$N1" "$N2" "$N3" "$N4"; do install_spec "$n" "$T/node.yaml"; done
check "4 nodes apply" apply_all "$T/apply" "$N1" "$N2" "$N3" "$N4"
check "$N1 lists 4 nodes" hostfiles_list "$N1" "$N1" "$N2" "$N3" "$N4"

# --- scale-out: a fifth VM boots with the same custom data ---
new=$(sim add 1)
check "sim add gives $N5" same_text "$new" "$N5"
install_spec "$N5" "$T/node.yaml"
run_hpc "$T/apply5" "$N5" apply
check "the new node's apply exits 0 (expect 4 is met at once)" test "$rc" = 0
check "the new node lists all 5" hostfiles_list "$N5" "$N1" "$N2" "$N3" "$N4" "$N5"
refresh_all() {
	local n bad=0
	for n in "$@"; do
		run_hpc "$T/refresh.$n" "$n" "${REFRESH[@]}" -v
		cat "$T/refresh.$n" >> "$T/refresh.log"
		[ "$rc" = 0 ] || { echo "  refresh on $n exited $rc"; sed 's/^/  | /' "$T/refresh.$n"; bad=1; }
	done
	return $bad
}
check "one refresh on each old node exits 0" refresh_all "$N1" "$N2" "$N3" "$N4"
for n in "$N1" "$N2" "$N3" "$N4"; do
	check "after one refresh, $n lists 5 nodes" hostfiles_list "$n" "$N1" "$N2" "$N3" "$N4" "$N5"
done
check "refresh reports the change" grep -q '^hostfile  *changed ' "$T/refresh.$N1"
check "clustershell group grows to 5" same_text "$(on "$N2" nodeset -f "@$CLUSTER")" "${SIM_PREFIX}[1-5]"
if [ -x "$MPI_HELLO" ]; then
	rc=0
	on "$N1" timeout 60 mpirun --allow-run-as-root --mca btl tcp,self --mca btl_tcp_if_include eth0 \
		--mca oob_tcp_if_include eth0 --bind-to none --hostfile /etc/hpcinit/hostfile.openmpi \
		--map-by ppr:1:node -np 5 "$MPI_HELLO" >"$T/mpi5.out" 2>&1 || rc=$?
	check "mpirun runs one rank on each of the 5 nodes" \
		same_text "$(sed -n 's/^hello from rank .* on //p' "$T/mpi5.out" | sort; echo "rc=$rc")" \
		"$(printf '%s\n' "$N1" "$N2" "$N3" "$N4" "$N5"; echo "rc=0")"
else
	not_ok "mpi-hello not built (configure found no Open MPI)"
fi

# --- scale-in: node 3's VM is deleted; it refreshes no more ---
# Every node refreshed just before (as its timer would have).
refresh_all "$N1" "$N2" "$N4" "$N5" >/dev/null || true
refresh_all "$N3" >/dev/null || true
sim del "$N3"
gone_at=$(date +%s)
check "right after, within the lease, $N1 still lists $N3" refresh_all "$N1"
check "... in its hostfiles" hostfiles_list "$N1" "$N1" "$N2" "$N3" "$N4" "$N5"
# The others keep refreshing, as their timers would, until the lease is over.
while [ $(( $(date +%s) - gone_at )) -le $((LEASE + 1)) ]; do
	refresh_all "$N1" "$N2" "$N4" "$N5" >/dev/null || true
	sleep 1
done
check "after the lease, a refresh on every node exits 0" refresh_all "$N1" "$N2" "$N4" "$N5"
for n in "$N1" "$N2" "$N4" "$N5"; do
	check "after the lease, $n drops $N3" hostfiles_list "$n" "$N1" "$N2" "$N4" "$N5"
done
check "the expired record is pruned from the share" test ! -e "$SHARED/.hpcinit/$CLUSTER/nodes/$N3.rec"
check "the pruning is reported" contains "$T/refresh.log" "$N3.rec: lease expired (scale-in); removed"
check "the group shrinks (nodeset)" same_text "$(on "$N5" nodeset -f "@$CLUSTER")" "${SIM_PREFIX}[1-2,4-5]"
check "the Open MPI default hostfile block shrinks" \
	same_text "$(on "$N2" sed -n '/^# BEGIN hpcinit/,/^# END hpcinit/p' /etc/openmpi/openmpi-default-hostfile)" \
	"$(printf '# BEGIN hpcinit %s\n' "$CLUSTER"; for n in "$N1" "$N2" "$N4" "$N5"; do echo "$n slots=$(on "$N2" nproc)"; done; printf '# END hpcinit %s' "$CLUSTER")"
# Four nodes left, expect is 4: still ready.  Had it fallen below expect, the
# node would not wait again in this boot (expect was reached once).
check "the last refresh said 4 nodes known" grep -q '4 nodes known (expect 4)' "$T/refresh.$N5"

done_testing
