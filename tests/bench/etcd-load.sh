#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Steady-state load of N nodes (default 1,000) on the rendezvous, per minute:
#   etcd+watch    N real "hpcinit watch" processes, each on its own fake root
#                 (--root, --hostname, HPCINIT_ADDRESS), against one etcd
#                 member on 127.0.0.1 (the load on the store does not depend
#                 on how many members share it).  After the start-up settles,
#                 etcd's own counters are read before and after MINUTES
#                 (default 2): requests started (grpc_server_started_total;
#                 the JSON gateway forwards each HTTP call as one gRPC call)
#                 and bytes (etcd_network_client_grpc_{received,sent}_bytes_total).
#   shared+timer  every node runs "hpcinit refresh" once a minute against the
#                 directory: one refresh against N records (tests/bench/gen-records,
#                 the real format) is traced (strace -c: file system calls) and
#                 multiplied by N; bytes = the records' size times N.
# Printed with the ratio.  Goal (issue 16): the etcd path does O(N) work a
# minute in total, at least 100x less than the directory at N=1,000.
# Then a join and a leave while all N watch: time until all N hostfiles show it, the
# watchers' CPU per node, etcd requests and bytes; the mean RSS of a watch (agent+helper).
# Memory: N watch processes and N helper processes run at once (about
# 10 MB per node together); use a smaller N on a small machine.
# Usage: tests/bench/etcd-load.sh [N] [MINUTES]   (run by hand; not by make check)
#        WAVE=50: how many watches start at a time
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${TOP_BUILDDIR:-$TOP/build}
HPCINIT=${HPCINIT:-$BUILD/hpcinit}
export HPCINIT_LIBEXEC_DIR=${HPCINIT_LIBEXEC_DIR:-$BUILD}
N=${1:-1000}
MINUTES=${2:-2}
WAVE=${WAVE:-50}
LEASE=90
PORT=23379
GEN=$BUILD/tests/bench/gen-records
[ -x "$GEN" ] || make -s -C "$BUILD" tests/bench/gen-records
command -v etcd >/dev/null || { echo "etcd-load.sh: needs etcd (Debian package etcd-server)" >&2; exit 2; }
command -v strace >/dev/null || { echo "etcd-load.sh: needs strace" >&2; exit 2; }
T=$(mktemp -d /tmp/hpcinit-bench-etcd.XXXXXX)
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

# 1,000 watch streams are 1,000 client connections to the member: more than a soft limit of 1,024
# descriptors once its own are counted.
ulimit -n "$(ulimit -Hn)"
etcd --name b1 --data-dir "$T/etcd" --listen-client-urls "http://127.0.0.1:$PORT" \
	--advertise-client-urls "http://127.0.0.1:$PORT" --listen-peer-urls "http://127.0.0.1:$((PORT + 1))" \
	--initial-advertise-peer-urls "http://127.0.0.1:$((PORT + 1))" \
	--initial-cluster "b1=http://127.0.0.1:$((PORT + 1))" >"$T/etcd.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done
metric() { curl -s "http://127.0.0.1:$PORT/metrics" | awk -v m="$1" '$1 ~ "^"m {s += $2} END {printf "%.0f", s}'; }

head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$T/cluster.key"
chmod 0600 "$T/cluster.key"
mkroot() {
	local R=$1
	mkdir -p "$R/etc/hpcinit" "$R/etc/ssh" "$R/etc/openmpi" "$R/run/hpcinit"
	printf 'root:x:0:0:root:/root:/bin/bash\n' > "$R/etc/passwd"
	echo "# This is the default hostfile for Open MPI." > "$R/etc/openmpi/openmpi-default-hostfile"
	install -m 0600 "$T/cluster.key" "$R/etc/hpcinit/cluster.key"
	cat > "$R/etc/hpcinit/node.yaml" <<-EOF
	version: 1
	cluster: {name: bench, network: 10.0.0.0/8, secret_file: /etc/hpcinit/cluster.key}
	discovery: {method: etcd, endpoints: ["http://127.0.0.1:$PORT"], expect: 1, wait: 0s, lease: ${LEASE}s}
	hostfile: {}
	EOF
}
addr() { local n=$(($1 + 256)); echo "10.$((n >> 16 & 255)).$((n >> 8 & 255)).$((n & 255))"; }

echo "steady-state load of $N nodes for $MINUTES min, $(nproc) cores"
echo "setup: publishing $N nodes (one apply each, one after another)..."
t0=$(date +%s)
for i in $(seq 1 "$N"); do
	mkroot "$T/n$i"
	HPCINIT_ADDRESS=$(addr "$i") "$HPCINIT" apply --only discovery --root "$T/n$i" \
		-c "$T/n$i/etc/hpcinit/node.yaml" --hostname "node$i" >"$T/apply.out" 2>&1 ||
		{ echo "apply on node$i failed:" >&2; sed 's/^/  | /' "$T/apply.out" >&2; exit 1; }
done
echo "setup: $N nodes published in $(($(date +%s) - t0)) s; starting $N watches, $WAVE at a time..."
# The start-up is not what this measures (every node reads the whole membership once when its
# watch starts: O(N) each, O(N^2) in all, whatever the store): the watches start in waves of
# WAVE, each wave once the last has made its first refresh, so 2 cores are not asked to start
# 2,000 processes at once.  Then the steady state: every watch running, no refresh for 20 s.
t0=$(date +%s)
rs0=$(metric grpc_server_started_total) bs0=$(($(metric etcd_network_client_grpc_received_bytes_total) + $(metric etcd_network_client_grpc_sent_bytes_total)))
i=0
while [ "$i" -lt "$N" ]; do
	w0=$i
	while [ "$i" -lt "$N" ] && [ "$i" -lt $((w0 + WAVE)) ]; do
		i=$((i + 1))
		HPCINIT_ADDRESS=$(addr "$i") "$HPCINIT" watch --root "$T/n$i" -c "$T/n$i/etc/hpcinit/node.yaml" \
			--hostname "node$i" >"$T/n$i/watch.log" 2>&1 &
		PIDS+=($!)
	done
	for _ in $(seq 1 600); do
		grep -q 'refresh exit' "$T/n$i/watch.log" 2>/dev/null && break
		sleep 0.1
	done
done
echo "setup: $N watches started in $(($(date +%s) - t0)) s; waiting for the start-up to settle..."
last=-1 quiet=0
for _ in $(seq 1 900); do
	started=$(cat "$T"/n*/watch.log 2>/dev/null | grep -c 'refresh exit' || true)
	if [ "$started" = "$last" ] && [ "$started" -ge "$N" ]; then
		quiet=$((quiet + 1))
		[ "$quiet" -lt 20 ] || break
	else
		quiet=0
	fi
	last=$started
	sleep 1
done
rs1=$(metric grpc_server_started_total) bs1=$(($(metric etcd_network_client_grpc_received_bytes_total) + $(metric etcd_network_client_grpc_sent_bytes_total)))
echo "start-up of the $N watches: $((rs1 - rs0)) requests, $((bs1 - bs0)) bytes (each reads the whole membership once)"
echo "setup: settled after $(($(date +%s) - t0)) s ($started refreshes in all; load average $(cut -d' ' -f1-3 /proc/loadavg))"
grep -q "$N nodes known through etcd" "$T/n$N/watch.log" || { echo "node$N does not see $N nodes:" >&2; tail -3 "$T/n$N/watch.log" >&2; }
rss=$(ps -o rss= -p "${PIDS[1]}" | tr -d ' ')
helper_rss=$(ps -o rss= --ppid "${PIDS[1]}" | head -1 | tr -d ' ')
r0=$(metric grpc_server_started_total) in0=$(metric etcd_network_client_grpc_received_bytes_total)
out0=$(metric etcd_network_client_grpc_sent_bytes_total) rev0=$(curl -s -X POST -d '{"key":"AA==","count_only":true}' "http://127.0.0.1:$PORT/v3/kv/range" | sed 's/.*"revision":"\([0-9]*\)".*/\1/')
sleep $((MINUTES * 60))
r1=$(metric grpc_server_started_total) in1=$(metric etcd_network_client_grpc_received_bytes_total)
out1=$(metric etcd_network_client_grpc_sent_bytes_total) rev1=$(curl -s -X POST -d '{"key":"AA==","count_only":true}' "http://127.0.0.1:$PORT/v3/kv/range" | sed 's/.*"revision":"\([0-9]*\)".*/\1/')
alive=0
for p in "${PIDS[@]:1}"; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
e_req=$(((r1 - r0) / MINUTES)) e_bytes=$((((in1 - in0) + (out1 - out0)) / MINUTES))

# A join and a leave while all N watch (issue 26): node N+1 publishes its record (apply,
# discovery only), later leaves ("hpcinit leave"); printed: the time from its apply (leave)
# returning until every watcher's hostfile lists it (no longer lists it), the watchers' CPU
# for each (agents, their helpers and the refreshes they waited for, from /proc), and etcd's
# requests and bytes.
watchers_cpu() { # user+system CPU in ms of the watch agents, their children waited for, and their helpers
	local p t=0 tck hz
	tck=$(getconf CLK_TCK)
	for p in "${PIDS[@]:1}"; do
		[ -r "/proc/$p/stat" ] || continue
		t=$((t + $(awk '{print $14 + $15 + $16 + $17}' "/proc/$p/stat")))
		for hz in $(ps -o pid= --ppid "$p"); do
			[ -r "/proc/$hz/stat" ] && t=$((t + $(awk '{print $14 + $15}' "/proc/$hz/stat")))
		done
	done
	echo $((t * 1000 / tck))
}
until_all() { # until_all PRESENT|ABSENT NAME: ms until every watcher's hostfile lists (does not list) NAME
	local want=$1 name=$2 t0 got i files=()
	t0=$(date +%s%N)
	for i in $(seq 1 "$N"); do files+=("$T/n$i/etc/hpcinit/hostfile.plain"); done
	for _ in $(seq 1 6000); do
		got=$(grep -lx -- "$name" "${files[@]}" 2>/dev/null | wc -l)
		if { [ "$want" = PRESENT ] && [ "$got" = "$N" ]; } || { [ "$want" = ABSENT ] && [ "$got" = 0 ]; }; then
			echo $((($(date +%s%N) - t0) / 1000000))
			return 0
		fi
		sleep 0.05
	done
	echo "timeout ($got of $N)"
}
J=$((N + 1))
mkroot "$T/n$J"
jl_req0=$(metric grpc_server_started_total) jl_by0=$(($(metric etcd_network_client_grpc_received_bytes_total) + $(metric etcd_network_client_grpc_sent_bytes_total)))
jl_cpu0=$(watchers_cpu)
HPCINIT_ADDRESS=$(addr "$J") "$HPCINIT" apply --only discovery --root "$T/n$J" \
	-c "$T/n$J/etc/hpcinit/node.yaml" --hostname "node$J" >"$T/apply.out" 2>&1 ||
	{ echo "apply on node$J failed:" >&2; sed 's/^/  | /' "$T/apply.out" >&2; exit 1; }
join_ms=$(until_all PRESENT "node$J")
sleep 2
jl_cpu1=$(watchers_cpu)
jl_req1=$(metric grpc_server_started_total) jl_by1=$(($(metric etcd_network_client_grpc_received_bytes_total) + $(metric etcd_network_client_grpc_sent_bytes_total)))
HPCINIT_ADDRESS=$(addr "$J") "$HPCINIT" leave --root "$T/n$J" -c "$T/n$J/etc/hpcinit/node.yaml" \
	--hostname "node$J" >"$T/leave.out" 2>&1 ||
	{ echo "leave on node$J failed:" >&2; sed 's/^/  | /' "$T/leave.out" >&2; exit 1; }
leave_ms=$(until_all ABSENT "node$J")
sleep 2
jl_cpu2=$(watchers_cpu)
jl_req2=$(metric grpc_server_started_total) jl_by2=$(($(metric etcd_network_client_grpc_received_bytes_total) + $(metric etcd_network_client_grpc_sent_bytes_total)))
wrss=0 wn=0
for p in "${PIDS[@]:1}"; do
	r=$(ps -o rss= -p "$p" | tr -d ' ')
	[ -n "$r" ] || continue
	h=$(ps -o rss= --ppid "$p" | awk '{s += $1} END {print s + 0}')
	wrss=$((wrss + r + h)) wn=$((wn + 1))
done

# The directory: one traced refresh against N records, times N nodes a minute.
R=$T/shared
mkdir -p "$R/etc/hpcinit" "$R/etc/ssh" "$R/etc/openmpi" "$R/srv/share/.hpcinit/bench/nodes"
printf 'root:x:0:0:root:/root:/bin/bash\n' > "$R/etc/passwd"
echo "# This is the default hostfile for Open MPI." > "$R/etc/openmpi/openmpi-default-hostfile"
install -m 0600 "$T/cluster.key" "$R/etc/hpcinit/cluster.key"
cat > "$R/etc/hpcinit/node.yaml" <<-EOF
version: 1
cluster: {name: bench, network: 10.0.0.0/8, secret_file: /etc/hpcinit/cluster.key}
discovery: {method: shared, dir: /srv/share/.hpcinit, expect: 1, lease: 1h}
hostfile: {}
EOF
"$GEN" -s "$R/etc/hpcinit/cluster.key" "$R/srv/share/.hpcinit/bench/nodes" bench "$((N - 1))"
args=(apply --only discovery,hostfile --root "$R" -c "$R/etc/hpcinit/node.yaml" --hostname bench-self)
HPCINIT_ADDRESS=10.0.0.1 "$HPCINIT" "${args[@]}" >/dev/null 2>&1
# The share's part of a refresh: file system calls (strace -c: open, stat, read, getdents,
# close, write, rename ...) with N-1 records, minus the same refresh with none (what the
# hostfile and the spec cost on the node's own disk).
ops() { HPCINIT_ADDRESS=10.0.0.1 strace -f -c -e trace=%file,%desc "$HPCINIT" "${args[@]}" 2>&1 >/dev/null |
	awk '$NF == "total" {print $4 + 0}'; }
ops_n=$(ops)
mkdir -p "$T/keep" && mv "$R/srv/share/.hpcinit/bench/nodes/"*.rec "$T/keep/"
HPCINIT_ADDRESS=10.0.0.1 "$HPCINIT" "${args[@]}" >/dev/null 2>&1 || true
ops_0=$(ops)
mv "$T/keep/"*.rec "$R/srv/share/.hpcinit/bench/nodes/"
rec_opens=$((N - 1))
s_ops=$((ops_n - ops_0))
s_bytes=$(du -sb "$R/srv/share/.hpcinit/bench/nodes" | cut -f1)
s_ops_min=$((s_ops * N)) s_bytes_min=$((s_bytes * N))

printf '%-14s %18s %18s\n' "per minute" "requests / ops" "bytes"
printf '%-14s %18s %18s\n' "etcd+watch" "$e_req" "$e_bytes"
printf '%-14s %18s %18s\n' "shared+timer" "$s_ops_min" "$s_bytes_min"
echo "etcd: $(((r1 - r0))) requests in $MINUTES min from $alive of $N watches still running; store revision $rev0 -> $rev1 (no change: no put)"
echo "etcd: per node per minute $(awk -v a="$e_req" -v n="$N" 'BEGIN{printf "%.2f", a / n}') requests (lease ${LEASE}s: a keepalive every $((LEASE / 3)) s); watch RSS: agent ${rss} KiB, helper ${helper_rss:-?} KiB"
echo "shared: one refresh = $s_ops file system calls for the share ($ops_n with $rec_opens records, $ops_0 with none), $s_bytes bytes of records"
echo "join while $N watch: every hostfile lists node$J $join_ms ms after its apply returned (goal at 1,000: under 2000 ms); watchers' CPU $((jl_cpu1 - jl_cpu0)) ms in all, $(awk -v c="$((jl_cpu1 - jl_cpu0))" -v n="$N" 'BEGIN{printf "%.2f", c / n}') ms a node (2 s of idle keepalives included); etcd $((jl_req1 - jl_req0)) requests, $((jl_by1 - jl_by0)) bytes"
echo "leave while $N watch: no hostfile lists node$J $leave_ms ms after its leave returned (goal at 1,000: under 2000 ms); watchers' CPU $((jl_cpu2 - jl_cpu1)) ms in all, $(awk -v c="$((jl_cpu2 - jl_cpu1))" -v n="$N" 'BEGIN{printf "%.2f", c / n}') ms a node; etcd $((jl_req2 - jl_req1)) requests, $((jl_by2 - jl_by1)) bytes"
echo "watch memory: $(awk -v s="$wrss" -v n="$wn" 'BEGIN{printf "%.0f", s / n}') KiB RSS a node (agent and helper, mean of $wn)"
echo "shared / etcd: $(awk -v a="$s_ops_min" -v b="$e_req" 'BEGIN{printf "%.0f", a / b}')x operations, $(awk -v a="$s_bytes_min" -v b="$e_bytes" 'BEGIN{printf "%.0f", a / b}')x bytes; goal: at least 100x"
