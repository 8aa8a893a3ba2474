#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A node that waits on the shared directory (issue 37: the shared directory's cold start at
# 1,000 nodes, where every wait lists the directory again).  One fake root whose rendezvous
# holds R records of other nodes (tests/bench/gen-records: the real format, HMAC-signed) and a
# spec whose expect (R + 2) is never met: "hpcinit apply --only discovery,hostfile" lists the
# directory after 50 ms, doubling to 5 s, for WAIT seconds (discovery.wait), then ends degraded
# (exit 3) with R + 1 hosts in its hostfile -- checked after every run, else the bench fails and
# prints no figure.  Its CPU is bash's count of its waited-for children; its peak RSS, of one
# more run, runstat's (its own ru_maxrss).  With BASELINE=<an
# older hpcinit binary> each run is made with both, interleaved, and the ratio printed.
# Usage: tests/bench/shared-wait.sh [RUNS] [R] [WAIT]   (root; by hand, not by make check;
#        default 10 runs, 300 records, 4 s)
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${TOP_BUILDDIR:-$TOP/build}
RUNS=${1:-10} R=${2:-300} WAIT=${3:-4}
for v in "$RUNS" "$R" "$WAIT"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [RUNS] [R] [WAIT]" >&2; exit 2; }
done
HPCINIT=${HPCINIT:-$BUILD/hpcinit}
GEN=$BUILD/tests/bench/gen-records
[ -x "$GEN" ] || make -s -C "$BUILD" tests/bench/gen-records
BINS=("$HPCINIT")
if [ -n "${BASELINE:-}" ]; then
	[ -x "$BASELINE" ] || { echo "BASELINE $BASELINE: not an executable" >&2; exit 2; }
	BINS+=("$BASELINE")
fi
T=$(mktemp -d /tmp/hpcinit-bench-wait.XXXXXX)
trap 'rm -rf "$T"' EXIT
. "$TOP/tests/bench/etcd-bench-lib.sh"   # child_cpu

S=$T/root NODES=$T/share/.hpcinit/bench/nodes
mkdir -p "$S/etc/hpcinit" "$S/etc/ssh" "$S/run/hpcinit" "$S/srv" "$NODES"
chmod 0755 "$T/share" "$T/share/.hpcinit" "$T/share/.hpcinit/bench" "$NODES"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$T/cluster.key"
install -m 0600 "$T/cluster.key" "$S/etc/hpcinit/cluster.key"
printf 'root:x:0:0:root:/root:/bin/bash\n' >"$S/etc/passwd"
ln -s "$T/share" "$S/srv/share"
cat >"$S/etc/hpcinit/node.yaml" <<EOF
version: 1
cluster: {name: bench, network: 10.0.0.0/8, secret_file: /etc/hpcinit/cluster.key}
discovery: {method: shared, dir: /srv/share/.hpcinit, expect: $((R + 2)), wait: ${WAIT}s}
hostfile: {}
EOF

declare -A SUM
for i in $(seq 1 "$RUNS"); do
	for b in "${!BINS[@]}"; do
		# The records as new (their time now: within the lease), this node's state gone.
		rm -rf "$S/run/hpcinit" "$S/var" "$S"/etc/hpcinit/hostfile.* "$NODES"/*
		mkdir -p "$S/run/hpcinit"
		"$GEN" -s "$T/cluster.key" -n 10.0 "$NODES" bench "$R" >/dev/null
		child_cpu
		c0=$CHILD_CPU
		rc=0
		HPCINIT_ADDRESS=10.255.0.1 "${BINS[$b]}" apply --only discovery,hostfile --root "$S" \
			-c "$S/etc/hpcinit/node.yaml" --hostname waiter >"$T/out" 2>&1 || rc=$?
		child_cpu
		SUM[$b]=$((${SUM[$b]:-0} + CHILD_CPU - c0))
		got=$(grep -vc '^#' "$S/etc/hpcinit/hostfile.plain" 2>/dev/null || true)
		if [ "$rc" != 3 ] || [ "$got" != $((R + 1)) ]; then
			echo "shared-wait.sh: ${BINS[$b]}: exit $rc (3 expected: expect not met), hostfile lists" \
				"${got:-no} hosts (not $((R + 1))); no figures:" >&2
			sed 's/^/  | /' "$T/out" >&2
			exit 1
		fi
	done
done

# Peak RSS: one more run of each (tests/bench/runstat.c: the child's own ru_maxrss).
cc -O2 -o "$T/runstat" "$TOP/tests/bench/runstat.c"
declare -A RSS
for b in "${!BINS[@]}"; do
	rm -rf "$S/run/hpcinit" "$S/var" "$S"/etc/hpcinit/hostfile.* "$NODES"/*
	mkdir -p "$S/run/hpcinit"
	"$GEN" -s "$T/cluster.key" -n 10.0 "$NODES" bench "$R" >/dev/null
	RSS[$b]=$(HPCINIT_ADDRESS=10.255.0.1 RUNSTAT_OK=3 "$T/runstat" 1 "${BINS[$b]}" apply --only discovery,hostfile \
		--root "$S" -c "$S/etc/hpcinit/node.yaml" --hostname waiter | awk '{ print $3 }') ||
		{ echo "shared-wait.sh: the peak RSS run of ${BINS[$b]} failed; no figures" >&2; exit 1; }
done

echo "a node waiting ${WAIT} s on the shared directory for $((R + 2)) nodes, $R records there; $RUNS runs of each, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
for b in "${!BINS[@]}"; do
	printf '%s: %.2f ms of CPU a run, peak RSS %.2f MB\n' "$([ "$b" = 0 ] && echo "this binary" || echo "baseline ($BASELINE)")" \
		"$(echo "${SUM[$b]} $RUNS" | awk '{ print $1 / $2 }')" "$(echo "${RSS[$b]}" | awk '{ print $1 / 1024 }')"
done
if [ "${#BINS[@]}" = 2 ]; then
	printf 'this binary / baseline = %.2fx\n' "$(echo "${SUM[0]} ${SUM[1]}" | awk '{ print $1 / $2 }')"
fi
