# tests/vm/cluster.sh's checks, sourced by it (not run alone): tests/vmcheck/*.sh inside the VMs, and the boot-to-ready benchmark.
# Each check_NAME is run by --checks NAME; ok/not_ok, each_vm, vm_exec and the
# cluster's variables are cluster.sh's.
# shellcheck shell=bash

# tests/vmcheck/*.sh: proofs that only a real kernel and systemd can give,
# run inside the VMs.  Where each runs and what it needs after (it changes
# the node): memlock-systemd.sh on c1, then the spec is applied again;
# nfs-self-probe.sh on the head (it stops and starts the NFS server), then
# the spec's exports are applied again.  Any other file runs on c1.
vmcheck_where() {
	case $1 in
	nfs-*) echo head ;;
	*) echo c1 ;;
	esac
}
check_vmcheck() {
	local f b v out args
	for f in "$SRC"/tests/vmcheck/*.sh; do
		b=$(basename "$f")
		# --vmcheck names the files to run (CI: the quick ones); default all
		[ -z "$VMCHECK" ] || [[ " $VMCHECK " == *" $b "* ]] || continue
		v=$(vmcheck_where "$b")
		args=
		case $b in nfs-self-probe.sh) args=$NET.0/24 ;; esac
		local t0=$SECONDS
		# the file runs hpcinit with a spec of its own and reads the status
		# back: the node's refresh and check timers must not run the real spec
		# meanwhile (seen on real VMs: a refresh made status ready between the
		# file's runs); a file that wants one starts its unit itself
		if out=$(vm_exec "$v" 600 "systemctl stop hpcinit-refresh.timer hpcinit-check.timer
			while systemctl is-active -q hpcinit-refresh.service hpcinit-check.service; do sleep 1; done
			sh /hpcvm/vmcheck/$b $args" 2>&1); then
			ok "vmcheck: $b on $v ($((SECONDS - t0)) s)"
			grep '^ok - ' <<< "$out" | sed 's/^/#   /'
		else
			not_ok "vmcheck: $b on $v" "$out"
		fi
		# put the node back to its own spec (and prove it is back)
		if ! out=$(vm_exec "$v" 300 '
			hpcinit apply > /tmp/reapply.txt 2>&1; rc=$?
			systemctl start hpcinit-refresh.timer hpcinit-check.timer
			[ $rc = 0 ] || { cat /tmp/reapply.txt; exit 1; }
			systemctl is-active -q hpcinit-refresh.timer hpcinit-check.timer ||
				{ echo "hpcinit-refresh.timer or hpcinit-check.timer is not active again"; exit 1; }
			[ "$(hostname)" = head ] && { exportfs -v | grep -q "^/shared" || { echo "/shared not exported again"; exit 1; }; }
			m=$(systemctl show -p DefaultLimitMEMLOCK --value)
			want=infinity; [ "$(hostname)" = head ] && want=$m
			[ "$m" = "$want" ] || [ "$m" = 18446744073709551615 ] || { echo "DefaultLimitMEMLOCK=$m after apply"; exit 1; }' 2>&1); then
			not_ok "vmcheck: $v back to its spec after $b" "$out"
		fi
	done
}

# Boot-to-ready split of every VM (tests/bench/vm-boot.sh prints it; not asserted).
# Times are from qemu's start (power-on); kernel start from the agent's clock
# and /proc/uptime, the rest from systemd's monotonic timestamps.
check_bench() {
	local n out k
	printf '# %-6s %9s %9s %11s %11s %11s %11s %10s %10s\n' VM kernel userspace cloud-init hpcinit-go \
		hpcinit-ok cloud-final run-ms rerun-ms
	for n in $(names); do
		k=$(awk -v l="${T_LAUNCH[$n]}" '{printf "%.1f", $1 - $2 - l}' "$W/vm/$n/out/agent-start")
		out=$(vm_exec "$n" 120 '
			mono() { systemctl show -p "$2" --value "$1"; }
			s() { awk -v u="$1" "BEGIN{printf \"%.1f\", u / 1e6}"; }
			ud=$(mono systemd-journald.service InactiveExitTimestampMonotonic)
			ci=$(mono cloud-init-local.service InactiveExitTimestampMonotonic)
			hs=$(mono hpcinit.service InactiveExitTimestampMonotonic)
			he=$(mono hpcinit.service ActiveEnterTimestampMonotonic)
			cf=$(mono cloud-final.service ActiveEnterTimestampMonotonic)
			[ "$cf" != 0 ] || cf=$(mono cloud-final.service ExecMainExitTimestampMonotonic)
			run=$(journalctl -b -u hpcinit.service -o cat | sed -n "s/^result: .*, \([0-9]*\) ms)$/\1/p" | head -1)
			re=$(hpcinit apply 2>&1 | sed -n "s/^result: .*, \([0-9]*\) ms)$/\1/p")
			echo "$(s "$ud") $(s "$ci") $(s "$hs") $(s "$he") $(s "$cf") ${run:-?} ${re:-?}"' 2>&1) ||
			{ not_ok "bench: timestamps from $n" "$out"; return; }
		read -r ud ci hs he cf run re <<< "$out"
		awk -v n="$n" -v k="$k" -v ud="$ud" -v ci="$ci" -v hs="$hs" -v he="$he" -v cf="$cf" -v run="$run" -v re="$re" \
			'BEGIN{printf "# %-6s %8.1fs %8.1fs %10.1fs %10.1fs %10.1fs %10.1fs %10s %10s\n", n, k, k + ud, k + ci, k + hs, k + he, k + cf, run, re}'
	done
	echo "# (seconds after power-on: kernel start, userspace (journald), cloud-init-local start,"
	echo "#  hpcinit.service start and ready, cloud-final done; run-ms: hpcinit's boot run,"
	echo "#  waits for the NFS server and peers included; rerun-ms: a converged hpcinit apply,"
	echo "#  hpcinit's own share once its server and peers are up)"
	ok "bench: boot-to-ready split of every VM printed"
}
