#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The README demo: a head and three compute nodes simulated on this machine
# (network namespaces, each with its own hostname, /etc, sshd and address),
# a shared directory every node sees (the simulation of the NFS share),
# "hpcinit apply" on every node at once, each node's "hpcinit status", and
# mpirun hello across all nodes with the hostfile hpcinit wrote.  Everything
# is torn down at the end, also on failure or Ctrl-C.
#
# Run it with tools/demo.sh (installs and builds first), or directly with
# HPCINIT, TOP_SRCDIR and TOP_BUILDDIR set.  SIM_PREFIX, SIM_BRIDGE and
# SIM_NET choose names and addresses (default hpc-, hpcbr0, 198.18.1.0/24).
set -euo pipefail
TOP_SRCDIR=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
TOP_BUILDDIR=${TOP_BUILDDIR:-$TOP_SRCDIR/build}
HPCINIT=${HPCINIT:-$TOP_BUILDDIR/hpcinit}
export SIM_PREFIX=${SIM_PREFIX:-hpc-} SIM_BRIDGE=${SIM_BRIDGE:-hpcbr0} SIM_NET=${SIM_NET:-198.18.1}
SIM_SH=$TOP_SRCDIR/tests/cluster/sim.sh
HELLO=$TOP_BUILDDIR/tests/cluster/mpi-hello
CLUSTER=demo

[ -x "$HPCINIT" ] || { echo "demo: $HPCINIT not built (make)" >&2; exit 1; }
if [ ! -x "$HELLO" ]; then
	make -s -C "$TOP_BUILDDIR" tests/cluster/mpi-hello >/dev/null ||
		{ echo "demo: cannot build the MPI hello (is libopenmpi-dev installed?)" >&2; exit 1; }
fi

T=$(mktemp -d /tmp/hpcinit-demo.XXXXXX)
chmod 0755 "$T"
export SIM_STATE=$T/sim
SHARED=$T/scratch
mkdir -m 0755 "$SHARED"
cleanup() {
	echo
	echo "== tearing down"
	bash "$SIM_SH" down
	rm -rf "$T"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() { echo; echo "== $*"; }
on() { local n=$1; shift; bash "$SIM_SH" exec "$n" "$@"; }

# The nodes' sshd is started by the simulation, not by systemd, and inherits this
# shell's memlock limit (8 MiB on a stock Debian 12).  On a real node the spec's
# memlock step writes systemd's default and restarts sshd under it (systemctl
# try-restart); the simulation has no systemd to do that, so its sshd starts
# as it would then: with memlock unlimited.  Without this every node reports
# "sshd runs with memlock 8192 KiB" (degraded, exit 3).  A container without
# CAP_SYS_RESOURCE cannot raise its hard limit: the demo then asks for the
# limit the machine allows, and says so.
MEMLOCK=unlimited
if ! ulimit -l unlimited 2>/dev/null; then
	MEMLOCK=$(ulimit -H -l)K
	[ "$MEMLOCK" != unlimitedK ] || MEMLOCK=unlimited
	ulimit -l "$(ulimit -H -l)"
	echo "demo: this machine's hard memlock limit ($MEMLOCK) cannot be raised here (no CAP_SYS_RESOURCE):"
	echo "      the spec asks for memlock.limit $MEMLOCK instead of unlimited"
fi

step "bringing up a head and 3 compute nodes (network namespaces on bridge $SIM_BRIDGE, $SIM_NET.0/24)"
# --no-ssh-trust: the nodes start with no SSH trust at all; hpcinit sets it up (ssh: below).
mapfile -t NODES < <(bash "$SIM_SH" up 4 --shared "$SHARED" --no-ssh-trust)
HEAD=${NODES[0]}
for n in "${NODES[@]}"; do
	printf '   %-8s %-14s %s\n' "$n" "$(bash "$SIM_SH" addr "$n")" "$([ "$n" = "$HEAD" ] && echo head || echo compute)"
done

# The same spec on every node, as cloud-init custom-data would write it; only the role differs.
openssl rand -hex 32 > "$T/cluster.key"
for n in "${NODES[@]}"; do
	role=compute
	[ "$n" = "$HEAD" ] && role=head
	cat > "$T/$n.yaml" <<-EOF
	version: 1
	cluster: {name: $CLUSTER, role: $role, network: $SIM_NET.0/24, secret_file: /etc/hpcinit/cluster.key}
	memlock: {limit: $MEMLOCK}
	discovery: {method: shared, dir: $SHARED/.hpcinit, expect: 4, wait: 2m}
	ssh: {users: [root]}
	hostfile: {formats: [openmpi, mpich, plain, clush]}
	EOF
	on "$n" install -D -m 0644 "$T/$n.yaml" /etc/hpcinit/node.yaml
	on "$n" install -D -m 0600 "$T/cluster.key" /etc/hpcinit/cluster.key
done
step "the spec on $HEAD (/etc/hpcinit/node.yaml)"
sed 's/^/   /' "$T/$HEAD.yaml"

step "hpcinit apply on every node at once (each waits until it knows 4 nodes)"
pids=()
for n in "${NODES[@]}"; do
	on "$n" "$HPCINIT" apply >"$T/apply.$n" 2>&1 &
	pids+=($!)
done
failed=0
for i in "${!NODES[@]}"; do
	rc=0
	wait "${pids[$i]}" || rc=$?
	echo "   ${NODES[$i]}: hpcinit apply exited $rc"
	[ "$rc" = 0 ] || { sed 's/^/   | /' "$T/apply.${NODES[$i]}"; failed=1; }
done
[ "$failed" = 0 ] || { echo "demo: apply failed on a node" >&2; exit 1; }

for n in "${NODES[@]}"; do
	step "hpcinit status on $n"
	on "$n" "$HPCINIT" status | sed 's/^/   /'
done

step "the hostfile hpcinit wrote on $HEAD (/etc/hpcinit/hostfile.openmpi)"
on "$HEAD" cat /etc/hpcinit/hostfile.openmpi | sed 's/^/   /'
step "the records in the shared directory"
ls -l "$SHARED/.hpcinit/$CLUSTER/nodes" | sed 's/^/   /'
step "clustershell: nodeset -f @$CLUSTER on ${NODES[2]}"
on "${NODES[2]}" nodeset -f "@$CLUSTER" | sed 's/^/   /'

slots=$(on "$HEAD" nproc)
np=$((4 * slots))
step "mpirun hello on $np ranks across all nodes, from $HEAD, with the generated hostfile"
echo "   mpirun --hostfile /etc/hpcinit/hostfile.openmpi -np $np mpi-hello"
on "$HEAD" timeout 120 mpirun --allow-run-as-root --hostfile /etc/hpcinit/hostfile.openmpi -np "$np" \
	--mca btl tcp,self --mca btl_tcp_if_include eth0 --mca oob_tcp_if_include eth0 --bind-to none \
	"$HELLO" | sort -t' ' -k4,4n | sed 's/^/   /'
echo
echo "demo: done"
