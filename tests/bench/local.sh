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
# BASE=/path/to/other/build/hpcinit adds an A/B of the converged apply: this
# binary against BASE (e.g. a build of an older commit, its helpers beside it),
# each on its own converged copy of the root, interleaved run by run: CPU
# (user+system, helpers included) and wall medians, the peak RSS of each, and
# the ratios.  BASE's converged apply is verified as this one's is; if it is
# not the run meant, no ratio is printed and the benchmark fails.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
HPCINIT=${HPCINIT:-$TOP/build/hpcinit}
SPEC=${SPEC:-$TOP/tests/fixtures/core/full.yaml}
RUNS=${1:-50}
# Discovery on a fake root has no interface in cluster.network: give the documented override.
export HPCINIT_ADDRESS=${HPCINIT_ADDRESS:-198.18.0.10}
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
RS=$(RUNSTAT_CPU=1 "$T/runstat" "$RUNS" /bin/true :: "$HPCINIT" --version :: /bin/bash "$T/baseline.sh" "$T/sroot" \
	:: "$HPCINIT" apply --hostname node01 --root "$T/root" -c "$SPEC" \
	:: "$HPCINIT" check --hostname node01 --root "$T/root" -c "$SPEC") ||
	{ echo "$0: a timed run failed (runstat above); no numbers printed" >&2; exit 1; }
baseline_verified "after its timed runs"
converged "$HPCINIT" "$T/root" "after the timed runs"
mapfile -t R <<< "$RS"
read -r T_TRUE _ _ _ <<< "${R[0]}"
read -r T_SH _ _ C_SH <<< "${R[2]}"
read -r T_APPLY _ R_APPLY C_APPLY <<< "${R[3]}"
read -r T_CHECK _ R_CHECK C_CHECK <<< "${R[4]}"
show "baseline /bin/true" "${R[0]}"
show "hpcinit --version (startup floor)" "${R[1]}"
show "baseline shell memlock script" "${R[2]}"
show "hpcinit apply (converged)" "${R[3]}"
show "hpcinit check" "${R[4]}"
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
awk -v a="$T_APPLY" -v c="$T_CHECK" -v s="$T_SH" -v t="$T_TRUE" -v ra="$R_APPLY" -v rc="$R_CHECK" \
	-v ca="$C_APPLY" -v cc="$C_CHECK" -v cs="$C_SH" -v l0="$LOAD0" -v l1="$LOAD1" 'BEGIN {
	printf "ratios (wall): apply/script %.2fx, check/script %.2fx, apply//bin/true %.1fx, check//bin/true %.1fx\n", a/s, c/s, a/t, c/t
	printf "ratios (CPU, the load-proof figure): apply/script %.2fx, check/script %.2fx\n", ca/cs, cc/cs
	r = (ra > rc ? ra : rc) / 1024
	printf "goal converged apply <= 1.5x script: %s (%.2fx)\n", a / s <= 1.5 ? "met" : "NOT met", a / s
	printf "goal check <= script: %s (%.2fx)\n", c / s <= 1.0 ? "met" : "NOT met", c / s
	printf "goal peak RSS under 4 MB (apply, check): %s (%.2f MB)\n", r < 4 ? "met" : "NOT met", r
	printf "load average (1 min): %s at the start, %s at the end\n", l0, l1 }'
[ -n "${BASE:-}" ] || exit 0
# A/B: run by run, the two binaries alternate, so that load drifts reach both alike.
RS=$(RUNSTAT_CPU=1 "$T/runstat" "$RUNS" "$HPCINIT" apply --hostname node01 --root "$T/root" -c "$SPEC" \
	:: "$BASE" apply --hostname node01 --root "$T/rootb" -c "$SPEC") ||
	{ echo "$0: a timed run failed (runstat above); no ratio printed" >&2; exit 1; }
converged "$HPCINIT" "$T/root" "after the A/B runs"
converged "$BASE" "$T/rootb" "after the A/B runs"
mapfile -t R <<< "$RS"
read -r aw _ ar ac <<< "${R[0]}"
read -r bw _ br bc <<< "${R[1]}"
awk -v ac="$ac" -v bc="$bc" -v aw="$aw" -v bw="$bw" -v ar="$ar" -v br="$br" -v n="$RUNS" -v base="$BASE" 'BEGIN {
	printf "A/B converged apply, %d runs each, interleaved (BASE %s):\n", n, base
	printf "  %-6s CPU median %7.2f ms   wall median %7.2f ms   peak RSS %6.2f MB\n", "this", ac, aw, ar / 1024
	printf "  %-6s CPU median %7.2f ms   wall median %7.2f ms   peak RSS %6.2f MB\n", "BASE", bc, bw, br / 1024
	printf "ratio this/BASE: CPU %.3f, wall %.3f; CPU within 10%%: %s\n", ac / bc, aw / bw, ac / bc <= 1.10 ? "yes" : "NO" }'
