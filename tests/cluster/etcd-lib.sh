# SPDX-License-Identifier: MIT
# A real 3-member etcd cluster (Debian's etcd-server) for the tests that use
# discovery method etcd.  Source after lib.sh; call etcd_up after "sim up".
# The members run in a network namespace of their own on the simulated
# bridge, at $SIM_NET.250 (the nodes reach it; 127.0.0.1 inside a node is the
# node's own loopback; an address on the host's side of the bridge would
# clash with another run of the same test), each with its own data directory
# under $T/etcd.  The test's exit stops them, by PID, and removes the
# namespace before lib.sh tears the cluster down.
ETCD_BIN=$(command -v etcd || true)
if [ -z "$ETCD_BIN" ]; then
	echo "SKIP: etcd not installed (Debian package etcd-server; tools/setup.sh installs it)"
	exit 77
fi
ETCD_HOST=$SIM_NET.250
ETCD_NS=${SIM_PREFIX}etcd
ETCD_VETH=${SIM_PREFIX}ve
# Ports from the test's network number, so tests running side by side do not collide.
ETCD_PORT0=$((20000 + ${SIM_NET##*.} * 10))
ETCD_PIDS=()
etcd_client_url() { echo "http://$ETCD_HOST:$((ETCD_PORT0 + $1))"; }
etcd_peer_url() { echo "http://$ETCD_HOST:$((ETCD_PORT0 + 5 + $1))"; }
# etcd_endpoints: the YAML list of the three client URLs
etcd_endpoints() { echo "[\"$(etcd_client_url 1)\", \"$(etcd_client_url 2)\", \"$(etcd_client_url 3)\"]"; }

_etcd_cleanup() {
	local rc=$?
	etcd_stop
	set +e
	(exit $rc)
	_cleanup
}
trap _etcd_cleanup EXIT

etcd_start_member() {
	local i=$1 initial="" j
	for j in 1 2 3; do initial+="${initial:+,}m$j=$(etcd_peer_url "$j")"; done
	mkdir -p "$T/etcd"
	ip netns exec "$ETCD_NS" "$ETCD_BIN" --name "m$i" --data-dir "$T/etcd/m$i" \
		--listen-client-urls "$(etcd_client_url "$i")" --advertise-client-urls "$(etcd_client_url "$i")" \
		--listen-peer-urls "$(etcd_peer_url "$i")" --initial-advertise-peer-urls "$(etcd_peer_url "$i")" \
		--initial-cluster "$initial" --initial-cluster-token "hpcinit-test-$$" \
		--initial-cluster-state new --heartbeat-interval 50 --election-timeout 500 \
		>>"$T/etcd/m$i.log" 2>&1 &   # appended: a restart keeps the log before it
	ETCD_PIDS[$i]=$!
}

# etcd_up: the etcd namespace on the bridge as $ETCD_HOST, 3 members in it, wait until healthy
etcd_up() {
	local t
	ip netns add "$ETCD_NS"
	ip link add "$ETCD_VETH" type veth peer name eth0 netns "$ETCD_NS"
	ip link set "$ETCD_VETH" master "$SIM_BRIDGE" up
	ip -n "$ETCD_NS" addr add "$ETCD_HOST/24" dev eth0
	ip -n "$ETCD_NS" link set lo up
	ip -n "$ETCD_NS" link set eth0 up
	etcd_start_member 1
	etcd_start_member 2
	etcd_start_member 3
	for t in $(seq 1 100); do
		if ETCDCTL_API=3 ip netns exec "$ETCD_NS" etcdctl --endpoints "$(etcd_client_url 1),$(etcd_client_url 2),$(etcd_client_url 3)" \
			endpoint health >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.1
	done
	echo "etcd did not become healthy:"; tail -5 "$T"/etcd/m*.log
	return 1
}
# etcd_kill I: kill member I (SIGKILL, by PID), as a VM that dies
etcd_kill() {
	local p=${ETCD_PIDS[$1]:-}
	[ -n "$p" ] || return 0
	kill -KILL "$p" 2>/dev/null || true
	wait "$p" 2>/dev/null || true
	ETCD_PIDS[$1]=""
}
etcd_stop() {
	local i
	for i in 1 2 3; do etcd_kill "$i"; done
	[ ! -e "/run/netns/$ETCD_NS" ] || ip netns del "$ETCD_NS" 2>/dev/null || true
	ip link del "$ETCD_VETH" 2>/dev/null || true
}
# etcd_stop_members: kill every member, keep the namespace (the "all down" fault)
etcd_stop_members() { local i; for i in 1 2 3; do etcd_kill "$i"; done; }
# etcdctl_ ARGS: etcdctl against the live members
etcdctl_() {
	ETCDCTL_API=3 ip netns exec "$ETCD_NS" etcdctl --endpoints "$(etcd_client_url 1),$(etcd_client_url 2),$(etcd_client_url 3)" "$@"
}

# etcd_spec LEASE EXPECT [EXTRA YAML...]: a node spec with method etcd
etcd_spec() {
	local lease=$1 expect=$2
	shift 2
	cat <<-EOF
	version: 1
	cluster: {name: $CLUSTER, network: $SIM_NET.0/24, secret_file: /etc/hpcinit/cluster.key}
	discovery: {method: etcd, endpoints: $(etcd_endpoints), expect: $expect, wait: 60s, lease: $lease}
	hostfile: {}
	EOF
	local x
	for x in "$@"; do echo "$x"; done
}
