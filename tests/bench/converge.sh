#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Cluster convergence, side by side, on N simulated nodes (tests/cluster/sim.sh):
# the time from starting until every node reaches every other node by SSH and
# every node has a complete hostfile, and the SSH connections it took.
#
#   (a) the Azure RDMA documentation's community script (baseline-user-auth.sh):
#       nmap -sn, then 2N^2 + 10N password (sshpass) sessions, checking off;
#   (b) the quick start (baseline-quickstart.sh): ssh-keyscan every node, then
#       clush -c one private key, its public key, known_hosts and a hostfile;
#   hpcinit: "hpcinit apply" (discovery: shared, ssh, hostfile; expect: N)
#       started on all N nodes at once; the time until the last one exits 0.
#
# Same nodes, same invocation; each method has its own user (hpca, hpcb, hpcu)
# so none sees another's keys; hpcinit runs last because its ssh_config.d
# drop-in (strict checking, its known_hosts) would help (b)'s verification.
# Every method is then verified (not timed): every node logs in to every node
# (itself included) with the real OpenSSH client, -o BatchMode=yes
# -o StrictHostKeyChecking=yes, and every node's hostfile lists the N nodes.
# hpcinit must pass all of it or the benchmark fails.  A baseline must pass
# it too: (b) every strict login and every hostfile, (a), which turns
# checking off, every login as the script leaves them and every node list;
# a baseline that does not is reported (why, and its output's first lines),
# no ratio is printed against it, and the benchmark fails.
#
# The nodes' names resolve before anything runs (sim.sh up --dns), as
# Azure's VNet DNS resolves its VMs' host names: both baselines address the
# nodes by name.  Without it (sim.sh's default since 306946b, a VNet whose DNS
# does not know the nodes) every scan and copy of (b) but the head's failed,
# "Could not resolve hostname", and the table showed (b) at mesh 1/1024.
# SSH connections are counted from the nodes' sshd logs ("Connection from",
# LogLevel VERBOSE): every TCP connection to any node's sshd during the phase.
#
# The password of (a) exists only in the nodes' own /etc/shadow (copy-on-write
# overlays inside the simulation); password authentication is switched on only
# in the simulated nodes' own sshd_config.  The host's accounts are not touched.
#
# Usage: tests/bench/converge.sh N [--skip-a] [--skip-b] [--repeat K]
#   N         8, 16 or 32 (1..200)
#   --repeat  hpcinit is timed K times (default 5): the first run on the nodes
#             the baselines used, the others each on a freshly made cluster;
#             the median is compared with the baselines.
# Run by hand as root (not part of make check).  KEEP=1 keeps the scratch
# directory (logs, outputs; the nodes are torn down all the same).  Nodes hpb-1.., bridge hpbbr0,
# 198.18.5.0/24.  Everything is torn down on exit, also when interrupted.
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${TOP_BUILDDIR:-$TOP/build}
HPCINIT=${HPCINIT:-$BUILD/hpcinit}
SIM=$TOP/tests/cluster/sim.sh

N=${1:-}
[[ $N =~ ^[0-9]+$ ]] && [ "$N" -ge 2 ] && [ "$N" -le 200 ] ||
	{ echo "usage: $0 N [--skip-a] [--skip-b] [--repeat K]   (N from 2 to 200)" >&2; exit 2; }
shift
RUN_A=yes RUN_B=yes REPEAT=5
while [ $# -gt 0 ]; do
	case $1 in
	--skip-a) RUN_A=no; shift ;;
	--skip-b) RUN_B=no; shift ;;
	--repeat) [[ ${2:-} =~ ^[1-9][0-9]?$ ]] || { echo "--repeat K: 1..99" >&2; exit 2; }
		REPEAT=$2; shift 2 ;;
	*) echo "unknown option $1" >&2; exit 2 ;;
	esac
done
[ "$(id -u)" = 0 ] || { echo "converge.sh: needs root (network and mount namespaces)" >&2; exit 2; }
[ -x "$HPCINIT" ] || { echo "converge.sh: no hpcinit at $HPCINIT (build first, or set HPCINIT)" >&2; exit 2; }
for t in nmap sshpass ssh-keyscan clush nodeset flock runuser; do
	command -v "$t" > /dev/null || { echo "converge.sh: $t not found" >&2; exit 2; }
done

export SIM_PREFIX=hpb- SIM_BRIDGE=hpbbr0 SIM_NET=198.18.5
exec 9> /tmp/hpcinit-sim-hpb.lock
flock -n 9 || { echo "converge.sh: another run holds /tmp/hpcinit-sim-hpb.lock" >&2; exit 1; }
T=$(mktemp -d /tmp/hpcinit-bench-converge.XXXXXX)
chmod 0755 "$T"
export SIM_STATE=$T/sim
# The libexec helpers (hpcinit-ssh for key generation) from the build tree,
# copied where the ssh module's users can run them: a tree cloned into a
# mode-0700 directory (mktemp -d) is closed to them.
if [ -z "${HPCINIT_LIBEXEC_DIR:-}" ]; then
	mkdir -m 0755 "$T/libexec"
	cp "$(dirname "$HPCINIT")"/hpcinit-* "$T/libexec/"
	export HPCINIT_LIBEXEC_DIR=$T/libexec
fi
cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	if [ -n "${BG:-}" ]; then kill "$BG" 2> /dev/null || true; wait "$BG" 2> /dev/null || true; fi
	bash "$SIM" down > /dev/null 2>&1 || true
	if [ -n "${KEEP:-}" ]; then echo "converge.sh: kept $T (KEEP set)" >&2; else rm -rf "$T"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() { echo "converge.sh: FAIL: $*" >&2; exit 1; }
# Long steps run in the background and are waited for, so that a signal
# (the traps above) is acted on at once rather than when the step ends.
BG=
waitfor() { "$@" & BG=$!; wait "$BG"; BG=; }
on() { bash "$SIM" exec "$@"; }
now() { echo "$EPOCHREALTIME"; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f", a - b }'; }
NODES=()
for i in $(seq 1 "$N"); do NODES+=("${SIM_PREFIX}$i"); done
HEAD=${NODES[0]}
PASS=$(openssl rand -hex 12)
for u in hpca hpcb hpcu; do
	! grep -q "^$u:" /etc/passwd || die "user $u exists on this machine; the benchmark makes its own"
done
cp "$TOP/tests/bench/baseline-user-auth.sh" "$TOP/tests/bench/baseline-quickstart.sh" "$T/"
chmod 0644 "$T"/baseline-*.sh

# The nodes' sshd: password authentication (for (a)) and one log line per
# connection.  The files edited are the nodes' own (overlay of /etc, checked).
# shellcheck disable=SC2016
NODE_SETUP='set -e
[ "$(stat -f -c %T /etc)" = overlayfs ] || { echo "/etc is not an overlay in $(hostname)"; exit 1; }
sed -i "s/^PasswordAuthentication no$/PasswordAuthentication yes/" /etc/ssh/sshd_config
echo "LogLevel VERBOSE" >> /etc/ssh/sshd_config
/usr/sbin/sshd -t -f /etc/ssh/sshd_config
for u in hpca hpcb hpcu; do useradd -m -s /bin/bash "$u"; done
echo "hpca:$1" | chpasswd'
sim_up() {
	mkdir -m 0755 "$T/shared"
	waitfor bash "$SIM" up "$N" --shared "$T/shared" --no-ssh-trust --dns > /dev/null 9>&-
	local n pids=()
	for n in "${NODES[@]}"; do
		on "$n" bash -c "$NODE_SETUP" _ "$PASS" > "$T/setup.$n" 2>&1 &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || die "node setup: $(cat "$T"/setup.*)"; done
	for n in "${NODES[@]}"; do
		kill -HUP "$(cat "$SIM_STATE/nodes/$n/sshd.pid")"
	done
	for n in "${NODES[@]}"; do      # restarted and listening again
		for _ in $(seq 1 200); do
			[ "$(grep -c '^Server listening' "$SIM_STATE/nodes/$n/sshd.log")" -ge 2 ] && break
			sleep 0.05
		done
		[ "$(grep -c '^Server listening' "$SIM_STATE/nodes/$n/sshd.log")" -ge 2 ] ||
			die "sshd on $n did not restart with the benchmark's settings"
	done
	# the host's own accounts stay untouched
	for u in hpca hpcb hpcu; do
		! grep -q "^$u:" /etc/passwd /etc/shadow || die "user $u appeared on the host"
	done
}
sim_down() { bash "$SIM" down > /dev/null 2>&1; rm -rf "$T/shared"; }

# SSH connections to any node's sshd so far, and logins accepted.
conns() { cat "$SIM_STATE"/nodes/*/sshd.log | grep -c 'Connection from' || true; }
logins() { cat "$SIM_STATE"/nodes/*/sshd.log | grep -cE '^Accepted (password|publickey) for ' || true; }

# mesh USER [SSH OPTIONS...]: from every node, as USER, "ssh DST hostname" to
# every node by name; prints the number of logins that answered with DST's
# name (out of N*N).  8 sources at a time.
mesh() {
	local user=$1 s running=0
	shift
	rm -f "$T"/mesh.*
	for s in "${NODES[@]}"; do
		# shellcheck disable=SC2016
		on "$s" runuser -u "$user" -- bash -c 'o=(); while [ "$1" != -- ]; do o+=("$1"); shift; done; shift
			for d in "$@"; do
				got=$(ssh -n -o BatchMode=yes -o ConnectTimeout=10 "${o[@]}" "$d" hostname 2>/dev/null) &&
					[ "$got" = "$d" ] && echo "ok $d" || echo "no $d"
			done' _ "$@" -- "${NODES[@]}" > "$T/mesh.$s" 2>&1 &
		running=$((running + 1))
		if [ "$running" -ge 8 ]; then wait -n || true; running=$((running - 1)); fi
	done
	wait || true
	cat "$T"/mesh.* | grep -c '^ok ' || true
}

# hostfiles_ok CMD...: on every node, CMD prints the node names of its hostfile;
# prints the number of nodes whose list is exactly the N nodes.
hostfiles_ok() {
	local n good=0 want
	want=$(printf '%s\n' "${NODES[@]}" | sort)
	for n in "${NODES[@]}"; do
		[ "$(on "$n" "$@" 2>/dev/null | sort)" = "$want" ] && good=$((good + 1))
	done
	echo "$good"
}

load() { cut -d' ' -f1 /proc/loadavg; }
# baseline_failed a|b WHAT LOG: a baseline that did not verify: no ratio against it, the run fails
BASE_FAILED=()
baseline_failed() {
	BASE_FAILED+=("$1")
	echo "    NOT VERIFIED: baseline ($1): $2; its output (first 5 lines of $(grep -c . "$3" || true)):"
	grep . "$3" | head -5 | sed 's/^/    | /'
}
failed_base() { [[ " ${BASE_FAILED[*]} " == *" $1 "* ]]; }
# Before each timed step: let the work of the previous step (node start-up,
# verification logins) die down, so that a method does not pay for another's.
settle() { sleep 3; }
ROWS=()
row() { # method seconds conns logins strict-mesh asis-mesh hostfiles load
	ROWS+=("$(printf '%-30s %9s %9s %8s %11s %11s %9s %6s' "$@")")
}

echo "converge.sh: $N simulated nodes ($SIM_PREFIX*, $SIM_NET.0/24) on $(nproc) cores;" \
	"load average $(cut -d' ' -f1-3 /proc/loadavg) before"
sim_up

# ---- (a) the Azure documentation's script -------------------------------
if [ "$RUN_A" = yes ]; then
	echo "(a) azure-doc script (nmap + sshpass, O(N^2) sessions): running..."
	settle
	c0=$(conns); l0=$(logins); t0=$(now)
	waitfor on "$HEAD" runuser -u hpca -- bash -c 'cd && exec timeout 3600 bash "$1" hpca "$2" "$3"' _ \
		"$T/baseline-user-auth.sh" "$PASS" "$SIM_NET" < /dev/null > "$T/a.log" 2>&1 || true
	t1=$(now); la=$(load)
	A_S=$(sub "$t1" "$t0"); A_C=$(( $(conns) - c0 )); A_L=$(( $(logins) - l0 ))
	# strict first: the script's own logins (checking off) add keys to known_hosts
	A_STRICT=$(mesh hpca -o StrictHostKeyChecking=yes)
	A_ASIS=$(mesh hpca)
	A_HF=$(hostfiles_ok runuser -u hpca -- cat /home/hpca/nodenames.txt)
	row "(a) azure-doc script" "$A_S" "$A_C" "$A_L" "$A_STRICT/$((N * N))" "$A_ASIS/$((N * N))" "$A_HF/$N" "$la"
	echo "    done in $A_S s; $A_C connections; script output: $(grep -c . "$T/a.log") lines" \
		"($(grep -ci 'denied\|error\|fail' "$T/a.log" || true) with denied/error/fail)"
	[ "$A_ASIS" = $((N * N)) ] && [ "$A_HF" = "$N" ] ||
		baseline_failed a "$A_ASIS/$((N * N)) logins as the script leaves them, node list complete on $A_HF/$N nodes" "$T/a.log"
fi

# ---- (b) the quick start -------------------------------------------------
if [ "$RUN_B" = yes ]; then
	echo "(b) quick start (ssh-keyscan + clush -c of one shared key): running..."
	# Provisioning, not timed: the "laptop" key pair, its public key authorized
	# on every node (az vm create --generate-ssh-keys), the private key on the head.
	ssh-keygen -q -t rsa -N '' -C hpcb@laptop -f "$T/laptop-key"
	for n in "${NODES[@]}"; do
		on "$n" install -d -o hpcb -g hpcb -m 0700 /home/hpcb/.ssh
		on "$n" install -o hpcb -g hpcb -m 0600 "$T/laptop-key.pub" /home/hpcb/.ssh/authorized_keys
	done
	on "$HEAD" install -o hpcb -g hpcb -m 0600 "$T/laptop-key" /home/hpcb/.ssh/id_rsa
	on "$HEAD" install -o hpcb -g hpcb -m 0644 "$T/laptop-key.pub" /home/hpcb/.ssh/id_rsa.pub
	settle
	c0=$(conns); l0=$(logins); t0=$(now)
	waitfor on "$HEAD" runuser -u hpcb -- bash -c 'cd && exec timeout 600 bash "$@"' _ \
		"$T/baseline-quickstart.sh" "${NODES[@]}" < /dev/null > "$T/b.log" 2>&1 || true
	t1=$(now); lb=$(load)
	B_S=$(sub "$t1" "$t0"); B_C=$(( $(conns) - c0 )); B_L=$(( $(logins) - l0 ))
	B_STRICT=$(mesh hpcb -o StrictHostKeyChecking=yes)
	B_HF=$(hostfiles_ok runuser -u hpcb -- cat /home/hpcb/hostfile)
	row "(b) quick start" "$B_S" "$B_C" "$B_L" "$B_STRICT/$((N * N))" "-" "$B_HF/$N" "$lb"
	echo "    done in $B_S s; $B_C connections"
	[ "$B_STRICT" = $((N * N)) ] && [ "$B_HF" = "$N" ] ||
		baseline_failed b "$B_STRICT/$((N * N)) logins with strict host-key checking, hostfile complete on $B_HF/$N nodes" "$T/b.log"
fi

# ---- hpcinit ---------------------------------------------------------------
openssl rand -hex 32 > "$T/cluster.key"
chmod 0600 "$T/cluster.key"
cat > "$T/node.yaml" <<EOF
version: 1
cluster: {name: hpb, network: $SIM_NET.0/24, secret_file: $T/cluster.key}
discovery: {method: shared, dir: $T/shared/.hpcinit, expect: $N, wait: 120s}
ssh: {users: [hpcu]}
hostfile: {}
EOF
# Inside each node: wait at the gate (a shared flock the benchmark holds
# exclusively), then run apply and record exit code, start, end, CPU.
cat > "$T/launch.sh" <<'EOF'
n=$1 T=$2 HPCINIT=$3
: > "$T/ready.$n"
flock -s "$T/gate" true
s=$EPOCHREALTIME
rc=0
"$HPCINIT" apply -c "$T/node.yaml" > "$T/out.$n" 2>&1 || rc=$?
e=$EPOCHREALTIME
times > "$T/times.$n"
echo "$rc $s $e" > "$T/res.$n"
EOF
# col_stat COLUMN med|max: of $T/timeline
col_stat() {
	sort -k"$1,$1"g "$T/timeline" | awk -v c="$1" -v w="$2" '{ v[NR] = $c }
		END { print (w == "max" ? v[NR] : v[int((NR + 1) / 2)]) }'
}
# hpcinit_run K: one timed run on the current nodes; sets H_S (seconds), H_C, H_L
hpcinit_run() {
	local k=$1 n pids=() c0 l0 t0 bad=0
	rm -f "$T"/ready.* "$T"/res.* "$T"/out.* "$T"/times.*
	exec 8> "$T/gate"
	flock -x 8
	for n in "${NODES[@]}"; do
		on "$n" bash "$T/launch.sh" "$n" "$T" "$HPCINIT" 8>&- 9>&- &
		pids+=($!)
	done
	for _ in $(seq 1 600); do
		[ "$(find "$T" -maxdepth 1 -name 'ready.*' | wc -l)" -ge "$N" ] && break
		sleep 0.05
	done
	[ "$(find "$T" -maxdepth 1 -name 'ready.*' | wc -l)" -ge "$N" ] || die "launchers did not start"
	settle                          # also lets every launcher block on the gate
	c0=$(conns); l0=$(logins)
	t0=$(now)
	flock -u 8
	for p in "${pids[@]}"; do wait "$p" || true; done
	exec 8>&-
	H_C=$(( $(conns) - c0 )); H_L=$(( $(logins) - l0 ))
	for n in "${NODES[@]}"; do
		[ -f "$T/res.$n" ] || { bad=1; echo "    $n: no result"; continue; }
		read -r rc s e < "$T/res.$n"
		[ "$rc" = 0 ] || { bad=1; echo "    $n: hpcinit apply exited $rc:"; sed 's/^/    | /' "$T/out.$n"; }
	done
	[ "$bad" = 0 ] || die "hpcinit run $k: not every node converged"
	H_S=$(cat "$T"/res.* | awk -v t0="$t0" '{ if ($3 > e) e = $3 } END { printf "%.3f", e - t0 }')
	H_CPU=$(for n in "${NODES[@]}"; do tail -1 "$T/times.$n"; done | awk '{ gsub(/s/, ""); for (i = 1; i <= 2; i++) { split($i, p, "m"); c += p[1] * 60 + p[2] } }
		END { printf "%.2f", c }')
	H_DISC=$(cat "$T"/out.* | awk '$1 == "discovery" { sub(/ms$/, "", $3); print $3 }' | sort -n |
		awk '{ v[NR] = $1 } END { printf "%d/%d/%d", v[1], v[int((NR + 1) / 2)], v[NR] }')
	H_WAITED=$(grep -l '^discovery .*after waiting' "$T"/out.* | wc -l)
	# where the time goes: each node's start, end of its discovery step and
	# exit, from t0 (discovery's own time as the node reported it)
	for n in "${NODES[@]}"; do
		read -r _ s e < "$T/res.$n"
		d=$(awk '$1 == "discovery" { sub(/ms$/, "", $3); print $3 }' "$T/out.$n")
		awk -v s="$s" -v e="$e" -v d="$d" -v t0="$t0" 'BEGIN {
			printf "%.3f %.3f %.0f %.3f\n", s - t0, s - t0 + d / 1000, (e - s) * 1000 - d, e - t0 }'
	done > "$T/timeline"
	H_TL=$(printf 'last start +%.3f s; discovery done: median +%.3f, last +%.3f s; after discovery (ssh, hostfile, exit): median %d, max %d ms' \
		"$(col_stat 1 max)" "$(col_stat 2 med)" "$(col_stat 2 max)" "$(col_stat 3 med)" "$(col_stat 3 max)")
	H_ALL+=("$H_S")
	echo "    run $k: all $N exited 0 after $H_S s; $H_C SSH connections;" \
		"CPU (user+sys, all nodes) $H_CPU s; discovery min/median/max $H_DISC ms," \
		"$H_WAITED nodes waited; load $(load)"
	echo "      timeline: $H_TL"
}

echo "hpcinit apply on all $N nodes at once (discovery shared, ssh, hostfile; expect $N): $REPEAT runs"
H_ALL=()
hpcinit_run 1
H1_S=$H_S H1_C=$H_C H1_L=$H_L
# verify, on the nodes of the first run
H_STRICT=$(mesh hpcu -o StrictHostKeyChecking=yes)
H_HF=$(hostfiles_ok awk '!/^#/ { print $1 }' /etc/hpcinit/hostfile.openmpi)
H_HFP=$(hostfiles_ok awk '!/^#/' /etc/hpcinit/hostfile.plain)
[ "$H_STRICT" = $((N * N)) ] || { cat "$T"/mesh.* | grep '^no' | head; die "hpcinit: $H_STRICT/$((N * N)) logins with strict host-key checking"; }
[ "$H_HF" = "$N" ] && [ "$H_HFP" = "$N" ] || die "hpcinit: complete hostfiles on $H_HF (openmpi) and $H_HFP (plain) of $N nodes"
echo "    verified: $H_STRICT/$((N * N)) logins with StrictHostKeyChecking=yes, BatchMode=yes;" \
	"hostfile.openmpi and hostfile.plain list all $N nodes on $H_HF nodes"
for k in $(seq 2 "$REPEAT"); do
	sim_down
	sim_up
	hpcinit_run "$k"
	[ "$H_C" = 0 ] || die "hpcinit run $k opened $H_C SSH connections"
done
H_MED=$(printf '%s\n' "${H_ALL[@]}" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
row "hpcinit apply (run 1)" "$H1_S" "$H1_C" "$H1_L" "$H_STRICT/$((N * N))" "-" "$H_HF/$N" "-"
[ "$REPEAT" -gt 1 ] && row "hpcinit apply (median of $REPEAT)" "$H_MED" "0" "0" "-" "-" "-" "-"

echo
echo "converge.sh $N: results (seconds: start to last node done; conns: TCP connections to any sshd;"
echo "logins: accepted authentications; mesh: node->node logins that worked out of N*N, by name)"
printf '%-30s %9s %9s %8s %11s %11s %9s %6s\n' method seconds conns logins "mesh strict" "mesh as-is" hostfiles load
printf '%s\n' "${ROWS[@]}"
echo "hpcinit runs (s): ${H_ALL[*]}"
A_R=${A_S:-} B_R=${B_S:-}
failed_base a && A_R=
failed_base b && B_R=
awk -v h="$H_MED" -v a="$A_R" -v b="$B_R" -v n="$N" -v c="$H1_C" 'BEGIN {
	if (a != "") printf "ratio (a)/hpcinit: %.0fx\n", a / h
	if (b != "") printf "ratio (b)/hpcinit: %.1fx\n", b / h
	if (n == 32) printf "goal: 32 nodes in 0.5 s or less: %s (median %.3f s); no SSH session: %s\n",
		h <= 0.5 ? "met" : "NOT met", h, c == 0 ? "met" : "NOT met"
	else printf "SSH connections opened by hpcinit: %d\n", c }'
echo "note: $N nodes share $(nproc) cores with everything else on this machine (load average" \
	"$(cut -d' ' -f1-3 /proc/loadavg) now); wall times are contended."
for m in "${BASE_FAILED[@]}"; do
	echo "converge.sh: FAIL: baseline ($m) did not verify (see NOT VERIFIED above); no ratio is printed against it" >&2
done
[ ${#BASE_FAILED[@]} -eq 0 ]
