#!/bin/bash
# ssh.host_keys: ca on simulated nodes, judged by the real OpenSSH client and sshd:
#  1. 4 nodes (hps-1 the head, holding the CA key), one apply each: every node
#     logs in to every node by name and address with StrictHostKeyChecking=yes;
#     known_hosts is the same two @cert-authority lines on every node;
#  2. a 5th node joins: the old compute nodes accept it with no hpcinit run on
#     them (their known_hosts does not change); only the head runs, to sign;
#  3. a removed node's certificate is refused once the nodes have the KRL,
#     and a rebuilt node at the same address gets a new certificate;
#  4. refusals: a certificate from another CA (the node refuses to install
#     it, a cluster finding: it keeps its last good one and stays ready; ssh
#     refuses a host that presents one), a certificate for a
#     name the node does not own, a compute holding the CA key, and a spec
#     giving a compute ca_key_file.
. "$TOP_SRCDIR/tests/cluster/ssh-lib.sh"

ssh-keygen -q -t ed25519 -N '' -C hpsc-ca -f "$T/ca"
CAPUB=$(cut -d' ' -f1,2 "$T/ca.pub")
cluster_up 4
sed -i "s|^ssh: {users: \[alice, bob\]}|ssh: {users: [alice, bob], host_keys: ca, ca_public_key: \"$CAPUB hpsc-ca\", cert_validity: 24h}|" "$T/node.yaml"
sed "s|^cluster: {name: hpsc,|cluster: {name: hpsc, role: head,|; s|cert_validity: 24h}|cert_validity: 24h, ca_key_file: /etc/hpcinit/ssh-ca}|" \
	"$T/node.yaml" > "$T/head.yaml"
grep -q 'role: head' "$T/head.yaml" && grep -q ca_key_file "$T/head.yaml" || bail_out "test bug: head spec"
on hps-1 install -D -m 0600 "$T/ca" /etc/hpcinit/ssh-ca
# The sim's sshd_config has no Include; Debian's has it at its top.
for n in $(nodes); do
	on "$n" sed -i '1i Include /etc/ssh/sshd_config.d/*.conf' /etc/ssh/sshd_config
done

# spec_of NODE: the spec file that node uses
spec_of() { [ "$1" = hps-1 ] && echo "$T/head.yaml" || echo "$T/node.yaml"; }
apply_nodes() {         # cmd nodes...: in parallel, each with its own spec; all must exit 0
	local cmd=$1 n pids=() bad=0 i=0
	shift
	for n in "$@"; do
		on "$n" "$HPCINIT" "$cmd" -c "$(spec_of "$n")" --json > "$T/out.$n" 2> "$T/err.$n" &
		pids+=($!)
	done
	for n in "$@"; do
		wait "${pids[$i]}" || { bad=1; echo "$cmd on $n failed"; cat "$T/err.$n" "$T/out.$n"; }
		i=$((i + 1))
	done
	return $bad
}
sshs() {                # src user target [ssh options]: the remote hostname
	local s=$1 u=$2 d=$3
	shift 3
	on "$s" runuser -u "$u" -- ssh -o BatchMode=yes -o StrictHostKeyChecking=yes "$@" "$d" hostname
}
addr() { bash "$SIM" addr "$1"; }

# ---- 1. one apply on 4 nodes
apply_nodes apply hps-1 hps-2 hps-3 hps-4 || bail_out "apply"
for n in hps-1 hps-2 hps-3 hps-4; do
	[ "$(module_field "$n" ssh status)" = changed ] || { module_field "$n" ssh details; bail_out "$n: ssh $(module_field "$n" ssh status)"; }
	on "$n" test -s /etc/ssh/ssh_host_ed25519_key-cert.pub || bail_out "$n: no certificate installed"
done
ok "apply on 4 nodes; every node has its certificate ($(module_field hps-1 ssh details | grep -m1 'CA:'))"
for s in hps-1 hps-2 hps-3 hps-4; do
	for d in hps-1 hps-2 hps-3 hps-4; do
		got=$(sshs "$s" alice "$d" 2>&1) || bail_out "alice@$s -> $d: $got"
		[ "$got" = "$d" ] || bail_out "alice@$s -> $d: got '$got'"
		got=$(sshs "$s" bob "$(addr "$d")" 2>&1) || bail_out "bob@$s -> $(addr "$d"): $got"
		[ "$got" = "$d" ] || bail_out "bob@$s -> $d by address: got '$got'"
	done
done
ok "32 logins (4x4, by name and by address) with StrictHostKeyChecking=yes"
# The host key that was checked is the certificate: ssh -v says so.
on hps-2 runuser -u alice -- ssh -v -o BatchMode=yes -o StrictHostKeyChecking=yes hps-3 true 2>&1 |
	grep -q 'Server host certificate: ssh-ed25519-cert-v01@openssh.com' || bail_out "hps-3 did not present a certificate"
kh=$(on hps-1 cat /etc/hpcinit/ssh_known_hosts)
for n in hps-2 hps-3 hps-4; do
	[ "$(on "$n" cat /etc/hpcinit/ssh_known_hosts)" = "$kh" ] || bail_out "$n: known_hosts differs from hps-1's"
done
[ "$(grep -vc '^#' <<<"$kh")" = 2 ] || bail_out "known_hosts: $(grep -v '^#' <<<"$kh")"
grep -v '^#' <<<"$kh" | grep -qv '^@cert-authority ' && bail_out "known_hosts has a line that is not @cert-authority"
ok "known_hosts: the same 2 lines on every node: $(grep -v '^#' <<<"$kh" | cut -c1-60 | tr '\n' '|')"

# Idempotence: a second apply changes nothing and reloads no sshd.
apply_nodes apply hps-1 hps-2 hps-3 hps-4 || bail_out "second apply"
for n in hps-1 hps-2 hps-3 hps-4; do
	[ "$(module_field "$n" ssh status)" = ok ] || { module_field "$n" ssh details; bail_out "$n: second apply: ssh $(module_field "$n" ssh status)"; }
done
ok "second apply: ssh ok on every node (nothing re-signed, nothing rewritten)"

# ---- 2. a 5th node joins
for n in hps-2 hps-3 hps-4; do on "$n" sha256sum /etc/hpcinit/ssh_known_hosts /etc/hpcinit/ssh_revoked_keys; done > "$T/kh.before"
new=$(bash "$SIM" add)
[ "$new" = hps-5 ] || bail_out "sim add gave '$new'"
prepare_node hps-5
on hps-5 sed -i '1i Include /etc/ssh/sshd_config.d/*.conf' /etc/ssh/sshd_config
t0=$(date +%s.%N)
on hps-5 "$HPCINIT" apply -c "$T/node.yaml" --json > "$T/out.hps-5" 2> "$T/err.hps-5" &
joiner=$!
sleep 1
hp hps-1 refresh -c "$T/head.yaml"
[ "$(cat "$T/rc.hps-1")" = 0 ] || bail_out "head refresh: $(cat "$T/err.hps-1")"
wait $joiner || bail_out "apply on hps-5: $(cat "$T/err.hps-5")"
for s in hps-2 hps-3 hps-4; do
	got=$(sshs "$s" alice "$(addr hps-5)" 2>&1) || bail_out "old node $s -> new hps-5: $got"
	[ "$got" = hps-5 ] || bail_out "$s -> hps-5: got '$got'"
done
t1=$(date +%s.%N)
for n in hps-2 hps-3 hps-4; do on "$n" sha256sum /etc/hpcinit/ssh_known_hosts /etc/hpcinit/ssh_revoked_keys; done > "$T/kh.after"
cmp -s "$T/kh.before" "$T/kh.after" || bail_out "an old node's trust files changed"
# (The other way, alice's key from hps-5 reaches authorized_keys with each
# node's next refresh; host-based login, ssh-hostbased.sh, needs none.)
got=$(sshs hps-5 alice hps-1 2>&1) || bail_out "hps-5 -> hps-1: $got"
ok "hps-5 joined: hps-2..4 accept it with no run on them (files unchanged), trusted by all $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s after its apply started"

# ---- 3. a removed node: its record goes, the head revokes its key
cp "$SHARED/hpsc/nodes/hps-4.rec" "$T/hps-4.rec"
rm -f "$SHARED/hpsc/nodes/hps-4.rec"
hp hps-1 refresh -c "$T/head.yaml"
det=$(module_field hps-1 ssh details)    # (not piped into grep -q: pipefail and SIGPIPE)
grep -q 'hps-4: no longer a member; its host keys are revoked' <<<"$det" || bail_out "head did not revoke hps-4: $det"
got=$(sshs hps-2 alice "$(addr hps-4)" 2>&1) || bail_out "control: before hps-2 has the KRL, hps-4 is still accepted: $got"
hp hps-2 refresh
if out=$(sshs hps-2 alice "$(addr hps-4)" 2>&1); then bail_out "hps-2 accepted removed hps-4's certificate"; fi
grep -qi 'revoked' <<<"$out" || bail_out "refused, but not for revocation: $out"
ok "removed hps-4's certificate is refused once hps-2 has the KRL: $(grep -i -m1 revoked <<<"$out")"

# A rebuilt hps-4 at the same address: a new host key, a new certificate.
on hps-4 rm -f /etc/ssh/ssh_host_ed25519_key /etc/ssh/ssh_host_ed25519_key.pub
on hps-4 ssh-keygen -q -t ed25519 -N '' -f /etc/ssh/ssh_host_ed25519_key
cat /proc/sys/kernel/random/uuid > "$T/boot_id.hps-4"
on hps-4 "$HPCINIT" apply -c "$T/node.yaml" --json > "$T/out.hps-4" 2> "$T/err.hps-4" &
joiner=$!
sleep 1
hp hps-1 refresh -c "$T/head.yaml"
wait $joiner || bail_out "apply on rebuilt hps-4: $(cat "$T/err.hps-4")"
got=$(sshs hps-2 alice "$(addr hps-4)" 2>&1) || bail_out "rebuilt hps-4 refused: $got"
[ "$got" = hps-4 ] || bail_out "rebuilt hps-4: got '$got'"
ok "rebuilt hps-4 (new host key, same address) has a new certificate and is accepted (its old key stays revoked)"

# ---- 4. refusals
CERTS=$SHARED/hpsc/certs
cp "$CERTS/hps-3.cert" "$T/hps-3.cert.good"
on hps-3 cat /etc/ssh/ssh_host_ed25519_key.pub > "$T/hps-3.pub"
# (a) another CA signed hps-3's key
ssh-keygen -q -t ed25519 -N '' -C evil-ca -f "$T/evil"
ssh-keygen -q -s "$T/evil" -h -I evil -n hps-3,"$(addr hps-3)" -V +1h "$T/hps-3.pub"
cp "$T/hps-3-cert.pub" "$CERTS/hps-3.cert"
on hps-3 cat /etc/ssh/ssh_host_ed25519_key-cert.pub > "$T/hps-3-cert.good"
hp hps-3 refresh
det=$(module_field hps-3 ssh details)
grep -q 'another CA' <<<"$det" || bail_out "no other-ca finding: $det"
on hps-3 cmp -s /etc/ssh/ssh_host_ed25519_key-cert.pub "$T/hps-3-cert.pub" && bail_out "the foreign certificate was installed"
# Not the head's: a cluster finding; hps-3 keeps its last good certificate and stays ready.
[ "$(cat "$T/rc.hps-3")" = 0 ] || bail_out "another CA's certificate in certs/ made hps-3's refresh exit $(cat "$T/rc.hps-3")"
on hps-3 cmp -s /etc/ssh/ssh_host_ed25519_key-cert.pub "$T/hps-3-cert.good" || bail_out "hps-3's good certificate was replaced"
grep -q 'the last good certificate, kept' <<<"$det" || bail_out "hps-3 does not say it kept its certificate: $det"
[ "$(sshs hps-2 alice hps-3 2>&1)" = hps-3 ] || bail_out "hps-3 not reachable with its kept certificate"
ok "a certificate from another CA is refused (a cluster finding; the last good one is kept, exit 0): $(grep -m1 'another CA' <<<"$det" | cut -c1-100)"
# ... and ssh refuses a host presenting one (installed by hand, as an attacker would).
on hps-3 cp /etc/ssh/ssh_host_ed25519_key-cert.pub "$T/hps-3-cert.installed"
on hps-3 cp "$T/hps-3-cert.pub" /etc/ssh/ssh_host_ed25519_key-cert.pub
on hps-3 sh -c 'kill -HUP $(cat '"$T"'/sim/nodes/hps-3/sshd.pid)'
sleep 0.5
if out=$(sshs hps-2 alice hps-3 2>&1); then bail_out "ssh accepted a host certificate from another CA"; fi
ok "ssh refuses hps-3 presenting another CA's certificate: $(grep -m1 -i 'host key\|certificate\|verification' <<<"$out")"
on hps-3 cp "$T/hps-3-cert.installed" /etc/ssh/ssh_host_ed25519_key-cert.pub
# (b) our CA, but for a name hps-3 does not own
ssh-keygen -q -s "$T/ca" -h -I wrong -n hps-3,hps-2 -V +1h "$T/hps-3.pub"
cp "$T/hps-3-cert.pub" "$CERTS/hps-3.cert"
hp hps-3 refresh
det=$(module_field hps-3 ssh details)
grep -q 'names hps-2, which is not this node' <<<"$det" || bail_out "no foreign-name finding: $det"
on hps-3 cmp -s /etc/ssh/ssh_host_ed25519_key-cert.pub "$T/hps-3-cert.good" || bail_out "hps-3 installed a certificate naming hps-2"
[ "$(cat "$T/rc.hps-3")" = 0 ] || bail_out "a certificate naming hps-2 made hps-3's refresh exit $(cat "$T/rc.hps-3")"
ok "a certificate for a name the node does not own is refused (a cluster finding, the last good one kept)"
cp "$T/hps-3.cert.good" "$CERTS/hps-3.cert"
on hps-3 sh -c 'kill -HUP $(cat '"$T"'/sim/nodes/hps-3/sshd.pid)'
# (c) a compute holding the CA key
on hps-3 install -m 0600 "$T/ca" /etc/hpcinit/ssh-ca
hp hps-3 refresh
[ "$(cat "$T/rc.hps-3")" != 0 ] || bail_out "a compute with the CA key was not refused"
det=$(module_field hps-3 ssh details)
grep -q 'on a compute node' <<<"$det" || bail_out "no key-on-compute finding: $det"
on hps-3 rm -f /etc/hpcinit/ssh-ca
ok "a compute holding the CA private key is refused: $(module_field hps-3 ssh summary | cut -c1-100)"
# (d) a compute spec naming ca_key_file: a spec error
sed "s|cert_validity: 24h}|cert_validity: 24h, ca_key_file: /etc/hpcinit/ssh-ca}|" "$T/node.yaml" > "$T/bad.yaml"
if out=$(on hps-3 "$HPCINIT" check -c "$T/bad.yaml" 2>&1); then bail_out "a compute spec with ca_key_file was accepted"; fi
grep -q 'ssh.ca_key_file: only the head node holds the CA private key' <<<"$out" || bail_out "spec error: $out"
ok "a compute spec with ca_key_file is a spec error"
hp hps-3 refresh
[ "$(cat "$T/rc.hps-3")" = 0 ] || bail_out "hps-3 after cleanup: $(module_field hps-3 ssh details)"
got=$(sshs hps-2 alice hps-3 2>&1) || bail_out "hps-3 after cleanup: $got"
ok "after the bad certificates are gone, hps-3 is accepted again"

# (e) a member's record publishes, as its host key, a certificate from another CA.
# forge NODE CERTFILE: NODE's record with its host key line replaced by the
# certificate, signed with the cluster secret as hpcinit signs.
REC=$SHARED/hpsc/nodes
forge() {
	python3 - "$T/cluster.key" "$REC/$1.rec" "$2" <<-'PY'
	import hashlib, hmac, sys
	key = open(sys.argv[1], "rb").read().rstrip(b"\r\n")
	cert = " ".join(open(sys.argv[3]).read().split()[:2])
	out = []
	for line in open(sys.argv[2]).read().split("\n"):
	    if line in ("...", "") or line.startswith("hmac:"):
	        continue
	    if line.startswith("  - ssh-ed25519 "):
	        line = "  - " + cert
	    out.append(line)
	body = ("\n".join(out) + "\n").encode()
	mac = hmac.new(key, body, hashlib.sha256).hexdigest()
	open(sys.argv[2], "wb").write(body + b"hmac: " + mac.encode() + b"\n...\n")
	PY
}
cp -p "$REC/hps-3.rec" "$T/hps-3.rec.good"
ssh-keygen -q -s "$T/evil" -h -I evil -n hps-3 -V +1h "$T/hps-3.pub"
forge hps-3 "$T/hps-3-cert.pub"
grep -q -- '- ssh-ed25519-cert-v01@openssh.com ' "$REC/hps-3.rec" || bail_out "test bug: forged record"
hp hps-1 refresh -c "$T/head.yaml"
# A member's record: a cluster finding on the head, which signs on for the others (exit 0).
[ "$(cat "$T/rc.hps-1")" = 0 ] || bail_out "a member's bad record failed the head's run: $(module_field hps-1 ssh details)"
grep -q '"ssh.ca.record-other-ca"' "$T/out.hps-1" || bail_out "no record-other-ca finding: $(module_field hps-1 ssh details)"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert [x for m in d["modules"] for x in m["findings"] if x["tag"] == "ssh.ca.record-other-ca" and x["severity"] == "cluster"]' "$T/out.hps-1" ||
	bail_out "record-other-ca is not a cluster finding"
f=$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print([x for m in d["modules"] for x in m["findings"] if "record-other-ca" in str(x)][0])' "$T/out.hps-1")
ok "the head refuses a record whose host key is another CA's certificate: ${f:0:160}"
cp -p "$T/hps-3.rec.good" "$REC/hps-3.rec"
hp hps-1 refresh -c "$T/head.yaml"
[ "$(cat "$T/rc.hps-1")" = 0 ] || bail_out "head after the record is restored: $(module_field hps-1 ssh details)"

# (f) hps-2 goes back to pinned: its certificate, KRL and sshd drop-in go, sshd is reloaded.
sed 's|, host_keys: ca, ca_public_key: "[^"]*", cert_validity: 24h}|}|' "$T/node.yaml" > "$T/pinned.yaml"
grep -q 'host_keys\|ca_public_key' "$T/pinned.yaml" && bail_out "test bug: pinned spec: $(grep '^ssh' "$T/pinned.yaml")"
on hps-1 ssh-keyscan -c hps-2 2>/dev/null | grep -q 'ssh-ed25519-cert-v01@openssh.com' || bail_out "control: hps-2 serves no certificate"
hp hps-2 refresh -c "$T/pinned.yaml"
[ "$(cat "$T/rc.hps-2")" = 0 ] || bail_out "refresh back to pinned: $(module_field hps-2 ssh details)"
grep -q 'sshd reloaded' <<<"$(module_field hps-2 ssh details)" || bail_out "sshd not reloaded: $(module_field hps-2 ssh details)"
for f in /etc/ssh/sshd_config.d/90-hpcinit.conf /etc/ssh/ssh_host_ed25519_key-cert.pub /etc/hpcinit/ssh_revoked_keys; do
	on hps-2 test -e "$f" && bail_out "$f left after going back to pinned"
done
on hps-2 grep -q '@cert-authority' /etc/hpcinit/ssh_known_hosts && bail_out "@cert-authority left in known_hosts"
on hps-2 grep -q 'RevokedHostKeys' /etc/ssh/ssh_config.d/90-hpcinit.conf && bail_out "RevokedHostKeys left in the ssh_config drop-in"
certs=$(on hps-1 ssh-keyscan -c hps-2 2>/dev/null || true)
[ -z "$certs" ] || bail_out "hps-2's sshd still presents a certificate: $certs"
got=$(sshs hps-2 alice hps-1 2>&1) || bail_out "pinned hps-2 -> hps-1: $got"
[ "$got" = hps-1 ] || bail_out "pinned hps-2 -> hps-1: got '$got'"
ok "hps-2 back to pinned: certificate, KRL, sshd drop-in and @cert-authority removed, sshd reloaded and serving no certificate; hps-2 logs in to hps-1 by its pinned key"

# (g) pinned: a record carrying a certificate where a host key belongs is not pinned.
ssh-keygen -q -s "$T/ca" -h -I ours -n hps-3 -V +1h "$T/hps-3.pub"
forge hps-3 "$T/hps-3-cert.pub"
hp hps-2 refresh -c "$T/pinned.yaml"
grep -q '"ssh.hostkey.certificate"' "$T/out.hps-2" || bail_out "no hostkey.certificate finding: $(module_field hps-2 ssh details)"
on hps-2 grep -q 'cert-v01' /etc/hpcinit/ssh_known_hosts && bail_out "a certificate was pinned"
on hps-2 grep -q '^hps-3' /etc/hpcinit/ssh_known_hosts && bail_out "hps-3's key stayed pinned with a certificate in its record"
ok "pinned: a record publishing a certificate as its host key is refused (ssh.hostkey.certificate), nothing pinned for it"
cp -p "$T/hps-3.rec.good" "$REC/hps-3.rec"

# (h) the CA key is checked as the cluster secret is (issue 23): readable by its group, or not
# root's, the head refuses it (ssh.ca.key-unsafe) and signs nothing; put right, it signs again.
for bad in "chmod 0640" "chown 65534"; do
	on hps-1 $bad /etc/hpcinit/ssh-ca
	hp hps-1 refresh -c "$T/head.yaml"
	grep -q '"ssh.ca.key-unsafe"' "$T/out.hps-1" ||
		bail_out "$bad ssh-ca: no ssh.ca.key-unsafe finding: $(module_field hps-1 ssh details)"
	[ "$(cat "$T/rc.hps-1")" = 1 ] || bail_out "$bad ssh-ca: refresh exit $(cat "$T/rc.hps-1"), not 1"
	on hps-1 chmod 0600 /etc/hpcinit/ssh-ca
	on hps-1 chown 0 /etc/hpcinit/ssh-ca
done
hp hps-1 refresh -c "$T/head.yaml"
[ "$(cat "$T/rc.hps-1")" = 0 ] || bail_out "CA key put right: refresh exit $(cat "$T/rc.hps-1"): $(module_field hps-1 ssh details)"
ok "the head refuses a CA key readable by its group or not root's (ssh.ca.key-unsafe, nothing signed), and signs again once it is 0600 root's"
done_testing
