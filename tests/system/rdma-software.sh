#!/bin/bash
# A software RDMA device (rdma_rxe, siw) is named as such, with its firmware
# 0.0.0, and judged by rdma.software: never mistaken for an HCA.  The tree is
# the healthy HBv3 fixture with its Ethernet device turned into rxe0 (a
# "parent" netdev, no PCI device, fw 0.0.0, 2.5 Gb/s), as Soft-RoCE shows it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
need_fixture_ops
R=$T/root
ulimit -l 8192

rxe_root() {
	fixture rdma/hbv3-healthy "$R"
	local ib=$R/sys/class/infiniband
	mv "$ib/mlx5_an0" "$ib/rxe0"
	rm -rf "$ib/rxe0/device"
	echo eth0 >"$ib/rxe0/parent"
	echo 0.0.0 >"$ib/rxe0/fw_ver"
	echo '1: CA' >"$ib/rxe0/node_type"
	echo '2.5 Gb/sec (1X SDR)' >"$ib/rxe0/ports/1/rate"
	echo Ethernet >"$ib/rxe0/ports/1/link_layer"
	echo rxe0 >"$R/sys/class/infiniband_verbs/uverbs1/ibdev"
	sed -i 's/^probe mlx5_an0 ok$/probe rxe0 ok/' "$R/etc/hpcinit/fake-rdma"
	cat >"$R/node.yaml" <<YAML
version: 1
cluster: {name: fixture}
rdma: {required: true, devices: "rxe*", link_layer: $1, open_timeout: 2s, reg_mr: 1M$2}
YAML
}

# Soft-RoCE where the spec wants Ethernet RDMA: allowed by default, named as software.
rxe_root ethernet ""
run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --only rdma --json
is "ethernet, auto: ok" "$(jget "$T/out" rdma status)" ok
is "ethernet, auto: summary names it software, with fw 0.0.0" "$(jget "$T/out" rdma summary)" \
	"rxe0: software RoCE on eth0 (fw 0.0.0, not an HCA), 2.5 Gb/s Ethernet, verbs probe ok (reg_mr 1 MiB)"
has_detail "the detail says why it is not an HCA" "$T/out" rdma \
	'^rxe0: software RoCE device on eth0 \(rdma_rxe\), not an HCA'

# rdma.software: deny refuses it even where the link layer fits.
rxe_root ethernet ", software: deny"
run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --only rdma --json
is "ethernet, deny: failed" "$(jget "$T/out" rdma status)" failed
is "ethernet, deny: summary" "$(jget "$T/out" rdma summary)" \
	"software-device: rxe0 is a software RoCE device on eth0 (rdma_rxe, fw 0.0.0), not an HCA; rdma.software: deny"

# link_layer any: auto allows it; infiniband: auto refuses it (and says how to accept it).
rxe_root any ""
run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --only rdma --json
is "any, auto: ok" "$(jget "$T/out" rdma status)" ok
rxe_root infiniband ""
run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --only rdma --json
is "infiniband, auto: failed" "$(jget "$T/out" rdma status)" failed
has_detail "infiniband, auto: the software device is named" "$T/out" rdma \
	'^software-device: rxe0 is a software RoCE device on eth0 \(rdma_rxe, fw 0.0.0\), not an HCA; rdma.software: auto \(denied with link_layer: infiniband; set software: allow to accept it\)$'
done_testing
