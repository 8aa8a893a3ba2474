# tests/vm/cluster.sh's checks, sourced by it (not run alone): One node's own: slurmd gated on readiness, the kernel hold, a reboot.
# Each check_NAME is run by --checks NAME; ok/notok, each_vm, vm_exec and the
# cluster's variables are cluster.sh's.
# shellcheck shell=bash

# (9) Gating: a stand-in slurmd with the shipped drop-in starts only when hpcinit is ready.
check_gating() {
	each_vm "gating: slurmd with the shipped drop-in refuses to start when hpcinit failed, starts when ready" '
		[ "$(hostname)" = c1 ] || exit 0
		set -e
		printf "[Unit]\nDescription=stand-in slurmd\n[Service]\nExecStart=/bin/sleep infinity\n" > /etc/systemd/system/slurmd.service
		mkdir -p /etc/systemd/system/slurmd.service.d
		cp /usr/share/hpcinit/systemd/slurmd-wait-hpcinit.conf /etc/systemd/system/slurmd.service.d/hpcinit.conf
		cp /etc/hpcinit/node.yaml /root/node.yaml.good
		# An NFS server that never comes: the run fails, hpcinit.service fails.
		sed -i "s|^\(  *\)mounts:$|&\n\1  - {source: \"'"$NET"'.99:/never\", path: /mnt/never, options: [vers=3], wait: 5s}|" /etc/hpcinit/node.yaml
		systemctl daemon-reload
		systemctl restart hpcinit.service && { echo "hpcinit.service started with a missing NFS server"; cp /root/node.yaml.good /etc/hpcinit/node.yaml; exit 1; }
		if systemctl start slurmd.service 2>/tmp/slurmd.err; then echo "slurmd started although hpcinit failed"; cp /root/node.yaml.good /etc/hpcinit/node.yaml; exit 1; fi
		cat /tmp/slurmd.err
		cp /root/node.yaml.good /etc/hpcinit/node.yaml
		sed -i "/\/mnt\/never/d" /etc/fstab
		systemctl restart hpcinit.service || { systemctl status --no-pager hpcinit.service | tail; exit 1; }
		systemctl start slurmd.service
		systemctl is-active slurmd.service
		[ "$(systemctl show -p LimitMEMLOCK --value slurmd.service)" = infinity ]
		systemctl stop slurmd.service'
}

# (7) Kernel hold: a newer linux-image-amd64 offered by the local repository
# stays out, on every compute (of each release: --release).
check_kernel() {
	each_vm "kernel: apt-get upgrade leaves the held kernel packages alone on every compute; hpcinit check agrees" '
		[ "$(hostname)" = head ] && exit 0
		set -e
		v0=$(dpkg-query -W -f="\${Version}" linux-image-amd64)
		apt-cache policy linux-image-amd64 | grep -q "99.0" || { echo "the repository offers no newer linux-image-amd64"; apt-cache policy linux-image-amd64; exit 1; }
		DEBIAN_FRONTEND=noninteractive apt-get upgrade -y -q > /tmp/up.log 2>&1 || { cat /tmp/up.log; exit 1; }
		v1=$(dpkg-query -W -f="\${Version}" linux-image-amd64)
		[ "$v0" = "$v1" ] || { echo "linux-image-amd64 went from $v0 to $v1"; cat /tmp/up.log; exit 1; }
		grep -q "held back\|kept back" /tmp/up.log || { echo "apt did not report the package held back:"; cat /tmp/up.log; exit 1; }
		hpcinit check --only kernel | grep -q "^result: in-sync" || { hpcinit check --only kernel; exit 1; }'
}

# (2) A reboot of a compute brings the NFS mount back (hpcinit.service at a
# later boot: runcmd is per instance), and the node is ready again.
check_reboot() {
	local n=c1 before end out
	before=$(cat "$W/vm/$n/out/agent-start")
	vm_exec "$n" 10 'systemctl reboot --no-block' >/dev/null 2>&1 || true
	end=$(($(date +%s) + BOOT_TIMEOUT))
	while [ "$(cat "$W/vm/$n/out/agent-start" 2>/dev/null)" = "$before" ]; do
		[ "$(date +%s)" -lt "$end" ] && kill -0 "${PID[$n]:-}" 2>/dev/null ||
			{ notok "reboot: $n comes back with /shared mounted and hpcinit ready" "it did not come back (console: $W/vm/$n/console.log)"; return; }
		sleep 1
	done
	if out=$(vm_exec "$n" "$BOOT_TIMEOUT" '
		systemctl is-system-running --wait >/dev/null
		while [ "$(systemctl show -p ActiveState --value hpcinit.service)" = activating ]; do sleep 1; done
		set -e
		[ "$(cat /proc/sys/kernel/random/boot_id)" != "" ]
		systemctl is-active hpcinit.service
		findmnt -n -o SOURCE,FSTYPE /shared
		journalctl -b -u hpcinit.service -o cat | grep "^result: "
		hpcinit status | grep -q "result: ready"' 2>&1); then
		ok "reboot: $n comes back with /shared mounted and hpcinit ready"
	else
		notok "reboot: $n comes back with /shared mounted and hpcinit ready" "$out"
	fi
}
