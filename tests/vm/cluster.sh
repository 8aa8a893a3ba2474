#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A real cluster of virtual machines: a head VM and N compute VMs booted
# under qemu (software emulation, no KVM) from the image tests/vm/image.sh
# builds (Debian 12, or 13 for the computes --release names; real kernel, systemd, cloud-init, kernel NFS,
# Soft-RoCE, and the .deb of this tree installed with apt).  Each VM boots
# with a NoCloud seed whose user-data is the product's custom-data,
# conf/cloud-init/vmss-head.yaml or vmss-compute.yaml, with the test
# network's addresses filled in; cloud-init writes the spec and runs
# hpcinit exactly as on Azure.  Then named checks run; each prints
# "ok - NAME" or "not ok - NAME" (TAP, tests/lib/tap.sh, like the rest of the
# suite), and the run ends with "# N passed, N failed".
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
#               repository); default checks "slurm slurmbench slurmgpu
#               slurmleave" (slurmgpu: stand-in GPUs as GRES, issue 34)
#   --directory the cluster's users come from a directory (issue 35): the
#               head also gets conf/cloud-init/parts/directory-server.yaml (slapd,
#               users alice and bob with homes on /shared) and every node
#               directory-client.yaml (sssd-ldap), as more parts of the
#               custom-data; the spec lists alice in ssh.users and turns
#               ssh.hostbased on.  The test bed makes the directory slow:
#               the head loads its users 40 s after its runcmd began, while
#               hpcinit waits for them.  Default checks "boot directory"
#               (tests/vm/checks-directory.sh)
#   --release NAME=SUITE  boot the VM NAME (a compute: c1, c2 ...) from the
#               image of another Debian release (tests/vm/image.sh --suite
#               SUITE; trixie, Debian 13) beside the others' Debian 12: two
#               releases in one cluster, as during a rolling upgrade.  With
#               --slurm too, that compute's slurmd is newer than the head's
#               slurmctld.  Repeat for more VMs.
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
CHECKS_ALL="boot nfs hosts ssh mpi verify quietwait rdma rdmacm fabric memlock kernel gating vmcheck"
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
DIRECTORY=0
CHECKS_SET=0
declare -A SUITE_OF=()     # --release: VM name -> Debian suite (default bookworm)
while [ $# -gt 0 ]; do
	case $1 in
	-n) N=$2; shift 2 ;;
	--checks) CHECKS=$2; CHECKS_SET=1; shift 2 ;;
	--slurm) SLURM=1; shift ;;
	--directory) DIRECTORY=1; shift ;;
	--keep) KEEP=1; shift ;;
	--hold) HOLD=1; KEEP=1; shift ;;
	--squash) SQUASH=1; shift ;;
	--no-squash) SQUASH=0; shift ;;
	--watch) WATCH=1; shift ;;
	--nfs41) NFS41=1; shift ;;
	--lease) LEASE=$2; shift 2 ;;
	--late-head) LATE_HEAD=$2; shift 2 ;;
	--vmcheck) VMCHECK=$2; shift 2 ;;
	--release) SUITE_OF[${2%%=*}]=${2#*=}; shift 2 ;;
	*) echo "usage: $0 [-n N] [--checks LIST] [--keep] [--hold] [--squash|--no-squash] [--nfs41] [--slurm] [--directory] [--release NAME=SUITE] [--lease DUR] [--late-head SECONDS] [--vmcheck \"FILE.sh ...\"]" >&2; exit 2 ;;
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
[ "$SLURM" = 0 ] || [ "$CHECKS_SET" = 1 ] || CHECKS="slurm slurmbench slurmgpu slurmleave"
[ "$DIRECTORY" = 0 ] || [ "$CHECKS_SET" = 1 ] || CHECKS="boot directory"
# --release: a compute of this run, a release image.sh builds (checked before any boot).
for n in "${!SUITE_OF[@]}"; do
	[[ $n =~ ^c[1-9][0-9]*$ ]] && [ "${n#c}" -le "$N" ] ||
		{ echo "$0: --release $n=${SUITE_OF[$n]}: $n is not a compute of this run (c1..c$N)" >&2; exit 2; }
	case ${SUITE_OF[$n]} in
	trixie) ;;
	*) echo "$0: --release $n=${SUITE_OF[$n]}: the suites are bookworm (default) and trixie" >&2; exit 2 ;;
	esac
done
# Every check named is one the checks files define (a typo fails here, before any boot).
for c in $CHECKS; do
	grep -q "^check_$c()" "$SRC"/tests/vm/checks-*.sh && continue
	echo "$0: --checks: no check '$c'; they are: $(sed -n 's/^check_\([a-z0-9]*\)().*/\1/p' "$SRC"/tests/vm/checks-*.sh | tr '\n' ' ')" >&2
	exit 2
done
MEM=${HPCINIT_VM_MEM:-1024}
BOOT_TIMEOUT=${HPCINIT_VM_BOOT_TIMEOUT:-900}
NET=198.18.50
NS=hpcvm$$
# An MPI hello built on this (Debian 12) host against the same Open MPI as the image's.
MPI_HELLO=${HPCINIT_VM_MPI_HELLO:-$SRC/build/tests/cluster/mpi-hello}
T_START=$(date +%s)

say() { echo "# $(date +%T) $*"; }
# ok, not_ok NAME [LINE...], done_testing: the suite's one TAP library
. "$SRC/tests/lib/tap.sh"
finish() {
	say "$(($(date +%s) - T_START)) s in all"
	done_testing
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
		not_ok "host can run qemu VMs" "$why"
		finish
		exit 1
	fi
}
preflight

names() { echo head; for i in $(seq 1 "$N"); do echo "c$i"; done; }
suite_of() { echo "${SUITE_OF[$1]:-bookworm}"; }
# --release: the VMs of the head's release, and the others (checks-*.sh).
same_release() { local n; for n in $(names); do [ "$(suite_of "$n")" != bookworm ] || echo "$n"; done; }
other_release() { local n; for n in $(names); do [ "$(suite_of "$n")" = bookworm ] || echo "$n"; done; }
addr_of() { [ "$1" = head ] && echo "$NET.10" || echo "$NET.$((10 + ${1#c}))"; }
# The two VMs of check fabric's MPI job over rxe0, the launching one first:
# c1 and c2; with --release where they differ (no MPI job spans two Open
# MPI releases: check mpi), the one of the head's release and the head,
# which then gets the computes' fabric sections too (subst).
fabric_pair() {
	if [ "$(suite_of c1)" = "$(suite_of c2)" ]; then echo "c1 c2"
	elif [ "$(suite_of c1)" = bookworm ]; then echo "c1 head"
	else echo "c2 head"; fi
}

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
IMG=$(bash "$SRC/tests/vm/image.sh" ${HPCINIT_VM_DEBS:+--debs "$HPCINIT_VM_DEBS"} 2> "$W/image.log" | tail -1) || { tail -40 "$W/image.log"; not_ok "image" "tests/vm/image.sh failed"; finish; exit 1; }
sed 's/^/#   /' "$W/image.log" | grep "#   image:" || true
say "image ready in $(($(date +%s) - t0)) s: $IMG"
# image.sh prunes old images, never one held like this (the qemus inherit the lock)
exec 7< "$IMG/done"
flock -s 7
# --release: each other suite's image (its own .debs, built inside it), held the same way.
declare -A IMG_SUITE=([bookworm]=$IMG)
for s in $(printf '%s\n' "${SUITE_OF[@]}" | sort -u); do
	t0=$(date +%s)
	IMG_SUITE[$s]=$(bash "$SRC/tests/vm/image.sh" --suite "$s" 2> "$W/image-$s.log" | tail -1) ||
		{ tail -40 "$W/image-$s.log"; not_ok "image $s" "tests/vm/image.sh --suite $s failed"; finish; exit 1; }
	sed 's/^/#   /' "$W/image-$s.log" | grep "#   image:" || true
	say "image $s ready in $(($(date +%s) - t0)) s: ${IMG_SUITE[$s]}"
	exec {fd}< "${IMG_SUITE[$s]}/done"
	flock -s "$fd"
done
img_of() { echo "${IMG_SUITE[$(suite_of "$1")]}"; }

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
	# --directory: a directory user must resolve before a node is ready; every user logs in host-based
	if [ "$DIRECTORY" = 1 ]; then
		grep -qE '^ *users: \[azureuser\]$' <<< "$s" || { echo "seed: 'users: [azureuser]' not found in $f" >&2; return 1; }
		s=$(sed -E 's/^( *)users: \[azureuser\]$/\1users: [azureuser, alice]\n\1hostbased: true/' <<< "$s")
	fi
	# The head in check fabric's MPI pair (--release): the computes' kernel
	# modules, rdma and mpi.software_fabric, so hpcinit makes rxe0 its fabric too.
	if [ "$f" != "${f%head.yaml}" ] && [[ " $(fabric_pair) " == *" head "* ]]; then
		grep -qxF '      hostfile: {}' <<< "$s" || { echo "seed: 'hostfile: {}' not found in $f" >&2; return 1; }
		s=$(sed -E 's/^( *)hostfile: \{\}$/&\n\1kernel:\n\1  modules: [rdma_rxe, ib_uverbs, rdma_ucm]\n\1rdma:\n\1  devices: "rxe*"\n\1  link_layer: ethernet\n\1mpi:\n\1  software_fabric: true/' <<< "$s")
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
# --directory: conf/cloud-init/parts/directory-*.yaml for this network, a password
# for the placeholder, and the test bed's slow directory: the head loads its
# users 40 s after its runcmd began (hpcinit apply, right after, waits).
directory_subst() {
	local f=$1 s
	s=$(cat "$f")
	if [ "$f" != "${f%server.yaml}" ]; then
		for pat in 'CHANGE-ME-LDAP' '  - [sh, -c, "ldapadd '; do
			grep -qF -- "$pat" <<< "$s" || { echo "seed: '$pat' not found in $f" >&2; return 1; }
		done
		s=${s//CHANGE-ME-LDAP/$LDAP_PW}
		s=${s//  - \[sh, -c, \"ldapadd /  - [systemd-run, --on-active=40, --unit=hpcvm-late-directory, sh, -c, \"ldapadd }
	else
		grep -qF 'ldap://10.0.0.4' <<< "$s" || { echo "seed: 'ldap://10.0.0.4' not found in $f" >&2; return 1; }
		s=${s//10.0.0.4/$NET.10}
	fi
	printf '%s\n' "$s"
}
LDAP_PW=$(openssl rand -hex 12)
SLURM_KEY_PLACEHOLDER=Q0hBTkdFLU1FCg==
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
	local parts=(-a "$d/custom-data.yaml:cloud-config" -a "$d/platform.yaml:cloud-config")
	if [ "$DIRECTORY" = 1 ]; then
		[ "$role" = compute ] || { directory_subst "$SRC/conf/cloud-init/parts/directory-server.yaml" > "$d/directory-server.yaml" &&
			parts+=(-a "$d/directory-server.yaml:cloud-config"); }
		directory_subst "$SRC/conf/cloud-init/parts/directory-client.yaml" > "$d/directory-client.yaml"
		parts+=(-a "$d/directory-client.yaml:cloud-config")
	fi
	cloud-init devel make-mime "${parts[@]}" > "$d/seed/user-data"
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
	local n=$1 i=$2 d=$W/vm/$1 img
	img=$(img_of "$n")
	qemu-img create -q -f qcow2 -b "$img/disk.img" -F raw "$d/disk.qcow2"
	ip -n "$NS" tuntap add "tap$i" mode tap
	ip -n "$NS" link set "tap$i" master br0 up
	T_LAUNCH[$n]=$(date +%s.%N)
	ip netns exec "$NS" qemu-system-x86_64 -name "hpcvm-$n" -accel tcg,thread=multi \
		-m "$MEM" -smp 1 -nodefaults -display none -monitor none \
		-serial "file:$d/console.log" \
		-kernel "$img/vmlinuz" -initrd "$img/initrd.img" \
		-append "root=/dev/vda rw console=ttyS0 net.ifnames=0 ds=nocloud;s=file:///hpcvm/seed/ hpcvm.name=$n" \
		-drive "file=$d/disk.qcow2,format=qcow2,if=virtio" \
		-netdev "tap,id=n0,ifname=tap$i,script=no,downscript=no" \
		-device "virtio-net-pci,netdev=n0,mac=52:54:00:12:50:$(printf %02x "$i")" \
		-virtfs "local,path=$d,mount_tag=hpcvm,security_model=none" \
		-device virtio-rng-pci \
		> "$d/qemu.log" 2>&1 &
	PID[$n]=$!
	say "booted $n ($(addr_of "$n"), $(suite_of "$n")) pid ${PID[$n]}"
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
# One file a part of the product (tests/vm/checks-*.sh), functions only:
# sourced here, in this order, before any runs.
for part in cluster fabric node membership vmcheck slurm directory; do
	. "$SRC/tests/vm/checks-$part.sh"
done
for c in $CHECKS; do
	if [ $BOOT_OK = 0 ]; then not_ok "$c" "the VMs did not come up (consoles: $W/vm/*/console.log)"; continue; fi
	t_c=$(date +%s)
	if declare -f "check_$c" >/dev/null; then "check_$c"; else not_ok "$c" "no such check (tests/vm/checks-*.sh define check_NAME)"; fi
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
