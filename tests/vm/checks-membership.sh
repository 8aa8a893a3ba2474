# tests/vm/cluster.sh's checks, sourced by it (not run alone): Membership: a node joining (scale-out), leaving, scaled in by its lease,
# and a head that boots late.
# Each check_NAME is run by --checks NAME; ok/not_ok, each_vm, vm_exec and the
# cluster's variables are cluster.sh's.
# shellcheck shell=bash

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
		not_ok "$check" "$lags"
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
			{ not_ok "scaleout: $n boots into the running cluster, ready" "no agent (console: $W/vm/$n/console.log)"; return; }
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
		not_ok "scaleout: $n boots into the running cluster, ready" "$out"
		return
	fi
	old=$(names | tr '\n' ' ')
	# every old node's refresh timer (every minute, 10 s spread) must list it
	if left=$(wait_member "$n" "$(addr_of "$n")" in 240 $old); then
		T_JOINED=$(since "${T_LAUNCH[$n]}")
		ok "scaleout: $n in every old node's hostfiles, known_hosts, nodeset and /etc/hosts"
	else
		not_ok "scaleout: $n in every old node's hostfiles, known_hosts, nodeset and /etc/hosts" \
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
			not_ok "scaleout: every old node's watch listed $n within 15 s of its boot run's discovery step" "no discovery line in $n's journal: $tj"
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
		{ not_ok "leave: $n (booted by scaleout) shuts down" "$n is not running (run scaleout first)"; return; }
	out=$(vm_exec "$n" 30 'systemctl is-active hpcinit-leave.service; systemctl is-enabled hpcinit-leave.service; ls /shared/.hpcinit/glocluster/nodes/' 2>&1) || true
	grep -q "^active$" <<< "$out" && grep -q "^$n.rec$" <<< "$out" ||
		{ not_ok "leave: hpcinit-leave.service active on $n, its record on the share" "$out"; return; }
	if [ "$WATCH" = 1 ]; then
		local v bad=""
		for v in $(names) "$n"; do
			out=$(vm_exec "$v" 30 'systemctl is-active hpcinit-watch.service' 2>&1) || true
			[ "$out" = active ] || bad+=" $v: $out;"
		done
		[ -z "$bad" ] && ok "watch: hpcinit-watch.service active on every node" ||
			not_ok "watch: hpcinit-watch.service active on every node" "$bad"
	fi
	t0=$(date +%s.%N)
	vm_exec "$n" 10 'systemctl poweroff --no-block' >/dev/null 2>&1 || true
	end=$(($(date +%s) + 180))
	local t_left=
	while kill -0 "${PID[$n]:-}" 2>/dev/null; do
		[ "$(date +%s)" -lt "$end" ] || { not_ok "leave: $n powers off" "still running after 180 s"; return; }
		# when hpcinit leave has run: the console says so (host clock, to 0.1 s)
		[ -n "$t_left" ] || ! grep -aq 'Stopped.*hpcinit-leave' "$W/vm/$n/console.log" || t_left=$(date +%s.%N)
		sleep 0.1
	done
	say "$n: powered off $(since "$t0") s after systemctl poweroff"
	local t_off
	t_off=$(date +%s.%N)
	out=$(vm_exec head 30 "ls /shared/.hpcinit/glocluster/nodes/" 2>&1) || true
	if grep -q "^$n.rec$" <<< "$out"; then
		not_ok "leave: hpcinit leave ran at poweroff (its record is gone from the share when it is off)" \
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
				not_ok "leave: every node's watch dropped $n within $lim s of its leave" "no \"Stopped hpcinit-leave\" on its console"
			else
				watch_within "leave: every node's watch dropped $n within $lim s of its leave" "$lim" \
					"the leave of $n (from its console's \"Stopped hpcinit-leave\")" "$t_left" $(names)
			fi
		fi
	else
		not_ok "leave: $n gone from every node's hostfiles, known_hosts, nodeset and /etc/hosts before its lease" "after $(since "$t0") s: $left"
	fi
}

# (6) Scale-in without a goodbye: c2's power is cut (qemu killed); its record
# stays on the share until it is a lease old, then every other node drops it.
lease_s() { awk -v l="${LEASE:-5m}" 'BEGIN{v=l+0; if (l ~ /m$/) v*=60; if (l ~ /h$/) v*=3600; print v}'; }
check_scalein() {
	local n=c2 t0 left lease_s
	lease_s=$(lease_s)
	[ "$N" -ge 2 ] && kill -0 "${PID[$n]:-}" 2>/dev/null || { not_ok "scalein: $n powered off hard" "$n is not running"; return; }
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
		not_ok "scalein: $n's record stays on the share (no leave ran)"
	fi
	if left=$(wait_member "$n" "$(addr_of "$n")" out $((lease_s + 180)) $others); then
		local t
		t=$(since "$t0")
		if awk -v t="$t" -v l="$lease_s" 'BEGIN{exit !(t >= l - 70)}'; then
			ok "scalein: $n gone from every other node's hostfiles, known_hosts, nodeset and /etc/hosts after its lease ($t s after the power cut, lease $lease_s s)"
		else
			not_ok "scalein: $n dropped after its lease" "gone after $t s, before its lease ($lease_s s) could have run out"
		fi
	else
		not_ok "scalein: $n gone from every other node's hostfiles after its lease" "after $(since "$t0") s: $left"
	fi
	vm_exec head 30 "ls /shared/.hpcinit/glocluster/nodes/$n.rec" >/dev/null 2>&1 &&
		not_ok "scalein: $n's expired record removed from the share" || ok "scalein: $n's expired record removed from the share"
}

# (2) The head booted --late-head seconds after the computes: their boot run
# waited for its NFS server (the mount's wait), then everything converged
# (the boot, nfs and hosts checks judge the rest).
check_latehead() {
	[ "$LATE_HEAD" -gt 0 ] || { not_ok "latehead: computes wait for a late head" "run with --late-head SECONDS"; return; }
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
	if [ ${#msgs[@]} -eq 0 ]; then ok "$name"; printf '#   %s\n' "${info[@]}"; else not_ok "$name" "${msgs[@]}"; fi
}

# (7) A node waiting on the share over kernel NFS: once the directory has not changed for a
# few seconds its lists are one stat of the directory (lib/rendezvous/dirlist.c), and the
# record another NFS client writes after that still ends its wait.  A fake root on c1 (cluster
# qwait, expect 2, its own secret) waits; 15 s later one on c2 writes its record; c1's apply
# must end ready with both, and say that some of its lists were over the directory unchanged.
# Were those lists blind to c2's record (the client's attribute cache, the server's clock), c1
# would list the unchanged directory until its 60 s wait ended, degraded.
qwait_root() {   # the fake root's script for VM $1 (hpcinit's spec: expect 2, wait $2)
	cat <<-EOF
	set -e
	export R=/var/tmp/qwait
	rm -rf "\$R"
	mkdir -p "\$R/etc/hpcinit" "\$R/run" "\$R/var/lib" /shared/.hpcinit/qwait/nodes
	printf 'root:x:0:0:root:/root:/bin/bash\n' > "\$R/etc/passwd"
	(umask 077; echo $QW_KEY > "\$R/etc/hpcinit/cluster.key")
	ln -s /shared "\$R/shared"
	printf '%s\n' 'version: 1' 'cluster: {name: qwait, network: $NET.0/24, secret_file: /etc/hpcinit/cluster.key}' \
		'discovery: {method: shared, dir: /shared/.hpcinit, expect: 2, wait: $2}' 'hostfile: {}' > "\$R/etc/hpcinit/node.yaml"
	EOF
}
check_quietwait() {
	local QW_KEY out rc
	QW_KEY=$(openssl rand -hex 32)
	out=$(vm_exec c1 60 "$(qwait_root c1 60s)
		nohup setsid sh -c 'HPCINIT_ADDRESS=$NET.201 hpcinit apply -v --only discovery,hostfile --root \$R \
			-c \$R/etc/hpcinit/node.yaml --hostname qw1 > \$R/out 2>&1; echo \$? > \$R/rc' >/dev/null 2>&1 </dev/null &
		for i in \$(seq 1 100); do [ -e /shared/.hpcinit/qwait/nodes/qw1.rec ] && exit 0; sleep 0.1; done
		echo 'no record of qw1 on the share after 10 s'; cat \$R/out; exit 1" 2>&1) ||
		{ not_ok "quietwait: a node waiting on the share (c1, expect 2) wrote its record" "$out"; return; }
	sleep 15
	out=$(vm_exec c2 60 "$(qwait_root c2 0s)
		HPCINIT_ADDRESS=$NET.202 hpcinit apply --only discovery,hostfile --root \$R -c \$R/etc/hpcinit/node.yaml \
			--hostname qw2 > \$R/out 2>&1 || { echo \"exit \$?\"; cat \$R/out; exit 1; }" 2>&1) ||
		{ not_ok "quietwait: a second node (c2) writes its record 15 s later" "$out"; return; }
	out=$(vm_exec c1 90 '
		R=/var/tmp/qwait
		for i in $(seq 1 600); do [ -e $R/rc ] && break; sleep 0.1; done
		[ -e $R/rc ] || { echo "c1'"'"'s apply still waiting 60 s after c2 wrote"; cat $R/out; exit 1; }
		rc=$(cat $R/rc)
		echo "# exit $rc after $(( $(stat -c %Y $R/rc) - $(stat -c %Y $R/etc/hpcinit/node.yaml) )) s; $(grep -o "waiting: .*" $R/out)"
		[ "$rc" = 0 ] && grep -qx qw2 $R/etc/hpcinit/hostfile.plain || { cat $R/out; exit 1; }
		q=$(sed -n "s/.*waiting: [0-9]* lists of .*, \([0-9]*\) of them over the directory unchanged.*/\1/p" $R/out)
		[ "${q:-0}" -ge 1 ] || { echo "no list over the directory unchanged"; exit 1; }' 2>&1) && rc=0 || rc=$?
	if [ "$rc" = 0 ]; then
		ok "quietwait: c1, waiting on kernel NFS, listed the unchanged directory by one stat and still saw c2's record (exit 0, both in its hostfile)"
		grep '^# ' <<< "$out" | sed 's/^# /#   /'
	else
		not_ok "quietwait: c1, waiting on kernel NFS, listed the unchanged directory by one stat and still saw c2's record (exit 0, both in its hostfile)" "$out"
	fi
	vm_exec c1 30 'rm -rf /shared/.hpcinit/qwait /var/tmp/qwait' >/dev/null 2>&1 || true
	vm_exec c2 30 'rm -rf /var/tmp/qwait' >/dev/null 2>&1 || true
}
