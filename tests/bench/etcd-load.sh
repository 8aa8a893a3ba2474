#!/bin/bash
# SPDX-License-Identifier: MIT
#
# N nodes (default 1,000) on the etcd rendezvous, each a real hpcinit process on its own fake
# root (--root, --hostname, HPCINIT_ADDRESS; no namespaces: 1,000 of those are too heavy for
# this machine), against one etcd member on 127.0.0.1 (the load on the store does not depend
# on how many members share it).  Phases, each printed:
#   cold start    all N "hpcinit apply --only discovery,hostfile" (expect: N) started in
#                 waves of WAVE (the next once etcd holds the last's records): the time from the start and from the last record published (a watch
#                 of the bench's own, etcdctl, stamps each key's first put) until every apply
#                 has ended with N nodes in its hostfile; the nodes' CPU in all and per node
#                 (their helpers included), etcd's CPU, requests and bytes.
#   steady state  N "hpcinit watch", started in waves; etcd's own counters are read before
#                 and after MINUTES (default 2; 0 skips it): requests started
#                 (grpc_server_started_total; the JSON gateway forwards each HTTP call as one
#                 gRPC call) and bytes (etcd_network_client_grpc_{received,sent}_bytes_total).
#   shared+timer  every node runs "hpcinit refresh" once a minute against the
#                 directory: one refresh against N records (tests/bench/gen-records,
#                 the real format) is traced (strace -c: file system calls) and
#                 multiplied by N; bytes = the records' size times N.
# Printed with the ratio.  Goal (issue 16): the etcd path does O(N) work a
# minute in total, at least 100x less than the directory at N=1,000.
#   join, leave   node N+1 applies while all N watch, then leaves ("hpcinit leave"): the time
#                 until all N hostfiles show it (no longer show it), the watchers' CPU per
#                 node, etcd requests and bytes.
#   member loss   one watching node is killed (SIGKILL, its helper too: no leave); the time
#                 until etcd drops its key (its lease, LEASE s, default 90, running out) and
#                 from then until no hostfile lists it; the watchers' CPU, etcd's requests.
#   shared cold   the cold start again on the shared directory (SHARED_COLD=0 skips it).
#   memory        a watch's RSS, PSS (shared pages divided among the processes sharing them:
#                 what N watches cost together) and private memory, agent and helper.
# Goals (issue 26; printed, not asserted): per-node CPU of the cold start under 10 ms at
# 1,000; last put to all done under 1 s; a join or leave reaching all watchers under 2 s.
# Memory: N apply processes and their helpers at the cold start, then N watches and N
# helpers (about 3 MB of PSS per node together); use a smaller N on a small machine.
# Usage: tests/bench/etcd-load.sh [N] [MINUTES]   (run by hand; not by make check)
#        BENCH_DISK=node|host: the nodes' disks (tests/bench/node-disk.sh; default node)
#        WAVE=50: how many watches start at a time; LEASE=90: the nodes' lease, seconds (at
#        1,000 use LEASE=300: nothing renews a lease between a node's apply and its watch, and
#        starting 1,000 watches can take longer than 90 s; then the keys expire and every
#        watcher refreshes for each)
#        COLD_WAIT=180: how long a cold-start apply waits for the N nodes, seconds;
#        KEEP=1: keep the nodes' roots and logs (the watches' refresh lines) for a look afterwards
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${TOP_BUILDDIR:-$TOP/build}
HPCINIT=${HPCINIT:-$BUILD/hpcinit}
export HPCINIT_LIBEXEC_DIR=${HPCINIT_LIBEXEC_DIR:-$BUILD}
N=${1:-1000}
MINUTES=${2:-2}
WAVE=${WAVE:-50}
LEASE=${LEASE:-90}
[[ $LEASE =~ ^[1-9][0-9]*$ ]] || { echo "LEASE: seconds" >&2; exit 2; }
[[ $N =~ ^[1-9][0-9]*$ && $MINUTES =~ ^[0-9]+$ ]] || { echo "usage: $0 [N] [MINUTES]" >&2; exit 2; }
PORT=23379
GEN=$BUILD/tests/bench/gen-records
[ -x "$GEN" ] || make -s -C "$BUILD" tests/bench/gen-records
. "$TOP/tests/bench/etcd-check.sh"
. "$TOP/tests/bench/etcd-bench-lib.sh"
command -v etcd >/dev/null || { echo "etcd-load.sh: needs etcd (Debian package etcd-server)" >&2; exit 2; }
command -v strace >/dev/null || { echo "etcd-load.sh: needs strace" >&2; exit 2; }
command -v etcdctl >/dev/null || { echo "etcd-load.sh: needs etcdctl (Debian package etcd-client)" >&2; exit 2; }
command -v inotifywait >/dev/null || { echo "etcd-load.sh: needs inotifywait (Debian package inotify-tools)" >&2; exit 2; }
. "$TOP/tests/bench/node-disk.sh"
T=$(mktemp -d /tmp/hpcinit-bench-etcd.XXXXXX)
PIDS=() APIDS=()
cleanup() {
	local p
	for p in "${APIDS[@]}" "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	if [ "${KEEP:-0}" = 1 ]; then
		echo "KEEP=1: the nodes' roots and logs are kept in $T (umount it when done: BENCH_DISK)" >&2
	else
		rm -rf "${T:?}"/*
		node_disk_release
		rm -rf "$T"
	fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM
# The nodes' roots (and the bench's files) on a node-like file system (node-disk.sh says why).
node_disk "$T"

# 1,000 watch streams are 1,000 client connections to the member: more than a soft limit of 1,024
# descriptors once its own are counted.
ulimit -n "$(ulimit -Hn)"
etcd --name b1 --data-dir "$T/etcd" --listen-client-urls "http://127.0.0.1:$PORT" \
	--advertise-client-urls "http://127.0.0.1:$PORT" --listen-peer-urls "http://127.0.0.1:$((PORT + 1))" \
	--initial-advertise-peer-urls "http://127.0.0.1:$((PORT + 1))" \
	--initial-cluster "b1=http://127.0.0.1:$((PORT + 1))" >"$T/etcd.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 100); do curl -sf "http://127.0.0.1:$PORT/health" >/dev/null && break; sleep 0.1; done

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
	discovery: {method: etcd, endpoints: ["http://127.0.0.1:$PORT"], expect: $N, wait: ${COLD_WAIT:-180}s, lease: ${LEASE}s}
	hostfile: {}
	EOF
}
addr() { local n=$(($1 + 256)); echo "10.$((n >> 16 & 255)).$((n >> 8 & 255)).$((n & 255))"; }

etcd_pid=${PIDS[0]}
# user+system CPU of etcd so far, ms
etcd_cpu() { awk -v t="$(getconf CLK_TCK)" '{printf "%d", ($14 + $15) * 1000 / t}' "/proc/$etcd_pid/stat" 2>/dev/null || true; }
nkeys() { curl -s -X POST -d '{"key":"L2hwY2luaXQvYmVuY2gvbm9kZXMv","range_end":"L2hwY2luaXQvYmVuY2gvbm9kZXMw","count_only":true}' \
	"http://127.0.0.1:$PORT/v3/kv/range" | sed -n 's/.*"count":"\([0-9]*\)".*/\1/p' | grep . || echo 0; }
etcd_rb() { echo $(($(metric etcd_network_client_grpc_received_bytes_total) + $(metric etcd_network_client_grpc_sent_bytes_total))); }

echo "$N nodes on the etcd rendezvous (one member), fake roots, $(nproc) cores, lease ${LEASE}s;" \
	"load average $(cut -d' ' -f1-3 /proc/loadavg) before"
for i in $(seq 1 "$N"); do mkroot "$T/n$i"; done
# Cold start: all N applies (in waves), each waiting for N nodes (expect: N).  When each record
# arrives: a watch of the bench's own, each key's first PUT stamped as it comes.
( echo "$BASHPID" >"$T/stamp.pid"
  exec etcdctl --endpoints "http://127.0.0.1:$PORT" watch --prefix /hpcinit/bench/nodes/ ) |
	{ declare -A seen
	  while read -r l; do
		[ "$l" = PUT ] || continue
		read -r k || break
		[ -n "${seen[$k]:-}" ] || { seen[$k]=1; date +%s%N; }
	  done; } >"$T/puts" &
stamp_pipe=$!
PIDS+=("$stamp_pipe")
sleep 0.5
PIDS+=("$(cat "$T/stamp.pid")")
echo "cold start: $N applies (discovery, hostfile; expect: $N) started, $WAVE at a time..."
rq0=$(metric grpc_server_started_total) by0=$(etcd_rb) ecpu0=$(etcd_cpu)
child_cpu
ccpu0=$CHILD_CPU
APIDS=()
t0=$(date +%s%N)
for i in $(seq 1 "$N"); do
	HPCINIT_ADDRESS=$(addr "$i") timeout 900 "$HPCINIT" apply --only discovery,hostfile --root "$T/n$i" \
		-c "$T/n$i/etc/hpcinit/node.yaml" --hostname "node$i" >"$T/n$i/apply.out" 2>&1 &
	APIDS+=($!)
	# In waves of WAVE: the next wave once etcd holds this one's records (at most 30 s), so
	# that 2 cores are not asked for N lease grants at once (at 300 at once, half the applies
	# met their etcd helper's 5 s timeout on this machine).
	if [ $((i % WAVE)) = 0 ] && [ "$i" -lt "$N" ]; then
		for _ in $(seq 1 300); do [ "$(nkeys)" -ge "$i" ] && break; sleep 0.1; done
	fi
done
failed=0
for i in $(seq 1 "$N"); do wait "${APIDS[i - 1]}" || failed=$((failed + 1)); done
t1=$(date +%s%N)
child_cpu
cold_cpu=$(span "the shell's children's CPU" "$ccpu0" "$CHILD_CPU")
cold_req=$(($(metric grpc_server_started_total) - rq0)) cold_by=$(($(etcd_rb) - by0))
cold_ecpu=$(span "etcd's CPU" "$ecpu0" "$(etcd_cpu)")
sleep 0.3
kill "$(cat "$T/stamp.pid")" 2>/dev/null || true
wait "$stamp_pipe" 2>/dev/null || true
full=0
for i in $(seq 1 "$N"); do
	[ "$(grep -vc '^#' "$T/n$i/etc/hpcinit/hostfile.plain" 2>/dev/null)" = "$N" ] && full=$((full + 1))
done
inv=()
for i in $(seq 1 "$N"); do inv+=("$T/n$i/apply.out" "$T/n$i/etc/hpcinit/hostfile.plain"); done
hostfiles_agree "cold start (etcd)" "${inv[@]}" || true
puts=$(wc -l <"$T/puts")
last=$(sort -n "$T/puts" | tail -1)
echo "cold start: $((N - failed)) of $N applies exited 0, $full of $N hostfiles list $N nodes; $puts records first put, the last $(((last - t0) / 1000000)) ms after the start"
if [ "$failed" -gt 0 ]; then
	for i in $(seq 1 "$N"); do grep -q '^result: ready' "$T/n$i/apply.out" || { echo "node$i:" >&2; tail -5 "$T/n$i/apply.out" | sed 's/^/  | /' >&2; break; }; done
	echo "cold start: FAILED on $failed of $N nodes (first failure above); the watches below publish again and converge"
fi
COLD_ALL=$(((t1 - t0) / 1000000)) COLD_AFTER=$(((t1 - last) / 1000000))
[ "$failed" -gt 0 ] || echo "cold start: all $N done $COLD_ALL ms after the start; last record published -> all $N done: $COLD_AFTER ms (goal at 1,000: under 1000 ms)"
echo "cold start: nodes' CPU (applies and their helpers) $(cpu_line "$cold_cpu" "$N") (goal at 1,000: under 10 ms); etcd's CPU $cold_ecpu$([[ ! $cold_ecpu =~ ^[0-9]+$ ]] || echo ' ms')"
echo "cold start: etcd $cold_req requests ($(awk -v c="$cold_req" -v n="$N" 'BEGIN{printf "%.1f", c / n}') a node), $cold_by bytes ($((cold_by / N)) a node); load average $(cut -d' ' -f1-3 /proc/loadavg)"
# The start-up is not what this measures (every node reads the whole membership once when its
# watch starts: O(N) each, O(N^2) in all, whatever the store): the watches start in waves of
# WAVE, each wave once the last has made its first refresh, so 2 cores are not asked to start
# 2,000 processes at once.  Then the steady state: every watch running, no refresh for 20 s.
t0=$(date +%s)
rs0=$(metric grpc_server_started_total) bs0=$(($(metric etcd_network_client_grpc_received_bytes_total) + $(metric etcd_network_client_grpc_sent_bytes_total)))
i=0 WPIDS=()
while [ "$i" -lt "$N" ]; do
	w0=$i
	while [ "$i" -lt "$N" ] && [ "$i" -lt $((w0 + WAVE)) ]; do
		i=$((i + 1))
		HPCINIT_ADDRESS=$(addr "$i") "$HPCINIT" watch --root "$T/n$i" -c "$T/n$i/etc/hpcinit/node.yaml" \
			--hostname "node$i" >"$T/n$i/watch.log" 2>&1 &
		PIDS+=($!)
		WPIDS+=($!)
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
r0=$(metric grpc_server_started_total) in0=$(metric etcd_network_client_grpc_received_bytes_total)
out0=$(metric etcd_network_client_grpc_sent_bytes_total) rev0=$(curl -s -X POST -d '{"key":"AA==","count_only":true}' "http://127.0.0.1:$PORT/v3/kv/range" | sed 's/.*"revision":"\([0-9]*\)".*/\1/')
sleep $((MINUTES * 60))
r1=$(metric grpc_server_started_total) in1=$(metric etcd_network_client_grpc_received_bytes_total)
out1=$(metric etcd_network_client_grpc_sent_bytes_total) rev1=$(curl -s -X POST -d '{"key":"AA==","count_only":true}' "http://127.0.0.1:$PORT/v3/kv/range" | sed 's/.*"revision":"\([0-9]*\)".*/\1/')
alive=0
for p in "${WPIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
e_req=$(((r1 - r0) / (MINUTES > 0 ? MINUTES : 1))) e_bytes=$((((in1 - in0) + (out1 - out0)) / (MINUTES > 0 ? MINUTES : 1)))

# A join and a leave while all N watch (issue 26): node N+1 publishes its record (apply,
# discovery only), later leaves ("hpcinit leave"); printed: the time from its apply (leave)
# returning until every watcher's hostfile lists it (no longer lists it), the watchers' CPU
# for each (agents, their helpers and the refreshes they waited for, from /proc), and etcd's
# requests and bytes.
J=$((N + 1))
mkroot "$T/n$J"
stamp_key "/hpcinit/bench/nodes/node$J" "$T/jstamps"
jl_req0=$(metric grpc_server_started_total) jl_by0=$(($(metric etcd_network_client_grpc_received_bytes_total) + $(metric etcd_network_client_grpc_sent_bytes_total)))
watchers_snap "$T/cpu.j0" || true
HPCINIT_ADDRESS=$(addr "$J") "$HPCINIT" apply --only discovery --root "$T/n$J" \
	-c "$T/n$J/etc/hpcinit/node.yaml" --hostname "node$J" >"$T/apply.out" 2>&1 ||
	{ echo "apply on node$J failed:" >&2; sed 's/^/  | /' "$T/apply.out" >&2; exit 1; }
ja=$(date +%s%N)
jall=$(until_all PRESENT "node$J")
join_ms=$(since "$ja" "$jall")
join_put_ms=$(since "$(stamp_of PUT "$T/jstamps")" "$jall")
sleep 2
watchers_snap "$T/cpu.j1" || true
jl_req1=$(metric grpc_server_started_total) jl_by1=$(($(metric etcd_network_client_grpc_received_bytes_total) + $(metric etcd_network_client_grpc_sent_bytes_total)))
HPCINIT_ADDRESS=$(addr "$J") "$HPCINIT" leave --root "$T/n$J" -c "$T/n$J/etc/hpcinit/node.yaml" \
	--hostname "node$J" >"$T/leave.out" 2>&1 ||
	{ echo "leave on node$J failed:" >&2; sed 's/^/  | /' "$T/leave.out" >&2; exit 1; }
la=$(date +%s%N)
lall=$(until_all ABSENT "node$J")
leave_ms=$(since "$la" "$lall")
leave_del_ms=$(since "$(stamp_of DELETE "$T/jstamps")" "$lall")
kill "$STAMP_PID" 2>/dev/null || true
sleep 2
watchers_snap "$T/cpu.j2" || true
jl_req2=$(metric grpc_server_started_total) jl_by2=$(($(metric etcd_network_client_grpc_received_bytes_total) + $(metric etcd_network_client_grpc_sent_bytes_total)))

# A member lost while all watch: a node's watch and its helper killed (a crash: no leave, no
# lease revoked); etcd drops its key when the lease runs out, and every watcher then drops it.
K=$(((N + 1) / 2))
kkey=$(printf '/hpcinit/bench/nodes/node%s' "$K" | base64 -w0)
key_there() { curl -s -X POST -d "{\"key\":\"$kkey\",\"count_only\":true}" "http://127.0.0.1:$PORT/v3/kv/range" | grep -q '"count":"1"'; }
key_there || { echo "node$K has no key in etcd before the loss" >&2; exit 1; }
# the watchers measured: all but the one killed
kpid=${WPIDS[K - 1]}
WPIDS=("${WPIDS[@]:0:K-1}" "${WPIDS[@]:K}")
watchers_snap "$T/cpu.l0" || true
lo_req0=$(metric grpc_server_started_total) lo_by0=$(etcd_rb)
khelpers=$(ps -o pid= --ppid "$kpid" | tr -d ' ')
tk=$(date +%s%N)
# shellcheck disable=SC2086
kill -KILL "$kpid" $khelpers 2>/dev/null || true
{ wait "$kpid"; } 2>/dev/null || true
for _ in $(seq 1 $(((LEASE + 30) * 10))); do key_there || break; sleep 0.1; done
te=$(date +%s%N)
if key_there; then
	loss="etcd still holds node$K's key $(((te - tk) / 1000000)) ms after it was killed"
else
	N_ALL=$N
	N=$((N_ALL - 1))
	files_skip=$K
	lost_ms=$(since "$te" "$(until_all ABSENT "node$K")")
	N=$N_ALL
	sleep 2
	watchers_snap "$T/cpu.l1" || true
	loss="etcd dropped node$K's key $(((te - tk) / 1000000)) ms after it was killed (lease ${LEASE}s); no hostfile of the $((N - 1)) others lists it $lost_ms later (goal at 1,000: under 2000 ms); watchers' CPU $(cpu_line "$(watchers_delta "$T/cpu.l0" "$T/cpu.l1")" $((N - 1))) (the wait for the lease and 2 s of idle keepalives included); etcd $(($(metric grpc_server_started_total) - lo_req0)) requests, $(($(etcd_rb) - lo_by0)) bytes (the wait included)"
fi

# Memory of a watch (agent and helper): RSS counts the shared libraries' pages in every
# process; PSS divides them among the processes that share them (N watches together cost
# N times the mean PSS); private pages are the process's own.
mem=$(for p in "${WPIDS[@]}"; do
	# shellcheck disable=SC2046  # the helpers' pids, one word each
	echo "$p" $(ps -o pid= --ppid "$p")
done | while read -r a h; do
	for q in $a $h; do
		awk -v who="$([ "$q" = "$a" ] && echo agent || echo helper)" '
			/^Rss:/ { r = $2 } /^Pss:/ { p = $2 } /^Private_(Clean|Dirty):/ { v += $2 }
			END { print who, r, p, v }' "/proc/$q/smaps_rollup" 2>/dev/null
	done
done | awk '{ n[$1]++; r[$1] += $2; p[$1] += $3; v[$1] += $4 }
	END { for (w in n) printf "%s %d %.0f %.0f %.0f\n", w, n[w], r[w] / n[w], p[w] / n[w], v[w] / n[w] }' | sort)
# The same cold start on the shared directory (SHARED_COLD=0 skips it): the watches and etcd
# stopped, N new fake roots whose /srv/share is one directory of this machine (a symbolic link
# to it, as an NFS mount would be one directory), the N applies in waves as above, expect: N.  The last
# record published: the last record file's first appearance (inotifywait stamps each name's
# first rename into place).  File system calls are not counted here (strace on N processes
# would be the load); the traced refresh below gives them per node.
SH_LINE="" SH_CPU_LINE="" SH_INV=""
if [ "${SHARED_COLD:-1}" = 1 ]; then
	for p in "${WPIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${WPIDS[@]}"; do { wait "$p"; } 2>/dev/null || true; done
	kill "$etcd_pid" 2>/dev/null || true
	{ wait "$etcd_pid"; } 2>/dev/null || true
	mkdir -m 0755 "$T/share"
	mkdir -p "$T/share/.hpcinit/bench/nodes"
	for i in $(seq 1 "$N"); do
		S=$T/s$i
		mkdir -p "$S/etc/hpcinit" "$S/etc/ssh" "$S/etc/openmpi" "$S/run/hpcinit" "$S/srv"
		printf 'root:x:0:0:root:/root:/bin/bash\n' > "$S/etc/passwd"
		echo "# This is the default hostfile for Open MPI." > "$S/etc/openmpi/openmpi-default-hostfile"
		install -m 0600 "$T/cluster.key" "$S/etc/hpcinit/cluster.key"
		ln -s "$T/share" "$S/srv/share"
		cat > "$S/etc/hpcinit/node.yaml" <<-EOF
		version: 1
		cluster: {name: bench, network: 10.0.0.0/8, secret_file: /etc/hpcinit/cluster.key}
		discovery: {method: shared, dir: /srv/share/.hpcinit, expect: $N, wait: 600s, lease: 1h}
		hostfile: {}
		EOF
	done
	( echo "$BASHPID" >"$T/sstamp.pid"
	  exec inotifywait -m -q -e moved_to -e close_write --format '%f' "$T/share/.hpcinit/bench/nodes" ) |
		{ declare -A sseen
		  while read -r f; do
			case $f in *.rec) ;; *) continue ;; esac
			[ -n "${sseen[$f]:-}" ] || { sseen[$f]=1; echo "${EPOCHREALTIME/./}"; }
		  done; } >"$T/sputs" &
	sstamp_pipe=$!
	PIDS+=("$sstamp_pipe")
	sleep 0.5
	PIDS+=("$(cat "$T/sstamp.pid")")
	child_cpu
	ccpu0=$CHILD_CPU
	APIDS=()
	t0=$(date +%s%N)
	for i in $(seq 1 "$N"); do
		HPCINIT_ADDRESS=$(addr "$i") timeout 900 "$HPCINIT" apply --only discovery,hostfile --root "$T/s$i" \
			-c "$T/s$i/etc/hpcinit/node.yaml" --hostname "node$i" >"$T/s$i/apply.out" 2>&1 &
		APIDS+=($!)
		if [ $((i % WAVE)) = 0 ] && [ "$i" -lt "$N" ]; then
			for _ in $(seq 1 300); do
				[ "$(find "$T/share/.hpcinit/bench/nodes" -name '*.rec' | wc -l)" -ge "$i" ] && break
				sleep 0.1
			done
		fi
	done
	sfailed=0
	for i in $(seq 1 "$N"); do wait "${APIDS[i - 1]}" || sfailed=$((sfailed + 1)); done
	t1=$(date +%s%N)
	child_cpu
	scold_cpu=$(span "the shell's children's CPU" "$ccpu0" "$CHILD_CPU")
	sleep 0.3
	kill "$(cat "$T/sstamp.pid")" 2>/dev/null || true
	wait "$sstamp_pipe" 2>/dev/null || true
	sfull=0
	for i in $(seq 1 "$N"); do
		[ "$(grep -vc '^#' "$T/s$i/etc/hpcinit/hostfile.plain" 2>/dev/null)" = "$N" ] && sfull=$((sfull + 1))
	done
	inv=()
	for i in $(seq 1 "$N"); do inv+=("$T/s$i/apply.out" "$T/s$i/etc/hpcinit/hostfile.plain"); done
	SH_INV=$(hostfiles_agree "shared cold start" "${inv[@]}") || true
	slast=$(($(sort -n "$T/sputs" | tail -1) * 1000))
	SH_LINE="shared cold start: $((N - sfailed)) of $N applies exited 0, $sfull of $N hostfiles list $N nodes; $(wc -l <"$T/sputs") records, the last first in place $(((slast - t0) / 1000000)) ms after the start; all done $(((t1 - t0) / 1000000)) ms after the start; last record published -> all $N done: $(((t1 - slast) / 1000000)) ms"
	SH_CPU_LINE="shared cold start: nodes' CPU $(cpu_line "$scold_cpu" "$N") (every wait lists the directory again); load average $(cut -d' ' -f1-3 /proc/loadavg)"
	if [ "$sfailed" -gt 0 ]; then
		for i in $(seq 1 "$N"); do grep -q '^result: ready' "$T/s$i/apply.out" || { echo "s$i:" >&2; tail -5 "$T/s$i/apply.out" | sed 's/^/  | /' >&2; break; }; done
	fi
fi

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
# shellcheck disable=SC2054  # the comma is in one argument
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

if [ "$MINUTES" -gt 0 ]; then
	printf '%-14s %18s %18s\n' "per minute" "requests / ops" "bytes"
	printf '%-14s %18s %18s\n' "etcd+watch" "$e_req" "$e_bytes"
	printf '%-14s %18s %18s\n' "shared+timer" "$s_ops_min" "$s_bytes_min"
	echo "etcd: $((r1 - r0)) requests in $MINUTES min from $alive of $N watches still running; store revision $rev0 -> $rev1 (no change: no put)"
	echo "etcd: per node per minute $(awk -v a="$e_req" -v n="$N" 'BEGIN{printf "%.2f", a / n}') requests (lease ${LEASE}s: a keepalive every $((LEASE / 3)) s)"
else
	echo "steady state: not measured (MINUTES=0); shared+timer per minute: $s_ops_min file system calls, $s_bytes_min bytes"
fi
echo "shared: one refresh = $s_ops file system calls for the share ($ops_n with $rec_opens records, $ops_0 with none), $s_bytes bytes of records"
jcpu=$(watchers_delta "$T/cpu.j0" "$T/cpu.j1") lcpu=$(watchers_delta "$T/cpu.j1" "$T/cpu.j2")
echo "join while $N watch: every hostfile lists node$J $join_ms after its apply returned, ${join_put_ms:-?} after etcd took its record (goal at 1,000: under 1000 ms; $(goal "$join_put_ms" 1000)); watchers' CPU $(cpu_line "$jcpu" "$N") (2 s of idle keepalives included; on these $(nproc) cores that CPU alone takes at least $(cpu_floor "$jcpu") of wall time); etcd $((jl_req1 - jl_req0)) requests, $((jl_by1 - jl_by0)) bytes"
echo "leave while $N watch: no hostfile lists node$J $leave_ms after its leave returned, ${leave_del_ms:-?} after etcd deleted its key (goal at 1,000: under 2000 ms; $(goal "$leave_ms" 2000)); watchers' CPU $(cpu_line "$lcpu" "$N") (on these $(nproc) cores at least $(cpu_floor "$lcpu") of wall time); etcd $((jl_req2 - jl_req1)) requests, $((jl_by2 - jl_by1)) bytes"
echo "member loss while $((N - 1)) watch: $loss"
[ -z "$SH_LINE" ] || { echo "$SH_LINE"; echo "$SH_CPU_LINE"; echo "$SH_INV"; }
echo "watch memory, mean KiB a process (process count, RSS, PSS, private):"
echo "$mem" | awk '{ printf "  %-7s %5d processes: RSS %6d, PSS %6d, private %6d\n", $1, $2, $3, $4, $5; r += $3; p += $4; v += $5 }
	END { printf "  a node (agent + helper): RSS %d KiB, PSS %d KiB, private %d KiB; %d watches: %.0f MiB of PSS\n", r, p, v, '"${#WPIDS[@]}"', p * '"${#WPIDS[@]}"' / 1024 }'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
[ "$MINUTES" -eq 0 ] || echo "shared / etcd: $(awk -v a="$s_ops_min" -v b="$e_req" 'BEGIN{printf "%.0f", a / b}')x operations, $(awk -v a="$s_bytes_min" -v b="$e_bytes" 'BEGIN{printf "%.0f", a / b}')x bytes; goal: at least 100x"
