#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Convergence of N simulated nodes (default 128) started at once, for
# discovery method etcd (a real 3-member etcd) and method shared: "hpcinit
# apply" (discovery with expect: N, hostfile) starts on all N nodes at the
# same moment; printed: the time until the last one exits 0 with all N in
# its hostfile, for each method, and the ratio.  Each node is one process
# tree in its own namespaces, all on this machine's cores, so the time also
# measures how much work each method makes the machine do.  The floor is
# measured in the same run: N "hpcinit --version" started the same way at
# once (what starting N nodes' processes costs here, with no rendezvous);
# each method's time above it is printed too.
# Goal (issue 16): under 1 s with etcd.
# Usage: tests/bench/etcd-converge.sh [N]   (root; run by hand, not by make check)
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${TOP_BUILDDIR:-$TOP/build}
N=${1:-128}
export TOP_SRCDIR=$TOP TOP_BUILDDIR=$BUILD HPCINIT=${HPCINIT:-$BUILD/hpcinit}
export HPCINIT_LIBEXEC_DIR=${HPCINIT_LIBEXEC_DIR:-$BUILD}
SIM_PREFIX=bec SIM_NET=198.19.42
. "$TOP/tests/cluster/lib.sh"
. "$TOP/tests/cluster/etcd-lib.sh"

declare -A MS
FLOOR=0
run_method() {
	local method=$1 nodes=() n i t0 ok=0
	for i in $(seq 1 "$N"); do nodes+=("$(node "$i")"); done
	if [ "$method" = etcd ]; then
		sim up "$N" --no-ssh-trust >/dev/null
		etcd_up
		etcd_spec 60s "$N" > "$T/node.yaml"
	else
		rm -rf "$SHARED/.hpcinit"
		sim up "$N" --no-ssh-trust --shared "$SHARED" >/dev/null
		spec 5m "$N" > "$T/node.yaml"
	fi
	for n in "${nodes[@]}"; do install_spec "$n" "$T/node.yaml"; done
	# The floor, in the same run: N "hpcinit --version" started the same way, at once (the
	# harness's exec into each node's namespaces and the binary's start, no rendezvous).
	if [ "$method" = etcd ]; then
		local pids=() f0
		f0=$(date +%s%N)
		for n in "${nodes[@]}"; do hpc "$n" --version >/dev/null & pids+=($!); done
		wait "${pids[@]}"
		FLOOR=$((($(date +%s%N) - f0) / 1000000))
	fi
	local cpu0
	cpu0=$(etcd_cpu_ms)
	t0=$(date +%s%N)
	apply_all "$T/apply.$method" "${nodes[@]}" >/dev/null && ok=1
	MS[$method]=$((($(date +%s%N) - t0) / 1000000))
	# Where the time went: each node's discovery step (median, max) and, for etcd, the CPU
	# the three members used meanwhile.
	BREAK[$method]="discovery step per node: median $(step_ms discovery "$T/apply.$method" "${nodes[@]}") ms; hostfile step: median $(step_ms hostfile "$T/apply.$method" "${nodes[@]}") ms"
	[ "$method" != etcd ] || BREAK[$method]+="; etcd members' CPU during the run: $(($(etcd_cpu_ms) - cpu0)) ms"
	for n in "${nodes[@]}"; do
		[ "$(hostfile_count "$n")" = "$N" ] || { ok=0; echo "  $n: hostfile does not list $N nodes"; }
	done
	[ "$ok" = 1 ] || MS[$method]="${MS[$method]} (FAILED)"
	[ "$method" != etcd ] || etcd_stop
	sim down
}
declare -A BREAK
# step_ms MODULE PREFIX NODE...: "median (max MAX)" of the step's time in the nodes' apply tables
step_ms() {
	local mod=$1 pre=$2 n
	shift 2
	for n in "$@"; do awk -v m="$mod" '$1 == m {sub("ms", "", $3); print $3 + 0}' "$pre.$n"; done |
		sort -n | awk '{v[NR]=$1} END {printf "%d (max %d)", v[int((NR+1)/2)], v[NR]}'
}
# etcd_cpu_ms: user+system CPU of the running etcd members, in ms
etcd_cpu_ms() {
	local p t=0 tck
	tck=$(getconf CLK_TCK)
	for p in "${ETCD_PIDS[@]}"; do
		[ -n "$p" ] && [ -r "/proc/$p/stat" ] || continue
		t=$((t + $(awk '{print $14 + $15}' "/proc/$p/stat")))
	done
	echo $((t * 1000 / tck))
}
hostfile_count() { grep -vc '^#' "$SIM_STATE/nodes/$1/ovl/etc/upper/hpcinit/hostfile.plain" 2>/dev/null || echo 0; }

echo "convergence of $N simulated nodes started at once, $(nproc) cores"
run_method etcd
run_method shared
printf '%-8s %s\n' method "all $N applied and listing $N (ms)"
printf '%-8s %s\n' etcd "${MS[etcd]}" shared "${MS[shared]}"
echo "etcd: ${BREAK[etcd]}"
echo "shared: ${BREAK[shared]}"
echo "floor: $N \"hpcinit --version\" started the same way at once: $FLOOR ms; above the floor: etcd $((${MS[etcd]%% *} - FLOOR)) ms, shared $((${MS[shared]%% *} - FLOOR)) ms"
echo "shared / etcd = $(awk -v a="${MS[shared]%% *}" -v b="${MS[etcd]%% *}" 'BEGIN{printf "%.2f", a / b}')x; goal: etcd under 1000 ms ($([ "${MS[etcd]%% *}" -lt 1000 ] && echo met || echo NOT met))"
