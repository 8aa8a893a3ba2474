#!/bin/bash
# The gpu step's cost on a fake ND H100 v5 root (tests/fixtures/gpu/mkroot.sh: 8 GPUs,
# 4 NVSwitches, 8 HCAs; no GPU here, the files stand in): the step's own time as the
# runner measures it (duration_ms in --json) and the wall time of the whole
# `hpcinit check --only gpu` process, medians and maxima over RUNS, with /bin/true
# as the process start floor.  Prints numbers; asserts none (run by hand, as root).
# Usage: tests/bench/gpu.sh [RUNS]
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
HPCINIT=${HPCINIT:-$TOP/build/hpcinit}
RUNS=${1:-50}
T=$(mktemp -d /tmp/hpcinit-bench-gpu.XXXXXX)
trap 'rm -rf "$T"' EXIT
bash "$TOP/tests/fixtures/gpu/mkroot.sh" "$T/root" ndh100v5
# A kernel log of a booted node's size (~2,000 records, a few of them the driver's).
for i in $(seq 1 2000); do printf '6,%d,%d,-;pci 0000:00:%02x.0: stand-in boot message %d\n' "$i" "$i" $((i % 32)) "$i"; done >>"$T/root/dev/kmsg"
stats() { sort -n | awk '{v[NR]=$1} END {printf "median %.1f ms, max %.1f ms (%d runs)", v[int((NR+1)/2)], v[NR], NR}'; }
: >"$T/step"; : >"$T/wall"; : >"$T/true"
for _ in $(seq 1 "$RUNS"); do
	t0=$(date +%s%N)
	"$HPCINIT" check --root "$T/root" -c "$T/root/node.yaml" --only gpu --json >"$T/out" || { cat "$T/out"; exit 1; }
	t1=$(date +%s%N)
	python3 -c 'import json, sys
for m in json.load(open(sys.argv[1]))["modules"]:
    if m["name"] == "gpu": print(m["duration_ms"])' "$T/out" >>"$T/step"
	echo "$(( (t1 - t0) / 1000 ))" | awk '{print $1 / 1000}' >>"$T/wall"
	t0=$(date +%s%N); /bin/true; t1=$(date +%s%N)
	echo "$(( (t1 - t0) / 1000 ))" | awk '{print $1 / 1000}' >>"$T/true"
done
grep -q '"summary": "8 GPUs h100' "$T/out" || { echo "not the healthy 8-GPU run:"; cat "$T/out"; exit 1; }
echo "gpu step (runner's duration_ms, 8 GPUs, 4 NVSwitches, 8 HCAs, $(wc -c <"$T/root/dev/kmsg") bytes of kernel log): $(stats <"$T/step")"
echo "hpcinit check --only gpu, whole process:                                   $(stats <"$T/wall")"
echo "/bin/true, process start floor:                                            $(stats <"$T/true")"
