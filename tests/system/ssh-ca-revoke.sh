#!/bin/bash
# ssh.host_keys: ca, what the head signs and revokes (issue 23, classes 3
# and 4), on two fake roots sharing one directory, with the cluster secret;
# real ssh-keygen judges the KRLs (ssh-keygen -Q) and certificates (-L).
#  3. the CA's own key written into certs/revoked.keys is never revoked; a
#     KRL replaced by a record writer is not installed by a node (no HMAC
#     of the cluster secret) and the head writes its own back; a replaced
#     KRL or a junk revoked.krl.hmac is a cluster finding: the compute keeps
#     the last good KRL and its refresh stays ready, and so does a KRL
#     deleted from certs/ (issue 33);
#  4. a new host key under the same boot id is not signed (pinned mode's
#     rule); under a new boot id it is signed and the replaced key revoked.
. "$(dirname "$0")/lib.sh"
H=$T/head C=$T/compute
for r in "$H" "$C"; do
	mkroot "$r"
	mkdir -p "$r/etc/ssh" "$r/etc/hpcinit" "$r/proc/sys/kernel/random"
	printf '0123456789abcdef0123456789abcdef\n' >"$r/etc/hpcinit/cluster.key"
	chmod 0600 "$r/etc/hpcinit/cluster.key"
done
echo 11111111-1111-1111-1111-111111111111 >"$H/proc/sys/kernel/random/boot_id"
echo 22222222-2222-2222-2222-222222222222 >"$C/proc/sys/kernel/random/boot_id"
mkdir -p "$H/shared"
ln -s "$H/shared" "$C/shared"
ssh-keygen -q -t ed25519 -N '' -f "$H/etc/ssh/ssh_host_ed25519_key"
ssh-keygen -q -t ed25519 -N '' -f "$C/etc/ssh/ssh_host_ed25519_key"
cp "$C/etc/ssh/ssh_host_ed25519_key.pub" "$T/k1.pub"
ssh-keygen -q -t ed25519 -N '' -C cca -f "$T/ca"
install -m 0600 "$T/ca" "$H/etc/hpcinit/ssh-ca"
CAPUB=$(cut -d' ' -f1,2 "$T/ca.pub")
spec() {
	cat <<YAML
version: 1
cluster: {name: cca, network: 198.18.11.0/24, secret_file: /etc/hpcinit/cluster.key$([ "$1" = head ] && echo ", role: head")}
discovery: {method: shared, dir: /shared/.hpcinit, expect: 1, wait: 0s}
ssh: {host_keys: ca, ca_public_key: "$CAPUB", cert_validity: 24h$([ "$1" = head ] && echo ", ca_key_file: /etc/hpcinit/ssh-ca")}
YAML
}
spec head >"$T/head.yaml"
spec compute >"$T/compute.yaml"
on_head() { local out=$1; shift; HPCINIT_ADDRESS=198.18.11.1 run_hpc "$out" "$@" --root "$H" --hostname hd1 -c "$T/head.yaml"; }
on_compute() { local out=$1; shift; HPCINIT_ADDRESS=198.18.11.2 run_hpc "$out" "$@" --root "$C" --hostname cn2 -c "$T/compute.yaml"; }
CERTS=$H/shared/.hpcinit/cca/certs
revoked() { ssh-keygen -Q -f "$1" "$2" 2>&1 | grep -q ': REVOKED$'; }     # KRL KEY.pub
not_revoked() { ! revoked "$@"; }
not() { ! "$@"; }
certified() { ssh-keygen -L -f <(head -1 "$CERTS/cn2.cert" | cut -d' ' -f1,2) | grep -qF "$(ssh-keygen -lf "$1" | cut -d' ' -f2)"; }

on_compute "$T/c0" apply --only discovery
on_head "$T/h0" apply
on_compute "$T/c0b" apply
check "setup: cn2 has its certificate" [ -s "$C/etc/ssh/ssh_host_ed25519_key-cert.pub" ]
check "setup: the head publishes the KRL's HMAC" [ -s "$CERTS/revoked.krl.hmac" ]
cp "$C/etc/hpcinit/ssh_revoked_keys" "$T/krl.installed"

# 3a. The CA's own key in revoked.keys: never revoked.
printf '%s\n' "$CAPUB" >>"$CERTS/revoked.keys"       # (no time: as a list from before times)
rm -f "$H/var/lib/hpcinit/ssh-ca/revoked.keys"      # a rebuilt head: it reads certs/'s list
on_head "$T/h1" apply -v
check "CA key in revoked.keys: the published KRL does not revoke the CA" not_revoked "$CERTS/revoked.krl" "$T/ca.pub"
check "CA key in revoked.keys: the head says it dropped it" contains "$T/h1" "revoked.keys names the CA's own key"

# 3b. A record writer replaces the KRL with one revoking cn2's key.
ssh-keygen -q -k -f "$T/evil.krl" "$T/k1.pub"
cp "$T/evil.krl" "$CERTS/revoked.krl"
on_compute "$T/c1" refresh -v
check "replaced KRL: cn2 does not install it" not_revoked "$C/etc/hpcinit/ssh_revoked_keys" "$T/k1.pub"
check "replaced KRL: cn2 says why" contains "$T/c1" "does not verify with the cluster secret"
check "replaced KRL: not cn2's problem: its refresh is ready (exit 0), the last good KRL stays" \
	bash -c "[ $rc -eq 0 ] && cmp -s '$C/etc/hpcinit/ssh_revoked_keys' '$T/krl.installed'"
on_head "$T/h2" refresh
check "replaced KRL: the head writes its own back" not cmp -s "$CERTS/revoked.krl" "$T/evil.krl"
check "replaced KRL: the repaired KRL does not revoke cn2" not_revoked "$CERTS/revoked.krl" "$T/k1.pub"
on_compute "$T/c2" refresh
check "repaired KRL: cn2 installs it again" cmp -s "$C/etc/hpcinit/ssh_revoked_keys" "$CERTS/revoked.krl"

# 3c. revoked.krl.hmac replaced with junk (the anonymous uid can, on a squashing head): a cluster
# finding on every compute, never a failed ssh step (a booting node would never start slurmd).
cp "$CERTS/revoked.krl.hmac" "$T/hmac.good"
cp "$C/etc/hpcinit/ssh_revoked_keys" "$T/krl.good"
echo junk >"$CERTS/revoked.krl.hmac"
HPCINIT_ADDRESS=198.18.11.2 run_hpc_stdout "$T/c2b.json" refresh --json --root "$C" --hostname cn2 -c "$T/compute.yaml"
check "junk KRL HMAC: cn2's refresh exits 0 (ready)" [ "$rc" -eq 0 ]
ssh_cluster() {
	python3 - "$1" <<-'PY'
	import json, sys
	d = json.load(open(sys.argv[1]))
	m = [x for x in d["modules"] if x["name"] == "ssh"][0]
	assert m["status"] in ("ok", "changed"), m["status"]
	f = {x["tag"]: x["severity"] for x in m["findings"]}
	assert f.get("ssh.ca.krl-not-vouched") == "cluster", f
	PY
}
check "... its ssh step is not failed; ssh.ca.krl-not-vouched has severity \"cluster\"" \
	ssh_cluster "$T/c2b.json"
check "... and the last good KRL stays installed" cmp -s "$C/etc/hpcinit/ssh_revoked_keys" "$T/krl.good"
cp "$T/hmac.good" "$CERTS/revoked.krl.hmac"

# 4a. A new host key under the same boot id: not signed, the old certificate stays.
rm "$C/etc/ssh/ssh_host_ed25519_key" "$C/etc/ssh/ssh_host_ed25519_key.pub"
ssh-keygen -q -t ed25519 -N '' -f "$C/etc/ssh/ssh_host_ed25519_key"
cp "$C/etc/ssh/ssh_host_ed25519_key.pub" "$T/k2.pub"
on_compute "$T/c3" apply --only discovery
on_head "$T/h3" refresh -v
check "same boot id, new key: the head refuses it" contains "$T/h3" "HOST KEY CHANGED while the node stayed up"
check "same boot id, new key: cn2.cert still certifies the old key" certified "$T/k1.pub"

# 4b. A new boot id: the new key is signed, the replaced one revoked.
echo 33333333-3333-3333-3333-333333333333 >"$C/proc/sys/kernel/random/boot_id"
on_compute "$T/c4" apply --only discovery
on_head "$T/h4" refresh -v
check "new boot id: the new key is certified" certified "$T/k2.pub"
check "new boot id: the replaced key is in the head's revocation list" grep -qF "$(cut -d' ' -f2 "$T/k1.pub")" "$CERTS/revoked.keys"
check "new boot id: the replaced key is revoked by the KRL" revoked "$CERTS/revoked.krl" "$T/k1.pub"
check "new boot id: the head says so" contains "$T/h4" "replaced (boot id 22222222-2222-2222-2222-222222222222 -> 33333333"

# 4c. The KRL deleted from certs/ (the anonymous uid can delete it on a squashing head): the compute
# keeps the last good KRL, which still revokes the replaced key (a missing KRL un-revokes nobody).
on_compute "$T/c5" refresh
check "setup: cn2 installed the KRL revoking its replaced key" revoked "$C/etc/hpcinit/ssh_revoked_keys" "$T/k1.pub"
rm "$CERTS/revoked.krl"
on_compute "$T/c6" refresh -v
check "KRL deleted: cn2 keeps the last good one (the replaced key stays revoked), exit 0" \
	eval '[ "$rc" = 0 ] && revoked "$C/etc/hpcinit/ssh_revoked_keys" "$T/k1.pub"'
check "... and says why" contains "$T/c6" "revoked.krl: missing (the head publishes it on every run)"
done_testing
