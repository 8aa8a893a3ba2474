#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A simulated cluster on this machine: N nodes, each a network namespace on
# a Linux bridge with its own address, hostname (UTS namespace) and mount
# namespace, running its own sshd with its own host key.  Used by the
# cluster tests, the benchmarks and the README demo.
#
#   sim.sh up N [--shared DIR] [--no-ssh-trust] [--dns]   bring up nodes 1..N
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
#   /etc/hostname, /etc/ssh (own host key, own sshd_config)
#   /etc/hosts             localhost and the node's own name only: the names
#                          of the other nodes resolve only when hpcinit (the
#                          hostfile module's managed block) makes them resolve,
#                          as on a VNet whose DNS does not know them
#   --dns                  instead, every node's name in every /etc/hosts,
#                          rewritten on each membership change: the simulation
#                          of a resolver that knows the nodes (static and scan
#                          discovery need names before hpcinit runs)
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
# and "del" end the processes in the node's own network namespace (ip netns
# pids: its sshd, sessions, whatever ran there), which only this script's
# nodes hold -- TERM, a second of grace, then KILL.
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

# The harness's ssh trust is rewritten for all nodes whenever the membership
# changes; it lives in host paths the nodes see by bind mount (<node>/root
# on /root), so it is written from here.  Each node's /etc/hosts is a file
# of its own /etc overlay (a real file, which hpcinit replaces atomically),
# written when the node starts and, with --dns, on every membership change.
hosts_for() {
	local n=$1 m
	printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n'
	if [ "$(conf dns)" = yes ]; then
		for m in $(nodes); do
			printf '%s\t%s\n' "$(node_addr "${m#"$SIM_PREFIX"}")" "$m"
		done
	else
		printf '%s\t%s\n' "$(node_addr "${n#"$SIM_PREFIX"}")" "$n"
	fi
}
write_hosts() {
	local n d
	[ "$(conf dns)" = yes ] || return 0
	for n in $(nodes); do
		d=$(node_dir "$n")
		[ -e "$d/up" ] || continue
		hosts_for "$n" > "$d/hosts"
		in_node "$n" sh -c 'cat > /etc/hosts' < "$d/hosts"
	done
}

write_trust() {
	[ "$(conf ssh-trust)" = yes ] || return 0
	local n ak=$SIM_STATE/authorized_keys kh=$SIM_STATE/known_hosts
	: > "$ak.new"
	: > "$kh.new"
	for n in $(nodes); do
		local d
		d=$(node_dir "$n")
		printf 'from="%s.0/24" %s\n' "$SIM_NET" "$(cat "$d/root-key.pub")" >> "$ak.new"
		printf '%s,%s %s\n' "$n" "$(node_addr "${n#"$SIM_PREFIX"}")" \
			"$(cut -d' ' -f1,2 "$d/ssh_host_ed25519_key.pub")" >> "$kh.new"
	done
	mv "$ak.new" "$ak"
	mv "$kh.new" "$kh"
	for n in $(nodes); do
		install -m 0600 "$ak" "$(node_dir "$n")/root/.ssh/authorized_keys"
		install -m 0644 "$kh" "$(node_dir "$n")/root/.ssh/known_hosts"
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
	cat "$d/hosts" > /etc/hosts
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
	touch "$d/up"
}

add_node() {
	local i=$1 name addr d veth
	name=$(node_name "$i")
	addr=$(node_addr "$i")
	d=$(node_dir "$name")
	veth=${SIM_PREFIX}v$i
	[ ! -e "/run/netns/$name" ] || die "network namespace $name exists already (another run? sim.sh down)"
	mkdir -p -m 0700 "$d/root" "$d/root/.ssh"
	hosts_for "$name" > "$d/hosts"
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
	# Keeping the mount namespace binds its nsfs file, which the kernel refuses (EINVAL,
	# "mount namespace loop") unless it is newer than the caller's by id; ids come from
	# per-CPU batches, so inside a private namespace (tests/fresh-demo.sh, README's check) a
	# node made on another CPU can get an older one.  Then make it on each CPU in turn: the
	# caller's own CPU hands out newer ones.
	local cpu made=0 pin
	for cpu in any $(seq 0 $(($(getconf _NPROCESSORS_ONLN) - 1))); do
		umount "$SIM_STATE/ns/$name.uts" 2>/dev/null || true
		pin=()
		[ "$cpu" = any ] || pin=(taskset -c "$cpu")
		if nsenter --net="/run/netns/$name" "${pin[@]}" \
			unshare --uts="$SIM_STATE/ns/$name.uts" --mount="$SIM_STATE/ns/$name.mnt" \
			--propagation private true 2>"$SIM_STATE/ns/$name.err"; then
			made=1
			break
		fi
	done
	[ "$made" = 1 ] || { cat "$SIM_STATE/ns/$name.err" >&2; return 1; }
	in_node "$name" "$SELF" _inside "$name" "$i"
}

# add_nodes INDEX...: bring nodes up, up to 8 at a time
add_nodes() {
	local i pids=() bad=0 p
	for i in "$@"; do
		# the up's ERR trap tears down: only the parent may do that
		(trap - ERR; add_node "$i") &
		pids+=($!)
		if [ ${#pids[@]} -ge 8 ]; then
			wait "${pids[0]}" || bad=1
			pids=("${pids[@]:1}")
		fi
	done
	for p in "${pids[@]}"; do
		wait "$p" || bad=1
	done
	[ "$bad" = 0 ] || die "a node did not come up"
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
	local n=$1 shared="" trust=yes dns=no i
	shift
	[[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 200 ] || die "up N: N from 1 to 200"
	while [ $# -gt 0 ]; do
		case $1 in
		--shared) shared=$(readlink -f "$2"); shift 2 ;;
		--no-ssh-trust) trust=no; shift ;;
		--dns) dns=yes; shift ;;
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
	echo "$dns" > "$SIM_STATE/dns"
	echo "$shared" > "$SIM_STATE/shared"
	if ! ip link show "$SIM_BRIDGE" >/dev/null 2>&1; then
		ip link add "$SIM_BRIDGE" type bridge
		echo yes > "$SIM_STATE/bridge-ours"
	fi
	ip link set "$SIM_BRIDGE" up
	for i in $(seq 1 "$n"); do
		node_name "$i"
	done > "$SIM_STATE/nodes.list"
	write_hosts
	add_nodes $(seq 1 "$n")
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
	[[ $k =~ ^[0-9]+$ ]] && [ "$k" -ge 1 ] || die "add K: K >= 1"
	last=$(nodes | sed "s/^$SIM_PREFIX//" | sort -n | tail -1)
	for i in $(seq $((last + 1)) $((last + k))); do
		new+=("$(node_name "$i")")
		node_name "$i" >> "$SIM_STATE/nodes.list"
	done
	write_hosts
	add_nodes $(seq $((last + 1)) $((last + k)))
	write_hosts
	write_trust
	wait_sshd "${new[@]}"
	printf '%s\n' "${new[@]}"
}

# nodes_pids NAME...: the processes of these nodes -- everything that runs in
# a node's own network namespace (its sshd, sessions, orted, the commands run
# there), all started by this script.  One look at /proc for all nodes.
nodes_pids() {
	local n ino inos=""
	for n in "$@"; do
		ino=$(stat -L -c %i "/run/netns/$n" 2>/dev/null) && inos+=" $ino"
	done
	[ -n "$inos" ] || return 0
	# "/proc/PID/ns/net -> net:[INODE]"
	# shellcheck disable=SC2012
	# (processes come and go while ls runs: its complaints are expected)
	{ ls -l /proc/[0-9]*/ns/net 2>/dev/null || true; } | awk -v inos="$inos" '
		BEGIN { split(inos, a, " "); for (i in a) want["net:[" a[i] "]"] = 1 }
		($NF in want) { split($(NF - 2), p, "/"); print p[3] }'
}

# stop_nodes NAME...: TERM, up to 1 s grace, KILL, then remove the namespaces
stop_nodes() {
	local pids
	pids=$(nodes_pids "$@")
	# shellcheck disable=SC2086
	[ -z "$pids" ] || kill -s TERM $pids 2>/dev/null || true
	for _ in $(seq 1 20); do
		pids=$(nodes_pids "$@")
		[ -z "$pids" ] && break
		sleep 0.05
	done
	# shellcheck disable=SC2086
	[ -z "$pids" ] || kill -s KILL $pids 2>/dev/null || true
	for n in "$@"; do
		remove_node_ns "$n"
	done
}

remove_node_ns() {
	local name=$1
	umount "$SIM_STATE/ns/$name.mnt" 2>/dev/null || true
	umount "$SIM_STATE/ns/$name.uts" 2>/dev/null || true
	[ ! -e "/run/netns/$name" ] || ip netns del "$name" 2>/dev/null || true
	ip link del "${SIM_PREFIX}v${name#"$SIM_PREFIX"}" 2>/dev/null || true
}

cmd_del() {
	local name=$1
	node_index "$name" >/dev/null
	stop_nodes "$name"
	grep -vx "$name" "$SIM_STATE/nodes.list" > "$SIM_STATE/nodes.list.new" || true
	mv "$SIM_STATE/nodes.list.new" "$SIM_STATE/nodes.list"
	rm -rf "$(node_dir "$name")"
	[ ! -s "$SIM_STATE/nodes.list" ] || { write_hosts; write_trust; }
}

cmd_down() {
	local n
	trap - ERR
	[ -d "$SIM_STATE" ] || return 0
	# shellcheck disable=SC2046
	stop_nodes $(nodes)
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
up) [ $# -ge 1 ] || die "usage: sim.sh up N [--shared DIR] [--no-ssh-trust] [--dns]"; cmd_up "$@" ;;
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
*) die "usage: sim.sh up N [--shared DIR] [--no-ssh-trust] [--dns] | add [K] | del NAME | exec NAME CMD... | list | addr NAME | net | down" ;;
esac
