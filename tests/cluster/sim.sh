#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A simulated cluster on this machine: N nodes, each a network namespace on
# a Linux bridge with its own address, hostname (UTS namespace) and mount
# namespace, running its own sshd with its own host key.  Used by the
# cluster tests, the benchmarks and the README demo.
#
#   sim.sh up N [--shared DIR] [--no-ssh-trust]   bring up nodes 1..N
#   sim.sh add [K]                  add K more nodes (scale-out), print their names
#   sim.sh del NAME                 stop one node and remove it (scale-in)
#   sim.sh exec NAME CMD [ARG...]   run CMD inside the node (absolute paths: cwd is /)
#   sim.sh list | addr NAME | net   node names / a node's address / the network (CIDR)
#   sim.sh down                     stop every node and remove everything up made
#
# Environment (so several users can run side by side):
#   SIM_PREFIX  node name prefix, default "hpc-" (nodes hpc-1, hpc-2, ...; at most 10 chars)
#   SIM_BRIDGE  bridge name, default "hpcbr0"
#   SIM_NET     first three octets of the /24, default 198.18.1 (must be in 198.18.0.0/15);
#               node i gets SIM_NET.(10+i)
#   SIM_STATE   state directory, default /tmp/hpcinit-sim.<prefix>
#
# What a node sees (everything else is the host's, read-write):
#   /etc, /var/lib, /home  copy-on-write overlays of the host's: what the node
#                          writes there (hpcinit's outputs, its ssh config) is its own
#   /etc/hostname, /etc/hosts (every node), /etc/ssh (own host key, own sshd_config)
#   /root                  an empty per-node home (no host shell start-up files)
#   /run                   a private tmpfs;  /sys  a fresh sysfs (the node's interfaces)
#   --shared DIR           a host directory every node sees at the same path: the
#                          simulation of the NFS share (kernel NFS is not available here)
#
# SSH between nodes: unless --no-ssh-trust, the harness (not hpcinit) gives
# root on every node a key, authorizes every node's key on every node
# (from="<network>") and writes /root/.ssh/known_hosts from the nodes' host
# keys, with StrictHostKeyChecking yes.  mpirun and clush use it.  The ssh
# module of hpcinit does this job for real clusters; its tests run with
# --no-ssh-trust to prove it.
#
# Every process this script starts runs inside a node's namespaces; "down"
# ends sshd by its PID file and then the processes left in the node's own
# network namespace (ip netns pids), which only this script's nodes hold.
set -Eeuo pipefail

SIM_PREFIX=${SIM_PREFIX:-hpc-}
SIM_BRIDGE=${SIM_BRIDGE:-hpcbr0}
SIM_NET=${SIM_NET:-198.18.1}
SIM_STATE=${SIM_STATE:-/tmp/hpcinit-sim.${SIM_PREFIX%-}}
SELF=$(readlink -f "$0")

die() { echo "sim: $*" >&2; exit 1; }

check_env() {
	[[ $SIM_PREFIX =~ ^[a-z][a-z0-9-]{0,9}$ ]] || die "SIM_PREFIX must be [a-z][a-z0-9-]{0,9}"
	[[ $SIM_BRIDGE =~ ^[A-Za-z0-9_-]{1,15}$ ]] || die "SIM_BRIDGE is not an interface name"
	[[ $SIM_NET =~ ^198\.(18|19)\.([0-9]{1,3})$ ]] && [ "${BASH_REMATCH[2]}" -le 255 ] ||
		die "SIM_NET must be 198.18.X or 198.19.X (the benchmarking range 198.18.0.0/15)"
	[ "$(id -u)" = 0 ] || die "must run as root (network and mount namespaces)"
	for t in ip nsenter unshare ssh-keygen /usr/sbin/sshd; do
		command -v "$t" >/dev/null || die "$t not found"
	done
}

node_name() { echo "${SIM_PREFIX}$1"; }
node_addr() { echo "$SIM_NET.$((10 + $1))"; }
node_dir() { echo "$SIM_STATE/nodes/$1"; }
# index of a node from its name
node_index() {
	local n=${1#"$SIM_PREFIX"}
	[[ $n =~ ^[0-9]+$ ]] && [ -d "$(node_dir "$1")" ] || die "no such node: $1"
	echo "$n"
}
nodes() { [ -f "$SIM_STATE/nodes.list" ] && cat "$SIM_STATE/nodes.list" || true; }
conf() { [ -f "$SIM_STATE/$1" ] && cat "$SIM_STATE/$1" || true; }

in_node() {
	local name=$1
	shift
	nsenter --net="/run/netns/$name" --uts="$SIM_STATE/ns/$name.uts" \
		--mount="$SIM_STATE/ns/$name.mnt" -- "$@"
}

# Everything below /etc/hosts and the harness's ssh trust is rewritten for
# all nodes whenever the membership changes.
write_hosts() {
	local f=$SIM_STATE/hosts.new n
	{
		printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n'
		for n in $(nodes); do
			printf '%s\t%s\n' "$(node_addr "$(node_index "$n")")" "$n"
		done
	} > "$f"
	mv "$f" "$SIM_STATE/hosts"
	for n in $(nodes); do
		in_node "$n" cp "$SIM_STATE/hosts" /etc/hosts
	done
}

write_trust() {
	[ "$(conf ssh-trust)" = yes ] || return 0
	local n ak=$SIM_STATE/authorized_keys kh=$SIM_STATE/known_hosts
	: > "$ak.new"
	: > "$kh.new"
	for n in $(nodes); do
		local d i
		d=$(node_dir "$n")
		i=$(node_index "$n")
		printf 'from="%s.0/24" %s\n' "$SIM_NET" "$(cat "$d/root-key.pub")" >> "$ak.new"
		printf '%s,%s %s\n' "$n" "$(node_addr "$i")" "$(cut -d' ' -f1,2 "$d/ssh_host_ed25519_key.pub")" >> "$kh.new"
	done
	mv "$ak.new" "$ak"
	mv "$kh.new" "$kh"
	for n in $(nodes); do
		in_node "$n" install -m 0600 "$ak" /root/.ssh/authorized_keys
		in_node "$n" install -m 0644 "$kh" /root/.ssh/known_hosts
	done
}

sshd_config() {
	local addr=$1 d=$2
	cat <<-EOF
	# sshd of a simulated node (tests/cluster/sim.sh)
	ListenAddress $addr
	HostKey /etc/ssh/ssh_host_ed25519_key
	PidFile $d/sshd.pid
	PermitRootLogin prohibit-password
	PubkeyAuthentication yes
	PasswordAuthentication no
	KbdInteractiveAuthentication no
	UsePAM yes
	StrictModes yes
	UseDNS no
	PrintMotd no
	MaxStartups 256:30:512
	MaxSessions 64
	AcceptEnv LANG LC_*
	Subsystem sftp internal-sftp
	EOF
}

# Runs inside the new node's namespaces (sim.sh _inside NAME INDEX): mounts and sshd.
inside() {
	local name=$1 i=$2 d
	d=$(node_dir "$name")
	hostname "$name"
	for p in etc var/lib home; do
		mkdir -p "$d/ovl/$p/upper" "$d/ovl/$p/work"
		mount -t overlay "sim-$name" -o "lowerdir=/$p,upperdir=$d/ovl/$p/upper,workdir=$d/ovl/$p/work" "/$p"
		# never touch the host's files: stop unless the overlay is really there
		[ "$(stat -f -c %T "/$p")" = overlayfs ] || die "/$p is not an overlay in $name"
	done
	mount --bind "$d/root" /root
	mount -t tmpfs -o mode=0755 "sim-run-$name" /run
	mount -t sysfs "sim-sys-$name" /sys
	mkdir -p /run/sshd /run/hpcinit
	echo "$name" > /etc/hostname
	cp "$SIM_STATE/hosts" /etc/hosts
	# the node's own ssh identity; the host's keys are not visible in it
	rm -f /etc/ssh/ssh_host_*
	install -m 0600 "$d/ssh_host_ed25519_key" /etc/ssh/ssh_host_ed25519_key
	install -m 0644 "$d/ssh_host_ed25519_key.pub" /etc/ssh/ssh_host_ed25519_key.pub
	sshd_config "$(node_addr "$i")" "$d" > /etc/ssh/sshd_config
	rm -f /etc/ssh/sshd_config.d/*.conf
	mkdir -p -m 0700 /root/.ssh
	if [ "$(conf ssh-trust)" = yes ]; then
		install -m 0600 "$d/root-key" /root/.ssh/id_ed25519
		install -m 0644 "$d/root-key.pub" /root/.ssh/id_ed25519.pub
		printf 'Host *\n\tStrictHostKeyChecking yes\n\tBatchMode yes\n\tConnectTimeout 10\n' > /root/.ssh/config
		chmod 0600 /root/.ssh/config
	fi
	/usr/sbin/sshd -f /etc/ssh/sshd_config -E "$d/sshd.log"
}

add_node() {
	local i=$1 name addr d veth
	name=$(node_name "$i")
	addr=$(node_addr "$i")
	d=$(node_dir "$name")
	veth=${SIM_PREFIX}v$i
	[ ! -e "/run/netns/$name" ] || die "network namespace $name exists already (another run? sim.sh down)"
	mkdir -p "$d/root"
	chmod 0700 "$d/root"
	echo "$name" >> "$SIM_STATE/nodes.list"
	ssh-keygen -q -t ed25519 -N '' -C "root@$name" -f "$d/ssh_host_ed25519_key"
	if [ "$(conf ssh-trust)" = yes ]; then
		ssh-keygen -q -t ed25519 -N '' -C "root@$name (sim harness)" -f "$d/root-key"
	fi
	ip netns add "$name"
	ip link add "$veth" type veth peer name eth0 netns "$name"
	ip link set "$veth" master "$SIM_BRIDGE" up
	ip -n "$name" addr add "$addr/24" dev eth0
	ip -n "$name" link set lo up
	ip -n "$name" link set eth0 up
	: > "$SIM_STATE/ns/$name.uts"
	: > "$SIM_STATE/ns/$name.mnt"
	nsenter --net="/run/netns/$name" unshare --uts="$SIM_STATE/ns/$name.uts" \
		--mount="$SIM_STATE/ns/$name.mnt" --propagation private true
	in_node "$name" "$SELF" _inside "$name" "$i"
}

wait_sshd() {
	local n i addr t
	for n in "$@"; do
		i=$(node_index "$n")
		addr=$(node_addr "$i")
		for t in $(seq 1 100); do
			in_node "$n" bash -c "exec 3<>/dev/tcp/$addr/22" 2>/dev/null && break
			[ "$t" -lt 100 ] || die "sshd on $n ($addr) did not come up; see $(node_dir "$n")/sshd.log"
			sleep 0.05
		done
	done
}

cmd_up() {
	local n=$1 shared="" trust=yes i
	shift
	[[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 200 ] || die "up N: N from 1 to 200"
	while [ $# -gt 0 ]; do
		case $1 in
		--shared) shared=$(readlink -f "$2"); shift 2 ;;
		--no-ssh-trust) trust=no; shift ;;
		*) die "up: unknown option $1" ;;
		esac
	done
	[ ! -e "$SIM_STATE/nodes.list" ] || die "already up ($SIM_STATE); run sim.sh down first"
	if [ -n "$shared" ]; then
		[ -d "$shared" ] || die "--shared $shared: not a directory"
		case $shared/ in
		/etc/* | /var/lib/* | /home/* | /root/* | /run/* | /sys/* | /proc/*)
			die "--shared $shared: under a per-node directory; use e.g. /tmp or /srv" ;;
		esac
	fi
	mkdir -p "$SIM_STATE/nodes" "$SIM_STATE/ns"
	trap 'echo "sim: up failed; tearing down" >&2; cmd_down; exit 1' ERR
	# namespace files must live on a private mount (unshare bind-mounts them)
	mount --bind "$SIM_STATE/ns" "$SIM_STATE/ns"
	mount --make-private "$SIM_STATE/ns"
	echo "$trust" > "$SIM_STATE/ssh-trust"
	echo "$shared" > "$SIM_STATE/shared"
	if ! ip link show "$SIM_BRIDGE" >/dev/null 2>&1; then
		ip link add "$SIM_BRIDGE" type bridge
		echo yes > "$SIM_STATE/bridge-ours"
	fi
	ip link set "$SIM_BRIDGE" up
	: > "$SIM_STATE/nodes.list"
	: > "$SIM_STATE/hosts"
	for i in $(seq 1 "$n"); do
		echo "$SIM_NET.$((10 + i))	$(node_name "$i")" >> "$SIM_STATE/hosts"
	done
	for i in $(seq 1 "$n"); do
		add_node "$i"
	done
	write_hosts
	write_trust
	# shellcheck disable=SC2046
	wait_sshd $(nodes)
	trap - ERR
	nodes
}

cmd_add() {
	local k=${1:-1} last i new=()
	[ -s "$SIM_STATE/nodes.list" ] || die "not up"
	last=$(nodes | sed "s/^$SIM_PREFIX//" | sort -n | tail -1)
	for i in $(seq $((last + 1)) $((last + k))); do
		add_node "$i"
		new+=("$(node_name "$i")")
	done
	write_hosts
	write_trust
	wait_sshd "${new[@]}"
	printf '%s\n' "${new[@]}"
}

stop_node() {
	local name=$1 d pid pids
	d=$(node_dir "$name")
	if [ -f "$d/sshd.pid" ]; then
		pid=$(cat "$d/sshd.pid")
		# only if it still is a process in this node's network namespace
		if [ -e "/run/netns/$name" ] && ip netns pids "$name" 2>/dev/null | grep -qx "$pid"; then
			kill "$pid" 2>/dev/null || true
		fi
	fi
	if [ -e "/run/netns/$name" ]; then
		for sig in TERM KILL; do
			pids=$(ip netns pids "$name" 2>/dev/null || true)
			[ -n "$pids" ] || break
			# shellcheck disable=SC2086
			kill -s "$sig" $pids 2>/dev/null || true
			for _ in $(seq 1 20); do
				[ -z "$(ip netns pids "$name" 2>/dev/null || true)" ] && break
				sleep 0.05
			done
		done
	fi
	umount "$SIM_STATE/ns/$name.mnt" 2>/dev/null || true
	umount "$SIM_STATE/ns/$name.uts" 2>/dev/null || true
	[ ! -e "/run/netns/$name" ] || ip netns del "$name" 2>/dev/null || true
	ip link del "${SIM_PREFIX}v$(node_index "$name")" 2>/dev/null || true
}

cmd_del() {
	local name=$1
	node_index "$name" >/dev/null
	stop_node "$name"
	grep -vx "$name" "$SIM_STATE/nodes.list" > "$SIM_STATE/nodes.list.new" || true
	mv "$SIM_STATE/nodes.list.new" "$SIM_STATE/nodes.list"
	rm -rf "$(node_dir "$name")"
	[ ! -s "$SIM_STATE/nodes.list" ] || { write_hosts; write_trust; }
}

cmd_down() {
	local n
	trap - ERR
	[ -d "$SIM_STATE" ] || return 0
	for n in $(nodes); do
		stop_node "$n"
	done
	# nodes whose setup failed before they were listed
	for f in "$SIM_STATE"/ns/*.mnt; do
		[ -e "$f" ] || continue
		n=$(basename "$f" .mnt)
		umount "$f" 2>/dev/null || true
		umount "$SIM_STATE/ns/$n.uts" 2>/dev/null || true
		[ ! -e "/run/netns/$n" ] || ip netns del "$n" 2>/dev/null || true
	done
	if [ "$(conf bridge-ours)" = yes ]; then
		ip link del "$SIM_BRIDGE" 2>/dev/null || true
	fi
	umount "$SIM_STATE/ns" 2>/dev/null || true
	rm -rf "$SIM_STATE"
}

check_env
cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
up) [ $# -ge 1 ] || die "usage: sim.sh up N [--shared DIR] [--no-ssh-trust]"; cmd_up "$@" ;;
add) cmd_add "$@" ;;
del) [ $# -eq 1 ] || die "usage: sim.sh del NAME"; cmd_del "$1" ;;
exec)
	[ $# -ge 2 ] || die "usage: sim.sh exec NAME CMD [ARG...]"
	node_index "$1" >/dev/null
	name=$1
	shift
	in_node "$name" "$@"
	;;
list) nodes ;;
addr) node_addr "$(node_index "$1")" ;;
net) echo "$SIM_NET.0/24" ;;
down) cmd_down ;;
_inside) inside "$@" ;;
*) die "usage: sim.sh up N [--shared DIR] [--no-ssh-trust] | add [K] | del NAME | exec NAME CMD... | list | addr NAME | net | down" ;;
esac
