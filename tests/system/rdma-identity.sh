#!/bin/bash
# Device identity from sysfs, never from names, through the real binary on fixture trees:
# HBv4 after Azure's renaming service (mlx5_ib0 beside the AN VF mlx5_an0), the same VM
# before it ran (kernel names mlx5_0, mlx5_1), ND H100 v5 (eight HCAs and an AN VF),
# a MANA VM (no InfiniBand).  The verbs calls are the documented fixture ops
# (libexec/rdma-fake.c): no RDMA hardware here.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
need_fixture_ops
R=$T/root
ulimit -l 8192

# run_case CASE [HOOK] [ONLY]: check on a copy of the fixture; sets rc and $T/out
run_case() {
	fixture "rdma/$1" "$R"
	[ -z "${2:-}" ] || eval "$2"
	run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --only "${3:-rdma}" --json
}
mpi_section() { printf 'mpi: {profile: true}\n' >>"$R/node.yaml"; }
# profile CASE: the MPI profile apply writes on a copy of the fixture (rdma then mpi)
profile() {
	fixture "rdma/$1" "$R"
	mpi_section
	[ -z "${2:-}" ] || eval "$2"
	run_hpc "$T/apply" apply --root "$R" -c "$R/node.yaml" --only rdma,mpi
	cat "$R/etc/profile.d/hpcinit-mpi.sh" 2>/dev/null
}

# HBv4: the InfiniBand HCA is the fabric, the AN VF is named for what it is.
run_case hbv4
is "HBv4: ok" "$(jget "$T/out" rdma status)" ok
is "HBv4: summary" "$(jget "$T/out" rdma summary)" \
	"mlx5_ib0: 400 Gb/s InfiniBand, verbs probe ok (reg_mr 1 MiB); ib0 172.16.1.4 -> mlx5_ib0"
has_detail "HBv4: mlx5_ib0 is an InfiniBand HCA by sysfs" "$T/out" rdma \
	'^mlx5_ib0: InfiniBand HCA \(sysfs: InfiniBand link layer, driver mlx5_core, netdev ib0\)$'
has_detail "HBv4: mlx5_an0 is the AN VF (its netdev enslaved to hv_netvsc's eth0)" "$T/out" rdma \
	'^mlx5_an0: accelerated networking.s Ethernet VF \(sysfs: Ethernet link layer, driver mlx5_core, netdev enP49993s1 enslaved to eth0 of hv_netvsc\)$'
has_detail "HBv4: the AN VF is never the fabric" "$T/out" rdma \
	'^mlx5_an0: not selected \(accelerated networking.s Ethernet VF enP49993s1 of eth0: never the RDMA fabric\)$'

# The same VM before azure_persistent_rdma_naming ran: the kernel's names, same verdict.
run_case hbv4-kernel-names
is "kernel names: ok" "$(jget "$T/out" rdma status)" ok
is "kernel names: the HCA is found whatever it is called" "$(jget "$T/out" rdma summary)" \
	"mlx5_1: 400 Gb/s InfiniBand, verbs probe ok (reg_mr 1 MiB); ib0 172.16.1.4 -> mlx5_1"
has_detail "kernel names: mlx5_0 is the AN VF by sysfs" "$T/out" rdma \
	'^mlx5_0: not selected \(accelerated networking.s Ethernet VF enP49993s1 of eth0: never the RDMA fabric\)$'

# link_layer: any or ethernet never makes the AN VF the fabric.
run_case hbv4 "sed -i 's/link_layer: infiniband/link_layer: any/' \$R/node.yaml"
is "HBv4, link_layer any: still only mlx5_ib0" "$(jget "$T/out" rdma summary)" \
	"mlx5_ib0: 400 Gb/s InfiniBand, verbs probe ok (reg_mr 1 MiB); ib0 172.16.1.4 -> mlx5_ib0"
# A name glob that names only the VF: said what it is.
run_case hbv4 "sed -i 's/^rdma:/rdma:\n  devices: \"mlx5_an*\"/' \$R/node.yaml"
is "HBv4, devices mlx5_an*: no fabric, said why" "$(jget "$T/out" rdma summary)" \
	"no-fabric: no RDMA fabric: the only device is accelerated networking's Ethernet VF (found: mlx5_an0 (Ethernet), mlx5_ib0 (InfiniBand)), which carries the VM's Ethernet, not MPI; this VM size has no InfiniBand, or its driver is not loaded"
has_tag "HBv4, devices mlx5_an*: no fabric, said why: the finding" "$T/out" rdma failed rdma.no-fabric

# ND H100 v5: eight HCAs, the VF left out.
run_case ndh100v5
is "ND H100 v5: ok" "$(jget "$T/out" rdma status)" ok
is "ND H100 v5: eight HCAs" "$(jget "$T/out" rdma summary)" \
	"mlx5_ib0 mlx5_ib1 mlx5_ib2 mlx5_ib3 mlx5_ib4 mlx5_ib5 mlx5_ib6 mlx5_ib7: 400 Gb/s InfiniBand, verbs probe ok (reg_mr 1 MiB); ib0 172.16.1.9 -> mlx5_ib0"

# IPoIB as Azure's host intends it (Hyper-V KVP pool 0, key IPoIB_Data: MAC:IPv4 pairs that
# waagent applies), compared with each IPoIB interface (sysfs type 32) by its MAC.
has_detail "ND H100 v5: ib3 as the host intends" "$T/out" rdma \
	'^ib3: 172\.16\.1\.12, as the host intends \(Hyper-V KVP IPoIB_Data, MAC 0c42a1e41a03\)$'
run_case ndh100v5 "sed -i 's/^ipoib ib3 172.16.1.12 /ipoib ib3 172.16.1.13 /; s/^ipoib ib4 172.16.1.13 /ipoib ib4 172.16.1.12 /' \$R/etc/hpcinit/fake-rdma"
is "ND H100 v5, ib3 and ib4 swapped: failed" "$(jget "$T/out" rdma status)" failed
is "ND H100 v5, swapped: the summary names the wrong one" "$(jget "$T/out" rdma summary)" \
	"ipoib-kvp: ib3 is wrong: it has 172.16.1.13 where the host intends 172.16.1.12 (Hyper-V KVP IPoIB_Data, MAC 0c42a1e41a03); waagent assigns it with OS.EnableRDMA=y (+1 more)"
has_tag "ND H100 v5, swapped: the summary names the wrong one: the finding" "$T/out" rdma failed rdma.ipoib-kvp
has_detail "swapped: ib4 too" "$T/out" rdma '^ipoib-kvp: ib4 is wrong: it has 172\.16\.1\.12 where the host intends 172\.16\.1\.13 '
run_case ndh100v5 "sed -i 's/^ipoib ib5 172.16.1.14 /ipoib ib5 - /' \$R/etc/hpcinit/fake-rdma"
has_detail "no address on ib5: named" "$T/out" rdma '^ipoib-kvp: ib5 is wrong: it has no address where the host intends 172\.16\.1\.14 '
# The host publishes a MAC no interface has (a VF that did not come up).
run_case ndh100v5 "python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,\"rb\").read()); i=b.find(b\"NUMPAIRS:8\"); b[i:i+10]=b\"NUMPAIRS:9\"; j=b.find(b\"\\0\", i); b[j:j+25]=b\"|0C42A1E41A09:172.16.1.30\"; open(p,\"wb\").write(b)' \$R/var/lib/hyperv/.kvp_pool_0"
has_detail "a MAC no interface has: named" "$T/out" rdma \
	'^ipoib-kvp: the host intends 172\.16\.1\.30 for MAC 0c42a1e41a09 \(Hyper-V KVP IPoIB_Data\), but no IPoIB interface has that MAC$'

# MANA, no InfiniBand: the VF is not counted as RDMA.
run_case mana-only
is "MANA only: exit 1" "$rc" 1
is "MANA only: no fabric" "$(jget "$T/out" rdma summary)" \
	"no-fabric: no RDMA fabric: the only device is accelerated networking's Ethernet VF (found: mana_0 (Ethernet)), which carries the VM's Ethernet, not MPI; this VM size has no InfiniBand, or its driver is not loaded"
has_tag "MANA only: no fabric: the finding" "$T/out" rdma failed rdma.no-fabric
run_case mana-only "sed -i 's/link_layer: infiniband/link_layer: ethernet/' \$R/node.yaml"
is "MANA only, link_layer ethernet: still no fabric" "$(jget "$T/out" rdma status)" failed

# The profile names the HCA by its name on this node, before and after renaming.
p=$(profile hbv4)
check "HBv4 profile: UCX on mlx5_ib0 only" grep -qx 'export UCX_NET_DEVICES=mlx5_ib0:1' <<<"$p"
p=$(profile hbv4-kernel-names)
check "kernel names profile: UCX on mlx5_1 only" grep -qx 'export UCX_NET_DEVICES=mlx5_1:1' <<<"$p"
p=$(profile ndh100v5)
check "ND H100 v5 profile: the eight HCAs" grep -qx \
	'export UCX_NET_DEVICES=mlx5_ib0:1,mlx5_ib1:1,mlx5_ib2:1,mlx5_ib3:1,mlx5_ib4:1,mlx5_ib5:1,mlx5_ib6:1,mlx5_ib7:1' <<<"$p"
check "ND H100 v5 profile: NCCL_IB_HCA in exact form (= : mlx5_ib1 must not match mlx5_ib1x)" grep -qx \
	'export NCCL_IB_HCA==mlx5_ib0:1,mlx5_ib1:1,mlx5_ib2:1,mlx5_ib3:1,mlx5_ib4:1,mlx5_ib5:1,mlx5_ib6:1,mlx5_ib7:1' <<<"$p"
check "ND H100 v5: /etc/nccl.conf, where NCCL reads it" grep -qx \
	'NCCL_IB_HCA==mlx5_ib0:1,mlx5_ib1:1,mlx5_ib2:1,mlx5_ib3:1,mlx5_ib4:1,mlx5_ib5:1,mlx5_ib6:1,mlx5_ib7:1' "$R/etc/nccl.conf"
check "ND H100 v5: the tenant P_Key (the larger of 0x8017 and 0x7fff)" grep -qx 'export UCX_IB_PKEY=0x8017' <<<"$p"

# mpirun lines users write themselves reach the same settings: Open MPI's system
# parameter file (Debian's own lines kept, "pml = ^ucx" among them: our block comes
# later and wins) and UCX's ucx.conf, read here by the real ompi_info and ucx_info.
fixture rdma/hbv4 "$R"; mpi_section
mkdir -p "$R/etc/openmpi"
printf '# the package'"'"'s file\nmtl = ^ofi\nbtl = ^uct,openib,ofi\npml = ^ucx\nosc = ^ucx,pt2pt\n' >"$R/etc/openmpi/openmpi-mca-params.conf"
cp "$R/etc/openmpi/openmpi-mca-params.conf" "$T/ompi-before"
run_hpc "$T/apply" apply --root "$R" -c "$R/node.yaml" --only rdma,mpi
check "Open MPI params: the package's lines are kept" bash -c "head -5 '$R/etc/openmpi/openmpi-mca-params.conf' | cmp -s - '$T/ompi-before'"
if command -v ompi_info >/dev/null; then
	v=$(OMPI_MCA_mca_base_param_files=$R/etc/openmpi/openmpi-mca-params.conf ompi_info --param pml all --level 9 --parsable 2>/dev/null | grep '^mca:pml:base:param:pml:value:')
	is "ompi_info reads pml ucx from the file (over the package's ^ucx)" "$v" "mca:pml:base:param:pml:value:ucx"
else
	not_ok "ompi_info (openmpi-bin) is not installed"
fi
if command -v ucx_info >/dev/null; then
	v=$(UCX_CONFIG_DIR=$R/etc/ucx ucx_info -c 2>/dev/null | grep '^UCX_NET_DEVICES=')
	is "ucx_info reads the fabric from /etc/ucx/ucx.conf" "$v" "UCX_NET_DEVICES=mlx5_ib0:1"
else
	not_ok "ucx_info (ucx-utils) is not installed"
fi
check "ucx.conf carries the P_Key" grep -qx 'UCX_IB_PKEY=0x800b' "$R/etc/ucx/ucx.conf"
# mpi.profile: false takes our blocks away and leaves the package's file as it was.
sed -i 's/mpi: {profile: true}/mpi: {profile: false}/' "$R/node.yaml"
run_hpc "$T/apply" apply --root "$R" -c "$R/node.yaml" --only rdma,mpi
check "profile: false: Open MPI's file is the package's again" cmp -s "$R/etc/openmpi/openmpi-mca-params.conf" "$T/ompi-before"
check "profile: false: no NCCL_IB_HCA left" bash -c "! grep -q NCCL_IB_HCA '$R/etc/nccl.conf'"

# Slots: the spec's count instead of hpcinit's CPU count; one per GPU on ND (sysfs shows
# eight NVIDIA 3D controllers in the fixture).  The record discovery writes carries it.
slots_case() {  # slots_case FIXTURE MPI-SECTION: sets $slots (the record's) and $T/disc
	fixture "rdma/$1" "$R"; mkroot "$R"
	printf 'mpi: %s\ndiscovery: {method: shared, dir: /shared, expect: 1, wait: 1s}\n' "$2" >>"$R/node.yaml"
	mkdir -p "$R/shared/fixture/nodes"
	HPCINIT_ADDRESS=10.0.0.4 run_hpc_stdout "$T/disc" apply --root "$R" -c "$R/node.yaml" --hostname node01 --only discovery --json
	slots=$(sed -n 's/^slots: //p' "$R/shared/fixture/nodes/node01.rec")
}
slots_case ndh100v5 '{profile: true, slots_per_gpu: true}'
is "ND H100 v5, slots_per_gpu: 8 slots" "$slots" 8
has_detail "ND H100 v5: said why" "$T/disc" discovery '^slots: 8, one per GPU \(mpi.slots_per_gpu; [0-9]+ cores\)$'
slots_case hbv4 '{profile: true, slots: 176}'
is "HBv4, mpi.slots 176: 176 slots" "$slots" 176
slots_case hbv4 '{profile: true, slots_per_gpu: true, slots: 96}'
is "HBv4 (no GPU), slots_per_gpu and slots 96: 96" "$slots" 96
has_detail "no GPU: said" "$T/disc" discovery '^slots: mpi.slots_per_gpu, but sysfs shows no GPU .*: mpi.slots instead$'
slots_case hbv4 '{profile: true}'
is "no override: the usable cores" "$slots" "$(nproc)"

# Without the rdma step (mpi alone reads sysfs): the same choice.
fixture rdma/hbv4-kernel-names "$R"; mpi_section
run_hpc "$T/apply" apply --root "$R" -c "$R/node.yaml" --only mpi
check "kernel names, mpi alone: UCX on mlx5_1 only" grep -qx 'export UCX_NET_DEVICES=mlx5_1:1' "$R/etc/profile.d/hpcinit-mpi.sh"

done_testing
