#!/bin/bash
# mpi on 4 simulated nodes with real Open MPI over the trust hpcinit set up:
#  1. apply with verify.enable: every node gets the Ethernet profile; only the
#     leader (first hostname) runs the check, retrying until the other nodes
#     trust it, and reports per-pair latency and bandwidth from a real mpirun;
#  2. "hpcinit verify" on another node prints the same per-pair lines;
#  3. with max_latency_us below what the pairs measure, verify fails and
#     names the slow pair.
. "$TOP_SRCDIR/tests/cluster/ssh-lib.sh"

[ -x "$TOP_BUILDDIR/hpcinit-mpiverify" ] || fail "hpcinit-mpiverify not built (configure without Open MPI?)"
command -v mpirun >/dev/null || fail "mpirun not installed"
# mpirun starts the program on every node as alice: it needs a path all of them can read.
mkdir -m 0755 "$SHARED/bin"
install -m 0755 "$TOP_BUILDDIR/hpcinit-mpiverify" "$SHARED/bin/"
export HPCINIT_MPIVERIFY=$SHARED/bin/hpcinit-mpiverify

cluster_up 4 "mpi: {profile: true, verify: {enable: true}}"
NODES=$(nodes)
# shellcheck disable=SC2086
run_on 0 apply $NODES || fail "apply"
for n in $NODES; do
	prof=$(on "$n" cat /etc/profile.d/hpcinit-mpi.sh)
	grep -qx "export OMPI_MCA_btl_tcp_if_include=$NET" <<<"$prof" || fail "$n profile: $prof"
	grep -qx 'export OMPI_MCA_btl=tcp,self,vader' <<<"$prof" || fail "$n profile: $prof"
done
ok "Ethernet profile on every node"
for n in hps-2 hps-3 hps-4; do
	module_field "$n" mpi details | grep -q 'verify runs on the head node (or the first by name)' ||
		fail "$n: $(module_field "$n" mpi details)"
done
sum=$(module_field hps-1 mpi summary)
[[ $sum == "4 nodes answered; 3 pairs: max latency "*" us ("*"), min bandwidth "*" MiB/s; fabric ethernet: TCP over $NET" ]] ||
	fail "hps-1 mpi: $sum"
ok "apply: hps-1 ran the check: $sum"

# The pair lines a report must hold: 3 neighbour pairs for 4 nodes, numbers in each.
pairs_ok() {
	local det n
	det=$(module_field "$1" mpi details)
	n=$(grep -cE '^pair hps-[0-9] <-> hps-[0-9]: latency [0-9]+\.[0-9]+ us, bandwidth [0-9]+\.[0-9] MiB/s$' <<<"$det" || true)
	[ "$n" = 3 ] || fail "$1: expected 3 pair lines: $det"
	# neighbours in rank order (rank 0 is where mpirun runs): every node in a pair
	for x in $NODES; do
		grep -qE "^pair ($x <->|.* <-> $x:)" <<<"$det" || fail "$1: $x in no pair: $det"
	done
	grep -q 'hello from 4 ranks' <<<"$det" || fail "$1: hello lines: $det"
	grep -q -- '--map-by node -np 4 --bind-to none' <<<"$det" || fail "$1: mpirun line: $det"
	grep -q '^runuser -u alice -- mpirun ' <<<"$det" || fail "$1: not run as alice: $det"
	grep '^pair' <<<"$det"
}
pairs_ok hps-1

# 2. On demand, from another node.
hp hps-3 verify
[ "$(cat "$T/rc.hps-3")" = 0 ] || fail "verify on hps-3 exited $(cat "$T/rc.hps-3")"
pairs_ok hps-3
ok "hpcinit verify on hps-3: $(module_field hps-3 mpi summary)"

# 3. A threshold no pair can meet: exit 1, the slow pair named.
write_spec "$T/strict.yaml" "mpi: {profile: true, verify: {max_latency_us: 0.01}}"
hp hps-2 verify -c "$T/strict.yaml"
[ "$(cat "$T/rc.hps-2")" = 1 ] || fail "verify above max_latency_us exited $(cat "$T/rc.hps-2")"
sum=$(module_field hps-2 mpi summary)
[[ $sum =~ ^slow\ pair\ hps-[0-9]\ \<-\>\ hps-[0-9]:\ latency\ [0-9.]+\ us\ is\ above\ max_latency_us\ 0.01\; ]] ||
	fail "summary: $sum"
ok "max_latency_us 0.01: exit 1, '$sum'"
