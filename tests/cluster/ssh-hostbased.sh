#!/bin/bash
# ssh.hostbased: true on simulated nodes, judged by the real OpenSSH client,
# ssh-keysign and sshd:
#  1. pinned host keys: carol, a user on every node (same uid, as NSS would
#     give her) whom hpcinit made nothing for (no ~/.ssh), logs in from every
#     node to every node with StrictHostKeyChecking=yes;
#  2. an outsider on the subnet (a namespace not in the cluster, with the
#     cluster's public files copied) and a removed node are refused;
#  3. the same with host_keys: ca (the host proves itself with its certificate);
#  4. nothing turns host-key checking off; root stays on keys.
. "$TOP_SRCDIR/tests/cluster/ssh-lib.sh"

ks=$(stat -c %a:%U /usr/lib/openssh/ssh-keysign 2>/dev/null) || { echo "SKIP: no ssh-keysign"; exit 77; }
[ "$ks" = 4755:root ] || { echo "SKIP: /usr/lib/openssh/ssh-keysign is $ks, not setuid root"; exit 77; }

cluster_up 4
sed -i 's|^ssh: {users: \[alice, bob\]}|ssh: {users: [alice], hostbased: true}|' "$T/node.yaml"
grep -q 'hostbased: true' "$T/node.yaml" || bail_out "test bug: spec"
# carol's home is on the "NFS" share (a host directory every node sees), with no ~/.ssh.
mkdir -p "$T/nfs-home/carol"
chown 2345:2345 "$T/nfs-home/carol"
chmod 0700 "$T/nfs-home/carol"
for n in $(nodes); do
	on "$n" sed -i '1i Include /etc/ssh/sshd_config.d/*.conf' /etc/ssh/sshd_config
	on "$n" useradd -u 2345 -M -d "$T/nfs-home/carol" -s /bin/bash carol
done
run_on 0 apply $(nodes) || bail_out "apply"
ok "apply on 4 nodes: $(module_field hps-1 ssh summary)"

carol() {               # src target: carol's login, prints the remote hostname
	on "$1" runuser -u carol -- ssh -o BatchMode=yes -o StrictHostKeyChecking=yes "$2" hostname
}
all_pairs() {           # what
	local s d got
	for s in hps-1 hps-2 hps-3 hps-4; do
		for d in hps-1 hps-2 hps-3 hps-4; do
			got=$(carol "$s" "$d" 2>&1) || bail_out "$1: carol@$s -> $d: $got"
			[ "$got" = "$d" ] || bail_out "$1: carol@$s -> $d: got '$got'"
			got=$(carol "$s" "$(bash "$SIM" addr "$d")" 2>&1) || bail_out "$1: carol@$s -> $d by address: $got"
		done
	done
}
all_pairs pinned
[ -e "$T/nfs-home/carol/.ssh" ] && bail_out "something made carol a ~/.ssh"
ok "pinned: carol (home on the share, no ~/.ssh, no key anywhere) logs in 4x4 by name and address, strict host-key checking"
on hps-2 runuser -u carol -- ssh -v -o BatchMode=yes -o StrictHostKeyChecking=yes hps-3 true 2>&1 |
	grep -q 'Authenticated to hps-3 .* using "hostbased"' || bail_out "the login was not host-based"
ok "the login method was hostbased (ssh -v)"
eff=$(on hps-1 runuser -u carol -- ssh -G hps-2 2>/dev/null)
grep -qx 'stricthostkeychecking true' <<<"$eff" || bail_out "ssh -G hps-2: $(grep stricthost <<<"$eff")"
grep -qx 'hostbasedauthentication yes' <<<"$eff" || bail_out "ssh -G hps-2: not hostbased"
eff=$(on hps-1 runuser -u carol -- ssh -G host.example.org 2>/dev/null)
grep -qx 'hostbasedauthentication yes' <<<"$eff" && bail_out "hostbased applies to a non-cluster host"
on hps-1 grep -rqi 'StrictHostKeyChecking \(no\|accept-new\|off\)' /etc/ssh/ssh_config.d/ /etc/ssh/sshd_config.d/ && bail_out "a drop-in turns checking off"
ok "ssh -G: strict checking and hostbased for cluster hosts only"
# root stays on keys: sshd never applies shosts.equiv to root.
if out=$(on hps-2 ssh -o BatchMode=yes -o StrictHostKeyChecking=yes hps-3 hostname 2>&1); then
	bail_out "root logged in host-based: $out"
fi
ok "root is not let in host-based (root has no key here): $(tail -1 <<<"$out")"

# 2a. An outsider on the subnet: the cluster's public files, its own host key.
out=$(bash "$SIM" add)
[ "$out" = hps-5 ] || bail_out "sim add gave '$out'"
on hps-5 useradd -u 2345 -M -d "$T/nfs-home/carol" -s /bin/bash carol
for f in /etc/hpcinit/ssh_known_hosts /etc/ssh/ssh_config.d/90-hpcinit.conf /etc/hosts; do
	on hps-1 cat "$f" > "$T/copy"
	on hps-5 install -D -m 0644 "$T/copy" "$f"
done
for d in hps-1 hps-2 hps-3 hps-4; do
	if out=$(carol hps-5 "$d" 2>&1); then bail_out "outsider hps-5 logged in to $d"; fi
	grep -q 'Permission denied' <<<"$out" || bail_out "outsider -> $d: $out"
done
ok "an outsider on the subnet is refused everywhere: $(tail -1 <<<"$out")"

# 2b. A removed node: its record goes; after their refresh the others refuse it.
rm -f "$SHARED/hpsc/nodes/hps-4.rec"
run_on 0 refresh hps-1 hps-2 hps-3 || bail_out "refresh"
on hps-2 grep -qx hps-4 /etc/ssh/shosts.equiv && bail_out "hps-4 still in shosts.equiv"
for d in hps-1 hps-2 hps-3; do
	if out=$(carol hps-4 "$d" 2>&1); then bail_out "removed hps-4 logged in to $d"; fi
done
ok "a removed node is refused after the members' refresh: $(tail -1 <<<"$out")"

# 3. host_keys: ca: the client host proves itself with its certificate.
ssh-keygen -q -t ed25519 -N '' -C hpsc-ca -f "$T/ca"
CAPUB=$(cut -d' ' -f1,2 "$T/ca.pub")
sed -i "s|hostbased: true}|hostbased: true, host_keys: ca, ca_public_key: \"$CAPUB\"}|" "$T/node.yaml"
sed "s|^cluster: {name: hpsc,|cluster: {name: hpsc, role: head,|; s|hostbased: true,|hostbased: true, ca_key_file: /etc/hpcinit/ssh-ca,|" \
	"$T/node.yaml" > "$T/head.yaml"
on hps-1 install -D -m 0600 "$T/ca" /etc/hpcinit/ssh-ca
hp hps-1 refresh -c "$T/head.yaml"
[ "$(cat "$T/rc.hps-1")" = 0 ] || bail_out "head refresh in ca mode: $(cat "$T/err.hps-1")"
run_on 0 refresh hps-2 hps-3 || bail_out "refresh in ca mode"
for n in hps-1 hps-2 hps-3; do
	[ "$(on "$n" grep -vc '^#' /etc/hpcinit/ssh_known_hosts)" = 2 ] || bail_out "$n: known_hosts is not the CA lines"
	on "$n" grep -q '^@cert-authority' /etc/ssh/ssh_known_hosts || bail_out "$n: sshd's known_hosts has no CA line"
	on "$n" grep -q '^ssh-ed25519 ' /etc/ssh/ssh_known_hosts && bail_out "$n: a pinned key left in sshd's known_hosts"
done
for s in hps-1 hps-2 hps-3; do
	for d in hps-1 hps-2 hps-3; do
		got=$(carol "$s" "$d" 2>&1) || bail_out "ca: carol@$s -> $d: $got"
		[ "$got" = "$d" ] || bail_out "ca: carol@$s -> $d: got '$got'"
	done
done
on hps-2 runuser -u carol -- ssh -v -o BatchMode=yes -o StrictHostKeyChecking=yes hps-3 true 2>&1 |
	grep -q 'Authenticated to hps-3 .* using "hostbased"' || bail_out "ca: the login was not host-based"
ok "ca: carol logs in 3x3 host-based, the hosts checked through the CA only"
for d in hps-1 hps-2 hps-3; do
	if out=$(carol hps-5 "$d" 2>&1); then bail_out "ca: outsider hps-5 logged in to $d"; fi
done
ok "ca: the outsider is still refused"

# 4. Switching both off on hps-3 (host_keys back to pinned, hostbased false):
# what hpcinit made for them goes, sshd is reloaded, keys work as before.
sed 's|, hostbased: true, host_keys: ca, ca_public_key: "[^"]*"}|}|' "$T/node.yaml" > "$T/plain.yaml"
grep -q 'hostbased\|host_keys\|ca_public_key' "$T/plain.yaml" && bail_out "test bug: plain spec: $(grep '^ssh' "$T/plain.yaml")"
on hps-3 grep -q '^# BEGIN hpcinit' /etc/ssh/ssh_known_hosts || bail_out "control: no managed block in sshd's known_hosts"
on hps-3 sh -c 'echo "# an administrator line" >> /etc/ssh/ssh_known_hosts'
hp hps-3 refresh -c "$T/plain.yaml"
[ "$(cat "$T/rc.hps-3")" = 0 ] || bail_out "refresh with both off: $(module_field hps-3 ssh details)"
det=$(module_field hps-3 ssh details)
grep -q 'sshd reloaded' <<<"$det" || bail_out "sshd not reloaded: $det"
for f in /etc/ssh/shosts.equiv /etc/ssh/sshd_config.d/90-hpcinit.conf /etc/ssh/ssh_host_ed25519_key-cert.pub /etc/hpcinit/ssh_revoked_keys; do
	on hps-3 test -e "$f" && bail_out "$f left after switching off"
done
on hps-3 grep -q 'hpcinit' /etc/ssh/ssh_known_hosts && bail_out "the managed block is left in /etc/ssh/ssh_known_hosts"
on hps-3 grep -qx '# an administrator line' /etc/ssh/ssh_known_hosts || bail_out "the administrator's line went"
on hps-3 grep -q '@cert-authority' /etc/hpcinit/ssh_known_hosts && bail_out "@cert-authority left in known_hosts"
on hps-3 grep -qi 'hostbased\|RevokedHostKeys' /etc/ssh/ssh_config.d/90-hpcinit.conf && bail_out "the ssh_config drop-in keeps hostbased or the KRL"
ok "switched off on hps-3: shosts.equiv, the sshd drop-in, the certificate and the KRL removed, the managed block gone (the admin's line kept), sshd reloaded"
# sshd no longer lets carol in host-based (the client forced to try it, and
# hps-3's own pinned key checked strictly), and presents a plain host key.
eff=$(on hps-3 /usr/sbin/sshd -T 2>&1)   # (not piped into grep -q: pipefail and SIGPIPE)
grep -qx 'hostbasedauthentication no' <<<"$eff" || bail_out "hps-3's sshd still has hostbased on: $(grep -i hostbased <<<"$eff")"
if out=$(on hps-3 runuser -u carol -- ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o HostbasedAuthentication=yes \
	-o EnableSSHKeysign=yes hps-3 hostname 2>&1); then bail_out "carol still logs in host-based to hps-3"; fi
grep -q 'Permission denied' <<<"$out" || bail_out "carol -> hps-3 refused, but not by sshd: $out"
# (ssh-keyscan -c asks for certificates only: hps-2, still in ca mode, serves one.)
on hps-2 ssh-keyscan -c hps-2 2>/dev/null | grep -q 'ssh-ed25519-cert-v01@openssh.com' || bail_out "control: hps-2 serves no certificate"
certs=$(on hps-2 ssh-keyscan -c hps-3 2>/dev/null || true)
[ -z "$certs" ] || bail_out "hps-3's sshd still presents a certificate: $certs"
on hps-2 ssh-keyscan -t ed25519 hps-3 2>/dev/null | grep -q ' ssh-ed25519 ' || bail_out "hps-3's sshd presents no plain key"
ok "after switching off: carol is refused by hps-3 ($(tail -1 <<<"$out")), its sshd presents a plain host key and no certificate"
hp hps-3 refresh -c "$T/plain.yaml"
[ "$(module_field hps-3 ssh status)" = ok ] || bail_out "second refresh with both off: ssh $(module_field hps-3 ssh status): $(module_field hps-3 ssh details)"
ok "a second refresh with both off changes nothing"
done_testing
