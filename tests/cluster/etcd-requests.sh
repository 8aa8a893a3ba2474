#!/bin/bash
# SPDX-License-Identifier: MIT
#
# What a converge asks of etcd, counted by a real etcd member itself (its /metrics: every range
# the JSON gateway forwards is one gRPC Range), for the nodes of a cold start at scale (issue 26:
# at 1,000 nodes the lists of every record did not fit in the helper's timeout):
#   - "hpcinit-etcd await PREFIX EXPECT MS REV" with the membership at REV on stdin watches from
#     after REV and answers with the whole membership without one range;
#   - three nodes converge (expect: 3, lease 90 s): the first waits alone past its await's 30 s
#     (a third of the lease), renewing its lease on the way (its list and its own key: two
#     ranges); the others range once (their list; "formed: true" is put without a range); no
#     await killed at its end and started again with a new list;
#   - a node that waits starts its helper once: publish, list and wait, then "formed: true", all
#     through the step's one helper ("hpcinit-etcd serve");
#   - a member that takes a request and does not answer in time (SIGSTOP, as a member busy with
#     a thousand nodes' requests) is asked again, with a longer timeout, and the call succeeds;
#     with the agent's --deadline, for longer than the default.
# Fake roots (--root) and one member in a network namespace of the test's own (its loopback).
set -eu
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${TOP_BUILDDIR:=$TOP_SRCDIR}"
: "${HPCINIT:=$TOP_BUILDDIR/hpcinit}"
export HPCINIT_LIBEXEC_DIR=${HPCINIT_LIBEXEC_DIR:-$TOP_BUILDDIR}
HELPER=$HPCINIT_LIBEXEC_DIR/hpcinit-etcd
. "$TOP_SRCDIR/tests/lib/tap.sh"
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then
	echo "SKIP: needs root and iproute2 (a network namespace)"
	exit 77
fi
command -v etcd >/dev/null || { echo "SKIP: etcd not installed (Debian package etcd-server)"; exit 77; }
T=$(mktemp -d /tmp/hpcinit-etcd-requests.XXXXXX)
NS=hpcer$$
ETCD_PID=
cleanup() {
	local rc=$?
	[ -z "$ETCD_PID" ] || { kill -CONT "$ETCD_PID" 2>/dev/null || true; kill "$ETCD_PID" 2>/dev/null || true; wait "$ETCD_PID" 2>/dev/null || true; }
	ip netns del "$NS" 2>/dev/null || true
	rm -rf "$T"
	exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM
ip netns add "$NS"
ip -n "$NS" link set lo up
in_ns() { ip netns exec "$NS" "$@"; }
URL=http://127.0.0.1:2379
ip netns exec "$NS" etcd --name r1 --data-dir "$T/etcd" --listen-client-urls "$URL" --advertise-client-urls "$URL" \
	--listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
	--initial-cluster r1=http://127.0.0.1:2380 >"$T/etcd.log" 2>&1 &
ETCD_PID=$!     # ip execs etcd: this PID is etcd's
for _ in $(seq 1 100); do in_ns curl -sf "$URL/health" >/dev/null 2>&1 && break; sleep 0.1; done
in_ns curl -sf "$URL/health" >/dev/null || bail_out "etcd did not start: $(tail -3 "$T/etcd.log")"
# ranges: the Range calls etcd has started so far (tests/lib/etcd-metrics.sh)
. "$TOP_SRCDIR/tests/lib/etcd-metrics.sh"
ranges() { etcd_grpc_started Range in_ns "$URL"; }
put() { in_ns curl -sf -X POST -d "{\"key\":\"$(printf %s "$1" | base64 -w0)\",\"value\":\"$(printf %s "$2" | base64 -w0)\"}" "$URL/v3/kv/put" >/dev/null; }
helper() { in_ns "$HELPER" --endpoint "$URL" "$@"; }

# ---- await from a revision: the membership the caller has, no range ----
P=/hpcinit/req/other/
put "${P}a" one
put "${P}b" two
helper list "$P" >"$T/list.out"
REV=$(sed -n 's/^rev //p' "$T/list.out")
r0=$(ranges)
helper await "$P" 3 20000 "$REV" <"$T/list.out" >"$T/await.out" 2>"$T/await.err" &
AW=$!
sleep 1
put "${P}c" three
rc=0
wait "$AW" || rc=$?
r1=$(ranges)
await_ok() {
	[ "$rc" = 0 ] || { echo "  await exited $rc:"; sed 's/^/  | /' "$T/await.err"; return 1; }
	same_keys=$(grep -c '^kv ' "$T/await.out")
	[ "$same_keys" = 3 ] || { echo "  expected 3 keys:"; sed 's/^/  | /' "$T/await.out"; return 1; }
	grep -qx 'waited 1' "$T/await.out" && grep -qx "${P}cthree" "$T/await.out" && grep -qx "${P}aone" "$T/await.out" ||
		{ sed 's/^/  | /' "$T/await.out"; return 1; }
}
check "await REV with the list on stdin: the 3 keys once the third is put" await_ok
check "await REV with the list on stdin: no range (etcd counted $((r1 - r0)))" test "$((r1 - r0))" = 0

# ---- three nodes converge; the first waits alone past its await's 30 s ----
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/cluster.key"
chmod 0600 "$T/cluster.key"
mkroot() {
	local R=$T/n$1
	mkdir -p "$R/etc/hpcinit" "$R/etc/openmpi" "$R/run/hpcinit"
	printf 'root:x:0:0:root:/root:/bin/bash\n' >"$R/etc/passwd"
	install -m 0600 "$T/cluster.key" "$R/etc/hpcinit/cluster.key"
	cat >"$R/etc/hpcinit/node.yaml" <<-EOF
	version: 1
	cluster: {name: req, network: 10.0.0.0/8, secret_file: /etc/hpcinit/cluster.key}
	discovery: {method: etcd, endpoints: ["$URL"], expect: 3, wait: 90s, lease: 90s}
	hostfile: {}
	EOF
}
apply() {
	HPCINIT_ADDRESS=10.0.0.$1 in_ns "$HPCINIT" apply --only discovery,hostfile --root "$T/n$1" \
		-c "$T/n$1/etc/hpcinit/node.yaml" --hostname "node$1" >"$T/apply.$1" 2>&1
}
for i in 1 2 3; do mkroot "$i"; done
r0=$(ranges)
apply 1 &
A1=$!
sleep 33
r1=$(ranges)
check "node1, waiting alone for 33 s past its await's 30 s, ranged at most twice (its list, its own key as it renewed the lease; etcd counted $((r1 - r0)))" \
	test "$((r1 - r0))" -le 2
# node2 waits for node3 (its helper runs traced: how many a node starts; a start is an exec of
# hpcinit-etcd or, in the child a session forks, the load of hpcinit-etcd.so: proc_start_module)
START='execve\(".*/hpcinit-etcd"|openat\(.*/hpcinit-etcd\.so"'
HPCINIT_ADDRESS=10.0.0.2 in_ns strace -f -qq -e trace=execve,openat -o "$T/exec.2" "$HPCINIT" apply --only discovery,hostfile \
	--root "$T/n2" -c "$T/n2/etc/hpcinit/node.yaml" --hostname node2 >"$T/apply.2" 2>&1 &
A2=$!
# (no request to etcd while counting: the trace says when node2's helper runs)
for _ in $(seq 1 100); do grep -Eq "$START" "$T/exec.2" 2>/dev/null && break; sleep 0.1; done
sleep 1.5
apply 3 &
A3=$!
rc1=0 rc2=0 rc3=0
wait "$A1" || rc1=$?
wait "$A2" || rc2=$?
wait "$A3" || rc3=$?
r2=$(ranges)
for i in 1 2 3; do
	eval "rc=\$rc$i"
	check "node$i: apply exits 0 ($rc)" test "$rc" = 0
	check "node$i: 3 nodes known through etcd" contains "$T/apply.$i" "3 nodes known through etcd (expect 3)"
done
helpers=$(grep -Ec "$START" "$T/exec.2" || true)
check "node2, which waited for node3, started its etcd helper once (publish, list and wait, then \"formed: true\", through the step's one helper; $helpers)" \
	test "$helpers" = 1
check "then node2 and node3 ranged once each (their list), node1 not at all (\"formed: true\" is put without asking for the key first; etcd counted $((r2 - r1)))" \
	test "$((r2 - r1))" -le 2

# ---- a member that takes the request and does not answer in time ----
kill -STOP "$ETCD_PID"
helper --timeout 1000 list "$P" >"$T/slow.out" 2>"$T/slow.err" &
SL=$!
sleep 2.5
kill -CONT "$ETCD_PID"
rc=0
wait "$SL" || rc=$?
slow_ok() {
	[ "$rc" = 0 ] || { echo "  list exited $rc:"; sed 's/^/  | /' "$T/slow.err"; return 1; }
	[ "$(grep -c '^kv ' "$T/slow.out")" = 3 ] || { sed 's/^/  | /' "$T/slow.out"; return 1; }
}
check "a member stopped for 2.5 s (timeout 1 s): the list is asked again and succeeds" slow_ok
check "the helper said it asked again" contains "$T/slow.err" "asking again"
# Longer than the 5 s a run with a 1 s timeout has by default: the agent's --deadline (it grows
# with discovery.expect for the runs that read the membership) lets the helper wait it out.
kill -STOP "$ETCD_PID"
helper --timeout 1000 --deadline 12000 list "$P" >"$T/slow2.out" 2>"$T/slow2.err" &
SL=$!
sleep 7
kill -CONT "$ETCD_PID"
rc=0
wait "$SL" || rc=$?
slow2_ok() {
	[ "$rc" = 0 ] || { echo "  list exited $rc:"; sed 's/^/  | /' "$T/slow2.err"; return 1; }
	[ "$(grep -c '^kv ' "$T/slow2.out")" = 3 ] || { sed 's/^/  | /' "$T/slow2.out"; return 1; }
}
check "a member stopped for 7 s, --deadline 12000: the list is asked again until it answers" slow2_ok

# ---- HTTP 503 (a member that cannot serve now) is asked again too ----
# Two members of their own; without the second the first has no leader and answers
# "503 etcdserver: no leader" (or "request timed out"), as a member swamped by a thousand
# nodes' requests answered 503 to lease keepalives at the 1,000-node cold start.
PAIR=m1=http://127.0.0.1:2390,m2=http://127.0.0.1:2392
member() { # member I CLIENT_PORT: start it; its PID in M$I
	ip netns exec "$NS" etcd --name "m$1" --data-dir "$T/m$1" --listen-client-urls "http://127.0.0.1:$2" \
		--advertise-client-urls "http://127.0.0.1:$2" --listen-peer-urls "http://127.0.0.1:$(($2 + 1))" \
		--initial-advertise-peer-urls "http://127.0.0.1:$(($2 + 1))" --initial-cluster "$PAIR" \
		--heartbeat-interval 50 --election-timeout 500 >>"$T/m$1.log" 2>&1 &
	eval "M$1=\$!"
}
M1= M2=
member 1 2389
member 2 2391
for _ in $(seq 1 100); do in_ns curl -sf http://127.0.0.1:2389/health >/dev/null 2>&1 && break; sleep 0.1; done
kill -KILL "$M2"; wait "$M2" 2>/dev/null || true
sleep 1
in_ns "$HELPER" --endpoint http://127.0.0.1:2389 --timeout 20000 --deadline 40000 keepalive 1 \
	>"$T/busy.out" 2>"$T/busy.err" &
BZ=$!
sleep 8                 # the member answers 503 after about 6 s
member 2 2391
rc=0
wait "$BZ" || rc=$?
kill "$M1" "$M2" 2>/dev/null || true
wait "$M1" "$M2" 2>/dev/null || true
busy_ok() {
	[ "$rc" = 0 ] && grep -qx 'ttl 0' "$T/busy.out" ||
		{ echo "  keepalive exited $rc:"; sed 's/^/  | /' "$T/busy.out" "$T/busy.err"; return 1; }
	grep -q 'HTTP 503.*(busy); asking again' "$T/busy.err" ||
		{ echo "  no 503 seen:"; sed 's/^/  | /' "$T/busy.err"; return 1; }
}
check "a member without a leader (HTTP 503) is asked again until the second member is back" busy_ok
done_testing
