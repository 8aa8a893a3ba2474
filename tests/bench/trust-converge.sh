#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Convergence with pinned host keys vs host certificates (issue 17), printed,
# not asserted, on the simulated cluster (tests/cluster/sim.sh, real sshd):
#   converge   N nodes (default 32, hps-1 the head) run "hpcinit apply" at
#              once; wall time until every apply has ended, then every node
#              is checked to log in to 3 others with strict host-key checking;
#   join       one more node: wall time from the start of its apply until
#              every old node's ssh (StrictHostKeyChecking=yes) accepts its
#              host key.  pinned: the old nodes must refresh (run here at
#              once, as their timers would, in the best case); ca: only the
#              head runs (to sign; here started by hand the moment the
#              joiner's record appears), the other old nodes run nothing;
#              ca+watch: the head runs "hpcinit watch" (docs/ssh.md: run
#              hpcinit-watch.service on the head in ca mode), nothing is run
#              by hand: the watch sees the record and signs.
# Usage (root): [MODES="pinned ca ca+watch"] tests/bench/trust-converge.sh [N]
set -euo pipefail
TOP_SRCDIR=$(cd "$(dirname "$0")/../.." && pwd)
TOP_BUILDDIR=${TOP_BUILDDIR:-$TOP_SRCDIR/build}
HPCINIT=${HPCINIT:-$TOP_BUILDDIR/hpcinit}
export TOP_SRCDIR TOP_BUILDDIR HPCINIT
N=${1:-32}
EXPECT=$N
. "$TOP_SRCDIR/tests/cluster/ssh-lib.sh"
# The libexec helpers (hpcinit-ssh for key generation) from the build tree,
# copied where the ssh module's users can run them: a tree cloned into a
# mode-0700 directory (mktemp -d) is closed to them.
if [ -z "${HPCINIT_LIBEXEC_DIR:-}" ]; then
	mkdir -m 0755 "$T/libexec"
	cp "$(dirname "$HPCINIT")"/hpcinit-* "$T/libexec/"
	export HPCINIT_LIBEXEC_DIR=$T/libexec
fi

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
spec_of() { if [ "$1" = hps-1 ] && [ -e "$T/head.yaml" ]; then echo "$T/head.yaml"; else echo "$T/node.yaml"; fi; }
apply_par() {           # cmd nodes...
	local cmd=$1 n pids=()
	shift
	for n in "$@"; do
		on "$n" "$HPCINIT" "$cmd" -c "$(spec_of "$n")" > "$T/out.$n" 2>&1 &
		pids+=($!)
	done
	local i=0 bad=0
	for n in "$@"; do
		wait "${pids[$i]}" || { bad=1; echo "$cmd on $n failed:"; tail -5 "$T/out.$n"; }
		i=$((i + 1))
	done
	return $bad
}
hostkey_ok() {          # src addr: strict host-key check passes (user auth aside)
	local out
	out=$(on "$1" ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o ConnectTimeout=5 \
		-o PreferredAuthentications=none "$2" true 2>&1) || true
	# accepted host key: the server gets to say no to the (absent) user authentication
	grep -q 'Permission denied' <<<"$out"
}

run_mode() {
	local mode=$1 t0 t1 old new a s watch=
	cluster_up "$N"
	if [ "$mode" != pinned ]; then
		rm -f "$T/ca" "$T/ca.pub"
		ssh-keygen -q -t ed25519 -N '' -C bench-ca -f "$T/ca"
		sed -i "s|^ssh: {users: \[alice, bob\]}|ssh: {users: [alice], host_keys: ca, ca_public_key: \"$(cut -d' ' -f1,2 "$T/ca.pub")\"}|" "$T/node.yaml"
		sed "s|^cluster: {name: hpsc,|cluster: {name: hpsc, role: head,|; s|host_keys: ca,|host_keys: ca, ca_key_file: /etc/hpcinit/ssh-ca,|" \
			"$T/node.yaml" > "$T/head.yaml"
		on hps-1 install -D -m 0600 "$T/ca" /etc/hpcinit/ssh-ca
	else
		sed -i 's|^ssh: {users: \[alice, bob\]}|ssh: {users: [alice]}|' "$T/node.yaml"
	fi
	for n in $(nodes); do on "$n" sed -i '1i Include /etc/ssh/sshd_config.d/*.conf' /etc/ssh/sshd_config; done
	old=$(nodes)
	t0=$(now)
	# shellcheck disable=SC2086
	apply_par apply $old || fail "$mode: apply"
	t1=$(now)
	for s in hps-2 "hps-$N"; do
		for d in hps-1 hps-3; do
			hostkey_ok "$s" "$(bash "$SIM" addr "$d")" || { cat "$T/out.$s"; fail "$mode: $s does not accept $d"; }
		done
	done
	printf '%-7s converge  %3d nodes: %6s s (all applies done; host keys accepted)\n' "$mode" "$N" "$(secs "$t0" "$t1")"
	new=$(bash "$SIM" add)
	prepare_node "$new"
	on "$new" sed -i '1i Include /etc/ssh/sshd_config.d/*.conf' /etc/ssh/sshd_config
	a=$(bash "$SIM" addr "$new")
	if [ "$mode" = ca+watch ]; then
		on hps-1 "$HPCINIT" watch -c "$T/head.yaml" > "$T/watch.hps-1" 2>&1 &
		watch=$!
		sleep 2         # its first refresh
	fi
	t0=$(now)
	on "$new" "$HPCINIT" apply -c "$T/node.yaml" > "$T/out.$new" 2>&1 &
	local joiner=$!
	if [ "$mode" = ca ]; then
		# the head signs as soon as the record is there (hpcinit watch would; here: poll)
		until [ -e "$SHARED/hpsc/nodes/$new.rec" ]; do sleep 0.1; done
		apply_par refresh hps-1 || fail "$mode: head refresh"
	elif [ "$mode" = ca+watch ]; then
		:               # the head's watch signs; nothing is run by hand
	else
		until [ -e "$SHARED/hpsc/nodes/$new.rec" ]; do sleep 0.1; done
		# shellcheck disable=SC2086
		apply_par refresh $old || fail "$mode: refresh"
	fi
	wait $joiner || fail "$mode: apply on $new: $(tail -5 "$T/out.$new")"
	local tr
	tr=$(now)
	for s in $old; do
		until hostkey_ok "$s" "$a"; do
			[ "$(secs "$t0" "$(now)" | cut -d. -f1)" -lt 120 ] || fail "$mode: $s never accepted $new"
			sleep 0.2
		done
	done
	t1=$(now)
	printf '%-7s join      node %-6s: the runs that make it trusted end after %5s s; all %d old nodes\n' \
		"$mode" "$new" "$(secs "$t0" "$tr")" "$N"
	printf '%-7s                  checked one by one (ssh from each) by %5s s (%s)\n' "$mode" \
		"$(secs "$t0" "$t1")" "$(case $mode in
			ca) echo "runs on old nodes: the head's refresh only" ;;
			ca+watch) echo "runs on old nodes: the head's watch only, nothing by hand" ;;
			*) echo "runs on old nodes: a refresh on every one" ;; esac)"
	[ -z "$watch" ] || { kill "$watch" 2>/dev/null || true; wait "$watch" 2>/dev/null || true; }
	bash "$SIM" down > /dev/null 2>&1 || true
	rm -rf "$SHARED"/* "$T/head.yaml"
}

echo "trust convergence, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
for m in ${MODES:-pinned ca ca+watch}; do run_mode "$m"; done
