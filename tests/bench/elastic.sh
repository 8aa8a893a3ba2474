#!/bin/bash
# SPDX-License-Identifier: MIT
#
# An elastic scale set below discovery.expect, with the shipped compute
# values (expect 4, wait 15m), on fake roots sharing a local directory (the
# stand-in for the NFS share; the real binary, HMAC on):
#   join:    a compute's first "hpcinit apply" (discovery + hostfile) when
#            only the head (expect 1) is up: the cluster has formed, so the
#            node must not wait for 3 more;
#   refresh: "hpcinit refresh" on a lone node of a cluster that never
#            formed: a refresh never waits.
# Each is timed RUNS times (a fresh root each time); a run that waits is
# killed at 60 s and printed as such.  Goal: seconds (under 5 s each).
# Usage: tests/bench/elastic.sh [RUNS]   (run by hand; not part of make check)
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${TOP_BUILDDIR:-$TOP/build}
HPCINIT=${HPCINIT:-$BUILD/hpcinit}
RUNS=${1:-10}
CAP=60
T=$(mktemp -d /tmp/hpcinit-bench-elastic.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
SHARE=$T/share
mkdir -m 0755 "$SHARE"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$T/cluster.key"

if "$HPCINIT" --help 2>&1 | grep -q 'Modules, in run order:.* ssh'; then
	REFRESH=(refresh)
else
	REFRESH=(apply --only discovery,hostfile)
fi

# mkroot DIR CLUSTER ROLE EXPECT: a fake root with the spec and the secret
mkroot() {
	local r=$1
	mkdir -p "$r/etc/hpcinit" "$r/etc/openmpi" "$r/srv"
	ln -s "$SHARE" "$r/srv/share"  # the mount: every root sees the one directory
	printf 'root:x:0:0:root:/root:/bin/bash\n' > "$r/etc/passwd"
	echo "# This is the default hostfile for Open MPI." > "$r/etc/openmpi/openmpi-default-hostfile"
	install -m 0600 "$T/cluster.key" "$r/etc/hpcinit/cluster.key"
	cat > "$r/etc/hpcinit/node.yaml" <<-EOF
	version: 1
	cluster: {name: $2, role: $3, network: 10.0.0.0/8, secret_file: /etc/hpcinit/cluster.key}
	discovery: {method: shared, dir: /srv/share/.hpcinit, expect: $4, wait: 15m, lease: 5m}
	hostfile: {}
	EOF
}
# timed OUT NAME ADDR ROOT ARGS...: wall ms of one run (or "killed"), exit code checked
timed() {
	local name=$1 addr=$2 r=$3 t0 rc=0
	shift 3
	t0=$(date +%s%N)
	HPCINIT_ADDRESS=$addr timeout "$CAP" "$HPCINIT" "$@" --root "$r" -c "$r/etc/hpcinit/node.yaml" \
		--hostname "$name" >"$T/out" 2>&1 || rc=$?
	if [ "$rc" = 124 ]; then
		echo killed
	else
		echo "$(( ($(date +%s%N) - t0) / 1000000 )) $rc"
	fi
}
# stats: median and max of the ms values on stdin
stats() { sort -n | awk '{ v[NR] = $1 } END { printf "median %d ms, max %d ms", v[int((NR + 1) / 2)], v[NR] }'; }

echo "elastic scale set below expect (expect 4, wait 15m): $RUNS runs each, $(nproc) cores, fake roots"
mkroot "$T/head" elastic head 1
read -r ms rc < <(timed head 10.0.0.4 "$T/head" apply)
formed="says formed: true"
grep -qx 'formed: true' "$SHARE/.hpcinit/elastic/nodes/head.rec" || formed="does not say formed (an older agent)"
echo "head alone (expect 1): apply ${ms} ms, exit $rc; its record $formed"

join=() refresh=() bad=0
for i in $(seq 1 "$RUNS"); do
	rm -rf "$T/c"
	mkroot "$T/c" elastic compute 4
	read -r ms rc < <(timed compute1 10.0.0.5 "$T/c" apply)
	if [ "$ms" = killed ] || [ "$rc" != 0 ]; then
		echo "join run $i: ${ms} (exit ${rc:-}): it waited" >&2
		bad=1
	else
		join+=("$ms")
	fi
	rm -f "$SHARE/.hpcinit/elastic/nodes/compute1.rec"

	rm -rf "$T/n"
	mkroot "$T/n" "lone$i" compute 4
	read -r ms rc < <(timed lone 10.0.0.6 "$T/n" "${REFRESH[@]}")
	if [ "$ms" = killed ] || [ "$rc" != 3 ]; then
		echo "refresh run $i: ${ms} (exit ${rc:-}; a lone node's refresh is degraded, 3)" >&2
		bad=1
	else
		refresh+=("$ms")
	fi
done
[ "${#join[@]}" -gt 0 ] && echo "join a formed cluster (2 of 4, apply to ready): $(printf '%s\n' "${join[@]}" | stats)"
[ "${#refresh[@]}" -gt 0 ] && echo "refresh below expect (1 of 4, never formed):    $(printf '%s\n' "${refresh[@]}" | stats)"
echo "load average while measuring: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) cores"
if [ "$bad" = 0 ] && [ "$(printf '%s\n' "${join[@]}" "${refresh[@]}" | sort -n | tail -1)" -lt 5000 ]; then
	echo "goal: both under 5 s (not 15 min): met"
else
	echo "goal: both under 5 s (not 15 min): NOT met"
	exit 1
fi
