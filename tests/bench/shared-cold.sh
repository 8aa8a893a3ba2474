#!/bin/bash
# SPDX-License-Identifier: MIT
#
# N nodes' cold start on the shared directory at once (issue 37: a node's CPU at 1,000 members),
# alone: etcd-load.sh's "shared cold" phase without its etcd phases, so that one binary can be
# measured against another in minutes.  N fake roots whose /srv/share is one directory of this
# machine (a symbolic link to it, as an NFS mount is one directory), on a fresh journaled ext4
# (tests/bench/node-disk.sh; BENCH_DISK=host for this machine's own file system); each
# "hpcinit apply --only discovery,hostfile" with expect: N, started in waves of WAVE (the next
# once the last wave's records are there).  Every apply must exit 0 and every hostfile list N
# hosts, or the bench fails and prints no figure.  The CPU is bash's count of its waited-for
# children: the N applies and their children, nothing else (no subshell or command of the
# bench's own between its two readings).  With BASELINE=<an older hpcinit binary> the runs
# alternate this binary, the baseline, ... and the ratio is printed.  The floor, in each run:
# N "hpcinit --version" (this binary) started and waited for the same way, its CPU a node.
# Usage: tests/bench/shared-cold.sh [N] [RUNS]   (root; by hand, not by make check;
#        default 1,000 nodes, 2 runs of each)
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${TOP_BUILDDIR:-$TOP/build}
N=${1:-1000} RUNS=${2:-2} WAVE=${WAVE:-50}
for v in "$N" "$RUNS" "$WAVE"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [N] [RUNS]" >&2; exit 2; }
done
HPCINIT=${HPCINIT:-$BUILD/hpcinit}
BINS=("$HPCINIT")
if [ -n "${BASELINE:-}" ]; then
	[ -x "$BASELINE" ] || { echo "BASELINE $BASELINE: not an executable" >&2; exit 2; }
	BINS+=("$BASELINE")
fi
TOPT=$(mktemp -d /tmp/hpcinit-bench-cold.XXXXXX)
. "$TOP/tests/bench/node-disk.sh"
trap 'node_disk_release; rm -rf "$TOPT"' EXIT
. "$TOP/tests/bench/etcd-bench-lib.sh"   # child_cpu (its $T)
T=$TOPT
node_disk "$TOPT/disk"
D=$TOPT/disk

# one run of binary $1: CPU (ms, all N nodes) in RUN_CPU, wall (ms) in RUN_WALL
one_run() {
	local bin=$1 i k n c0 t0 failed=0 full=0
	local -a pids=() recs=()
	rm -rf "$D/share" "$D"/s*
	mkdir -m 0755 "$D/share"
	mkdir -p "$D/share/.hpcinit/bench/nodes"
	for ((i = 1; i <= N; i++)); do
		local S=$D/s$i
		mkdir -p "$S/etc/hpcinit" "$S/etc/ssh" "$S/etc/openmpi" "$S/run/hpcinit" "$S/srv"
		printf 'root:x:0:0:root:/root:/bin/bash\n' >"$S/etc/passwd"
		echo "# This is the default hostfile for Open MPI." >"$S/etc/openmpi/openmpi-default-hostfile"
		install -m 0600 "$TOPT/cluster.key" "$S/etc/hpcinit/cluster.key"
		ln -s "$D/share" "$S/srv/share"
		printf '%s\n' 'version: 1' \
			'cluster: {name: bench, network: 10.0.0.0/8, secret_file: /etc/hpcinit/cluster.key}' \
			"discovery: {method: shared, dir: /srv/share/.hpcinit, expect: $N, wait: 600s, lease: 1h}" \
			'hostfile: {}' >"$S/etc/hpcinit/node.yaml"
	done
	sync
	child_cpu
	c0=$CHILD_CPU
	t0=${EPOCHREALTIME/./}
	shopt -s nullglob
	for ((i = 1; i <= N; i++)); do
		n=$((i + 256))
		HPCINIT_ADDRESS=10.$((n >> 16 & 255)).$((n >> 8 & 255)).$((n & 255)) "$bin" apply \
			--only discovery,hostfile --root "$D/s$i" -c "$D/s$i/etc/hpcinit/node.yaml" \
			--hostname "node$i" >"$D/s$i/apply.out" 2>&1 &
		pids+=($!)
		if ((i % WAVE == 0 && i < N)); then
			# the wave's records there (a glob: no process of the bench's own)
			for ((k = 0; k < 600; k++)); do
				recs=("$D/share/.hpcinit/bench/nodes"/*.rec)
				((${#recs[@]} >= i)) && break
				read -r -t 0.1 _ <>"$TOPT/never" || true
			done
		fi
	done
	for p in "${pids[@]}"; do wait "$p" || failed=$((failed + 1)); done
	RUN_WALL=$(((${EPOCHREALTIME/./} - t0) / 1000))
	child_cpu
	RUN_CPU=$((CHILD_CPU - c0))
	for ((i = 1; i <= N; i++)); do
		[ "$(grep -vc '^#' "$D/s$i/etc/hpcinit/hostfile.plain" 2>/dev/null)" = "$N" ] && full=$((full + 1))
	done
	if [ "$failed" != 0 ] || [ "$full" != "$N" ]; then
		echo "shared-cold.sh: $bin: $failed of $N applies failed, $full of $N hostfiles list $N hosts; no figures" >&2
		for ((i = 1; i <= N; i++)); do
			[ "$(grep -vc '^#' "$D/s$i/etc/hpcinit/hostfile.plain" 2>/dev/null)" = "$N" ] ||
				{ sed 's/^/  | /' "$D/s$i/apply.out" | tail -8 >&2; break; }
		done
		exit 1
	fi
}

# the floor: N "hpcinit --version" started and waited for as the applies are; CPU in FLOOR_CPU
floor_run() {
	local i c0
	local -a pids=()
	child_cpu
	c0=$CHILD_CPU
	for ((i = 1; i <= N; i++)); do
		"$HPCINIT" --version >/dev/null 2>&1 &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p"; done
	child_cpu
	FLOOR_CPU=$((CHILD_CPU - c0))
}

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$TOPT/cluster.key"
mkfifo "$TOPT/never"
declare -A CPU WALL
FLOOR=0
for ((r = 1; r <= RUNS; r++)); do
	floor_run
	FLOOR=$((FLOOR + FLOOR_CPU))
	echo "# run $r, the floor: $FLOOR_CPU ms of CPU ($(awk -v c="$FLOOR_CPU" -v n="$N" 'BEGIN { printf "%.2f", c / n }') ms a node)"
	for b in "${!BINS[@]}"; do
		one_run "${BINS[$b]}"
		CPU[$b]=$((${CPU[$b]:-0} + RUN_CPU))
		WALL[$b]=$((${WALL[$b]:-0} + RUN_WALL))
		echo "# run $r, $([ "$b" = 0 ] && echo "this binary" || echo baseline): $RUN_CPU ms of CPU ($(awk -v c="$RUN_CPU" -v n="$N" 'BEGIN { printf "%.2f", c / n }') ms a node), all done in $RUN_WALL ms"
	done
done
echo "$N nodes' cold start on the shared directory, waves of $WAVE, expect $N; $RUNS runs of each, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf 'floor (%s --version, %d at once): %.2f ms of CPU a node\n' "$HPCINIT" "$N" \
	"$(awk -v c="$FLOOR" -v n="$N" -v r="$RUNS" 'BEGIN { print c / n / r }')"
for b in "${!BINS[@]}"; do
	printf '%s: %.2f ms of CPU a node, all done in %.0f ms\n' "$([ "$b" = 0 ] && echo "this binary" || echo "baseline ($BASELINE)")" \
		"$(awk -v c="${CPU[$b]}" -v n="$N" -v r="$RUNS" 'BEGIN { print c / n / r }')" \
		"$(awk -v w="${WALL[$b]}" -v r="$RUNS" 'BEGIN { print w / r }')"
done
if [ "${#BINS[@]}" = 2 ]; then
	printf 'this binary / baseline = %.2fx\n' "$(awk -v a="${CPU[0]}" -v b="${CPU[1]}" 'BEGIN { print a / b }')"
fi
