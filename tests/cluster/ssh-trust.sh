#!/bin/bash
# ssh on 4 simulated nodes, judged by the real OpenSSH client and sshd:
#  1. after apply, every node logs in to every node (itself included) as each
#     cluster user, with -o BatchMode=yes -o StrictHostKeyChecking=yes and no
#     other option; by name and by address;
#  2. a second apply changes nothing (same bytes, inodes and mtimes);
#  3. the ssh_config drop-in applies to cluster hosts and to no other host;
#  4. a host outside the cluster on the same bridge cannot log in, a user key
#     in no record is not authorized, a cluster key used from outside
#     cluster.network is refused (from=), and a tampered record (bad HMAC, or
#     written by a non-root user) cannot add a key.
# cluster.network is a /25 here, so the nodes (.11-.14) are inside and an
# address on the same link (.200) is outside.
NET=198.18.3.0/25
. "$TOP_SRCDIR/tests/cluster/ssh-lib.sh"

cluster_up 4
NODES=$(nodes)
# shellcheck disable=SC2086
run_on 0 apply $NODES || bail_out "apply"
for n in $NODES; do
	[ "$(module_field "$n" ssh status)" = changed ] || bail_out "$n: ssh $(module_field "$n" ssh status)"
done
ok "apply on 4 nodes: $(module_field hps-1 ssh summary)"

# 1. Every node to every node, every user; sources in parallel.
for s in $NODES; do
	(
		for d in $NODES; do
			for u in $USERS; do
				got=$(login "$s" "$u" "$d" 2>&1) || { echo "$u@$s -> $d: $got"; exit 1; }
				[ "$got" = "$d" ] || { echo "$u@$s -> $d: got '$got'"; exit 1; }
			done
			a=$(bash "$SIM" addr "$d")
			got=$(login "$s" alice "$a" 2>&1) || { echo "alice@$s -> $a: $got"; exit 1; }
			[ "$got" = "$d" ] || { echo "alice@$s -> $a: got '$got'"; exit 1; }
		done
	) > "$T/login.$s" 2>&1 &
done
bad=0
for s in $NODES; do
	wait -n || bad=1
done
[ $bad = 0 ] || { cat "$T"/login.*; bail_out "a login between cluster nodes was refused"; }
ok "48 logins (4x4 nodes x 2 users by name, 4x4 by address) with strict host-key checking"

# 2. Idempotence: a second apply rewrites nothing, and a converged node needs no
#    helper (no libssh): the second apply runs with the helpers' directory pointing nowhere.
snapshot() {
	on "$1" bash -c 'for f in /etc/hpcinit/ssh_known_hosts /etc/ssh/ssh_config.d/90-hpcinit.conf \
		/home/*/.ssh/authorized_keys /home/*/.ssh/id_ed25519 /home/*/.ssh/id_ed25519.pub; do
		stat -c "%n %i %Y %a %U" "$f"; sha256sum "$f"; done'
}
for n in $NODES; do snapshot "$n" > "$T/snap1.$n"; done
# shellcheck disable=SC2086
HPCINIT_LIBEXEC_DIR=/nonexistent run_on 0 apply $NODES || bail_out "second apply (without hpcinit-ssh)"
for n in $NODES; do
	[ "$(module_field "$n" ssh status)" = ok ] || bail_out "$n: second apply: ssh $(module_field "$n" ssh status)"
	[ -z "$(module_field "$n" ssh changed)" ] || bail_out "$n: second apply changed $(module_field "$n" ssh changed)"
	snapshot "$n" > "$T/snap2.$n"
	cmp -s "$T/snap1.$n" "$T/snap2.$n" || { diff "$T/snap1.$n" "$T/snap2.$n"; bail_out "$n: files changed"; }
done
ok "second apply: ssh ok, nothing rewritten on any node"
# check agrees.
# shellcheck disable=SC2086
run_on 0 check $NODES || bail_out "check after apply"
ok "check: in sync"

# 3. What ssh itself makes of the configuration (ssh -G prints the effective options).
eff=$(on hps-1 runuser -u alice -- ssh -G hps-2 2>/dev/null)
grep -qx 'stricthostkeychecking true' <<<"$eff" || bail_out "ssh -G hps-2: $(grep stricthost <<<"$eff")"
grep -q '^globalknownhostsfile /etc/hpcinit/ssh_known_hosts ' <<<"$eff" || bail_out "ssh -G hps-2: no known_hosts"
eff=$(on hps-1 runuser -u alice -- ssh -G host.example.org 2>/dev/null)
grep -qx 'stricthostkeychecking true' <<<"$eff" && bail_out "the drop-in applies to a non-cluster host"
grep -q '/etc/hpcinit/' <<<"$eff" && bail_out "the drop-in's known_hosts applies to a non-cluster host"
ok "ssh -G: strict checking for cluster hosts only"

# 4a. A host on the same bridge, not running hpcinit, with its own alice key.
out=$(bash "$SIM" add)
[ "$out" = hps-5 ] || bail_out "sim add gave '$out'"
on hps-5 useradd -m -s /bin/bash alice
on hps-5 runuser -u alice -- ssh-keygen -q -t ed25519 -N '' -f /home/alice/.ssh/id_ed25519
# Give it the cluster's host keys (they are public) so what is judged is authorization,
on hps-1 cat /etc/hpcinit/ssh_known_hosts > "$T/kh"
on hps-5 install -o alice -m 0644 "$T/kh" /home/alice/.ssh/known_hosts
# and its names (the members have them from hpcinit's /etc/hosts block).
on hps-1 cat /etc/hosts > "$T/hosts"
on hps-5 cp "$T/hosts" /etc/hosts
for d in $NODES; do
	if out=$(login hps-5 alice "$d" 2>&1); then bail_out "outsider hps-5 logged in to $d"; fi
	grep -q 'Permission denied (publickey)' <<<"$out" || bail_out "outsider -> $d: $out"
done
ok "a host outside the cluster (same bridge) cannot log in: Permission denied (publickey)"

# 4b. A key of a cluster user that no record holds.
on hps-2 runuser -u alice -- ssh-keygen -q -t ed25519 -N '' -f /home/alice/.ssh/unlisted
if out=$(on hps-2 runuser -u alice -- ssh -o BatchMode=yes -o StrictHostKeyChecking=yes \
	-o IdentitiesOnly=yes -i /home/alice/.ssh/unlisted hps-1 hostname 2>&1); then
	bail_out "a key in no record logged in"
fi
grep -q 'Permission denied (publickey)' <<<"$out" || bail_out "unlisted key: $out"
ok "a user key in no record is not authorized"

# 4c. alice's real key, stolen to a machine outside cluster.network: from= refuses it.
on hps-2 cat /home/alice/.ssh/id_ed25519 > "$T/stolen"
on hps-5 install -o alice -m 0600 "$T/stolen" /home/alice/.ssh/stolen
ip -n hps-5 addr add 198.18.3.200/24 dev eth0
stolen() { on hps-5 runuser -u alice -- ssh -o BatchMode=yes -o StrictHostKeyChecking=yes \
	-o IdentitiesOnly=yes -i /home/alice/.ssh/stolen "$@" hps-1 hostname; }
if out=$(stolen -o BindAddress=198.18.3.200 2>&1); then bail_out "stolen key from outside cluster.network logged in"; fi
grep -q 'Permission denied (publickey)' <<<"$out" || bail_out "stolen key: $out"
[ "$(stolen -o BindAddress=198.18.3.15 2>&1)" = hps-1 ] || bail_out "control: the same key from inside the network"
ok "a cluster key used from outside cluster.network is refused by from= (and works from inside)"

# 4d. Tampered records.  Discovery rejects them; the ssh module never sees their keys.
REC=$SHARED/hpsc/nodes
on hps-5 runuser -u alice -- ssh-keygen -q -t ed25519 -N '' -C evil -f /home/alice/.ssh/evil
evil=$(on hps-5 cut -d' ' -f1,2 /home/alice/.ssh/evil.pub)
cp "$REC/hps-4.rec" "$T/hps-4.rec.orig"
# (i) hps-4's record with alice's key swapped, HMAC left as it was.
sed -i "/user: alice/{n;s|key: .*|key: $evil alice@evil|}" "$REC/hps-4.rec"
grep -q "$evil" "$REC/hps-4.rec" || bail_out "test bug: the record was not modified"
hp hps-1 refresh
det=$(module_field hps-1 discovery details)
grep -q 'hps-4.rec: bad HMAC' <<<"$det" || bail_out "discovery did not report the tampered record: $det"
on hps-1 grep -q "${evil#* }" /home/alice/.ssh/authorized_keys && bail_out "tampered record added a key"
if on hps-5 runuser -u alice -- ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o IdentitiesOnly=yes \
	-i /home/alice/.ssh/evil hps-1 hostname >/dev/null 2>&1; then
	bail_out "the tampered record's key logged in"
fi
ok "a record with a bad HMAC adds no key ($(grep -m1 hps-4.rec <<<"$det"))"
# (ii) a record written by a non-root user, on a cluster without a secret (so only
# ownership protects it): rejected; the same file owned by root is accepted (control).
cp "$T/hps-4.rec.orig" "$REC/hps-4.rec"
write_spec "$T/nosecret.yaml"
sed -i 's|, secret_file: [^}]*}|}|' "$T/nosecret.yaml"
sed -e 's/^hostname: hps-4/hostname: hps-9/' -e 's/^addr: .*/addr: 198.18.3.99/' -e '/^hmac:/d' \
	-e "/user: alice/{n;s|key: .*|key: $evil alice@evil|}" "$REC/hps-4.rec" > "$REC/hps-9.rec"
chown 1000:1000 "$REC/hps-9.rec"
hp hps-1 refresh -c "$T/nosecret.yaml"
det=$(module_field hps-1 discovery details)
grep -q 'hps-9.rec' <<<"$det" || bail_out "discovery did not report the non-root record: $det"
on hps-1 grep -q "${evil#* }" /home/alice/.ssh/authorized_keys && bail_out "a non-root record added a key"
ok "a record written by a non-root user adds no key ($(grep -m1 hps-9.rec <<<"$det"))"
chown 0:0 "$REC/hps-9.rec"
hp hps-1 refresh -c "$T/nosecret.yaml"
on hps-1 grep -q "${evil#* }" /home/alice/.ssh/authorized_keys || bail_out "control: root-owned record not used"
rm -f "$REC/hps-9.rec"
ok "control: the same record owned by root is trusted (ownership is what refused it)"
run_on 0 refresh hps-1 || bail_out "refresh after cleanup"
on hps-1 grep -q "${evil#* }" /home/alice/.ssh/authorized_keys && bail_out "evil key not pruned"
ok "after the bad record is gone the key is pruned"
done_testing
