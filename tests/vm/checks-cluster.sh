# tests/vm/cluster.sh's checks, sourced by it (not run alone): The cluster's basics: each VM booted and ready, NFS, /etc/hosts, SSH trust,
# MPI across the VMs, hpcinit verify.
# Each check_NAME is run by --checks NAME; ok/not_ok, each_vm, vm_exec and the
# cluster's variables are cluster.sh's.
# shellcheck shell=bash

# each_vm NAME SCRIPT: run SCRIPT on every VM, on all of them at once (each
# VM has its own CPU); the check passes when it passes everywhere.
each_vm() {
	local check=$1 script=$2 n msgs=() ev=$W/each_vm.$BASHPID pids=()
	mkdir -p "$ev"
	for n in $(names); do
		# (the harness runs under set -e: a failing script must end up in
		# its .rc, not end this subshell before it writes one)
		{ r=0; vm_exec "$n" 600 "$script" > "$ev/$n.out" 2>&1 || r=$?; echo $r > "$ev/$n.rc"; } &
		pids+=($!)
	done
	wait "${pids[@]}" || true   # these only: the qemus are children of this shell too
	for n in $(names); do
		[ "$(cat "$ev/$n.rc" 2>/dev/null)" = 0 ] || msgs+=("$n:" "$(cat "$ev/$n.out" 2>/dev/null)")
	done
	rm -rf "$ev"
	if [ ${#msgs[@]} -eq 0 ]; then ok "$check"; else not_ok "$check" "${msgs[@]}"; fi
}

check_boot() {
	local n msgs=()
	for n in $(names); do
		grep -q '^status: done' <<< "${CI_OUT[$n]:-}" && continue
		msgs+=("$n: cloud-init status --long:" "${CI_OUT[$n]:-(no answer)}")
		# what the boot run (runcmd: hpcinit apply) printed, without apt's lines
		msgs+=("$n: /var/log/cloud-init-output.log, apt lines left out:"
			"$(vm_exec "$n" 60 'grep -vE "^(Get|Hit|Ign|Reading|Building|Selecting|Preparing|Unpacking|Setting up|Processing|Fetched|\(Reading|debconf|Created symlink)" /var/log/cloud-init-output.log | tail -40' 2>&1)")
	done
	[ ${#msgs[@]} -eq 0 ] && ok "boot: cloud-init status done on every VM" || not_ok "boot: cloud-init status done on every VM" "${msgs[@]}"
	# one line per VM: the boot run's steps, their status and time
	for n in $(names); do
		echo "#   $n boot run: $(vm_exec "$n" 60 '
			sed -n "/^MODULE /,/^result: /p" /var/log/cloud-init-output.log | while read -r m st t rest; do
				case $m:$t in
				result:*) echo "$m $st $t $rest"; break ;;
				MODULE:*) ;;
				*:*ms) printf "%s %s %s, " "$m" "$st" "$t" ;;
				esac
			done' 2>&1 | head -1)"
	done
	each_vm "boot: hpcinit status ready, hpcinit.service ran at boot, no failed unit" '
		set -e
		hpcinit status > /tmp/st.txt 2>&1 || { cat /tmp/st.txt; exit 1; }
		grep -qiw ready /tmp/st.txt || { echo "hpcinit status is not ready:"; cat /tmp/st.txt; exit 1; }
		systemctl show -p ActiveState,Result hpcinit.service | tr "\n" " " | grep -q "ActiveState=active" ||
			{ systemctl status --no-pager hpcinit.service; exit 1; }
		journalctl -b -u hpcinit.service --no-pager -o cat | grep -q "Finished\|hpcinit" ||
			{ echo "no boot run of hpcinit.service in the journal"; exit 1; }
		f=$(systemctl list-units --failed --plain --no-legend)
		[ -z "$f" ] || { echo "failed units: $f"; for u in $(echo "$f" | cut -d" " -f1); do journalctl -b -u "$u" --no-pager | tail -15; done; exit 1; }
		s=$(systemctl is-system-running); [ "$s" = running ] || { echo "system is $s"; exit 1; }'
	# The custom-data packages: came from the local repository during this
	# first boot, in cloud-init'"'"'s final stage; hpcinit.service ran after it.
	each_vm "boot: cloud-init installed the custom-data's packages in this boot; hpcinit.service ran after" '
		set -e
		p=nfs-common; [ "$(hostname)" = head ] && p=nfs-kernel-server
		grep -q "^Unpacking $p " /var/log/cloud-init-output.log || { echo "$p was not installed by cloud-init:"; tail -20 /var/log/cloud-init-output.log; exit 1; }
		cf=$(systemctl show -p ExecMainExitTimestampMonotonic --value cloud-final.service)
		hs=$(systemctl show -p ExecMainStartTimestampMonotonic --value hpcinit.service)
		[ "$cf" -gt 0 ] && [ "$hs" -ge "$cf" ] || { echo "hpcinit.service started at $hs us, cloud-final ended at $cf us"; exit 1; }
		systemctl is-active --quiet hpcinit.service || { systemctl status --no-pager hpcinit.service; exit 1; }'
}

# (2) NFS: kernel server on the head, kernel client on the computes.
check_nfs() {
	each_vm "nfs: head exports /shared with the kernel server (exports.d, exportfs)" '
		[ "$(hostname)" = head ] || exit 0
		set -e
		cat /etc/exports.d/*.exports | grep -q "^/shared '"$NET"'.0/24(rw,sync,'"$SQUASH_OPT"',no_subtree_check)$" ||
			{ echo "exports.d:"; cat /etc/exports.d/*; exit 1; }
		exportfs -v | grep -q "^/shared" || { echo "exportfs -v:"; exportfs -v; exit 1; }
		systemctl is-active --quiet nfs-server || { echo "nfs-server is not active"; exit 1; }'
	if [ "$NFS41" = 1 ]; then
		each_vm "nfs: --nfs41: the head's kernel server has NFSv3 and NFSv4.0 off, 4.1 on (/proc/fs/nfsd/versions)" '
			[ "$(hostname)" = head ] || exit 0
			v=$(cat /proc/fs/nfsd/versions) || exit 1
			echo "versions: $v"
			for want in -3 -4.0 +4.1; do
				case " $v " in *" $want "*) ;; *) echo "want $want in: $v"; exit 1 ;; esac
			done'
	fi
	each_vm "nfs: computes mount head:/shared with the spec's options (vers=$NFS_VERS), fstab block right" '
		[ "$(hostname)" = head ] && exit 0
		set -e
		m=$(findmnt -n -o SOURCE,FSTYPE,OPTIONS /shared) || { echo "/shared is not mounted"; exit 1; }
		echo "$m" | grep -q "^'"$NET"'.10:/shared '"$NFS_TYPE"' " || { echo "mounted: $m"; exit 1; }
		for o in vers='"$NFS_VERS"' hard proto=tcp nconnect=8; do
			echo "$m" | grep -q "[ ,]$o\(,\|$\)" || { echo "option $o missing: $m"; exit 1; }
		done
		b=$(sed -n "/^# BEGIN hpcinit glocluster$/,/^# END hpcinit glocluster$/p" /etc/fstab)
		echo "$b" | grep -q "^'"$NET"'.10:/shared /shared nfs vers='"$NFS_VERS"',rsize=1048576,wsize=1048576,hard,proto=tcp,nconnect=8,.*_netdev" ||
			{ echo "fstab block:"; echo "$b"; exit 1; }'
	if [ "$NFS41" = 1 ]; then
		each_vm "nfs: --nfs41: /proc/mounts has /shared as nfs4 vers=4.1" '
			[ "$(hostname)" = head ] && exit 0
			l=$(awk '"'"'$2 == "/shared"'"'"' /proc/mounts)
			echo "$l"
			echo "$l" | grep -qE "^'"$NET"'\.10:/shared /shared nfs4 ([^ ]*,)?vers=4\.1(,[^ ]*)? " || exit 1'
	fi
	local n msgs=() want
	want=$(names | sort | tr '\n' ' ')
	for n in $(names); do
		local got
		got=$(vm_exec "$n" 60 'ls /shared/.hpcinit/glocluster/nodes/ | sed "s/\.rec$//" | sort | tr "\n" " "' 2>&1) || true
		[ "$got" = "$want" ] || msgs+=("$n sees records: '$got', want '$want'")
	done
	[ ${#msgs[@]} -eq 0 ] && ok "nfs: every node sees every record in the rendezvous directory on the share" ||
		not_ok "nfs: every node sees every record in the rendezvous directory on the share" "${msgs[@]}"
}

# The head (no expect) is ready alone at boot and learns the computes from
# hpcinit-refresh.timer (every minute), as on Azure: wait until every node's
# hostfile lists every VM (up to 3 minutes) before judging names and logins.
wait_converged() {
	local t0 n all left
	t0=$(date +%s)
	all=$(names | tr '\n' ' ')
	while :; do
		left=()
		for n in $(names); do
			vm_exec "$n" 30 "for m in $all; do grep -q \"^\$m slots=\" /etc/hpcinit/hostfile.openmpi || exit 1; done" \
				>/dev/null 2>&1 || left+=("$n")
		done
		[ ${#left[@]} -eq 0 ] && { say "converged: every hostfile lists every VM ($(($(date +%s) - t0)) s after the boot checks)"; return 0; }
		[ $(($(date +%s) - t0)) -ge 180 ] && { say "not converged after 180 s: ${left[*]}"; return 1; }
		sleep 5
	done
}

# (8) Names resolve without DNS: hpcinit's /etc/hosts block.
check_hosts() {
	wait_converged || true
	local script='set -e
		grep -q "^# BEGIN hpcinit glocluster$" /etc/hosts || { echo "no hpcinit block in /etc/hosts:"; cat /etc/hosts; exit 1; }'
	for n in $(names); do
		script+="
		a=\$(getent hosts $n | awk '{print \$1}'); [ \"\$a\" = $(addr_of "$n") ] || { echo \"$n resolves to '\$a', want $(addr_of "$n")\"; exit 1; }"
	done
	each_vm "hosts: every hostfile name resolves to its address on every node (/etc/hosts block, no DNS)" "$script"
}

# (5) SSH with pinned host keys, by name, between every pair.
check_ssh() {
	local script='set -e'
	for n in $(names); do
		script+="
		h=\$(runuser -u azureuser -- ssh -o BatchMode=yes -o StrictHostKeyChecking=yes -o ConnectTimeout=30 $n hostname 2>&1) || { echo \"ssh $n: \$h\"; exit 1; }
		[ \"\$h\" = $n ] || { echo \"ssh $n ran on \$h\"; exit 1; }"
	done
	each_vm "ssh: azureuser on every VM logs in to every VM by name, StrictHostKeyChecking=yes" "$script"
}

# (5) mpirun with the generated hostfile: an MPI hello on every VM.
# --release: Open MPI 4.1 (Debian 12) and 5.0 (Debian 13) do not launch each
# other's daemons (orted, prted): the hello runs on the VMs of the head's
# release, from the hostfile less the others, and the whole hostfile's job
# must fail for that reason and no other (what mpi.verify.mixed-mpi says).
mpi_hello() {          # HOSTFILE NP: mpirun's output and status, on the head as azureuser
	vm_exec head 300 '
		set -e
		cp /hpcvm/mpi-hello /shared/mpi-hello 2>/dev/null || true
		[ -x /shared/mpi-hello ] || { echo "no MPI hello binary (tests/cluster/mpi-hello, built by make check)"; exit 1; }
		runuser -u azureuser -- mpirun --hostfile '"$1"' --map-by node \
			-np '"$2"' --bind-to none --mca plm_rsh_args "-o BatchMode=yes" \
			--mca pml ob1 --mca btl tcp,self,vader --mca btl_tcp_if_include '"$NET"'.0/24 \
			--mca oob_tcp_if_include '"$NET"'.0/24 /shared/mpi-hello'
}
check_mpi() {
	local out n miss=() hf=/etc/hpcinit/hostfile.openmpi others name
	others=$(other_release | tr '\n' ' ')
	name="mpi: mpirun --hostfile $hf runs hello on every VM"
	if [ -n "$others" ]; then
		name="mpi: mpirun --hostfile $hf less ${others% } (another release) runs hello on every VM of the head's release"
		vm_exec head 30 "grep -vE '^(${others// /|}) ' $hf > /tmp/hostfile.release; chmod 644 /tmp/hostfile.release" > /dev/null 2>&1 || true
		hf=/tmp/hostfile.release
	fi
	if out=$(mpi_hello "$hf" "$(same_release | wc -l)" 2>&1); then
		for n in $(same_release); do grep -q "$n" <<< "$out" || miss+=("$n"); done
		[ ${#miss[@]} -eq 0 ] && ok "$name" || not_ok "$name" "no rank on: ${miss[*]}" "$out"
	else
		not_ok "$name" "$out"
	fi
	[ -n "$others" ] || return 0
	name="mpi: across releases the hello fails for the one reason: ${others% } has no orted (Open MPI 4.1's daemon; 5.0 has prted)"
	if out=$(mpi_hello /etc/hpcinit/hostfile.openmpi "$((N + 1))" 2>&1); then
		not_ok "$name" "it ran (the releases' Open MPI launch each other now: make the check a plain hello again)" "$out"
	elif grep -q 'orted: command not found' <<< "$out"; then
		ok "$name"
		grep -m1 'orted: command not found' <<< "$out" | sed 's/^/#   head: mpirun said: /'
	else
		not_ok "$name" "$out"
	fi
}

# (5) hpcinit verify (its own MPI check) from a compute, whose spec has mpi:.
# --release with c1 of another release: verify on c1 names a node of the
# head's release that lacks its Open MPI's daemon (mpi.verify.mixed-mpi;
# mpirun names the first it lost, head or c2).
check_verify() {
	local out name
	if [ "$(suite_of c1)" != bookworm ]; then
		name="verify: hpcinit verify on c1 ($(suite_of c1), Open MPI 5) says the cluster runs two Open MPI releases (mpi.verify.mixed-mpi)"
		out=$(vm_exec c1 600 'hpcinit verify --json; echo "rc=$?"' 2>&1) || true
		if grep -q '"tag": *"mpi.verify.mixed-mpi"' <<< "$out" && grep -qE '(head|c2) has no prted, the daemon of this node.s Open MPI 5\.x' <<< "$out" &&
			grep -q '^rc=1$' <<< "$out"; then
			ok "$name"
			grep -oE '(head|c2) has no prted[^"]*' <<< "$out" | head -1 | sed 's/^/#   /'
		else
			not_ok "$name" "$out"
		fi
		return
	fi
	# the computes' mpi.software_fabric: over UCX on rxe0 (check fabric proves the counters)
	if out=$(vm_exec c1 600 'hpcinit verify' 2>&1) && grep -q "^result: ready" <<< "$out" &&
		grep -q "^mpi  *ok" <<< "$out" && grep -qF "fabric rdma: UCX on rxe0:1" <<< "$out"; then
		ok "verify: hpcinit verify runs its MPI check across all VMs, over UCX on rxe0"
		grep '^mpi' <<< "$out" | sed 's/^/#   /'
	else
		not_ok "verify: hpcinit verify runs its MPI check across all VMs, over UCX on rxe0" "$out"
	fi
}
