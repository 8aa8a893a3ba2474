#!/bin/bash
# SPDX-License-Identifier: MIT
#
# GPUs in Slurm, with Debian 12's own Slurm (slurm-wlm 22.05.8) and munge on
# simulated nodes: a real slurmctld (configless, dynamic nodes, GresTypes=gpu,
# a gres.conf that includes each node's own lines) on the head, and on each
# compute "hpcinit apply" with a gpu section:
#   - a compute with two GPUs registers Gres=gpu:a100:2, its gres.conf lines
#     name /dev/nvidia0 and /dev/nvidia1 (written whole, nothing else left in
#     /etc/slurm), and "srun --gres=gpu:2" runs there with
#     CUDA_VISIBLE_DEVICES=0,1 as Slurm sets it; --gres=gpu:3 is refused;
#   - a compute short of one device node fails, says which, and never
#     registers: it is not in sinfo and runs no slurmd;
#   - a compute whose slurmd is newer than slurmctld (24.11.5 against the
#     real 22.05.8) says so with both versions and never registers.
#
# Stand-ins (named; these machines have no GPU and no Slurm 24.11):
#   - GPUs: each GPU compute's /sys/bus/pci/devices and /proc/driver are
#     bind mounts of a tree tests/fixtures/gpu/mkroot.sh made (an NC A100
#     v4 with 2 GPUs: PCI functions 10de:20b5 bound to "nvidia", the
#     driver's information files), an empty /sys/class/infiniband (that size
#     has no InfiniBand), and its /dev is a tmpfs holding the usual
#     character devices and mknod'ed /dev/nvidia0, /dev/nvidia1 (c 195 N) and
#     /dev/nvidiactl (c 195 255), which Slurm treats like any device file;
#   - the newer slurmd: in that compute only, /usr/sbin/slurmd is a script
#     answering -V with "slurm 24.11.5" (the version Debian 13's slurmd
#     prints) and refusing anything else; slurmctld, scontrol and munge are real.
#   - as in tests/cluster/slurm.sh: tmpfs cgroups, cgroup/v1 in cgroup.conf,
#     proctrack/linuxproc, task/none, slurmctld started by the test.
SIM_PREFIX=slg SIM_NET=198.19.26
. "$(dirname "$0")/lib.sh"

for t in slurmctld slurmd munged scontrol sinfo srun mknod; do
	command -v "$t" >/dev/null || { echo "SKIP: $t not installed (slurm-wlm, munge)"; exit 77; }
done

H=$(node 1) C1=$(node 2) C2=$(node 3) C3=$(node 4)
sim up 4 --shared "$SHARED" --dns >/dev/null
HA=$(sim addr "$H")

head -c 128 /dev/urandom > "$T/munge.key"
for n in "$H" "$C1" "$C2" "$C3"; do
	on "$n" install -D -m 0600 "$T/munge.key" /etc/hpcinit/munge.key
done
for n in "$C1" "$C2" "$C3"; do
	on "$n" mount -t tmpfs sim-cgroup /sys/fs/cgroup
done

# The GPU stand-ins (above): a fixture tree per compute, mounted where the gpu step reads.
gpu_standin() {      # gpu_standin NODE [MISSING-MINOR]
	local n=$1 miss=${2:-} r=$T/gpu-$1 d
	bash "$TOP_SRCDIR/tests/fixtures/gpu/mkroot.sh" "$r" nca100v4-2
	[ -z "$miss" ] || rm "$r/dev/nvidia$miss"
	on "$n" mount --bind "$r/sys/bus/pci/devices" /sys/bus/pci/devices
	on "$n" mount --bind "$r/proc/driver" /proc/driver
	on "$n" mount -t tmpfs -o mode=0755 sim-dev /dev
	for d in null:1:3 zero:1:5 full:1:7 random:1:8 urandom:1:9 tty:5:0; do
		on "$n" mknod -m 0666 "/dev/${d%%:*}" c "$(echo "$d" | cut -d: -f2)" "${d##*:}"
	done
	on "$n" mkdir -m 1777 /dev/shm
	on "$n" cp -a "$r/dev/." /dev/
	# An NC A100 v4 has no InfiniBand: hide any RDMA device of this host (rxe of another test)
	on "$n" sh -c "[ ! -d /sys/class/infiniband ] || mount -t tmpfs sim-ib /sys/class/infiniband"
}
gpu_standin "$C1"
gpu_standin "$C2" 1

mkdir -m 0755 "$T/ctld"
cat > "$T/slurm.conf" <<EOF
ClusterName=$CLUSTER
SlurmctldHost=$H($HA)
SlurmctldParameters=enable_configless
AuthType=auth/munge
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MaxNodeCount=16
GresTypes=gpu
Nodeset=dyn Feature=$CLUSTER
PartitionName=main Nodes=dyn Default=YES MaxTime=INFINITE State=UP
ReturnToService=2
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$T/ctld
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd-%n.log
SlurmdSpoolDir=/var/lib/slurm/slurmd
TmpFS=/var/lib/slurm
EOF
echo 'CgroupPlugin=cgroup/v1' > "$T/cgroup.conf"
on "$H" install -D -m 0644 "$T/slurm.conf" /etc/slurm/slurm.conf
on "$H" install -D -m 0644 "$T/cgroup.conf" /etc/slurm/cgroup.conf
# docs/slurm.md: the head's gres.conf includes each node's own lines; its own has none.
echo 'Include /etc/slurm/hpcinit-gres.conf' > "$T/gres.conf"
on "$H" install -D -m 0644 "$T/gres.conf" /etc/slurm/gres.conf
echo '# no GPUs on the head' > "$T/head-gres.conf"
on "$H" install -D -m 0644 "$T/head-gres.conf" /etc/slurm/hpcinit-gres.conf
printf 'version: 1\ncluster: {name: %s, role: head}\nslurm: {key_file: /etc/hpcinit/munge.key}\n' "$CLUSTER" \
	> "$T/head.yaml"
install_spec "$H" "$T/head.yaml"
run_hpc "$T/head.out" "$H" apply
check "head: apply exits 0" eval '[ $rc = 0 ] || { sed "s/^/  | /" "$T/head.out"; false; }'
on "$H" slurmctld -i
ctld_up() {
	local i
	for i in $(seq 50); do on "$H" scontrol ping 2>/dev/null | grep -q 'is UP' && return 0; sleep 0.2; done
	on "$H" scontrol ping; tail -5 "$T/slurmctld.log"; return 1
}
check "slurmctld (configless, GresTypes=gpu) is up on the head" ctld_up

compute_spec() {      # compute_spec [EXTRA YAML]
	cat <<-EOF
	version: 1
	cluster: {name: $CLUSTER, network: $SIM_NET.0/24}
	slurm: {conf_servers: ["$HA"], key_file: /etc/hpcinit/munge.key}
	EOF
	[ -z "${1:-}" ] || echo "$1"
}
compute_spec 'gpu: {count: 2}' > "$T/c1.yaml"
compute_spec 'gpu: {count: 2}' > "$T/c2.yaml"
compute_spec 'memlock: {limit: unlimited}' > "$T/c3.yaml"
install_spec "$C1" "$T/c1.yaml"
install_spec "$C2" "$T/c2.yaml"
install_spec "$C3" "$T/c3.yaml"

# The newer slurmd (a stand-in, above), in C3 alone.
cat > "$T/slurmd-24.11" <<'EOF'
#!/bin/sh
# STAND-IN for Debian 13's slurmd (slurm-wlm 24.11.5) in tests/cluster/slurm-gres.sh.
[ "$1" = -V ] && { echo "slurm-wlm 24.11.5"; exit 0; }
echo "slurmd stand-in: only -V" >&2
exit 1
EOF
chmod 0755 "$T/slurmd-24.11"
on "$C3" mount --bind "$T/slurmd-24.11" /usr/sbin/slurmd

show() { echo "  exit $2"; sed 's/^/  | /' "$1"; return 1; }
run_hpc "$T/c1.out" "$C1" apply -v
check "$C1 (2 GPUs): apply exits 0" eval '[ $rc = 0 ] || show "$T/c1.out" $rc'
check "$C1: registered with Gres=gpu:a100:2" contains "$T/c1.out" "Gres=gpu:a100:2)"
hdr="# Written by hpcinit (the slurm step) from the GPUs this node has; do not edit.
# The head's gres.conf includes this file (docs/slurm.md)."
check "$C1: its gres.conf lines name the device files it found" \
	same_text "$(on "$C1" cat /etc/slurm/hpcinit-gres.conf)" "$hdr
Name=gpu Type=a100 File=/dev/nvidia0
Name=gpu Type=a100 File=/dev/nvidia1"
check "$C1: gres.conf lines root's, 0644; no temporary file left beside them" \
	same_text "$(on "$C1" stat -c '%U %a' /etc/slurm/hpcinit-gres.conf; on "$C1" ls /etc/slurm | grep -c tmp || true)" \
	"root 644
0"
check "$C1: slurmd -Z is told the GRES it found, the controller's version was compared" \
	contains "$T/c1.out" "slurmd 22.05.8, slurmctld 22.05.8"
on "$H" sinfo -N -h -o '%N %t %G' > "$T/sinfo1"
check "$C1 is idle with GRES gpu:a100:2" grep -qx "$C1 idle gpu:a100:2" "$T/sinfo1"
rc=0
# (stdout compared: srun's stderr says when a job waited for resources, shown with a failure)
on "$H" timeout 60 srun -N1 -w "$C1" --gres=gpu:2 sh -c 'echo "CUDA_VISIBLE_DEVICES=$CUDA_VISIBLE_DEVICES"' \
	> "$T/srun.out" 2>"$T/srun.err" || rc=$?
srun_same() { same_text "$1" "$2" || { sed 's/^/  srun stderr: /' "$3"; return 1; }; }
check "srun --gres=gpu:2 runs on $C1 with CUDA_VISIBLE_DEVICES=0,1" \
	srun_same "$(cat "$T/srun.out"; echo "rc=$rc")" "CUDA_VISIBLE_DEVICES=0,1
rc=0" "$T/srun.err"
rc=0
on "$H" timeout 30 srun -N1 -w "$C1" --gres=gpu:3 true > "$T/srun3.out" 2>&1 || rc=$?
check "srun --gres=gpu:3 on $C1 is refused (it has 2)" eval '[ $rc != 0 ] || show "$T/srun3.out" $rc'

run_hpc "$T/c2.out" "$C2" apply
check "$C2 (/dev/nvidia1 missing): apply exits 1" eval '[ $rc = 1 ] || show "$T/c2.out" $rc'
check "$C2: says it is not registered, and why (the gpu step's finding)" \
	grep -q "not registered with Slurm: the node failed (hpcinit:gpu\." "$T/c2.out"
check "$C2: names the missing device file" contains "$T/c2.out" "/dev/nvidia1"
check "$C2: no slurmd was started" eval '! on "$C2" test -e /run/slurmd.pid'

run_hpc "$T/c3.out" "$C3" apply
check "$C3 (slurmd 24.11.5): apply exits 1" eval '[ $rc = 1 ] || show "$T/c3.out" $rc'
check "$C3: says slurmd is newer than slurmctld, with both versions" contains "$T/c3.out" \
	"slurmd 24.11.5 is newer than slurmctld 22.05.8: Slurm refuses it; install slurmd 22.05 or upgrade the controller first"
check "$C3: the finding is slurm.version.newer" eval 'hpc "$C3" status --json | grep -q "slurm.version.newer"'
check "$C3: no gpu section: its gres.conf lines say it has none" \
	same_text "$(on "$C3" tail -n 1 /etc/slurm/hpcinit-gres.conf)" "# no GPUs"

on "$H" sinfo -N -h -o '%N %t %G' > "$T/sinfo2"
check "$C2 and $C3 are not in sinfo; $C1 is" \
	same_text "$(awk '{print $1}' "$T/sinfo2")" "$C1"

run_hpc "$T/c1b.out" "$C1" apply
check "$C1: a second apply changes nothing" eval '[ $rc = 0 ] && ! grep -q "^slurm  *changed" "$T/c1b.out" || show "$T/c1b.out" $rc'

done_testing
