#!/bin/bash
# hpcinit verify launched by MPICH on 4 simulated nodes (mpi.verify.launcher:
# mpich): Hydra's mpirun.mpich reads the host:N hostfile, starts one rank a
# node over the ssh trust hpcinit set up, and runs the verify program built
# against MPICH (hpcinit-mpiverify-mpich); the per-pair lines are judged as
# with Open MPI.  Needs the mpich packages (tools/setup.sh installs them);
# without them this is a SKIP (77), never a pass.
. "$TOP_SRCDIR/tests/cluster/ssh-lib.sh"

if [ ! -x "$TOP_BUILDDIR/hpcinit-mpiverify-mpich" ] || ! command -v mpirun.mpich >/dev/null; then
	echo "SKIP: MPICH not installed (mpich, libmpich-dev) or hpcinit-mpiverify-mpich not built"; exit 77
fi
mkdir -m 0755 "$SHARED/bin"
install -m 0755 "$TOP_BUILDDIR/hpcinit-mpiverify-mpich" "$SHARED/bin/"
export HPCINIT_MPIVERIFY_MPICH=$SHARED/bin/hpcinit-mpiverify-mpich

cluster_up 4 "mpi: {profile: true, verify: {launcher: mpich}}"
sed -i 's/formats: \[openmpi, plain\]/formats: [openmpi, mpich, plain]/' "$T/node.yaml"
NODES=$(nodes)
# shellcheck disable=SC2086
run_on 0 apply $NODES || bail_out "apply"
for n in $NODES; do
	on "$n" grep -q '^hps-1:' /etc/hpcinit/hostfile.mpich || bail_out "$n: no MPICH hostfile"
done
ok "every node has the MPICH hostfile (host:N)"

PAIR_RE='^pair hps-[0-9] <-> hps-[0-9]: latency [0-9]+\.[0-9]+ us \(8 B [0-9]+\.[0-9]+, 512 B [0-9]+\.[0-9]+\), bandwidth [0-9]+\.[0-9] MiB/s at 4 MiB$'
for run in 1 2 3; do
	hp hps-2 verify
	[ "$(cat "$T/rc.hps-2")" = 0 ] || bail_out "verify (MPICH) on hps-2 exited $(cat "$T/rc.hps-2"): $(cat "$T/err.hps-2") $(module_field hps-2 mpi details)"
	det=$(module_field hps-2 mpi details)
	grep -q '^runuser -u alice -- env '\''HYDRA_LAUNCHER_EXTRA_ARGS=-o BatchMode=yes'\'' mpirun.mpich -launcher ssh -f /etc/hpcinit/hostfile.mpich -n 4 -ppn 1 -genv UCX_TLS tcp,self ' <<<"$det" ||
		bail_out "not launched by mpirun.mpich: $det"
	grep -q "hpcinit-mpiverify-mpich --round" <<<"$det" || bail_out "not the MPICH build: $det"
	grep -q 'hello from 4 ranks' <<<"$det" || bail_out "hello lines: $det"
	[ "$(grep -cE "$PAIR_RE" <<<"$det")" = 2 ] || bail_out "expected 2 pair lines: $det"
	grep -E '^pair' <<<"$det"
	grep -E '^pair' <<<"$det" | sed -E 's/^pair (hps-[0-9]) <-> (hps-[0-9]):.*/\1 \2/' >>"$T/seen"
	ok "run $run: mpirun.mpich ran the MPICH build on 4 nodes: $(module_field hps-2 mpi summary)"
done
distinct=$(awk '{ if ($1 > $2) { t = $1; $1 = $2; $2 = t } print $1, $2 }' "$T/seen" | sort -u | wc -l)
[ "$distinct" = 6 ] || bail_out "3 rounds on 4 nodes measured $distinct distinct pairs, not 6"
ok "3 rounds measured all 6 pairs (round-robin under MPICH too)"

# The Open MPI build is not what MPICH launches: with only it, verify says what is missing.
HPCINIT_MPIVERIFY_MPICH=$SHARED/bin/none hp hps-2 verify
[ "$(cat "$T/rc.hps-2")" = 1 ] || bail_out "verify with no MPICH program exited $(cat "$T/rc.hps-2")"
module_field hps-2 mpi summary | grep -q "hpcinit-mpiverify-mpich\|/none is missing" || bail_out "summary: $(module_field hps-2 mpi summary)"
ok "no MPICH build of the program: $(module_field hps-2 mpi summary)"
done_testing
