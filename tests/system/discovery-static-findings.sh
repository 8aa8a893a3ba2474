#!/bin/bash
# discovery.method static, its findings by their tags (the real binary on a fake
# root; names resolve through this machine's /etc/hosts, "localhost" only, so no
# DNS query leaves it): this node not in discovery.hosts is added (info); a
# host whose address is outside cluster.network does not count (degraded).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
R=$T/root
mkroot "$R"
disc() {    # disc NETWORK SELF-ADDRESS
	printf 'version: 1\ncluster: {name: fx, network: %s}\ndiscovery: {method: static, hosts: [localhost]}\n' "$1" >"$R/node.yaml"
	HPCINIT_ADDRESS=$2 run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --hostname cn0 --only discovery --json
}
disc 127.0.0.0/8 127.0.0.2
is "localhost inside the network: exit 0" "$rc" 0
has_tag "this node not listed: added" "$T/out" discovery info discovery.static.self-added
disc 198.18.99.0/24 198.18.99.2
is "localhost outside the network: exit 3 (degraded)" "$rc" 3
has_tag "a host with no address inside cluster.network" "$T/out" discovery degraded discovery.static.unresolved
done_testing
