#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A join and a leave in an N-node cluster as ONE node sees them, with etcd carrying the whole
# cluster's load: N members in one etcd member on 127.0.0.1 and N watch streams on them, of which
# K (default 10) are real nodes (fake roots: "hpcinit apply", then "hpcinit watch") and N - K are
# stand-ins: N - K records in the real format (tests/bench/gen-records, HMAC-signed) and N - K
# watch streams held by one process (python3, named as a stand-in for the other nodes' "hpcinit
# watch": etcd sends every change to every stream, which is what the other nodes cost etcd; their
# refreshes run on their own nodes' CPUs, not on this machine's).  etcd-load.sh runs all N as
# real watchers on this machine's cores, where the join's and leave's time is bounded below by
# N refreshes' CPU divided by the cores; this one measures what a node of a real cluster waits.
# Printed for a join (node N+1's apply) and its leave ("hpcinit leave"): the time until all K
# real watchers' hostfiles list it (no longer list it), from the command returning and from
# etcd taking the change; the real watchers' CPU; etcd's CPU, requests and bytes; the stand-in
# streams' events.  Goals (issue 37): a join reaching every watcher under 1 s, a leave under 2 s.
# Usage: tests/bench/etcd-fanout.sh [N] [K] [ROUNDS]   (root; run by hand, not by make check)
#        N=1000, K=10, ROUNDS=3 joins and leaves (each printed, then the worst);
#        LEASE=60; BENCH_DISK=node|host (tests/bench/node-disk.sh)
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${TOP_BUILDDIR:-$TOP/build}
HPCINIT=${HPCINIT:-$BUILD/hpcinit}
export HPCINIT_LIBEXEC_DIR=${HPCINIT_LIBEXEC_DIR:-$BUILD}
N=${1:-1000} K=${2:-10} ROUNDS=${3:-3}
LEASE=${LEASE:-60}
[[ $N =~ ^[1-9][0-9]*$ && $K =~ ^[1-9][0-9]*$ && $ROUNDS =~ ^[1-9][0-9]*$ && $K -le $N ]] ||
	{ echo "usage: $0 [N] [K <= N] [ROUNDS]" >&2; exit 2; }
PORT=23479
GEN=$BUILD/tests/bench/gen-records
[ -x "$GEN" ] || make -s -C "$BUILD" tests/bench/gen-records
for c in etcd etcdctl python3 curl; do
	command -v "$c" >/dev/null || { echo "etcd-fanout.sh: needs $c" >&2; exit 2; }
done
. "$TOP/tests/bench/node-disk.sh"
. "$TOP/tests/bench/etcd-bench-lib.sh"
T=$(mktemp -d /tmp/hpcinit-bench-fanout.XXXXXX)
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "${T:?}"/*
	node_disk_release
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
node_disk "$T"
ulimit -n "$(ulimit -Hn)"
etcd --name f1 --data-dir "$T/etcd" --listen-client-urls "http://127.0.0.1:$PORT" \
	--advertise-client-urls "http://127.0.0.1:$PORT" --listen-peer-urls "http://127.0.0.1:$((PORT + 1))" \
	--initial-advertise-peer-urls "http://127.0.0.1:$((PORT + 1))" \
	--initial-cluster "f1=http://127.0.0.1:$((PORT + 1))" >"$T/etcd.log" 2>&1 &
PIDS+=($!)
etcd_pid=$!
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done
etcd_cpu() { awk -v t="$(getconf CLK_TCK)" '{printf "%d", ($14 + $15) * 1000 / t}' "/proc/$etcd_pid/stat"; }
etcd_rb() { echo $(($(metric etcd_network_client_grpc_received_bytes_total) + $(metric etcd_network_client_grpc_sent_bytes_total))); }

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$T/cluster.key"
chmod 0600 "$T/cluster.key"
mkroot() {
	local R=$1
	mkdir -p "$R/etc/hpcinit" "$R/etc/ssh" "$R/etc/openmpi" "$R/run/hpcinit"
	printf 'root:x:0:0:root:/root:/bin/bash\n' > "$R/etc/passwd"
	echo "# This is the default hostfile for Open MPI." > "$R/etc/openmpi/openmpi-default-hostfile"
	install -m 0600 "$T/cluster.key" "$R/etc/hpcinit/cluster.key"
	cat > "$R/etc/hpcinit/node.yaml" <<-EOF
	version: 1
	cluster: {name: bench, network: 10.0.0.0/8, secret_file: /etc/hpcinit/cluster.key}
	discovery: {method: etcd, endpoints: ["http://127.0.0.1:$PORT"], expect: $N, wait: 120s, lease: ${LEASE}s}
	hostfile: {}
	EOF
}
addr() { local n=$(($1 + 256)); echo "10.$((n >> 16 & 255)).$((n >> 8 & 255)).$((n & 255))"; }

echo "join and leave as a node of $N sees them: $K real watchers, $((N - K)) stand-in members and watch streams; one etcd member, $(nproc) cores, lease ${LEASE}s; load average $(cut -d' ' -f1-3 /proc/loadavg) before"
# The stand-ins' records (node names syn1..), put by one curl process through the JSON gateway.
"$GEN" -s "$T/cluster.key" -e /hpcinit/bench/nodes/ -u "http://127.0.0.1:$PORT/v3/kv/put" \
	-n 10.200 x bench $((N - K)) > "$T/put.curl"
curl -s -K "$T/put.curl" >/dev/null
# The stand-in watch streams: one process, N - K streams on the members' prefix, each read to
# its end; on SIGTERM it prints the events and bytes it was sent.
cat > "$T/streams.py" <<'EOF'
import asyncio, base64, json, signal, sys
port, n = int(sys.argv[1]), int(sys.argv[2])
prefix = b"/hpcinit/bench/nodes/"
end = prefix[:-1] + bytes([prefix[-1] + 1])
body = json.dumps({"create_request": {"key": base64.b64encode(prefix).decode(),
                                      "range_end": base64.b64encode(end).decode()}}).encode()
req = (b"POST /v3/watch HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
       b"Content-Length: %d\r\n\r\n" % len(body)) + body
stats = {"bytes": 0, "events": 0, "open": 0}
async def stream():
    r, w = await asyncio.open_connection("127.0.0.1", port)
    w.write(req)
    await w.drain()
    stats["open"] += 1
    while True:
        b = await r.read(65536)
        if not b:
            break
        stats["bytes"] += len(b)
        stats["events"] += b.count(b'"kv":')
async def main():
    tasks = [asyncio.create_task(stream()) for _ in range(n)]
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    while stats["open"] < n:
        await asyncio.sleep(0.1)
    print("open", n, flush=True)
    await stop.wait()
    print(stats["events"], stats["bytes"], flush=True)
    for t in tasks:
        t.cancel()
asyncio.run(main())
EOF
python3 "$T/streams.py" "$PORT" $((N - K)) >"$T/streams.out" 2>&1 &
SPID=$!
PIDS+=("$SPID")
for _ in $(seq 1 600); do grep -q '^open' "$T/streams.out" && break; sleep 0.1; done
grep -q '^open' "$T/streams.out" || { echo "the stand-in streams did not open:" >&2; cat "$T/streams.out" >&2; exit 1; }
# The K real nodes: apply (expect: N), then watch.
for i in $(seq 1 "$K"); do mkroot "$T/n$i"; done
APIDS=()
for i in $(seq 1 "$K"); do
	HPCINIT_ADDRESS=$(addr "$i") "$HPCINIT" apply --only discovery,hostfile --root "$T/n$i" \
		-c "$T/n$i/etc/hpcinit/node.yaml" --hostname "node$i" >"$T/n$i/apply.out" 2>&1 &
	APIDS+=($!)
done
for i in $(seq 1 "$K"); do
	wait "${APIDS[i - 1]}" || { echo "apply on node$i failed:" >&2; sed 's/^/  | /' "$T/n$i/apply.out" >&2; exit 1; }
done
WPIDS=()
for i in $(seq 1 "$K"); do
	HPCINIT_ADDRESS=$(addr "$i") "$HPCINIT" watch --root "$T/n$i" -c "$T/n$i/etc/hpcinit/node.yaml" \
		--hostname "node$i" >"$T/n$i/watch.log" 2>&1 &
	PIDS+=($!)
	WPIDS+=($!)
done
for i in $(seq 1 "$K"); do
	for _ in $(seq 1 600); do grep -q 'refresh exit' "$T/n$i/watch.log" 2>/dev/null && break; sleep 0.1; done
done
sleep 3
for i in $(seq 1 "$K"); do
	n=$(grep -vc '^#' "$T/n$i/etc/hpcinit/hostfile.plain" || true)
	[ "$n" = "$N" ] || { echo "node$i's hostfile lists $n nodes, not $N" >&2; exit 1; }
done
echo "setup: $K real nodes list all $N; $((N - K)) stand-in streams open; load average $(cut -d' ' -f1-3 /proc/loadavg)"

WATCHERS=$K
J=$((N + 1))
mkroot "$T/n$J"
worst_j=0 worst_l=0
for round in $(seq 1 "$ROUNDS"); do
	stamp_key "/hpcinit/bench/nodes/node$J" "$T/stamps.$round"
	rq0=$(metric grpc_server_started_total) by0=$(etcd_rb) e0=$(etcd_cpu)
	watchers_snap "$T/cpu.$round.0" || true
	HPCINIT_ADDRESS=$(addr "$J") "$HPCINIT" apply --only discovery --root "$T/n$J" \
		-c "$T/n$J/etc/hpcinit/node.yaml" --hostname "node$J" >"$T/join.out" 2>&1 ||
		{ echo "apply on node$J failed:" >&2; sed 's/^/  | /' "$T/join.out" >&2; exit 1; }
	ja=$(date +%s%N)
	jall=$(until_all PRESENT "node$J")
	jput=$(stamp_of PUT "$T/stamps.$round")
	sleep 1
	watchers_snap "$T/cpu.$round.1" || true
	rq1=$(metric grpc_server_started_total) by1=$(etcd_rb) e1=$(etcd_cpu)
	HPCINIT_ADDRESS=$(addr "$J") "$HPCINIT" leave --root "$T/n$J" -c "$T/n$J/etc/hpcinit/node.yaml" \
		--hostname "node$J" >"$T/leave.out" 2>&1 ||
		{ echo "leave on node$J failed:" >&2; sed 's/^/  | /' "$T/leave.out" >&2; exit 1; }
	la=$(date +%s%N)
	lall=$(until_all ABSENT "node$J")
	ldel=$(stamp_of DELETE "$T/stamps.$round")
	kill "$STAMP_PID" 2>/dev/null || true
	sleep 1
	watchers_snap "$T/cpu.$round.2" || true
	rq2=$(metric grpc_server_started_total) by2=$(etcd_rb) e2=$(etcd_cpu)
	jcpu=$(watchers_delta "$T/cpu.$round.0" "$T/cpu.$round.1") lcpu=$(watchers_delta "$T/cpu.$round.1" "$T/cpu.$round.2")
	echo "round $round: join: all $K watchers list node$J $(since "$ja" "$jall") after its apply returned, $(since "$jput" "$jall") after etcd took its record; watchers' CPU $(cpu_line "$jcpu" "$K") (1 s of idle included); etcd $((rq1 - rq0)) requests, $((by1 - by0)) bytes, $((e1 - e0)) ms of CPU"
	echo "round $round: leave: no watcher lists node$J $(since "$la" "$lall") after its leave returned, $(since "$ldel" "$lall") after etcd deleted its key; watchers' CPU $(cpu_line "$lcpu" "$K"); etcd $((rq2 - rq1)) requests, $((by2 - by1)) bytes, $((e2 - e1)) ms of CPU"
	jms=$(since "$jput" "$jall") lms=$(since "$la" "$lall")
	[[ ${jms%% *} =~ ^[0-9]+$ ]] && [ "${jms%% *}" -le "$worst_j" ] || worst_j=${jms%% *}
	[[ ${lms%% *} =~ ^[0-9]+$ ]] && [ "${lms%% *}" -le "$worst_l" ] || worst_l=${lms%% *}
	sleep 1
done
kill -TERM "$SPID" 2>/dev/null || true
wait "$SPID" 2>/dev/null || true
read -r sev sby < <(tail -1 "$T/streams.out")
echo "stand-in streams: $((N - K)) streams were sent ${sev:-?} events, ${sby:-?} bytes in all (etcd's fan-out of the $ROUNDS joins and leaves)"
echo "goal: a join reaches every watcher of $N under 1000 ms after etcd took it: worst of $ROUNDS $worst_j ms ($(goal "$worst_j" 1000))"
echo "goal: a leave reaches every watcher of $N under 2000 ms after it returned: worst of $ROUNDS $worst_l ms ($(goal "$worst_l" 2000))"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
