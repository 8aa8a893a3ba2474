#!/bin/bash
# The gpu step against a REAL NVIDIA GPU, its driver and its management
# library (NVML): the run issue 34 asks for where a machine with an H100 or
# H200 is at hand.  Not part of `make check` (no GPU there); run by hand, as
# root, from the repository's root.
#
# On a machine with a build of its own (build/hpcinit):
#     sudo tests/device/gpu-real.sh [OUTDIR]
# On a machine with one or more NVIDIA GPUs, the driver and libnvidia-ml.so.1,
# but nothing installable and no network, a build is carried to it:
#   1. Here, after `make -C build`:   bash tests/device/gpu-real.sh --pack
#      puts build/gpu-carry/: the hpcinit binary and the shared libraries it
#      links that are not glibc's (ldd: libyaml; libcrypto is loaded only to sign).  The
#      helpers (hpcinit-ssh, -etcd, -rdma-probe, -mpiverify: libssh, libcurl,
#      json-c, libibverbs, MPI ...) are left behind: `check --only gpu` runs
#      none of them, and with them the carry passes the runner's 64 MiB.
#      The binary needs glibc 2.34 or later on the machine (Debian 12's build
#      asks for symbols up to GLIBC_2.34: Ubuntu 22.04, RHEL 9 and later).
#   2. There, with build/gpu-carry beside the sources:
#         bash tests/device/gpu-real.sh
#      (the project's device runner: command "bash tests/device/gpu-real.sh",
#      carry ["build/gpu-carry"]; it sets $OUT, where the output is kept).
# $HPCINIT names another binary; without it build/gpu-carry/hpcinit, else
# build/hpcinit.  GPU_REAL_ANYWAY=1 runs it on a machine without a GPU, to
# try the script itself (the step then fails with gpu.none).
#
# What it runs, changing nothing of the machine's configuration:
#   - the facts to compare with: nvidia-smi -q (persistence, ECC, ECC errors,
#     retired pages, remapped rows, bus ids), the driver's version, the
#     NVIDIA PCI functions and their driver links, /dev/nvidia*, peermem;
#   - `hpcinit check --only gpu --json` on a scratch root whose /sys, /proc
#     and /dev are the machine's (and, read only, the fabric manager's pid
#     directory and the package database), bound in a private mount namespace
#     (unshare -m: the binds end with the command), with HPCINIT_NVML_LIB
#     naming the machine's own libnvidia-ml.so.1 (a fake root never loads
#     the default library, see docs/gpu.md);
#   - the same check on / itself, where NVML is found the production way
#     (dlopen "libnvidia-ml.so.1"), then 20 more for the step's time; check
#     writes only its state under /run/hpcinit, removed after when this
#     script made it.
# Output: stdout, and under $OUT, else OUTDIR, else a temporary directory:
# facts.txt, nvidia-smi.txt, check-root.json, check-real.json, times.txt,
# summary.txt.  Exit 0 when the checks ran (whatever they found: a real GPU
# may well be degraded), 77 when it cannot run here.
set -u
cd "$(dirname "$0")/../.." || exit 1
CARRY=build/gpu-carry

if [ "${1:-}" = "--pack" ]; then
	[ -x build/hpcinit ] || { echo "gpu-real: build first (make -C build)" >&2; exit 1; }
	rm -rf "$CARRY" && mkdir -p "$CARRY/lib" || exit 1
	cp build/hpcinit "$CARRY/"
	ldd "$CARRY/hpcinit" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u |
		grep -vE '/(libc|libm|libdl|libpthread|librt|libresolv|ld-linux[^/]*)\.so' |
		while read -r l; do cp -L "$l" "$CARRY/lib/"; done
	du -sh "$CARRY"
	echo "gpu-real: packed $CARRY; carry it and run: bash tests/device/gpu-real.sh"
	exit 0
fi

OUTD=${OUT:-${1:-$(mktemp -d /tmp/hpcinit-gpu-real.out.XXXXXX)}}
mkdir -p "$OUTD" || exit 1
say() { printf '%s\n' "$*"; printf '%s\n' "$*" >>"$OUTD/summary.txt"; }
skip() { say "gpu-real: SKIP: $*"; exit 77; }

BIN=${HPCINIT:-$CARRY/hpcinit}
[ -x "$BIN" ] || [ -n "${HPCINIT:-}" ] || BIN=build/hpcinit
[ -x "$BIN" ] || skip "no $CARRY/hpcinit nor build/hpcinit: build here, or pack with --pack and carry $CARRY"
[ "$(id -u)" = 0 ] || skip "run as root (the driver's files and NVML need it)"
export LD_LIBRARY_PATH="$PWD/$CARRY/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export HPCINIT_LIBEXEC_DIR="$PWD/$CARRY"
if ldd "$BIN" 2>&1 | grep -E 'not found|version .GLIBC' >&2; then
	skip "the carried binary does not load here (above); build it on an older glibc"
fi
"$BIN" --help 2>&1 | grep -q 'gpu' || skip "this build has no gpu step"
NVML=$( (ldconfig -p 2>/dev/null | awk '/libnvidia-ml\.so\.1 .*x86-64/ { print $NF; exit }') )
for l in /usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 /usr/lib64/libnvidia-ml.so.1; do
	[ -n "$NVML" ] || [ ! -e "$l" ] || NVML=$l
done

# ---- the facts, as the machine's own tools say them ----
facts() {
	echo "== date: $(date -u +%FT%TZ)  host: $(uname -n)  kernel: $(uname -r)"
	echo "== /proc/driver/nvidia/version"; cat /proc/driver/nvidia/version 2>&1
	echo "== NVML library: ${NVML:-none found by ldconfig}"
	echo "== NVIDIA PCI functions (vendor 0x10de): class, device, driver, numa"
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat "$d/vendor" 2>/dev/null)" = 0x10de ] || continue
		printf '%s class=%s device=%s driver=%s numa=%s\n' "${d##*/}" "$(cat "$d/class")" \
			"$(cat "$d/device")" "$(basename "$(readlink "$d/driver" 2>/dev/null || echo none)")" \
			"$(cat "$d/numa_node" 2>/dev/null)"
	done
	echo "== /dev/nvidia*"; ls -l /dev/nvidia* 2>&1
	echo "== peermem"; ls -d /sys/module/nvidia_peermem /sys/kernel/mm/memory_peers/*/version 2>&1
	echo "== nvidia-smi -q (excerpt)"
	if command -v nvidia-smi >/dev/null; then
		timeout 60 nvidia-smi -q >"$OUTD/nvidia-smi.txt" 2>&1
		grep -E -A1 '^GPU |Product Name|Bus Id|Persistence Mode|Ecc Mode|Current|Pending|Volatile|Aggregate|Uncorr|Retired|Remapped|Correctable Error|Uncorrectable Error|Pending Page|Remapping Failure' "$OUTD/nvidia-smi.txt" |
			grep -v '^--$' | head -150
	else
		echo "(no nvidia-smi)"
	fi
}
facts | tee "$OUTD/facts.txt"
NGPU=0
for d in /sys/bus/pci/devices/*; do
	[ "$(cat "$d/vendor" 2>/dev/null)" = 0x10de ] || continue
	case $(cat "$d/class" 2>/dev/null) in 0x0302*|0x0300*) NGPU=$((NGPU + 1)) ;; esac
done
say "gpu-real: $NGPU NVIDIA GPU(s) on the PCI bus; NVML ${NVML:-not found}"
[ "${NGPU:-0}" -gt 0 ] || [ "${GPU_REAL_ANYWAY:-}" = 1 ] ||
	skip "no NVIDIA GPU on this machine's PCI bus (GPU_REAL_ANYWAY=1 tries the script itself)"

SCR=$(mktemp -d /tmp/hpcinit-gpu-real.XXXXXX) || exit 1
# the binds live in unshare's namespace only; never remove a tree with a mount in it
trap 'grep -q " $SCR/" /proc/self/mounts || rm -rf "$SCR"' EXIT
mkdir -p "$SCR/root/sys" "$SCR/root/proc" "$SCR/root/dev" "$SCR/root/etc/hpcinit" "$SCR/root/run" "$SCR/root/var/lib"
cat >"$SCR/node.yaml" <<EOF
version: 1
cluster: {name: gpu-real}
gpu:
  count: $NGPU
EOF
if ! "$BIN" validate "$SCR/node.yaml" >"$SCR/validate.txt" 2>&1; then
	cat "$SCR/validate.txt"
	printf 'version: 1\ncluster: {name: gpu-real}\ngpu: {}\n' >"$SCR/node.yaml"
	"$BIN" validate "$SCR/node.yaml" || skip "this build's gpu section takes neither count: $NGPU nor {}"
fi
cp "$SCR/node.yaml" "$SCR/root/etc/hpcinit/node.yaml"

# ---- 1. on a scratch root with the machine's /sys, /proc, /dev bound in ----
run_root() {
	# shellcheck disable=SC2016 # $1 and $R are the inner shell's
	unshare -m --propagation private bash -c '
		R=$1; shift
		for m in sys proc dev; do mount --rbind "/$m" "$R/$m" || exit 97; done
		# what the fabric manager check reads (its pid file, the package database), read only
		for m in run/nvidia-fabricmanager var/lib/dpkg var/lib/rpm; do
			[ -d "/$m" ] || continue
			mkdir -p "$R/$m" && mount --bind "/$m" "$R/$m" && mount -o remount,bind,ro "$R/$m" || exit 97
		done
		exec "$@"' _ "$SCR/root" \
		env HPCINIT_NVML_LIB="$NVML" timeout 120 "$BIN" check --root "$SCR/root" -c "$SCR/root/etc/hpcinit/node.yaml" \
		--only gpu --json
}
t0=$(date +%s%N)
run_root >"$SCR/check-root.json" 2>"$SCR/check-root.err"
rc1=$?
ms1=$(( ($(date +%s%N) - t0) / 1000000 ))
if [ $rc1 = 97 ]; then
	say "gpu-real: unshare/mount --rbind refused here: the scratch-root run is left out"
else
	say "== check --root (scratch root, HPCINIT_NVML_LIB=$NVML): exit $rc1 in $ms1 ms"
	cat "$SCR/check-root.json" "$SCR/check-root.err"
fi

# ---- 2. on / itself: NVML found as in production ----
had_run=0; [ -e /run/hpcinit ] && had_run=1
t0=$(date +%s%N)
timeout 120 "$BIN" check -c "$SCR/node.yaml" --only gpu --json >"$SCR/check-real.json" 2>"$SCR/check-real.err"
rc2=$?
ms2=$(( ($(date +%s%N) - t0) / 1000000 ))
say "== check on / (dlopen libnvidia-ml.so.1): exit $rc2 in $ms2 ms"
cat "$SCR/check-real.json" "$SCR/check-real.err"
# the step's own time (the runner's duration_ms), 20 runs more
for _ in $(seq 1 20); do
	timeout 120 "$BIN" check -c "$SCR/node.yaml" --only gpu --json 2>/dev/null |
		python3 -c 'import json, sys
for m in json.load(sys.stdin)["modules"]:
    if m["name"] == "gpu": print(m["duration_ms"])' 2>/dev/null || true
done | sort -n >"$OUTD/times.txt"
[ $had_run = 1 ] || rm -rf /run/hpcinit
if [ -s "$OUTD/times.txt" ]; then
	say "gpu step duration_ms over $(wc -l <"$OUTD/times.txt") runs on /: min $(head -1 "$OUTD/times.txt"), median $(sed -n "$(( ($(wc -l <"$OUTD/times.txt") + 1) / 2 ))p" "$OUTD/times.txt"), max $(tail -1 "$OUTD/times.txt")"
else
	say "gpu step duration_ms: no run gave a report (python3 missing?)"
fi
cp "$SCR/check-root.json" "$OUTD/check-root.json" 2>/dev/null
cp "$SCR/check-real.json" "$OUTD/check-real.json"
cat "$SCR/check-root.err" "$SCR/check-real.err" >"$OUTD/stderr.txt" 2>/dev/null
# exit codes of check: 0 ready, 1 failed or drift, 3 degraded; 2 a spec error
[ $rc2 != 2 ] || { say "gpu-real: the spec was refused"; exit 1; }
grep -q '"gpu"' "$SCR/check-real.json" || { say "gpu-real: no gpu report in the output"; exit 1; }
say "gpu-real: done, files in $OUTD (compare the NVML lines of the reports with nvidia-smi's facts above)"
exit 0
