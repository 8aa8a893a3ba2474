#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Readiness in the record over a real 3-member etcd (issue 33): three
# simulated nodes apply; each key's record says its node's state.  One node
# fails (its hostfile step cannot write): its key says failed with the tag,
# put again by the announce; "hpcinit members" on another node shows it, the
# healthy node's refresh leaves it out of the MPI hostfiles and keeps it in
# the clush group; repaired, it says ready again.  A refresh whose state did
# not change puts nothing.  Then 1,000 signed records in etcd: members lists
# them at once, bounded.
SIM_PREFIX=emb SIM_NET=198.19.37
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/etcd-lib.sh"

N1=$(node 1) N2=$(node 2) N3=$(node 3)
ALL=("$N1" "$N2" "$N3")
sim up 3 >/dev/null
etcd_up
etcd_spec 300s 3 > "$T/node.yaml"
etcd_spec 300s 3 | sed 's|^hostfile: {}|hostfile: {dir: /etc/blocked}|' > "$T/bad.yaml"
for n in "${ALL[@]}"; do install_spec "$n" "$T/node.yaml"; done
val() { etcdctl_ get --print-value-only "/hpcinit/$CLUSTER/nodes/$1"; }
rev() { etcdctl_ get -w json "/hpcinit/$CLUSTER/nodes/$1" | sed 's/.*"mod_revision":\([0-9]*\).*/\1/'; }

# The helpers' starts counted, per node: the apply runs under strace (a wrapper that names its
# traces after the node, one a process: no line split by another's), where a start is an exec
# of hpcinit-etcd or, in the child a session forks, the load of hpcinit-etcd.so
# (proc_start_module).
printf '#!/bin/bash\nexec strace -ff -qq -e trace=execve,openat -o "%s/trace.$(</proc/sys/kernel/hostname)" "$@"\n' \
	"$T" > "$T/trace-wrap"
chmod 0755 "$T/trace-wrap"
starts() { cat "$T/trace.$1".* | grep -Ec 'execve\(".*/hpcinit-etcd", .* = 0$|openat\(.*/hpcinit-etcd\.so", .* = [0-9]+$' || true; }
execs() { cat "$T/trace.$1".* | grep -Ec 'execve\(".*/hpcinit-etcd", .* = 0$' || true; }

# What the cold starts ask of etcd, counted by the members (tests/lib/etcd-metrics.sh).
. "$TOP_SRCDIR/tests/lib/etcd-metrics.sh"
in_etcd() { ip netns exec "$ETCD_NS" "$@"; }
grpc() { etcd_grpc_started "$1" in_etcd "$(etcd_client_url 1)" "$(etcd_client_url 2)" "$(etcd_client_url 3)"; }
ka0=$(grpc LeaseKeepAlive) rg0=$(grpc Range) pt0=$(grpc Put)
HPCINIT_WRAPPER_WAS=${HPCINIT_WRAPPER:-}
HPCINIT_WRAPPER="$T/trace-wrap $HPCINIT_WRAPPER_WAS"
check "apply on 3 nodes at once: every one exits 0" apply_all "$T/apply" "${ALL[@]}"
HPCINIT_WRAPPER=$HPCINIT_WRAPPER_WAS
ka=$(($(grpc LeaseKeepAlive) - ka0)) rg=$(($(grpc Range) - rg0)) pt=$(($(grpc Put) - pt0))
# The announce is one put: the lease its session granted a moment before needs no keepalive,
# and the record it put then differs from the one it puts now without asking (hpcinit-etcd.c).
check "the 3 cold starts kept no lease alive (etcd counted $ka) and ranged once a node at most (their list; $rg)" \
	test "$ka" = 0 -a "$rg" -le 3
# A node's record changes twice on its way in: its first put, and the announce of its state,
# which also says the cluster formed (discovery leaves "formed: true" to it: one change fewer
# for every watcher and every waiting node to read).
check "the 3 cold starts put 2 records a node (etcd counted $pt): the first, and the announce saying formed" \
	test "$pt" = 6
check "... every key's record says the cluster formed" \
	same_text "$(for n in "${ALL[@]}"; do val "$n" | grep -c '^formed: true$'; done | tr '\n' ' ')" "1 1 1 "
check "every key's record says ready" \
	same_text "$(for n in "${ALL[@]}"; do val "$n" | grep -c '^state: ready$'; done | tr '\n' ' ')" "1 1 1 "
# The state went from nothing to ready: the announce put it through the discovery step's own
# helper (its child stayed for it: agent/core/runner.c), not a second one (issue 37).
check "a cold start starts one etcd helper a node (the announce on the step's session)" \
	same_text "$(for n in "${ALL[@]}"; do starts "$n"; done | tr '\n' ' ')" "1 1 1 "
check "... entered in the session's child, not exec'd (proc_start_module)" \
	same_text "$(for n in "${ALL[@]}"; do execs "$n"; done | tr '\n' ' ')" "0 0 0 "

# N3 fails: its hostfiles' directory is a file.
on "$N3" touch /etc/blocked
on "$N3" install -m 0644 "$T/bad.yaml" /etc/hpcinit/node.yaml
run_hpc "$T/fail" "$N3" apply
check "$N3's apply fails (exit 1)" test "$rc" = 1
check "$N3's key says failed, with its worst tag" \
	same_text "$(val "$N3" | grep -E '^(state|reason):')" "$(printf 'state: failed\nreason: hostfile.failed')"

run_hpc "$T/members" "$N1" members
check "members on $N1 exits 0" test "$rc" = 0
check "members: 3 members, 1 failed, 2 ready" contains "$T/members" "3 members, 1 failed, 2 ready"
check "members: $N3 first, failed, its boot's time to ready, its reason" \
	grep -qE "^$N3 +failed +[0-9]+\.[0-9] s +hostfile\.failed\$" <(sed -n 3p "$T/members")
check "... $N1 and $N2 ready, with theirs" \
	same_text "$(grep -cE "^(${SIM_PREFIX}1|${SIM_PREFIX}2) +ready +[0-9]+\.[0-9] s\$" "$T/members")" 2
check "members says where it read (etcd, the prefix)" contains "$T/members" "(etcd /hpcinit/$CLUSTER/nodes/)"
rc=0
hpc "$N2" members --json >"$T/members.json" 2>"$T/members.err" || rc=$?
json_ok() {
	python3 - "$T/members.json" "$N1" "$N2" "$N3" <<-'EOF'
	import json, sys
	d = json.load(open(sys.argv[1]))
	n1, n2, n3 = sys.argv[2:5]
	s = {n["hostname"]: (n["state"], n.get("reason")) for n in d["nodes"]}
	assert d["method"] == "etcd" and d["members"] == 3 and d["failed"] == 1, d
	assert s == {n1: ("ready", None), n2: ("ready", None), n3: ("failed", "hostfile.failed")}, s
	EOF
}
check "members --json on $N2: the same states" json_ok

rev0=$(rev "$N1")
run_hpc "$T/refresh" "$N1" "${REFRESH[@]}"
check "$N1's refresh exits 0" test "$rc" = 0
check "$N1's MPI hostfiles leave $N3 out" hostfiles_list "$N1" "$N1" "$N2"
check "... its clush group keeps all 3" \
	same_text "$(on "$N1" nodeset -f "@$CLUSTER")" "${SIM_PREFIX}[1-3]"
check "a refresh whose state did not change puts nothing (mod_revision $rev0 stays)" test "$(rev "$N1")" = "$rev0"

# Repaired: N3's next apply announces ready; N1's refresh takes it back.
on "$N3" install -m 0644 "$T/node.yaml" /etc/hpcinit/node.yaml
run_hpc "$T/repair" "$N3" apply
check "$N3 repaired: apply exits 0" test "$rc" = 0
check "$N3's key says ready again" same_text "$(val "$N3" | grep -E '^(state|reason):')" "state: ready"
run_hpc "$T/refresh2" "$N1" "${REFRESH[@]}"
check "$N1's hostfiles list all 3 again" hostfiles_list "$N1" "${ALL[@]}"

# 1,000 signed records in etcd (one connection, the v3 JSON gateway): members at once, bounded.
GEN=$TOP_BUILDDIR/tests/bench/gen-records
[ -x "$GEN" ] || make -s -C "$TOP_BUILDDIR" tests/bench/gen-records
mkdir -p "$T/gen"
"$GEN" -s "$T/cluster.key" -p "${SIM_PREFIX}x" "$T/gen" "$CLUSTER" 1000
ip netns exec "$ETCD_NS" python3 - "$T/gen" "/hpcinit/$CLUSTER/nodes/" "$ETCD_HOST" "$((ETCD_PORT0 + 1))" <<-'EOF'
import base64, http.client, json, os, sys
d, prefix, host, port = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
c = http.client.HTTPConnection(host, port, timeout=10)
b64 = lambda b: base64.b64encode(b).decode()
for f in sorted(os.listdir(d)):
    body = json.dumps({"key": b64((prefix + f[:-4]).encode()), "value": b64(open(os.path.join(d, f), "rb").read())})
    c.request("POST", "/v3/kv/put", body, {"Content-Type": "application/json"})
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
EOF
t0=$(date +%s%N)
run_hpc "$T/many" "$N2" members
t1=$(date +%s%N)
echo "# members through etcd at 1,003 records: $(( (t1 - t0) / 1000000 )) ms"
check "1,003 members through etcd (exit 0)" contains "$T/many" "1003 members"
check "... the table is bounded (2 heads, 100 members, the note)" test "$(wc -l < "$T/many")" = 103
check "... the note says how many more" contains "$T/many" "903 more"
done_testing
