# tests/vm/cluster.sh's checks, sourced by it (not run alone): One node's own: slurmd gated on readiness, the kernel hold, a reboot.
# Each check_NAME is run by --checks NAME; ok/not_ok, each_vm, vm_exec and the
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
			{ not_ok "reboot: $n comes back with /shared mounted and hpcinit ready" "it did not come back (console: $W/vm/$n/console.log)"; return; }
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
		not_ok "reboot: $n comes back with /shared mounted and hpcinit ready" "$out"
	fi
}

# (by hand, issue 35; not in CHECKS_ALL) kernel.updates: when_modules with the
# real apt on a real Debian node.  The harness builds two local repositories
# (dpkg-deb, dpkg-scanpackages, apt-ftparchive) offering linux-image-amd64
# 99.1 and the kernel it depends on, 6.1.0-99-amd64 (files only, no
# maintainer scripts: these VMs boot with qemu -kernel, no boot loader):
# in a/ that kernel lacks rdma_ucm, in b/ it has every module the spec lists
# (cluster.sh's: [rdma_rxe, ib_uverbs, rdma_ucm]).
# On c1, with apt-file's Contents index target: a/ stays held, the finding
# names rdma_ucm and the release; b/ is let in, and apt full-upgrade then
# installs the new kernel, which hpcinit judges by its /lib/modules.  It
# changes c1's packages (run it alone, last); c1's own spec is applied again
# at the end, which holds the kernel as before.
kupd_repo() {   # kupd_repo DIR WITH_RDMA_UCM
	local dir=$1 k m=lib/modules/6.1.0-99-amd64/kernel/drivers/infiniband
	mkdir -p "$dir"
	k=$(mktemp -d)
	mkdir -p "$k/DEBIAN" "$k/$m/hw/mlx5" "$k/$m/core" "$k/$m/sw/rxe"
	printf 'Package: linux-image-6.1.0-99-amd64\nVersion: 6.1.999-1\nArchitecture: amd64\nMaintainer: hpcinit test bed <root@localhost>\nDescription: newer kernel offered by the test bed (module files only)\n' >"$k/DEBIAN/control"
	echo x >"$k/$m/hw/mlx5/mlx5_ib.ko"
	echo x >"$k/$m/core/ib_uverbs.ko"
	echo x >"$k/$m/sw/rxe/rdma_rxe.ko"
	[ "$2" = no ] || echo x >"$k/$m/core/rdma_ucm.ko"
	dpkg-deb -Zgzip --build "$k" "$dir/linux-image-6.1.0-99-amd64_6.1.999-1_amd64.deb" >/dev/null
	rm -rf "$k/lib"
	printf 'Package: linux-image-amd64\nVersion: 99.1\nArchitecture: amd64\nDepends: linux-image-6.1.0-99-amd64 (= 6.1.999-1)\nMaintainer: hpcinit test bed <root@localhost>\nDescription: newer kernel metapackage offered by the test bed\n' >"$k/DEBIAN/control"
	dpkg-deb -Zgzip --build "$k" "$dir/linux-image-amd64_99.1_amd64.deb" >/dev/null
	rm -rf "$k"
	(cd "$dir" && dpkg-scanpackages --multiversion . /dev/null >Packages 2>/dev/null &&
		apt-ftparchive contents . >Contents-amd64 && apt-ftparchive release . >Release)
}
check_kupdate() {
	local n=c1 out
	rm -rf "$W/vm/$n/kupd"
	kupd_repo "$W/vm/$n/kupd/a" no
	kupd_repo "$W/vm/$n/kupd/b" yes
	if out=$(vm_exec "$n" 900 '
		set -e
		rel=6.1.0-99-amd64
		cp -r /hpcvm/kupd /srv/kupd
		# The index target apt-file installs (/etc/apt/apt.conf.d/50apt-file.conf);
		# the VMs have no network to install apt-file itself.
		cat >/etc/apt/apt.conf.d/50apt-file.conf <<-EOF
		Acquire::IndexTargets::deb::Contents-deb {
		    MetaKey "\$(COMPONENT)/Contents-\$(ARCHITECTURE)";
		    ShortDescription "Contents-\$(ARCHITECTURE)";
		    Description "\$(RELEASE)/\$(COMPONENT) \$(ARCHITECTURE) Contents (deb)";
		    flatMetaKey "Contents-\$(ARCHITECTURE)";
		    flatDescription "\$(RELEASE) Contents (deb)";
		    KeepCompressed "true";
		};
		EOF
		use() { echo "deb [trusted=yes] file:/srv/kupd/$1 ./" >/etc/apt/sources.list.d/kupd.list; apt-get update -q >/dev/null; }
		f() { python3 -c "import json, sys
for m in json.load(open(sys.argv[1]))[\"modules\"]:
    for x in m[\"findings\"]:
        if x[\"tag\"].startswith(\"kernel.update\") or x[\"tag\"].startswith(\"kernel.pending\"): print(x[\"tag\"] + \": \" + x[\"text\"])" "$1"; }
		sel() { dpkg-query -W -f="\${db:Status-Want}" "$1"; }
		sed -E "s/^( *)hold: true\$/&\n\1updates: when_modules/" /etc/hpcinit/node.yaml >/tmp/kupd.yaml
		grep -q "updates: when_modules" /tmp/kupd.yaml
		run=$(uname -r)
		echo "running $run; linux-image-amd64 $(dpkg-query -W -f="\${Version}" linux-image-amd64) is $(sel linux-image-amd64)"
		use a
		hpcinit apply -c /tmp/kupd.yaml --only kernel --json >/tmp/k.json || true
		f /tmp/k.json | tee /tmp/k.f
		grep -qx "kernel.update.modules-missing: kernel $rel lacks rdma_ucm (not installed: the packages its upgrade installs); held" /tmp/k.f
		[ "$(sel linux-image-amd64)" = hold ]
		! apt-get -s -q full-upgrade | grep "^Inst linux-image-$rel"
		echo "a/: held, rdma_ucm named; apt full-upgrade would not install $rel"
		use b
		rc=0; hpcinit check -c /tmp/kupd.yaml --only kernel --json >/tmp/k.json || rc=$?
		f /tmp/k.json | tee /tmp/k.f
		[ "$rc" = 1 ]
		grep -q "^kernel.update.let-in: kernel $rel may come in, but hpcinit.s hold on linux-image-amd64 keeps it out" /tmp/k.f
		hpcinit apply -c /tmp/kupd.yaml --only kernel --json >/tmp/k.json
		f /tmp/k.json | tee /tmp/k.f
		grep -q "^kernel.update.let-in: kernel $rel let in: linux-image-amd64 back to install" /tmp/k.f
		[ "$(sel linux-image-amd64)" = install ]
		[ "$(sel linux-image-$run)" = hold ]
		DEBIAN_FRONTEND=noninteractive apt-get full-upgrade -y -q >/tmp/up.log 2>&1 || { cat /tmp/up.log; exit 1; }
		grep "^Unpacking linux-image-$rel\|^Setting up linux-image-" /tmp/up.log
		test -f /lib/modules/$rel/kernel/drivers/infiniband/core/rdma_ucm.ko
		echo "b/: let in; apt full-upgrade installed $rel"
		hpcinit check -c /tmp/kupd.yaml --only kernel --json >/tmp/k.json || true
		f /tmp/k.json | tee /tmp/k.f
		grep -qx "kernel.update.modules-ok: every kernel.modules exists for kernel $rel (installed: /lib/modules, modules.builtin, DKMS)" /tmp/k.f
		rm -f /etc/apt/sources.list.d/kupd.list /etc/apt/apt.conf.d/50apt-file.conf
		apt-get update -q >/dev/null
		hpcinit apply --only kernel >/dev/null || true
		echo "restored: linux-image-amd64 is $(sel linux-image-amd64) again"' 2>&1); then
		ok "kupdate: kernel.updates: when_modules holds a kernel that lacks a module and lets in one that has them all (real apt)"
		printf '%s\n' "$out" | sed 's/^/#   /'
	else
		not_ok "kupdate: kernel.updates: when_modules holds a kernel that lacks a module and lets in one that has them all (real apt)" "$out"
	fi
}
