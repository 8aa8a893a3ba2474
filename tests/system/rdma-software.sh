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
has_tag "ethernet, deny: the finding" "$T/out" rdma failed rdma.software-device

# link_layer any: auto allows it; infiniband: auto refuses it (and says how to accept it).
rxe_root any ""
run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --only rdma --json
is "any, auto: ok" "$(jget "$T/out" rdma status)" ok
rxe_root infiniband ""
run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --only rdma --json
is "infiniband, auto: failed" "$(jget "$T/out" rdma status)" failed
has_detail "infiniband, auto: the software device is named" "$T/out" rdma \
	'^software-device: rxe0 is a software RoCE device on eth0 \(rdma_rxe, fw 0.0.0\), not an HCA; rdma.software: auto \(denied with link_layer: infiniband; set software: allow to accept it\)$'
# The MPI fabric: a software device stays TCP by default (the profile names it
# as not used); mpi.software_fabric: true makes it the fabric, with what UCX
# needs on rxe (docs/mpi.md), in the profile and in the system files that the
# real ompi_info and ucx_info read.
soft_profile() {
	rxe_root ethernet ""
	printf 'cluster: {name: fixture, network: 10.0.0.0/24}\nmpi: {profile: true%s}\n' "$1" >>"$R/node.yaml"
	sed -i '/^cluster: {name: fixture}$/d' "$R/node.yaml"
	mkdir -p "$R/etc/openmpi"
	printf 'pml = ^ucx\n' >"$R/etc/openmpi/openmpi-mca-params.conf"
	run_hpc "$T/apply" apply --root "$R" -c "$R/node.yaml" --only rdma,mpi
}
soft_profile ""
p=$R/etc/profile.d/hpcinit-mpi.sh
check "default: MPI stays on TCP beside rxe0" grep -qx 'export OMPI_MCA_pml=ob1' "$p"
check "default: the profile says rxe0 is not used" grep -q '^# Fabric ethernet: TCP over 10.0.0.0/24 (rxe0 is a software RDMA device: not used)\.$' "$p"
check "default: no ucx.conf" test ! -e "$R/etc/ucx/ucx.conf"
soft_profile ", software_fabric: true"
check "software_fabric: the profile says why rxe0 is the fabric" \
	grep -qx '# Fabric rdma: UCX on rxe0:1 (a software RDMA device: mpi.software_fabric).' "$p"
for want in 'export OMPI_MCA_pml=ucx' 'export OMPI_MCA_pml_ucx_devices=any' 'export UCX_NET_DEVICES=rxe0:1' \
	'export UCX_UD_VERBS_ETH_DGID_CHECK=n' 'export FI_PROVIDER=tcp'; do
	check "software_fabric: profile has $want" grep -qx "$want" "$p"
done
check "software_fabric: no NCCL_IB_HCA (NCCL over rxe untested)" bash -c "! grep -q NCCL '$p'"
check "software_fabric: no nccl.conf" test ! -e "$R/etc/nccl.conf"
if command -v ompi_info >/dev/null; then
	v=$(OMPI_MCA_mca_base_param_files=$R/etc/openmpi/openmpi-mca-params.conf ompi_info --param pml ucx --level 9 --parsable 2>/dev/null | grep '^mca:pml:ucx:param:pml_ucx_devices:value:')
	is "ompi_info reads pml_ucx_devices any from the file" "$v" "mca:pml:ucx:param:pml_ucx_devices:value:any"
else
	not_ok "ompi_info (openmpi-bin) is not installed"
fi
if command -v ucx_info >/dev/null; then
	v=$(UCX_CONFIG_DIR=$R/etc/ucx ucx_info -c 2>/dev/null | grep -E '^UCX_(NET_DEVICES|UD_VERBS_ETH_DGID_CHECK)=' | tr '\n' ' ')
	is "ucx_info reads the device and the DGID check from ucx.conf" "$v" "UCX_NET_DEVICES=rxe0:1 UCX_UD_VERBS_ETH_DGID_CHECK=n "
else
	not_ok "ucx_info (ucx-utils) is not installed"
fi
done_testing
