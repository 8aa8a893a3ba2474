#!/bin/bash
# mpi on 4 simulated nodes with real Open MPI over the trust hpcinit set up:
#  1. apply with verify.enable: every node gets the Ethernet profile; only the
#     leader (first hostname) runs the check, retrying until the other nodes
#     trust it, and reports per-pair latency and bandwidth from a real mpirun;
#  2. "hpcinit verify" on another node prints the same per-pair lines;
#     successive runs on one node pair the ranks by a round-robin schedule
#     (/var/lib/hpcinit/mpi-verify-round), so 3 runs on 4 nodes measure all
#     6 pairs, each run only 2 (O(N) work a run);
#  3. with max_latency_us below what the pairs measure, verify fails and
#     names the slow pair; with min_bandwidth above it, the narrow pair.
. "$TOP_SRCDIR/tests/cluster/ssh-lib.sh"

[ -x "$TOP_BUILDDIR/hpcinit-mpiverify" ] || bail_out "hpcinit-mpiverify not built (configure without Open MPI?)"
command -v mpirun >/dev/null || bail_out "mpirun not installed"
# mpirun starts the program on every node as alice: it needs a path all of them can read.
mkdir -m 0755 "$SHARED/bin"
install -m 0755 "$TOP_BUILDDIR/hpcinit-mpiverify" "$SHARED/bin/"
export HPCINIT_MPIVERIFY=$SHARED/bin/hpcinit-mpiverify

cluster_up 4 "mpi: {profile: true, verify: {enable: true}}"
NODES=$(nodes)
# shellcheck disable=SC2086
run_on 0 apply $NODES || bail_out "apply"
for n in $NODES; do
	prof=$(on "$n" cat /etc/profile.d/hpcinit-mpi.sh)
	grep -qx "export OMPI_MCA_btl_tcp_if_include=$NET" <<<"$prof" || bail_out "$n profile: $prof"
	grep -qx 'export OMPI_MCA_btl=tcp,self,vader' <<<"$prof" || bail_out "$n profile: $prof"
done
ok "Ethernet profile on every node"
for n in hps-2 hps-3 hps-4; do
	module_field "$n" mpi details | grep -q 'verify runs on the head node (or the first by name)' ||
		bail_out "$n: $(module_field "$n" mpi details)"
done
sum=$(module_field hps-1 mpi summary)
[[ $sum == "4 nodes answered; 2 pairs: max latency "*" us ("*"), min bandwidth "*" MiB/s; fabric ethernet: TCP over $NET" ]] ||
	bail_out "hps-1 mpi: $sum"
ok "apply: hps-1 ran the check: $sum"

# The pair lines a report must hold: 2 disjoint pairs for 4 nodes (one round), numbers in each.
PAIR_RE='^pair hps-[0-9] <-> hps-[0-9]: latency [0-9]+\.[0-9]+ us \(8 B [0-9]+\.[0-9]+, 512 B [0-9]+\.[0-9]+\), bandwidth [0-9]+\.[0-9] MiB/s at 4 MiB$'
pairs_ok() {
	local det n
	det=$(module_field "$1" mpi details)
	n=$(grep -cE "$PAIR_RE" <<<"$det" || true)
	[ "$n" = 2 ] || bail_out "$1: expected 2 pair lines: $det"
	# a round pairs every node with one other
	for x in $NODES; do
		grep -qE "^pair ($x <->|.* <-> $x:)" <<<"$det" || bail_out "$1: $x in no pair: $det"
	done
	grep -q 'hello from 4 ranks' <<<"$det" || bail_out "$1: hello lines: $det"
	grep -q -- '--map-by node -np 4 --bind-to none' <<<"$det" || bail_out "$1: mpirun line: $det"
	grep -q '^runuser -u alice -- mpirun ' <<<"$det" || bail_out "$1: not run as alice: $det"
	grep -qE '^round [0-2] of 3 ' <<<"$det" || bail_out "$1: no round line: $det"
	grep -E '^pair' <<<"$det" | sed -E 's/^pair (hps-[0-9]) <-> (hps-[0-9]):.*/\1 \2/' >>"$T/seen.$1"
	grep '^pair' <<<"$det"
}
pairs_ok hps-1

# 2. On demand, from another node; what a person sees: the per-pair lines.
hp hps-3 verify
[ "$(cat "$T/rc.hps-3")" = 0 ] || bail_out "verify on hps-3 exited $(cat "$T/rc.hps-3")"
pairs_ok hps-3
ok "hpcinit verify on hps-3: $(module_field hps-3 mpi summary)"
on hps-4 "$HPCINIT" verify -c "$T/node.yaml" > "$T/human" 2>&1 || bail_out "verify on hps-4: $(cat "$T/human")"
cat "$T/human"
[ "$(grep -cE "^  ${PAIR_RE#^}" "$T/human")" = 2 ] ||
	bail_out "hpcinit verify does not print 2 pair lines"
ok "hpcinit verify prints one line per pair"
# Two more runs on hps-1 (rounds 1 and 2): with the apply's round 0, every pair once.
for _ in 1 2; do
	hp hps-1 verify
	[ "$(cat "$T/rc.hps-1")" = 0 ] || bail_out "verify on hps-1 exited $(cat "$T/rc.hps-1")"
	pairs_ok hps-1
done
distinct=$(awk '{ if ($1 > $2) { t = $1; $1 = $2; $2 = t } print $1, $2 }' "$T/seen.hps-1" | sort -u | wc -l)
[ "$distinct" = 6 ] || bail_out "3 rounds on 4 nodes measured $distinct distinct pairs, not 6: $(cat "$T/seen.hps-1")"
ok "3 runs (rounds 0, 1, 2) measured all 6 pairs of 4 nodes, 2 a run"

# 3. A threshold no pair can meet: exit 1, the slow pair named.
write_spec "$T/strict.yaml" "mpi: {profile: true, verify: {max_latency_us: 0.01}}"
hp hps-2 verify -c "$T/strict.yaml"
[ "$(cat "$T/rc.hps-2")" = 1 ] || bail_out "verify above max_latency_us exited $(cat "$T/rc.hps-2")"
sum=$(module_field hps-2 mpi summary)
[[ $sum =~ ^slow\ pair\ hps-[0-9]\ \<-\>\ hps-[0-9]:\ latency\ [0-9.]+\ us\ is\ above\ max_latency_us\ 0.01\; ]] ||
	bail_out "summary: $sum"
ok "max_latency_us 0.01: exit 1, '$sum'"
write_spec "$T/wide.yaml" "mpi: {profile: true, verify: {min_bandwidth: 1T}}"
hp hps-2 verify -c "$T/wide.yaml"
[ "$(cat "$T/rc.hps-2")" = 1 ] || bail_out "verify below min_bandwidth exited $(cat "$T/rc.hps-2")"
sum=$(module_field hps-2 mpi summary)
[[ $sum =~ ^narrow\ pair\ hps-[0-9]\ \<-\>\ hps-[0-9]:\ bandwidth\ [0-9.]+\ MiB/s\ at\ 4\ MiB\ is\ below\ min_bandwidth\ 1048576.0\ MiB/s ]] ||
	bail_out "summary: $sum"
ok "min_bandwidth 1T: exit 1, '$sum'"

# 4. A node that cannot be reached: hpcinit verify says so at once (no waiting).
kill "$(cat "$SIM_STATE/nodes/hps-4/sshd.pid")"
t0=$SECONDS
hp hps-1 verify
[ "$(cat "$T/rc.hps-1")" = 1 ] || bail_out "verify with hps-4 down exited $(cat "$T/rc.hps-1")"
sum=$(module_field hps-1 mpi summary)
[[ $sum == "mpirun failed after 1 attempt: ssh: connect to host hps-4 port 22: Connection refused; fabric "* ]] ||
	bail_out "summary: $sum"
[ $((SECONDS - t0)) -lt 60 ] || bail_out "verify took $((SECONDS - t0)) s"
ok "a node down: verify fails in $((SECONDS - t0)) s: '$sum'"
done_testing
