#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Join and leave latency on N simulated nodes (default 32), in one run:
#   etcd+watch    a real 3-member etcd; every node runs "hpcinit watch"
#   shared+timer  the shared directory; every node runs "hpcinit refresh"
#                 every TIMER seconds (default 60, hpcinit-refresh.timer's
#                 period) from a random phase, as the timer would
# A new node applies (join), later runs "hpcinit leave" (graceful leave).
# The latency of one node is the time from the joiner's apply (the leaver's
# leave) returning until that node's hostfile lists it (no longer lists it);
# printed: median and max over the N nodes, per method, and their ratio.
# Goal (issue 16): under 1 s median for join and leave with etcd+watch.
# Usage: tests/bench/etcd-latency.sh [N] [TIMER]   (root; run by hand, not by make check)
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${TOP_BUILDDIR:-$TOP/build}
N=${1:-32}
TIMER=${2:-60}
export TOP_SRCDIR=$TOP TOP_BUILDDIR=$BUILD HPCINIT=${HPCINIT:-$BUILD/hpcinit}
export HPCINIT_LIBEXEC_DIR=${HPCINIT_LIBEXEC_DIR:-$BUILD}
SIM_PREFIX=bel SIM_NET=198.19.41
. "$TOP/tests/cluster/lib.sh"
. "$TOP/tests/cluster/etcd-lib.sh"

# latencies PRESENT|ABSENT NAME T0_NS LIMIT_S NODE...: one line per node, ms until NAME is (not) listed
latencies() {
	local want=$1 name=$2 t0=$3 limit=$4 n now f hit files=()
	shift 4
	declare -A done_at=() file_of=()
	for n in "$@"; do
		f=$SIM_STATE/nodes/$n/ovl/etc/upper/hpcinit/hostfile.plain
		files+=("$f")
		file_of[$f]=$n
	done
	while [ ${#done_at[@]} -lt $# ]; do
		# one grep a sweep: the files that list NAME
		declare -A has=()
		while read -r f; do [ -z "$f" ] || has[$f]=1; done < <(grep -lx -- "$name" "${files[@]}" 2>/dev/null || true)
		now=$(date +%s%N)
		for f in "${files[@]}"; do
			n=${file_of[$f]}
			[ -z "${done_at[$n]:-}" ] || continue
			hit=${has[$f]:-0}
			if { [ "$want" = PRESENT ] && [ "$hit" = 1 ]; } || { [ "$want" = ABSENT ] && [ "$hit" = 0 ]; }; then
				done_at[$n]=$(((now - t0) / 1000000))
			fi
		done
		unset has
		[ $((now - t0)) -lt $((limit * 1000000000)) ] || break
		sleep 0.01
	done
	for n in "$@"; do echo "${done_at[$n]:-999999}"; done
}
stats() { sort -n | awk '{v[NR]=$1} END {printf "%d %d", v[int((NR+1)/2)], v[NR]}'; }

declare -A RES
run_method() {
	local method=$1 nodes=() n new t0 i
	for i in $(seq 1 "$N"); do nodes+=("$(node "$i")"); done
	if [ "$method" = etcd ]; then
		sim up "$N" >/dev/null
		etcd_up
		etcd_spec 30s "$N" > "$T/node.yaml"
	else
		rm -rf "$SHARED/.hpcinit"
		sim up "$N" --shared "$SHARED" >/dev/null
		spec 5m "$N" > "$T/node.yaml"
	fi
	for n in "${nodes[@]}"; do install_spec "$n" "$T/node.yaml"; done
	apply_all "$T/apply" "${nodes[@]}" >/dev/null
	for n in "${nodes[@]}"; do
		if [ "$method" = etcd ]; then
			on "$n" "$HPCINIT" watch >/dev/null 2>&1 &
			disown
		else
			# (the wrapper's stderr too: its "Terminated" when sim down ends the loop is noise)
			on "$n" bash -c "sleep \$((RANDOM % $TIMER)); while :; do $HPCINIT ${REFRESH[*]} >/dev/null 2>&1; sleep $TIMER; done" 2>/dev/null &
			disown
		fi
	done
	sleep 2
	new=$(sim add 1)
	install_spec "$new" "$T/node.yaml"
	hpc "$new" apply >/dev/null 2>&1 || true
	t0=$(date +%s%N)
	RES[$method.join]=$(latencies PRESENT "$new" "$t0" $((TIMER + 30)) "${nodes[@]}" | stats)
	hpc "$new" leave >/dev/null 2>&1 || true
	t0=$(date +%s%N)
	RES[$method.leave]=$(latencies ABSENT "$new" "$t0" $((TIMER + 30)) "${nodes[@]}" | stats)
	[ "$method" != etcd ] || etcd_stop
	sim down
}

echo "join and leave latency, $N simulated nodes, $(nproc) cores; shared timer period ${TIMER}s"
run_method etcd
run_method shared
printf '%-8s %-14s %12s %12s\n' event method "median (ms)" "max (ms)"
for ev in join leave; do
	for m in etcd shared; do
		read -r med max <<<"${RES[$m.$ev]}"
		printf '%-8s %-14s %12s %12s\n' "$ev" "$m$([ $m = etcd ] && echo +watch || echo +timer)" "$med" "$max"
	done
	read -r em _ <<<"${RES[etcd.$ev]}"
	read -r sm _ <<<"${RES[shared.$ev]}"
	echo "$ev: shared+timer median / etcd+watch median = $(awk -v a="$sm" -v b="$em" 'BEGIN{printf "%.1f", b ? a / b : 0}')x; goal: etcd+watch median under 1000 ms ($([ "$em" -lt 1000 ] && echo met || echo NOT met))"
done
