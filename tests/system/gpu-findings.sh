#!/bin/bash
# gpu: the inventory's findings that gpu-failures.sh does not make, by their tags,
# on the fake root of an ND H100 v5 (tests/fixtures/gpu/mkroot.sh: no GPU here, the
# files stand in for the node's): /dev/nvidiactl missing, a GPU's Device Minor
# unknown, more GPUs than gpu.count says, more than a node may have.  The real binary, check --only gpu.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
if [ "$(id -u)" != 0 ]; then echo "SKIP: the fake /dev/nvidia* need mknod (root)"; exit 77; fi
R=$T/root
mk() { rm -rf "$R"; bash "$FIX/gpu/mkroot.sh" "$R" "$1"; }
spec() { printf 'version: 1\ncluster: {name: gpu}\ngpu: {%s}\n' "${1:-}" >"$R/node.yaml"; }
run() { run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --only gpu --json; }

mk ndh100v5
spec
rm "$R/dev/nvidiactl"
run
is "no /dev/nvidiactl: exit 1" "$rc" 1
has_tag "no /dev/nvidiactl" "$T/out" gpu failed gpu.ctl.missing

mk ndh100v5
spec
info=$(ls "$R"/proc/driver/nvidia/gpus/*/information | head -1)
sed -i '/^Device Minor/d' "$info"
run
has_tag "a GPU's Device Minor unknown" "$T/out" gpu failed gpu.minor.unknown

mk ndh100v5
spec 'count: 4'
run
has_tag "8 GPUs where gpu.count says 4" "$T/out" gpu degraded gpu.count.more
# More GPUs on the bus than a node may have (64): the first 64 checked, said.  57 more
# stand-in GPUs on the PCI bus, unbound (only the count matters here).
mk ndh100v5
spec
for i in $(seq 16 72); do
	d=$R/sys/bus/pci/devices/$(printf '%04x' "$i"):00:00.0
	mkdir -p "$d"
	echo 0x10de >"$d/vendor"; echo 0x2330 >"$d/device"; echo 0x030200 >"$d/class"; echo 0 >"$d/numa_node"
done
run
has_tag "65 GPUs on the bus" "$T/out" gpu degraded gpu.toomany
done_testing
