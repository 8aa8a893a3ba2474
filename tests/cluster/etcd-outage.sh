#!/bin/bash
# SPDX-License-Identifier: MIT
#
# An etcd outage is not a mass leave (issue 37).  Four simulated nodes run "hpcinit watch"
# against a real 3-member etcd with discovery.lease 3 s; every version of every node's
# hostfile and known_hosts is recorded as it is written (tests/faults/versions.py), and no
# version may lack a live node:
#   - every member stopped (SIGSTOP) for over three leases, then continued: etcd revokes
#     every lease at once on resume, each node's watch takes a new one and puts its record
#     again -- the others' records are gone from etcd for that moment, never from a file;
#   - the leader killed (a leader change), restarted after two leases;
#   - two of three members killed (majority lost) for over two leases, then restarted;
#   - a graceful leave still reaches every hostfile at once (its tombstone);
#   - a watching node killed (SIGKILL, no leave): every other hostfile drops it, not before
#     its lease can have ended and the grace passed, and within the bound docs/cluster.md
#     states (lease + grace + the debounce and a refresh; 2 s allowed for them here).
SIM_PREFIX=eou SIM_NET=198.19.37
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/etcd-lib.sh"
LEASE=3
GRACE=5         # the grace a vanished record is held (docs/discovery.md: the lease, at least 5 s)
VERSIONS=$TOP_SRCDIR/tests/faults/versions.py
now_ms() { python3 "$VERSIONS" now; }
etc_of() { echo "$SIM_STATE/nodes/$1/ovl/etc/upper"; }

N1=$(node 1) N2=$(node 2) N3=$(node 3) N4=$(node 4)
ALL=("$N1" "$N2" "$N3" "$N4")
sim up 4 >/dev/null
etcd_up
etcd_spec "${LEASE}s" 4 "ssh: {}" > "$T/node.yaml"
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
check "the recorder sees every node's hostfile and known_hosts" \
	test "$(awk '{print $2, $3}' "$T/versions" | sort -u | wc -l)" = 8

# no_loss WHAT T0 NODE...: no version written since T0 lacks one of NODE
no_loss() {
	local what=$1 t0=$2 lost
	shift 2
	lost=$(python3 "$VERSIONS" missing "$T/versions" "$t0" "$(now_ms)" "$@")
	echo "# $what: $(awk -v t="$t0" '$1 >= t' "$T/versions" | wc -l) versions written since the fault"
	[ -z "$lost" ] || echo "$lost" | head -20 | sed 's/^/#   lost: /'
	check "$what: no hostfile or known_hosts version lacked a live node" test -z "$lost"
}
# drops NAME T0: "NODE MS" of the first hostfile.plain of each node written since T0 without NAME
drops() {
	python3 "$VERSIONS" missing "$T/versions" "$2" 99999999999 "$1" |
		awk -v n="$1" '$2 == "hostfile.plain" && $1 != n {print $1, $4}' | sort -k1,1 -u -s
}
leases() { etcdctl_ get --prefix "/hpcinit/$CLUSTER/nodes/" -w json | grep -o '"lease":[0-9]*' | sort; }

# 1. Every member stopped for over three leases, then continued.
before=$(leases)
t0=$(now_ms)
kill -STOP "${ETCD_PIDS[@]}"
sleep $((3 * LEASE + 1))
kill -CONT "${ETCD_PIDS[@]}"
sleep $((LEASE + GRACE + 3))
after=$(leases)
check "outage: etcd revoked the expired leases on resume (every record under a new lease now)" \
	test -z "$(comm -12 <(echo "$before") <(echo "$after"))" -a "$(echo "$after" | wc -l)" = 4
no_loss "outage: every member stopped $((3 * LEASE + 1)) s (lease ${LEASE}s)" "$t0" "${ALL[@]}"

# 2. A leader change: the leader killed, restarted after two leases.
leader=$(etcdctl_ endpoint status -w json | python3 -c '
import json, sys
for e in json.load(sys.stdin):
    s = e["Status"]
    if s["header"]["member_id"] == s["leader"]:
        print(e["Endpoint"].rsplit(":", 1)[1])')
t0=$(now_ms)
for i in 1 2 3; do [ "$(etcd_client_url "$i")" != "http://$ETCD_HOST:$leader" ] || L=$i; done
check "leader: found the leader (m${L:-?})" test -n "${L:-}"
etcd_kill "$L"
sleep $((2 * LEASE))
etcd_start_member "$L"
sleep $((LEASE + GRACE))
no_loss "leader change: m$L killed" "$t0" "${ALL[@]}"

# 3. Majority lost for over two leases.
t0=$(now_ms)
etcd_kill 1
etcd_kill 2
sleep $((2 * LEASE + 1))
etcd_start_member 1
etcd_start_member 2
sleep $((LEASE + GRACE + 3))
no_loss "majority lost $((2 * LEASE + 1)) s" "$t0" "${ALL[@]}"

# 4. A graceful leave is not held: gone from every hostfile at once (its tombstone).
t1=$(now_ms)
run_hpc "$T/leave" "$N4" leave
for _ in $(seq 1 40); do [ "$(drops "$N4" "$t1" | wc -l)" -ge 3 ] && break; sleep 0.1; done
echo "# leave: $N4 dropped (from the start of hpcinit leave) after: $(drops "$N4" "$t1" | awk -v t="$t1" '{printf "%s %d ms; ", $1, $2 - t}')"
check "leave: $N4 left (exit $rc) and is gone from the 3 other hostfiles within 4 s (not held as a suspect)" \
	test "$rc" = 0 -a "$(drops "$N4" "$t1" | wc -l)" = 3
run_hpc "$T/rejoin" "$N4" apply
check "leave: $N4 applies again (joins)" test "$rc" = 0
sleep 2

# 5. A watching node killed: gone within lease + grace + 2 s, never before its lease can have
# ended (2/3 of a lease after the kill: its last renewal) and the grace passed.
for p in $(ip netns pids "$N4"); do
	tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q "^$HPCINIT watch" && kill "$p"
done
on "$N4" "$HPCINIT" watch >"$T/watch4b" 2>&1 &
sleep 2
no_loss "rejoin: $N4 back in every file" "$(now_ms)" "${ALL[@]}"
kpid=""
for p in $(ip netns pids "$N4"); do
	tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q "^$HPCINIT watch" && kpid=$p
done
tk=$(now_ms)
kill -KILL "$kpid"
sleep $((LEASE + GRACE + 4))
drops=$(drops "$N4" "$tk")
echo "# crash: $N4's watch killed; dropped from each hostfile after: $(awk -v t="$tk" '{printf "%s %d ms; ", $1, $2 - t}' <<<"$drops")"
check "crash: every other hostfile dropped $N4" test "$(echo "$drops" | grep -c .)" = 3
check "crash: none before its lease can have ended and the grace passed ($((LEASE * 2000 / 3 + GRACE * 1000)) ms)" \
	test -z "$(awk -v t="$tk" -v l=$((LEASE * 2000 / 3 + GRACE * 1000)) '$2 - t < l' <<<"$drops")"
check "crash: all within lease + grace + 2 s ($((LEASE + GRACE + 2)) s)" \
	test -z "$(awk -v t="$tk" -v b=$(((LEASE + GRACE + 2) * 1000)) '$2 - t > b' <<<"$drops")"
kill "$REC" 2>/dev/null || true
wait "$REC" 2>/dev/null || true
grep -h "refresh exit" "$T"/watch.* | sed 's/^/# /' | tail -12
etcd_stop
done_testing
