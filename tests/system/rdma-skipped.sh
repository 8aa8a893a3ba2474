#!/bin/bash
# This machine has no RDMA.  With no rdma section the module is skipped, on the real
# root (check mode changes nothing) and on a fake one, and the run passes.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
printf 'version: 1\ncluster: {name: none}\n' >"$T/node.yaml"
run_hpc_stdout "$T/out" check -c "$T/node.yaml" --only rdma --json
is "real root: exit 0" "$rc" 0
is "real root: rdma skipped" "$(jget "$T/out" rdma status)" skipped
is "real root: says why" "$(jget "$T/out" rdma summary)" "no rdma section in the spec"
mkdir "$T/root"
run_hpc_stdout "$T/out" apply --root "$T/root" -c "$T/node.yaml" --only rdma --json
is "fake root: exit 0" "$rc" 0
is "fake root: rdma skipped" "$(jget "$T/out" rdma status)" skipped
# The verbs libraries are the probe helper's, not the agent's: a node without an rdma
# section never maps them (and an Ethernet image needs no rdma packages).
needed=$(readelf -d "$HPCINIT" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
check "the agent binary does not link libibverbs or librdmacm" \
	bash -c '! grep -E "^lib(ibverbs|rdmacm)\." <<<"$1"' _ "$needed"
check "the probe helper does" grep -q '^libibverbs\.' <<<"$(readelf -d "$TOP_BUILDDIR/hpcinit-rdma-probe" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')"
done_testing
