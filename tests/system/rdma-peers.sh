#!/bin/bash
# IPoIB: rdma_cm resolves peers' IPoIB addresses, not only this node's own.  The
# rdma step runs before discovery, so the mpi step (after discovery, with the
# peers) runs the probe helper's "route" (rdma_resolve_addr + rdma_resolve_route)
# to the IPoIB addresses of up to 3 peers that follow this node, in parallel,
# each bounded by rdma.open_timeout.  On this machine the helper's fixture ops
# say how each peer's address and route resolve (no RDMA hardware here); the
# real calls are proved on the VMs (tests/vmcheck/rdma-cm-peer.sh, rxe).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
need_fixture_ops
R=$T/root
ulimit -l 8192
fixture rdma/hbv3-healthy "$R"
mkroot "$R"
cat >>"$R/node.yaml" <<'YAML'
discovery: {method: shared, dir: /shared, expect: 1, wait: 1s}
mpi: {profile: true}
YAML
sed -i 's/^cluster: {name: fixture}/cluster: {name: fixture, network: 10.0.0.0\/24}/' "$R/node.yaml"
N=$R/shared/fixture/nodes
mkdir -p "$N"
now=$(date +%s)
rec() {         # rec HOST ADDR IPOIB
	printf '# hpcinit peer record\nformat: 1\ncluster: fixture\nhostname: %s\naddr: %s\n%sslots: 4\nrole: compute\nversion: 0\nupdated: %s\n...\n' \
		"$1" "$2" "${3:+ipoib: $3
}" "$now" >"$N/$1.rec"
}
rec node02 10.0.0.5 172.16.1.5
rec node03 10.0.0.6 172.16.1.6
rec node04 10.0.0.7 172.16.1.7
rec node05 10.0.0.8 172.16.1.8
chmod 0644 "$N"/*.rec
cat >>"$R/etc/hpcinit/fake-rdma" <<'EOF'
peer 172.16.1.5 mlx5_ib0
peer 172.16.1.6 mlx5_ib0 ETIMEDOUT
peer 172.16.1.7 hang
peer 172.16.1.8 mlx5_ib0
EOF
export HPCINIT_ADDRESS=10.0.0.4 HPCINIT_IPOIB_ADDRESS=172.16.1.4/24
start=$(date +%s%N)
run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --hostname node01 --json
took=$(( ($(date +%s%N) - start) / 1000000 ))
echo "# apply took $took ms"
cat "$T/out.err" | head -5
check "discovery found 5 nodes" grep -q "^5 nodes" <<<"$(jget "$T/out" discovery summary)"
is "a peer that does not resolve fails mpi (rdma.required: true)" "$(jget "$T/out" mpi status)" failed
has_detail "node02: address and route resolve" "$T/out" mpi \
	'^rdma_cm to node02: 172\.16\.1\.5 resolves \(address and route\) via mlx5_ib0 in [0-9]+ ms$'
has_detail "node03: the route fails, named" "$T/out" mpi \
	'^rdma_cm to node03: rdma_resolve_route\(172\.16\.1\.6\) failed: ETIMEDOUT \(Connection timed out\)$'
has_detail "node04: the hang is bounded by open_timeout and named" "$T/out" mpi \
	'^rdma_cm to node04: rdma_resolve_addr\(172\.16\.1\.7\) did not complete within 2000 ms$'
is "node05 is not probed (3 peers a run)" "$(jget "$T/out" mpi details | grep -c node05 || true)" 0
is "findings: two peers" "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(sum(1 for m in d["modules"] if m["name"]=="mpi" for f in m["findings"] if f["tag"]=="rdma.peer-resolve"))' "$T/out")" 2
is "the summary names the first failed peer and counts the rest" "$(jget "$T/out" mpi summary)" \
	"rdma_cm to node03: rdma_resolve_route(172.16.1.6) failed: ETIMEDOUT (Connection timed out) (+1 more)"
check "the hang cost open_timeout, not more (< 10 s)" [ "$took" -lt 10000 ]

# rdma.required: false: the same is degraded.
sed -i 's/required: true/required: false/' "$R/node.yaml"
run_hpc_stdout "$T/out2" apply --root "$R" -c "$R/node.yaml" --hostname node01 --json
is "required: false: degraded" "$(jget "$T/out2" mpi status)" degraded
is "required: false: exit 3" "$rc" 3

# Every peer resolves: ok, and the summary says so.
sed -i 's/^peer 172.16.1.6 .*/peer 172.16.1.6 mlx5_ib0/; s/^peer 172.16.1.7 .*/peer 172.16.1.7 mlx5_ib0/' "$R/etc/hpcinit/fake-rdma"
run_hpc_stdout "$T/out3" apply --root "$R" -c "$R/node.yaml" --hostname node01 --json
is "all resolve: mpi ok" "$(jget "$T/out3" mpi status)" ok
check "all resolve: 3 of 3" grep -q "rdma_cm to 3 of 3 peer(s) ok" <<<"$(jget "$T/out3" mpi summary)"

# A peer without an IPoIB address in its record is named, not probed.
sed -i '/^ipoib: 172.16.1.5$/d' "$N/node02.rec"
run_hpc_stdout "$T/out4" apply --root "$R" -c "$R/node.yaml" --hostname node01 --json
has_detail "no IPoIB address published: named" "$T/out4" mpi '^rdma_cm to node02: not checked: it publishes no IPoIB address$'
done_testing
