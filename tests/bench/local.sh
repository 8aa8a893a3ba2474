#!/bin/bash
# Local speed and memory of one node's run: median wall time and peak RSS of
# `hpcinit apply` (converged, nothing to change) and `hpcinit check`, and of a
# first apply on an empty root, on a fake root with the full example spec.
# Baselines in the same run: /bin/true (process start floor) and a shell script
# that writes the same memlock files the way image scripts do (azhpc-images
# style), on its own copy of the root.  Baselines and hpcinit are interleaved
# (runstat: round i runs each once), so a load that comes and goes on a shared
# machine reaches all of them alike; the load average is printed with them.
# Goals (docs/performance.md): a converged apply at most 1.5x the script,
# check at most the script, peak RSS under 4 MB, each printed "met" or "NOT
# met".  A baseline that did not do its work (the script's files not as it
# writes them, hpcinit's runs not the converged run) fails the benchmark
# before any ratio is printed.
# Usage: tests/bench/local.sh [RUNS]   (run by hand; not part of make check)
# BASE=/path/to/other/build/hpcinit adds BASE's converged apply and check
# (e.g. a build of an older commit, its helpers beside it) to the same
# interleaved runs, on its own converged copy of the root, and each goal line
# prints it beside the script and /bin/true, with the CPU ratios this/BASE.
# BASE's converged apply is verified as this one's is; if it is not the run
# meant, no ratio is printed and the benchmark fails.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
HPCINIT=${HPCINIT:-$TOP/build/hpcinit}
SPEC=${SPEC:-$TOP/tests/fixtures/core/full.yaml}
RUNS=${1:-50}
# The network a node has: where this user may (root), the benchmark runs in a
# network namespace of its own with lo and one Ethernet-like interface in the
# spec's cluster.network (198.18.0.10/24), so discovery finds this node's
# address as on a node.  A shared test machine has other tests' namespaces,
# bridges and veths (a hundred interfaces and more), and every getifaddrs(3)
# of a run lists them all: 2-3 ms here against 0.05 ms on a node's few.
# BENCH_NET=host keeps this machine's namespace (with the documented address
# override); the first lines say which and how many interfaces.
if [ "${BENCH_NET:-node}" = node ] && [ -z "${HPCINIT_BENCH_IN_NETNS:-}" ] &&
	HPCINIT_BENCH_IN_NETNS=1 unshare -n true 2>/dev/null; then
	exec env HPCINIT_BENCH_IN_NETNS=1 unshare -n bash "$0" "$@"
fi
if [ -n "${HPCINIT_BENCH_IN_NETNS:-}" ]; then
	ip link set lo up
	ip link add eth0 type veth peer name eth1
	ip addr add 198.18.0.10/24 dev eth0
	ip link set eth1 up && ip link set eth0 up
	NETWHERE="a namespace of its own (a node's: lo, eth0 198.18.0.10/24 in cluster.network)"
else
	# Discovery on a fake root has no interface in cluster.network: give the documented override.
	export HPCINIT_ADDRESS=${HPCINIT_ADDRESS:-198.18.0.10}
	NETWHERE="this machine's namespace (HPCINIT_ADDRESS=$HPCINIT_ADDRESS)"
fi
# The libexec helpers (rdma probe, ...): a build tree's binary runs those built beside it,
# an installed one those of its libexec directory (agent/base/proc.h), so a run spawns them as on a node.
T=$(mktemp -d /tmp/hpcinit-bench.XXXXXX)
MOUNTS=()
trap 'for m in "${MOUNTS[@]}"; do umount "$m" 2>/dev/null || true; done; rm -rf "$T"' EXIT
# On a node /run is tmpfs (systemd): a fake root's /run gets one too where this
# user may mount (root), so the status files cost what they cost on a node;
# elsewhere they stay on this machine's disk, and the first line says so.
RUNFS=tmpfs
runfs() { # runfs ROOT: ROOT/run on a tmpfs, its files kept
	[ "$RUNFS" = tmpfs ] || return 0
	mv "$1/run" "$1/run.disk" && mkdir "$1/run"
	if mount -t tmpfs -o size=16m,mode=0755 hpcinit-bench "$1/run" 2>/dev/null; then
		MOUNTS=("$1/run" "${MOUNTS[@]}")
	else
		RUNFS="this machine's disk (no tmpfs mount here)"
	fi
	cp -a "$1/run.disk/." "$1/run/" && rm -rf "$1/run.disk"
}
unrunfs() { # unrunfs ROOT: its /run back on the disk (before ROOT is removed)
	if [ "$RUNFS" = tmpfs ] && umount "$1/run" 2>/dev/null; then
		local m keep=()
		for m in "${MOUNTS[@]}"; do [ "$m" = "$1/run" ] || keep+=("$m"); done
		MOUNTS=("${keep[@]}")
	fi
}
eval "$(sed -n '/^mkroot()/,/^}/p' "$TOP/tests/system/lib.sh")"
# The root: an Ubuntu-like tree with a dpkg database and the running kernel's
# packages (the kernel fixture), plus PAM stacks; rdma finds no devices (as on
# this machine, rdma.required: false makes that "degraded").
cp -a "$TOP/tests/fixtures/kernel/debian" "$T/root"
while read -r p; do
	case $p in /*) mkdir -p "$T/root$(dirname "$p")" && : >"$T/root$p" ;; esac
done <"$T/root/empty-files"
rm "$T/root/empty-files"
mkroot "$T/root"
runfs "$T/root"
cat >"$T/baseline.sh" <<'SH'
#!/bin/bash
# What image scripts do: write limits and systemd drop-ins unconditionally.
R=$1
mkdir -p "$R/etc/security/limits.d" "$R/etc/systemd/system.conf.d"
printf '* soft memlock unlimited\n* hard memlock unlimited\n' >"$R/etc/security/limits.d/90-hpcinit.conf"
printf '[Manager]\nDefaultLimitMEMLOCK=infinity\n' >"$R/etc/systemd/system.conf.d/90-hpcinit.conf"
grep -q pam_limits "$R/etc/pam.d/common-session"
SH
# The script works on its own copy of the root (in hpcinit's it would undo
# hpcinit's files), and must be seen to do its work: from none of its files,
# it exits 0 and writes both, and after its timed runs they are still its.
cp -a "$T/root" "$T/sroot"
rm -rf "$T/sroot/etc/security/limits.d" "$T/sroot/etc/systemd"
baseline_verified() { # baseline_verified WHEN
	if [ "$(cat "$T/sroot/etc/security/limits.d/90-hpcinit.conf" 2>/dev/null)" != \
		"$(printf '* soft memlock unlimited\n* hard memlock unlimited')" ] ||
		[ "$(cat "$T/sroot/etc/systemd/system.conf.d/90-hpcinit.conf" 2>/dev/null)" != \
			"$(printf '[Manager]\nDefaultLimitMEMLOCK=infinity')" ]; then
		echo "local.sh: FAIL: the baseline script did not write its memlock files ($1); no ratio against it" >&2
		exit 1
	fi
}
/bin/bash "$T/baseline.sh" "$T/sroot" || { echo "local.sh: FAIL: the baseline script exited $?" >&2; exit 1; }
baseline_verified "its first run"
# Converge once, and verify the state the timed runs start from: every step ok
# or skipped but rdma, degraded because this machine has no RDMA device (exit 3).
# Anything else is not the run this benchmark means to time: it stops here.
[ -z "${BASE:-}" ] || { cp -a "$T/root" "$T/rootb" && runfs "$T/rootb"; }
converged() { # converged BINARY ROOT WHEN: one apply, and it must be the converged run
	local bin=$1 root=$2 rc=0 bad
	"$bin" apply --hostname node01 --root "$root" -c "$SPEC" >"$T/converge.out" 2>&1 || rc=$?
	bad=$(awk '/^MODULE/ { f = 1; next } f && NF == 0 { exit }
		f && $2 != "ok" && $2 != "skipped" && !($1 == "rdma" && $2 == "degraded") { print $1 " " $2 }' "$T/converge.out")
	if { [ "$rc" != 0 ] && [ "$rc" != 3 ]; } || [ -n "$bad" ]; then
		echo "local.sh: FAIL: the converged apply of $bin ($3) is not the one measured (exit $rc; ${bad:-no step list}):" >&2
		sed 's/^/  | /' "$T/converge.out" >&2
		exit 1
	fi
}
converge() { # converge BINARY ROOT: apply once, then the converged run
	"$1" apply --hostname node01 --root "$2" -c "$SPEC" >/dev/null 2>&1 || true
	converged "$1" "$2" "before the timed runs"
}
converge "$HPCINIT" "$T/root"
[ -z "${BASE:-}" ] || converge "$BASE" "$T/rootb"
# ... so exit 3 (degraded: rdma) is what a timed apply or check may end with;
# check exits 1 on drift, so each timed check also proves the state converged.
export RUNSTAT_OK=3
cc -O2 -o "$T/runstat" "$TOP/tests/bench/runstat.c"
fresh() {
	unrunfs "$T/fresh"; rm -rf "$T/fresh"; cp -a "$T/root" "$T/fresh"
	rm -rf "$T/fresh/etc/security/limits.d"/* "$T/fresh/etc/systemd" "$T/fresh/run/hpcinit" \
		"$T/fresh/var/lib/hpcinit" "$T/fresh/etc/hpcinit"/hostfile.* "$T/fresh/etc/clustershell"
	runfs "$T/fresh"
}
show() { # show NAME "MEDIAN P90 RSS CPU"
	local med p90 rss cpu
	read -r med p90 rss cpu <<< "$2"
	printf '%-34s median %7.2f ms   p90 %7.2f ms   CPU %6.2f ms   peak RSS %5.2f MB\n' "$1" "$med" "$p90" \
		"$cpu" "$(echo "$rss / 1024" | bc -l)"
}
read -r LOAD0 _ < /proc/loadavg
echo "hpcinit local benchmark: $RUNS runs each, interleaved, spec $(basename "$SPEC"), $(nproc) cores, load average $LOAD0"
echo "the fake root's /run: $RUNFS; /var/lib and /etc: $(df --output=fstype "$T" | tail -1) on this machine's disk"
echo "network: $NETWHERE, $(ip -o link | wc -l) interfaces"
# One interleaved run of every program: the baselines, this binary, and BASE's apply and check.
ARGS=(/bin/true :: "$HPCINIT" --version :: /bin/bash "$T/baseline.sh" "$T/sroot"
	:: "$HPCINIT" apply --hostname node01 --root "$T/root" -c "$SPEC"
	:: "$HPCINIT" check --hostname node01 --root "$T/root" -c "$SPEC")
[ -z "${BASE:-}" ] || ARGS+=(:: "$BASE" apply --hostname node01 --root "$T/rootb" -c "$SPEC"
	:: "$BASE" check --hostname node01 --root "$T/rootb" -c "$SPEC")
RS=$(RUNSTAT_CPU=1 "$T/runstat" "$RUNS" "${ARGS[@]}") ||
	{ echo "$0: a timed run failed (runstat above); no numbers printed" >&2; exit 1; }
baseline_verified "after its timed runs"
converged "$HPCINIT" "$T/root" "after the timed runs"
[ -z "${BASE:-}" ] || converged "$BASE" "$T/rootb" "after the timed runs"
mapfile -t R <<< "$RS"
show "baseline /bin/true" "${R[0]}"
show "hpcinit --version (startup floor)" "${R[1]}"
show "baseline shell memlock script" "${R[2]}"
show "hpcinit apply (converged)" "${R[3]}"
show "hpcinit check" "${R[4]}"
[ -z "${BASE:-}" ] || { show "BASE apply (converged)" "${R[5]}"; show "BASE check" "${R[6]}"; }
# first apply on an empty root: one run at a time, the root rebuilt in between
maxr=0; times=()
for i in $(seq 1 "$RUNS"); do
	fresh
	RS=$("$T/runstat" 1 "$HPCINIT" apply --hostname node01 --root "$T/fresh" -c "$SPEC") || { echo "$0: a timed run failed (runstat above); no numbers printed for it" >&2; exit 1; }
	read -r m _ r <<< "$RS"
	times+=("$m"); [ "$r" -gt "$maxr" ] && maxr=$r
done
T_FIRST=$(printf '%s\n' "${times[@]}" | sort -g | sed -n "$((RUNS / 2 + 1))p")
printf '%-34s median %7.2f ms                                   peak RSS %5.2f MB\n' "hpcinit apply (fresh root)" "$T_FIRST" "$(echo "$maxr / 1024" | bc -l)"
read -r LOAD1 _ < /proc/loadavg
# Each goal with every baseline of this run: the script (the goal's own), /bin/true, and BASE when given.
printf '%s\n' "${R[@]}" | awk -v base="${BASE:-}" -v l0="$LOAD0" -v l1="$LOAD1" '
	{ w[NR - 1] = $1; rss[NR - 1] = $3 / 1024; cpu[NR - 1] = $4 }
	function vs(i, j) { return sprintf("%.2fx", w[i] / w[j]) }
	function against(i, b) { # i: this binary run, b: BASE run of the same command
		s = sprintf("%.2f ms: the script %.2f ms, %s; /bin/true %.2f ms, %.1fx", w[i], w[2], vs(i, 2), w[0], w[i] / w[0])
		if (base != "")
			s = s sprintf("; BASE %.2f ms, %s", w[b], vs(i, b))
		return s }
	END {
	printf "goal converged apply <= 1.5x the script: %s (%s)\n", w[3] / w[2] <= 1.5 ? "met" : "NOT met", against(3, 5)
	printf "goal check <= the script: %s (%s)\n", w[4] / w[2] <= 1.0 ? "met" : "NOT met", against(4, 6)
	r = rss[3] > rss[4] ? rss[3] : rss[4]
	s = sprintf("apply %.2f MB, check %.2f MB: the script %.2f MB; /bin/true %.2f MB", rss[3], rss[4], rss[2], rss[0])
	if (base != "")
		s = s sprintf("; BASE apply %.2f MB, check %.2f MB", rss[5], rss[6])
	printf "goal peak RSS under 4 MB: %s (%s)\n", r < 4 ? "met" : "NOT met", s
	printf "CPU medians (user + system, the load-proof figure): apply/script %.2fx, check/script %.2fx", cpu[3] / cpu[2], cpu[4] / cpu[2]
	if (base != "")
		printf "; this/BASE: apply %.2fx, check %.2fx", cpu[3] / cpu[5], cpu[4] / cpu[6]
	printf "\n"
	if (base != "")
		printf "BASE: %s\n", base
	printf "load average (1 min): %s at the start, %s at the end\n", l0, l1 }'
