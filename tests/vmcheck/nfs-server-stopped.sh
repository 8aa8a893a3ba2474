#!/bin/sh
# Runs INSIDE a real-kernel VM guest (tests/vm boots it) as root, with hpcinit,
# nfs-kernel-server (head) or nfs-common (compute) installed.  A stopped NFS
# server under a hard mount: a client's "hpcinit check" reports the mount dead
# within its probe deadline (10 s), a refresh reports discovery failed within
# its deadline (discovery.wait + 60 s), naming the call; the children do not
# pile up (at most one per step or mount point stays asleep in the kernel:
# where the kernel lets SIGKILL end the wait, as the NFS client's killable RPC
# wait does, none; where it does not, the next run names the stuck one,
# "still blocked since ...", and starts no other); hpcinit status exits 1 and
# shows the failure; after the server starts again a refresh converges.
# The refresh timer is stopped meanwhile (its runs would take the lock and
# write status.json with the node's own spec) and started again at the end.
#
#   nfs-server-stopped.sh                  on the head alone: it mounts its own
#                                          export over NFS (loopback) as the client,
#                                          and stops/starts its own server
#   nfs-server-stopped.sh stop|start       on the head: the server only
#   nfs-server-stopped.sh dead|converged SOURCE MOUNTPOINT
#                                          on a compute (SOURCE head:/shared,
#                                          MOUNTPOINT /shared), between stop and start
set -u
fails=0
ok() { echo "ok - $*"; }
no() { echo "not ok - $*"; fails=$((fails + 1)); }
ms() { echo $(( $(date +%s%N) / 1000000 )); }
T=/run/hpcinit-vmcheck-nfs
mkdir -p "$T"
# Our runs' children carry this in their environment: count those asleep in the kernel.
export HPCINIT_VMCHECK_TAG=nfs-server-stopped
stuck() {
	n=0
	for p in /proc/[0-9]*; do
		[ "$(sed 's/.*) //' "$p/stat" 2>/dev/null | cut -d' ' -f1)" = D ] || continue
		tr '\0' '\n' <"$p/environ" 2>/dev/null | grep -qx "HPCINIT_VMCHECK_TAG=nfs-server-stopped" && n=$((n + 1))
	done
	echo "$n"
}
spec() {        # spec SOURCE MOUNTPOINT: a spec of its own (short discovery wait), run with -c
	cat >"$T/node.yaml" <<YAML
version: 1
cluster: {name: vmcheck-nfs, network: $(ip -4 -o addr show eth0 | awk '{print $4}' | head -1)}
nfs:
  mounts:
    - {source: "$1", path: $2, options: [vers=3, hard, proto=tcp], wait: 20s}
discovery: {method: shared, dir: $2/.hpcinit-vmcheck, expect: 1, wait: 5s}
hostfile: {dir: $T/hostfiles, formats: [plain]}
YAML
}

phase_dead() {
	spec "$1" "$2"
	systemctl stop hpcinit-refresh.timer hpcinit-refresh.service 2>/dev/null
	s=$(ms); hpcinit check -c "$T/node.yaml" --only nfs >"$T/c1" 2>&1; rc=$?; e=$(($(ms) - s))
	[ "$rc" = 1 ] && grep -q "$2: mounted but not answering" "$T/c1" && [ "$e" -lt 20000 ] &&
		ok "check: $2 mounted but not answering (exit 1, $e ms)" || { no "check on a dead mount: rc=$rc, $e ms"; cat "$T/c1"; }
	s=$(ms); hpcinit refresh -c "$T/node.yaml" >"$T/r1" 2>&1; rc=$?; e=$(($(ms) - s))
	[ "$rc" = 1 ] && grep -q "discovery.*did not finish within its deadline (65 s): blocked in" "$T/r1" && [ "$e" -lt 75000 ] &&
		ok "refresh: discovery failed at its deadline, naming the call ($e ms)" || { no "refresh 1: rc=$rc, $e ms"; cat "$T/r1"; }
	if [ -e /run/hpcinit/stuck/step.discovery ]; then
		# the killed child could not die: the next refresh names it and starts none
		s=$(ms); hpcinit refresh -c "$T/node.yaml" >"$T/r2" 2>&1; rc=$?; e=$(($(ms) - s))
		[ "$rc" = 1 ] && grep -q "still blocked since .* (pid [0-9]*, waiting in .*no new child started" "$T/r2" && [ "$e" -lt 10000 ] &&
			ok "refresh 2: still blocked, no new child ($e ms): $(grep -o 'still blocked since [^:]*' "$T/r2" | head -1)" ||
			{ no "refresh 2: rc=$rc, $e ms"; cat "$T/r2"; }
	else
		grep -q "the step was killed$" "$T/r1" && ! grep -q "left behind" "$T/r1" &&
			ok "refresh 1's child died of SIGKILL (the kernel's wait is killable: $(grep -o 'kernel: [a-z_]*' "$T/r1" | head -1)); nothing left to pile up" ||
			{ no "refresh 1: no stuck record, yet the child was not reported killed"; cat "$T/r1"; }
		s=$(ms); hpcinit refresh -c "$T/node.yaml" >"$T/r2" 2>&1; rc=$?; e=$(($(ms) - s))
		[ "$rc" = 1 ] && grep -q "did not finish within its deadline (65 s)" "$T/r2" && [ "$e" -lt 75000 ] &&
			ok "refresh 2: bounded again by its deadline ($e ms)" || { no "refresh 2: rc=$rc, $e ms"; cat "$T/r2"; }
	fi
	s=$(ms); hpcinit check -c "$T/node.yaml" --only nfs >"$T/c2" 2>&1; rc=$?; e=$(($(ms) - s))
	[ "$rc" = 1 ] && grep -q "$2: mounted but not answering" "$T/c2" && [ "$e" -lt 20000 ] &&
		ok "check 2: not answering again ($e ms)$(grep -q 'no new probe started' "$T/c2" && echo ': the stuck probe named, no new one')" ||
		{ no "check 2: rc=$rc, $e ms"; cat "$T/c2"; }
	n=$(stuck)
	[ "$n" -le 2 ] && ok "$n children asleep in the kernel after 2 checks and 2 refreshes (one per step at most)" ||
		{ no "$n stuck children"; ps -eo pid,stat,wchan:30,cmd | awk '$2 ~ /^D/'; }
	hpcinit status >"$T/s" 2>&1; rc=$?
	[ "$rc" = 1 ] && grep -q "^discovery  *failed" "$T/s" && ok "hpcinit status: failed (exit 1), discovery failed" ||
		{ no "status: rc=$rc"; cat "$T/s"; }
}

phase_converged() {
	spec "$1" "$2"
	end=$(($(date +%s) + 300))
	while [ "$(stuck)" -gt 0 ] && [ "$(date +%s)" -lt "$end" ]; do sleep 2; done
	n=$(stuck)
	[ "$n" = 0 ] && ok "the stuck children ended once the server answered" || no "$n children still stuck 300 s after the restart"
	s=$(ms); hpcinit refresh -c "$T/node.yaml" >"$T/r3" 2>&1; rc=$?; e=$(($(ms) - s))
	[ "$rc" = 0 ] && ! grep -q "still blocked" "$T/r3" && ok "refresh converges after the restart (exit 0, $e ms)" ||
		{ no "refresh after restart: rc=$rc"; cat "$T/r3"; }
	hpcinit check -c "$T/node.yaml" --only nfs >"$T/c3" 2>&1; rc=$?
	! grep -q "not answering" "$T/c3" && ok "check: $2 answers again (exit $rc)" || { no "check after restart"; cat "$T/c3"; }
	[ ! -e /run/hpcinit/stuck/step.discovery ] && ok "no stuck record left" || no "/run/hpcinit/stuck/step.discovery left"
	systemctl start hpcinit-refresh.timer 2>/dev/null
}

case ${1:-all} in
stop) systemctl stop nfs-server && ok "nfs-server stopped" || no "systemctl stop nfs-server" ;;
start) systemctl start nfs-server && ok "nfs-server started" || no "systemctl start nfs-server" ;;
dead) phase_dead "$2" "$3" ;;
converged) phase_converged "$2" "$3" ;;
all)
	addr=$(ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1 | head -1)
	mp=/mnt/vmcheck-nfs
	mkdir -p "$mp"
	exportfs -v | grep -q '^/shared' || { no "the head exports /shared"; exportfs -v; }
	mount -t nfs -o vers=3,hard,proto=tcp "$addr:/shared" "$mp" && ok "the head mounts its own export ($addr:/shared) as a client" ||
		no "mount $addr:/shared"
	systemctl stop nfs-server && ok "nfs-server stopped" || no "systemctl stop nfs-server"
	phase_dead "$addr:/shared" "$mp"
	systemctl start nfs-server && ok "nfs-server started" || no "systemctl start nfs-server"
	phase_converged "$addr:/shared" "$mp"
	umount "$mp" 2>/dev/null || umount -l "$mp"
	rmdir "$mp" 2>/dev/null
	;;
*) echo "usage: $0 [stop|start|dead SOURCE MP|converged SOURCE MP]" >&2; exit 2 ;;
esac
rm -rf "$T"
echo "# $fails failed"
[ "$fails" = 0 ]
