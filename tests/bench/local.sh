#!/bin/bash
# Local speed and memory of one node's run: median wall time and peak RSS of
# `hpcinit apply` (converged, nothing to change) and `hpcinit check`, and of a
# first apply on an empty root, on a fake root with the full example spec.
# Baselines in the same run: /bin/true (process start floor) and a shell script
# that writes the same memlock files the way image scripts do (azhpc-images style).
# Goal (issue 3): under 10 ms and under 4 MB a run.
# Usage: tests/bench/local.sh [RUNS]   (run by hand; not part of make check)
# BASE=/path/to/other/build/hpcinit adds an A/B of the converged apply: this
# binary against BASE (e.g. a build of an older commit, its helpers beside it),
# each on its own converged copy of the root, in interleaved rounds of RUNS/10,
# CPU (user+system, helpers included) and wall medians and the peak RSS of
# each, and the ratios.  BASE's converged apply is verified as this one's is;
# if it is not the run meant, no ratio is printed and the benchmark fails.
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
trap 'rm -rf "$T"' EXIT
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
cat >"$T/baseline.sh" <<'SH'
#!/bin/bash
# What image scripts do: write limits and systemd drop-ins unconditionally.
R=$1
mkdir -p "$R/etc/security/limits.d" "$R/etc/systemd/system.conf.d"
printf '* soft memlock unlimited\n* hard memlock unlimited\n' >"$R/etc/security/limits.d/90-hpcinit.conf"
printf '[Manager]\nDefaultLimitMEMLOCK=infinity\n' >"$R/etc/systemd/system.conf.d/90-hpcinit.conf"
grep -q pam_limits "$R/etc/pam.d/common-session"
SH
# Converge once, and verify the state the timed runs start from: every step ok
# or skipped but rdma, degraded because this machine has no RDMA device (exit 3).
# Anything else is not the run this benchmark means to time: it stops here.
[ -z "${BASE:-}" ] || cp -a "$T/root" "$T/rootb"
converge() { # converge BINARY ROOT: apply twice, and the second must be the converged run
	local bin=$1 root=$2 rc=0 bad
	"$bin" apply --hostname node01 --root "$root" -c "$SPEC" >/dev/null 2>&1 || true
	"$bin" apply --hostname node01 --root "$root" -c "$SPEC" >"$T/converge.out" 2>&1 || rc=$?
	bad=$(awk '/^MODULE/ { f = 1; next } f && NF == 0 { exit }
		f && $2 != "ok" && $2 != "skipped" && !($1 == "rdma" && $2 == "degraded") { print $1 " " $2 }' "$T/converge.out")
	if { [ "$rc" != 0 ] && [ "$rc" != 3 ]; } || [ -n "$bad" ]; then
		echo "local.sh: FAIL: the converged apply of $bin is not the one measured (exit $rc; ${bad:-no step list}):" >&2
		sed 's/^/  | /' "$T/converge.out" >&2
		exit 1
	fi
}
converge "$HPCINIT" "$T/root"
[ -z "${BASE:-}" ] || converge "$BASE" "$T/rootb"
# ... so exit 3 (degraded: rdma) is what a timed apply or check may end with
export RUNSTAT_OK=3
cc -O2 -o "$T/runstat" "$TOP/tests/bench/runstat.c"
fresh() {
	rm -rf "$T/fresh"; cp -a "$T/root" "$T/fresh"
	rm -rf "$T/fresh/etc/security/limits.d"/* "$T/fresh/etc/systemd" "$T/fresh/run/hpcinit" \
		"$T/fresh/var/lib/hpcinit" "$T/fresh/etc/hpcinit"/hostfile.* "$T/fresh/etc/clustershell"
}
row() { # row NAME N PROG ARGS... -> prints and sets MED RSS
	local name=$1; shift
	RS=$("$T/runstat" "$@") || { echo "$0: a timed run failed (runstat above); no numbers printed for it" >&2; exit 1; }
	read -r MED P90 RSS <<< "$RS"
	printf '%-32s median %7.2f ms   p90 %7.2f ms   peak RSS %6.2f MB\n' "$name" "$MED" "$P90" \
		"$(echo "$RSS / 1024" | bc -l)"
}
echo "hpcinit local benchmark: $RUNS runs each, spec $(basename "$SPEC"), $(nproc) cores"
row "baseline /bin/true" "$RUNS" /bin/true; T_TRUE=$MED
row "hpcinit --version (startup floor)" "$RUNS" "$HPCINIT" --version; T_VER=$MED
row "baseline shell memlock script" "$RUNS" /bin/bash "$T/baseline.sh" "$T/root"; T_SH=$MED
row "hpcinit apply (converged)" "$RUNS" "$HPCINIT" apply --hostname node01 --root "$T/root" -c "$SPEC"; T_APPLY=$MED; R_APPLY=$RSS
row "hpcinit check" "$RUNS" "$HPCINIT" check --hostname node01 --root "$T/root" -c "$SPEC"; T_CHECK=$MED; R_CHECK=$RSS
# first apply on an empty root: one run at a time, the root rebuilt in between
tot=0; maxr=0; times=()
for i in $(seq 1 "$RUNS"); do
	fresh
	RS=$("$T/runstat" 1 "$HPCINIT" apply --hostname node01 --root "$T/fresh" -c "$SPEC") || { echo "$0: a timed run failed (runstat above); no numbers printed for it" >&2; exit 1; }
	read -r m _ r <<< "$RS"
	times+=("$m"); [ "$r" -gt "$maxr" ] && maxr=$r
done
T_FIRST=$(printf '%s\n' "${times[@]}" | sort -g | sed -n "$((RUNS / 2 + 1))p")
printf '%-32s median %7.2f ms                    peak RSS %6.2f MB\n' "hpcinit apply (fresh root)" "$T_FIRST" "$(echo "$maxr / 1024" | bc -l)"
awk -v a="$T_APPLY" -v c="$T_CHECK" -v s="$T_SH" -v t="$T_TRUE" -v ra="$R_APPLY" -v rc="$R_CHECK" 'BEGIN {
	printf "ratios: apply/shell-script %.2fx, check/shell-script %.2fx, apply//bin/true %.1fx\n", a/s, c/s, a/t
	m = a > c ? a : c; r = ra > rc ? ra : rc
	printf "goal under 10 ms a run: %s (%.2f ms); under 4 MB: %s (%.2f MB)\n", m < 10 ? "met" : "NOT met", m, r/1024 < 4 ? "met" : "NOT met", r/1024 }'
[ -n "${BASE:-}" ] || exit 0
# A/B: rounds alternate the two binaries so that load drifts reach both alike.
ROUND=$(( RUNS / 10 > 5 ? RUNS / 10 : 5 ))
rounds=10; a_cpu=(); b_cpu=(); a_wall=(); b_wall=(); a_rss=0; b_rss=0
for i in $(seq 1 "$rounds"); do
	for w in a b; do
		if [ $w = a ]; then bin=$HPCINIT root=$T/root; else bin=$BASE root=$T/rootb; fi
		RS=$(RUNSTAT_CPU=1 "$T/runstat" "$ROUND" "$bin" apply --hostname node01 --root "$root" -c "$SPEC") ||
			{ echo "$0: a timed run of $bin failed (runstat above); no ratio printed" >&2; exit 1; }
		read -r m _ r c <<< "$RS"
		if [ $w = a ]; then a_wall+=("$m"); a_cpu+=("$c"); [ "$r" -le "$a_rss" ] || a_rss=$r
		else b_wall+=("$m"); b_cpu+=("$c"); [ "$r" -le "$b_rss" ] || b_rss=$r; fi
	done
done
med() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
awk -v ac="$(med "${a_cpu[@]}")" -v bc="$(med "${b_cpu[@]}")" -v aw="$(med "${a_wall[@]}")" -v bw="$(med "${b_wall[@]}")" \
	-v ar="$a_rss" -v br="$b_rss" -v n="$((rounds * ROUND))" -v base="$BASE" 'BEGIN {
	printf "A/B converged apply, %d runs each in %d interleaved rounds (BASE %s):\n", n, 10, base
	printf "  %-6s CPU median %7.2f ms   wall median %7.2f ms   peak RSS %6.2f MB\n", "this", ac, aw, ar / 1024
	printf "  %-6s CPU median %7.2f ms   wall median %7.2f ms   peak RSS %6.2f MB\n", "BASE", bc, bw, br / 1024
	printf "ratio this/BASE: CPU %.3f, wall %.3f; CPU within 10%%: %s\n", ac / bc, aw / bw, ac / bc <= 1.10 ? "yes" : "NO" }'
