#!/bin/bash
# kernel check findings, each on the Debian fixture with one change: a pending newer
# kernel, missing or unloaded modules, DKMS-built but not installed, kernel.expect,
# the --kernel-release override, an unknown distribution.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
R=$T/root
NEW=5.15.0-1061-azure

# findings FILE MODULE: the module's findings, "severity tag" a line
findings() {
	"$PY" -c 'import json, sys
for m in json.load(open(sys.argv[1]))["modules"]:
    if m["name"] == sys.argv[2]:
        for f in m["findings"]:
            print(f["severity"], f["tag"])' "$@"
}
# run_check [ARGS...]: check --only kernel on $R
run_check() { run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --only kernel --json "$@"; }
held_fixture() {
	fixture kernel/debian "$R"
	hpcinit apply --root "$R" -c "$R/node.yaml" --only kernel >/dev/null 2>&1
}

# A newer kernel installed without the RDMA modules: the next reboot breaks RDMA.
held_fixture
touch "$R/boot/vmlinuz-$NEW"
mkdir -p "$R/lib/modules/$NEW/kernel"
run_check
is "pending kernel: exit 3 (degraded)" "$rc" 3
is "pending kernel: summary" "$(jget "$T/out" kernel summary)" \
	"newer kernel $NEW installed: the next reboot boots it and breaks RDMA (missing for it: mlx5_ib ib_uverbs rdma_ucm ib_core); remove it or rebuild the drivers before rebooting"
is "pending kernel: findings" "$(findings "$T/out" kernel | tr '\n' ' ')" "info kernel.release info kernel.module.loaded info kernel.module.loaded info kernel.module.loaded info kernel.module.builtin info kernel.hold.ok info kernel.hold.ok info kernel.hold.ok info kernel.hold.ok degraded kernel.pending.breaks-rdma "
# With the modules built for it (DKMS did its job), it is only a note.
for m in mlx5_ib ib_uverbs rdma_ucm; do mkdir -p "$R/lib/modules/$NEW/updates/dkms"; : >"$R/lib/modules/$NEW/updates/dkms/$m.ko"; done
echo kernel/drivers/infiniband/core/ib_core.ko >"$R/lib/modules/$NEW/modules.builtin"
run_check
is "pending kernel with modules: exit 0" "$rc" 0
has_detail "pending kernel with modules: noted" "$T/out" kernel "^newer kernel $NEW installed; the next reboot boots it, and the listed modules exist for it$"
has_tag "pending kernel with modules" "$T/out" kernel info kernel.pending.ok
# Also found from dpkg alone (a linux-image package without /boot in the tree).
held_fixture
printf 'Package: linux-image-%s\nStatus: install ok installed\nPriority: optional\nSection: kernel\nMaintainer: K <k@example.org>\nArchitecture: amd64\nVersion: 5.15.0-1061.70\nDescription: kernel\n\n' "$NEW" >>"$R/var/lib/dpkg/status"
run_check
is "pending kernel from dpkg: exit 3" "$rc" 3

# A listed module missing for the running kernel.
fixture kernel/debian "$R"
rm "$R/lib/modules/5.15.0-1057-azure/kernel/drivers/infiniband/hw/mlx5/mlx5_ib.ko"
run_check
is "module missing: exit 1" "$rc" 1
is "module missing: summary" "$(jget "$T/out" kernel summary)" \
	"module mlx5_ib: not found for the running kernel 5.15.0-1057-azure (/lib/modules/5.15.0-1057-azure, modules.builtin, DKMS); reinstall the RDMA drivers for this kernel (+2 more)"
is "module missing: findings" "$(findings "$T/out" kernel | tr '\n' ' ')" "info kernel.release failed kernel.module.missing info kernel.module.loaded info kernel.module.loaded info kernel.module.builtin change kernel.hold.missing change kernel.hold.unattended-upgrades "
# Built by DKMS for this kernel but never installed.
mkdir -p "$R/var/lib/dkms/mlnx-ofed-kernel/24.01/5.15.0-1057-azure/x86_64/module"
: >"$R/var/lib/dkms/mlnx-ofed-kernel/24.01/5.15.0-1057-azure/x86_64/module/mlx5_ib.ko"
run_check
is "DKMS-built, not installed: summary" "$(jget "$T/out" kernel summary)" \
	"module mlx5_ib: built by DKMS (/var/lib/dkms/mlnx-ofed-kernel/24.01/5.15.0-1057-azure/x86_64/module/mlx5_ib.ko) but not installed for 5.15.0-1057-azure; run dkms install (+2 more)"
has_tag "DKMS-built, not installed" "$T/out" kernel failed kernel.module.dkms-not-installed

# Present but not loaded.
fixture kernel/debian "$R"
rm -r "$R/sys/module/rdma_ucm"
run_check
is "module not loaded: summary" "$(jget "$T/out" kernel summary)" \
	"module rdma_ucm: present (/lib/modules/5.15.0-1057-azure/kernel/drivers/infiniband/core/rdma_ucm.ko) but not loaded; modprobe rdma_ucm (+2 more)"
has_tag "module not loaded" "$T/out" kernel failed kernel.module.not-loaded

# kernel.expect, and --kernel-release taking precedence over the root's file.
held_fixture
run_check --kernel-release 6.1.0-18-cloud-amd64
is "--kernel-release mismatching kernel.expect: exit 1" "$rc" 1
is "kernel.expect mismatch: summary" "$(jget "$T/out" kernel summary)" \
	"running kernel 6.1.0-18-cloud-amd64 does not match kernel.expect '5.15.0-*-azure' (+5 more)"
has_tag "kernel.expect mismatch" "$T/out" kernel failed kernel.expect.mismatch
has_detail "the override is named as the source" "$T/out" kernel '^running kernel 6.1.0-18-cloud-amd64 \(from --kernel-release\)'

# An unknown distribution cannot be held.
fixture kernel/debian "$R"
printf 'ID=arch\nPRETTY_NAME="Arch Linux"\n' >"$R/etc/os-release"
run_check
is "unknown distro: exit 1" "$rc" 1
is "unknown distro: summary" "$(jget "$T/out" kernel summary)" \
	"cannot hold the kernel: unknown distribution 'arch' in /etc/os-release (known: Debian/Ubuntu, RHEL/Alma/Rocky/CentOS, SLES/openSUSE, Azure Linux)"
has_tag "unknown distro" "$T/out" kernel failed kernel.hold.unknown-distro

# apt holding the dpkg lock at boot (unattended-upgrades): apply waits for it, then holds.
fixture kernel/debian "$R"
: >"$R/var/lib/dpkg/lock-frontend"
PY=python3; [ -x /usr/bin/python3 ] && PY=/usr/bin/python3
"$PY" -c 'import fcntl, sys, time
f = open(sys.argv[1], "w"); fcntl.lockf(f, fcntl.LOCK_EX); open(sys.argv[2], "w").close(); time.sleep(1.5)' \
	"$R/var/lib/dpkg/lock-frontend" "$T/locked" &
locker=$!
cleanup_add "kill $locker 2>/dev/null || true"
while [ ! -e "$T/locked" ]; do sleep 0.05; done
t0=$(date +%s%N)
run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --only kernel --json
ms=$((($(date +%s%N) - t0) / 1000000))
wait "$locker"
is "dpkg locked by another process: apply still exits 0" "$rc" 0
is "dpkg locked: held once the lock is free" "$(jget "$T/out" kernel summary)" "kernel 5.15.0-1057-azure held (Debian/Ubuntu)"
check "dpkg locked: apply waited for the lock (${ms} ms)" [ "$ms" -ge 1000 ]

# hold: false writes nothing.
fixture kernel/debian "$R"
sed -i 's/hold: true/hold: false/' "$R/node.yaml"
snapshot "$R" | grep -v -e ' \.$' -e ' ./var/lib$' >"$T/s0"
run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --only kernel --json
is "hold: false: apply exits 0" "$rc" 0
snapshot "$R" | grep -v -e ' \.$' -e ' ./var/lib$' -e ./run -e ./var/lib/hpcinit >"$T/s1"
check "hold: false: nothing written" same_file "$T/s1" "$T/s0"

done_testing
