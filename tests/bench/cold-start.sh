#!/bin/bash
# SPDX-License-Identifier: MIT
#
# One node's cold start, its CPU split into a fixed part and a per-record term (issue 37: "a
# node's CPU for a cold-start apply within 1.5x the process-start floor plus a linear
# per-record term you measure and publish").  One simulated node (tests/cluster/sim.sh, its
# disk a journaled ext4: tests/bench/node-disk.sh) and a real 3-member etcd; before each apply
# the rendezvous holds R records of other nodes (tests/bench/gen-records: the real format,
# HMAC-signed; in etcd, or files in the shared directory) and the node has none of its own
# state: nothing under /run/hpcinit or /var/lib/hpcinit, no hostfiles, /etc/hosts as before the
# first run.  "hpcinit apply" (discovery with expect R+1, hostfile) then finds every record at
# once: no waiting, no other node's processes on the cores, only this node's work.  Its CPU
# (the apply, its children and helpers, and nsenter into the node) is bash's count of its
# waited-for children.  The floor in the same runs: "hpcinit --version" started the same way.
# Every apply must exit 0 with a hostfile of R+1 hosts, else the bench fails and prints no
# figure.  With BASELINE=<an older hpcinit binary> each run is made with both, interleaved,
# and the ratio printed; BASELINE_LIBEXEC=<its build directory> gives it its own helpers
# (hpcinit-etcd), else it runs this build's.
# A simulated node's /etc and /var/lib are overlays of this machine's (tests/cluster/sim.sh),
# and an overlay adds its own work to every file operation there (0.4-0.8 ms of a cold start:
# docs/performance.md); a VM has none.  So the bench copies them onto the node disk and mounts
# the copies in the node (BENCH_ETC=plain, the default); BENCH_ETC=overlay keeps the overlays.
# PERF=1: each apply under "perf record -F 25000 -g" (this binary only, no BASELINE); printed,
# in place of the CPU figures (perf's own cost inflates them), the samples a cold start by
# process (the agent, the step's child, the etcd helper: by PID order) and, for each process,
# where they fall: the system call or page fault in the sample's kernel call chain, or user space.
# PERF_KEEP=DIR keeps the perf.data files there (METHOD.R.RUN.data) for "perf report -i".
# STAT=1: each apply and each floor run under "perf stat" inside the node, so nsenter is not
# in the count: hpcinit's own CPU (task-clock of the agent, its children and helpers; medians),
# its page faults, context switches, CPU migrations and wall time (means); printed in place of bash's
# figures (which would count perf's own start): each method's figures at each R, the fixed part
# over the floor, the per-record term, and with BASELINE the ratios.  For counting and for
# comparing binaries, not for the goal: the fixed part by task-clock and by bash's count of the
# same applies was 1.7 ms apart in one hour and 0.2 ms in another (docs/performance.md).  The
# goal is judged by the default figures.
# Printed, for each method (and binary): the mean CPU at each R, the fixed part (at the
# smallest R, less the floor) and the per-record term (the slope between the smallest and
# the largest R, microseconds a record).
# Usage: tests/bench/cold-start.sh [RUNS] [R...]   (root; by hand, not by make check;
#        default 30 runs, R 0 and 127)
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${TOP_BUILDDIR:-$TOP/build}
RUNS=${1:-30}
shift || true
SIZES=("$@")
[ "${#SIZES[@]}" -gt 1 ] || SIZES=(0 127)
[[ $RUNS =~ ^[1-9][0-9]*$ ]] || { echo "usage: $0 [RUNS] [R...] (at least two R)" >&2; exit 2; }
for r in "${SIZES[@]}"; do [[ $r =~ ^[0-9]+$ ]] || { echo "usage: $0 [RUNS] [R...]" >&2; exit 2; }; done
export TOP_SRCDIR=$TOP TOP_BUILDDIR=$BUILD HPCINIT=${HPCINIT:-$BUILD/hpcinit}
export HPCINIT_LIBEXEC_DIR=${HPCINIT_LIBEXEC_DIR:-$BUILD}
GEN=$BUILD/tests/bench/gen-records
[ -x "$GEN" ] || make -s -C "$BUILD" tests/bench/gen-records
BINS=("$HPCINIT")
PERF_CMD=()
if [ "${PERF:-0}" = 1 ]; then
	command -v perf >/dev/null || { echo "PERF=1: perf is not installed (linux-perf)" >&2; exit 2; }
	[ -z "${BASELINE:-}" ] || { echo "PERF=1 profiles this binary only: no BASELINE" >&2; exit 2; }
fi
[ -z "${BASELINE:-}" ] || { [ -x "$BASELINE" ] || { echo "BASELINE $BASELINE: not an executable" >&2; exit 2; }; BINS+=("$BASELINE"); }
SIM_PREFIX=bcs SIM_NET=198.19.44
. "$TOP/tests/cluster/lib.sh"
. "$TOP/tests/cluster/etcd-lib.sh"
. "$TOP/tests/bench/node-disk.sh"
. "$TOP/tests/bench/etcd-bench-lib.sh"   # child_cpu
node_disk_sim
[ "${PERF:-0}" != 1 ] || mkdir -p "$T/perf"
if [ "${STAT:-0}" = 1 ]; then
	command -v perf >/dev/null || { echo "STAT=1: perf is not installed (linux-perf)" >&2; exit 2; }
	[ "${PERF:-0}" != 1 ] || { echo "STAT=1 and PERF=1: one or the other" >&2; exit 2; }
	mkdir -p "$T/stat"
fi
stat_cmd() { # stat_cmd NAME: PERF_CMD for one run counted into $T/stat/NAME (STAT=1)
	PERF_CMD=()
	[ "${STAT:-0}" != 1 ] || PERF_CMD=(perf stat -x, -o "$T/stat/$1" -e task-clock,page-faults,context-switches,cpu-migrations,duration_time --)
}

sim up 1 --no-ssh-trust --shared "$SHARED" >/dev/null
etcd_up
n=$(node 1)
IN=(nsenter --net="/run/netns/$n" --uts="$SIM_STATE/ns/$n.uts" --mount="$SIM_STATE/ns/$n.mnt" --)
# The records' addresses (gen-records: 198.19.<i/250>.<i%250+1>) are in the cluster's network.
for r in "${SIZES[@]}"; do
	etcd_spec 60s $((r + 1)) | sed "s|network: $SIM_NET.0/24|network: 198.19.0.0/16|" >"$T/etcd.$r.yaml"
	spec 5m $((r + 1)) | sed "s|network: $SIM_NET.0/24|network: 198.19.0.0/16|" >"$T/shared.$r.yaml"
done
case ${BENCH_ETC:-plain} in
overlay) ETC_TXT="the node's /etc and /var/lib: overlays of this machine's (BENCH_ETC=overlay)" ;;
plain)
	mkdir -p "$T/disk/plain"
	"${IN[@]}" sh -c 'cp -a /etc "$0/etc" && cp -a /var/lib "$0/varlib" && mount --bind "$0/etc" /etc &&
		mount --bind "$0/varlib" /var/lib' "$T/disk/plain"
	ETC_TXT="the node's /etc and /var/lib: copies on the node disk, no overlay (BENCH_ETC=overlay for the overlays)" ;;
*) echo "BENCH_ETC: overlay or plain" >&2; exit 2 ;;
esac
"${IN[@]}" install -D -m 0600 "$T/cluster.key" /etc/hpcinit/cluster.key
"${IN[@]}" cat /etc/hosts >"$T/hosts.orig"

# cold METHOD R: the node as before its first run, the rendezvous holding R records of others
cold() {
	"${IN[@]}" sh -c 'rm -rf /run/hpcinit /var/lib/hpcinit /etc/hpcinit/hostfile.* \
		/etc/openmpi/openmpi-default-hostfile /etc/clustershell/groups.d/hpcinit.yaml \
		/var/lib/prometheus/node-exporter/hpcinit.prom' 2>/dev/null
	"${IN[@]}" sh -c 'cat > /etc/hosts' <"$T/hosts.orig"
	"${IN[@]}" install -m 0644 "$T/$1.$2.yaml" /etc/hpcinit/node.yaml
	rm -rf "$SHARED/.hpcinit"
	etcdctl_ del --prefix /hpcinit/ >/dev/null
	if [ "$1" = shared ]; then
		# the tree as every node but the cluster's first finds it, at every R (at 0 too: the
		# node made it when R was 0, three mkdirs the others never pay, and the slope was off)
		mkdir -p "$SHARED/.hpcinit/$CLUSTER/nodes"
		chmod 0755 "$SHARED/.hpcinit" "$SHARED/.hpcinit/$CLUSTER"
	fi
	[ "$2" -gt 0 ] || return 0
	if [ "$1" = etcd ]; then
		"$GEN" -s "$T/cluster.key" -n 198.19 -e "/hpcinit/$CLUSTER/nodes/" -u "$(etcd_client_url 1)/v3/kv/put" \
			"$T" "$CLUSTER" "$2" >"$T/put.cfg"
		ip netns exec "$ETCD_NS" curl -sf -K "$T/put.cfg" >/dev/null
	else
		"$GEN" -s "$T/cluster.key" -n 198.19 "$SHARED/.hpcinit/$CLUSTER/nodes" "$CLUSTER" "$2"
	fi
}

declare -A SUM
FLOOR=0
for i in $(seq 1 "$RUNS"); do
	for r in "${SIZES[@]}"; do
		for m in etcd shared; do
			for b in "${!BINS[@]}"; do
				cold "$m" "$r"
				child_cpu
				c0=$CHILD_CPU
				lx=$HPCINIT_LIBEXEC_DIR
				[ "$b" = 0 ] || lx=${BASELINE_LIBEXEC:-$lx}
				stat_cmd "$m.$r.$b.$i"
				[ "${PERF:-0}" != 1 ] || PERF_CMD=(perf record -F 25000 -g -q -o "$T/perf/$m.$r.$i.data" --)
				if ! HPCINIT_LIBEXEC_DIR=$lx "${IN[@]}" "${PERF_CMD[@]}" "${BINS[$b]}" apply >"$T/out" 2>&1; then
					echo "cold-start.sh: apply ($m, $r records, ${BINS[$b]}) failed; no figures:" >&2
					sed 's/^/  | /' "$T/out" >&2
					exit 1
				fi
				child_cpu
				SUM[$m.$r.$b]=$((${SUM[$m.$r.$b]:-0} + CHILD_CPU - c0))
				got=$("${IN[@]}" grep -vc '^#' /etc/hpcinit/hostfile.plain 2>/dev/null || true)
				if [ "$got" != $((r + 1)) ]; then
					echo "cold-start.sh: the hostfile ($m, $r records, ${BINS[$b]}) lists ${got:-no} hosts (none written?), not $((r + 1)); no figures" >&2
					exit 1
				fi
			done
		done
	done
	[ "${PERF:-0}" != 1 ] || continue       # no CPU figures under perf: no floor either
	child_cpu
	c0=$CHILD_CPU
	stat_cmd "floor.x.0.$i"
	"${IN[@]}" "${PERF_CMD[@]}" "$HPCINIT" --version >/dev/null
	child_cpu
	FLOOR=$((FLOOR + CHILD_CPU - c0))
done

echo "one node's cold start, $RUNS runs of each, $(nproc) cores; $(cat "$T/disk.txt"); $ETC_TXT"
if [ "${PERF:-0}" = 1 ]; then
	echo "PERF=1: samples a cold start at 25 kHz, by process and where they fall (no CPU figures: perf's own cost is in them)"
	for m in etcd shared; do
		for r in "${SIZES[@]}"; do
			for f in "$T/perf/$m.$r".*.data; do
				perf script -i "$f" -F pid,ip,sym 2>/dev/null | awk '
				# a sample: its PID alone on a line, then its call chain (kernel frames first)
				function flush() { if (pid != "") { if (key == "") key = kern ? "kernel, other" : "user space"; n[pid]++; c[pid, key]++ } pid = ""; key = ""; kern = 0 }
				NF == 1 && $1 ~ /^[0-9]+$/ { flush(); pid = $1; next }
				NF == 0 { flush(); next }
				pid != "" { if ($1 ~ /^ffff/) kern = 1
					if ($2 ~ /^(__x64_sys_|__do_sys_)/) { key = $2; sub(/^__(x64|do)_sys_/, "", key) }
					else if (key == "" && $2 ~ /^(asm_)?exc_page_fault$/) key = "page faults" }
				END { flush(); for (p in n) print "n", p, n[p]; for (k in c) { split(k, x, SUBSEP); print "c", x[1], c[k], x[2] } }'
				echo "end"
			done | awk -v m="$m" -v r="$r" '
			function role(i) { return i == 1 ? "agent" : i == 2 ? "step'"'"'s child" : i == 3 ? "etcd helper" : "other" }
			# one run: its PIDs in order are the agent, the child, the helper
			$1 == "n" { pids[$2] = $3; next }
			$1 == "c" { k = $2; $1 = ""; $2 = ""; v = $3; $3 = ""; sub(/^ +/, ""); cat[k, $0] += v; next }
			$1 == "end" { np = 0; for (p in pids) ord[++np] = p + 0
				for (i = 1; i <= np; i++) for (j = i + 1; j <= np; j++) if (ord[j] < ord[i]) { t = ord[i]; ord[i] = ord[j]; ord[j] = t }
				for (i = 1; i <= np; i++) { R = role(i); tot[R] += pids[ord[i]]; seen[R] = 1
					for (kk in cat) { split(kk, x, SUBSEP); if (x[1] == ord[i]) share[R, x[2]] += cat[kk] } }
				runs++; delete pids; delete cat; delete ord; next }
			END { line = m ", " r " records, " runs " runs:"
				for (i = 1; i <= 4; i++) if (role(i) in seen) line = line sprintf(" %s %.0f,", role(i), tot[role(i)] / runs)
				sub(/,$/, "", line); print line
				for (i = 1; i <= 4; i++) { R = role(i); if (!(R in seen)) continue
					nk = 0; for (kk in share) { split(kk, x, SUBSEP); if (x[1] == R) { nk++; key[nk] = x[2]; val[nk] = share[kk] } }
					for (a = 1; a <= nk; a++) for (b = a + 1; b <= nk; b++) if (val[b] > val[a]) { t = val[a]; val[a] = val[b]; val[b] = t; t = key[a]; key[a] = key[b]; key[b] = t }
					out = "  " R ":"; for (a = 1; a <= nk && a <= 8; a++) out = out sprintf(" %s %.0f%%,", key[a], 100 * val[a] / tot[R])
					sub(/,$/, "", out); print out; delete key; delete val } }'
		done
	done
	[ -z "${PERF_KEEP:-}" ] || { mkdir -p "$PERF_KEEP" && cp "$T"/perf/*.data "$PERF_KEEP"/ && echo "PERF_KEEP: perf.data files in $PERF_KEEP"; }
	exit 0
fi
lo=${SIZES[0]} hi=${SIZES[${#SIZES[@]} - 1]}
if [ "${STAT:-0}" = 1 ]; then
	echo "STAT=1: perf stat inside the node (no nsenter in the count), medians of $RUNS runs"
	# each file: KEY.R.B.RUN; one line each: KEY.R.B, task-clock (ms), faults, switches, migrations, wall (ms)
	for f in "$T"/stat/*; do
		awk -F, -v k="${f##*/}" '$3 == "task-clock" { t = $1 } $3 == "page-faults" { p = $1 }
			$3 == "context-switches" { cs = $1 } $3 == "cpu-migrations" { mg = $1 } $3 == "duration_time" { w = $1 / 1e6 }
			END { if (t == "" || p == "" || cs == "" || mg == "" || w == "") exit 1
				sub(/\.[0-9]+$/, "", k); print k, t, p, cs, mg, w }' "$f" ||
			{ echo "cold-start.sh: $f holds no count; no figures" >&2; exit 1; }
	done | sort -k1,1 -k2,2n | awk -v lo="$lo" -v hi="$hi" -v nb="${#BINS[@]}" -v base="${BASELINE:-}" '
	function med(k,   m) { m = n[k]; return m % 2 ? v[k, (m + 1) / 2] : (v[k, m / 2] + v[k, m / 2 + 1]) / 2 }
	{ k = $1; n[k]++; v[k, n[k]] = $2; pf[k] += $3; cs[k] += $4; mg[k] += $5; wall[k] += $6 }
	function counts(k) { return sprintf("%.0f faults, %.1f switches, %.1f migrations, wall %.2f ms",
		pf[k] / n[k], cs[k] / n[k], mg[k] / n[k], wall[k] / n[k]) }
	END {
		fl = med("floor.x.0")
		printf "floor: \"hpcinit --version\": %.3f ms, %s\n", fl, counts("floor.x.0")
		for (mi = 1; mi <= 2; mi++) { m = mi == 1 ? "etcd" : "shared"
			for (b = 0; b < nb; b++) {
				a = med(m "." lo "." b); z = med(m "." hi "." b)
				line = m (b ? " (baseline " base ")" : "")
				line = line sprintf("; %d records: %.3f ms, %s", lo, a, counts(m "." lo "." b))
				line = line sprintf("; %d records: %.3f ms, %s", hi, z, counts(m "." hi "." b))
				line = line sprintf("; fixed part %.3f ms over the floor", a - fl)
				if (z < a) line = line "; per record: not measured (noise)"
				else line = line sprintf("; per record %.1f us", (z - a) / (hi - lo) * 1000)
				print line }
			if (nb > 1) for (ri = 0; ri < 2; ri++) { r = ri ? hi : lo
				printf "%s, %d records: this binary / baseline = %.2fx (medians)\n", m, r, med(m "." r ".0") / med(m "." r ".1") } }
	}'
	exit 0
fi
awk -v f="$FLOOR" -v k="$RUNS" 'BEGIN { printf "floor: \"hpcinit --version\" the same way: %.2f ms\n", f / k }'
for m in etcd shared; do
	for b in "${!BINS[@]}"; do
		line="$m"
		[ "$b" = 0 ] || line+=" (baseline ${BINS[$b]})"
		for r in "${SIZES[@]}"; do
			line+=$(awk -v s="${SUM[$m.$r.$b]}" -v k="$RUNS" -v r="$r" 'BEGIN { printf "; %d records: %.2f ms", r, s / k }')
		done
		# a slope that comes out negative is the noise of too few runs or records (bash counts
		# CPU in ms), not a cost: then no figure
		line+=$(awk -v a="${SUM[$m.$lo.$b]}" -v z="${SUM[$m.$hi.$b]}" -v f="$FLOOR" -v k="$RUNS" -v lo="$lo" -v hi="$hi" 'BEGIN {
			printf "; fixed part %.2f ms over the floor; ", (a - f) / k
			if (z < a) printf "per record: not measured (%d records cost less than %d: noise; more runs or records)", hi, lo
			else printf "per record %.1f us", (z - a) / k / (hi - lo) * 1000 }')
		echo "$line"
	done
	if [ "${#BINS[@]}" -gt 1 ]; then
		for r in "${SIZES[@]}"; do
			awk -v a="${SUM[$m.$r.0]}" -v z="${SUM[$m.$r.1]}" -v r="$r" -v m="$m" 'BEGIN {
				printf "%s, %d records: this binary / baseline = %.2fx\n", m, r, a / z }'
		done
	fi
done
