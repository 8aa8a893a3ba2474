#!/bin/bash
# SPDX-License-Identifier: MIT
# Isolated steps that share the child the discovery step leaves waiting
# (agent/core/iso.c, module .shares_child; issue 37): in a node's first apply,
# a converged apply, a check and a refresh, hostfile runs in discovery's child,
# not in a child of its own: the run forks one child, and that child both reads
# the rendezvous and writes (or reads) the hostfiles.  (The binary before printed
# "not ok" for each: two children, hostfile's its own.)
# Real binary on a fake root; strace -f shows which process touched what.
. "$(dirname "$0")/lib.sh"
command -v strace >/dev/null || { echo "SKIP: needs strace"; exit 77; }

R=$T/root
mkroot "$R"
mkdir -p "$R/etc/hpcinit" "$R/shared"
openssl rand -hex 32 > "$R/etc/hpcinit/cluster.key"
chmod 0600 "$R/etc/hpcinit/cluster.key"
cat > "$T/node.yaml" <<-EOF
version: 1
cluster: {name: sharec, network: 10.0.0.0/24, secret_file: /etc/hpcinit/cluster.key}
discovery: {method: shared, dir: /shared/.hpcinit, expect: 1}
hostfile: {etc_hosts: always}
EOF
# traced NAME ARGS...: one run under strace (its exit code in $rc); a line "pid syscall(...)" each
traced() {
	local name=$1
	shift
	rc=0
	# (LeakSanitizer cannot run under ptrace: an ASan build's leak check is off for these runs)
	HPCINIT_ADDRESS=10.0.0.1 ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		strace -f -qq -e trace=clone,clone3,fork,vfork,openat -o "$T/$name.st" \
		"$HPCINIT" "$@" --root "$R" -c "$T/node.yaml" --hostname n1 >"$T/$name.out" 2>&1 || rc=$?
}
main_pid() { awk 'NR == 1 { print $1 }' "$T/$1.st"; }
# forks NAME: how many children the agent's own process started
forks() { awk -v p="$(main_pid "$1")" '$1 == p && $2 ~ /^(clone|clone3|fork|vfork)\(/' "$T/$1.st" | wc -l; }
# who NAME REGEX: the pids that opened a path matching REGEX, one a line
who() { grep -E "^[0-9]+ +openat\([^\"]*\"[^\"]*$2" "$T/$1.st" | awk '{ print $1 }' | sort -u; }
# one_child NAME: the rendezvous and the hostfiles were touched by one process, not the agent's own
one_child() {
	local d h
	d=$(who "$1" '/shared/\.hpcinit/sharec/nodes')
	h=$(who "$1" '/etc/hpcinit/hostfile\.plain')
	[ -n "$d" ] && [ "$d" = "$h" ] && [ "$d" != "$(main_pid "$1")" ] ||
		{ echo "  discovery in: ${d:-none}; hostfile in: ${h:-none}; the agent: $(main_pid "$1")"; return 1; }
}

traced first apply --only discovery,hostfile
check "the first apply exits 0" test "$rc" = 0
check "the first apply forks one child" test "$(forks first)" = 1
check "the first apply: discovery and hostfile ran in that child" one_child first
check "the first apply wrote the hostfile" grep -qx 'n1' "$R/etc/hpcinit/hostfile.plain"

traced again apply --only discovery,hostfile
check "the converged apply exits 0" test "$rc" = 0
check "the converged apply forks one child" test "$(forks again)" = 1
check "the converged apply: discovery and hostfile ran in that child" one_child again

traced chk check --only discovery,hostfile
check "the check exits 0" test "$rc" = 0
check "the check forks one child" test "$(forks chk)" = 1
check "the check: discovery and hostfile ran in that child" one_child chk

traced ref refresh
check "the refresh exits 0" test "$rc" = 0
check "the refresh forks one child" test "$(forks ref)" = 1
check "the refresh: discovery and hostfile ran in that child" one_child ref
done_testing
