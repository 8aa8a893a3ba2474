#!/bin/bash
# ssh.host_keys: ca with discovery method etcd (a real 3-member etcd), judged
# by the real OpenSSH client and sshd:
#  1. 4 nodes (hps-1 the head, holding the CA key), one apply each: the head
#     puts one certificate a member under /hpcinit/<cluster>/certs/ with no
#     lease, and the KRL; every node installs its own; every pair logs in
#     with StrictHostKeyChecking=yes;
#  2. with "hpcinit watch" on the head, a 5th node that joins is signed within
#     about a second with no refresh run by hand anywhere, and the old nodes
#     accept it (their trust files unchanged); the join-to-trusted time is
#     printed;
#  3. a node that leaves: the watching head deletes its certificate and
#     revokes its key in etcd (revoked until its certificate's expiry); a
#     node refreshes and refuses it;
#  4. the KRL is pruned: an entry whose certificate has expired is dropped
#     and the KRL no longer names the key.
. "$TOP_SRCDIR/tests/cluster/ssh-lib.sh"
_cleanup() { cleanup; }          # etcd-lib.sh's exit trap ends with the cluster's cleanup
. "$TOP_SRCDIR/tests/cluster/etcd-lib.sh"

ssh-keygen -q -t ed25519 -N '' -C hpsc-ca -f "$T/ca"
CAPUB=$(cut -d' ' -f1,2 "$T/ca.pub")
cluster_up 4
etcd_up
sed -i "s|^discovery: .*|discovery: {method: etcd, endpoints: $(etcd_endpoints), expect: 4, wait: 60s, lease: 30s}|" "$T/node.yaml"
sed -i "s|^ssh: {users: \[alice, bob\]}|ssh: {users: [alice, bob], host_keys: ca, ca_public_key: \"$CAPUB hpsc-ca\", cert_validity: 24h}|" "$T/node.yaml"
sed "s|^cluster: {name: hpsc,|cluster: {name: hpsc, role: head,|; s|cert_validity: 24h}|cert_validity: 24h, ca_key_file: /etc/hpcinit/ssh-ca}|" \
	"$T/node.yaml" > "$T/head.yaml"
grep -q 'method: etcd' "$T/node.yaml" && grep -q ca_key_file "$T/head.yaml" || bail_out "test bug: specs"
on hps-1 install -D -m 0600 "$T/ca" /etc/hpcinit/ssh-ca
for n in $(nodes); do
	on "$n" sed -i '1i Include /etc/ssh/sshd_config.d/*.conf' /etc/ssh/sshd_config
done
spec_of() { [ "$1" = hps-1 ] && echo "$T/head.yaml" || echo "$T/node.yaml"; }
apply_nodes() {
	local n pids=() bad=0 i=0
	for n in "$@"; do
		on "$n" "$HPCINIT" apply -c "$(spec_of "$n")" --json > "$T/out.$n" 2> "$T/err.$n" &
		pids+=($!)
	done
	for n in "$@"; do
		wait "${pids[$i]}" || { bad=1; echo "apply on $n failed"; cat "$T/err.$n" "$T/out.$n"; }
		i=$((i + 1))
	done
	return $bad
}
sshs() { on "$1" runuser -u "$2" -- ssh -o BatchMode=yes -o StrictHostKeyChecking=yes "$3" hostname; }
addr() { bash "$SIM" addr "$1"; }
now() { date +%s.%N; }
P=/hpcinit/hpsc/certs

# ---- 1. one apply on 4 nodes, certificates through etcd
apply_nodes hps-1 hps-2 hps-3 hps-4 || bail_out "apply"
for n in hps-1 hps-2 hps-3 hps-4; do
	[ "$(module_field "$n" ssh status)" = changed ] || { module_field "$n" ssh details; bail_out "$n: ssh $(module_field "$n" ssh status)"; }
	on "$n" test -s /etc/ssh/ssh_host_ed25519_key-cert.pub || bail_out "$n: no certificate installed"
done
keys=$(etcdctl_ get --prefix --keys-only "$P/" | sed '/^$/d' | sort | tr '\n' ' ')
[ "$keys" = "$P/hps-1.cert $P/hps-2.cert $P/hps-3.cert $P/hps-4.cert $P/revoked.keys $P/revoked.krl $P/revoked.krl.hmac " ] ||
	bail_out "etcd keys under $P/: $keys"
etcdctl_ get -w json --prefix "$P/" | grep -q '"lease":[1-9]' && bail_out "a certificate key has a lease"
etcdctl_ get --print-value-only "$P/hps-3.cert" | cut -d' ' -f1,2 > "$T/hps-3.cert"
ssh-keygen -L -f "$T/hps-3.cert" | grep -q "Signing CA: ED25519 $(ssh-keygen -lf "$T/ca.pub" | cut -d' ' -f2)" ||
	bail_out "hps-3's certificate in etcd is not signed by the CA: $(ssh-keygen -L -f "$T/hps-3.cert")"
ok "apply on 4 nodes: 4 certificates + revoked.keys + revoked.krl (+ its HMAC) under $P/, none with a lease ($(module_field hps-1 ssh details | grep -m1 'CA:'))"
for s in hps-1 hps-2 hps-3 hps-4; do
	for d in hps-1 hps-2 hps-3 hps-4; do
		got=$(sshs "$s" alice "$d" 2>&1) || bail_out "alice@$s -> $d: $got"
		[ "$got" = "$d" ] || bail_out "alice@$s -> $d: got '$got'"
	done
done
ok "16 logins (4x4) with StrictHostKeyChecking=yes, host certificates from etcd"
apply_nodes hps-1 hps-2 hps-3 hps-4 || bail_out "second apply"
for n in hps-1 hps-2 hps-3 hps-4; do
	[ "$(module_field "$n" ssh status)" = ok ] || { module_field "$n" ssh details; bail_out "$n: second apply: ssh $(module_field "$n" ssh status)"; }
done
ok "second apply: ssh ok on every node (no etcd write, nothing re-signed)"

# ---- 2. the head runs hpcinit watch; a 5th node joins
on hps-1 "$HPCINIT" watch -c "$T/head.yaml" > "$T/watch.hps-1" 2>&1 &
WATCH=$!
sleep 2         # the watch's first refresh
for n in hps-2 hps-3 hps-4; do on "$n" sha256sum /etc/hpcinit/ssh_known_hosts /etc/hpcinit/ssh_revoked_keys; done > "$T/kh.before"
new=$(bash "$SIM" add)
[ "$new" = hps-5 ] || bail_out "sim add gave '$new'"
prepare_node hps-5
on hps-5 sed -i '1i Include /etc/ssh/sshd_config.d/*.conf' /etc/ssh/sshd_config
# hps-5's sshd comes back slowly from a reload: sshd re-executes /usr/sbin/sshd on SIGHUP, and
# there that is a script that waits 0.5 s, then runs the real sshd (a copy, named sshd too).
mkdir -p "$T/realsshd"
cp /usr/sbin/sshd "$T/realsshd/sshd"
printf '#!/bin/sh\nsleep 0.5\nexec %s "$@"\n' "$T/realsshd/sshd" > "$T/slow-sshd"
chmod 0755 "$T/slow-sshd"
on hps-5 mount --bind "$T/slow-sshd" /usr/sbin/sshd
[ -z "$(etcdctl_ get --keys-only "$P/hps-5.cert" | sed '/^$/d')" ] || bail_out "test bug: hps-5 has a certificate before it joined"
# sshd's listening sockets (their inodes): a reload re-executes sshd, which listens on new ones.
sshd_listen() { { on "$1" ss -Hltne 'sport = :22' || true; } | { grep -o 'ino:[0-9]*' || true; } | sort | tr '\n' ' '; }
l0=$(sshd_listen hps-5)
[ -n "$l0" ] || bail_out "test bug: no sshd listening on hps-5"
t0=$(now)
on hps-5 "$HPCINIT" apply -c "$T/node.yaml" --json > "$T/out.hps-5" 2> "$T/err.hps-5" || bail_out "apply on hps-5: $(cat "$T/err.hps-5")"
t1=$(now)
# The apply reloaded sshd for its certificate (SIGHUP: sshd closes its sockets and re-executes,
# here slowly); it returned only once sshd listened again, so a peer's ssh now is never refused.
l1=$(sshd_listen hps-5)
grep -q 'sshd reloaded' "$T/out.hps-5" || bail_out "hps-5's apply did not reload sshd: $(cat "$T/out.hps-5")"
[ -n "$l1" ] && [ "$l1" != "$l0" ] || bail_out "hps-5's apply returned with sshd not listening again (sockets before: $l0; after: ${l1:-none})"
for s in hps-2 hps-3 hps-4; do
	got=$(sshs "$s" alice "$(addr hps-5)" 2>&1) || bail_out "old node $s -> new hps-5: $got"
	[ "$got" = hps-5 ] || bail_out "$s -> hps-5: got '$got'"
done
t2=$(now)
det=$(module_field hps-5 ssh details)
waited=$(grep -o "waited [0-9]* ms for this node's certificate" <<<"$det" || echo "waited 0 ms")
for n in hps-2 hps-3 hps-4; do on "$n" sha256sum /etc/hpcinit/ssh_known_hosts /etc/hpcinit/ssh_revoked_keys; done > "$T/kh.after"
cmp -s "$T/kh.before" "$T/kh.after" || bail_out "an old node's trust files changed"
# Nothing was run by hand on the head: its watch (still running) signed hps-5.
kill -0 "$WATCH" 2>/dev/null || bail_out "the head's watch ended: $(cat "$T/watch.hps-1")"
[ -n "$(etcdctl_ get --keys-only "$P/hps-5.cert" | sed '/^$/d')" ] || bail_out "no certificate for hps-5 in etcd"
# (the joiner gets its certificate in the middle of the head's refresh; the line comes at its end)
for _ in $(seq 1 100); do grep -q "membership changed.*: refresh exit 0" "$T/watch.hps-1" && break; sleep 0.1; done
grep -q "membership changed.*: refresh exit 0" "$T/watch.hps-1" || bail_out "the head's watch did not refresh: $(cat "$T/watch.hps-1")"
ok "hps-5 joined with hpcinit watch on the head, no refresh by hand: its apply took $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s ($waited), trusted by all old nodes $(awk "BEGIN { printf \"%.1f\", $t2 - $t0 }") s after its apply started"
w=${waited#waited }
# Without the watch nothing would sign it (the joiner gives up after 30 s); with it, seconds at most.
[ "${w% ms*}" -le 10000 ] || bail_out "the watching head took ${w% ms*} ms to sign hps-5"

# ---- 3. hps-4 leaves: the watching head revokes it
on hps-4 "$HPCINIT" leave -c "$T/node.yaml" > "$T/leave.hps-4" 2>&1 || bail_out "leave: $(cat "$T/leave.hps-4")"
t0=$(now)
for _ in $(seq 1 100); do
	[ -z "$(etcdctl_ get --keys-only "$P/hps-4.cert" | sed '/^$/d')" ] && break
	sleep 0.1
done
[ -z "$(etcdctl_ get --keys-only "$P/hps-4.cert" | sed '/^$/d')" ] || bail_out "the head did not delete hps-4's certificate"
t1=$(now)
rk=$(etcdctl_ get --print-value-only "$P/revoked.keys")
key4=$(on hps-4 cut -d' ' -f1,2 /etc/ssh/ssh_host_ed25519_key.pub)
grep -qF " $key4" <<<"$rk" || bail_out "revoked.keys does not name hps-4's key: $rk"
until4=$(grep -F " $key4" <<<"$rk" | cut -d' ' -f1)
# Until the certificate's own expiry: signed for 24h a few minutes ago.
d=$(( until4 - $(date +%s) ))
[ "$d" -gt $((24 * 3600 - 900)) ] && [ "$d" -le $((24 * 3600)) ] || bail_out "revoked until $until4 ($d s from now), not the certificate's expiry"
ok "hps-4 left: the watching head deleted its certificate $(awk "BEGIN { printf \"%.1f\", $t1 - $t0 }") s later and revoked its key until $(date -u -d "@$until4" +%FT%TZ) (its certificate's expiry)"
hp hps-2 refresh
if out=$(sshs hps-2 alice "$(addr hps-4)" 2>&1); then bail_out "hps-2 accepted departed hps-4's certificate"; fi
grep -qi 'revoked' <<<"$out" || bail_out "refused, but not for revocation: $out"
ok "departed hps-4's certificate is refused once hps-2 refreshed: $(grep -i -m1 revoked <<<"$out")"

# ---- 4. pruning: once the certificate has expired, its revocation goes
kill "$WATCH" 2>/dev/null || true
wait "$WATCH" 2>/dev/null || true
on hps-4 cat /etc/ssh/ssh_host_ed25519_key.pub > "$T/key4.pub"
etcdctl_ get --print-value-only "$P/revoked.krl" | base64 -d > "$T/krl.before"
q=$(ssh-keygen -Q -f "$T/krl.before" "$T/key4.pub" || true)          # (exit 1 when revoked)
grep -q ': REVOKED$' <<<"$q" || bail_out "control: the KRL does not revoke hps-4's key: $q"
# The clock cannot be moved: the entry's time is set back as if the validity had run out,
# in the head's own list (the one in etcd is only what the head published).
past=$(( $(date +%s) - 60 ))
on hps-1 sed -i "s|^$until4 |$past |" /var/lib/hpcinit/ssh-ca/revoked.keys
hp hps-1 refresh -c "$T/head.yaml"
det=$(module_field hps-1 ssh details)
grep -q '0 host keys revoked, 1 expired revocation pruned' <<<"$det" || bail_out "no pruning: $det"
[ -z "$(etcdctl_ get --print-value-only "$P/revoked.keys" | sed '/^$/d')" ] || bail_out "revoked.keys still: $(etcdctl_ get --print-value-only "$P/revoked.keys")"
etcdctl_ get --print-value-only "$P/revoked.krl" | base64 -d > "$T/krl.after"
q=$(ssh-keygen -Q -f "$T/krl.after" "$T/key4.pub" || true)
grep -q ': ok$' <<<"$q" || bail_out "the pruned KRL still revokes the key: $q"
ok "an expired revocation is pruned: $(grep -m1 'CA:' <<<"$det"); the KRL shrank from $(stat -c %s "$T/krl.before") to $(stat -c %s "$T/krl.after") bytes"
done_testing
