#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A real cluster of virtual machines: a head VM and N compute VMs booted
# under qemu (software emulation, no KVM) from the image tests/vm/image.sh
# builds (Debian 12, real kernel, systemd, cloud-init, kernel NFS,
# Soft-RoCE, and the .deb of this tree installed with apt).  Each VM boots
# with a NoCloud seed whose user-data is the product's custom-data,
# conf/cloud-init/vmss-head.yaml or vmss-compute.yaml, with the test
# network's addresses filled in; cloud-init writes the spec and runs
# hpcinit exactly as on Azure.  Then named checks run; each prints
# "ok - NAME" or "not ok - NAME", and the run ends with "# N passed, N failed".
#
#   tests/vm/cluster.sh [-n N] [--checks "boot nfs ..."] [--keep]
#
#   -n N        compute VMs (default 2)
#   --checks    which checks, in order (default: CHECKS_ALL below; the others
#               are reboot, bench, verbsbench, scaleout, leave, scalein, latehead)
#   --keep      leave the work directory (console logs, outputs) behind
#   --lease D   every node's spec gets discovery.lease: D (the shipped
#               custom-data leaves the 5 min default; scalein waits a lease)
#   --late-head S  boot the head S seconds after the computes (they wait for
#               its export and then converge: check latehead)
#   --squash    accepted for old command lines: the shipped custom-data
#               already exports /shared with root_squash and gives every
#               node a cluster secret (filled in here for CHANGE-ME)
#   --no-squash the head exports /shared with no_root_squash instead (the
#               secret stays): the head gives the rendezvous tree to root
#   --watch     every node also runs hpcinit-watch.service (the custom-data
#               gets a runcmd "systemctl enable --now hpcinit-watch.service"
#               after "hpcinit apply", as an admin would add it): a join and
#               a clean leave reach every node within seconds, not a timer run
#   --nfs41     the head's kernel NFS server runs with NFSv3 and NFSv4.0
#               switched off (its custom-data gets /etc/nfs.conf.d/ with
#               [nfsd] vers3=n, vers4.0=n), as Azure Files and NetApp Files
#               4.1 volumes serve, and the computes mount /shared with
#               vers=4.1 instead of the shipped vers=3; check nfs asserts
#               the server's versions and the 4.1 mount (/proc/mounts)
#   --slurm     boot from the Slurm custom-data instead,
#               conf/cloud-init/slurm-head.yaml and slurm-compute.yaml (the
#               head runs slurmctld, the computes register as dynamic nodes;
#               cloud-init installs Slurm and munge from the image's local
#               repository); default checks "slurm slurmbench slurmleave"
#   --hold      after the checks, keep the VMs running until WORK/release is
#               created (to look around: tests/vm/exec.sh WORK NAME 'command')
#
# Environment: HPCINIT_VM_CACHE (image cache, see image.sh),
# HPCINIT_VM_DEBS (a directory with the hpcinit*.deb packaging/build-deb.sh
# built from this tree: image.sh --debs, instead of building them again),
# HPCINIT_VM_MEM (MiB per VM, default 1024), HPCINIT_VM_WORK (work
# directory, default a new /tmp/hpcinit-vm.XXXXXX), HPCINIT_VM_BOOT_TIMEOUT
# (seconds for every VM to finish cloud-init, default 900).
#
# Network: a Linux bridge inside a network namespace this script makes;
# one tap per VM on it; 198.18.50.0/24, head .10, computes .11...; no
# default route and nothing else on that L2.  The harness talks to the VMs
# only through a 9p share per VM (tests/vm/agent.sh), not over the network.
# Every qemu it started is killed by PID on exit, also when a check fails
# or the script is interrupted.
set -Eeuo pipefail

SRC=$(cd "$(dirname "$0")/../.." && pwd)
N=2
CHECKS_ALL="boot nfs hosts ssh mpi verify rdma rdmacm fabric memlock kernel gating vmcheck"
# bench and reboot run before gating and vmcheck (which restart hpcinit and
# the head's NFS server); scaleout, leave and scalein come last (they add a
# VM, shut it down, and pull the plug of c2).
CHECKS=$CHECKS_ALL
KEEP=0
HOLD=0
SQUASH=1
LEASE=
LATE_HEAD=0
VMCHECK=
WATCH=0
NFS41=0
SLURM=0
CHECKS_SET=0
while [ $# -gt 0 ]; do
	case $1 in
	-n) N=$2; shift 2 ;;
	--checks) CHECKS=$2; CHECKS_SET=1; shift 2 ;;
	--slurm) SLURM=1; shift ;;
	--keep) KEEP=1; shift ;;
	--hold) HOLD=1; KEEP=1; shift ;;
	--squash) SQUASH=1; shift ;;
	--no-squash) SQUASH=0; shift ;;
	--watch) WATCH=1; shift ;;
	--nfs41) NFS41=1; shift ;;
	--lease) LEASE=$2; shift 2 ;;
	--late-head) LATE_HEAD=$2; shift 2 ;;
	--vmcheck) VMCHECK=$2; shift 2 ;;
	*) echo "usage: $0 [-n N] [--checks LIST] [--keep] [--hold] [--squash|--no-squash] [--nfs41] [--slurm] [--lease DUR] [--late-head SECONDS] [--vmcheck \"FILE.sh ...\"]" >&2; exit 2 ;;
	esac
done
# --vmcheck names files of tests/vmcheck: a name that is not there is a
# typo that would silently run nothing, so it stops the run before any VM.
if [ -n "$VMCHECK" ]; then
	for b in $VMCHECK; do
		[ -f "$SRC/tests/vmcheck/$b" ] && [[ $b == *.sh ]] && [[ $b != */* ]] && continue
		have=
		for f in "$SRC"/tests/vmcheck/*.sh; do have="$have ${f##*/}"; done
		echo "$0: --vmcheck: no file $b in tests/vmcheck; it has:$have" >&2
		exit 2
	done
fi
[ "$SLURM" = 0 ] || [ "$CHECKS_SET" = 1 ] || CHECKS="slurm slurmbench slurmleave"
MEM=${HPCINIT_VM_MEM:-1024}
BOOT_TIMEOUT=${HPCINIT_VM_BOOT_TIMEOUT:-900}
NET=198.18.50
NS=hpcvm$$
# An MPI hello built on this (Debian 12) host against the same Open MPI as the image's.
MPI_HELLO=${HPCINIT_VM_MPI_HELLO:-$SRC/build/tests/cluster/mpi-hello}
PASS=0 FAILN=0
T_START=$(date +%s)

say() { echo "# $(date +%T) $*"; }
ok() { echo "ok - $1"; PASS=$((PASS + 1)); }
notok() { echo "not ok - $1"; shift; [ $# -eq 0 ] || printf '%s\n' "$@" | sed 's/^/#   /'; FAILN=$((FAILN + 1)); }
finish() {
	echo "# $PASS passed, $FAILN failed ($(($(date +%s) - T_START)) s)"
	[ "$FAILN" -eq 0 ] && [ "$PASS" -gt 0 ]
}

# ---- preflight: a host that cannot run qemu fails, it does not skip ----
preflight() {
	local why=
	[ "$(id -u)" = 0 ] || why="not root"
	command -v qemu-system-x86_64 >/dev/null || why="qemu-system-x86_64 not found (apt-get install qemu-system-x86 qemu-utils)"
	command -v qemu-img >/dev/null || why="qemu-img not found (apt-get install qemu-utils)"
	[ -c /dev/net/tun ] || why="/dev/net/tun missing (tap devices)"
	ip netns add "$NS-probe" 2>/dev/null && ip netns del "$NS-probe" || why="cannot make a network namespace"
	if [ -n "$why" ]; then
		notok "host can run qemu VMs" "$why"
		finish
		exit 1
	fi
}
preflight

names() { echo head; for i in $(seq 1 "$N"); do echo "c$i"; done; }
addr_of() { [ "$1" = head ] && echo "$NET.10" || echo "$NET.$((10 + ${1#c}))"; }

W=${HPCINIT_VM_WORK:-$(mktemp -d /tmp/hpcinit-vm.XXXXXX)}
mkdir -p "$W"
declare -A PID=()
cleanup() {
	local rc=$? n p
	trap - EXIT INT TERM
	for n in "${!PID[@]}"; do
		p=${PID[$n]}
		kill -0 "$p" 2>/dev/null && kill "$p" 2>/dev/null
	done
	for n in "${!PID[@]}"; do
		p=${PID[$n]}
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
		kill -0 "$p" 2>/dev/null && { echo "# qemu $n (pid $p) still running: KILL"; kill -9 "$p" 2>/dev/null; }
	done
	ip netns del "$NS" 2>/dev/null || true
	if [ "$KEEP" = 1 ]; then echo "# work directory kept: $W"
	elif [ -z "${HPCINIT_VM_WORK:-}" ]; then rm -rf "$W"; fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- the image ----
say "image (tests/vm/image.sh)"
t0=$(date +%s)
IMG=$(bash "$SRC/tests/vm/image.sh" ${HPCINIT_VM_DEBS:+--debs "$HPCINIT_VM_DEBS"} 2> "$W/image.log" | tail -1) || { tail -40 "$W/image.log"; notok "image" "tests/vm/image.sh failed"; finish; exit 1; }
sed 's/^/#   /' "$W/image.log" | grep "#   image:" || true
say "image ready in $(($(date +%s) - t0)) s: $IMG"
# image.sh prunes old images, never one held like this (the qemus inherit the lock)
exec 7< "$IMG/done"
flock -s 7

# ---- seeds: the product's custom-data, addresses filled in, plus the platform part ----
# subst FILE: the custom-data for this test network.  Every replaced string
# must be there: when the shipped file changes, this fails instead of
# silently booting something else.
subst() {
	local f=$1 s
	s=$(cat "$f")
	for pat in '10.0.0.4' '10.0.0.0/24'; do
		grep -qF "$pat" <<< "$s" || { echo "seed: '$pat' not found in $f" >&2; return 1; }
	done
	# The shipped custom-data carries a placeholder for the cluster secret.
	grep -qxF '      CHANGE-ME' <<< "$s" || { echo "seed: the secret placeholder CHANGE-ME not found in $f" >&2; return 1; }
	s=${s//      CHANGE-ME/      $SECRET}
	if [ "$SQUASH" = 0 ]; then
		grep -qF ', root_squash,' <<< "$s" || [ "$f" = "${f%head.yaml}" ] ||
			{ echo "seed: root_squash not found in $f" >&2; return 1; }
		s=${s//, root_squash,/, no_root_squash,}
	fi
	if [ -n "$LEASE" ]; then
		grep -qE '^ *dir: /shared/\.hpcinit$' <<< "$s" || { echo "seed: 'dir: /shared/.hpcinit' not found in $f" >&2; return 1; }
		s=$(sed -E "s|^( *)dir: /shared/\.hpcinit$|&\n\1lease: $LEASE|" <<< "$s")
	fi
	if [ "$NFS41" = 1 ] && [ "$f" = "${f%head.yaml}" ]; then
		grep -qF 'options: [vers=3, ' <<< "$s" || { echo "seed: 'options: [vers=3, ' not found in $f" >&2; return 1; }
		s=${s//options: \[vers=3, /options: [vers=4.1, }
	fi
	s=${s//10.0.0.4/$NET.10}
	s=${s//10.0.0.0\/24/$NET.0/24}
	# Soft-RoCE is the computes' MPI fabric (check fabric): mpi.software_fabric.
	if [ "$f" = "${f%head.yaml}" ]; then
		grep -qE '^ *mpi:$' <<< "$s" || { echo "seed: 'mpi:' not found in $f" >&2; return 1; }
		s=$(sed -E 's/^( *)mpi:$/&\n\1  software_fabric: true/' <<< "$s")
	fi
	# Azure's HPC sizes have mlx5 (InfiniBand); these VMs have Soft-RoCE.
	s=${s//\[mlx5_ib, /[rdma_rxe, }
	# The test cluster: the head and N computes.
	s=$(sed -E -e "s/^( *expect:) [0-9]+$/\1 $((N + 1))/" \
		-e 's/^( *)link_layer: infiniband( .*)?$/\1devices: "rxe*"\n\1link_layer: ethernet/' <<< "$s")
	printf '%s\n' "$s"
}
# --slurm: conf/cloud-init/slurm-*.yaml for this network: the head's name
# and address, and a real munge key for the placeholder (every string must
# be there, as in subst).
slurm_subst() {
	local f=$1 s pat
	s=$(cat "$f")
	local pats=('10.0.0.4' '10.0.0.0/24' "content: $SLURM_KEY_PLACEHOLDER")
	[ "$f" = "${f%head.yaml}" ] || pats+=('slurmhead(')
	for pat in "${pats[@]}"; do
		grep -qF "$pat" <<< "$s" || { echo "seed: '$pat' not found in $f" >&2; return 1; }
	done
	s=${s//content: $SLURM_KEY_PLACEHOLDER/content: $MUNGE_B64}
	s=${s//slurmhead(/head(}
	s=${s//10.0.0.4/$NET.10}
	s=${s//10.0.0.0\/24/$NET.0/24}
	printf '%s\n' "$s"
}
SLURM_KEY_PLACEHOLDER=UkVQTEFDRSBNRQo=
MUNGE_B64=$(head -c 128 /dev/urandom | base64 -w0)
# What the platform does on Azure and a minbase image does not: the
# address of the NIC (Azure: DHCP), the admin user (Azure: osProfile), and
# a verbs device (Azure: the InfiniBand VF; here Soft-RoCE on eth0).
# And one shortcut of the test bed: the VM's SSH host keys, made for this
# VM on the host (ssh_keys:; cloud-init's ssh module writes them instead of
# running ssh-keygen, whose RSA key took 36 s of the first boot under
# emulation).  Each VM still has its own keys, new every run.
hostkeys_yaml() {   # hostkeys_yaml DIR: the ssh_keys: of DIR's ssh_host_*_key pairs
	local t f
	echo "ssh_keys:"
	for t in rsa ecdsa ed25519; do
		f=$1/ssh_host_${t}_key
		echo "  ${t}_private: |"
		sed 's/^/    /' "$f"
		echo "  ${t}_public: $(cat "$f.pub")"
	done
}
platform_part() {
	cat <<-EOF
	#cloud-config
	merge_how:
	  - name: list
	    settings: [append]
	  - name: dict
	    settings: [no_replace, recurse_list]
	users:
	  - name: azureuser
	    shell: /bin/bash
	    lock_passwd: true
	$( [ "$NFS41" = 1 ] && [ "$2" = head ] && printf 'write_files:\n  - path: /etc/nfs.conf.d/hpcinit-test-nfs41.conf\n    content: |\n      [nfsd]\n      vers3=n\n      vers4.0=n\n')
	bootcmd:
	  - [ip, link, set, eth0, up]
	  - [ip, addr, replace, "$1/24", dev, eth0]
	  - [sh, -c, "modprobe rdma_rxe && { rdma link show rxe0/1 >/dev/null 2>&1 || rdma link add rxe0 type rxe netdev eth0; }"]
	$( [ "$WATCH" = 1 ] && printf 'runcmd:\n  - [systemctl, enable, --now, hpcinit-watch.service]\n')
	EOF
	hostkeys_yaml "$3"
}
make_seed() {
	local n=$1 d=$W/vm/$1 role=compute
	[ "$n" = head ] && role=head
	# A work directory used again (HPCINIT_VM_WORK): nothing of the last
	# run's VM may answer for this one (a stale out/agent-start made the
	# harness see an agent before this VM's kernel was up).
	rm -rf "$d/seed" "$d/out" "$d/cmd" "$d/console.log" "$d/qemu.log" "$d/disk.qcow2"
	mkdir -p "$d/seed" "$d/out" "$d/cmd"
	cp "$SRC/tests/vm/agent.sh" "$d/agent.sh"
	mkdir -p "$d/vmcheck"
	cp "$SRC"/tests/vmcheck/*.sh "$d/vmcheck/"
	[ ! -x "$MPI_HELLO" ] || cp "$MPI_HELLO" "$d/mpi-hello"
	if [ "$SLURM" = 1 ]; then slurm_subst "$SRC/conf/cloud-init/slurm-$role.yaml"
	else subst "$SRC/conf/cloud-init/vmss-$role.yaml"; fi > "$d/custom-data.yaml"
	rm -rf "$d/hostkeys"    # a work directory used again (HPCINIT_VM_WORK): new keys
	mkdir -m 0700 "$d/hostkeys"
	for t in rsa ecdsa ed25519; do
		ssh-keygen -q -t "$t" -N '' -C "root@$n" -f "$d/hostkeys/ssh_host_${t}_key" < /dev/null
	done
	platform_part "$(addr_of "$n")" "$role" "$d/hostkeys" > "$d/platform.yaml"
	cloud-init devel make-mime -a "$d/custom-data.yaml:cloud-config" -a "$d/platform.yaml:cloud-config" \
		> "$d/seed/user-data"
	printf 'instance-id: %s-%s\nlocal-hostname: %s\n' "$n" "$NS" "$n" > "$d/seed/meta-data"
}

rm -f "$W/release"    # --hold of an earlier run in this work directory
SECRET=$(openssl rand -hex 32)
SQUASH_OPT=no_root_squash
[ "$SQUASH" = 0 ] || SQUASH_OPT=root_squash
# The computes' /shared: the shipped vers=3, or 4.1 (--nfs41); the kernel
# names a v4 mount's type nfs4.
NFS_VERS=3 NFS_TYPE=nfs
[ "$NFS41" = 0 ] || { NFS_VERS=4.1; NFS_TYPE=nfs4; }

# ---- network and VMs ----
ip netns add "$NS"
ip -n "$NS" link set lo up
ip -n "$NS" link add br0 type bridge
ip -n "$NS" link set br0 up
declare -A T_LAUNCH=()
boot() {
	local n=$1 i=$2 d=$W/vm/$1
	qemu-img create -q -f qcow2 -b "$IMG/disk.img" -F raw "$d/disk.qcow2"
	ip -n "$NS" tuntap add "tap$i" mode tap
	ip -n "$NS" link set "tap$i" master br0 up
	T_LAUNCH[$n]=$(date +%s.%N)
	ip netns exec "$NS" qemu-system-x86_64 -name "hpcvm-$n" -accel tcg,thread=multi \
		-m "$MEM" -smp 1 -nodefaults -display none -monitor none \
		-serial "file:$d/console.log" \
		-kernel "$IMG/vmlinuz" -initrd "$IMG/initrd.img" \
		-append "root=/dev/vda rw console=ttyS0 net.ifnames=0 ds=nocloud;s=file:///hpcvm/seed/ hpcvm.name=$n" \
		-drive "file=$d/disk.qcow2,format=qcow2,if=virtio" \
		-netdev "tap,id=n0,ifname=tap$i,script=no,downscript=no" \
		-device "virtio-net-pci,netdev=n0,mac=52:54:00:12:50:$(printf %02x "$i")" \
		-virtfs "local,path=$d,mount_tag=hpcvm,security_model=none" \
		-device virtio-rng-pci \
		> "$d/qemu.log" 2>&1 &
	PID[$n]=$!
	say "booted $n ($(addr_of "$n")) pid ${PID[$n]}"
}

# vm_exec NAME TIMEOUT SCRIPT: run SCRIPT as root in the VM, print its output, return its status.
vm_exec() {
	local n=$1 to=$2 d=$W/vm/$1 id
	id=c$(date +%s%N)$RANDOM
	printf '%s\n' "$3" > "$d/cmd/.$id"
	mv "$d/cmd/.$id" "$d/cmd/$id.sh"
	local end=$(($(date +%s) + to))
	while [ ! -e "$d/out/$id.rc" ]; do
		if [ "$(date +%s)" -ge "$end" ]; then
			echo "(timed out after $to s)"
			cat "$d/out/$id.out" 2>/dev/null
			return 124
		fi
		kill -0 "${PID[$n]:-}" 2>/dev/null || { echo "(qemu of $n is gone)"; return 125; }
		sleep 0.3
	done
	cat "$d/out/$id.out"
	return "$(cat "$d/out/$id.rc")"
}

i=0
for n in $(names); do
	make_seed "$n"
	i=$((i + 1))
	[ "$n" = head ] && [ "$LATE_HEAD" -gt 0 ] && continue
	boot "$n" "$i"
done
if [ "$LATE_HEAD" -gt 0 ]; then
	say "the head boots $LATE_HEAD s after the computes"
	sleep "$LATE_HEAD"
	boot head 1
fi

# Wait for each agent, then for cloud-init on each VM.
declare -A T_AGENT=() T_READY=()
wait_agents() {
	local end=$(($(date +%s) + BOOT_TIMEOUT)) n left
	while :; do
		left=0
		for n in $(names); do
			[ -n "${T_AGENT[$n]:-}" ] && continue
			if [ -e "$W/vm/$n/out/agent-start" ]; then
				T_AGENT[$n]=$(date +%s.%N)
				say "$n: agent up ($(awk -v l="${T_LAUNCH[$n]}" '{printf "kernel up %.1f s after power-on, agent at %.1f s", $1 - $2 - l, $1 - l}' "$W/vm/$n/out/agent-start"))"
			else
				left=1
				kill -0 "${PID[$n]:-}" 2>/dev/null || { say "$n: qemu exited"; tail -30 "$W/vm/$n/console.log" "$W/vm/$n/qemu.log"; return 1; }
			fi
		done
		[ $left = 0 ] && return 0
		[ "$(date +%s)" -lt "$end" ] || return 1
		sleep 1
	done
}
BOOT_OK=1
if ! wait_agents; then
	BOOT_OK=0
	say "not every VM came up"
fi
declare -A CI_OUT=()
if [ $BOOT_OK = 1 ]; then
	for n in $(names); do
		# systemctl waits for the end of the boot on D-Bus, idle; "cloud-init
		# status --wait" polls 4 times a second in Python, which under emulation
		# took a quarter of the VM's one CPU from the boot it waits for.
		CI_OUT[$n]=$(vm_exec "$n" "$BOOT_TIMEOUT" 'systemctl is-system-running --wait >/dev/null; cloud-init status --wait >/dev/null; cloud-init status --long; systemctl is-system-running --wait' 2>&1) || true
		T_READY[$n]=$(date +%s.%N)
		say "$n: cloud-init finished $(awk -v a="${T_READY[$n]}" -v b="${T_LAUNCH[$n]}" 'BEGIN{printf "%.1f", a - b}') s after power-on"
	done
fi

# ---- checks ----
# each_vm NAME SCRIPT: run SCRIPT on every VM, on all of them at once (each
# VM has its own CPU); the check passes when it passes everywhere.
each_vm() {
	local check=$1 script=$2 n msgs=() ev=$W/each_vm.$BASHPID pids=()
	mkdir -p "$ev"
	for n in $(names); do
		{ vm_exec "$n" 600 "$script" > "$ev/$n.out" 2>&1; echo $? > "$ev/$n.rc"; } &
		pids+=($!)
	done
	wait "${pids[@]}"   # these only: the qemus are children of this shell too
	for n in $(names); do
		[ "$(cat "$ev/$n.rc" 2>/dev/null)" = 0 ] || msgs+=("$n:" "$(cat "$ev/$n.out" 2>/dev/null)")
	done
	rm -rf "$ev"
	if [ ${#msgs[@]} -eq 0 ]; then ok "$check"; else notok "$check" "${msgs[@]}"; fi
}

check_boot() {
	local n msgs=()
	for n in $(names); do
		grep -q '^status: done' <<< "${CI_OUT[$n]:-}" && continue
		msgs+=("$n: cloud-init status --long:" "${CI_OUT[$n]:-(no answer)}")
		# what the boot run (runcmd: hpcinit apply) printed, without apt's lines
		msgs+=("$n: /var/log/cloud-init-output.log, apt lines left out:"
			"$(vm_exec "$n" 60 'grep -vE "^(Get|Hit|Ign|Reading|Building|Selecting|Preparing|Unpacking|Setting up|Processing|Fetched|\(Reading|debconf|Created symlink)" /var/log/cloud-init-output.log | tail -40' 2>&1)")
	done
	[ ${#msgs[@]} -eq 0 ] && ok "boot: cloud-init status done on every VM" || notok "boot: cloud-init status done on every VM" "${msgs[@]}"
	# one line per VM: the boot run's steps, their status and time
	for n in $(names); do
		echo "#   $n boot run: $(vm_exec "$n" 60 '
			sed -n "/^MODULE /,/^result: /p" /var/log/cloud-init-output.log | while read -r m st t rest; do
				case $m:$t in
				result:*) echo "$m $st $t $rest"; break ;;
				MODULE:*) ;;
				*:*ms) printf "%s %s %s, " "$m" "$st" "$t" ;;
				esac
			done' 2>&1 | head -1)"
	done
	each_vm "boot: hpcinit status ready, hpcinit.service ran at boot, no failed unit" '
		set -e
		hpcinit status > /tmp/st.txt 2>&1 || { cat /tmp/st.txt; exit 1; }
		grep -qiw ready /tmp/st.txt || { echo "hpcinit status is not ready:"; cat /tmp/st.txt; exit 1; }
		systemctl show -p ActiveState,Result hpcinit.service | tr "\n" " " | grep -q "ActiveState=active" ||
			{ systemctl status --no-pager hpcinit.service; exit 1; }
		journalctl -b -u hpcinit.service --no-pager -o cat | grep -q "Finished\|hpcinit" ||
			{ echo "no boot run of hpcinit.service in the journal"; exit 1; }
		f=$(systemctl list-units --failed --plain --no-legend)
		[ -z "$f" ] || { echo "failed units: $f"; for u in $(echo "$f" | cut -d" " -f1); do journalctl -b -u "$u" --no-pager | tail -15; done; exit 1; }
		s=$(systemctl is-system-running); [ "$s" = running ] || { echo "system is $s"; exit 1; }'
	# The custom-data packages: came from the local repository during this
	# first boot, in cloud-init'"'"'s final stage; hpcinit.service ran after it.
	each_vm "boot: cloud-init installed the custom-data's packages in this boot; hpcinit.service ran after" '
		set -e
		p=nfs-common; [ "$(hostname)" = head ] && p=nfs-kernel-server
		grep -q "^Unpacking $p " /var/log/cloud-init-output.log || { echo "$p was not installed by cloud-init:"; tail -20 /var/log/cloud-init-output.log; exit 1; }
		cf=$(systemctl show -p ExecMainExitTimestampMonotonic --value cloud-final.service)
		hs=$(systemctl show -p ExecMainStartTimestampMonotonic --value hpcinit.service)
		[ "$cf" -gt 0 ] && [ "$hs" -ge "$cf" ] || { echo "hpcinit.service started at $hs us, cloud-final ended at $cf us"; exit 1; }
		systemctl is-active --quiet hpcinit.service || { systemctl status --no-pager hpcinit.service; exit 1; }'
}

# (2) NFS: kernel server on the head, kernel client on the computes.
check_nfs() {
	each_vm "nfs: head exports /shared with the kernel server (exports.d, exportfs)" '
		[ "$(hostname)" = head ] || exit 0
		set -e
		cat /etc/exports.d/*.exports | grep -q "^/shared '"$NET"'.0/24(rw,sync,'"$SQUASH_OPT"',no_subtree_check)$" ||
			{ echo "exports.d:"; cat /etc/exports.d/*; exit 1; }
		exportfs -v | grep -q "^/shared" || { echo "exportfs -v:"; exportfs -v; exit 1; }
		systemctl is-active --quiet nfs-server || { echo "nfs-server is not active"; exit 1; }'
	if [ "$NFS41" = 1 ]; then
		each_vm "nfs: --nfs41: the head's kernel server has NFSv3 and NFSv4.0 off, 4.1 on (/proc/fs/nfsd/versions)" '
			[ "$(hostname)" = head ] || exit 0
			v=$(cat /proc/fs/nfsd/versions) || exit 1
			echo "versions: $v"
			for want in -3 -4.0 +4.1; do
				case " $v " in *" $want "*) ;; *) echo "want $want in: $v"; exit 1 ;; esac
			done'
	fi
	each_vm "nfs: computes mount head:/shared with the spec's options (vers=$NFS_VERS), fstab block right" '
		[ "$(hostname)" = head ] && exit 0
		set -e
		m=$(findmnt -n -o SOURCE,FSTYPE,OPTIONS /shared) || { echo "/shared is not mounted"; exit 1; }
		echo "$m" | grep -q "^'"$NET"'.10:/shared '"$NFS_TYPE"' " || { echo "mounted: $m"; exit 1; }
		for o in vers='"$NFS_VERS"' hard proto=tcp nconnect=8; do
			echo "$m" | grep -q "[ ,]$o\(,\|$\)" || { echo "option $o missing: $m"; exit 1; }
		done
		b=$(sed -n "/^# BEGIN hpcinit glocluster$/,/^# END hpcinit glocluster$/p" /etc/fstab)
		echo "$b" | grep -q "^'"$NET"'.10:/shared /shared nfs vers='"$NFS_VERS"',rsize=1048576,wsize=1048576,hard,proto=tcp,nconnect=8,.*_netdev" ||
			{ echo "fstab block:"; echo "$b"; exit 1; }'
	if [ "$NFS41" = 1 ]; then
		each_vm "nfs: --nfs41: /proc/mounts has /shared as nfs4 vers=4.1" '
			[ "$(hostname)" = head ] && exit 0
			l=$(awk '"'"'$2 == "/shared"'"'"' /proc/mounts)
			echo "$l"
			echo "$l" | grep -qE "^'"$NET"'\.10:/shared /shared nfs4 ([^ ]*,)?vers=4\.1(,[^ ]*)? " || exit 1'
	fi
	local n msgs=() want
	want=$(names | sort | tr '\n' ' ')
	for n in $(names); do
		local got
		got=$(vm_exec "$n" 60 'ls /shared/.hpcinit/glocluster/nodes/ | sed "s/\.rec$//" | sort | tr "\n" " "' 2>&1) || true
		[ "$got" = "$want" ] || msgs+=("$n sees records: '$got', want '$want'")
	done
	[ ${#msgs[@]} -eq 0 ] && ok "nfs: every node sees every record in the rendezvous directory on the share" ||
		notok "nfs: every node sees every record in the rendezvous directory on the share" "${msgs[@]}"
}

# The head (no expect) is ready alone at boot and learns the computes from
# hpcinit-refresh.timer (every minute), as on Azure: wait until every node's
# hostfile lists every VM (up to 3 minutes) before judging names and logins.
wait_converged() {
	local t0 n all left
	t0=$(date +%s)
	all=$(names | tr '\n' ' ')
	while :; do
		left=()
		for n in $(names); do
			vm_exec "$n" 30 "for m in $all; do grep -q \"^\$m slots=\" /etc/hpcinit/hostfile.openmpi || exit 1; done" \
				>/dev/null 2>&1 || left+=("$n")
		done
		[ ${#left[@]} -eq 0 ] && { say "converged: every hostfile lists every VM ($(($(date +%s) - t0)) s after the boot checks)"; return 0; }
		[ $(($(date +%s) - t0)) -ge 180 ] && { say "not converged after 180 s: ${left[*]}"; return 1; }
		sleep 5
	done
}

# (8) Names resolve without DNS: hpcinit's /etc/hosts block.
check_hosts() {
	wait_converged || true
	local script='set -e
		grep -q "^# BEGIN hpcinit glocluster$" /etc/hosts || { echo "no hpcinit block in /etc/hosts:"; cat /etc/hosts; exit 1; }'
	for n in $(names); do
		script+="
		a=\$(getent hosts $n | awk '{print \$1}'); [ \"\$a\" = $(addr_of "$n") ] || { echo \"$n resolves to '\$a', want $(addr_of "$n")\"; exit 1; }"
	done
	each_vm "hosts: every hostfile name resolves to its address on every node (/etc/hosts block, no DNS)" "$script"
}

# (5) SSH with pinned host keys, by name, between every pair.
check_ssh() {
	local script='set -e'
	for n in $(names); do
		script+="
		h=\$(runuser -u azureuser -- ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o ConnectTimeout=30 $n hostname 2>&1) || { echo \"ssh $n: \$h\"; exit 1; }
		[ \"\$h\" = $n ] || { echo \"ssh $n ran on \$h\"; exit 1; }"
	done
	each_vm "ssh: azureuser on every VM logs in to every VM by name, StrictHostKeyChecking=yes" "$script"
}

# (5) mpirun with the generated hostfile: an MPI hello on every VM.
check_mpi() {
	local out
	if out=$(vm_exec head 300 '
		set -e
		cp /hpcvm/mpi-hello /shared/mpi-hello 2>/dev/null || true
		[ -x /shared/mpi-hello ] || { echo "no MPI hello binary (tests/cluster/mpi-hello, built by make check)"; exit 1; }
		runuser -u azureuser -- mpirun --hostfile /etc/hpcinit/hostfile.openmpi --map-by node \
			-np '"$((N + 1))"' --bind-to none --mca plm_rsh_args "-o BatchMode=yes" \
			--mca pml ob1 --mca btl tcp,self,vader --mca btl_tcp_if_include '"$NET"'.0/24 \
			--mca oob_tcp_if_include '"$NET"'.0/24 /shared/mpi-hello' 2>&1); then
		local n miss=()
		for n in $(names); do grep -q "$n" <<< "$out" || miss+=("$n"); done
		[ ${#miss[@]} -eq 0 ] && ok "mpi: mpirun --hostfile /etc/hpcinit/hostfile.openmpi runs hello on every VM" ||
			notok "mpi: mpirun --hostfile /etc/hpcinit/hostfile.openmpi runs hello on every VM" "no rank on: ${miss[*]}" "$out"
	else
		notok "mpi: mpirun --hostfile /etc/hpcinit/hostfile.openmpi runs hello on every VM" "$out"
	fi
}

# (5) hpcinit verify (its own MPI check) from a compute, whose spec has mpi:.
check_verify() {
	local out
	# the computes' mpi.software_fabric: over UCX on rxe0 (check fabric proves the counters)
	if out=$(vm_exec c1 600 'hpcinit verify' 2>&1) && grep -q "^result: ready" <<< "$out" &&
		grep -q "^mpi  *ok" <<< "$out" && grep -qF "fabric rdma: UCX on rxe0:1" <<< "$out"; then
		ok "verify: hpcinit verify runs its MPI check across all VMs, over UCX on rxe0"
		grep '^mpi' <<< "$out" | sed 's/^/#   /'
	else
		notok "verify: hpcinit verify runs its MPI check across all VMs, over UCX on rxe0" "$out"
	fi
}

# (3) RDMA on Soft-RoCE: the rdma module opens rxe0, registers memory, names it honestly.
check_rdma() {
	each_vm "rdma: rxe0 enumerated, opened, reg_mr, Ethernet, rate, named as software RoCE" '
		[ "$(hostname)" = head ] && exit 0
		set -e
		out=$(hpcinit check --only rdma 2>&1) || { echo "$out"; exit 1; }
		for want in "rxe0: software RoCE on eth0 (fw 0.0.0, not an HCA), 2.5 Gb/s Ethernet, verbs probe ok (reg_mr 64 MiB)" \
			"rxe0: software RoCE device on eth0 (rdma_rxe), not an HCA" \
			"fw 0.0.0, 1 port(s), registered 64 MiB (memlock unlimited" \
			"rxe0 port 1: ACTIVE, LinkUp, 2.5 Gb/sec (1X SDR), Ethernet"; do
			grep -qF "$want" <<< "$out" || { echo "missing: $want"; echo "$out"; exit 1; }
		done'
}

# (3) rdma_cm between two VMs over rxe: c1 resolves c2's address and route
# to the soft device and connects (rping: rdma_resolve_addr,
# rdma_resolve_route, rdma_connect, RDMA reads and writes).
check_rdmacm() {
	local srv=c2 cli=c1 a out
	[ "$N" -ge 2 ] || { notok "rdmacm: c1 reaches c2 with rdma_cm over rxe" "needs 2 computes"; return; }
	a=$(addr_of "$srv")
	vm_exec "$srv" 30 "rm -f /tmp/rping-srv.*; (timeout 120 rping -s -a $a -v -C 3 > /tmp/rping-srv.out 2>&1; echo \$? > /tmp/rping-srv.rc) > /dev/null 2>&1 &
		sleep 2; rdma resource show cm_id | grep -q LISTEN || { echo no rping listener; cat /tmp/rping-srv.out; exit 1; }" > /dev/null 2>&1 || true
	if out=$(vm_exec "$cli" 120 "timeout 60 rping -c -a $a -v -C 3 2>&1; rc=\$?; echo rc=\$rc; exit \$rc" 2>&1) &&
		[ "$(grep -c '^ping data: rdma-ping-' <<< "$out")" -ge 3 ]; then
		ok "rdmacm: c1 reaches c2 with rdma_cm over rxe (rping: resolve address and route, connect, 3 RDMA pings)"
		grep -m1 '^ping data' <<< "$out" | sed 's/^/#   /'
	else
		notok "rdmacm: c1 reaches c2 with rdma_cm over rxe" "$out" "server: $(vm_exec "$srv" 30 'cat /tmp/rping-srv.out /tmp/rping-srv.rc' 2>&1)"
	fi
}

# (4) memlock: a PAM login and a systemd service get the spec's limit.
check_memlock() {
	# Both custom-data files leave memlock.limit at its default: unlimited.
	each_vm "memlock: ssh login (PAM) and a systemd service get the spec's limit" '
		set -e
		l=$(runuser -u azureuser -- ssh -o BatchMode=yes -o StrictHostKeyChecking=yes $(hostname) "ulimit -l")
		[ "$l" = unlimited ] || { echo "ssh login: ulimit -l = $l, want unlimited"; exit 1; }
		l=$(systemd-run --wait --pipe --quiet sh -c "ulimit -l")
		[ "$l" = unlimited ] || { echo "systemd service: ulimit -l = $l, want unlimited"; exit 1; }'
}

# (3, 5) MPI over real verbs: the computes' custom-data has
# mpi.software_fabric: true (subst), so the files hpcinit wrote at boot
# (Open MPI's openmpi-mca-params.conf, /etc/ucx/ucx.conf) make Soft-RoCE rxe0
# the fabric.  A job launched from c1 as azureuser with no fabric option of
# its own (what users type) must carry its messages over rxe0's verbs: on
# c1 and on c2, rxe0's own counters move by at least its messages and its
# payload in packets of at most 4 KiB (the largest RoCE MTU), and TCP's
# segments (/proc/net/snmp) stay below a quarter of what the payload would
# take over TCP.  Then the memlock proof: with a limits.d file lowering
# azureuser's memlock to 64 KiB (a new PAM session, as the job's ssh and
# runuser sessions are), hpcinit check fails predicting it and the same job
# fails.  Short runs of hpcinit-mpiverify: 10 round trips a size, 1 of 4 MiB
# (and its 2 warm-up ones).
FABRIC_ITERS=10 FABRIC_BW_ITERS=1
fabric_job() {          # TIMEOUT_S: the job's output, its exit status
	vm_exec c1 $(($1 + 60)) "cd /tmp && timeout $1 runuser -u azureuser -- mpirun --host c1:1,c2:1 -np 2 --map-by node \
		--bind-to none --mca plm_rsh_args '-o BatchMode=yes' \
		/usr/libexec/hpcinit-mpiverify --iters $FABRIC_ITERS --bw-iters $FABRIC_BW_ITERS 2>&1"
}
# "sent_pkts rcvd_pkts tcp_out_segs" of NAME
fabric_counters() {
	vm_exec "$1" 30 'h=/sys/class/infiniband/rxe0/ports/1/hw_counters
		echo "$(cat $h/sent_pkts) $(cat $h/rcvd_pkts) $(awk "/^Tcp:/ { if (++n == 2) print \$12 }" /proc/net/snmp)"'
}
check_fabric() {
	local n out rc t0 msgs bytes pkts tcpmax msgs_l=()
	declare -A before=() after=()
	[ "$N" -ge 2 ] || { notok "fabric: an MPI job over rxe0 between c1 and c2" "needs 2 computes"; return; }
	each_vm "fabric: the computes' Open MPI params and ucx.conf make rxe0 the fabric (mpi.software_fabric)" '
		[ "$(hostname)" = head ] && exit 0
		for f in "/etc/openmpi/openmpi-mca-params.conf:pml = ucx" "/etc/openmpi/openmpi-mca-params.conf:pml_ucx_devices = any" \
			"/etc/ucx/ucx.conf:UCX_NET_DEVICES=rxe0:1" "/etc/ucx/ucx.conf:UCX_UD_VERBS_ETH_DGID_CHECK=n"; do
			grep -qxF "${f#*:}" "${f%%:*}" || { echo "${f%%:*} has no line \"${f#*:}\":"; cat "${f%%:*}"; exit 1; }
		done'
	for n in c1 c2; do before[$n]=$(fabric_counters "$n" 2>&1) || true; done
	t0=$SECONDS
	out=$(fabric_job 240 2>&1) && rc=0 || rc=$?
	for n in c1 c2; do after[$n]=$(fabric_counters "$n" 2>&1) || true; done
	# what rank 0 sends (and echoes back): 3 sizes of iters + iters/10 + 1
	# round trips, then bw_iters + 2 of 4 MiB
	msgs=$((3 * (FABRIC_ITERS + FABRIC_ITERS / 10 + 1) + FABRIC_BW_ITERS + 2))
	bytes=$(((FABRIC_BW_ITERS + 2) * 4194304))
	pkts=$((bytes / 4096))
	tcpmax=$((bytes / 1448 / 4))
	if [ "$rc" != 0 ] || ! grep -q '^result status=ok' <<< "$out"; then
		notok "fabric: an MPI job with the files hpcinit wrote runs between c1 and c2 (rc $rc, $((SECONDS - t0)) s)" "$out"
		return
	fi
	ok "fabric: an MPI job with the files hpcinit wrote runs between c1 and c2 ($((SECONDS - t0)) s)"
	grep '^pair' <<< "$out" | sed 's/^/#   /'
	for n in c1 c2; do
		local s0 r0 p0 s1 r1 p1
		read -r s0 r0 p0 <<< "${before[$n]}"
		read -r s1 r1 p1 <<< "${after[$n]}"
		[[ "$s0$r0$p0$s1$r1$p1" =~ ^[0-9]+$ ]] || { msgs_l+=("$n: counters unreadable: before '${before[$n]}', after '${after[$n]}'"); continue; }
		echo "#   $n: rxe0 sent_pkts +$((s1 - s0)), rcvd_pkts +$((r1 - r0)); TCP OutSegs +$((p1 - p0)) (job: $msgs messages a way, $bytes bytes of 4 MiB messages a way)"
		[ $((s1 - s0)) -ge "$msgs" ] && [ $((s1 - s0)) -ge "$pkts" ] || msgs_l+=("$n: rxe0 sent $((s1 - s0)) packets, want >= $msgs messages and >= $pkts packets ($bytes bytes / 4096)")
		[ $((r1 - r0)) -ge "$msgs" ] && [ $((r1 - r0)) -ge "$pkts" ] || msgs_l+=("$n: rxe0 received $((r1 - r0)) packets, want >= $msgs and >= $pkts")
		[ $((p1 - p0)) -lt "$tcpmax" ] || msgs_l+=("$n: TCP sent $((p1 - p0)) segments, want < $tcpmax (a quarter of $bytes bytes in 1448-byte segments)")
	done
	[ ${#msgs_l[@]} -eq 0 ] && ok "fabric: its messages went over rxe0's verbs (rxe0's counters on c1 and c2), not TCP" ||
		notok "fabric: its messages went over rxe0's verbs (rxe0's counters on c1 and c2), not TCP" "${msgs_l[@]}"
	check_fabric_memlock
}
check_fabric_memlock() {
	local out rc name="fabric: memlock 64 KiB for azureuser: hpcinit check predicts it, the verbs job fails"
	vm_exec c1 30 "printf 'azureuser - memlock 64\n' > /etc/security/limits.d/99-vmcheck.conf" > /dev/null 2>&1
	vm_exec c2 30 "printf 'azureuser - memlock 64\n' > /etc/security/limits.d/99-vmcheck.conf" > /dev/null 2>&1
	local chk job n
	chk=$(vm_exec c1 120 'hpcinit check --only memlock,rdma 2>&1; echo "rc=$?"' 2>&1) || true
	# UCX's ibv_reg_mr fails (Cannot allocate memory) and it keeps trying:
	# the job ends at its timeout (seen on these VMs), or sooner
	job=$(fabric_job 45 2>&1) && rc=0 || rc=$?
	for n in c1 c2; do
		vm_exec "$n" 30 'rm -f /etc/security/limits.d/99-vmcheck.conf
			pkill -u azureuser -x mpirun; pkill -u azureuser -x orted; pkill -u azureuser -f /usr/libexec/hpcinit-mpiverify
			true' > /dev/null 2>&1 || true
	done
	if grep -q '^rc=1$' <<< "$chk" && grep -q '99-vmcheck.conf:1 sets memlock 64 KiB' <<< "$chk" &&
		grep -q 'reg-mr-enomem: rxe0: ibv_reg_mr of .* failed with ENOMEM' <<< "$chk" && [ "$rc" != 0 ] &&
		! grep -q '^result status=ok' <<< "$job" && grep -q 'ibv_reg_mr(.*) failed: Cannot allocate memory' <<< "$job"; then
		ok "$name"
		grep -m2 -E '^hpcinit\[(memlock|rdma)\]: error' <<< "$chk" | sed 's/^/#   check: /'
		grep -m1 'ibv_reg_mr(.*) failed' <<< "$job" | sed 's/^/#   job: /'
	else
		notok "$name" "hpcinit check --only memlock,rdma:" "$chk" "the job (rc $rc):" "$job"
	fi
}

# Benchmark (tests/bench/vm-verbs.sh; not a default check): hpcinit verify
# over rxe0 (the computes' mpi.software_fabric) beside perftest between the
# same two VMs in the same run: ib_send_lat (8 bytes, its typical one-way
# latency: the median, as verify's is the median round trip halved) and
# ib_write_bw (4 MiB messages, its average), both on rxe0 with the
# IPv4-mapped RoCE v2 GID (index 1).  Printed, not asserted; a baseline that
# did not run fails the check and no ratio is printed.
perftest_pair() {       # TOOL SERVER CLIENT ARGS...: the client's output
	local tool=$1 srv=$2 cli=$3 a
	shift 3
	a=$(addr_of "$srv")
	vm_exec "$srv" 30 "rm -f /tmp/pt-srv.out; (timeout 150 $tool -d rxe0 -x 1 -F $* > /tmp/pt-srv.out 2>&1 &); sleep 1" > /dev/null 2>&1 || true
	sleep 1
	vm_exec "$cli" 180 "timeout 140 $tool -d rxe0 -x 1 -F $* $a 2>&1"
}
check_verbsbench() {
	local out pair a b lat bw plat pbw t0
	t0=$SECONDS
	out=$(vm_exec c1 900 'hpcinit verify' 2>&1) || true
	pair=$(grep -m1 -oE 'pair [^ ]+ <-> [^ ]+: latency [0-9.]+ us .*, bandwidth [0-9.]+ MiB/s' <<< "$out") || true
	if ! grep -q "^result: ready" <<< "$out" || ! grep -qF "UCX on rxe0:1" <<< "$out" || [ -z "$pair" ]; then
		notok "verbsbench: hpcinit verify over rxe0 on c1 ($((SECONDS - t0)) s)" "$out"
		return
	fi
	ok "verbsbench: hpcinit verify over rxe0 on c1 ($((SECONDS - t0)) s)"
	read -r _ a _ b _ lat _ <<< "$pair"
	b=${b%:}
	bw=$(sed -E 's/.*bandwidth ([0-9.]+) MiB\/s.*/\1/' <<< "$pair")
	out=$(perftest_pair ib_send_lat "$b" "$a" -n 1000 -s 8 2>&1) || true
	plat=$(awk '$1 == 8 && NF >= 5 { print $5 }' <<< "$out")
	[ -n "$plat" ] || { notok "verbsbench: perftest ib_send_lat $a -> $b on rxe0 (the baseline)" "$out"; return; }
	out=$(perftest_pair ib_write_bw "$b" "$a" -n 20 -s 4194304 2>&1) || true
	pbw=$(awk '$1 == 4194304 && NF >= 4 { print $4 }' <<< "$out")
	[ -n "$pbw" ] || { notok "verbsbench: perftest ib_write_bw $a -> $b on rxe0 (the baseline)" "$out"; return; }
	ok "verbsbench: perftest ib_send_lat and ib_write_bw $a -> $b on rxe0 (the baseline)"
	printf '# %-34s %14s %18s\n' "$a <-> $b over rxe0" "latency (us)" "bandwidth (MiB/s)"
	printf '# %-34s %14s %18s\n' "hpcinit verify (MPI over UCX)" "$lat" "$bw"
	printf '# %-34s %14s %18s\n' "perftest (ib_send_lat, ib_write_bw)" "$plat" "$pbw"
	awk -v l="$lat" -v pl="$plat" -v b="$bw" -v pb="$pbw" \
		'BEGIN { printf "# %-34s %14.2f %18.2f\n", "verify / perftest", l / pl, b / pb }'
	echo "#   (verify: median round trip halved, worst of 8/64/512 B; 4 MiB ping-pong. perftest: ib_send_lat"
	echo "#    8 B t_typical, ib_write_bw 4 MiB BW average in perftest's MB/sec, 2^20 bytes)"
}

# (9) Gating: a stand-in slurmd with the shipped drop-in starts only when hpcinit is ready.
check_gating() {
	each_vm "gating: slurmd with the shipped drop-in refuses to start when hpcinit failed, starts when ready" '
		[ "$(hostname)" = c1 ] || exit 0
		set -e
		printf "[Unit]\nDescription=stand-in slurmd\n[Service]\nExecStart=/bin/sleep infinity\n" > /etc/systemd/system/slurmd.service
		mkdir -p /etc/systemd/system/slurmd.service.d
		cp /usr/share/hpcinit/systemd/slurmd-wait-hpcinit.conf /etc/systemd/system/slurmd.service.d/hpcinit.conf
		cp /etc/hpcinit/node.yaml /root/node.yaml.good
		# An NFS server that never comes: the run fails, hpcinit.service fails.
		sed -i "s|^\(  *\)mounts:$|&\n\1  - {source: \"'"$NET"'.99:/never\", path: /mnt/never, options: [vers=3], wait: 5s}|" /etc/hpcinit/node.yaml
		systemctl daemon-reload
		systemctl restart hpcinit.service && { echo "hpcinit.service started with a missing NFS server"; cp /root/node.yaml.good /etc/hpcinit/node.yaml; exit 1; }
		if systemctl start slurmd.service 2>/tmp/slurmd.err; then echo "slurmd started although hpcinit failed"; cp /root/node.yaml.good /etc/hpcinit/node.yaml; exit 1; fi
		cat /tmp/slurmd.err
		cp /root/node.yaml.good /etc/hpcinit/node.yaml
		sed -i "/\/mnt\/never/d" /etc/fstab
		systemctl restart hpcinit.service || { systemctl status --no-pager hpcinit.service | tail; exit 1; }
		systemctl start slurmd.service
		systemctl is-active slurmd.service
		[ "$(systemctl show -p LimitMEMLOCK --value slurmd.service)" = infinity ]
		systemctl stop slurmd.service'
}

# (7) Kernel hold: a newer linux-image-amd64 offered by the local repository stays out.
check_kernel() {
	each_vm "kernel: apt-get upgrade leaves the held kernel packages alone; hpcinit check agrees" '
		[ "$(hostname)" = c2 ] || exit 0
		set -e
		v0=$(dpkg-query -W -f="\${Version}" linux-image-amd64)
		apt-cache policy linux-image-amd64 | grep -q "99.0" || { echo "the repository offers no newer linux-image-amd64"; apt-cache policy linux-image-amd64; exit 1; }
		DEBIAN_FRONTEND=noninteractive apt-get upgrade -y -q > /tmp/up.log 2>&1 || { cat /tmp/up.log; exit 1; }
		v1=$(dpkg-query -W -f="\${Version}" linux-image-amd64)
		[ "$v0" = "$v1" ] || { echo "linux-image-amd64 went from $v0 to $v1"; cat /tmp/up.log; exit 1; }
		grep -q "held back\|kept back" /tmp/up.log || { echo "apt did not report the package held back:"; cat /tmp/up.log; exit 1; }
		hpcinit check --only kernel | grep -q "^result: in-sync" || { hpcinit check --only kernel; exit 1; }'
}

# (2) A reboot of a compute brings the NFS mount back (hpcinit.service at a
# later boot: runcmd is per instance), and the node is ready again.
check_reboot() {
	local n=c1 before end out
	before=$(cat "$W/vm/$n/out/agent-start")
	vm_exec "$n" 10 'systemctl reboot --no-block' >/dev/null 2>&1 || true
	end=$(($(date +%s) + BOOT_TIMEOUT))
	while [ "$(cat "$W/vm/$n/out/agent-start" 2>/dev/null)" = "$before" ]; do
		[ "$(date +%s)" -lt "$end" ] && kill -0 "${PID[$n]:-}" 2>/dev/null ||
			{ notok "reboot: $n comes back with /shared mounted and hpcinit ready" "it did not come back (console: $W/vm/$n/console.log)"; return; }
		sleep 1
	done
	if out=$(vm_exec "$n" "$BOOT_TIMEOUT" '
		systemctl is-system-running --wait >/dev/null
		while [ "$(systemctl show -p ActiveState --value hpcinit.service)" = activating ]; do sleep 1; done
		set -e
		[ "$(cat /proc/sys/kernel/random/boot_id)" != "" ]
		systemctl is-active hpcinit.service
		findmnt -n -o SOURCE,FSTYPE /shared
		journalctl -b -u hpcinit.service -o cat | grep "^result: "
		hpcinit status | grep -q "result: ready"' 2>&1); then
		ok "reboot: $n comes back with /shared mounted and hpcinit ready"
	else
		notok "reboot: $n comes back with /shared mounted and hpcinit ready" "$out"
	fi
}

# member_script NAME ADDR in|out: a script for a VM that succeeds when NAME
# is in (out of) every file hpcinit keeps the membership in: the three MPI
# hostfiles, known_hosts, clustershell's group and the /etc/hosts block;
# otherwise it prints where it is (is not).
member_script() {
	local n=$1 a=$2 want=$3
	cat <<-EOF
	d=/etc/hpcinit bad=
	has() { if [ "\$1" = 1 ]; then r=in; else r=out; fi; [ \$r = $want ] || bad="\$bad \$2"; }
	grep -q '^$n slots=' \$d/hostfile.openmpi; has \$((! \$?)) hostfile.openmpi
	grep -q '^$n:' \$d/hostfile.mpich; has \$((! \$?)) hostfile.mpich
	grep -qx '$n' \$d/hostfile.plain; has \$((! \$?)) hostfile.plain
	grep -qE '(^|[ ,])$n([ ,]|\$)' \$d/ssh_known_hosts; has \$((! \$?)) ssh_known_hosts
	nodeset -e @glocluster 2>/dev/null | tr ' ' '\n' | grep -qx '$n'; has \$((! \$?)) "nodeset @glocluster"
	sed -n '/^# BEGIN hpcinit glocluster\$/,/^# END hpcinit glocluster\$/p' /etc/hosts | grep -qE '^${a//./\\.}[[:space:]]+$n\b'; has \$((! \$?)) /etc/hosts
	[ -z "\$bad" ] || { echo "$n not $want of:\$bad"; exit 1; }
	EOF
}

# wait_member NAME ADDR in|out SECONDS VM...: poll the VMs until each passes
# member_script; prints the VMs that did not, returns 1 then.
wait_member() {
	local n=$1 a=$2 want=$3 end=$(($(date +%s) + $4)) script v left
	shift 4
	script=$(member_script "$n" "$a" "$want")
	while :; do
		left=()
		for v in "$@"; do
			vm_exec "$v" 30 "$script" >/dev/null 2>&1 || left+=("$v")
		done
		[ ${#left[@]} -gt 0 ] || return 0
		[ "$(date +%s)" -lt "$end" ] || break
		sleep 3
	done
	for v in "${left[@]}"; do echo "$v: $(vm_exec "$v" 30 "$script" 2>&1)"; done
	return 1
}

# clock_offset VM: the VM's clock minus the host's, in seconds, to a few ms:
# the VM writes its time into a file on its 9p share, whose mtime the host's
# kernel sets (with the host's clock) at the same moment.
clock_offset() {
	local v=$1 f=$W/vm/$1/out/clock
	rm -f "$f"
	vm_exec "$v" 30 'date +%s.%N > /hpcvm/out/clock' >/dev/null 2>&1 || return 1
	awk -v m="$(stat -c %.9Y "$f")" '{printf "%.3f", $1 - m}' "$f"
}
# watch_lag EVENT REF_HOST VM...: for each VM, the first refresh of its
# hpcinit-watch.service logged after REF_HOST (host clock, seconds; from 2 s
# before it, as REF_HOST may be a little late) that was run for a membership
# change, as seconds after REF_HOST (the refresh has written the hostfiles
# when it logs).  One line; "?" where none was found.
watch_lag() {
	local ev=$1 ref=$2 v off line out=""
	shift 2
	for v in "$@"; do
		off=$(clock_offset "$v") || off=
		line=$(vm_exec "$v" 30 'journalctl -b -u hpcinit-watch.service -o short-unix --no-pager | grep "membership changed"' 2>/dev/null |
			awk -v r="$ref" -v o="${off:-0}" '{t = $1 - o; if (t >= r - 2) {printf "%.2f", t - r; exit}}')
		out+="$v ${line:-?} s (clock offset ${off:-?} s), "
	done
	echo "#   watch: $ev reached each node's hostfiles (its watch's refresh logged): ${out%, }"
}

# watch_within CHECK LIM EVENT REF_HOST VM...: the check passes when every
# VM's watch logged its refresh for EVENT within LIM seconds of REF_HOST.
watch_within() {
	local check=$1 lim=$2 lags
	shift 2
	if lags=$(watch_lag "$@") && ! grep -q " ? s" <<< "$lags" &&
		grep -oE '(head|c[0-9]+) -?[0-9.]+ s \(' <<< "$lags" | awk -v lim="$lim" '$2 > lim {bad = 1} END {exit bad}'; then
		ok "$check"
		echo "$lags"
	else
		notok "$check" "$lags"
	fi
}

late() { echo "c$((N + 1))"; }
since() { awk -v a="$(date +%s.%N)" -v b="$1" 'BEGIN{printf "%.1f", a - b}'; }

# (6) Scale-out under real systemd: a VM booted later reaches every old node's
# hostfiles and known_hosts through hpcinit-refresh.timer (the shipped
# custom-data enables no watch).  Prints the join's split (the benchmark of a
# VM that joins a running cluster).
T_JOINED=
check_scaleout() {
	local n i=$((N + 2)) end out old left k ci he
	n=$(late)
	make_seed "$n"
	boot "$n" "$i"
	end=$(($(date +%s) + BOOT_TIMEOUT))
	while [ ! -e "$W/vm/$n/out/agent-start" ]; do
		[ "$(date +%s)" -lt "$end" ] && kill -0 "${PID[$n]:-}" 2>/dev/null ||
			{ notok "scaleout: $n boots into the running cluster, ready" "no agent (console: $W/vm/$n/console.log)"; return; }
		sleep 1
	done
	k=$(awk -v l="${T_LAUNCH[$n]}" '{printf "%.1f", $1 - $2 - l}' "$W/vm/$n/out/agent-start")
	out=$(vm_exec "$n" "$BOOT_TIMEOUT" '
		cloud-init status --wait >/dev/null; cloud-init status
		while [ "$(systemctl show -p ActiveState --value hpcinit.service)" = activating ]; do sleep 1; done
		hpcinit status | grep "result:"
		mono() { systemctl show -p "$2" --value "$1"; }
		read -r up _ < /proc/uptime
		# seconds before now: hpcinit ready
		awk -v u="$up" -v he="$(mono hpcinit.service ActiveEnterTimestampMonotonic)" "BEGIN{printf \"ready-ago %.1f\\n\", u - he / 1e6}"
		# the boot run (runcmd): its own time, waits for the server and peers included
		sed -n "s/^result: .*, \\([0-9]*\\) ms)$/run-ms \\1/p" /var/log/cloud-init-output.log | head -1' 2>&1) || true
	ci=$(since "${T_LAUNCH[$n]}")
	he=$(awk -v c="$ci" '/^ready-ago /{printf "%.1f", c - $2}' <<< "$out")
	if grep -q "result: ready" <<< "$out"; then
		ok "scaleout: $n boots into the running cluster, ready"
	else
		notok "scaleout: $n boots into the running cluster, ready" "$out"
		return
	fi
	old=$(names | tr '\n' ' ')
	# every old node's refresh timer (every minute, 10 s spread) must list it
	if left=$(wait_member "$n" "$(addr_of "$n")" in 240 $old); then
		T_JOINED=$(since "${T_LAUNCH[$n]}")
		ok "scaleout: $n in every old node's hostfiles, known_hosts, nodeset and /etc/hosts"
	else
		notok "scaleout: $n in every old node's hostfiles, known_hosts, nodeset and /etc/hosts" \
			"after $(since "${T_LAUNCH[$n]}") s: $left" \
			"$(vm_exec head 30 'systemctl list-timers --no-pager hpcinit-refresh.timer; journalctl -b -u hpcinit-refresh.service --no-pager | tail -5' 2>&1)"
		return
	fi
	echo "# join of $n (s after power-on): kernel $k, cloud-init done $ci, hpcinit ready ${he:-?}, listed by every old node $T_JOINED; hpcinit's boot run $(awk '/^run-ms /{print $2}' <<< "$out") ms"
	if [ "$WATCH" = 1 ]; then
		# when its boot run published its record: the discovery step's log line
		# (the step ends a few hundred ms after the record is written), in the
		# new VM's clock, made the host's
		local tj noff
		if tj=$(vm_exec "$n" 30 'journalctl -b -o short-unix --no-pager | grep -m1 "hpcinit\[[0-9]*\]: \[discovery\]" | cut -d" " -f1' 2>/dev/null) &&
			noff=$(clock_offset "$n") && [ -n "$tj" ]; then
			watch_within "scaleout: every old node's watch listed $n within 15 s of its boot run's discovery step" 15 \
				"the join of $n (from its boot run's discovery line)" "$(awk -v t="$tj" -v o="$noff" 'BEGIN{printf "%.3f", t - o}')" $old
		else
			notok "scaleout: every old node's watch listed $n within 15 s of its boot run's discovery step" "no discovery line in $n's journal: $tj"
		fi
	fi
	echo "#   (cloud-init done is when the harness saw it; the last step waits for the old nodes' refresh timer, 1 min)"
}

# (6) A VM shut down cleanly leaves at once: hpcinit-leave.service's ExecStop
# ("hpcinit leave") runs at poweroff while the network and the share are up,
# so its record is gone from the share when the VM is off (long before its
# lease), and every old node's refresh timer drops it.
check_leave() {
	local n t0 end out left
	n=$(late)
	[ -n "${PID[$n]:-}" ] && kill -0 "${PID[$n]:-}" 2>/dev/null ||
		{ notok "leave: $n (booted by scaleout) shuts down" "$n is not running (run scaleout first)"; return; }
	out=$(vm_exec "$n" 30 'systemctl is-active hpcinit-leave.service; systemctl is-enabled hpcinit-leave.service; ls /shared/.hpcinit/glocluster/nodes/' 2>&1) || true
	grep -q "^active$" <<< "$out" && grep -q "^$n.rec$" <<< "$out" ||
		{ notok "leave: hpcinit-leave.service active on $n, its record on the share" "$out"; return; }
	if [ "$WATCH" = 1 ]; then
		local v bad=""
		for v in $(names) "$n"; do
			out=$(vm_exec "$v" 30 'systemctl is-active hpcinit-watch.service' 2>&1) || true
			[ "$out" = active ] || bad+=" $v: $out;"
		done
		[ -z "$bad" ] && ok "watch: hpcinit-watch.service active on every node" ||
			notok "watch: hpcinit-watch.service active on every node" "$bad"
	fi
	t0=$(date +%s.%N)
	vm_exec "$n" 10 'systemctl poweroff --no-block' >/dev/null 2>&1 || true
	end=$(($(date +%s) + 180))
	local t_left=
	while kill -0 "${PID[$n]:-}" 2>/dev/null; do
		[ "$(date +%s)" -lt "$end" ] || { notok "leave: $n powers off" "still running after 180 s"; return; }
		# when hpcinit leave has run: the console says so (host clock, to 0.1 s)
		[ -n "$t_left" ] || ! grep -aq 'Stopped.*hpcinit-leave' "$W/vm/$n/console.log" || t_left=$(date +%s.%N)
		sleep 0.1
	done
	say "$n: powered off $(since "$t0") s after systemctl poweroff"
	local t_off
	t_off=$(date +%s.%N)
	out=$(vm_exec head 30 "ls /shared/.hpcinit/glocluster/nodes/" 2>&1) || true
	if grep -q "^$n.rec$" <<< "$out"; then
		notok "leave: hpcinit leave ran at poweroff (its record is gone from the share when it is off)" \
			"records: $(tr '\n' ' ' <<< "$out")" "console:" "$(grep -a -i 'leave\|hpcinit' "$W/vm/$n/console.log" | tail -8)"
	else
		ok "leave: hpcinit leave ran at poweroff (its record is gone from the share when it is off)"
		grep -a 'hpcinit-leave\|Leave the HPC' "$W/vm/$n/console.log" | tail -2 | sed 's/^/#   console: /'
	fi
	# a refresh (every minute, 10 s spread) drops it; its lease must not be what did
	local lim=$(($(lease_s) - 15))
	[ "$lim" -le 150 ] || lim=150
	# with every node's watch running (--watch): within seconds of the VM being off
	[ "$WATCH" = 0 ] || lim=15
	if left=$(wait_member "$n" "$(addr_of "$n")" out "$lim" $(names)); then
		ok "leave: $n gone from every node's hostfiles, known_hosts, nodeset and /etc/hosts ($(since "$t0") s after poweroff, $(since "$t_off") s after it was off$([ "$WATCH" = 0 ] || echo ", with the watch"), before its lease of $(lease_s) s)"
		# The harness's own rounds (a command on each VM through its 9p agent)
		# take seconds under emulation: with the watch, each node's own log
		# says when its refresh dropped the VM, and that must be within lim.
		if [ "$WATCH" = 1 ]; then
			if [ -z "$t_left" ]; then
				notok "leave: every node's watch dropped $n within $lim s of its leave" "no \"Stopped hpcinit-leave\" on its console"
			else
				watch_within "leave: every node's watch dropped $n within $lim s of its leave" "$lim" \
					"the leave of $n (from its console's \"Stopped hpcinit-leave\")" "$t_left" $(names)
			fi
		fi
	else
		notok "leave: $n gone from every node's hostfiles, known_hosts, nodeset and /etc/hosts before its lease" "after $(since "$t0") s: $left"
	fi
}

# (6) Scale-in without a goodbye: c2's power is cut (qemu killed); its record
# stays on the share until it is a lease old, then every other node drops it.
lease_s() { awk -v l="${LEASE:-5m}" 'BEGIN{v=l+0; if (l ~ /m$/) v*=60; if (l ~ /h$/) v*=3600; print v}'; }
check_scalein() {
	local n=c2 t0 left lease_s
	lease_s=$(lease_s)
	[ "$N" -ge 2 ] && kill -0 "${PID[$n]:-}" 2>/dev/null || { notok "scalein: $n powered off hard" "$n is not running"; return; }
	t0=$(date +%s.%N)
	kill -9 "${PID[$n]}"
	wait "${PID[$n]}" 2>/dev/null || true
	unset "PID[$n]"
	say "$n: power cut (qemu killed); lease $lease_s s"
	local others
	others=$(names | grep -vx "$n" | tr '\n' ' ')
	if vm_exec head 30 "ls /shared/.hpcinit/glocluster/nodes/$n.rec" >/dev/null 2>&1; then
		ok "scalein: $n's record stays on the share (no leave ran)"
	else
		notok "scalein: $n's record stays on the share (no leave ran)"
	fi
	if left=$(wait_member "$n" "$(addr_of "$n")" out $((lease_s + 180)) $others); then
		local t
		t=$(since "$t0")
		if awk -v t="$t" -v l="$lease_s" 'BEGIN{exit !(t >= l - 70)}'; then
			ok "scalein: $n gone from every other node's hostfiles, known_hosts, nodeset and /etc/hosts after its lease ($t s after the power cut, lease $lease_s s)"
		else
			notok "scalein: $n dropped after its lease" "gone after $t s, before its lease ($lease_s s) could have run out"
		fi
	else
		notok "scalein: $n gone from every other node's hostfiles after its lease" "after $(since "$t0") s: $left"
	fi
	vm_exec head 30 "ls /shared/.hpcinit/glocluster/nodes/$n.rec" >/dev/null 2>&1 &&
		notok "scalein: $n's expired record removed from the share" || ok "scalein: $n's expired record removed from the share"
}

# (2) The head booted --late-head seconds after the computes: their boot run
# waited for its NFS server (the mount's wait), then everything converged
# (the boot, nfs and hosts checks judge the rest).
check_latehead() {
	[ "$LATE_HEAD" -gt 0 ] || { notok "latehead: computes wait for a late head" "run with --late-head SECONDS"; return; }
	local n out msgs=() info=() name="latehead: computes booted ${LATE_HEAD} s before the head waited for its server, then mounted and were ready"
	for n in $(names); do
		[ "$n" = head ] && continue
		if out=$(vm_exec "$n" 120 '
		set -e
		# the boot run (runcmd) prints its table to cloud-init-output.log: the nfs row'"'"'s time
		l=$(grep -m1 -E "^nfs +[a-z]+ +[0-9]+ms" /var/log/cloud-init-output.log) ||
			{ echo "no nfs row in the boot run:"; tail -30 /var/log/cloud-init-output.log; exit 1; }
		echo "boot run: $l"
		ms=$(echo "$l" | awk "{print \$3}" | tr -d ms)
		[ "$ms" -ge 20000 ] || { echo "the nfs step took $ms ms: it did not wait for the late head"; exit 1; }
		findmnt -n /shared >/dev/null
		hpcinit status | grep -q "result: ready"' 2>&1); then info+=("$n $out"); else msgs+=("$n:" "$out"); fi
	done
	if [ ${#msgs[@]} -eq 0 ]; then ok "$name"; printf '#   %s\n' "${info[@]}"; else notok "$name" "${msgs[@]}"; fi
}

# tests/vmcheck/*.sh: proofs that only a real kernel and systemd can give,
# run inside the VMs.  Where each runs and what it needs after (it changes
# the node): memlock-systemd.sh on c1, then the spec is applied again;
# nfs-self-probe.sh on the head (it stops and starts the NFS server), then
# the spec's exports are applied again.  Any other file runs on c1.
vmcheck_where() {
	case $1 in
	nfs-*) echo head ;;
	*) echo c1 ;;
	esac
}
check_vmcheck() {
	local f b v out args
	for f in "$SRC"/tests/vmcheck/*.sh; do
		b=$(basename "$f")
		# --vmcheck names the files to run (CI: the quick ones); default all
		[ -z "$VMCHECK" ] || [[ " $VMCHECK " == *" $b "* ]] || continue
		v=$(vmcheck_where "$b")
		args=
		case $b in nfs-self-probe.sh) args=$NET.0/24 ;; esac
		local t0=$SECONDS
		# the file runs hpcinit with a spec of its own and reads the status
		# back: the node's refresh timer must not run the real spec meanwhile
		# (seen on real VMs: it made status ready between the file's runs)
		if out=$(vm_exec "$v" 600 "systemctl stop hpcinit-refresh.timer; while systemctl is-active -q hpcinit-refresh.service; do sleep 1; done
			sh /hpcvm/vmcheck/$b $args" 2>&1); then
			ok "vmcheck: $b on $v ($((SECONDS - t0)) s)"
			grep '^ok - ' <<< "$out" | sed 's/^/#   /'
		else
			notok "vmcheck: $b on $v" "$out"
		fi
		# put the node back to its own spec (and prove it is back)
		if ! out=$(vm_exec "$v" 300 '
			hpcinit apply > /tmp/reapply.txt 2>&1; rc=$?
			systemctl start hpcinit-refresh.timer
			[ $rc = 0 ] || { cat /tmp/reapply.txt; exit 1; }
			systemctl is-active -q hpcinit-refresh.timer || { echo "hpcinit-refresh.timer is not active again"; exit 1; }
			[ "$(hostname)" = head ] && { exportfs -v | grep -q "^/shared" || { echo "/shared not exported again"; exit 1; }; }
			m=$(systemctl show -p DefaultLimitMEMLOCK --value)
			want=infinity; [ "$(hostname)" = head ] && want=$m
			[ "$m" = "$want" ] || [ "$m" = 18446744073709551615 ] || { echo "DefaultLimitMEMLOCK=$m after apply"; exit 1; }' 2>&1); then
			notok "vmcheck: $v back to its spec after $b" "$out"
		fi
	done
}

# Boot-to-ready split of every VM (tests/bench/vm-boot.sh prints it; not asserted).
# Times are from qemu's start (power-on); kernel start from the agent's clock
# and /proc/uptime, the rest from systemd's monotonic timestamps.
check_bench() {
	local n out k
	printf '# %-6s %9s %9s %11s %11s %11s %11s %10s %10s\n' VM kernel userspace cloud-init hpcinit-go \
		hpcinit-ok cloud-final run-ms rerun-ms
	for n in $(names); do
		k=$(awk -v l="${T_LAUNCH[$n]}" '{printf "%.1f", $1 - $2 - l}' "$W/vm/$n/out/agent-start")
		out=$(vm_exec "$n" 120 '
			mono() { systemctl show -p "$2" --value "$1"; }
			s() { awk -v u="$1" "BEGIN{printf \"%.1f\", u / 1e6}"; }
			ud=$(mono systemd-journald.service InactiveExitTimestampMonotonic)
			ci=$(mono cloud-init-local.service InactiveExitTimestampMonotonic)
			hs=$(mono hpcinit.service InactiveExitTimestampMonotonic)
			he=$(mono hpcinit.service ActiveEnterTimestampMonotonic)
			cf=$(mono cloud-final.service ActiveEnterTimestampMonotonic)
			[ "$cf" != 0 ] || cf=$(mono cloud-final.service ExecMainExitTimestampMonotonic)
			run=$(journalctl -b -u hpcinit.service -o cat | sed -n "s/^result: .*, \([0-9]*\) ms)$/\1/p" | head -1)
			re=$(hpcinit apply 2>&1 | sed -n "s/^result: .*, \([0-9]*\) ms)$/\1/p")
			echo "$(s "$ud") $(s "$ci") $(s "$hs") $(s "$he") $(s "$cf") ${run:-?} ${re:-?}"' 2>&1) ||
			{ notok "bench: timestamps from $n" "$out"; return; }
		read -r ud ci hs he cf run re <<< "$out"
		awk -v n="$n" -v k="$k" -v ud="$ud" -v ci="$ci" -v hs="$hs" -v he="$he" -v cf="$cf" -v run="$run" -v re="$re" \
			'BEGIN{printf "# %-6s %8.1fs %8.1fs %10.1fs %10.1fs %10.1fs %10.1fs %10s %10s\n", n, k, k + ud, k + ci, k + hs, k + he, k + cf, run, re}'
	done
	echo "# (seconds after power-on: kernel start, userspace (journald), cloud-init-local start,"
	echo "#  hpcinit.service start and ready, cloud-final done; run-ms: hpcinit's boot run,"
	echo "#  waits for the NFS server and peers included; rerun-ms: a converged hpcinit apply,"
	echo "#  hpcinit's own share once its server and peers are up)"
	ok "bench: boot-to-ready split of every VM printed"
}

# ---- --slurm: the cluster of conf/cloud-init/slurm-*.yaml (docs/slurm.md) ----
slurm_computes() { names | grep -v '^head$'; }
# slurm_on_head CHECK SCRIPT: run SCRIPT on the head; the check passes when it exits 0.
slurm_on_head() {
	local out
	if out=$(vm_exec head 300 "$2" 2>&1); then ok "$1"; [ -z "$out" ] || sed 's/^/#   /' <<< "$out"
	else notok "$1" "$out"; fi
}
# sinfo_wait NODE "STATE REASON": on the head, until sinfo says so for NODE (up to 120 s).
sinfo_wait() {
	printf 'for i in $(seq 120); do s=$(sinfo -h -n %s -o "%%t %%E"); s=${s/\\*/}; [ "$s" = "%s" ] && exit 0; sleep 1; done; echo "sinfo for %s: $s (want %s)"; sinfo -N -o "%%N %%t %%f %%E"; exit 1' "$1" "$2" "$1" "$2"
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
		e=$(systemctl is-enabled slurmd.service 2>&1); [ "$e" = disabled ] || { echo "slurmd.service is $e, want disabled (custom-data)"; exit 1; }
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
	got=$(vm_exec head 300 "timeout 240 srun -N$N --job-name=hpcinit-first hostname | sort | tr '\\n' ' '" 2>&1) || true
	SRUN_T1=$(date +%s.%N)
	[ "$got" = "$want" ] && ok "slurm: srun -N$N hostname runs on every compute ($(since "$SRUN_T0") s)" ||
		notok "slurm: srun -N$N hostname runs on every compute" "got: $got" "want: $want"
	each_vm "slurm: computes: hpcinit-health.socket (enabled by the custom-data) answers 200 Healthy on 127.0.0.1:9119/health" '
		[ "$(hostname)" = head ] && exit 0
		systemctl is-enabled -q hpcinit-health.socket && systemctl is-active -q hpcinit-health.socket ||
			{ systemctl status --no-pager hpcinit-health.socket; exit 1; }
		exec 3<>/dev/tcp/127.0.0.1/9119
		printf "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" >&3
		r=$(timeout 30 cat <&3)
		echo "$r" | head -1 | grep -q " 200 " && echo "$r" | grep -q "\"ApplicationHealthState\": *\"Healthy\"" || { echo "answer: $r"; exit 1; }'
	# A check that starts failing (the memlock limits file is gone): Slurm's
	# HealthCheckProgram drains the node with hpcinit:<tag>; repaired, it resumes.
	out=$(vm_exec "$c1" 120 'mv /etc/security/limits.d/90-hpcinit.conf /root/90-hpcinit.conf.saved
		/usr/libexec/hpcinit/hpcinit-health-check > /tmp/hc.txt 2>&1; echo "exit $?"; grep -i "^slurm\|drain" /tmp/hc.txt' 2>&1) || true
	slurm_on_head "slurm: $c1: HealthCheckProgram with a failing check drains it with reason hpcinit:... ($(head -1 <<< "$out"))" \
		"for i in \$(seq 60); do s=\$(sinfo -h -n $c1 -o '%t %E'); s=\${s/\\*/}; case \$s in 'drain hpcinit:'*) echo \"\$s\"; exit 0 ;; esac; sleep 1; done; echo \"sinfo: \$s\"; exit 1"
	sed 's/^/#   /' <<< "$out"
	out=$(vm_exec "$c1" 120 'mv /root/90-hpcinit.conf.saved /etc/security/limits.d/90-hpcinit.conf
		/usr/libexec/hpcinit/hpcinit-health-check > /tmp/hc2.txt 2>&1; echo "exit $?"; grep -i "resumed" /tmp/hc2.txt' 2>&1) || true
	slurm_on_head "slurm: $c1: repaired, the next HealthCheckProgram resumes it ($(head -1 <<< "$out"))" "$(sinfo_wait "$c1" "idle none")"
	# An admin's drain is left alone.
	out=$(vm_exec head 60 "scontrol update nodename=$c1 state=drain reason='bad dimm'" 2>&1) || true
	out+=$(vm_exec "$c1" 120 '/usr/libexec/hpcinit/hpcinit-health-check 2>&1 | grep -o "left alone"' 2>&1) || true
	slurm_on_head "slurm: $c1: an admin's drain is left alone by the HealthCheckProgram ($out)" \
		"sleep 2; $(sinfo_wait "$c1" "drain bad dimm")"
	vm_exec head 60 "scontrol update nodename=$c1 state=resume" >/dev/null 2>&1 || true
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
"' 2>&1) || { notok "slurmbench: /run/hpcinit/boot.json of $n" "$ph"; return; }
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
		notok "slurmleave: $v: hpcinit leave drains it, stops hpcinit-slurmd.service, deletes it from Slurm" "$out"
	fi
}

for c in $CHECKS; do
	if [ $BOOT_OK = 0 ]; then notok "$c" "the VMs did not come up (consoles: $W/vm/*/console.log)"; continue; fi
	t_c=$(date +%s)
	if declare -f "check_$c" >/dev/null; then "check_$c"; else say "check $c: not written yet"; fi
	say "check $c: $(($(date +%s) - t_c)) s"
done

if [ "$HOLD" = 1 ]; then
	say "holding the VMs: touch $W/release to power them off"
	while [ ! -e "$W/release" ]; do sleep 2; done
fi
# The disks are throwaway overlays: without --keep the qemus are stopped on
# exit (cleanup), as a power cut; a clean poweroff under emulation took a
# minute of CI and checked nothing (check leave, by hand, checks shutdown).
if [ "$KEEP" = 1 ]; then
	say "powering off"
	for n in $(names); do vm_exec "$n" 5 'systemctl poweroff --no-block' >/dev/null 2>&1 || true; done
	end=$(($(date +%s) + 60))
	for n in $(names); do
		while kill -0 "${PID[$n]:-}" 2>/dev/null && [ "$(date +%s)" -lt "$end" ]; do sleep 0.5; done
	done
else
	say "stopping the VMs"
fi
finish
