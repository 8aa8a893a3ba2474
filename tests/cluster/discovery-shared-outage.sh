#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A shared directory that stops answering for longer than the lease is not a mass leave
# (issue 37).  Four simulated nodes run "hpcinit watch" with discovery method shared,
# lease 3 s; every version of every node's hostfile and known_hosts is recorded as it is
# written (tests/faults/versions.py).  The share's server stops for four leases: a STAND-IN,
# tests/system/fuse_stall -a mounted on the shared directory inside every node (a file system
# that never answers below its top, as a hard NFS mount whose server died; killing it and
# unmounting is the server back, as in the fault campaign).  When it is back every record in
# it is past its lease -- no node could write meanwhile -- and no version may lack a live node.
# A node's own run fails while its share is away: that is the share's outage, not the node
# sick, so no record in the directory may say "state: failed" from the stall on (the old code's
# did, and hostfile.exclude: failed dropped a live node from its peers' hostfiles for a moment).
# Then a partition: the share stops answering in three nodes and not in the fourth, for lease
# + 2 s.  The fourth sees the other three records pass their lease together, which it cannot
# tell from three crashes: it holds them for the grace (modules/discovery/shared.c,
# settle_late) and no version of any node's files may lack a live node (the old code pruned
# them as a scale-in: N1's hostfiles of 1 host).
# Then a node is killed: it still leaves every hostfile, within lease + a refresh period.
SIM_PREFIX=sou SIM_NET=198.19.38
. "$(dirname "$0")/lib.sh"
LEASE=3
STALL=$TOP_BUILDDIR/tests/system/fuse_stall
[ -x "$STALL" ] || make -C "$TOP_BUILDDIR" tests/system/fuse_stall >/dev/null 2>&1 || true
if [ ! -x "$STALL" ] || [ ! -e /dev/fuse ]; then
	echo "SKIP: needs $STALL and /dev/fuse"
	exit 77
fi
VERSIONS=$TOP_SRCDIR/tests/faults/versions.py
now_ms() { python3 "$VERSIONS" now; }
etc_of() { echo "$SIM_STATE/nodes/$1/ovl/etc/upper"; }

N1=$(node 1) N2=$(node 2) N3=$(node 3) N4=$(node 4)
ALL=("$N1" "$N2" "$N3" "$N4")
sim up 4 --shared "$SHARED" >/dev/null
spec "${LEASE}s" 4 "ssh: {}" > "$T/node.yaml"
for n in "${ALL[@]}"; do install_spec "$n" "$T/node.yaml"; done
check "apply on 4 nodes (lease ${LEASE}s)" apply_all "$T/apply" "${ALL[@]}"
for n in "${ALL[@]}"; do on "$n" "$HPCINIT" watch >"$T/watch.$n" 2>&1 & done
sleep 2
for n in "${ALL[@]}"; do check "$n's hostfiles list the 4" hostfiles_list "$n" "${ALL[@]}"; done
args=()
for n in "${ALL[@]}"; do args+=("$n=$(etc_of "$n")"); done
python3 "$VERSIONS" "$T/versions" "${args[@]}" &
REC=$!
sleep 1

# Every record state written from here on, as the host sees the directory (a 20 ms poll).
NODES_DIR=$SHARED/.hpcinit/$CLUSTER/nodes
# And what N1's runs said (its /run/hpcinit/status.json, through a process of the node).
N1_RUN=/proc/$(cat "$SIM_STATE/nodes/$N1/sshd.pid")/root/run/hpcinit/status.json
( while [ -d "$T" ] && [ ! -e "$T/states.stop" ]; do
	grep -rH --include='*.rec' '^state: ' "$NODES_DIR" 2>/dev/null || true
	grep -ho '"tag": *"discovery[.a-z-]*"' "$N1_RUN" 2>/dev/null >>"$T/status-during" || true
	sleep 0.02
  done >"$T/states" ) &
STATES=$!

# stall NODE...: the share stops answering in these nodes (lib.sh's share_stall)
stall() {
	local n
	for n in "$@"; do
		share_stall "$STALL" "$SHARED" "$n" "$T/stall.$n" || echo "# the stand-in did not mount in $n within 5 s"
	done
}
# unstall NODE...: its server back in these nodes
unstall() {
	local n
	for n in "$@"; do share_unstall "$STALL" "$SHARED" "$n"; done
}

# The share stops answering for four leases, in every node at once.
t0=$(now_ms)
stall "${ALL[@]}"
sleep $((4 * LEASE))
# (the host sees the directory itself: what the nodes find when their server is back)
old=$(find "$SHARED/.hpcinit/$CLUSTER/nodes" -name '*.rec' -newermt "@$(($(date +%s) - LEASE))" | wc -l)
all=$(find "$SHARED/.hpcinit/$CLUSTER/nodes" -name '*.rec' | wc -l)
unstall "${ALL[@]}"
check "stall: when the share is back, its $all records are past their lease ($old written within it)" \
	test "$old" = 0 -a "$all" = 4
sleep $((3 * LEASE + 5))
lost=$(python3 "$VERSIONS" missing "$T/versions" "$t0" "$(now_ms)" "${ALL[@]}")
echo "# stall: $(awk -v t="$t0" '$1 >= t' "$T/versions" | wc -l) versions written from the stall to $((3 * LEASE + 5)) s after it"
[ -z "$lost" ] || echo "$lost" | head -20 | sed 's/^/#   lost: /'
check "stall: the share away $((4 * LEASE)) s (lease ${LEASE}s): no hostfile or known_hosts version lacked a live node" \
	test -z "$lost"
for n in "${ALL[@]}"; do check "$n's hostfiles list the 4 after the stall" hostfiles_list "$n" "${ALL[@]}"; done
touch "$T/states.stop"
wait "$STATES" 2>/dev/null || true
failed=$(grep 'state: failed' "$T/states" | sort -u)
echo "# record states seen from the stall on: $(sed 's/.*state: //' "$T/states" | sort | uniq -c | tr '\n' ' ')"
[ -z "$failed" ] || echo "$failed" | head -8 | sed 's/^/#   /'
echo "# $N1's status.json from the stall on, discovery's tags: $(sort "$T/status-during" 2>/dev/null | uniq -c | tr -s ' \n' ' ')"
check "stall: the record states were seen all along ($(wc -l <"$T/states") samples)" test "$(wc -l <"$T/states")" -gt 100
check "stall: no node's record said failed for its own share's outage (degraded at worst)" test -z "$failed"
check "stall: a run during it said why: the rendezvous unreachable (discovery.rendezvous.unreachable)" \
	grep -q "discovery.rendezvous.unreachable" "$T/status-during"

# A partition: the share away in N2, N3 and N4 for lease + 2 s; N1 reaches it all along.
sleep $((LEASE + 5))            # the stall's marks (shared-back) past their grace
# What N1's refreshes said from here on (its /run/hpcinit/refresh.json, a 20 ms poll).
( while [ -d "$T" ] && [ ! -e "$T/part.stop" ]; do
	grep -ho '[0-9]* of [0-9]* records not written for half the lease or more: most nodes stopped at once' \
		"${N1_RUN%/*}/refresh.json" 2>/dev/null || true
	sleep 0.02
  done >"$T/held-during" ) &
HELDP=$!
tp=$(now_ms)
stall "$N2" "$N3" "$N4"
sleep $((LEASE + 2))
unstall "$N2" "$N3" "$N4"
sleep $((2 * LEASE + 2))
touch "$T/part.stop"
wait "$HELDP" 2>/dev/null || true
lost=$(python3 "$VERSIONS" missing "$T/versions" "$tp" "$(now_ms)" "${ALL[@]}")
echo "# partition: $(awk -v t="$tp" '$1 >= t' "$T/versions" | wc -l) versions written from its start to $((2 * LEASE + 2)) s after it"
[ -z "$lost" ] || echo "$lost" | head -20 | sed 's/^/#   lost: /'
check "partition: $N1 reached the share, the 3 others not, $((LEASE + 2)) s (lease ${LEASE}s): no version lacked a live node" \
	test -z "$lost"
echo "# $N1's refreshes said: $(sort "$T/held-during" 2>/dev/null | uniq -c | tr -s ' \n' ' ')"
check "partition: $N1's refreshes held the 3 records past their lease, not pruned" \
	grep -q "^3 of 3 records not written for half the lease" "$T/held-during"
for n in "${ALL[@]}"; do check "$n's hostfiles list the 4 after the partition" hostfiles_list "$n" "${ALL[@]}"; done

# A node killed: still gone from every other hostfile, not before its lease.
for p in $(ip netns pids "$N4"); do
	tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q "^$HPCINIT watch" && kpid=$p
done
tk=$(now_ms)
kill -KILL "$kpid"
sleep $((3 * LEASE + 4))
drops=$(python3 "$VERSIONS" missing "$T/versions" "$tk" 99999999999 "$N4" |
	awk -v n="$N4" '$2 == "hostfile.plain" && $1 != n {print $1, $4}' | sort -k1,1 -u -s)
echo "# crash: $N4's watch killed; dropped from each hostfile after: $(awk -v t="$tk" '{printf "%s %d ms; ", $1, $2 - t}' <<<"$drops")"
check "crash: every other hostfile dropped $N4" test "$(echo "$drops" | grep -c .)" = 3
check "crash: none before 2/3 of its lease" \
	test -z "$(awk -v t="$tk" -v l=$((LEASE * 2000 / 3)) '$2 - t < l' <<<"$drops")"
kill "$REC" 2>/dev/null || true
wait "$REC" 2>/dev/null || true
grep -h "refresh exit" "$T"/watch.* | sed 's/^/# /' | tail -12
done_testing
