# tests/vm/cluster.sh's checks, sourced by it (not run alone): --slurm: the cluster of conf/cloud-init/slurm-*.yaml (docs/slurm.md).
# Each check_NAME is run by --checks NAME; ok/not_ok, each_vm, vm_exec and the
# cluster's variables are cluster.sh's.
# shellcheck shell=bash

# ---- --slurm: the cluster of conf/cloud-init/slurm-*.yaml (docs/slurm.md) ----
slurm_computes() { names | grep -v '^head$'; }
# slurm_on_head CHECK SCRIPT: run SCRIPT on the head; the check passes when it exits 0.
slurm_on_head() {
	local out
	if out=$(vm_exec head 300 "$2" 2>&1); then ok "$1"; [ -z "$out" ] || sed 's/^/#   /' <<< "$out"
	else not_ok "$1" "$out"; fi
}
# sinfo_wait NODE "STATE REASON": on the head, until sinfo says so for NODE (up to 120 s).
sinfo_wait() {
	printf 'for i in $(seq 120); do s=$(sinfo -h -n %s -o "%%t %%E"); s=${s/\\*/}; [ "$s" = "%s" ] && exit 0; sleep 1; done; echo "sinfo for %s: $s (want %s)"; sinfo -N -o "%%N %%t %%f %%E"; exit 1' "$1" "$2" "$1" "$2"
}
# live_agree VM WHEN HEALTH READY STATUS: the health socket's answer, hpcinit_ready in the
# node_exporter textfile and hpcinit status's exit code on VM say HEALTH, READY, STATUS.
live_agree() {
	local got
	got=$(vm_exec "$1" 60 '
		r=$(bash -c "exec 3<>/dev/tcp/127.0.0.1/9119 && printf \"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n\" >&3 && timeout 30 cat <&3")
		case $r in *Unhealthy*) h=Unhealthy ;; *Healthy*) h=Healthy ;; *) h="http:$(echo "$r" | head -1)" ;; esac
		m=$(sed -n "s/^hpcinit_ready //p" /var/lib/prometheus/node-exporter/hpcinit.prom)
		hpcinit status >/dev/null 2>&1; echo "$h $m $?"' 2>&1) || true
	if [ "$got" = "$3 $4 $5" ]; then
		ok "slurm: $1 $2: health $3, hpcinit_ready $4, hpcinit status exit $5 (Slurm agrees)"
	else
		not_ok "slurm: $1 $2: health, hpcinit_ready, hpcinit status exit agree with Slurm" "got: $got" "want: $3 $4 $5"
	fi
}
check_slurm() {
	local feats=glocluster,hbv4,standard_hb176rs_v4 n script c1 out
	c1=c1
	each_vm "slurm: cloud-init done with the slurm custom-data, hpcinit status ready, no failed unit" '
		cloud-init status | grep -q "^status: done" || { cloud-init status --long; grep -vE "^(Get|Selecting|Preparing|Unpacking|Setting up|Processing)" /var/log/cloud-init-output.log | tail -30; exit 1; }
		hpcinit status > /tmp/st.txt 2>&1; grep -qiw ready /tmp/st.txt || { cat /tmp/st.txt; exit 1; }
		f=$(systemctl list-units --failed --plain --no-legend)
		[ -z "$f" ] || { echo "failed units: $f"; for u in $(echo "$f" | cut -d" " -f1); do journalctl -b -u "$u" --no-pager | tail -15; done; exit 1; }'
	each_vm "slurm: the custom-data munge key is munge's (0400) and munged runs with it; head: slurmctld active, started after munged got that key; computes: slurmd is the transient unit hpcinit-slurmd, memlock unlimited, the package's slurmd.service disabled and inactive" '
		set -e
		[ "$(stat -c "%U %a" /etc/munge/munge.key)" = "munge 400" ] || { ls -l /etc/munge; exit 1; }
		cmp -s /etc/munge/munge.key /etc/hpcinit/munge.key || { echo "/etc/munge/munge.key is not the custom-data key"; exit 1; }
		systemctl is-active -q munge || { systemctl status --no-pager munge; exit 1; }
		munge -n | unmunge >/dev/null || { echo "munge -n | unmunge failed"; exit 1; }
		if [ "$(hostname)" = head ]; then
			systemctl is-active -q slurmctld || { systemctl status --no-pager slurmctld; tail -20 /var/log/slurm/slurmctld.log; exit 1; }
			# the package started slurmctld with munge'"'"'s generated key; it runs since the cluster key
			m=$(systemctl show -p ActiveEnterTimestampMonotonic --value munge.service)
			s=$(systemctl show -p ActiveEnterTimestampMonotonic --value slurmctld.service)
			[ "$s" -ge "$m" ] || { echo "slurmctld active since $s us, munged (cluster key) since $m us"; exit 1; }
			exit 0
		fi
		systemctl is-active -q hpcinit-slurmd.service || { systemctl status --no-pager hpcinit-slurmd.service; tail -20 /var/log/slurm/slurmd.log; exit 1; }
		m=$(systemctl show -p LimitMEMLOCK --value hpcinit-slurmd.service)
		[ "$m" = infinity ] || { echo "hpcinit-slurmd LimitMEMLOCK=$m"; exit 1; }
		p=$(systemctl show -p MainPID --value hpcinit-slurmd.service)
		grep "^Max locked memory" /proc/$p/limits | grep -q unlimited || { cat /proc/$p/limits; exit 1; }
		! systemctl is-active -q slurmd.service || { echo "the package unit slurmd.service runs too"; exit 1; }
		e=$(systemctl is-enabled slurmd.service 2>&1) || true; [ "$e" = disabled ] || { echo "slurmd.service is $e, want disabled (custom-data)"; exit 1; }
		exit 0'
	script='set -e'
	for n in $(slurm_computes); do
		script+="
		$(sinfo_wait "$n" "idle none")
		f=\$(sinfo -h -n $n -o %f | tr , '\\n' | sort | paste -sd,)
		[ \"\$f\" = $feats ] || { echo \"$n features \$f, want $feats\"; exit 1; }"
	done
	script+='
	sinfo -N -o "%N %t %f %m %E"'
	slurm_on_head "slurm: every compute idle in sinfo, features $feats (cluster, VM size fact, spec)" "$script"
	local want got
	want=$(slurm_computes | sort | tr '\n' ' ')
	SRUN_T0=$(date +%s.%N)
	# (stdout compared: srun's stderr, "srun: job N queued and waiting for resources" when a job
	# waited, goes to a file the failure shows)
	got=$(vm_exec head 300 "timeout 240 srun -N$N --job-name=hpcinit-first hostname 2>/tmp/srun-first.err | sort | tr '\\n' ' '" 2>&1) || true
	SRUN_T1=$(date +%s.%N)
	if [ "$got" = "$want" ]; then
		ok "slurm: srun -N$N hostname runs on every compute ($(since "$SRUN_T0") s)"
	else
		# what the computes' slurmd and slurmstepd said (a VM run is too dear to go without)
		local why=() m
		for m in $(slurm_computes); do
			why+=("$m: slurmd.log, errors:" "$(vm_exec "$m" 60 'grep -iE "error|fail|pmix|cgroup" /var/log/slurm/slurmd.log | tail -25' 2>&1)")
		done
		not_ok "slurm: srun -N$N hostname runs on every compute" "got: $got" "want: $want" \
			"srun's stderr: $(vm_exec head 60 'cat /tmp/srun-first.err' 2>&1)" "${why[@]}"
	fi
	# An MPI job through srun (MpiDefault=pmix, the custom-data's libpmix-dev): the harness's
	# hello (each VM's /hpcvm/mpi-hello), one rank a compute, over TCP on the cluster network.
	got=$(vm_exec head 300 "cd /tmp && OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=$NET.0/24 timeout 240 srun -N$N --ntasks-per-node=1 /hpcvm/mpi-hello" 2>&1) || true
	if printf '%s\n' "$got" | grep -q "^allreduce: $N of $N ranks"; then
		ok "slurm: an MPI hello through srun (pmix) runs one rank on each of the $N computes"
	else
		not_ok "slurm: an MPI hello through srun (pmix) runs one rank on each of the $N computes" "got: $got"
	fi
	# What a job gets (memlock), read from the running slurmd (hpcinit-slurmd under real
	# systemd) and slurm.conf's PropagateResourceLimitsExcept=MEMLOCK (slurm-head.yaml): the
	# number hpcinit check states on c1 is what ulimit -l prints in a job srun starts there.
	local said got
	said=$(vm_exec "$c1" 120 "hpcinit check --only memlock -v 2>&1 | grep -oE 'job: a Slurm job gets memlock ([0-9]+ KiB|unlimited)' | head -1 | sed 's/.* memlock //; s/ KiB\$//'" 2>&1) || true
	got=$(vm_exec head 120 "timeout 60 srun -N1 -w $c1 bash -c 'ulimit -l' 2>/tmp/srun-memlock.err" 2>&1) || true
	if [ -n "$said" ] && [ "$said" = "$got" ]; then
		ok "slurm: $c1: hpcinit check says a Slurm job gets memlock $said, and srun's job has $got"
	else
		not_ok "slurm: $c1: what hpcinit check says a Slurm job gets (memlock) is what srun's job has" \
			"hpcinit check said: '$said'" "srun printed: '$got'" \
			"srun's stderr: $(vm_exec head 60 'cat /tmp/srun-memlock.err' 2>&1)"
	fi
	each_vm "slurm: computes: hpcinit-health.socket (enabled by the custom-data) answers 200 Healthy on 127.0.0.1:9119/health" '
		[ "$(hostname)" = head ] && exit 0
		systemctl is-enabled -q hpcinit-health.socket && systemctl is-active -q hpcinit-health.socket ||
			{ systemctl status --no-pager hpcinit-health.socket; exit 1; }
		exec 3<>/dev/tcp/127.0.0.1/9119
		printf "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" >&3
		r=$(timeout 30 cat <&3)
		echo "$r" | head -1 | grep -q " 200 " && echo "$r" | grep -q "\"ApplicationHealthState\": *\"Healthy\"" || { echo "answer: $r"; exit 1; }'
	# A check that starts failing (the memlock limits file is gone: a job gets less):
	# Slurm's HealthCheckProgram drains the node with hpcinit:<tag>, and the same check
	# turns the node's health answer, hpcinit_ready and hpcinit status failed; repaired,
	# it resumes and all of them say ready again (issue 33: one live state).
	vm_exec "$c1" 60 'mkdir -p /var/lib/prometheus/node-exporter; systemctl stop hpcinit-check.timer' >/dev/null 2>&1 || true
	out=$(vm_exec "$c1" 120 'mv /etc/security/limits.d/90-hpcinit.conf /root/90-hpcinit.conf.saved
		/usr/libexec/hpcinit/hpcinit-health-check > /tmp/hc.txt 2>&1; echo "exit $?"; grep -i "^slurm\|drain" /tmp/hc.txt' 2>&1) || true
	slurm_on_head "slurm: $c1: HealthCheckProgram with a failing check drains it with reason hpcinit:... ($(head -1 <<< "$out"))" \
		"for i in \$(seq 60); do s=\$(sinfo -h -n $c1 -o '%t %E'); s=\${s/\\*/}; case \$s in 'drain hpcinit:'*) echo \"\$s\"; exit 0 ;; esac; sleep 1; done; echo \"sinfo: \$s\"; exit 1"
	sed 's/^/#   /' <<< "$out"
	live_agree "$c1" "drained by the failing check" Unhealthy 0 1
	out=$(vm_exec "$c1" 120 'mv /root/90-hpcinit.conf.saved /etc/security/limits.d/90-hpcinit.conf
		/usr/libexec/hpcinit/hpcinit-health-check > /tmp/hc2.txt 2>&1; echo "exit $?"; grep -i "resumed" /tmp/hc2.txt' 2>&1) || true
	slurm_on_head "slurm: $c1: repaired, the next HealthCheckProgram resumes it ($(head -1 <<< "$out"))" "$(sinfo_wait "$c1" "idle none")"
	live_agree "$c1" "resumed by the repaired check" Healthy 1 0
	vm_exec "$c1" 60 'rm -rf /var/lib/prometheus; systemctl start hpcinit-check.timer' >/dev/null 2>&1 || true
	# An admin's drain is left alone.
	out=$(vm_exec head 60 "scontrol update nodename=$c1 state=drain reason='bad dimm'" 2>&1) || true
	out+=$(vm_exec "$c1" 120 '/usr/libexec/hpcinit/hpcinit-health-check 2>&1 | grep -o "left alone"' 2>&1) || true
	slurm_on_head "slurm: $c1: an admin's drain is left alone by the HealthCheckProgram ($out)" \
		"sleep 2; $(sinfo_wait "$c1" "drain bad dimm")"
	vm_exec head 60 "scontrol update nodename=$c1 state=resume" >/dev/null 2>&1 || true
}

# GPUs as GRES (issue 34), on real systemd and Slurm: STAND-INS for two
# A100 PCIe GPUs (these VMs have none), made inside the VM where the gpu step
# reads: a tmpfs on /sys/bus/pci/devices and one on /proc/driver holding the
# PCI functions (10de:20b5, class 0x030200, bound to "nvidia") and the
# driver's files, an empty /sys/class/infiniband (that size has none), and
# /dev/nvidia0, /dev/nvidia1 (mknod c 195 N) and /dev/nvidiactl.  With "gpu: {count: 2}" added to its spec, a compute that
# left Slurm applies again and registers gpu:<type>:2; srun --gres=gpu:2 runs
# there with CUDA_VISIBLE_DEVICES as Slurm sets it.  A compute short of one
# device node never registers and says why; given it back, it registers.
slurm_gpu_standin() {   # the script for a VM: $1 is the minor left without a device node, or ""
	cat <<EOF
set -e
miss='$1'
grep -q '^gpu-standin-pci ' /proc/mounts || mount -t tmpfs gpu-standin-pci /sys/bus/pci/devices
grep -q '^gpu-standin-drv ' /proc/mounts || mount -t tmpfs gpu-standin-drv /proc/driver
mkdir -p /proc/driver/nvidia/gpus
printf 'NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.08  Tue Mar  5 22:42:15 UTC 2024\n' > /proc/driver/nvidia/version
for i in 0 1; do
	a=000\$((i + 1)):00:00.0 d=/sys/bus/pci/devices/000\$((i + 1)):00:00.0
	mkdir -p "\$d" "/proc/driver/nvidia/gpus/\$a"
	echo 0x10de > "\$d/vendor"; echo 0x20b5 > "\$d/device"; echo 0x030200 > "\$d/class"; echo 0 > "\$d/numa_node"
	ln -sfn ../../../../bus/pci/drivers/nvidia "\$d/driver"
	printf 'Model: \t\t NVIDIA stand-in\nDevice Minor: \t %d\nBus Location: \t %s\n' "\$i" "\$a" > "/proc/driver/nvidia/gpus/\$a/information"
	rm -f "/dev/nvidia\$i"
	[ "\$i" = "\$miss" ] || mknod -m 0666 "/dev/nvidia\$i" c 195 "\$i"
done
[ -c /dev/nvidiactl ] || mknod -m 0666 /dev/nvidiactl c 195 255
# an NC A100 v4 has no InfiniBand (GPUDirect RDMA is checked only beside an RDMA device)
[ ! -d /sys/class/infiniband ] || grep -q '^gpu-standin-ib ' /proc/mounts || mount -t tmpfs gpu-standin-ib /sys/class/infiniband
grep -q '^gpu:' /etc/hpcinit/node.yaml || printf 'gpu:\n  count: 2\n' >> /etc/hpcinit/node.yaml
EOF
}
check_slurmgpu() {
	local c1 c2 out rc
	c1=$(slurm_computes | head -1)
	c2=$(slurm_computes | sed -n 2p)
	out=$(vm_exec "$c1" 600 "$(slurm_gpu_standin '')
		hpcinit leave > /tmp/gpu-leave.txt 2>&1 || { cat /tmp/gpu-leave.txt; exit 1; }
		hpcinit apply > /tmp/gpu-apply.txt 2>&1 || { echo \"apply exit \$?\"; cat /tmp/gpu-apply.txt; exit 1; }
		grep -o 'Gres=gpu[^) ]*' /tmp/gpu-apply.txt
		cat /etc/slurm/hpcinit-gres.conf" 2>&1) && rc=0 || rc=$?
	if [ "$rc" = 0 ] && grep -q '^Gres=gpu:\([a-z0-9_.-]*:\)\?2$' <<< "$out" &&
		grep -q '^Name=gpu .*File=/dev/nvidia1$' <<< "$out"; then
		ok "slurmgpu: $c1 (2 stand-in GPUs): hpcinit apply registers $(grep '^Gres=' <<< "$out"), gres.conf lines name /dev/nvidia0 and /dev/nvidia1"
		sed 's/^/#   /' <<< "$out"
	else
		not_ok "slurmgpu: $c1 (2 stand-in GPUs): hpcinit apply registers gpu:2 with its gres.conf lines" "$out"
	fi
	slurm_on_head "slurmgpu: $c1 is idle in sinfo with GRES gpu:...2" "$(sinfo_wait "$c1" "idle none")
		g=\$(sinfo -h -n $c1 -o %G); echo \"$c1 GRES \$g\"; case \$g in gpu:*2|gpu:*2\\(*) exit 0 ;; esac; exit 1"
	out=$(vm_exec head 300 "timeout 240 srun -N1 -w $c1 --gres=gpu:2 bash -c 'echo CUDA_VISIBLE_DEVICES=\$CUDA_VISIBLE_DEVICES' 2>/tmp/srun-gpu.err" 2>&1) || true
	if [ "$out" = "CUDA_VISIBLE_DEVICES=0,1" ]; then
		ok "slurmgpu: srun -w $c1 --gres=gpu:2 runs with $out (Slurm's gpu_generic binding)"
	else
		not_ok "slurmgpu: srun -w $c1 --gres=gpu:2 runs with CUDA_VISIBLE_DEVICES=0,1" "got: $out" \
			"srun's stderr: $(vm_exec head 60 'cat /tmp/srun-gpu.err' 2>&1)"
	fi
	[ -n "$c2" ] || return 0
	out=$(vm_exec "$c2" 600 "$(slurm_gpu_standin 1)
		hpcinit leave > /tmp/gpu-leave.txt 2>&1 || { cat /tmp/gpu-leave.txt; exit 1; }
		rc=0; hpcinit apply > /tmp/gpu-apply.txt 2>&1 || rc=\$?; echo \"apply exit \$rc\"
		grep -E 'gpu|not registered' /tmp/gpu-apply.txt
		! systemctl is-active -q hpcinit-slurmd.service || echo 'hpcinit-slurmd.service active'" 2>&1) || true
	if grep -q '^apply exit 1$' <<< "$out" && grep -q 'not registered with Slurm' <<< "$out" &&
		grep -q '/dev/nvidia1' <<< "$out" && ! grep -q 'hpcinit-slurmd.service active' <<< "$out"; then
		ok "slurmgpu: $c2 short of /dev/nvidia1: apply exits 1, says why, starts no slurmd"
		sed 's/^/#   /' <<< "$out"
	else
		not_ok "slurmgpu: $c2 short of /dev/nvidia1: apply exits 1, says why, starts no slurmd" "$out"
	fi
	slurm_on_head "slurmgpu: $c2 (short of a GPU) is not in sinfo" \
		"sleep 5; ! sinfo -N -h -o %N | grep -qx $c2 || { sinfo -N -o '%N %t %G %E'; exit 1; }"
	out=$(vm_exec "$c2" 600 "mknod -m 0666 /dev/nvidia1 c 195 1
		hpcinit apply > /tmp/gpu-apply2.txt 2>&1 || { echo \"apply exit \$?\"; cat /tmp/gpu-apply2.txt; exit 1; }
		grep -o 'Gres=gpu[^) ]*' /tmp/gpu-apply2.txt" 2>&1) && rc=0 || rc=$?
	if [ "$rc" = 0 ]; then ok "slurmgpu: $c2 given /dev/nvidia1 back: apply registers it ($out)"
	else not_ok "slurmgpu: $c2 given /dev/nvidia1 back: apply registers it" "$out"; fi
}

# The boot split to Slurm, per compute, in seconds after power-on (printed,
# not asserted): kernel start (agent's clock and /proc/uptime), then this
# boot's phases from /run/hpcinit/boot.json (cloud-init start, hpcinit
# ready, registered with Slurm, cloud-init end), then Slurm's own
# timestamps on the head's clock (slurmd's start, SlurmdStartTime) and the
# first srun's end (its job's EndTime).  slurmctld logs no registration of a
# dynamic node at its default level, so there is no "seen" time of its own.  VM clocks are mapped to the host's (clock_offset).
check_slurmbench() {
	local n k out off_head ph sd end
	off_head=$(clock_offset head) || off_head=0
	printf '# %-4s %7s %9s %8s %8s %8s %8s %10s\n' VM kernel ci-start ready slurm slurmd ci-end first-srun
	for n in $(slurm_computes); do
		k=$(awk -v l="${T_LAUNCH[$n]}" '{printf "%.1f", $1 - $2 - l}' "$W/vm/$n/out/agent-start")
		ph=$(vm_exec "$n" 60 'python3 -c "
import json
p = {x[\"phase\"]: x[\"since_boot_ms\"] / 1000 for x in json.load(open(\"/run/hpcinit/boot.json\"))[\"phases\"] if \"since_boot_ms\" in x}
print(\" \".join(\"%.1f\" % p[k] if k in p else \"?\" for k in (\"cloud-init.start\", \"ready\", \"slurm\", \"cloud-init.end\")))
"' 2>&1) || { not_ok "slurmbench: /run/hpcinit/boot.json of $n" "$ph"; return; }
		# Slurm's own times (head clock, unix seconds)
		out=$(vm_exec head 60 "
			t() { [ -n \"\$1\" ] && date -d \"\$1\" +%s || echo ?; }
			sd=\$(scontrol -o show node $n | grep -o 'SlurmdStartTime=[^ ]*' | cut -d= -f2)
			je=\$(scontrol -o show job 2>/dev/null | grep 'JobName=hpcinit-first' | grep -o 'EndTime=[^ ]*' | cut -d= -f2 | head -1)
			echo \$(t \"\$sd\") \$(t \"\$je\")" 2>&1) || true
		read -r sd end <<< "$out"
		read -r cs rd sl ce <<< "$ph"
		awk -v n="$n" -v k="$k" -v cs="$cs" -v rd="$rd" -v sl="$sl" -v ce="$ce" -v sd="$sd" -v je="$end" \
			-v o="$off_head" -v l="${T_LAUNCH[$n]}" '
			function ph(v) { return v == "?" ? "?" : sprintf("%.1f", k + v) }
			function wall(v) { return v !~ /^[0-9]+$/ ? "?" : sprintf("%.0f", v - o - l) }
			BEGIN { printf "# %-4s %6.1fs %8ss %7ss %7ss %7ss %7ss %9ss\n", n, k, ph(cs), ph(rd), ph(sl),
				wall(sd), ph(ce), wall(je) }'
	done
	echo "# (seconds after each VM's power-on: kernel start; from boot.json: cloud-init start, hpcinit"
	echo "#  ready, registered with Slurm (slurm step done), cloud-init end; Slurm's own, whole seconds on"
	echo "#  the head's clock mapped to the host's (offset ${off_head} s): slurmd started (SlurmdStartTime),"
	echo "#  the first srun's EndTime (the harness runs it after every VM's cloud-init is done, so it"
	echo "#  is an upper bound; ? when it failed))"
	ok "slurmbench: boot split to srun printed (not asserted)"
}

# hpcinit's own part of each compute's boot, from its run's own report: the first
# apply's table (cloud-init ran it; its output is in cloud-init-output.log: each step's
# time, including what it waited for: systemd, munged, slurmctld), the phases boot.json
# recorded, and the CPU (user+sys, bash's time: hpcinit and the programs it ran and
# waited for, not the daemons they started) of hpcinit apply and check run again now
# on the converged node, and of the boot's registration done again on c1 (hpcinit leave,
# munge's key removed: apply installs the key, restarts munged, starts slurmd and waits
# for slurmctld to list the node, as at boot).  Printed, not asserted.
check_slurmshare() {
	local n out
	out=$(vm_exec c1 300 '
		hpcinit leave > /tmp/share.leave 2>&1 || { cat /tmp/share.leave; exit 1; }
		rm -f /etc/munge/munge.key
		# hpcinit'"'"'s own CPU apart from the programs it ran: /proc/PID/stat of the
		# exited, not yet reaped process (utime stime, and cutime cstime: its children)
		python3 -c "
import os, subprocess, time
t0 = time.time()
p = subprocess.Popen([\"hpcinit\", \"apply\"], stdout=open(\"/tmp/share.reg\", \"w\"), stderr=subprocess.STDOUT)
os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
f = open(\"/proc/%d/stat\" % p.pid).read().rsplit(\")\", 1)[1].split()
hz = os.sysconf(\"SC_CLK_TCK\")
wall = time.time() - t0
p.wait()
print(\"registration again: hpcinit apply: %.2f s wall; hpcinit itself %.2f s CPU (user %.2f, sys %.2f); the programs it ran %.2f s\" % (wall, (int(f[11]) + int(f[12])) / hz, int(f[11]) / hz, int(f[12]) / hz, (int(f[13]) + int(f[14])) / hz))
"
		grep -E "^(memlock|slurm) |^result" /tmp/share.reg' 2>&1) ||
		{ notok "slurmshare: c1's registration again" "$out"; return; }
	sed "s/^/# c1: /" <<< "$out"
	for n in $(slurm_computes); do
		out=$(vm_exec "$n" 300 '
			sed -n "/^MODULE  *RESULT/,/^\$/p" /var/log/cloud-init-output.log | head -14
			python3 -c "
import json
b = json.load(open(\"/run/hpcinit/boot.json\"))
print(\"boot.json:\", \" \".join(\"%s=%.3f\" % (x[\"phase\"], x[\"since_boot_ms\"] / 1000) for x in b[\"phases\"] if \"since_boot_ms\" in x))
"
			TIMEFORMAT="%R s wall, %U s user, %S s sys"
			for a in apply check; do
				{ time hpcinit $a > /tmp/share.$a 2>&1; } 2> /tmp/share.$a.t || true
				echo "again now: hpcinit $a: $(cat /tmp/share.$a.t), its programs included ($(tail -1 /tmp/share.$a))"
			done' 2>&1) || { notok "slurmshare: $n" "$out"; return; }
		sed "s/^/# $n: /" <<< "$out"
	done
	ok "slurmshare: hpcinit's part of each compute's boot printed (not asserted)"
}

# hpcinit leave on the last compute, under systemd: drained, slurmd's unit
# stopped, the dynamic node deleted.
check_slurmleave() {
	local v out
	v=$(slurm_computes | tail -1)
	if out=$(vm_exec "$v" 300 'hpcinit leave > /tmp/leave.txt 2>&1 || { cat /tmp/leave.txt; exit 1; }
		grep "removed from Slurm" /tmp/leave.txt
		! systemctl is-active -q hpcinit-slurmd.service || { echo "hpcinit-slurmd.service still active"; exit 1; }' 2>&1) &&
		out+=$(vm_exec head 60 "! sinfo -N -h -o %N | grep -qx $v || { echo '$v still in sinfo'; sinfo -N; exit 1; }" 2>&1); then
		ok "slurmleave: $v: hpcinit leave drains it, stops hpcinit-slurmd.service, deletes it from Slurm"
		sed 's/^/#   /' <<< "$out"
	else
		not_ok "slurmleave: $v: hpcinit leave drains it, stops hpcinit-slurmd.service, deletes it from Slurm" "$out"
	fi
}
