#!/bin/bash
# The gpu step's other failures on fake roots of real layouts (tests/fixtures/gpu/mkroot.sh:
# no GPU here, the files stand in for an ND or NC node's), through the real binary:
# GPUDirect RDMA, the fabric manager, Xid events after boot (check), the HCA pairing,
# ND A100 v4 and NC A100 v4.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
if [ "$(id -u)" != 0 ]; then echo "SKIP: the fake /dev/nvidia* need mknod (root)"; exit 77; fi
R=$T/root
mk() { rm -rf "$R"; bash "$FIX/gpu/mkroot.sh" "$R" "$1"; }
spec() { printf 'version: 1\ncluster: {name: gpu}\ngpu: {%s}\n' "${1:-}" >"$R/node.yaml"; }
run() { run_hpc_stdout "$T/out" "${1:-check}" --root "$R" -c "$R/node.yaml" --only gpu --json; }
findings() { "$PY" -c 'import json, sys
for m in json.load(open(sys.argv[1]))["modules"]:
    if m["name"] == "gpu":
        for f in m.get("findings", []): print(f["severity"], f["tag"], f["text"])' "$T/out"; }
has_finding() {   # DESC SEVERITY TAG REGEX
	if findings | grep -E -- "^$2 $3 $4" >/dev/null; then ok "$1"; else
		not_ok "$1"; echo "  no finding /^$2 $3 $4/ in:"; findings | sed 's/^/  | /'; fi
}

# nvidia_peermem loaded but not registered: NCCL drops GPUDirect RDMA silently.
mk ndh100v5
rm -rf "$R/sys/kernel/mm/memory_peers"
run
is "peermem unregistered: exit 3 (degraded)" "$rc" 3
has_finding "peermem unregistered: said" degraded gpu.peermem.unregistered 'nvidia_peermem is loaded but not registered'
spec 'peermem: required'
run
is "peermem unregistered, required: exit 1" "$rc" 1
has_finding "peermem unregistered, required: failed" failed gpu.peermem.unregistered '.*\[gpu.peermem: required\]$'
# nvidia-peermem's own name for the registration (newer drivers) counts too.
mkdir -p "$R/sys/kernel/mm/memory_peers/nvidia-peermem" && echo 1.2 >"$R/sys/kernel/mm/memory_peers/nvidia-peermem/version"
run
is "peermem registered as nvidia-peermem: exit 0" "$rc" 0
mk ndh100v5
rm -rf "$R/sys/module/nvidia_peermem"
run
is "peermem not loaded: exit 3" "$rc" 3
has_finding "peermem not loaded: said" degraded gpu.peermem.unloaded 'nvidia_peermem is not loaded'
# An NC node without InfiniBand (only accelerated networking's Ethernet VF, an RDMA device
# too): nothing to say about GPUDirect RDMA.
mk nca100v4-1
rm -rf "$R/sys/module/nvidia_peermem" "$R/sys/kernel/mm/memory_peers"
mkdir -p "$R/sys/bus/pci/devices/c0de:00:02.0" "$R/sys/class/infiniband/mlx5_an0/ports/1"
echo 0 >"$R/sys/bus/pci/devices/c0de:00:02.0/numa_node"
echo Ethernet >"$R/sys/class/infiniband/mlx5_an0/ports/1/link_layer"
ln -s ../../../bus/pci/devices/c0de:00:02.0 "$R/sys/class/infiniband/mlx5_an0/device"
run
is "NC without InfiniBand, no peermem: exit 0" "$rc" 0
has_detail "NC without InfiniBand: not checked, said" "$T/out" gpu '^GPUDirect RDMA: no InfiniBand device'
is "NC without InfiniBand: no HCA in the summary" "$(jget "$T/out" gpu summary)" "1 GPU a100, driver 535.161.08"

# The fabric manager down, then of another version than the driver.
mk ndh100v5
rm "$R/run/nvidia-fabricmanager/nv-fabricmanager.pid"
rm -rf "$R/proc/4242"
run
is "fabric manager down: exit 1" "$rc" 1
has_finding "fabric manager down: names the NVSwitches" failed gpu.fabricmanager.down \
	'nvidia-fabricmanager is not running .* on a node with 4 NVSwitches \(the first at 0004:00:00.0\)'
mk ndh100v5
echo 4242 >"$R/run/nvidia-fabricmanager/nv-fabricmanager.pid"
echo bash >"$R/proc/4242/comm"     # a stale pid file: another process has the pid now
run
is "stale pid file: exit 1" "$rc" 1
has_finding "stale pid file: down" failed gpu.fabricmanager.down 'nvidia-fabricmanager is not running'
mk ndh100v5
sed -i 's/^Version: .*/Version: 535.154.05-1/' "$R/var/lib/dpkg/status"
run
is "fabric manager 535.154.05, driver 535.161.08: exit 1" "$rc" 1
has_finding "fabric manager version: both named" failed gpu.fabricmanager.version \
	'nvidia-fabricmanager is 535.154.05 \(dpkg\) but the driver is 535.161.08: they must match exactly'
mk ndh100v5
rm "$R/var/lib/dpkg/status"
run
is "fabric manager version unknown: exit 3" "$rc" 3
has_finding "fabric manager version unknown: said" degraded gpu.fabricmanager.version-unknown 'nvidia-fabricmanager.s version is unknown'

# An RPM system (AlmaLinux HPC images): the version from rpm's database in the root, made
# here with rpmbuild and rpm --justdb (a stand-in package: no files, only its name and version).
if command -v rpmbuild >/dev/null && command -v rpm >/dev/null; then
	mkdir -p "$T/rpm/SPECS"
	printf 'Name: nvidia-fabric-manager\nVersion: %s\nRelease: 1\nSummary: stand-in\nLicense: MIT\nBuildArch: noarch\n%%description\nstand-in\n%%files\n' \
		535.154.05 >"$T/rpm/SPECS/fm.spec"
	rpmbuild --define "_topdir $T/rpm" -bb "$T/rpm/SPECS/fm.spec" >"$T/rpmbuild.log" 2>&1
	mk ndh100v5
	rm "$R/var/lib/dpkg/status"
	rpm --root "$R" --dbpath /var/lib/rpm --initdb
	rpm --root "$R" --dbpath /var/lib/rpm -i --nodeps --justdb --noscripts "$T"/rpm/RPMS/noarch/*.rpm 2>/dev/null
	run
	is "rpm: fabric manager 535.154.05, driver 535.161.08: exit 1" "$rc" 1
	has_finding "rpm: the version from rpm's database" failed gpu.fabricmanager.version \
		'nvidia-fabricmanager is 535.154.05 \(rpm\) but the driver is 535.161.08'
else
	echo "# rpm or rpmbuild not installed: the RPM database case is not run here (tools/setup.sh installs them)"
fi

# Xid 79 after boot: the GPU fell off the bus while the node ran; check (the whole check,
# as the timer runs it) fails it, naming it, and the node's status turns failed.
mk ndh100v5
run_hpc "$T/apply" apply --root "$R" -c "$R/node.yaml"
is "before the Xid: apply exit 0" "$rc" 0
run_hpc "$T/status" status --root "$R"
is "before the Xid: status ready (exit 0)" "$rc" 0
printf '4,2210,912345678,-;NVRM: Xid (PCI:000b:00:00): 79, pid=0, name=, GPU has fallen off the bus.\n' >>"$R/dev/kmsg"
run_hpc "$T/check" check --root "$R" -c "$R/node.yaml"
is "Xid 79: the whole check exit 1" "$rc" 1
run_hpc "$T/status" status --root "$R"
is "Xid 79: the node's status is failed (exit 1)" "$rc" 1
check "Xid 79: status says why" grep -q '000b:00:00.0: Xid 79' "$T/status"
run check
is "Xid 79 after boot: check exit 1" "$rc" 1
has_finding "Xid 79: named with the GPU's address" failed gpu.xid '000b:00:00.0: Xid 79 \(GPU has fallen off the bus\) in the kernel log'
# ...and gone from the bus too: the count and the address.
rm -rf "$R/sys/bus/pci/devices/000b:00:00.0"
run check
has_finding "fallen off, gone from PCI: the address" failed gpu.missing '000b:00:00.0: no GPU at this PCI address'
# No count to hold the node to (a size not in the table): a GPU on the bus at boot's apply
# and gone at the timer's check still fails it, named (this boot's /run keeps what was seen).
mk nca100v4-2
echo Standard_Stand_In_Size >"$R/etc/hpcinit/facts/vm-size"
run apply
is "unknown size, 2 GPUs: apply exit 0" "$rc" 0
check "unknown size: what was seen is kept in /run" grep -qx '0002:00:00.0' "$R/run/hpcinit/gpu-seen"
rm -rf "$R/sys/bus/pci/devices/0002:00:00.0" "$R/proc/driver/nvidia/gpus/0002:00:00.0"
run check
is "unknown size, one gone after boot: check exit 1" "$rc" 1
has_finding "unknown size, one gone: named" failed gpu.missing '0002:00:00.0: a GPU was there earlier this boot'
# The ND H100 v5 layout names it once, not twice.
mk ndh100v5
run apply
rm -rf "$R/sys/bus/pci/devices/0003:00:00.0"
run check
is "layout and /run: 0003 named once" "$(findings | grep -c '^failed gpu.missing 0003:00:00.0')" 1

# An Xid that is not a failing one is shown, not failed.
mk ndh100v5
printf '4,2210,912345678,-;NVRM: Xid (PCI:0001:00:00): 13, Graphics SM Warp Exception\n' >>"$R/dev/kmsg"
printf '4,2211,912345679,-;NVRM: Xid (PCI:0001:00:00): 13, Graphics SM Warp Exception\n' >>"$R/dev/kmsg"
run
is "Xid 13: exit 0" "$rc" 0
is "Xid 13 twice: said once" "$(jget "$T/out" gpu details | grep -c 'Xid 13 in the kernel log')" 1
has_detail "Xid 13: shown" "$T/out" gpu '^0001:00:00.0: Xid 13 in the kernel log \(not a failing one\)$'

# The pairing checked against sysfs: an HCA on the other NUMA node than its GPU.
mk ndh100v5
echo 1 >"$R/sys/bus/pci/devices/0103:00:00.0/numa_node"
run
is "HCA on the wrong NUMA node: exit 3" "$rc" 3
has_finding "HCA on the wrong NUMA node: both named" degraded gpu.hca \
	'0003:00:00.0 \(NUMA 0\) and its HCA mlx5_ib2 0103:00:00.0 \(NUMA 1\) are on different NUMA nodes'

# The image's NCCL topology file: named in /etc/nccl.conf, left alone, its absence said.
mk ndh100v5
mkdir -p "$R/opt/microsoft"
printf '# the image'"'"'s\nNCCL_IB_PCI_RELAXED_ORDERING=1\nNCCL_TOPO_FILE=/opt/microsoft/ndv5-topo.xml\n' >"$R/etc/nccl.conf"
echo '<system version="1"/>' >"$R/opt/microsoft/ndv5-topo.xml"
cp "$R/etc/nccl.conf" "$T/nccl.conf.before"
run apply
is "NCCL topology file there: exit 0" "$rc" 0
has_detail "NCCL topology file: shown" "$T/out" gpu '^NCCL_TOPO_FILE: /opt/microsoft/ndv5-topo.xml \(/etc/nccl.conf, the image.s: left as it is\)$'
check "NCCL topology file: /etc/nccl.conf untouched" cmp -s "$R/etc/nccl.conf" "$T/nccl.conf.before"
rm "$R/opt/microsoft/ndv5-topo.xml"
run
is "NCCL topology file gone: exit 3" "$rc" 3
has_finding "NCCL topology file gone: named" degraded gpu.nccl.topo '/etc/nccl.conf sets NCCL_TOPO_FILE=/opt/microsoft/ndv5-topo.xml, which is not there'

# ND A100 v4: 6 NVSwitches 10de:1af1, no published pairing: HCAs by NUMA node.
mk nda100v4
run
is "ND A100 v4 healthy: exit 0" "$rc" 0
is "ND A100 v4 healthy: summary" "$(jget "$T/out" gpu summary)" \
	"8 GPUs a100, driver 535.161.08, NVSwitch; GPU->HCA 0:mlx5_ib0 1:mlx5_ib1 2:mlx5_ib2 3:mlx5_ib3 4:mlx5_ib4 5:mlx5_ib5 6:mlx5_ib6 7:mlx5_ib7"
has_detail "ND A100 v4: by NUMA nodes" "$T/out" gpu "^0009:00:00.0 -> mlx5_ib4 \\(NUMA nodes\\)$"
rm -rf "$R/proc/4242"
run
has_finding "ND A100 v4: fabric manager down, 6 NVSwitches" failed gpu.fabricmanager.down '.* on a node with 6 NVSwitches'

# NC A100 v4 with 4 GPUs, no NVSwitch: no fabric manager wanted; one unbound.
mk nca100v4-4
run
is "NC A100 v4 (4): exit 0" "$rc" 0
is "NC A100 v4 (4): summary" "$(jget "$T/out" gpu summary)" "4 GPUs a100, driver 535.161.08"
rm "$R/sys/bus/pci/devices/0004:00:00.0/driver"
run
has_finding "NC A100 v4: one unbound" failed gpu.unbound '0004:00:00.0: GPU 10de:20b5 is on the PCI bus but not bound'

# A driver that does not answer: a read of its procfs blocks (a FIFO with no writer stands in
# for a wedged driver's file).  The step ends at its read's deadline, failed, and names it.
mk nca100v4-1
rm "$R/proc/driver/nvidia/gpus/0001:00:00.0/information"
mkfifo "$R/proc/driver/nvidia/gpus/0001:00:00.0/information"
t0=$(date +%s%N)
run
t1=$(date +%s%N)
is "wedged driver: exit 1" "$rc" 1
has_finding "wedged driver: said" failed gpu.hung 'reading the GPUs \(sysfs, /proc/driver/nvidia\) did not finish within 5000 ms'
check "wedged driver: the run ended (under 15 s)" test $(((t1 - t0) / 1000000)) -lt 15000
done_testing
