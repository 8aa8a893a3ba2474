# SPDX-License-Identifier: MIT
# Helpers for the simulated-cluster tests (tests/cluster/*.sh).  Source it
# after setting SIM_PREFIX and SIM_NET: each test has its own, so that
# "make -j check" can run them side by side.  It sets -eu, creates
# a scratch directory $T (with the shared directory $SHARED, the simulation
# of the NFS share) and always tears the cluster down on exit.
set -eu
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${TOP_BUILDDIR:=$TOP_SRCDIR}"
: "${HPCINIT:=$TOP_BUILDDIR/hpcinit}"
: "${SIM_PREFIX:?}" "${SIM_NET:?}"
# Names carry a per-run tag so that two runs of the suite on one machine
# (a CI run and a developer's) do not collide on namespace, veth or bridge
# names; the addresses may repeat, each run has its own bridge.
SIM_PREFIX=${SIM_PREFIX%-}$(printf '%x' $(($$ % 4096)))-
SIM_BRIDGE=${SIM_PREFIX}br
export SIM_PREFIX SIM_BRIDGE SIM_NET
SIM_SH=$TOP_SRCDIR/tests/cluster/sim.sh
MPI_HELLO=$TOP_BUILDDIR/tests/cluster/mpi-hello
CLUSTER=simc

# The simulated cluster needs root and namespaces: without them the test
# cannot run here at all, which automake reports as SKIP (77), never PASS.
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null || ! command -v nsenter >/dev/null; then
	echo "SKIP: needs root, iproute2 and util-linux (network namespaces)"
	exit 77
fi

T=$(mktemp -d /tmp/hpcinit-cluster.XXXXXX)
chmod 0755 "$T"
export SIM_STATE=$T/sim
SHARED=$T/shared
mkdir -m 0755 "$SHARED"
. "$TOP_SRCDIR/tests/lib/faketime.sh"
faketime_since "$T/.faketime-since"
_cleanup() {
	local rc=$?
	bash "$SIM_SH" down || true
	faketime_sweep "$T/.faketime-since"     # libfaketime's files of the runs killed (tests/faults/node.sh)
	rm -rf "$T"
	exit $rc
}
trap _cleanup EXIT
trap 'exit 1' INT TERM

# ok, not_ok, check, done_testing, contains, not_contains
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap.sh"
same_text() { [ "$1" = "$2" ] || { echo "  expected:"; echo "$2" | sed 's/^/  | /'; echo "  got:"; echo "$1" | sed 's/^/  | /'; return 1; }; }

sim() { bash "$SIM_SH" "$@"; }
on() { local n=$1; shift; sim exec "$n" "$@"; }
node() { echo "${SIM_PREFIX}$1"; }
# hpc NODE ARGS...: the real binary inside the node (HPCINIT_WRAPPER, e.g. valgrind, wraps it)
hpc() { local n=$1; shift; on "$n" ${HPCINIT_WRAPPER:-} "$HPCINIT" "$@"; }
# run_hpc OUT NODE ARGS...: output in OUT, exit code in $rc
run_hpc() { local out=$1; shift; rc=0; hpc "$@" >"$out" 2>&1 || rc=$?; }

# "hpcinit refresh" is apply --only discovery,ssh,hostfile.  A tree built
# without the ssh module (the ssh area not merged yet) refuses that list, so
# the same modules minus ssh are asked for by name there.
if "$HPCINIT" --help 2>&1 | grep -q 'Modules, in run order:.* ssh'; then
	REFRESH=(refresh)
else
	REFRESH=(apply --only discovery,hostfile)
fi

# The cluster secret, the same on every node (as cloud-init would write it).
openssl rand -hex 32 > "$T/cluster.key"

# spec [LEASE] [EXPECT] [EXTRA YAML...]: print a node spec
spec() {
	local lease=${1:-1m} expect=${2:-4}
	shift 2 || shift $#
	cat <<-EOF
	version: 1
	cluster: {name: $CLUSTER, network: $SIM_NET.0/24, secret_file: /etc/hpcinit/cluster.key}
	discovery: {method: shared, dir: $SHARED/.hpcinit, expect: $expect, wait: 60s, lease: $lease}
	hostfile: {}
	EOF
	local x
	for x in "$@"; do echo "$x"; done
}
# install_spec NODE SPECFILE: /etc/hpcinit/node.yaml and the key, as cloud-init would
install_spec() {
	on "$1" install -D -m 0644 "$2" /etc/hpcinit/node.yaml
	on "$1" install -D -m 0600 "$T/cluster.key" /etc/hpcinit/cluster.key
}

# apply_all OUTPREFIX NODE...: "hpcinit apply" on every node at once; fails unless all exit 0
apply_all() {
	local pre=$1 n pids=() bad=0 i=0
	shift
	for n in "$@"; do
		hpc "$n" apply >"$pre.$n" 2>&1 &
		pids+=($!)
	done
	for n in "$@"; do
		if ! wait "${pids[$i]}"; then
			echo "  apply on $n failed:"
			sed 's/^/  | /' "$pre.$n"
			bad=1
		fi
		i=$((i + 1))
	done
	return $bad
}

# hostfiles_list NODE EXPECTED...: NODE's hostfiles (all formats) list exactly EXPECTED, in
# order, each with NODE's usable cores as slots (the simulated nodes share the host's CPUs)
hostfiles_list() {
	local n=$1 e slots want_o want_m want_p got
	shift
	slots=$(on "$n" nproc)
	want_o="# hpcinit: cluster $CLUSTER, $# nodes; generated, do not edit"
	want_m=$want_o
	want_p=$want_o
	for e in "$@"; do
		want_o+=$'\n'"$e slots=$slots"
		want_m+=$'\n'"$e:$slots"
		want_p+=$'\n'"$e"
	done
	got=$(on "$n" cat /etc/hpcinit/hostfile.openmpi) && same_text "$got" "$want_o" &&
		got=$(on "$n" cat /etc/hpcinit/hostfile.mpich) && same_text "$got" "$want_m" &&
		got=$(on "$n" cat /etc/hpcinit/hostfile.plain) && same_text "$got" "$want_p"
}

# The shared directory's server stopped, as one node sees it: tests/system/fuse_stall -a
# mounted on the directory inside the node, a file system that never answers below its top (a
# hard NFS mount whose server died).  Used by tests/cluster/discovery-shared-outage.sh and the
# fault campaign (tests/faults/campaign.sh).
# share_stall STALL DIR NODE LOG: the stand-in STALL mounted on DIR in NODE, its output in LOG,
# waited for (DIR's device changes); 1 when it did not mount within 5 s
share_stall() {
	local stall=$1 dir=$2 n=$3 log=$4 dev
	dev=$(on "$n" stat -c %d "$dir" 2>/dev/null)
	on "$n" "$stall" -a "$dir" >"$log" 2>&1 &
	for _ in $(seq 50); do
		[ "$(on "$n" stat -c %d "$dir" 2>/dev/null)" = "$dev" ] || return 0
		sleep 0.1
	done
	return 1
}
# share_unstall STALL DIR NODE: the server back in NODE: the stand-in killed (by PID, each
# process of NODE's network namespace whose program is STALL; the kernel then answers ENOTCONN)
# and DIR unmounted there
share_unstall() {
	local stall=$1 dir=$2 n=$3 p a=()
	for p in $(ip netns pids "$n" 2>/dev/null); do
		mapfile -d '' -n 1 a 2>/dev/null <"/proc/$p/cmdline" || continue
		[ "${a[0]}" != "$stall" ] || kill -KILL "$p"
	done
	on "$n" umount -l "$dir" 2>/dev/null || true
}
