#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The per-record cost of a refresh on the etcd rendezvous, and what it makes of 10,000 nodes
# (issue 37, "10,000 on paper").  One etcd member on 127.0.0.1; for each size (default 1,000 and
# 10,000 records: tests/bench/gen-records, the real format, HMAC-signed, put by one curl process),
# one real "hpcinit watch" on a fake root (--root; discovery and hostfile) keeps the membership;
# then RUNS times a node joins (one more record put) and the watch refreshes on its stream's view
# (no list, no helper started): the watch's CPU for that refresh (the agent, the module children
# it waited for and its stream helper, from /proc; a figure only when every read verifies) and
# the refresh's own time from its log line.  Printed: the mean CPU (/proc counts in ticks of 10
# ms: a mean of RUNS is finer than any one) and the median time per size, the per-record term
# (the slope between the two sizes, microseconds a record) and the fixed part, each size's
# hostfile checked to list every record; then the paper figures at 10,000 derived from them.
# Usage: tests/bench/etcd-refresh.sh [RUNS] [SIZES...]   (run by hand; not by make check)
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${TOP_BUILDDIR:-$TOP/build}
HPCINIT=${HPCINIT:-$BUILD/hpcinit}
export HPCINIT_LIBEXEC_DIR=${HPCINIT_LIBEXEC_DIR:-$BUILD}
RUNS=${1:-10}
shift || true
SIZES=("$@")
[ "${#SIZES[@]}" -gt 0 ] || SIZES=(1000 10000)
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [RUNS] [SIZES...]" >&2; exit 2; }
for n in "${SIZES[@]}"; do [[ $n =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [RUNS] [SIZES...]" >&2; exit 2; }; done
GEN=$BUILD/tests/bench/gen-records
[ -x "$GEN" ] || make -s -C "$BUILD" tests/bench/gen-records
command -v etcd >/dev/null || { echo "etcd-refresh.sh: needs etcd (Debian package etcd-server)" >&2; exit 2; }
PORT=23579
URL=http://127.0.0.1:$PORT
T=$(mktemp -d /tmp/hpcinit-bench-refresh-etcd.XXXXXX)
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
etcd --name r1 --data-dir "$T/etcd" --listen-client-urls "$URL" --advertise-client-urls "$URL" \
	--listen-peer-urls "http://127.0.0.1:$((PORT + 1))" --initial-advertise-peer-urls "http://127.0.0.1:$((PORT + 1))" \
	--initial-cluster "r1=http://127.0.0.1:$((PORT + 1))" --quota-backend-bytes $((4 << 30)) >"$T/etcd.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do curl -sf "$URL/health" >/dev/null && break; sleep 0.1; done
curl -sf "$URL/health" >/dev/null || { echo "etcd did not start: $(tail -3 "$T/etcd.log")" >&2; exit 1; }
sent() { curl -s "$URL/metrics" | awk '$1 ~ /^etcd_network_client_grpc_sent_bytes_total/ {s += $2} END {printf "%.0f", s}'; }
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/cluster.key"
chmod 0600 "$T/cluster.key"

# cpu_of PID: user+system CPU ticks of PID (its waited-for children included) and of each child
# it has now, read in one go; fails when a process listed could not be read (taken again, 5 tries)
cpu_of() {
	local pid=$1 kids files p
	for _ in 1 2 3 4 5; do
		kids=$(ps -o pid= --ppid "$pid" | tr -d ' ')
		files=("/proc/$pid/stat")
		# shellcheck disable=SC2086
		for p in $kids; do files+=("/proc/$p/stat"); done
		if cat "${files[@]}" 2>/dev/null | awk -v n="${#files[@]}" '{ sub(/^[^(]*\(.*\) /, ""); s += $12 + $13 + $14 + $15; k++ }
			END { if (k != n) exit 1; printf "%d\n", s }'; then
			return 0
		fi
		sleep 0.05
	done
	return 1
}
refreshes() { grep -c 'refresh exit' "$1" 2>/dev/null || true; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR) print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

declare -A CPU WALL
TCK=$(getconf CLK_TCK)
echo "refresh on the etcd rendezvous, $(nproc) cores, $RUNS joins a size; load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%8s  %14s  %14s  %16s  %s\n' records "refresh CPU" "refresh time" "etcd bytes/join" "hostfile"
for n in "${SIZES[@]}"; do
	curl -sf -X POST -d '{"key":"L2hwY2luaXQv","range_end":"L2hwY2luaXQw"}' "$URL/v3/kv/deleterange" >/dev/null
	"$GEN" -s "$T/cluster.key" -e /hpcinit/bench/nodes/ -u "$URL/v3/kv/put" "$T" bench "$n" >"$T/put.cfg"
	curl -s -K "$T/put.cfg"
	R=$T/root-$n
	mkdir -p "$R/etc/hpcinit" "$R/etc/ssh" "$R/etc/openmpi" "$R/run/hpcinit"
	printf 'root:x:0:0:root:/root:/bin/bash\n' >"$R/etc/passwd"
	echo "# This is the default hostfile for Open MPI." >"$R/etc/openmpi/openmpi-default-hostfile"
	install -m 0600 "$T/cluster.key" "$R/etc/hpcinit/cluster.key"
	cat >"$R/etc/hpcinit/node.yaml" <<-EOF
	version: 1
	cluster: {name: bench, network: 10.0.0.0/8, secret_file: /etc/hpcinit/cluster.key}
	discovery: {method: etcd, endpoints: ["$URL"], expect: 1, lease: 300s}
	hostfile: {}
	EOF
	HPCINIT_ADDRESS=10.0.0.1 "$HPCINIT" watch --root "$R" -c "$R/etc/hpcinit/node.yaml" --hostname self \
		>"$R/watch.log" 2>&1 &
	W=$!
	PIDS+=("$W")
	for _ in $(seq 1 600); do [ "$(refreshes "$R/watch.log")" -ge 1 ] && break; sleep 0.1; done
	sleep 1
	cpus=() walls=() bytes=()
	for j in $(seq 1 "$RUNS"); do
		have=$(refreshes "$R/watch.log")
		c0=$(cpu_of "$W") || c0=x
		b0=$(sent)
		"$GEN" -s "$T/cluster.key" -p "join${j}x" -n "10.$((100 + j))" -e /hpcinit/bench/nodes/ -u "$URL/v3/kv/put" "$T" bench 1 >"$T/join.cfg"
		curl -s -K "$T/join.cfg"
		for _ in $(seq 1 600); do [ "$(refreshes "$R/watch.log")" -gt "$have" ] && break; sleep 0.05; done
		sleep 0.3
		c1=$(cpu_of "$W") || c1=y
		b1=$(sent)
		if [[ $c0 =~ ^[0-9]+$ && $c1 =~ ^[0-9]+$ ]] && [ "$c1" -ge "$c0" ] && [ "$(refreshes "$R/watch.log")" = $((have + 1)) ]; then
			cpus+=("$(((c1 - c0) * 1000000 / TCK))")  # microseconds
		fi
		walls+=("$(grep 'refresh exit' "$R/watch.log" | tail -1 | sed -n 's/.*refresh exit [0-9]* in \([0-9]*\) ms.*/\1/p')")
		bytes+=("$((b1 - b0))")
	done
	kill "$W" 2>/dev/null || true
	wait "$W" 2>/dev/null || true
	listed=$(grep -vc '^#' "$R/etc/hpcinit/hostfile.plain" 2>/dev/null || true)
	want=$((n + 1 + RUNS))
	[ "$listed" = "$want" ] && hf="lists all $want" || hf="lists $listed of $want: WRONG"
	if [ "${#cpus[@]}" -lt $(((RUNS + 1) / 2)) ]; then
		CPU[$n]="not measured (${#cpus[@]} of $RUNS samples verified)"
	else
		# the mean, not the median: /proc counts CPU in ticks (10 ms), a mean of RUNS joins is finer
		CPU[$n]=$(printf '%s\n' "${cpus[@]}" | awk '{ s += $1 } END { printf "%.0f", s / NR }')
	fi
	WALL[$n]=$(printf '%s\n' "${walls[@]}" | median)
	printf '%8s  %14s  %14s  %16s  %s\n' "$n" "$(awk -v u="${CPU[$n]}" 'BEGIN { if (u ~ /^[0-9.]+$/) printf "%.1f ms", u / 1000; else print "-" }')" \
		"${WALL[$n]} ms" "$(printf '%s\n' "${bytes[@]}" | median)" "$hf"
	[[ ${CPU[$n]} =~ ^[0-9.]+$ ]] || echo "  $n records: ${CPU[$n]}"
done
a=${SIZES[0]} b=${SIZES[${#SIZES[@]} - 1]}
if [ "$a" != "$b" ] && [[ ${CPU[$a]} =~ ^[0-9.]+$ && ${CPU[$b]} =~ ^[0-9.]+$ ]]; then
	awk -v a="$a" -v b="$b" -v ca="${CPU[$a]}" -v cb="${CPU[$b]}" 'BEGIN {
		slope = (cb - ca) / (b - a); fixed = ca - slope * a
		if (slope < 0) { print "per record: not measured (the larger size cost less: the machine is too loaded to tell)"; exit }
		printf "per record: %.2f us a record (the slope from %d to %d records), fixed part %.1f ms a refresh\n", slope, a, b, fixed / 1000
		printf "on paper at 10,000 nodes: a join or a leave costs each watcher %.0f ms of its own CPU, the 10,000 together %.0f s of CPU (each on its own node)\n", (fixed + slope * 10000) / 1000, (fixed + slope * 10000) * 10000 / 1e6
	}'
else
	echo "per record: not measured (needs two sizes that both verified)"
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
