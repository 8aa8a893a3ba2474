# Shared by the ssh and mpi cluster tests (sourced).  A simulated cluster
# (tests/cluster/sim.sh) on its own bridge and /24 so these tests can run
# beside the discovery tests: nodes hps-1.., bridge hpsbr0, 198.18.3.0/24.
# The harness's own root ssh trust is off (--no-ssh-trust): every login
# these tests make works only because hpcinit set it up.
set -euo pipefail

: "${HPCINIT:?run from make check (HPCINIT unset)}"
: "${TOP_SRCDIR:?}"
: "${TOP_BUILDDIR:?}"
export SIM_PREFIX=hps- SIM_BRIDGE=hpsbr0 SIM_NET=198.18.3
SIM="$TOP_SRCDIR/tests/cluster/sim.sh"
: "${NET:=198.18.3.0/24}"
USERS="alice bob"

[ "$(id -u)" = 0 ] || { echo "needs root (network and mount namespaces)"; exit 77; }

# The node names and the bridge are fixed, so tests using them take turns
# (make -j runs tests in parallel).
exec 9> /tmp/hpcinit-sim-hps.lock
flock -w 600 9 || { echo "FAIL: another test holds /tmp/hpcinit-sim-hps.lock for 10 minutes" >&2; exit 1; }

T=$(mktemp -d /tmp/hpcinit-ssh-test.XXXXXX)
chmod 0755 "$T"
export SIM_STATE=$T/sim
SHARED=$T/shared            # the rendezvous directory every node sees
mkdir -m 0755 "$SHARED"

cleanup() {
	local rc=$?
	bash "$SIM" down >/dev/null 2>&1 || true
	if [ $rc -ne 0 ] && [ -d "$T" ]; then
		for f in "$T"/out.*; do
			[ -f "$f" ] && { echo "--- $f"; tail -40 "$f"; }
		done
	fi
	rm -rf "$T"
	exit $rc
}
trap cleanup EXIT INT TERM

# ok (with the seconds since the start), bail_out, done_testing
TAP_SECONDS=1
. "$TOP_SRCDIR/tests/lib/tap.sh"
on() { bash "$SIM" exec "$@"; }
nodes() { bash "$SIM" list; }

# spec FILE [extra yaml lines]: the node spec every node uses.
write_spec() {
	local f=$1
	shift
	{
		echo "version: 1"
		echo "cluster: {name: hpsc, network: $NET, secret_file: $T/cluster.key}"
		echo "discovery: {method: shared, dir: $SHARED, expect: ${EXPECT:-4}, wait: 60s, lease: ${LEASE:-5m}}"
		echo "ssh: {users: [alice, bob]}"
		echo "hostfile: {formats: [openmpi, plain]}"
		for l in "$@"; do echo "$l"; done
	} > "$f"
}

# A node's accounts and a boot id of its own (the sim's nodes share the
# host's kernel, hence its boot id; a rebuilt VM would have a new one).
prepare_node() {
	local n=$1 u
	for u in $USERS; do
		on "$n" useradd -m -s /bin/bash "$u"
	done
	cat /proc/sys/kernel/random/uuid > "$T/boot_id.$n"
	on "$n" mount --bind "$T/boot_id.$n" /proc/sys/kernel/random/boot_id
}

# hpcinit CMD on the given nodes in parallel; output in $T/out.<node>, exit codes checked.
run_on() {
	local want=$1 cmd=$2
	shift 2
	local n pids=() rc=0
	for n in "$@"; do
		on "$n" "$HPCINIT" "$cmd" -c "$T/node.yaml" --json > "$T/out.$n" 2> "$T/err.$n" &
		pids+=($!)
	done
	for i in "${!pids[@]}"; do
		local r=0
		wait "${pids[$i]}" || r=$?
		if [ "$r" != "$want" ]; then
			echo "hpcinit $cmd on ${*:$((i + 1)):1} exited $r, expected $want" >&2
			cat "$T/err.${*:$((i + 1)):1}" "$T/out.${*:$((i + 1)):1}" >&2
			rc=1
		fi
	done
	return $rc
}

# hp NODE CMD [ARGS]: one hpcinit run, output in $T/out.NODE, exit code in $T/rc.NODE.
hp() {
	local n=$1 cmd=$2 r=0
	shift 2
	[ $# -gt 0 ] && [ "$1" = -c ] || set -- -c "$T/node.yaml" "$@"
	on "$n" "$HPCINIT" "$cmd" "$@" --json > "$T/out.$n" 2> "$T/err.$n" || r=$?
	echo "$r" > "$T/rc.$n"
}

# The module's status/summary from a node's last --json output.
module_field() {        # node module field
	python3 - "$T/out.$1" "$2" "$3" <<-'EOF'
	import json, sys
	doc = json.load(open(sys.argv[1]))
	for m in doc["modules"]:
	    if m["name"] == sys.argv[2]:
	        v = m.get(sys.argv[3])
	        print("\n".join(v) if isinstance(v, list) else v)
	EOF
}

# Log in from node to target as user with the real OpenSSH client; prints the remote hostname.
login() {               # src user target
	on "$1" runuser -u "$2" -- ssh -o BatchMode=yes -o StrictHostKeyChecking=yes "$3" hostname
}

# Bring up N nodes with users, the cluster secret and the spec, and apply on all.
cluster_up() {
	local n=$1
	shift
	head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$T/cluster.key"
	chmod 0600 "$T/cluster.key"
	write_spec "$T/node.yaml" "$@"
	bash "$SIM" up "$n" --shared "$SHARED" --no-ssh-trust > /dev/null
	for x in $(nodes); do
		prepare_node "$x"
	done
}
