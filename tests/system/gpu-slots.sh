#!/bin/bash
# What the GPUs found give the other steps, through the real binary on a fake ND H100 v5
# root (tests/fixtures/gpu/mkroot.sh: no GPU here, the files stand in): with
# mpi.slots_per_gpu the node's record says one slot per usable GPU (not the 8 on the
# bus, not the size table's 8), also after the announce hook rewrote the record, and
# the MPI profile exports each GPU's HCA.
. "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ]; then echo "SKIP: the fake /dev/nvidia* need mknod (root)"; exit 77; fi
R=$T/root
bash "$FIX/gpu/mkroot.sh" "$R" ndh100v5
mkdir -p "$R/shared"
head -c 32 /dev/urandom | base64 >"$R/etc/hpcinit/secret" && chmod 600 "$R/etc/hpcinit/secret"
cat >"$R/node.yaml" <<YAML
version: 1
cluster: {name: gpu, secret_file: /etc/hpcinit/secret}
gpu: {}
discovery: {method: shared, dir: /shared, expect: 1, wait: 0s}
mpi: {slots_per_gpu: true}
YAML
rec() { grep "^slots: " "$R"/shared/gpu/nodes/*.rec; }

run_hpc "$T/out" apply --root "$R" -c "$R/node.yaml"
check "healthy: apply exit 0" test "$rc" = 0
check "healthy: 8 slots in the record" test "$(rec)" = "slots: 8"
check "the profile exports each GPU's HCA in PCI order" grep -qx \
	'export HPCINIT_GPU_HCA=mlx5_ib0,mlx5_ib1,mlx5_ib2,mlx5_ib3,mlx5_ib4,mlx5_ib5,mlx5_ib6,mlx5_ib7' \
	"$R/etc/profile.d/hpcinit-mpi.sh"
run_hpc "$T/status" status --root "$R"
check "status shows each GPU's HCA" grep -Eq \
	'^gpu +ok .*GPU->HCA 0:mlx5_ib0 1:mlx5_ib1 2:mlx5_ib2 3:mlx5_ib3 4:mlx5_ib4 5:mlx5_ib5 6:mlx5_ib6 7:mlx5_ib7$' "$T/status"

# /dev/nvidia6 gone: 8 GPUs on the bus, 7 usable.  The step fails, the node's state changes
# (the announce hook rewrites the record), and the record says 7 slots throughout.
rm "$R/dev/nvidia6"
run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --json
check "7 usable: apply exit 1" test "$rc" = 1
check "7 usable: 7 slots in the record" test "$(rec)" = "slots: 7"
check "7 usable: said by discovery" contains "$T/out" "slots: 7, one per usable GPU (mpi.slots_per_gpu; the gpu step found 8 on the bus"

# An HCA gone: no partial list in the profile.
rm -rf "$R/sys/class/infiniband/mlx5_ib5"
run_hpc "$T/out" apply --root "$R" -c "$R/node.yaml"
check "an HCA gone: no HPCINIT_GPU_HCA" bash -c "! grep -q HPCINIT_GPU_HCA '$R/etc/profile.d/hpcinit-mpi.sh'"
check "an HCA gone: said in the profile" grep -q 'Not every GPU has an HCA here' "$R/etc/profile.d/hpcinit-mpi.sh"
done_testing
