#!/bin/bash
# The gpu step against a real NVIDIA driver (run by hand on a machine with a GPU; not
# part of make check): `hpcinit check --only gpu` on the real root with a spec asking
# for the GPUs nvidia-smi lists, its JSON report, and the step's time over 20 runs.
# It writes nothing (check).  Usage, from the source tree with a build in build/:
#   sudo tests/device/gpu-real.sh [OUTDIR]
# OUTDIR (default a temp directory) gets report.json, nvidia-smi.txt and times.txt.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
HPCINIT=${HPCINIT:-$TOP/build/hpcinit}
OUT=${1:-$(mktemp -d /tmp/hpcinit-gpu-real.XXXXXX)}
mkdir -p "$OUT"
n=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
echo "nvidia-smi lists $n GPU(s)"
nvidia-smi -q >"$OUT/nvidia-smi.txt" 2>&1 || echo "nvidia-smi -q failed (see $OUT/nvidia-smi.txt)"
cat /proc/driver/nvidia/version 2>/dev/null || echo "no /proc/driver/nvidia/version"
printf 'version: 1\ncluster: {name: gpu-real}\ngpu: {count: %d}\n' "$n" >"$OUT/node.yaml"
rc=0
"$HPCINIT" check --only gpu -c "$OUT/node.yaml" --json >"$OUT/report.json" 2>"$OUT/stderr.txt" || rc=$?
echo "hpcinit check --only gpu: exit $rc"
python3 - "$OUT/report.json" <<'PY'
import json, sys
for m in json.load(open(sys.argv[1]))["modules"]:
    if m["name"] == "gpu":
        print("status:", m["status"], "|", m["summary"], "|", m["duration_ms"], "ms")
        for d in m["details"]: print("  ", d)
        for f in m.get("findings", []): print("  finding:", f["severity"], f["tag"], f["text"])
PY
for _ in $(seq 1 20); do
	"$HPCINIT" check --only gpu -c "$OUT/node.yaml" --json 2>/dev/null |
		python3 -c 'import json, sys
for m in json.load(sys.stdin)["modules"]:
    if m["name"] == "gpu": print(m["duration_ms"])' || true
done | sort -n >"$OUT/times.txt"
echo "step duration_ms over 20 runs: min $(head -1 "$OUT/times.txt"), median $(sed -n 10p "$OUT/times.txt"), max $(tail -1 "$OUT/times.txt")"
echo "files in $OUT"
