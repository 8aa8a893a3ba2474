#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Ready means schedulable, with Debian 12's own Slurm (slurm-wlm 22.05) and
# munge on simulated nodes: a real slurmctld (configless, dynamic nodes) on
# the head, and on each compute "hpcinit apply" whose slurm step registers
# the node with slurmd -Z only when the rest of the run let it:
#   - two computes come up idle with their features; srun runs hostname and
#     an MPI hello (Open MPI through srun's PMIx) on both;
#   - a compute whose NFS share never comes fails and never starts slurmd:
#     it is not in sinfo;
#   - a degraded compute (up before the cluster formed) registers and is drained
#     with reason hpcinit:<tag>, and "hpcinit check" (Slurm's HealthCheckProgram)
#     resumes it once the others have arrived;
#     the same check drains a node whose check starts failing;
#   - a drain an admin set is left alone by "hpcinit check";
#   - what "hpcinit check" says a job gets (memlock, read from the running
#     slurmd and PropagateResourceLimits(Except)) is what srun's job shows;
#   - a junk record in nodes/ (another node's problem, a cluster finding) drains nobody;
#   - "hpcinit leave" drains the node, stops slurmd and deletes the dynamic node.
# Arrival (docs/slurm.md): the head cannot resolve the computes' names (its
# /etc/hosts knows only itself), so srun working at all shows slurmctld was
# given each node's address (NodeAddr: its cluster.network one, though it
# registers from another network); a registration is paced by its slot of
# slurm.register_window; and in steady state "hpcinit check" asks slurmctld
# nothing (sdiag's RPC counts, and a counting scontrol on PATH).
# The munge key reaches every node as the cluster secret does (a root-only
# file the custom-data writes); hpcinit installs it for munged.
#
# Stand-ins, as the simulation needs them: a simulated node has a fresh sysfs
# without cgroups, so each compute gets an empty tmpfs on /sys/fs/cgroup and
# cgroup.conf names cgroup/v1 (no cgroup controller is used: proctrack/linuxproc,
# task/none); slurmctld is started by the test where systemd starts it on a
# real head (conf/cloud-init/slurm-head.yaml).
SIM_PREFIX=slu SIM_NET=198.19.23
. "$(dirname "$0")/lib.sh"

for t in slurmctld slurmd munged scontrol sinfo srun; do
	command -v "$t" >/dev/null || { echo "SKIP: $t not installed (slurm-wlm, munge)"; exit 77; }
done

H=$(node 1) C1=$(node 2) C2=$(node 3) C3=$(node 4)
sim up 4 --shared "$SHARED" --dns >/dev/null
HA=$(sim addr "$H")
# The head's resolver knows no compute (the computes know each other, for MPI):
# slurmctld must be given their addresses.  (sim.sh rewrites /etc/hosts only when
# a node is added or removed: not in this test.)
on "$H" sh -c "printf '127.0.0.1\tlocalhost\n%s\t%s\n' '$HA' '$H' > /etc/hosts"

# The munge key, written on every node as custom-data writes the cluster secret.
head -c 128 /dev/urandom > "$T/munge.key"
for n in "$H" "$C1" "$C2" "$C3"; do
	on "$n" install -D -m 0600 "$T/munge.key" /etc/hpcinit/munge.key
done
for n in "$C1" "$C2" "$C3"; do
	on "$n" mount -t tmpfs sim-cgroup /sys/fs/cgroup
done

# The head: docs/slurm.md's fragment, with this test's paths.
mkdir -m 0755 "$T/ctld"
cat > "$T/slurm.conf" <<EOF
ClusterName=$CLUSTER
SlurmctldHost=$H($HA)
SlurmctldParameters=enable_configless
AuthType=auth/munge
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MaxNodeCount=16
Nodeset=dyn Feature=$CLUSTER
PartitionName=main Nodes=dyn Default=YES MaxTime=INFINITE State=UP
PropagateResourceLimitsExcept=MEMLOCK
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
# The nodes share the host's /var/spool and /tmp: PMIx's per-step sockets and
# directories need a spool and a TmpFS of each node's own (its /var/lib overlay).
SlurmdSpoolDir=/var/lib/slurm/slurmd
TmpFS=/var/lib/slurm
EOF
echo 'CgroupPlugin=cgroup/v1' > "$T/cgroup.conf"
on "$H" install -D -m 0644 "$T/slurm.conf" /etc/slurm/slurm.conf
on "$H" install -D -m 0644 "$T/cgroup.conf" /etc/slurm/cgroup.conf
cat > "$T/head.yaml" <<EOF
version: 1
cluster: {name: $CLUSTER, role: head}
slurm: {key_file: /etc/hpcinit/munge.key}
EOF
install_spec "$H" "$T/head.yaml"
run_hpc "$T/head.out" "$H" apply
check "head: apply exits 0 and installs the munge key" contains "$T/head.out" "key installed"
key_ok() {
	[ "$(on "$1" stat -c '%U %a' /etc/munge/munge.key)" = "munge 400" ] &&
		on "$1" cmp -s /etc/munge/munge.key /etc/hpcinit/munge.key
}
check "head: /etc/munge/munge.key is munge's, 0400, the cluster's key" key_ok "$H"
on "$H" slurmctld -i
ctld_up() {
	local i
	for i in $(seq 50); do on "$H" scontrol ping 2>/dev/null | grep -q 'is UP' && return 0; sleep 0.2; done
	on "$H" scontrol ping; tail -5 "$T/slurmctld.log"; return 1
}
check "slurmctld (configless) is up on the head" ctld_up

# The computes.  C2 first, alone: it expects 3 members and none has formed the
# cluster yet, so after its short wait it is degraded.  Then C1 (expects 2:
# itself and C2, so ready) and C3 (its NFS share never answers: failed; its
# discovery still publishes) at once.
compute_spec() {
	local expect=$1 wait=$2
	shift 2
	cat <<-EOF
	version: 1
	cluster: {name: $CLUSTER, network: $SIM_NET.0/24, secret_file: /etc/hpcinit/cluster.key}
	discovery: {method: shared, dir: $SHARED/.hpcinit, expect: $expect, wait: $wait}
	hostfile: {}
	slurm: {conf_servers: ["$HA"], features: [hx], key_file: /etc/hpcinit/munge.key}
	EOF
	local x
	for x in "$@"; do echo "$x"; done
}
compute_spec 2 30s | sed 's|^slurm: {|slurm: {register_window: 2s, |' > "$T/c1.yaml"
compute_spec 3 2s > "$T/c2.yaml"
compute_spec 2 30s "nfs: {mounts: [{source: \"$HA:/never\", path: /shared, wait: 2s}]}" > "$T/c3.yaml"
install_spec "$C1" "$T/c1.yaml"
install_spec "$C2" "$T/c2.yaml"
install_spec "$C3" "$T/c3.yaml"
# C1 reaches the head from a second address, outside cluster.network (a VM's other
# network): slurmctld must still be given C1's address in cluster.network, not the one
# its registration came from (Slurm 22.05's choice when none is given).  Undone once C1
# is registered, so that nothing else (srun, MPI) sees the second network.
OTHER_NET=198.18.77
on "$H" ip addr add "$OTHER_NET.1/24" dev eth0
on "$C1" ip addr add "$OTHER_NET.2/24" dev eth0
on "$C1" ip route replace "$HA/32" dev eth0 src "$OTHER_NET.2"
rc1=0 rc2=0 rc3=0
hpc "$C2" apply > "$T/c2.out" 2>&1 || rc2=$?
hpc "$C1" apply -v > "$T/c1.out" 2>&1 & p1=$!
hpc "$C3" apply > "$T/c3.out" 2>&1 & p3=$!
wait $p1 || rc1=$?
wait $p3 || rc3=$?
show() { echo "  exit $2"; sed 's/^/  | /' "$1"; return 1; }
check "$C1: apply exits 0 (ready)" eval '[ $rc1 = 0 ] || show "$T/c1.out" $rc1'
check "$C2: apply exits 3 (degraded: 1 of 3 expected nodes, no cluster formed)" eval '[ $rc2 = 3 ] || show "$T/c2.out" $rc2'
check "$C3: apply exits 1 (its share never came)" eval '[ $rc3 = 1 ] || show "$T/c3.out" $rc3'
check "$C1: the slurm step changed something (key, registration)" grep -q "^slurm  *changed " "$T/c1.out"
check "$C3: the slurm step did not register it" contains "$T/c3.out" "not registered with Slurm: the node failed"
check "$C3: no slurmd was started" eval '! on "$C3" test -e /run/slurmd.pid'
check "$C1: munge key installed for munged" key_ok "$C1"
# The boot, timed: the registration is a phase of the boot (hpcinit status), not for a failed node.
hpc "$C1" status > "$T/c1.status" 2>&1 || true
hpc "$C3" status > "$T/c3.status" 2>&1 || true
check "$C1: hpcinit status times its registration with Slurm" grep -qE '^  slurm +[0-9]+\.[0-9]{3}$' "$T/c1.status"
check "$C3 (failed): no registration among its boot's phases" eval '! grep -qE "^  (slurm|ready) " "$T/c3.status"'

# Arrival: C1's slot of its 2 s window, from its address (2 nodes expected: host part mod 2).
C1A=$(sim addr "$C1")
C1_DELAY=$(( ${C1A##*.} % 2 * 1000 ))
check "$C1: registration paced: ${C1_DELAY} ms, its address's slot of the 2 s window" \
	contains "$T/c1.out" "registration paced: $C1_DELAY ms into a 2000 ms window (slot of address $C1A, 2 nodes)"
node_addr_is() {
	local got
	got=$(on "$H" scontrol --oneliner show node "$1" | grep -o 'NodeAddr=[^ ]*')
	same_text "$got" "NodeAddr=$2"
}
check "$C1: slurmctld has its address in cluster.network (NodeAddr=$C1A), not the one it registered from" \
	node_addr_is "$C1" "$C1A"
check "$C1: its apply said so (Slurm 22.05 ignores NodeAddr in a dynamic node's --conf: one scontrol update)" \
	contains "$T/c1.out" "slurmctld had NodeAddr=$OTHER_NET.2 (where it registered from); set to $C1A"
on "$C1" cat /run/hpcinit/apply.json > "$T/c1.apply.json" 2>/dev/null || true
check "$C1: ... as the finding slurm.nodeaddr (its apply's part of the status)" \
	contains "$T/c1.apply.json" '"tag": "slurm.nodeaddr"'
on "$C1" ip route del "$HA/32" dev eth0 src "$OTHER_NET.2"
on "$C1" ip addr del "$OTHER_NET.2/24" dev eth0
on "$H" ip addr del "$OTHER_NET.1/24" dev eth0
check "$C2: slurmctld has its address from the registration" node_addr_is "$C2" "$(sim addr "$C2")"
check "the head cannot resolve $C1 (so nothing below needs it to)" eval '! on "$H" getent hosts "$C1"'

# sinfo on the head, one line a node: name state features reason
on "$H" sinfo -N -h -o '%N %t %f %E' > "$T/sinfo1"
check "$C1 is idle with features $CLUSTER,hx" grep -qx "$C1 idle $CLUSTER,hx none" "$T/sinfo1"
check "$C2 is drained with reason hpcinit:discovery.degraded" \
	grep -qx "$C2 drain $CLUSTER,hx hpcinit:discovery.degraded" "$T/sinfo1"
check "$C3 (failed) is not in sinfo" not_contains "$T/sinfo1" "$C3"
MB=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024 ))
check "$C1: RealMemory is MemTotal less 3 % ($((MB - MB * 3 / 100)) MiB)" \
	same_text "$(on "$H" sinfo -h -n "$C1" -o %m)" "$((MB - MB * 3 / 100))"

# C2 is repaired by the others' arrival (the cluster formed): hpcinit check resumes it,
# run as slurmd runs its HealthCheckProgram: the shipped wrapper, no arguments.
sed "s|@sbindir@/hpcinit|${HPCINIT_WRAPPER:+$HPCINIT_WRAPPER }$HPCINIT|" \
	"$TOP_SRCDIR/modules/slurm/hpcinit-health-check.in" > "$T/hpcinit-health-check"
chmod 0755 "$T/hpcinit-health-check"
rc=0
on "$C2" "$T/hpcinit-health-check" > "$T/c2check.out" 2>&1 || rc=$?
check "$C2 repaired: hpcinit check resumes its own drain" contains "$T/c2check.out" "resumed (was hpcinit:discovery.degraded)"
idle_now() {
	local i
	for i in $(seq 50); do
		[ "$(on "$H" sinfo -h -n "$1" -o '%t %E')" = "idle none" ] && return 0
		sleep 0.2
	done
	on "$H" sinfo -N -n "$1" -o '%N %t %E'
	return 1
}
check "$C2 is idle again" idle_now "$C2"

# srun on every registered node, and MPI through srun.
rc=0
# (stdout compared: srun's stderr says when a job waited for resources, shown with a failure)
on "$H" timeout 60 srun -N2 hostname > "$T/srun.out" 2>"$T/srun.err" || rc=$?
srun_same() { same_text "$1" "$2" || { sed 's/^/  srun stderr: /' "$3"; return 1; }; }
check "srun -N2 hostname runs on $C1 and $C2" \
	srun_same "$(sort "$T/srun.out"; echo "rc=$rc")" "$(printf '%s\n' "$C1" "$C2" | sort; echo rc=0)" "$T/srun.err"
MPI_TYPE=$(on "$H" srun --mpi=list 2>&1 | grep -o 'pmix' | head -1 || true)
[ -n "$MPI_TYPE" ] || MPI_TYPE=pmi2
if [ -x "$MPI_HELLO" ]; then
	rc=0
	# pml ob1 over TCP, what hpcinit's mpi step writes for an Ethernet cluster (modules/mpi/fabric.c):
	# these nodes run no mpi step, and a CI run once saw rank 0 die in MPI_Init (a jump to NULL)
	# with Open MPI free to pick pml ucx in the namespace.
	on "$H" timeout 60 env OMPI_MCA_pml=ob1 OMPI_MCA_btl=tcp,self OMPI_MCA_btl_tcp_if_include=eth0 \
		OMPI_MCA_oob_tcp_if_include=eth0 srun -N2 --ntasks-per-node=1 --mpi="$MPI_TYPE" "$MPI_HELLO" \
		> "$T/mpi.out" 2>&1 || rc=$?
	mpi_ok() {
		[ "$rc" = 0 ] && grep -q 'allreduce: 2 of 2 ranks' "$T/mpi.out" &&
			grep -q "^hello from rank .* on $C1\$" "$T/mpi.out" &&
			grep -q "^hello from rank .* on $C2\$" "$T/mpi.out" ||
			{ echo "  srun exited $rc"; sed 's/^/  | /' "$T/mpi.out"; return 1; }
	}
	check "srun --mpi=$MPI_TYPE: MPI hello, one rank on each node, allreduce over both" mpi_ok
else
	not_ok "mpi-hello not built (configure found no Open MPI): cannot run the MPI check"
fi

# Steady state: C1 is ready and told slurmctld so; five health checks (what slurmd's
# HealthCheckProgram runs every HealthCheckInterval) ask slurmctld nothing, by
# slurmctld's own RPC counts (sdiag, reset first; REQUEST_STATS_INFO is sdiag itself;
# the old check's scontrol showed there as REQUEST_NODE_INFO and REQUEST_PARTITION_INFO,
# two a check).  (A counting scontrol on PATH would see nothing: proc.c runs programs
# with its own PATH.)
ctld_rpcs() {   # RPCs slurmctld served since the reset, by type, but sdiag's own
	on "$H" sdiag | sed -n '/by message type/,/by user/p' |
		awk '/count:/ && $1 != "REQUEST_STATS_INFO" { sub("count:", "", $4); print $1, $4 }' | sort
}
run_hpc "$T/refresh0.out" "$C1" refresh   # the nodes that came since its apply: no drift below
on "$H" sdiag --reset >/dev/null
steady_rc=0
for i in 1 2 3 4 5; do
	hpc "$C1" check > "$T/steady$i.out" 2>&1 || steady_rc=$?
done
ctld_rpcs > "$T/steady.rpcs"
steady_zero() {
	[ "$steady_rc" = 0 ] && [ ! -s "$T/steady.rpcs" ] || {
		echo "  last check exited $steady_rc; slurmctld served:"; sed 's/^/  | /' "$T/steady.rpcs"
		show "$T/steady5.out" "$steady_rc"; }
}
check "$C1: 5 checks in steady state: 0 RPCs to slurmctld (sdiag)" steady_zero
check "$C1: the check says it did not ask (its state is what it last told)" \
	grep -q "^slurm  *ok .*ready, as last told to slurmctld (not asked: no change)" "$T/steady5.out"

# An admin's drain is left alone by hpcinit check: in steady state it is not even
# seen; once the node's state changes the check asks, and leaves it alone.
on "$H" scontrol update nodename="$C1" state=drain reason="bad dimm"
run_hpc "$T/admin.out" "$C1" check
st=$(on "$H" sinfo -h -n "$C1" -o '%t %E')
check "$C1: steady check with an admin's drain: exit 0, still drained with the admin's reason" \
	eval '[ $rc = 0 ] && [ "${st/\*/}" = "drain bad dimm" ] || { echo "  sinfo: $st"; show "$T/admin.out" $rc; }'
on "$C1" rm -f /run/hpcinit/slurm-told     # as after a reboot: the next check asks
run_hpc "$T/admin.out" "$C1" check
check "$C1: hpcinit check that asks says the admin's drain is left alone" contains "$T/admin.out" 'reason "bad dimm"): left alone'
st=$(on "$H" sinfo -h -n "$C1" -o '%t %E')
check "$C1: still drained with the admin's reason" same_text "${st/\*/}" "drain bad dimm"
on "$H" scontrol update nodename="$C1" state=resume

# A check that starts failing drains the node (HealthCheckProgram), and resumes when fixed.
# (the share it now must mount never answers)
compute_spec 2 30s "nfs: {mounts: [{source: \"$HA:/never\", path: /shared, wait: 1s}]}" > "$T/c1bad.yaml"
install_spec "$C1" "$T/c1bad.yaml"
run_hpc "$T/hc.out" "$C1" check
hc_drained() {
	local st
	# "drain*": slurmctld marks a node it has not heard from since the last resume
	# as not responding until its next ping; drained is what counts here
	st=$(on "$H" sinfo -h -n "$C1" -o "%t %E")
	st=${st/\*/}
	[ "$rc" = 1 ] && [[ $st == "drain hpcinit:nfs."* ]] || { echo "  sinfo: $st"; show "$T/hc.out" "$rc"; }
}
check "$C1: hpcinit check with a failing check exits 1 and drains it with hpcinit:nfs..." hc_drained
install_spec "$C1" "$T/c1.yaml"
# (its hostfiles still lack the nodes that came since its apply: refresh
# first, so that drift does not decide the exit code below)
run_hpc "$T/refresh.out" "$C1" refresh
run_hpc "$T/hc2.out" "$C1" check
check "$C1: hpcinit check resumes it when the check passes" idle_now "$C1"
# The resume is the check's answer, not drift: a node healthy now exits 0
# (an admin running hpcinit check by hand; Slurm ignores the exit code).
check "$C1: that check exits 0, its slurm row ok: resumed" \
	eval '[ $rc = 0 ] && grep -q "^slurm  *ok .*: resumed (was hpcinit:nfs\." "$T/hc2.out" || show "$T/hc2.out" $rc'

# Another node's bad record is a cluster finding, never a reason to drain (issue 33): a file in
# nodes/ that is not a record (whoever writes as the export's anonymous uid can plant one) drained
# every node with hpcinit:discovery.record.truncated.
echo junk > "$SHARED/.hpcinit/$CLUSTER/nodes/junk.rec"
run_hpc "$T/hcjunk.out" "$C1" check -v
junk_not_drained() {
	[ "$rc" = 0 ] && grep -q "record junk.rec: truncated" "$T/hcjunk.out" && idle_now "$C1" ||
		{ show "$T/hcjunk.out" "$rc"; return 1; }
}
check "$C1: a junk record in nodes/: hpcinit check exits 0, names it, and does not drain $C1" junk_not_drained
rm -f "$SHARED/.hpcinit/$CLUSTER/nodes/junk.rec"

# A second apply on a registered node changes nothing in Slurm.
run_hpc "$T/again.out" "$C1" apply
check "$C1: second apply exits 0" eval '[ $rc = 0 ] || show "$T/again.out" $rc'
check "$C1: second apply: slurm ok" grep -q '^slurm  *ok ' "$T/again.out"

# What a Slurm job gets (memlock) is read from the running slurmd and slurm.conf, and is
# what srun shows.  slurmd on $C1 gets known limits (prlimit on the running daemon: root
# here cannot go above 8192 KiB), $C1's spec gets a memlock section, and each time the
# number "hpcinit check" states is compared with "ulimit -l" in a job that srun starts
# from a shell on the head (the submit host) whose soft limit is what a new PAM session
# gets on $C1 (limits.d, what memlock.limit writes): the shell stands in for a login.
SLURMD1=$(on "$C1" cat /run/slurmd.pid)
memlock_spec() { compute_spec 2 30s "memlock: {limit: $1, users: [\"*\"], systemd: false}" > "$T/c1mem.yaml"
	install_spec "$C1" "$T/c1mem.yaml"; run_hpc "$T/memapply.out" "$C1" apply --only memlock; }
said_memlock() {   # what hpcinit check on C1 says a job gets ("" when it says no number)
	run_hpc "$T/jm.out" "$C1" check --only memlock --json
	grep -oE 'job: a Slurm job gets memlock ([0-9]+ KiB|unlimited)' "$T/jm.out" | head -1 |
		sed 's/.* memlock //; s/ KiB$//'
}
srun_memlock() {   # ulimit -l in a job srun starts on C1 from a head shell with soft limit $1 KiB
	# stdout only: srun says on stderr when the job waited ("srun: job 5 queued and waiting
	# for resources", after a reconfigure), which is no limit; kept for a failure's message
	on "$H" timeout 60 bash -c "ulimit -S -l $1 && srun -N1 -w $C1 bash -c 'ulimit -l'" 2>"$T/srun-memlock.err"
}
job_agrees() {     # $1: the submitting shell's soft limit; $2: what the job must get
	local said got
	said=$(said_memlock) got=$(srun_memlock "$1")
	[ "$said" = "$2" ] && [ "$got" = "$2" ] || {
		echo "  hpcinit check said: '$said'; srun printed: '$got'; expected $2"
		sed 's/^/  srun stderr: /' "$T/srun-memlock.err"
		grep -oE '"[^"]*job: a Slurm job[^"]*"' "$T/jm.out" | sort -u | sed 's/^/  | /'; return 1; }
}
prlimit --pid "$SLURMD1" --memlock=$((4096 * 1024)):$((8192 * 1024))
memlock_spec 2M
# PropagateResourceLimitsExcept=MEMLOCK (this test's slurm.conf): slurmd's soft limit,
# whatever the submitting shell has (8192 KiB here).
check "memlock, Except=MEMLOCK: check's statement is what srun shows (slurmd's soft, 4096 KiB)" \
	job_agrees 8192 4096
check "memlock, Except=MEMLOCK: the statement names slurmd's pid and its /proc limits" \
	grep -q "slurmd's soft limit (pid $SLURMD1, /run/slurmd.pid: soft 4096 KiB, hard 8192 KiB in /proc/$SLURMD1/limits)" "$T/jm.out"
# Propagation (Slurm's default ALL): the submitting shell's 2048 KiB, below slurmd's own.
on "$H" sed -i '/^PropagateResourceLimitsExcept=/d' /etc/slurm/slurm.conf
on "$H" scontrol reconfigure
conf_reloaded() {
	local i
	for i in $(seq 50); do
		on "$C1" grep -q PropagateResourceLimitsExcept /run/slurm/conf/slurm.conf || return 0
		sleep 0.2
	done
	return 1
}
# slurmd writes the fetched copy before it reloads: wait until a job shows the new
# setting (a shell's 1024 KiB reaches it) before the comparison below.
propagating() {
	local i
	for i in $(seq 20); do [ "$(srun_memlock 1024)" = 1024 ] && return 0; sleep 0.5; done
	return 1
}
check "$C1: slurmd fetched and runs the slurm.conf without PropagateResourceLimitsExcept" \
	eval 'conf_reloaded && propagating'
check "memlock, propagated: check's statement is what srun shows (the submitting shell's 2048 KiB)" \
	job_agrees 2048 2048
# A shell asking more than slurmd's hard limit gets that limit, not its own and not
# slurmd's soft one (slurmd 2048 soft, 4096 hard; the spec and the shell 8192):
# degraded, a job here cannot lock what memlock.limit says.
prlimit --pid "$SLURMD1" --memlock=$((2048 * 1024)):$((4096 * 1024))
memlock_spec 8M
check "memlock, propagated above slurmd's hard limit: check and srun agree (4096 KiB)" job_agrees 8192 4096
check "memlock: a job below memlock.limit is memlock.job.slurm.low" grep -q '"memlock.job.slurm.low"' "$T/jm.out"
install_spec "$C1" "$T/c1.yaml"
# A node where no slurmd runs says so (not its unit's value), though the other nodes'
# slurmd are in the /proc it shares (they are in other network namespaces).
on "$C3" install -D -m 0644 "$T/slurm.conf" /etc/slurm/slurm.conf
compute_spec 2 30s "memlock: {limit: 2M, users: [\"*\"], systemd: false}" > "$T/c3mem.yaml"
install_spec "$C3" "$T/c3mem.yaml"
run_hpc "$T/c3mem.out" "$C3" check --only memlock --json
check "$C3 (no slurmd here, two on other nodes): what a job gets is not known, and said so" \
	grep -q '"memlock.job.slurm.unknown"' "$T/c3mem.out"
on "$C3" rm -f /etc/slurm/slurm.conf

# Leaving: drained, slurmd stopped, the dynamic node deleted.
run_hpc "$T/leave.out" "$C2" leave
check "$C2: hpcinit leave exits 0" eval '[ $rc = 0 ] || show "$T/leave.out" $rc'
check "$C2: leave removed it from Slurm" contains "$T/leave.out" "removed from Slurm"
check "$C2 is no longer in sinfo" not_contains <(on "$H" sinfo -N -h -o '%N') "$C2"
check "$C2: slurmd stopped" eval '! on "$C2" pgrep -F /run/slurmd.pid >/dev/null 2>&1'

# Slurm's own key (auth/slurm, Slurm 23.11+; Debian's 22.05 has no such plugin,
# so no daemon uses it here): with slurm.auth: slurm the same root-only file
# becomes /etc/slurm/slurm.key, SlurmUser's (slurm) alone, 0600; munge's key
# stays as it is; plan says it differs without showing it; no record, status
# or output carries it.  On $C3, which never started slurmd.
head -c 96 /dev/urandom | base64 -w0 > "$T/slurm.key"
on "$C3" install -m 0600 "$T/slurm.key" /etc/hpcinit/slurm.key
on "$C3" sha256sum /etc/munge/munge.key > "$T/munge.sum"
cat > "$T/c3auth.yaml" <<EOF
version: 1
cluster: {name: $CLUSTER, role: head}
slurm: {auth: slurm, key_file: /etc/hpcinit/slurm.key}
EOF
install_spec "$C3" "$T/c3auth.yaml"
run_hpc "$T/authplan.out" "$C3" plan
check "$C3 auth/slurm: plan says /etc/slurm/slurm.key differs" contains "$T/authplan.out" "/etc/slurm/slurm.key: not slurm.key_file's key"
run_hpc "$T/auth.out" "$C3" apply
check "$C3 auth/slurm: apply exits 0 and installs the key" \
	eval '[ $rc = 0 ] && grep -q "key installed (auth/slurm, slurm 0600)" "$T/auth.out" || show "$T/auth.out" $rc'
slurm_key_ok() {
	[ "$(on "$C3" stat -c '%U %G %a %F' /etc/slurm/slurm.key)" = "slurm slurm 600 regular file" ] &&
		on "$C3" cmp -s /etc/slurm/slurm.key /etc/hpcinit/slurm.key ||
		{ on "$C3" ls -l /etc/slurm/slurm.key; return 1; }
}
check "$C3 auth/slurm: /etc/slurm/slurm.key is slurm's, 0600, the custom-data's bytes" slurm_key_ok
check "$C3 auth/slurm: munge's key left as it was" on "$C3" sha256sum -c --quiet "$T/munge.sum"
run_hpc "$T/auth2.out" "$C3" apply
check "$C3 auth/slurm: a second apply changes nothing" grep -q '^slurm  *ok ' "$T/auth2.out"
key_nowhere() {
	local k
	k=$(cat "$T/slurm.key")
	! grep -rqF "$k" "$SHARED/.hpcinit" "$T/authplan.out" "$T/auth.out" "$T/auth2.out" &&
		! on "$C3" grep -rqF "$k" /var/lib/hpcinit /run/hpcinit
}
check "$C3 auth/slurm: the key is in no record, status or output" key_nowhere
on "$C3" chmod 0644 /etc/hpcinit/slurm.key
run_hpc "$T/auth3.out" "$C3" apply
check "$C3 auth/slurm: a key file others may read is refused (exit 1)" \
	eval '[ $rc = 1 ] && grep -q "must be a regular file owned by root" "$T/auth3.out" || show "$T/auth3.out" $rc'

# Nothing in the run made slurmctld resolve a compute's name.
check "slurmctld's log: no name it could not resolve" \
	eval '! grep -iE "resolve|getaddrinfo|name or service" "$T/slurmctld.log"'

# Stop the daemons of this test (sim down ends everything in the nodes anyway).
on "$H" scontrol shutdown >/dev/null 2>&1 || true
done_testing
