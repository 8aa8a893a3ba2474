#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Refresh at scale: "hpcinit refresh" (discovery + hostfile) against a
# rendezvous directory holding 100, 1,000 and 10,000 synthetic records
# (tests/bench/gen-records, the real record format, HMAC-signed), on a fake
# root.  Prints median/p90 wall time and peak RSS per size, checks that the
# hostfiles list every node, and states the goal: 10,000 records in under
# 200 ms, growing linearly.
# Usage: tests/bench/discovery-refresh.sh [RUNS]   (run by hand; not part of make check)
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${TOP_BUILDDIR:-$TOP/build}
HPCINIT=${HPCINIT:-$BUILD/hpcinit}
RUNS=${1:-10}
GEN=$BUILD/tests/bench/gen-records
[ -x "$GEN" ] || make -s -C "$BUILD" tests/bench/gen-records
T=$(mktemp -d /tmp/hpcinit-bench-refresh.XXXXXX)
trap 'rm -rf "$T"' EXIT
cc -O2 -o "$T/runstat" "$TOP/tests/bench/runstat.c"

# Which modules "refresh" means in this build (ssh needs ssh users; none here).
if "$HPCINIT" --help 2>&1 | grep -q 'Modules, in run order:.* ssh'; then
	REFRESH=(refresh)
else
	REFRESH=(apply --only discovery,hostfile)
fi

echo "hpcinit refresh at scale: $RUNS runs each, $(nproc) cores, fake root, HMAC on"
printf '%8s  %10s  %10s  %10s  %10s  %s\n' records median p90 "cpu (u+s)" "peak RSS" "per record"
for n in 100 1000 10000; do
	R=$T/root-$n
	mkdir -p "$R/etc/hpcinit" "$R/etc/ssh" "$R/etc/openmpi" "$R/srv/share/.hpcinit/bench/nodes"
	printf 'root:x:0:0:root:/root:/bin/bash\n' > "$R/etc/passwd"
	echo "# This is the default hostfile for Open MPI." > "$R/etc/openmpi/openmpi-default-hostfile"
	head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$R/etc/hpcinit/cluster.key"
	chmod 0600 "$R/etc/hpcinit/cluster.key"
	cat > "$R/etc/hpcinit/node.yaml" <<-EOF
	version: 1
	cluster: {name: bench, network: 10.0.0.0/8, secret_file: /etc/hpcinit/cluster.key}
	discovery: {method: shared, dir: /srv/share/.hpcinit, expect: 1, lease: 1h}
	hostfile: {}
	EOF
	"$GEN" -s "$R/etc/hpcinit/cluster.key" "$R/srv/share/.hpcinit/bench/nodes" bench "$n"
	args=("${REFRESH[@]}" --root "$R" -c "$R/etc/hpcinit/node.yaml" --hostname bench-self)
	# first run writes the hostfiles; the timed runs are the steady state of the timer
	HPCINIT_ADDRESS=10.0.0.1 "$HPCINIT" "${args[@]}" >/dev/null
	lines=$(grep -vc '^#' "$R/etc/hpcinit/hostfile.openmpi")
	[ "$lines" = $((n + 1)) ] || { echo "hostfile lists $lines nodes, expected $((n + 1))" >&2; exit 1; }
	RS=$(HPCINIT_ADDRESS=10.0.0.1 "$T/runstat" "$RUNS" "$HPCINIT" "${args[@]}") || { echo "$0: a timed run failed (runstat above); no numbers printed for it" >&2; exit 1; }
	read -r med p90 rss <<< "$RS"
	# CPU time (user + system) depends less on what else the machine runs than wall time
	cpu=$(for _ in $(seq 1 "$RUNS"); do
		HPCINIT_ADDRESS=10.0.0.1 /usr/bin/time -f '%U %S' "$HPCINIT" "${args[@]}" 2>&1 >/dev/null | tail -1
	done | awk '{ print ($1 + $2) * 1000 }' | sort -g | sed -n "$((RUNS / 2 + 1))p")
	printf '%8d  %7.1f ms  %7.1f ms  %7.0f ms  %7.1f MB  %6.2f us\n' "$n" "$med" "$p90" "$cpu" \
		"$(echo "$rss / 1024" | bc -l)" "$(echo "$med * 1000 / $n" | bc -l)"
	[ "$n" = 10000 ] && MED10K=$med
	rm -rf "$R"
done
echo "load average while measuring: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
awk -v m="$MED10K" 'BEGIN { printf "goal: 10,000 records under 200 ms: %s (%.1f ms)\n", m < 200 ? "met" : "NOT met", m }'
