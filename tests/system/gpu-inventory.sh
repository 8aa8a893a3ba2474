#!/bin/bash
# The gpu step on fake roots of real layouts (tests/fixtures/gpu/mkroot.sh: no GPU
# here, the sysfs/procfs/dev files stand in for an ND or NC node's), through the
# real binary: the healthy inventory, and a missing or unbound GPU failing the
# step with its PCI address.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
if [ "$(id -u)" != 0 ]; then echo "SKIP: the fake /dev/nvidia* need mknod (root)"; exit 77; fi
R=$T/root
mk() { rm -rf "$R"; bash "$FIX/gpu/mkroot.sh" "$R" "$1"; }
run() { run_hpc_stdout "$T/out" "${1:-check}" --root "$R" -c "$R/node.yaml" --only gpu --json; }
findings() { "$PY" -c 'import json, sys
for m in json.load(open(sys.argv[1]))["modules"]:
    if m["name"] == "gpu":
        for f in m.get("findings", []): print(f["severity"], f["tag"], f["text"])' "$T/out"; }
has_finding() {   # DESC SEVERITY TAG REGEX
	if findings | grep -E -- "^$2 $3 $4" >/dev/null; then ok "$1"; else
		not_ok "$1"; echo "  no finding /^$2 $3 $4/ in:"; findings | sed 's/^/  | /'; fi
}

mk ndh100v5
run
is "ND H100 v5 healthy: exit 0" "$rc" 0
is "ND H100 v5 healthy: summary, each GPU's HCA by Azure's pairing" "$(jget "$T/out" gpu summary)" \
	"8 GPUs h100, driver 535.161.08, NVSwitch; GPU->HCA 0:mlx5_ib0 1:mlx5_ib1 2:mlx5_ib2 3:mlx5_ib3 4:mlx5_ib4 5:mlx5_ib5 6:mlx5_ib6 7:mlx5_ib7"
has_detail "ND H100 v5: 0008 pairs with 0104 (mlx5_ib3)" "$T/out" gpu "^0008:00:00.0 -> mlx5_ib3 \(Azure's pairing\)$"
has_detail "ND H100 v5: GPUDirect RDMA" "$T/out" gpu '^GPUDirect RDMA: nvidia_peermem loaded and registered$'
has_detail "ND H100 v5: the fabric manager" "$T/out" gpu \
	'^fabric manager: pid 4242 \(/run/nvidia-fabricmanager/nv-fabricmanager.pid\), version 535.161.08 \(dpkg\)$'
has_detail "ND H100 v5: the kernel log read" "$T/out" gpu '^kernel log: [0-9]+ bytes read, 0 Xid event\(s\)$'

has_detail "ND H100 v5: expected from the size table" "$T/out" gpu '^expected: 8 GPUs \(Standard_ND96isr_H100_v5, the size table\)$'
has_detail "ND H100 v5: 000c is the eighth, NUMA 1, minor 7" "$T/out" gpu '^000c:00:00.0: 10de:2330 h100, NUMA 1, nvidia, minor 7$'

# 7 of 8: one GPU gone from the bus (the 0009 slot): named from Azure's layout.
mk ndh100v5
rm -rf "$R/sys/bus/pci/devices/0009:00:00.0"
run
is "7 of 8: exit 1" "$rc" 1
is "7 of 8: failed" "$(jget "$T/out" gpu status)" failed
has_finding "7 of 8: the count" failed gpu.missing '7 of 8 GPUs on the PCI bus'
has_finding "7 of 8: the address gone" failed gpu.missing '0009:00:00.0: no GPU at this PCI address \(Standard_ND96isr_H100_v5'

# One present but not bound ("NVIDIA probe routine failed for 1 device(s)").
mk ndh100v5
rm "$R/sys/bus/pci/devices/000a:00:00.0/driver" "$R/dev/nvidia5"
rm -rf "$R/proc/driver/nvidia/gpus/000a:00:00.0"
run
is "unbound: exit 1" "$rc" 1
has_finding "unbound: named" failed gpu.unbound '000a:00:00.0: GPU 10de:2330 is on the PCI bus but not bound'

# /dev/nvidia3 missing (slurmd: "can't stat gres.conf file /dev/nvidia3").
mk ndh100v5
rm "$R/dev/nvidia3"
run
is "no /dev/nvidia3: exit 1" "$rc" 1
has_finding "no /dev/nvidia3: named with its GPU" failed gpu.devnode.missing '0008:00:00.0: /dev/nvidia3 is not a character device'

# gpu.count overrides the table: an NC A100 v4 with 2 GPUs told to have 4.
mk nca100v4-2
printf 'version: 1\ncluster: {name: gpu}\ngpu: {count: 4}\n' >"$R/node.yaml"
run
is "NC count 4 of 2: exit 1" "$rc" 1
has_finding "NC count 4 of 2: the count" failed gpu.missing '2 of 4 GPUs on the PCI bus'
mk nca100v4-2
run
is "NC A100 v4 2 GPUs: exit 0" "$rc" 0
is "NC A100 v4 2 GPUs: summary" "$(jget "$T/out" gpu summary)" "2 GPUs a100, driver 535.161.08"

# No driver: the GPUs are there, nothing is bound.
mk nda100v4
rm -rf "$R/proc/driver/nvidia"
for d in "$R"/sys/bus/pci/devices/*/driver; do case $(readlink "$d") in *nvidia) rm "$d" ;; esac; done
run
is "no driver: exit 1" "$rc" 1
has_finding "no driver: said" failed gpu.driver.absent 'no NVIDIA driver'
has_finding "no driver: the first GPU unbound" failed gpu.unbound '0001:00:00.0:'

# No GPU at all on a node whose spec has a gpu section.
mk nca100v4-1
rm -rf "$R/sys/bus/pci/devices/0001:00:00.0"
run
is "no GPU: exit 1" "$rc" 1
has_finding "no GPU: said" failed gpu.none 'no NVIDIA GPU on the PCI bus'

# Bad gpu keys: exit 2 with the place and what is allowed, nothing run.
printf 'version: 1\ncluster: {name: gpu}\ngpu:\n  count: 65\n  peermem: always\n' >"$T/bad.yaml"
run_hpc "$T/bad" validate "$T/bad.yaml"
is "bad gpu keys: exit 2" "$rc" 2
check "bad gpu.count: its place and bounds" grep -q "bad.yaml:4:10: .*0.*64" "$T/bad"
check "bad gpu.peermem: its place and the words" grep -q "bad.yaml:5:12: .*optional.*required" "$T/bad"

# The VM size from the metadata service when no fact file says it: a STAND-IN for Azure's
# IMDS on loopback (this machine is no Azure VM) answers compute/vmSize with Metadata: true.
mk ndh100v5
rm "$R/etc/hpcinit/facts/vm-size" "$R/dev/nvidia7"
cat >"$T/imds.py" <<'PY'
import http.server, os, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        ok = self.headers.get("Metadata") == "true" and self.path.startswith("/metadata/instance/compute/vmSize")
        body = b"Standard_ND96isr_H100_v5"
        self.send_response(200 if ok else 400); self.send_header("Content-Length", str(len(body) if ok else 0))
        self.end_headers()
        if ok: self.wfile.write(body)
    def log_message(self, *a): pass
s = http.server.HTTPServer(("127.0.0.1", 0), H)
open(sys.argv[1] + ".tmp", "w").write(str(s.server_address[1])); os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.serve_forever()
PY
"$PY" "$T/imds.py" "$T/port" & imds=$!
cleanup_add "kill $imds"
for _ in $(seq 50); do [ -s "$T/port" ] && break; sleep 0.1; done
printf 'version: 1\ncluster: {name: gpu}\ngpu: {imds_url: "http://127.0.0.1:%s/metadata/instance/compute/vmSize?api-version=2021-02-01&format=text"}\n' \
	"$(cat "$T/port")" >"$R/node.yaml"
rm -rf "$R/sys/bus/pci/devices/000c:00:00.0" "$R/proc/driver/nvidia/gpus/000c:00:00.0"
run
is "size from the metadata service, 7 of 8: exit 1" "$rc" 1
has_detail "size from the metadata service: the table's count" "$T/out" gpu '^expected: 8 GPUs \(Standard_ND96isr_H100_v5, the size table\)$'
has_finding "size from the metadata service: 000c named" failed gpu.missing '000c:00:00.0: no GPU at this PCI address'
# No fact file and the default URL on a fake root: no metadata service asked, the count unknown.
printf 'version: 1\ncluster: {name: gpu}\ngpu: {}\n' >"$R/node.yaml"
run
is "no size known: exit 0 (7 GPUs, nothing to hold them to)" "$rc" 0
has_finding "no size known: said" info gpu.count.unknown 'expected count unknown: no VM size'
echo Standard_HB176rs_v4 >"$R/etc/hpcinit/facts/vm-size"
run
has_finding "a size without GPUs in the table: named" info gpu.count.unknown 'expected count unknown: Standard_HB176rs_v4 is not in the size table'
done_testing
