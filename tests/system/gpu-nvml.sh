#!/bin/bash
# The gpu step with the NVIDIA management library, through the real binary:
# fake roots of real layouts (tests/fixtures/gpu/mkroot.sh) and a STAND-IN for
# libnvidia-ml.so.1 (tests/lib/fake-nvml.c, built by make check as
# tests/lib/nvml-standin.so): no GPU here.  The stand-in is loaded through
# HPCINIT_NVML_LIB from the test's own directory (the override is honoured
# only from a path no other user can write) and answers what $T/nvml.conf
# says.  Healthy, a threshold of each severity on one GPU named by its PCI
# address, no library at all, and nvmlInit_v2 hung: the step ends at its
# NVML deadline (20 s) with a finding naming the call.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
if [ "$(id -u)" != 0 ]; then echo "SKIP: the fake /dev/nvidia* need mknod (root)"; exit 77; fi
R=$T/root
cp "$TOP_BUILDDIR/tests/lib/nvml-standin.so" "$T/nvml-standin.so"
export HPCINIT_NVML_LIB=$T/nvml-standin.so HPCINIT_NVML_STANDIN=$T/nvml.conf
mk() { rm -rf "$R"; bash "$FIX/gpu/mkroot.sh" "$R" "$1"; }
run() { run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --only gpu --json; }
findings() { "$PY" -c 'import json, sys
for m in json.load(open(sys.argv[1]))["modules"]:
    if m["name"] == "gpu":
        for f in m.get("findings", []): print(f["severity"], f["tag"], f["text"])' "$T/out"; }
has_finding() {   # DESC SEVERITY TAG REGEX
	if findings | grep -E -- "^$2 $3 $4" >/dev/null; then ok "$1"; else
		not_ok "$1"; echo "  no finding /^$2 $3 $4/ in:"; findings | sed 's/^/  | /'; fi
}
# standin [ADDR OPTIONS]...: the 8 GPUs of ND H100 v5 as NVML lists them, ADDR's with OPTIONS
standin() {
	local g line
	: >"$T/nvml.conf"
	for g in 0001 0002 0003 0008 0009 000a 000b 000c; do
		line="gpu 0000$g:00:00.0"
		[ "${1:-}" != "$g" ] || line="$line $2"
		echo "$line" >>"$T/nvml.conf"
	done
	echo "driver 535.161.08" >>"$T/nvml.conf"
}

mk ndh100v5
standin
run
is "healthy with NVML: exit 0" "$rc" 0
has_detail "healthy: NVML read, from the override" "$T/out" gpu \
	"^NVML: $T/nvml-standin.so, driver 535.161.08, 8 GPUs, read in [0-9]+ ms\$"
has_detail "healthy: 000c is NVML's 8th, every reading in its line" "$T/out" gpu \
	'^GPU 000c:00:00.0 \(NVML 7\): persistence on, ECC on, uncorrectable ECC errors 0 since the driver loaded, 0 in its lifetime, rows remapped 0 \(correctable\) 0 \(uncorrectable\)$'

standin 000b "uncvol=2 uncagg=2"
run
is "uncorrectable ECC errors: exit 1" "$rc" 1
is "uncorrectable ECC errors: failed" "$(jget "$T/out" gpu status)" failed
has_finding "uncorrectable ECC errors: named by its address" failed gpu.ecc.uncorrectable \
	'GPU 000b:00:00.0: 2 uncorrectable ECC errors since the driver loaded'

standin 0003 "remap=0,1,1,0"
run
is "a row remap pending: exit 3 (degraded)" "$rc" 3
has_finding "a row remap pending: named" degraded gpu.rowremap.pending 'GPU 0003:00:00.0: a row remap is pending'

standin 0001 "persist=0"
run
is "persistence off: exit 3 (degraded)" "$rc" 3
has_finding "persistence off: named" degraded gpu.persistence.off 'GPU 0001:00:00.0: persistence mode is off'

# No library at all (a node without the driver's userland): nothing lost, no finding.
HPCINIT_NVML_LIB=$T/no-such-libnvidia-ml.so.1 run
is "no library: exit 0" "$rc" 0
has_detail "no library: one detail line" "$T/out" gpu "^NVML: not read: HPCINIT_NVML_LIB=$T/no-such-libnvidia-ml.so.1: No such file or directory\$"
# Under a fake root the machine's own library is never loaded.
(unset HPCINIT_NVML_LIB; run; echo "$rc" >"$T/rc")
is "fake root, no override: exit 0" "$(cat "$T/rc")" 0
has_detail "fake root, no override: not loaded" "$T/out" gpu "^NVML: not read: under a fake root"

# nvmlInit_v2 never returns: the step ends at NVML's deadline, not the boot's.
{ echo "sleep nvmlInit_v2 600000"; cat "$T/nvml.conf"; } >"$T/nvml.hang" && mv "$T/nvml.hang" "$T/nvml.conf"
t0=$(date +%s)
run
took=$(( $(date +%s) - t0 ))
echo "# nvmlInit_v2 asleep for 10 minutes: check --only gpu took $took s"
is "hung nvmlInit_v2: exit 1" "$rc" 1
check "hung nvmlInit_v2: ended by the deadline (20 s), not the stand-in's 10 minutes" [ "$took" -lt 28 ]
has_finding "hung nvmlInit_v2: the call named" failed gpu.nvml.timeout \
	'NVML did not answer within [0-9]+ ms: nvmlInit_v2 was still running, ended'
done_testing
