# tests/vm/cluster.sh's checks, sourced by it (not run alone): directory users
# (issue 35), with cluster.sh --directory: slapd on the head
# (conf/cloud-init/directory-server.yaml), sssd-ldap on every node
# (directory-client.yaml), alice (in ssh.users) and bob (not listed) with
# 0700 homes on /shared, exported with root_squash, ssh.hostbased on.
# ok/not_ok, each_vm, vm_exec, names and the cluster's variables are cluster.sh's.
# shellcheck shell=bash

# json_findings FILE TAG SEVERITY (in the VM): the texts of that finding in hpcinit's --json report
DIR_FINDINGS='
findings() {
	python3 - "$@" <<"PY"
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
hits = [f["text"] for f in walk(doc) if f["tag"] == sys.argv[2] and f["severity"] == sys.argv[3]]
print("\n".join(hits))
sys.exit(0 if hits else 1)
PY
}'

check_directory() {
	local out
	# (a) the head's users came 40 s late (the test bed's slow directory): its boot run waited
	if out=$(vm_exec head 60 '
		set -e
		grep -F "user alice does not resolve yet; waiting up to 120 s" /var/log/cloud-init-output.log | head -1
		row=$(sed -n "/^MODULE /,/^result: /p" /var/log/cloud-init-output.log | grep -E "^ssh " | head -1)
		echo "$row"
		echo "$row" | grep -qE "^ssh +(ok|changed) +[0-9]+ms "
		t=$(echo "$row" | awk "{print \$3}" | tr -d ms); echo "ssh step: $t ms"
		[ "$t" -ge 10000 ]
		sed -n "/^result: /p" /var/log/cloud-init-output.log | head -1 | grep -q "^result: ready"' 2>&1); then
		ok "directory: a slow directory is waited for at boot (the head's ssh step waited for alice, then ready)"
		sed 's/^/#   /' <<< "$out"
	else
		not_ok "directory: a slow directory is waited for at boot (the head's ssh step waited for alice, then ready)" "$out"
	fi
	each_vm "directory: alice and bob resolve through sssd with the directory's ids, not from /etc/passwd" '
		set -e
		! grep -qE "^(alice|bob):" /etc/passwd || { echo "alice or bob in /etc/passwd"; exit 1; }
		grep -qE "^passwd:.* sss" /etc/nsswitch.conf || { grep passwd /etc/nsswitch.conf; exit 1; }
		[ "$(getent passwd alice | cut -d: -f3,4,6)" = 10001:10001:/shared/home/alice ] || { getent passwd alice; exit 1; }
		[ "$(getent passwd bob | cut -d: -f3,4)" = 10002:10002 ] || { getent passwd bob; exit 1; }
		grep -qE "^users: (.*,)?alice=10001:10001(,|$)" /shared/.hpcinit/glocluster/nodes/$(hostname).rec ||
			{ echo "the record does not say alice=10001:10001"; grep users: /shared/.hpcinit/glocluster/nodes/$(hostname).rec; exit 1; }'
	# item 3: alice's keys in her NFS home, written as her (root_squash: root cannot even look in)
	if out=$(vm_exec head 60 '
		set -e
		stat -c "%n %U %a" /shared/home/alice /shared/home/alice/.ssh /shared/home/alice/.ssh/id_ed25519 /shared/home/alice/.ssh/authorized_keys
		[ "$(stat -c %u:%a /shared/home/alice/.ssh/id_ed25519)" = 10001:600 ]
		[ "$(stat -c %u /shared/home/alice/.ssh/authorized_keys)" = 10001 ]
		grep -c "alice@" /shared/home/alice/.ssh/authorized_keys' 2>&1) &&
		out2=$(vm_exec c1 60 'ls /shared/home/alice 2>&1; [ "$(stat -c %u /shared/home/alice)" = 10001 ]; ! ls /shared/home/alice >/dev/null 2>&1' 2>&1); then
		ok "directory: alice's key pair and authorized_keys are in her NFS home, hers (root on a compute cannot list it: root_squash)"
		sed 's/^/#   /' <<< "$out
$out2"
	else
		not_ok "directory: alice's key pair and authorized_keys are in her NFS home, hers (root on a compute cannot list it: root_squash)" "$out" "${out2:-}"
	fi
	# (b) bob, in no list: host-based login from every node to every node, strict host checking, no key
	local script='set -e' f0=$fails
	for n in $(names); do
		script+="
		h=\$(cd /tmp && runuser -u bob -- ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o PreferredAuthentications=hostbased -o ConnectTimeout=30 $n 'echo \$(hostname) \$(id -un) \$(id -u)' 2>&1) || { echo \"ssh $n: \$h\"; exit 1; }
		[ \"\$h\" = '$n bob 10002' ] || { echo \"ssh $n: \$h\"; exit 1; }"
	done
	each_vm "directory: bob (directory only, in no list) logs in host-based from every VM to every VM, StrictHostKeyChecking=yes" "$script"
	[ "$fails" = "$f0" ] || dir_hostbased_debug
	if out=$(vm_exec head 60 'ls -la /shared/home/bob; ! ls /shared/home/bob/.ssh/id_* /shared/home/bob/.ssh/authorized_keys 2>/dev/null' 2>&1); then
		ok "directory: no key was made for bob"
	else
		not_ok "directory: no key was made for bob" "$out"
	fi
	# alice too, from a compute (her key or host-based: both in place)
	if out=$(vm_exec c1 60 'cd /tmp && runuser -u alice -- ssh -o BatchMode=yes -o StrictHostKeyChecking=yes c2 "id -un; id -u"' 2>&1) &&
		[ "$(echo $out)" = "alice 10001" ]; then
		ok "directory: alice logs in from c1 to c2, StrictHostKeyChecking=yes"
	else
		not_ok "directory: alice logs in from c1 to c2, StrictHostKeyChecking=yes" "$out"
	fi
	# (c) mpirun as bob across the cluster (its daemons start over host-based ssh)
	if out=$(vm_exec head 300 '
		cd /tmp && runuser -u bob -- mpirun --hostfile /etc/hpcinit/hostfile.openmpi --map-by node \
			-np '"$((N + 1))"' --bind-to none --mca plm_rsh_args "-o BatchMode=yes -o StrictHostKeyChecking=yes" \
			--mca pml ob1 --mca btl tcp,self --mca btl_tcp_if_include '"$NET"'.0/24 \
			--mca oob_tcp_if_include '"$NET"'.0/24 sh -c "echo rank \$(hostname) \$(id -un) \$(id -u)"' 2>&1); then
		local n miss=()
		for n in $(names); do grep -qx "rank $n bob 10002" <<< "$out" || miss+=("$n"); done
		if [ ${#miss[@]} -eq 0 ]; then
			ok "directory: mpirun runs as bob on every VM"
			sed 's/^/#   /' <<< "$out"
		else
			not_ok "directory: mpirun runs as bob on every VM" "no rank as bob on: ${miss[*]}" "$out"
		fi
	else
		not_ok "directory: mpirun runs as bob on every VM" "$out"
	fi
	# (a) a user that does not resolve: c2's sssd stopped (and its cache gone) -> ssh.user.unresolved, not ready
	if out=$(vm_exec c2 120 "$DIR_FINDINGS"'
		systemctl stop sssd.service; rm -f /var/lib/sss/mc/*
		getent passwd alice && { echo "alice still resolves"; exit 1; }
		rc=0; hpcinit check --json > /tmp/dir-check.json 2>/tmp/dir-check.err || rc=$?
		echo "hpcinit check exit $rc"
		findings /tmp/dir-check.json ssh.user.unresolved failed | grep "user alice does not resolve through NSS" || exit 1
		[ "$rc" != 0 ] || exit 1
		systemctl start sssd.service
		for i in $(seq 60); do getent passwd alice >/dev/null && break; sleep 1; done
		rc=0; hpcinit check --json > /tmp/dir-check2.json 2>/tmp/dir-check2.err || rc=$?
		echo "with sssd back: hpcinit check exit $rc"
		python3 -c "import json,sys; [print(m[\"name\"], m[\"status\"], m[\"summary\"]) for m in json.load(open(sys.argv[1]))[\"modules\"] if m[\"status\"] not in (\"ok\", \"skipped\")]" /tmp/dir-check2.json
		! findings /tmp/dir-check2.json ssh.user.unresolved failed >/dev/null &&
			python3 -c "import json,sys; sys.exit(0 if [m for m in json.load(open(sys.argv[1]))[\"modules\"] if m[\"name\"] == \"ssh\" and m[\"status\"] == \"ok\"] else 1)" /tmp/dir-check2.json' 2>&1); then
		ok "directory: a user that does not resolve fails the node (ssh.user.unresolved names alice); back when sssd is"
		sed 's/^/#   /' <<< "$out"
	else
		not_ok "directory: a user that does not resolve fails the node (ssh.user.unresolved names alice); back when sssd is" "$out"
	fi
	# (d) c2 resolves alice to a per-VM UID (libnss-extrausers before sss, as Entra ID login makes them)
	if out=$(vm_exec c2 400 "$DIR_FINDINGS"'
		set -e
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q libnss-extrausers > /tmp/apt.log 2>&1 || { tail /tmp/apt.log; exit 1; }
		cp /etc/nsswitch.conf /tmp/nsswitch.conf.orig
		mkdir -p /var/lib/extrausers
		echo "alice:x:3197663:3197663::/shared/home/alice:/bin/bash" > /var/lib/extrausers/passwd
		echo "alice:x:3197663:" > /var/lib/extrausers/group
		sed -i -E "s/^(passwd|group):.*/\1:         files extrausers sss/" /etc/nsswitch.conf
		getent passwd alice
		rc=0; hpcinit apply --json > /tmp/dir-apply.json 2>/tmp/dir-apply.err || rc=$?
		echo "hpcinit apply exit $rc"
		findings /tmp/dir-apply.json ssh.user.ids-differ failed
		[ "$rc" != 0 ]
		findings /tmp/dir-apply.json ssh.user.ids-differ failed | grep -qF "user alice is 3197663:3197663 here but 10001:10001 on 2 of 3 nodes"
		grep -E "^users: (.*,)?alice=3197663:3197663(,|$)" /shared/.hpcinit/glocluster/nodes/c2.rec
		grep -x "state: failed" /shared/.hpcinit/glocluster/nodes/c2.rec' 2>&1) &&
		out2=$(vm_exec head 300 "$DIR_FINDINGS"'
		rc=0; hpcinit refresh --json > /tmp/dir-refresh.json 2>/tmp/dir-refresh.err || rc=$?
		echo "head: hpcinit refresh exit $rc"
		findings /tmp/dir-refresh.json ssh.user.ids-differ cluster
		findings /tmp/dir-refresh.json ssh.user.ids-differ cluster | grep -qF "but not on c2 (3197663:3197663)" && [ "$rc" = 0 ]' 2>&1); then
		ok "directory: c2 resolving alice to a per-VM UID fails itself (ssh.user.ids-differ) and the head names it"
		sed 's/^/#   /' <<< "$out
$out2"
	else
		not_ok "directory: c2 resolving alice to a per-VM UID fails itself (ssh.user.ids-differ) and the head names it" "$out" "${out2:-}"
	fi
	# c2 back: the directory's alice again, ready
	if out=$(vm_exec c2 400 '
		cp /tmp/nsswitch.conf.orig /etc/nsswitch.conf
		rc=0; hpcinit apply > /tmp/dir-apply2.txt 2>&1 || rc=$?
		grep -E "^(ssh|result)" /tmp/dir-apply2.txt
		[ "$rc" = 0 ] && grep -qE "^users: (.*,)?alice=10001:10001(,|$)" /shared/.hpcinit/glocluster/nodes/c2.rec' 2>&1); then
		ok "directory: c2 ready again with the directory's alice"
	else
		not_ok "directory: c2 ready again with the directory's alice" "$out"
	fi
}

# When host-based login fails: one sshd -ddd on c1 (port 2222, one connection) and ssh -vvv from the
# head as bob, and what hpcinit wrote, so the reason is in the log.
dir_hostbased_debug() {
	local out
	out=$(vm_exec c1 120 '
		sshd -T | grep -iE "^(hostbasedauthentication|usedns|ignorerhosts|hostbasedusesnamefrompacketonly|usepam) "
		stat -c "%a %U %n" /usr/lib/openssh/ssh-keysign; cat /etc/ssh/shosts.equiv; grep -c . /etc/ssh/ssh_known_hosts
		grep -n "" /etc/hosts | tail -5
		(timeout 60 /usr/sbin/sshd -ddd -p 2222 -o LogLevel=DEBUG3 > /tmp/sshd-debug.log 2>&1 &)
		sleep 2; echo started' 2>&1)
	echo "# c1: $out" | sed '2,$s/^/#   /'
	out=$(vm_exec head 60 'cd /tmp; runuser -u bob -- ssh -vvv -p 2222 -o BatchMode=yes -o StrictHostKeyChecking=yes -o PreferredAuthentications=hostbased c1 id 2>&1 | grep -iE "hostbased|keysign|local|chost|denied|Authentications|error|fail" | head -30; grep -n "" /etc/ssh/ssh_config.d/90-hpcinit.conf | head -8' 2>&1)
	echo "$out" | sed 's/^/#   head: /'
	out=$(vm_exec c1 60 'sleep 1; grep -iE "hostbased|rhosts|shosts|known_hosts|chost|resolv|pam|denied|fail|userauth" /tmp/sshd-debug.log | head -40' 2>&1)
	echo "$out" | sed 's/^/#   c1 sshd: /'
}
