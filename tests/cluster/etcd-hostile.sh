#!/bin/bash
# SPDX-License-Identifier: MIT
#
# What a record writer (a root on a member, holding the cluster secret) and
# a hostile answer can and cannot do with discovery method etcd (issue 23),
# against a real etcd (Debian's etcd-server) on 127.0.0.1; the nodes are
# "hpcinit apply --only discovery,hostfile" and "hpcinit watch" on fake roots
# (--root), as etcd-tls.sh.
#  1. Names: a record may not take a name this node needs for something
#     else (the NFS server of its spec, slurm.conf_servers, the Scheduled
#     Events address, localhost) or one its static /etc/hosts gives another address; each
#     is rejected and named.  A name the static /etc/hosts gives the
#     record's own address is fine.
#  2. A record dated an hour ahead does not win a member's address: it is
#     rejected ("future"), as the shared method rejects it.
#  2b. Wrong clocks: a node whose clock is 600 s ahead and that booted 30 s
#     ago, and one 600 s behind, are judged by etcd's clock (its answers'
#     HTTP Date): nobody is rejected as "in the future"; the two say so.
#  3. Log injection: a key with a newline and an endpoint's error message
#     with a newline print no line of their own ("result: ready"); the junk
#     key is a cluster finding (apply and check exit 0, discovery ok).
#  4. Size: the helper lists 2500 keys in pages at one revision; a
#     membership over 1 MiB reaches the agent whole; over
#     64 MiB under a prefix it fails saying so (exit 3, not "no endpoint
#     answered") holding far less than the data; its watch does not
#     download the prefix again until it changes.
#  5. Scheduled Events, from a STAND-IN for the Azure metadata service
#     (python3, tests only): one that does not answer does not hold up the
#     watch (a join is refreshed while the stand-in still holds the
#     request); a Terminate for node10 in a resource list longer than 4095
#     characters is not node1's; a leave that fails acknowledges nothing,
#     and the event is acknowledged once the leave works; a Terminate that
#     lists this VM and another makes node1 leave but is not acknowledged
#     (that would start it for the other VM too, before its own leave ran).
set -euo pipefail
TOP=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${TOP_BUILDDIR:-$TOP/build}
HPCINIT=${HPCINIT:-$BUILD/hpcinit}
HELPER=${HPCINIT_ETCD:-$BUILD/hpcinit-etcd}
export HPCINIT_LIBEXEC_DIR=${HPCINIT_LIBEXEC_DIR:-$BUILD}
command -v etcd >/dev/null || { echo "SKIP: etcd not installed (Debian package etcd-server)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (the fake root's files are root's)"; exit 77; }
T=$(mktemp -d /tmp/hpcinit-etcd-hostile.XXXXXX)
PIDS=()
. "$(dirname "$0")/../lib/faketime.sh"
faketime_since "$T/.faketime-since"
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	faketime_sweep "$T/.faketime-since"     # libfaketime's files of the clocked runs' killed processes
	[ "${KEEP:-0}" = 1 ] && echo "# kept $T" || rm -rf "$T"
}
trap cleanup EXIT
. "$(dirname "$0")/../lib/tap.sh"
# wait_for SECONDS CMD...: until CMD succeeds (a bound on a wait, not an assertion on time)
wait_for() { local s=$1 i; shift; for i in $(seq 1 $((s * 10))); do "$@" && return 0; sleep 0.1; done; return 1; }
# Ports from the process ID, so two runs side by side do not collide.
P0=$((26000 + ($$ % 400) * 4))
URL=http://127.0.0.1:$P0
PI=$((P0 + 2))          # the metadata stand-in
PE=$((P0 + 3))          # the endpoint stand-in

etcd --name h --data-dir "$T/etcd" --listen-client-urls "$URL" --advertise-client-urls "$URL" \
	--listen-peer-urls "http://127.0.0.1:$((P0 + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((P0 + 1))" \
	--initial-cluster "h=http://127.0.0.1:$((P0 + 1))" >"$T/etcd.log" 2>&1 &
PIDS+=($!)
wait_for 10 curl -sf "$URL/health" -o /dev/null || { echo "Bail out! etcd did not start"; tail "$T/etcd.log"; exit 1; }
ETCDCTL=(env ETCDCTL_API=3 etcdctl --endpoints "$URL")
openssl rand -hex 32 > "$T/cluster.key"
PREFIX=/hpcinit/hx/nodes/

# booted NAME SECONDS_AGO OFFSET: NAME's /proc/stat says it booted SECONDS_AGO by a clock OFFSET s off
booted() {
	mkdir -p "$T/$1/proc"
	printf 'cpu  1 2 3 4\nbtime %d\n' $(($(date +%s) - $2 + $3)) > "$T/$1/proc/stat"
}
# mkroot NAME EXTRA_YAML: a fake root for node NAME with method etcd.  Each node's boot time is
# its own /proc/stat (an hour ago, by the true clock), never the host's: a node whose clock is
# off needs a btime by its own clock (booted ... OFFSET), and the host's btime follows the true
# one (with the host's, node5 below, 600 s behind, dated its record in the future whenever the
# machine had booted less than 540 s before: the check failed one run in N on fresh machines).
mkroot() {
	local R=$T/$1
	mkdir -p "$R/etc/hpcinit" "$R/etc/ssh" "$R/run/hpcinit"
	booted "$1" 3600 0
	printf 'root:x:0:0:root:/root:/bin/bash\n' > "$R/etc/passwd"
	install -m 0600 "$T/cluster.key" "$R/etc/hpcinit/cluster.key"
	cat > "$R/etc/hpcinit/node.yaml" <<-EOF
	version: 1
	cluster: {name: hx, network: 10.0.0.0/8, secret_file: /etc/hpcinit/cluster.key}
	discovery: {method: etcd, endpoints: ["$URL"], expect: 1, wait: 0s, lease: 600s$2}
	hostfile: {etc_hosts: never}
	EOF
}
# run NAME ADDRESS OUT: apply --only discovery,hostfile as NAME at ADDRESS; exit code in $rc
run() {
	rc=0
	HPCINIT_ADDRESS=$2 "$HPCINIT" apply --only discovery,hostfile --root "$T/$1" \
		-c "$T/$1/etc/hpcinit/node.yaml" --hostname "$1" -v >"$3" 2>&1 || rc=$?
}
# in_hostfile NAME: NAME is a line of node1's plain hostfile
in_hostfile() { grep -qx "$1" "$T/node1/etc/hpcinit/hostfile.plain"; }

# ---- 1. names ----
mkroot node1 ", scheduled_events: {enable: true, url: \"http://metadata01/metadata/scheduledevents\"}"
cat >> "$T/node1/etc/hpcinit/node.yaml" <<-EOF
nfs: {mounts: [{source: "nfs01:/home", path: /home}, {source: "nfs02:/scratch", path: /scratch}]}
slurm: {conf_servers: ["slurm01:6817"]}
EOF
cat > "$T/node1/etc/hosts" <<-EOF
127.0.0.1 localhost
10.9.9.9 license.example.com license
10.0.0.2 node2
10.0.0.65 nfs02
# BEGIN hpcinit hx
10.0.0.77 old-entry
# END hpcinit hx
EOF
# The writers: members of the cluster (the secret), each publishing a record under a name of its choice.
for w in nfs01:10.0.0.61 nfs02:10.0.0.65 metadata01:10.0.0.62 localhost:10.0.0.63 license:10.0.0.64 slurm01:10.0.0.66 node2:10.0.0.2 node3:10.0.0.3; do
	mkroot "${w%%:*}" ""
	run "${w%%:*}" "${w#*:}" "$T/w.${w%%:*}"
	[ -n "$("${ETCDCTL[@]}" get --keys-only "$PREFIX${w%%:*}")" ] ||
		{ echo "Bail out! writer ${w%%:*} published nothing: exit $rc"; cat "$T/w.${w%%:*}"; exit 1; }
done
run node1 10.0.0.1 "$T/names"
check "names: node1's discovery is not degraded: others' records rejected are cluster findings" \
	grep -Eq '^discovery +(ok|changed) .*records rejected, see details' "$T/names"
check "... the NFS server's name (nfs01, from nfs.mounts) is not taken from a record" \
	grep -q "record nfs01: hostname nfs01 is the NFS server of nfs01:/home in this node's spec (nfs01); a record may not take a name this node needs for something else; rejected" "$T/names"
check "... nor the Scheduled Events address's (metadata01)" \
	grep -q "record metadata01: hostname metadata01 is the Scheduled Events address http://metadata01/metadata/scheduledevents in this node's spec" "$T/names"
check "... nor the slurmctld host's (slurm01, from slurm.conf_servers)" \
	grep -q "record slurm01: hostname slurm01 is the slurmctld host slurm01:6817 (slurm.conf_servers) in this node's spec (slurm01); a record may not take a name this node needs for something else; rejected" "$T/names"
check "... nor localhost" grep -q "record localhost: hostname localhost is a name every system keeps for itself (loopback)" "$T/names"
check "... nor a name the static /etc/hosts gives another address (license)" \
	grep -q "record license: hostname license is 10.9.9.9 in this node's /etc/hosts (outside hpcinit's block), not the record's 10.0.0.64" "$T/names"
names_hostfile() {
	local n
	for n in node1 node2 node3 nfs02; do in_hostfile "$n" || { echo "  $n missing"; cat "$T/node1/etc/hpcinit/hostfile.plain"; return 1; }; done
	for n in nfs01 metadata01 localhost license slurm01; do ! in_hostfile "$n" || { echo "  $n listed"; return 1; }; done
}
check "... the hostfile has node1, node2 and nfs02 (both in the static /etc/hosts at their records' addresses: an NFS server that is a member) and node3, and none of them" \
	names_hostfile
echo "# names: $(grep -c 'rejected' "$T/names") rejections"
for w in nfs01 nfs02 metadata01 localhost license slurm01; do "${ETCDCTL[@]}" del "$PREFIX$w" >/dev/null; done

# ---- 2. a record from the future ----
# forge NAME ADDR AHEAD_S: node2's record re-made as NAME at ADDR, dated AHEAD_S ahead, signed with the secret.
forge() {
	"${ETCDCTL[@]}" get --print-value-only "${PREFIX}node2" | python3 -c '
import hashlib, hmac, sys, time
name, addr, ahead, keyf = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
key = open(keyf, "rb").read().rstrip(b"\r\n")
out = []
for line in sys.stdin.read().split("\n"):
    if line in ("...", "") or line.startswith("hmac:"):
        continue
    if line.startswith("hostname: "): line = "hostname: " + name
    if line.startswith("addr: "): line = "addr: " + addr
    if line.startswith("updated: "): line = "updated: %d" % (int(time.time()) + ahead)
    out.append(line)
body = ("\n".join(out) + "\n").encode()
sys.stdout.write((body + b"hmac: " + hmac.new(key, body, hashlib.sha256).hexdigest().encode() + b"\n...\n").decode())
' "$1" "$2" "$3" "$T/cluster.key" > "$T/forged"
	"${ETCDCTL[@]}" put "$PREFIX$1" < "$T/forged" >/dev/null
}
forge evil 10.0.0.3 3600
run node1 10.0.0.1 "$T/future"
check "future: a record dated an hour ahead is rejected, naming how far ahead" \
	grep -Eq "record evil: dated 3[56][0-9][0-9] s in the future \(more than the 60 s of clock skew allowed\); rejected" "$T/future"
future_hostfile() { in_hostfile node3 && ! in_hostfile evil; }
check "... and does not take node3's address: node3 stays in the hostfile, evil is not in it" future_hostfile
forge evil2 10.0.0.33 30
run node1 10.0.0.1 "$T/skew"
check "... while one 30 s ahead (within the allowed skew) is a member" in_hostfile evil2
"${ETCDCTL[@]}" del "${PREFIX}evil" >/dev/null
"${ETCDCTL[@]}" del "${PREFIX}evil2" >/dev/null

# ---- 2b. wrong clocks: the cluster clock is etcd's ----
# A record's "updated" is its writer's boot time (btime of /proc/stat, which follows the wall
# clock).  node4's clock is 600 s ahead and it booted 30 s ago (by its clock): its btime is 570 s
# ahead of the others'.  node5's clock is 600 s behind; node6's is right and it booted 30 s ago.
# The wrong clocks are libfaketime's (hpcinit and its helper), the btime a /proc/stat in the fake
# root.  Each is judged by etcd's clock (the Date of its answers): nobody is rejected as "in
# the future", and the nodes whose clock is off say so.
FAKETIME_LIB=$(ls /usr/lib/*/faketime/libfaketime.so.1 2>/dev/null | head -1)
check "clock: libfaketime is installed (Debian package faketime)" test -n "$FAKETIME_LIB"
# clocked OFFSET NAME ADDRESS OUT: run under a wall clock OFFSET away (e.g. +600s)
clocked() {
	rc=0
	LD_PRELOAD=$FAKETIME_LIB FAKETIME=$1 FAKETIME_DONT_FAKE_MONOTONIC=1 NO_FAKE_STAT=1 \
		HPCINIT_ADDRESS=$3 "$HPCINIT" apply --only discovery,hostfile --root "$T/$2" \
		-c "$T/$2/etc/hpcinit/node.yaml" --hostname "$2" -v >"$4" 2>&1 || rc=$?
}
# in_hostfile_of NODE NAME
in_hostfile_of() { grep -qx "$2" "$T/$1/etc/hpcinit/hostfile.plain"; }
mkroot node4 ""; booted node4 30 600
mkroot node5 ""; booted node5 3600 -600
mkroot node6 ""; booted node6 30 0
clocked +600s node4 10.0.0.4 "$T/clock4"
rc4=$rc
run node6 10.0.0.6 "$T/clock6"
clocked -600s node5 10.0.0.5 "$T/clock5"
rc5=$rc
run node1 10.0.0.1 "$T/clock1"
check "clock: node4 (600 s ahead) is degraded and says its clock is ahead of etcd's" \
	test "$rc4" = 3 -a -n "$(grep -E "this node's clock is (599|600|601) s ahead of etcd's" "$T/clock4")"
check "... node1 (right clock) does not reject node4's record as in the future: node4 is a member" \
	in_hostfile_of node1 node4
check "... nor node6's (booted 30 s ago)" in_hostfile_of node1 node6
check "... and says nothing is in the future" not_contains "$T/clock1" "in the future"
check "clock: node5 (600 s behind) is degraded and says its clock is behind etcd's" \
	test "$rc5" = 3 -a -n "$(grep -E "this node's clock is (599|600|601) s behind etcd's" "$T/clock5")"
check "... and, judging by etcd's clock, takes node4 and node6 (booted 30 s ago) as members" \
	bash -c "grep -qx node4 '$T/node5/etc/hpcinit/hostfile.plain' && grep -qx node6 '$T/node5/etc/hpcinit/hostfile.plain'"
check "... and rejects nothing as in the future" not_contains "$T/clock5" "in the future"
# mod_rev NAME: the revision of NAME's key's last put
mod_rev() { "${ETCDCTL[@]}" get -w json "$PREFIX$1" | sed -n 's/.*"mod_revision":\([0-9]*\).*/\1/p'; }
upd4=$("${ETCDCTL[@]}" get --print-value-only "${PREFIX}node4" | sed -n 's/^updated: //p')
now=$(date +%s)
check "clock: node4's record is dated by etcd's clock: its boot 30 s ago (updated $upd4, now $now)" \
	test -n "$upd4" -a "$((now - ${upd4:-0}))" -ge 25 -a "$((now - ${upd4:-0}))" -le 120
rev4=$(mod_rev node4)
clocked +600s node4 10.0.0.4 "$T/clock4b"
check "... and its next run puts nothing (the record, dated by the known offset, is the same)" \
	test "$rc" = 3 -a -n "$rev4" -a "$(mod_rev node4)" = "$rev4"
for w in node4 node5 node6; do "${ETCDCTL[@]}" del "$PREFIX$w" >/dev/null; done

# ---- 3. log injection ----
"${ETCDCTL[@]}" put "$(printf '%sx\nresult: ready' "$PREFIX")" junk >/dev/null
run node1 10.0.0.1 "$T/inject"
check "injection: a key with a newline is rejected, shown escaped (\\x0a)" \
	grep -qF 'x\x0aresult: ready: not a valid host name; rejected' "$T/inject"
check "... and prints no line of its own" bash -c "! grep -Eq '^[[:space:]]*result: ready' '$T/inject'"
check "... a junk key is a cluster finding: discovery ok" grep -Eq '^discovery +ok ' "$T/inject"
rc=0
HPCINIT_ADDRESS=10.0.0.1 "$HPCINIT" check --json --only discovery --root "$T/node1" \
	-c "$T/node1/etc/hpcinit/node.yaml" --hostname node1 >"$T/inject.json" 2>"$T/inject.err" || rc=$?
junk_is_cluster() {
	python3 - "$1" <<-'PY'
	import json, sys
	d = json.load(open(sys.argv[1]))
	m = [x for x in d["modules"] if x["name"] == "discovery"][0]
	assert m["status"] == "ok", m["status"]
	f = {x["tag"]: x["severity"] for x in m["findings"]}
	assert f.get("discovery.record.bad-name") == "cluster", f
	assert d["exit_code"] == 0, d["exit_code"]
	PY
}
check "... check --only discovery exits 0; --json: discovery ok, discovery.record.bad-name of severity \"cluster\"" \
	eval '[ "$rc" = 0 ] && junk_is_cluster "$T/inject.json"'
# This node's own record refused is this node's problem (its peers refuse it too): degraded.
"${ETCDCTL[@]}" get --print-value-only "${PREFIX}node1" > "$T/node1.rec"
"${ETCDCTL[@]}" put "${PREFIX}node1" junk >/dev/null
rc=0
HPCINIT_ADDRESS=10.0.0.1 "$HPCINIT" check --json --only discovery --root "$T/node1" \
	-c "$T/node1/etc/hpcinit/node.yaml" --hostname node1 >"$T/self.json" 2>"$T/self.err" || rc=$?
self_refused() {
	python3 - "$1" <<-'PY'
	import json, sys
	d = json.load(open(sys.argv[1]))
	m = [x for x in d["modules"] if x["name"] == "discovery"][0]
	f = {x["tag"]: x["severity"] for x in m["findings"]}
	assert f.get("discovery.record.self-refused") == "degraded", f
	assert m["status"] == "degraded", m["status"]
	PY
}
check "... while this node's own record refused is its own finding: check exits 3, discovery.record.self-refused degraded" \
	eval '[ "$rc" = 3 ] && self_refused "$T/self.json"'
"${ETCDCTL[@]}" put "${PREFIX}node1" < "$T/node1.rec" >/dev/null
"${ETCDCTL[@]}" del "$(printf '%sx\nresult: ready' "$PREFIX")" >/dev/null
# A stand-in for an endpoint (real etcd never says this) whose error message holds a newline.
cat > "$T/endpoint.py" <<'PY'
import http.server, sys
ans = b'{"message": "overloaded\\nresult: ready", "code": 14}'
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(503); self.send_header("Content-Length", str(len(ans))); self.end_headers()
        self.wfile.write(ans)
    def log_message(self, *a): pass
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
python3 "$T/endpoint.py" "$PE" &
PIDS+=($!)
wait_for 10 bash -c "curl -s -o /dev/null -X POST http://127.0.0.1:$PE/" || true
sed -i "s|endpoints: \[\"$URL\"\]|endpoints: [\"http://127.0.0.1:$PE\"]|" "$T/node1/etc/hpcinit/node.yaml"
run node1 10.0.0.1 "$T/inject-endpoint"
check "... an endpoint's error with a newline: shown escaped" \
	grep -qF "http://127.0.0.1:$PE: HTTP 503: overloaded\x0aresult: ready" "$T/inject-endpoint"
check "... and prints no line of its own" bash -c "! grep -Eq '^[[:space:]]*result: ready' '$T/inject-endpoint'"
sed -i "s|endpoints: \[\"http://127.0.0.1:$PE\"\]|endpoints: [\"$URL\"]|" "$T/node1/etc/hpcinit/node.yaml"

# ---- 4. size ----
# put PREFIX COUNT BYTES: COUNT keys of BYTES random bytes each, through the gateway (one connection).
put_many() {
	python3 - "$P0" "$1" "$2" "$3" <<-'PY'
	import base64, http.client, json, os, sys
	c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]))
	for i in range(int(sys.argv[3])):
	    k = base64.b64encode(("%s%05d" % (sys.argv[2], i)).encode()).decode()
	    v = base64.b64encode(os.urandom(int(sys.argv[4]))).decode()
	    c.request("POST", "/v3/kv/put", json.dumps({"key": k, "value": v}))
	    r = c.getresponse(); r.read()
	    assert r.status == 200, r.status
	PY
}
put_many /many/ 2500 16
rc=0
"$HELPER" --endpoint "$URL" list /many/ >"$T/many" 2>"$T/many.err" || rc=$?
check "size: 2500 keys listed in pages: exit 0, 2500 keys, one revision line" \
	bash -c "test $rc = 0 && test \$(grep -ac '^kv ' '$T/many') = 2500 && test \$(grep -ac '^rev ' '$T/many') = 1"
# The agent reads the whole of a membership over 1 MiB (it kept the first MiB and dropped the rest
# without a word): 2000 keys of 700 bytes (1.4 MB) under the nodes' prefix, each rejected.
put_many "${PREFIX}junk" 2000 700
run node1 10.0.0.1 "$T/junk"
check "size: a membership of 1.4 MB reaches the agent whole: all 2000 junk keys are judged (10 named, 1990 more)" \
	grep -q '1990 more records rejected' "$T/junk"
echo "# 1.4 MB membership: $(grep -m1 'more records rejected' "$T/junk")"
"${ETCDCTL[@]}" del --prefix "${PREFIX}junk" >/dev/null
put_many /big/ 50 1400000
# maxrss CMD...: run CMD (output to $T/big, $T/big.err), print its exit code and its peak memory in KiB.
maxrss() {
	python3 -c '
import resource, subprocess, sys
with open(sys.argv[1], "wb") as o, open(sys.argv[1] + ".err", "wb") as e:
    rc = subprocess.call(sys.argv[2:], stdout=o, stderr=e)
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)' "$T/big" "$@"
}
read -r rc kib < <(maxrss "$HELPER" --endpoint "$URL" list /big/)
echo "# 50 keys of 1.4 MB (70 MB) under /big/: exit $rc, peak memory $kib KiB: $(head -c 300 "$T/big.err")"
check "size: over 64 MiB under the prefix: exit 3 (a refusal, not 'no endpoint answered')" test "$rc" = 3
check "... saying what passed which limit" grep -q "the keys under /big/ hold more than 64 MiB" "$T/big.err"
check "... holding less than 48 MiB on the way (the data is 70 MB)" test "$kib" -lt 49152
# The watch: the over-limit prefix is listed once, then again only after it changed.
"$HELPER" --endpoint "$URL" watch /big/ >"$T/bigwatch" 2>"$T/bigwatch.err" &
WPID=$!
PIDS+=($WPID)
wait_for 30 grep -q 'hold more than 64 MiB' "$T/bigwatch.err" || true
sleep 5         # no change in these seconds: nothing to list again (LIST_RETRY_S is 10 s)
check "size: the watch lists an over-limit prefix once while it does not change (not every 2 s)" \
	test "$(grep -c 'hold more than 64 MiB' "$T/bigwatch.err")" = 1
check "... and says nothing is in sync (no 'synced')" bash -c "! grep -aq '^synced' '$T/bigwatch'"
for i in $(seq 0 9); do "${ETCDCTL[@]}" del "$(printf '/big/%05d' "$i")" >/dev/null; done
wait_for 60 grep -aq '^synced' "$T/bigwatch" || true
check "... after the prefix shrinks under the limit it lists it again: 40 keys, synced" \
	bash -c "test \$(grep -ac '^kv ' '$T/bigwatch') -ge 40 && grep -aq '^synced' '$T/bigwatch'"
kill "$WPID" 2>/dev/null || true
"${ETCDCTL[@]}" del --prefix /big/ >/dev/null
"${ETCDCTL[@]}" del --prefix /many/ >/dev/null

# ---- 5. Scheduled Events ----
# A STAND-IN for the Azure instance metadata service (tests only; not the real service).
# Modes, by files in $T/imds: hold (hold every GET until the client gives up: log "held N",
# then "dropped N"), long (a Terminate for node10 after 4090 characters of other names),
# term (a Terminate for node1), shared (a Terminate for node1 and vm-2).  Each answered events
# document logs "served MODE"; a POST
# (the acknowledgement) is saved to $T/imds/ack.
mkdir -p "$T/imds"
cat > "$T/imds/standin.py" <<'PY'
import http.server, json, os, select, socket, sys, time
D = sys.argv[2]
n = 0
def log(s):
    with open(D + "/log", "a") as f:
        f.write(s + "\n")
class H(http.server.BaseHTTPRequestHandler):
    def reply(self, body, ctype):
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def do_GET(self):
        global n
        if self.headers.get("Metadata") != "true":
            self.send_response(400); self.end_headers(); return
        if os.path.exists(D + "/hold"):
            n += 1
            me = n
            log("held %d" % me)
            while os.path.exists(D + "/hold"):
                r, _, _ = select.select([self.connection], [], [], 0.1)
                if r and self.connection.recv(1, socket.MSG_PEEK) == b"":
                    log("dropped %d" % me)
                    return
            return
        if self.path.startswith("/metadata/instance/compute/name"):
            return self.reply(b"vm-1", "text/plain")
        ev, mode = [], "none"
        if os.path.exists(D + "/long"):
            mode, names = "long", []
            while len(",".join(names)) < 4090 - 9:
                names.append("pad%05d" % len(names))
            pad = ",".join(names)
            pad += "," + "q" * (4090 - len(pad) - 2) + ","
            assert len(pad) == 4090
            ev = [{"EventId": "E-LONG", "EventType": "Terminate", "ResourceType": "VirtualMachine",
                   "Resources": pad.rstrip(",").split(",") + ["node10"], "EventStatus": "Scheduled"}]
        elif os.path.exists(D + "/shared"):
            mode = "shared"
            ev = [{"EventId": "E-SHARED", "EventType": "Terminate", "ResourceType": "VirtualMachine",
                   "Resources": ["vm-1", "vm-2"], "EventStatus": "Scheduled"}]
        elif os.path.exists(D + "/term"):
            mode = "term"
            ev = [{"EventId": "E-TERM", "EventType": "Terminate", "ResourceType": "VirtualMachine",
                   "Resources": ["vm-1"], "EventStatus": "Scheduled"}]
        log("served " + mode)
        self.reply(json.dumps({"DocumentIncarnation": 2, "Events": ev}).encode(), "application/json")
    def do_POST(self):
        k = int(self.headers.get("Content-Length", "0"))
        open(D + "/ack", "wb").write(self.rfile.read(k))
        self.reply(b"", "application/json")
    def log_message(self, *a):
        pass
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
python3 "$T/imds/standin.py" "$PI" "$T/imds" &
PIDS+=($!)
wait_for 10 bash -c "curl -s -o /dev/null -H Metadata:true http://127.0.0.1:$PI/metadata/scheduledevents" || true
: > "$T/imds/log"
"${ETCDCTL[@]}" del "${PREFIX}node2" >/dev/null
sed -i "s|url: \"http://metadata01/metadata/scheduledevents\"|url: \"http://127.0.0.1:$PI/metadata/scheduledevents\"|" \
	"$T/node1/etc/hpcinit/node.yaml"
run node1 10.0.0.1 "$T/se-apply"
touch "$T/imds/hold"
HPCINIT_ADDRESS=10.0.0.1 "$HPCINIT" watch --root "$T/node1" -c "$T/node1/etc/hpcinit/node.yaml" --hostname node1 --lock-timeout 1s \
	>"$T/watch" 2>&1 &
WATCH=$!
PIDS+=($WATCH)
wait_for 20 grep -q '^held 1$' "$T/imds/log" || true
wait_for 20 grep -q 'start (the stream' "$T/watch" || true
run node2 10.0.0.2 "$T/se-join"
# The watch must refresh on node2's join while the stand-in still holds the metadata request.
# (node2's put is the only change its stream sees; the count is not 3: the records deleted by
# hand above, without a leave's tombstone, are held for the grace, discovery.lease here.)
joined_early() {
	grep -q 'membership changed.*nodes known through etcd' "$T/watch" || return 1
	! grep -q '^dropped' "$T/imds/log"
}
wait_for 30 grep -q 'membership changed.*nodes known through etcd' "$T/watch" || true
check "events: a metadata service that does not answer does not hold up the watch: node2's join is refreshed while the request is still held" \
	joined_early
echo "# stand-in log when the join was refreshed: $(tr '\n' ' ' < "$T/imds/log")"
joined_early >/dev/null 2>&1 || sed 's/^/#   watch: /' "$T/watch" | head -40
rm -f "$T/imds/hold"
touch "$T/imds/long"
wait_for 30 bash -c "test \$(grep -c '^served long' '$T/imds/log') -ge 3" || true
check "events: a Terminate for node10 after 4090 characters of other names is not node1's: nothing acknowledged" \
	test ! -e "$T/imds/ack"
stayed() {
	[ -n "$("${ETCDCTL[@]}" get --keys-only "${PREFIX}node1")" ] && kill -0 "$WATCH" &&
		! grep -q 'scheduled event' "$T/watch"
}
check "... node1 did not leave (its key is in etcd, the watch runs)" stayed
rm -f "$T/imds/long"
# A leave that fails: another holder keeps the run lock (watch --lock-timeout 1s).
python3 -c 'import fcntl, sys, time
f = open(sys.argv[1], "a")
fcntl.flock(f, fcntl.LOCK_EX)
open(sys.argv[2], "w").close()
time.sleep(300)' "$T/node1/run/hpcinit/lock" "$T/locked" &
LOCKER=$!
PIDS+=($LOCKER)
wait_for 10 test -e "$T/locked" || true
touch "$T/imds/term"
wait_for 30 grep -q 'leaving the cluster failed' "$T/watch" || true
check "events: a Terminate for this VM whose leave fails (the run lock is held): the watch says so" \
	grep -q 'leaving the cluster failed (exit 1); the scheduled event is not acknowledged' "$T/watch"
check "... and acknowledges nothing" test ! -e "$T/imds/ack"
kill "$LOCKER"
wait "$LOCKER" 2>/dev/null || true
wait_for 30 test -s "$T/imds/ack" || true
left_and_acked() {
	[ "$(cat "$T/imds/ack" 2>/dev/null)" = '{"StartRequests":[{"EventId":"E-TERM"}]}' ] || return 1
	[ -z "$("${ETCDCTL[@]}" get --keys-only "${PREFIX}node1")" ]
}
check "... once the lock is free it leaves, then acknowledges the event" left_and_acked
wait_for 10 bash -c "! kill -0 $WATCH 2>/dev/null" || true
check "... and the watch ends" bash -c "! kill -0 $WATCH 2>/dev/null"

# A Terminate that lists this VM and another (vm-2): node1 leaves, but does not acknowledge
# it: that would start it for vm-2 too before vm-2's own leave ran.
rm -f "$T/imds/term" "$T/imds/ack"
run node1 10.0.0.1 "$T/se-rejoin"
touch "$T/imds/shared"
HPCINIT_ADDRESS=10.0.0.1 "$HPCINIT" watch --root "$T/node1" -c "$T/node1/etc/hpcinit/node.yaml" --hostname node1 \
	>"$T/watch2" 2>&1 &
WATCH2=$!
PIDS+=($WATCH2)
wait_for 60 bash -c "! kill -0 $WATCH2 2>/dev/null" || true
left_not_acked() {
	grep -q 'scheduled event E-SHARED: Terminate of this VM and 1 other VM(s)' "$T/watch2" || return 1
	[ -z "$("${ETCDCTL[@]}" get --keys-only "${PREFIX}node1")" ] && ! kill -0 "$WATCH2" 2>/dev/null
}
check "events: a Terminate listing this VM and vm-2: node1 leaves (its key is gone, the watch ended)" left_not_acked
check "... and acknowledges nothing" test ! -e "$T/imds/ack"
check "... and says why" grep -q 'event E-SHARED is not acknowledged: it lists other VMs too' "$T/watch2"

done_testing
