# SPDX-License-Identifier: MIT
# Sourced by the tests that run hpcinit under libfaketime (LD_PRELOAD, Debian's faketime
# package): tests/cluster/etcd-hostile.sh, the fault campaign's nodes (tests/faults/node.sh).
# libfaketime makes /dev/shm/faketime_shm_PID and /dev/shm/sem.faketime_sem_PID for every
# process it is preloaded into and removes them in its destructor, which a process killed by a
# signal (the campaign's SIGKILLs, a helper's deadline) never runs: they stay on the machine.
#
# faketime_since FILE: mark the start (FILE is made now).  faketime_sweep FILE: remove the
# pairs made since FILE whose process has ended (and says how many) -- a live process's are its
# own, and one whose PID is another live process's now is left as it is.
faketime_since() { : >"$1"; }
faketime_sweep() {
	local f pid n=0
	[ -e "$1" ] || return 0
	for f in /dev/shm/faketime_shm_* /dev/shm/sem.faketime_sem_*; do
		# made since: not older than the mark (the same clock tick as the mark counts)
		[ -f "$f" ] && ! [ "$1" -nt "$f" ] || continue
		pid=${f##*_}
		[[ $pid =~ ^[0-9]+$ ]] || continue
		kill -0 "$pid" 2>/dev/null || { rm -f "$f"; n=$((n + 1)); }
	done
	[ "$n" = 0 ] || echo "# libfaketime: removed $n files in /dev/shm that killed processes left"
}
