#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The spec's users, the same on every node (issue 35, "Directory users"),
# through the real binary on fake roots sharing one rendezvous directory
# (each root's /etc/passwd is its user database; tests/system/ssh-users-nss.sh
# does it through NSS, with a second source):
#  1. a directory slow at boot: alice appears 2 s after apply began; the ssh
#     step waits for her (ssh.users_wait) and the node ends ready, her key
#     pair written as her, her ids in the node's record (users:);
#  2. a user that never resolves: ssh.user.unresolved (failed) naming her,
#     at the deadline and not before; check says it at once;
#  3. one node resolves alice to another UID (per-VM users): the odd node
#     fails with ssh.user.ids-differ, the others name it in a cluster
#     finding and stay ready; on a tie the head's side is right;
#  4. ssh.hostbased: a host public key only root can read (cloud-init writes
#     its ssh_keys: 0600; users' ssh then has no key to offer) is reported
#     by check and made 0644 by apply.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "ssh-users: needs root (homes owned by their users)" >&2; exit 77; }
chmod 0755 "$T"
openssl rand -hex 32 > "$T/cluster.key"
mkdir -p "$T/shared"
# node NAME [UID]: a fake root whose /shared is the one shared directory; alice there when UID is given
node() {
	local r=$T/$1
	mkroot "$r"
	mkdir -p "$r/etc/hpcinit" "$r/etc/ssh" "$r/home/alice"
	install -m 0600 "$T/cluster.key" "$r/etc/hpcinit/cluster.key"
	ln -s "$T/shared" "$r/shared"
	chown "${2:-5001}:${2:-5001}" "$r/home/alice"
	[ -z "${2:-}" ] || echo "alice:x:$2:$2::/home/alice:/bin/bash" >> "$r/etc/passwd"
}
printf '%s\n' 'version: 1' \
	'cluster: {name: ux, network: 10.0.0.0/24, secret_file: /etc/hpcinit/cluster.key}' \
	'discovery: {method: shared, dir: /shared/.hpcinit, wait: 0s}' \
	'ssh: {users: [alice], users_wait: 4s}' > "$T/compute.yaml"
sed -e 's/secret_file/role: head, secret_file/' "$T/compute.yaml" > "$T/head.yaml"
sed -e 's/users_wait: 4s/users_wait: 2s/' "$T/compute.yaml" > "$T/short.yaml"
# on NAME ADDRESS SPEC OUT CMD ARGS...: hpcinit CMD --json as NAME (a whole run: its state is recorded and announced)
on() {
	local n=$1 a=$2 s=$3 out=$4 cmd=$5
	shift 5
	HPCINIT_ADDRESS=$a run_hpc_stdout "$out" "$cmd" --json --root "$T/$n" \
		-c "$T/$s.yaml" --hostname "$n" "$@"
}
# finding JSON TAG SEVERITY: the texts of that finding in the report (any step); false when none
cat > "$T/finding.py" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
def walk(o):
    if isinstance(o, dict):
        if "tag" in o and "severity" in o:
            yield o
        for v in o.values():
            yield from walk(v)
    elif isinstance(o, list):
        for v in o:
            yield from walk(v)
hits = [f for f in walk(doc) if f["tag"] == sys.argv[2] and f["severity"] == sys.argv[3]]
for f in hits:
    print(f.get("text"))
sys.exit(0 if hits else 1)
PY
finding() { python3 "$T/finding.py" "$@"; }
# has JSON TAG SEVERITY PATTERN: a finding of that tag and severity whose text has PATTERN
has() { finding "$1" "$2" "$3" | grep -qF -- "$4"; }
NODES=$T/shared/.hpcinit/ux/nodes

# ---- 1. alice resolves 2 s after apply began: waited for ----
node n1
(sleep 2; echo "alice:x:5001:5001::/home/alice:/bin/bash" >> "$T/n1/etc/passwd") &
late=$!
start=$(date +%s%N)
on n1 10.0.0.1 head "$T/a1.json" apply
wait "$late"
took=$((($(date +%s%N) - start) / 1000000))
echo "# apply took ${took} ms"
check "slow directory: apply exits 0 (ready)" test "$rc" = 0
check "... it waited for alice (>= 2 s)" test "$took" -ge 2000
check "... it said so in the log" contains "$T/a1.json.err" "user alice does not resolve yet; waiting up to 4 s for it (ssh.users_wait)"
check "... no ssh.user.unresolved" not_contains "$T/a1.json" ssh.user.unresolved
check "... alice's key pair written as alice" \
	test "$(stat -c %u "$T/n1/home/alice/.ssh/id_ed25519" 2>/dev/null)" = 5001
check "... n1's record says what it resolved (the announce put it again)" \
	grep -qx 'users: alice=5001:5001' "$NODES/n1.rec"

# ---- 2. never there: failed at the deadline, naming her ----
node n9
start=$(date +%s%N)
on n9 10.0.0.9 short "$T/a9.json" apply
took=$((($(date +%s%N) - start) / 1000000))
echo "# apply took ${took} ms"
finding "$T/a9.json" ssh.user.unresolved failed | sed 's/^/#   /'
check "unresolved: apply fails (exit $rc)" test "$rc" != 0
check "... ssh.user.unresolved (failed) names alice and the wait" \
	has "$T/a9.json" ssh.user.unresolved failed "user alice does not resolve in /etc/passwd after 2.0 s (ssh.users_wait)"
check "... at the deadline (2 s), not much later" test "$took" -ge 2000 -a "$took" -lt 15000
check "... n9's record says nothing of alice" not_contains "$NODES/n9.rec" "users:"
start=$(date +%s%N)
on n9 10.0.0.9 short "$T/c9.json" check
took=$((($(date +%s%N) - start) / 1000000))
check "... check says so at once (${took} ms)" has "$T/c9.json" ssh.user.unresolved failed "user alice does not resolve in /etc/passwd: "
rm -f "$NODES/n9.rec"

# ---- 3. n3 resolves alice to another UID ----
node n2 5001
node n3 7777
on n2 10.0.0.2 compute "$T/a2.json" apply
check "setup: n2 ready" test "$rc" = 0
on n3 10.0.0.3 compute "$T/a3.json" apply
finding "$T/a3.json" ssh.user.ids-differ failed | sed 's/^/#   /'
check "differing UID: the odd node n3 fails (exit $rc)" test "$rc" != 0
check "... ssh.user.ids-differ (failed) on n3, with both ids" \
	has "$T/a3.json" ssh.user.ids-differ failed "user alice is 7777:7777 here but 5001:5001 on 2 of 3 nodes, the head's among them"
check "... n3's record carries its ids" grep -qx 'users: alice=7777:7777' "$NODES/n3.rec"
check "... n3's record says it failed, and why" grep -qx 'reason: ssh.user.ids-differ' "$NODES/n3.rec"
on n2 10.0.0.2 compute "$T/b2.json" apply
finding "$T/b2.json" ssh.user.ids-differ cluster | sed 's/^/#   /'
check "... n2 stays ready (exit $rc)" test "$rc" = 0
check "... and names n3 in a cluster finding" \
	has "$T/b2.json" ssh.user.ids-differ cluster "user alice is 5001:5001 here and on 2 of 3 nodes, but not on n3 (7777:7777)"
check "... n2 has no failed ids-differ of its own" bash -c "! python3 '$T/finding.py' '$T/b2.json' ssh.user.ids-differ failed"
on n1 10.0.0.1 head "$T/b1.json" apply
check "... the head too (exit $rc)" has "$T/b1.json" ssh.user.ids-differ cluster "but not on n3 (7777:7777)"

# ---- a tie: n2 leaves; n1 (head, 5001) against n3 (7777): the head's side is right ----
rm -f "$NODES/n2.rec"
on n1 10.0.0.1 head "$T/t1.json" apply
check "tie: the head stays ready (exit $rc)" test "$rc" = 0
check "... and names n3" has "$T/t1.json" ssh.user.ids-differ cluster "1 of 2 nodes, but not on n3 (7777:7777)"
on n3 10.0.0.3 compute "$T/t3.json" apply
check "... n3 still fails" has "$T/t3.json" ssh.user.ids-differ failed "on 1 of 2 nodes, the head's among them"

# ---- fixed: n3's account gets the directory's UID, and it is ready again ----
sed -i 's/^alice:x:7777:7777:/alice:x:5001:5001:/' "$T/n3/etc/passwd"
chown -R 5001:5001 "$T/n3/home/alice"
on n3 10.0.0.3 compute "$T/f3.json" apply
check "fixed: n3 ready again (exit $rc)" test "$rc" = 0
check "... its record says 5001 now" grep -qx 'users: alice=5001:5001' "$NODES/n3.rec"

# ---- host-based login: a host public key only root can read (cloud-init's ssh_keys: writes 0600) ----
node n7 5001
ssh-keygen -q -t ed25519 -N '' -f "$T/n7/etc/ssh/ssh_host_ed25519_key" < /dev/null
chmod 0600 "$T/n7/etc/ssh/ssh_host_ed25519_key.pub"
sed -e 's/ssh: {users: \[alice\], users_wait: 4s}/ssh: {users: [alice], hostbased: true}/' "$T/compute.yaml" > "$T/hb.yaml"
on n7 10.0.0.7 hb "$T/c7.json" check
check "hostbased: check names the unreadable host public key (degraded)" \
	has "$T/c7.json" ssh.hostbased.pubkey-unreadable degraded "/etc/ssh/ssh_host_ed25519_key.pub is mode 0600"
on n7 10.0.0.7 hb "$T/a7.json" apply
check "... apply makes it 0644 (exit $rc)" test "$(stat -c %a "$T/n7/etc/ssh/ssh_host_ed25519_key.pub")" = 644
check "... and says so" contains "$T/a7.json" "ssh_host_ed25519_key.pub: made readable (0644) for host-based login"
check "... the private key stays 0600" test "$(stat -c %a "$T/n7/etc/ssh/ssh_host_ed25519_key")" = 600
done_testing
