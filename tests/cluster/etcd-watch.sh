#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Second-scale membership with "hpcinit watch", for discovery method etcd
# (a real 3-member etcd) and then for method shared (the simulated NFS
# directory), on four simulated nodes that each run the watch:
#   - a 5th node joins (apply, then its watch): it is in every node's hostfile within seconds;
#   - it leaves gracefully (hpcinit leave): gone from every hostfile within seconds;
#   - apply joins it again; a leave by hand next to its own running watch holds (the
#     watch's refreshes do not put the record back);
#   - a node is killed (no leave): gone once its lease (3 s here) has run out;
#   - etcd: the watch renews its lease while its refresh waits for the run lock, and puts its
#     key again at once when the lease was gone meanwhile.
# The latencies are printed; the checks allow WITHIN seconds.
SIM_PREFIX=ewa SIM_NET=198.19.32
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/etcd-lib.sh"
WITHIN=${WITHIN:-5}
LEASE=3s

# hostfile NODE: the node's plain hostfile, read from its overlay on the host side (no nsenter:
# the poll below stays cheap)
hostfile() { cat "$SIM_STATE/nodes/$1/ovl/etc/upper/hpcinit/hostfile.plain" 2>/dev/null || true; }
# wait_all PRESENT|ABSENT NAME SECONDS NODE...: until NAME is (not) in every NODE's hostfile;
# prints the milliseconds it took; fails after SECONDS
wait_all() {
	local want=$1 name=$2 secs=$3 t0 n ok
	shift 3
	t0=$(date +%s%N)
	while :; do
		ok=1
		for n in "$@"; do
			if hostfile "$n" | grep -qx "$name"; then
				[ "$want" = PRESENT ] || { ok=0; break; }
			else
				[ "$want" = ABSENT ] || { ok=0; break; }
			fi
		done
		[ "$ok" = 0 ] || { echo $((($(date +%s%N) - t0) / 1000000)); return 0; }
		[ $(($(date +%s%N) - t0)) -lt $((secs * 1000000000)) ] || { echo "timeout"; return 1; }
		sleep 0.02
	done
}
start_watch() {
	local n
	for n in "$@"; do
		on "$n" "$HPCINIT" watch >"$T/watch.$n" 2>&1 &
	done
}

# leave_holds METHOD NODE OTHERS...: "hpcinit apply" after a leave joins again; a leave run by hand
# next to the node's own running watch holds: the watch's refreshes (its lease found gone, the
# shared method's renewals every third of the lease) do not put the record back.
leave_holds() {
	local method=$1 n=$2 ms wpid p
	shift 2
	run_hpc "$T/rejoin" "$n" apply
	ms=$(wait_all PRESENT "$n" "$WITHIN" "$@") || true
	check "$method: hpcinit apply after a leave joins again (in every hostfile after $ms ms)" \
		test "$ms" != timeout -a "$rc" = 0
	on "$n" "$HPCINIT" watch >"$T/watch-left.$n" 2>&1 &
	sleep 1
	run_hpc "$T/leave-w" "$n" leave
	ms=$(wait_all ABSENT "$n" "$WITHIN" "$@") || true
	check "$method: a leave by hand next to the node's own watch: gone everywhere ($ms ms)" \
		test "$ms" != timeout -a "$rc" = 0
	sleep $((2 * ${LEASE%s}))       # two leases: renewals and lease checks of the watch ran
	check "$method: ... and still gone after two leases with the watch running" \
		wait_all ABSENT "$n" 0 "$@"
	if [ "$method" = etcd ]; then
		check "etcd: ... its key stays gone" test -z "$(etcdctl_ get --keys-only "/hpcinit/$CLUSTER/nodes/$n")"
	else
		check "shared: ... its record stays gone" test ! -e "$SHARED/.hpcinit/$CLUSTER/nodes/$n.rec"
	fi
	hpc "$n" refresh -v >"$T/refresh-left" 2>&1 || true
	check "$method: ... a refresh says the node left and how to join again" \
		grep -q "left cluster $CLUSTER at .*until \"hpcinit apply\"" "$T/refresh-left"
	wpid=$(watch_pid "$n")
	check "$method: ... the watch was still running" test -n "$wpid"
	[ -z "$wpid" ] || { kill "$wpid"; while kill -0 "$wpid" 2>/dev/null; do sleep 0.1; done; }
}
# watch_pid NODE: the PID of the node's "hpcinit watch" (ours; the node's namespace holds it), if any
watch_pid() {
	local p wpid=""
	for p in $(ip netns pids "$1"); do
		tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q "^$HPCINIT watch" && wpid=$p
	done
	echo "$wpid"
}

# leave_waits_for_apply NODE: a leave racing an apply takes the run lock after it.  The apply
# waits for peers that never come (expect 9, wait 4 s) and renews its record on the way (every
# third of the 3 s lease); a leave started meanwhile waits for it, so the record is gone once both
# ended.  (Without the lock, the apply's next renewal would put the record back after the leave.)
# The apply joins a new cluster ($CLUSTER-new): in $CLUSTER, formed long ago, nobody waits.
leave_waits_for_apply() {
	local n=$1 t0 took apid
	etcd_spec "$LEASE" 9 | sed -e 's/wait: 60s/wait: 4s/' -e "s/name: $CLUSTER,/name: $CLUSTER-new,/" |
		on "$n" tee /etc/hpcinit/wait.yaml >/dev/null
	on "$n" rm -f /run/hpcinit/discovery-ready     # expect counts again (not "reached earlier")
	hpc "$n" apply -c /etc/hpcinit/wait.yaml >"$T/race-apply" 2>&1 &
	apid=$!
	for _ in $(seq 1 50); do
		[ -z "$(etcdctl_ get --keys-only "/hpcinit/$CLUSTER-new/nodes/$n")" ] || break
		sleep 0.1
	done
	sleep 0.5
	t0=$(date +%s%N)
	run_hpc "$T/race-leave" "$n" leave -c /etc/hpcinit/wait.yaml
	took=$((($(date +%s%N) - t0) / 1000000))
	wait "$apid" || true
	echo "# etcd: a leave during an apply's wait for peers returned after $took ms"
	check "etcd: leave during an apply: waits for the run lock (another run holds it)" \
		contains "$T/race-leave" "holds"
	check "etcd: ... the apply did wait for peers meanwhile" contains "$T/race-apply" "of 9 expected nodes"
	check "etcd: ... then removes the record and exits 0" \
		test "$rc" = 0 -a -n "$(grep '^leave: changed: .*removed' "$T/race-leave")"
	check "etcd: ... and the record stays gone after the apply ended" \
		test -z "$(etcdctl_ get --keys-only "/hpcinit/$CLUSTER-new/nodes/$n")"
}

# compaction NODE: a watch whose revision was compacted away lists the membership again (never a
# crash, never a stale view).  The helper's watch is started from a revision older than an
# "etcdctl compact"; the running watches must go on working (the kill below needs them).
compaction() {
	local n=$1 old now prefix=/hpcinit/$CLUSTER/nodes/ k
	old=$(etcdctl_ get -w json /hpcinit-test/none | sed 's/.*"revision":\([0-9]*\).*/\1/')
	for k in 1 2 3; do etcdctl_ put "/hpcinit-test/other" "$k" >/dev/null; done
	now=$(etcdctl_ get -w json /hpcinit-test/none | sed 's/.*"revision":\([0-9]*\).*/\1/')
	etcdctl_ compact "$now" >/dev/null
	on "$n" timeout 3 "${HPCINIT_LIBEXEC_DIR:-$TOP_BUILDDIR}/hpcinit-etcd" --endpoint "$(etcd_client_url 2)" \
		watch "$prefix" "$old" >"$T/compact.out" 2>"$T/compact.err" || true
	echo "# etcd: compacted to revision $now; a watch from revision $old:"
	sed 's/^/#   stderr: /' "$T/compact.err"
	check "etcd: a watch from a compacted revision ($old < $now) says so" \
		contains "$T/compact.err" "revision compacted"
	check "etcd: ... and starts over with the whole membership: reset, the 4 keys, synced" \
		same_text "$(grep -a -E '^(reset|synced)$|^kv ' "$T/compact.out" | head -6 | sed 's/^kv .*/kv/')" \
		"$(printf 'reset\nkv\nkv\nkv\nkv\nsynced')"
	check "etcd: ... the keys of the 4 members" \
		same_text "$(grep -a -o "${prefix}[a-z0-9-]*# hpcinit peer record" "$T/compact.out" | sed 's/# hpcinit peer record$//' | sort -u)" \
		"$(printf "${prefix}%s\n" "$(node 1)" "$(node 2)" "$(node 3)" "$(node 4)")"
	check "etcd: every node's watch is still running after the compaction" \
		test "$(grep -c "the etcd watch ended" "$T"/watch.* | awk -F: '{s += $2} END {print s}')" = 0
}

# lock_keepalive NODE: the watch renews its lease while its refresh waits for the run lock.  Another
# run holds /run/hpcinit/lock for three leases (flock(1) here; a slow refresh timer's run in the
# fault campaign, seed 301) while a membership change makes the watch refresh: its key must stay
# in etcd all along (no DELETE event), as the keepalive every third of the lease keeps it.  Then
# a change (the junk key deleted) is refreshed at once: the next refresh is held as long as the CPU
# the last used, not as long as it took (it held it for the 9 s of the wait, and at 1,000 nodes
# on one machine a leave reached the watchers 20 s late); its key must stay for a lease after
# that too.
lock_keepalive() {
	local n=$1 key=/hpcinit/$CLUSTER/nodes/$1 hold=$((3 * ${LEASE%s})) epid r0 t0 ms=timeout
	etcdctl_ watch "$key" >"$T/lockwatch.ev" 2>&1 &
	epid=$!
	sleep 0.5
	on "$n" flock /run/hpcinit/lock sleep "$hold" &
	sleep 0.5
	r0=$(grep -c 'refresh exit' "$T/watch.$n" || true)
	etcdctl_ put "/hpcinit/$CLUSTER/nodes/zz-change" junk >/dev/null
	wait $! || true
	for _ in $(seq 1 30); do [ -n "$(etcdctl_ get --keys-only "$key")" ] && break; sleep 0.1; done
	# the refresh that waited for the lock has ended; then the change
	for _ in $(seq 1 100); do [ "$(grep -c 'refresh exit' "$T/watch.$n" || true)" -gt "$r0" ] && break; sleep 0.1; done
	r0=$(grep -c 'refresh exit' "$T/watch.$n" || true)
	t0=$(date +%s%N)
	etcdctl_ del "/hpcinit/$CLUSTER/nodes/zz-change" >/dev/null
	for _ in $(seq 1 30); do [ "$(grep -c 'refresh exit' "$T/watch.$n" || true)" -gt "$r0" ] && { ms=$((($(date +%s%N) - t0) / 1000000)); break; }; sleep 0.1; done
	check "etcd: the change after the lock's release is refreshed within 3 s, not held for the ${hold} s the last refresh waited (took $ms ms)" \
		test "$ms" != timeout
	sleep $((${LEASE%s} + 1))
	# the function's subshell and its etcdctl (ip netns exec runs it as the subshell's child)
	pkill -P "$epid" 2>/dev/null || true
	kill "$epid" 2>/dev/null || true
	wait "$epid" 2>/dev/null || true
	check "etcd: the watch's refresh waited for the run lock another run held for ${hold} s" \
		contains "$T/watch.$n" "holds /run/hpcinit/lock"
	check "etcd: ... and its key stayed in etcd meanwhile and a lease after: the watch renewed the ${LEASE} lease while it waited and while it held the next refresh (no DELETE)" \
		bash -c "! grep -q '^DELETE' '$T/lockwatch.ev'"
	if grep -q '^DELETE' "$T/lockwatch.ev"; then grep -a -E '^(PUT|DELETE)' "$T/lockwatch.ev" | sed 's/^/#   key event: /'; fi
	check "etcd: ... and is there after the lock was released" test -n "$(etcdctl_ get --keys-only "$key")"
}

# lease_gone_while_waiting NODE: the node's lease ends (revoked here; etcd ends it so after an
# outage longer than the lease) while its watch's refresh waits for the run lock.  The keepalive
# finds it gone; once the lock is free the watch puts its key again at once (the keepalive's
# refresh), not only at its next change.
lease_gone_while_waiting() {
	local n=$1 key=/hpcinit/$CLUSTER/nodes/$1 hold=$((3 * ${LEASE%s})) fpid id t0 ms=timeout
	on "$n" flock /run/hpcinit/lock sleep "$hold" &
	fpid=$!
	sleep 0.5
	etcdctl_ put "/hpcinit/$CLUSTER/nodes/zz-change" junk >/dev/null
	for _ in $(seq 1 50); do grep -q "holds /run/hpcinit/lock" "$T/watch.$n" && break; sleep 0.1; done
	id=$(etcdctl_ get -w json "$key" | sed -n 's/.*"lease":\([0-9]*\).*/\1/p')
	etcdctl_ lease revoke "$(printf '%x' "$id")" >/dev/null
	wait "$fpid" || true
	t0=$(date +%s%N)
	while [ $(($(date +%s%N) - t0)) -lt $((2 * ${LEASE%s} * 1000000000)) ]; do
		[ -z "$(etcdctl_ get --keys-only "$key")" ] || { ms=$((($(date +%s%N) - t0) / 1000000)); break; }
		sleep 0.1
	done
	echo "# etcd: lease revoked during a wait for the lock: key back $ms ms after the lock was free"
	check "etcd: the refresh waited for the lock" contains "$T/watch.$n" "holds /run/hpcinit/lock"
	check "etcd: a lease gone while the watch waited for the run lock: its key is back within two leases of the lock's release, before its held refresh (took $ms ms)" \
		test "$ms" != timeout
	etcdctl_ del "/hpcinit/$CLUSTER/nodes/zz-change" >/dev/null
}

scenario() {
	local method=$1 n ms rc5
	local N1 N2 N3 N4 N5
	N1=$(node 1) N2=$(node 2) N3=$(node 3) N4=$(node 4) N5=$(node 5)
	local FOUR=("$N1" "$N2" "$N3" "$N4")
	if [ "$method" = etcd ]; then
		sim up 4 >/dev/null
		etcd_up
		etcd_spec "$LEASE" 4 > "$T/node.yaml"
	else
		rm -rf "$SHARED/.hpcinit"
		sim up 4 --shared "$SHARED" >/dev/null
		spec "$LEASE" 4 > "$T/node.yaml"
	fi
	for n in "${FOUR[@]}"; do install_spec "$n" "$T/node.yaml"; done
	check "$method: apply on 4 nodes" apply_all "$T/apply" "${FOUR[@]}"
	start_watch "${FOUR[@]}"
	sleep 1

	# A 5th node joins: it applies, then starts its watch, which keeps its record (a lease of 3 s:
	# without a renewal, on a loaded machine the record ran out before the leave below).
	sim add 1 >/dev/null
	install_spec "$N5" "$T/node.yaml"
	run_hpc "$T/apply5" "$N5" apply
	rc5=$rc
	on "$N5" "$HPCINIT" watch >"$T/watch5.$N5" 2>&1 &
	ms=$(wait_all PRESENT "$N5" "$WITHIN" "${FOUR[@]}") || true
	echo "# $method: join: $N5 in all 4 other hostfiles $ms ms after its apply returned (exit $rc5)"
	check "$method: a 5th node joins: in every hostfile within $WITHIN s (took $ms ms)" \
		test "$ms" != timeout -a "$rc5" = 0
	check "$method: the 5th node's own hostfile lists all 5" \
		hostfiles_list "$N5" "$N1" "$N2" "$N3" "$N4" "$N5"

	# It leaves gracefully.
	run_hpc "$T/leave5" "$N5" leave
	check "$method: hpcinit leave exits 0" test "$rc" = 0
	check "$method: ... and says what it removed" grep -q "^leave: changed: .*removed" "$T/leave5"
	ms=$(wait_all ABSENT "$N5" "$WITHIN" "${FOUR[@]}") || true
	echo "# $method: leave: $N5 gone from all 4 hostfiles $ms ms after hpcinit leave returned"
	check "$method: the leaver is gone from every hostfile within $WITHIN s (took $ms ms)" test "$ms" != timeout
	run_hpc "$T/leave5b" "$N5" leave
	check "$method: a second leave has nothing to remove and exits 0" \
		grep -q "^leave: ok: " "$T/leave5b"
	wpid=$(watch_pid "$N5")
	[ -z "$wpid" ] || { kill "$wpid"; while kill -0 "$wpid" 2>/dev/null; do sleep 0.1; done; }
	leave_holds "$method" "$N5" "${FOUR[@]}"
	[ "$method" != etcd ] || leave_waits_for_apply "$N5"
	sim del "$N5"
	[ "$method" != etcd ] || compaction "$N1"
	[ "$method" != etcd ] || lease_gone_while_waiting "$N3"
	[ "$method" != etcd ] || lock_keepalive "$N2"

	# A node is killed: no leave, its watch dies with it; it is gone once its lease has run out.
	sim del "$N4"
	ms=$(wait_all ABSENT "$N4" $((WITHIN + 5)) "$N1" "$N2" "$N3") || true
	echo "# $method: kill: $N4 gone from the other 3 hostfiles $ms ms after it was killed (lease $LEASE)"
	check "$method: a killed node is gone after its lease ($LEASE) within $((WITHIN + 5)) s (took $ms ms)" \
		test "$ms" != timeout
	for n in "$N1" "$N2" "$N3"; do
		check "$method: $n: hostfiles list the 3 survivors" hostfiles_list "$n" "$N1" "$N2" "$N3"
	done
	grep "refresh exit" "$T/watch.$N1" | sed "s/^/# $method: $N1: /"
	check "$method: the watch logged its refreshes" grep -q "membership changed.*: refresh exit 0" "$T/watch.$N1"
	if [ "$method" = etcd ]; then
		check "etcd: ... on the membership its stream keeps, without listing etcd again" \
			grep -q "membership changed (the stream's view, no list): refresh exit 0" "$T/watch.$N1"
		check "etcd: ... each refresh says where its time went" \
			grep -Eq "refresh exit 0 in [0-9]+ ms \(discovery [0-9]+, .*hostfile [0-9]+\)" "$T/watch.$N1"
	fi
	if [ "$method" = etcd ]; then
		check "etcd: the killed node's key is gone (lease expired)" \
			test -z "$(etcdctl_ get --keys-only "/hpcinit/$CLUSTER/nodes/$N4")"
		check "etcd: the watch runs without libcurl in the agent: hpcinit maps no libcurl" \
			bash -c "! grep -q libcurl /proc/\$(pgrep -f -n '$HPCINIT watch')/maps"
		scheduled_events "$N1" "$N2" "$N3"
		etcd_stop
	fi
	sim down
}

# Azure Scheduled Events: a STAND-IN for the instance metadata service (python3 http.server,
# inside the new node, on its 127.0.0.1), serving the documented JSON.  While the file
# $T/imds/terminate is absent it lists no event; then one Terminate for this VM
# ("simvmss_6").  A POST (the acknowledgement) is saved to $T/imds/ack.
scheduled_events() {
	local NEW ms
	mkdir -p "$T/imds"
	cat > "$T/imds/standin.py" <<-'PY'
	# Stand-in for Azure IMDS scheduled events (tests only; not the real service).
	import http.server, json, os, sys
	D = sys.argv[2]
	class H(http.server.BaseHTTPRequestHandler):
	    def reply(self, body, ctype):
	        self.send_response(200)
	        self.send_header("Content-Type", ctype)
	        self.send_header("Content-Length", str(len(body)))
	        self.end_headers()
	        self.wfile.write(body)
	    def do_GET(self):
	        if self.headers.get("Metadata") != "true":
	            self.send_response(400); self.end_headers(); return
	        if self.path.startswith("/metadata/instance/compute/name"):
	            return self.reply(b"simvmss_6", "text/plain")
	        ev = []
	        if os.path.exists(D + "/terminate"):
	            ev = [{"EventId": "602d9444-d2cd-49c7-8624-8643e7171297", "EventType": "Terminate",
	                   "ResourceType": "VirtualMachine", "Resources": ["simvmss_6"],
	                   "EventStatus": "Scheduled", "NotBefore": "Mon, 23 Nov 2026 18:00:00 GMT",
	                   "Description": "Virtual machine is being deleted.", "EventSource": "Platform",
	                   "DurationInSeconds": -1}]
	        self.reply(json.dumps({"DocumentIncarnation": 2 if ev else 1, "Events": ev}).encode(),
	                   "application/json")
	    def do_POST(self):
	        n = int(self.headers.get("Content-Length", "0"))
	        open(D + "/ack", "wb").write(self.rfile.read(n))
	        self.reply(b"", "application/json")
	    def log_message(self, *a):
	        pass
	http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
	PY
	NEW=$(sim add 1)
	on "$NEW" python3 "$T/imds/standin.py" 8089 "$T/imds" &
	etcd_spec "$LEASE" 4 | sed "/^discovery:/s|}\$|, scheduled_events: {enable: true, url: \"http://127.0.0.1:8089/metadata/scheduledevents?api-version=2020-07-01\"}}|" > "$T/node6.yaml"
	install_spec "$NEW" "$T/node6.yaml"
	run_hpc "$T/apply6" "$NEW" apply
	check "events: a node with scheduled_events enabled applies" test "$rc" = 0
	on "$NEW" "$HPCINIT" watch >"$T/watch.$NEW" 2>&1 &
	ms=$(wait_all PRESENT "$NEW" "$WITHIN" "$@") || true
	check "events: it is in every hostfile (took $ms ms)" test "$ms" != timeout
	sleep 1.5
	check "events: no event yet: still a member, nothing acknowledged" test ! -e "$T/imds/ack"
	touch "$T/imds/terminate"
	ms=$(wait_all ABSENT "$NEW" "$WITHIN" "$@") || true
	echo "# events: $NEW gone from the other hostfiles $ms ms after its Terminate event was posted"
	check "events: a Terminate for this VM: it leaves, gone from every hostfile within $WITHIN s (took $ms ms)" \
		test "$ms" != timeout
	for _ in $(seq 1 50); do [ -s "$T/imds/ack" ] && break; sleep 0.1; done
	check "events: ... then acknowledges it (StartRequests with its EventId)" \
		same_text "$(cat "$T/imds/ack" 2>/dev/null)" '{"StartRequests":[{"EventId":"602d9444-d2cd-49c7-8624-8643e7171297"}]}'
	check "events: the watch says why it left" contains "$T/watch.$NEW" "scheduled event 602d9444-d2cd-49c7-8624-8643e7171297: Terminate of this VM"
	check "events: its key is gone from etcd" test -z "$(etcdctl_ get --keys-only "/hpcinit/$CLUSTER/nodes/$NEW")"
}

scenario etcd
scenario shared
done_testing
