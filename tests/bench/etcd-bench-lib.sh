# SPDX-License-Identifier: MIT
# Sourced by the etcd benchmarks on fake roots (etcd-load.sh, etcd-fanout.sh): etcd's counters,
# the watchers' CPU from /proc, and when every watcher's hostfile shows a change.  Needs $T (the
# bench's directory, node i's root at $T/n<i>), $PORT (the etcd member's client port), N (the
# nodes) and WPIDS (the watch agents' pids); WATCHERS: how many of n1..nN watch (default N).
metric() { curl -s "http://127.0.0.1:$PORT/metrics" | awk -v m="$1" '$1 ~ "^"m {s += $2} END {printf "%.0f", s}'; }
# span WHAT A B: B - A when both are counts and B >= A (a counter read twice), else "not
# measured (...)": a figure is printed only when its inputs verify (a process gone between its
# two reads, a counter that did not parse, a counter that went down are not a cost).
span() {
	if [[ $2 =~ ^[0-9]+$ && $3 =~ ^[0-9]+$ ]] && [ "$3" -ge "$2" ]; then
		echo $(($3 - $2))
	else
		echo "not measured ($1 read as '$2' then '$3')"
	fi
}
# goal "MS ..." LIMIT: "met" when the first word is a count of ms under LIMIT
goal() { if [[ ${1%% *} =~ ^[0-9]+$ ]] && [ "${1%% *}" -lt "$2" ]; then echo met; else echo "NOT met"; fi; }
# cpu_floor MS: the wall time MS of CPU takes at least on this machine's cores (all the watchers
# share them here; on a cluster each has its own node), or "?" when MS did not verify
cpu_floor() {
	if [[ $1 =~ ^[0-9]+$ ]]; then echo "$(($1 / $(nproc))) ms"; else echo "?"; fi
}
# cpu_line MS N: "MS ms in all, X ms a node", or MS as given when it is not a count of ms
cpu_line() {
	if [[ $1 =~ ^[0-9]+$ ]]; then
		echo "$1 ms in all, $(awk -v c="$1" -v n="$2" 'BEGIN{printf "%.2f", c / n}') ms a node"
	else
		echo "$1"
	fi
}
# child_cpu: CHILD_CPU = user+system CPU, ms, of this shell's waited-for children so far
# (bash's times; not in a $(...) subshell, whose children are its own)
child_cpu() {
	times >"$T/times"
	CHILD_CPU=$(tail -1 "$T/times" | awk '{ t = 0
		for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); t += a[1] * 60000 + a[2] * 1000 }
		printf "%d", t }')
}
# The watchers' CPU between two moments, from /proc: each sample is one read of the stat files
# of every watch agent and of every child it has (helpers, refreshes), "pid starttime ticks role",
# where ticks are user+system CPU with the children waited for (cutime, cstime).  Between two
# samples a process in both counts its growth; a child new in the second counts whole; a child
# gone by the second was waited for by its agent (whose cutime now holds all of it): what it had
# at the first is taken off.  An earlier version summed the live processes and printed the
# difference of two sums: a sample whose read failed (a child gone between the listing and the
# read: mawk stops at a file it cannot open, and the sum came out empty) printed -18,940 ms.
# Now a figure is printed only when its inputs verify: every listed process read in the same
# sample (else the sample is taken again, at most 5 times), the same watch agents in both, and
# no process's CPU going down; else "not measured" and why.
watchers_snap() { # watchers_snap FILE
	local out=$1 helpers p files
	for _ in 1 2 3 4 5; do
		helpers=$(ps -o pid= --ppid "$(IFS=,; echo "${WPIDS[*]}")" | tr -d ' ')
		files=()
		# shellcheck disable=SC2086
		for p in "${WPIDS[@]}" $helpers; do files+=("/proc/$p/stat"); done
		# the command name in (...) may hold spaces: the fields are counted after it
		cat "${files[@]}" 2>/dev/null | awk -v agents=" ${WPIDS[*]} " '{
			pid = $1; sub(/^[^(]*\(.*\) /, "")
			print pid, $20, $12 + $13 + $14 + $15, index(agents, " " pid " ") ? "agent" : "child" }' >"$out"
		[ "$(wc -l <"$out")" = "${#files[@]}" ] && return 0
		sleep 0.05
	done
	echo "not measured (a sample of ${#files[@]} processes could not be read whole in 5 tries)" >"$out.err"
	return 1
}
# watchers_delta A B: "MS" (ms of CPU from sample A to sample B), or "not measured (why)"
watchers_delta() {
	[ ! -s "$1.err" ] || { cat "$1.err"; return 0; }
	[ ! -s "$2.err" ] || { cat "$2.err"; return 0; }
	awk -v tck="$(getconf CLK_TCK)" 'FNR == NR { a[$1 " " $2] = $3; role[$1 " " $2] = $4; next }
		{ k = $1 " " $2
		  if (k in a) { d = $3 - a[k]; if (d < 0) bad = "process " $1 "'"'"'s CPU went down"; s += d; seen[k] = 1 }
		  else if ($4 == "agent") bad = "watch " $1 " is not in the first sample"
		  else s += $3 }
		END { for (k in a) if (!(k in seen)) {
			if (role[k] == "agent") bad = "watch " k " is gone by the second sample"; else s -= a[k] }
		      if (s < 0) bad = "the sum is negative"
		      if (bad != "") print "not measured (" bad ")"; else printf "%d\n", s * 1000 / tck }' "$1" "$2"
}
# until_all PRESENT|ABSENT NAME: when every watcher's hostfile lists (no longer lists) NAME:
# "ALL FIRST HALF", ns since the epoch (the last watcher, the first, half of them), or
# "timeout (K of N)" after 5 minutes; since REF "ALL FIRST HALF": "ALL ms (first F, half H)" in ms
# after REF
until_all() {
	local want=$1 name=$2 got i files=() first="" half="" now N=${WATCHERS:-$N}
	for i in $(seq 1 "${N_ALL:-$N}"); do
		[ "$i" = "${files_skip:-0}" ] || files+=("$T/n$i/etc/hpcinit/hostfile.plain")
	done
	for _ in $(seq 1 6000); do
		got=$(grep -lx -- "$name" "${files[@]}" 2>/dev/null | wc -l)
		now=$(date +%s%N)
		[ "$want" = PRESENT ] || got=$((N - got))       # the watchers done
		[ -n "$first" ] || [ "$got" -lt 1 ] || first=$now
		[ -n "$half" ] || [ "$got" -lt $(((N + 1) / 2)) ] || half=$now
		if [ "$got" = "$N" ]; then
			echo "$now $first $half"
			return 0
		fi
		sleep 0.05
	done
	echo "timeout ($got of $N)"
}
since() {
	local ref=$1 all first half
	read -r all first half <<<"$2"
	if [[ -n $ref && $all =~ ^[0-9]+$ ]]; then
		echo "$(((all - ref) / 1000000)) ms (first $(((first - ref) / 1000000)), half $(((half - ref) / 1000000)))"
	else
		echo "${2:-?}"
	fi
}
# When etcd took a key's put and its deletion (a watch of the bench's own): stamps into FILE.
stamp_key() { # stamp_key KEY FILE; STAMP_PID: the etcdctl to kill afterwards
	( echo "$BASHPID" >"$2.pid"
	  exec etcdctl --endpoints "http://127.0.0.1:$PORT" watch "$1" ) |
		while read -r l; do case $l in PUT | DELETE) echo "$l $(date +%s%N)" ;; esac; done >"$2" &
	PIDS+=($!)
	sleep 0.3
	STAMP_PID=$(cat "$2.pid")
	PIDS+=("$STAMP_PID")
}
stamp_of() { awk -v k="$1" '$1 == k { print $2; exit }' "$2"; }
