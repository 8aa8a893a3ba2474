#!/bin/bash
# SPDX-License-Identifier: MIT
# A simulated node's units, for the fault campaign (tests/faults/campaign.sh);
# runs inside the node (sim.sh exec NODE bash node.sh ...):
#   node.sh boot            apply at boot (again while the harness's SIGKILLs end it, as
#                           systemd's Restart=on-failure would), then the refresh timer as a
#                           loop every FT_REFRESH s and "hpcinit watch" restarted when it ends
#   node.sh once KIND ARGS...  one hpcinit run (the harness's extra runs), logged as KIND
#   node.sh kill-after MS KIND ARGS...  the same, SIGKILLed MS ms after it started (the pid is
#                           added to $FT/killed first: its exit status is the harness's doing)
# Every run is logged to $FT/runs.NODE as "TIME NODE KIND PID RC"; its output goes to
# $FT/out.NODE (a watch's as it prints; any other run's when it ends, whole, and also kept
# as $FT/outs.NODE/START_NS.KIND: the report of that run, for the campaign's invariant
# "a hostfile agrees with the report of the run that wrote it").  A file $FT/clock.NODE holding a FAKETIME offset (e.g. "+300s") makes the
# runs started while it exists see the wall clock jumped (libfaketime; the monotonic
# clock is left alone, and so are file times from stat(2): they are the file system's,
# as an NFS server's are on a real node whose own clock is off).
: "${HPCINIT:?}" "${FT:?}" "${NODE:?}" "${FT_REFRESH:=5}"

run() {     # run KIND ARGS...: one run, logged
	local kind=$1 pid rc off dest=$FT/out.$NODE
	shift
	off=$(cat "$FT/clock.$NODE" 2>/dev/null || true)
	if [ "$kind" != watch ]; then
		mkdir -p "$FT/outs.$NODE"
		dest=$FT/outs.$NODE/$(date +%s%N).$kind.running
	fi
	{
		echo "=== $(date +%s.%N) $kind${off:+ (clock $off)}"
		if [ -n "$off" ]; then
			LD_PRELOAD=/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 FAKETIME="$off" \
				FAKETIME_DONT_FAKE_MONOTONIC=1 NO_FAKE_STAT=1 exec "$HPCINIT" "$@"
		else
			exec "$HPCINIT" "$@"
		fi
	} >>"$dest" 2>&1 &
	pid=$!
	echo "$pid" > "/run/faults.$kind.pid"
	if [ -n "${KILL_AFTER:-}" ]; then   # the harness's SIGKILL, MS after the start
		# read -t: a builtin, no fork, so the delay is the one asked for
		[ -p "$FT/never" ] || mkfifo "$FT/never" 2>/dev/null
		[ "$KILL_AFTER" = 0 ] || read -r -t "$(printf '%d.%03d' $((KILL_AFTER / 1000)) $((KILL_AFTER % 1000)))" _ <>"$FT/never"
		if kill -0 "$pid" 2>/dev/null; then
			echo "$pid" >>"$FT/killed"
			kill -KILL "$pid"
			echo "$(date +%s) $NODE $kind $pid killed-after-${KILL_AFTER}ms" >>"$FT/sigkills"
		else
			echo "$(date +%s) $NODE $kind $pid ended-before-${KILL_AFTER}ms" >>"$FT/sigkills"
		fi
	fi
	rc=0
	wait "$pid" || rc=$?
	if [ "$dest" != "$FT/out.$NODE" ]; then
		cat "$dest" >>"$FT/out.$NODE"
		mv "$dest" "${dest%.running}"
	fi
	echo "$(date +%s) $NODE $kind $pid $rc" >>"$FT/runs.$NODE"
	return "$rc"
}
killed_by_harness() { grep -qx "$1" "$FT/killed" 2>/dev/null; }

case ${1:-} in
boot)
	while :; do
		run apply apply && break
		rc=$?
		pid=$(cat /run/faults.apply.pid)
		[ "$rc" -ge 128 ] && killed_by_harness "$pid" || break
		sleep 1
	done
	(
		while :; do
			sleep "$FT_REFRESH"
			run refresh refresh || true
		done
	) &
	while :; do
		run watch watch || true
		sleep 1
	done
	;;
once)  # once KIND ARGS...
	shift
	run "$@"
	;;
kill-after)     # kill-after MS KIND ARGS...: one run, SIGKILLed MS ms after it started
	KILL_AFTER=$2
	shift 2
	run "$@"
	;;
*) echo "usage: node.sh boot | once CMD..." >&2; exit 2 ;;
esac
