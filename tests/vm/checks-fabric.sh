# tests/vm/cluster.sh's checks, sourced by it (not run alone): The fabric on Soft-RoCE: rdma, rdma_cm, memlock, MPI over the fabric and
# its memlock limit, the verbs benchmark beside perftest.
# Each check_NAME is run by --checks NAME; ok/not_ok, each_vm, vm_exec and the
# cluster's variables are cluster.sh's.
# shellcheck shell=bash

# (3) RDMA on Soft-RoCE: the rdma module opens rxe0, registers memory, names it honestly.
check_rdma() {
	each_vm "rdma: rxe0 enumerated, opened, reg_mr, Ethernet, rate, named as software RoCE" '
		[ "$(hostname)" = head ] && exit 0
		set -e
		out=$(hpcinit check --only rdma 2>&1) || { echo "$out"; exit 1; }
		for want in "rxe0: software RoCE on eth0 (fw 0.0.0, not an HCA), 2.5 Gb/s Ethernet, verbs probe ok (reg_mr 64 MiB)" \
			"rxe0: software RoCE device on eth0 (rdma_rxe), not an HCA" \
			"fw 0.0.0, 1 port(s), registered 64 MiB (memlock unlimited" \
			"rxe0 port 1: ACTIVE, LinkUp, 2.5 Gb/sec (1X SDR), Ethernet"; do
			grep -qF "$want" <<< "$out" || { echo "missing: $want"; echo "$out"; exit 1; }
		done'
}

# (3) rdma_cm between two VMs over rxe: c1 resolves c2's address and route
# to the soft device and connects (rping: rdma_resolve_addr,
# rdma_resolve_route, rdma_connect, RDMA reads and writes).
check_rdmacm() {
	local srv=c2 cli=c1 a out
	[ "$N" -ge 2 ] || { not_ok "rdmacm: c1 reaches c2 with rdma_cm over rxe" "needs 2 computes"; return; }
	a=$(addr_of "$srv")
	vm_exec "$srv" 30 "rm -f /tmp/rping-srv.*; (timeout 120 rping -s -a $a -v -C 3 > /tmp/rping-srv.out 2>&1; echo \$? > /tmp/rping-srv.rc) > /dev/null 2>&1 &
		sleep 2; rdma resource show cm_id | grep -q LISTEN || { echo no rping listener; cat /tmp/rping-srv.out; exit 1; }" > /dev/null 2>&1 || true
	if out=$(vm_exec "$cli" 120 "timeout 60 rping -c -a $a -v -C 3 2>&1; rc=\$?; echo rc=\$rc; exit \$rc" 2>&1) &&
		[ "$(grep -c '^ping data: rdma-ping-' <<< "$out")" -ge 3 ]; then
		ok "rdmacm: c1 reaches c2 with rdma_cm over rxe (rping: resolve address and route, connect, 3 RDMA pings)"
		grep -m1 '^ping data' <<< "$out" | sed 's/^/#   /'
	else
		not_ok "rdmacm: c1 reaches c2 with rdma_cm over rxe" "$out" "server: $(vm_exec "$srv" 30 'cat /tmp/rping-srv.out /tmp/rping-srv.rc' 2>&1)"
	fi
}

# (4) memlock: a PAM login and a systemd service get the spec's limit.
check_memlock() {
	# Both custom-data files leave memlock.limit at its default: unlimited.
	each_vm "memlock: ssh login (PAM) and a systemd service get the spec's limit" '
		set -e
		l=$(runuser -u azureuser -- ssh -o BatchMode=yes -o StrictHostKeyChecking=yes $(hostname) "ulimit -l")
		[ "$l" = unlimited ] || { echo "ssh login: ulimit -l = $l, want unlimited"; exit 1; }
		l=$(systemd-run --wait --pipe --quiet sh -c "ulimit -l")
		[ "$l" = unlimited ] || { echo "systemd service: ulimit -l = $l, want unlimited"; exit 1; }'
}

# (3, 5) MPI over real verbs: the computes' custom-data has
# mpi.software_fabric: true (subst), so the files hpcinit wrote at boot
# (Open MPI's openmpi-mca-params.conf, /etc/ucx/ucx.conf) make Soft-RoCE rxe0
# the fabric.  A job launched from c1 as azureuser with no fabric option of
# its own (what users type) must carry its messages over rxe0's verbs: on
# c1 and on c2, rxe0's own counters move by at least its messages and its
# payload in packets of at most 4 KiB (the largest RoCE MTU), and TCP's
# segments (/proc/net/snmp) stay below a quarter of what the payload would
# take over TCP.  Then the memlock proof: with a limits.d file lowering
# azureuser's memlock to 64 KiB (a new PAM session, as the job's ssh and
# runuser sessions are), hpcinit check fails predicting it and the same job
# fails.  Short runs of hpcinit-mpiverify: 10 round trips a size, 1 of 4 MiB
# (and its 2 warm-up ones).  --release with c1 and c2 of two releases: the
# job and the memlock proof run between the compute of the head's release
# and the head (fabric_pair in cluster.sh; the head's seed then has the
# computes' fabric sections), and rping proves verbs across the releases.
FABRIC_ITERS=10 FABRIC_BW_ITERS=1
fabric_job() {          # TIMEOUT_S: the job's output, its exit status
	local a b
	read -r a b <<< "$(fabric_pair)"
	vm_exec "$a" $(($1 + 60)) "cd /tmp && timeout $1 runuser -u azureuser -- mpirun --host $a:1,$b:1 -np 2 --map-by node \
		--bind-to none --mca plm_rsh_args '-o BatchMode=yes' \
		/usr/libexec/hpcinit-mpiverify --iters $FABRIC_ITERS --bw-iters $FABRIC_BW_ITERS 2>&1"
}
# "sent_pkts rcvd_pkts tcp_out_segs" of NAME
fabric_counters() {
	vm_exec "$1" 30 'h=/sys/class/infiniband/rxe0/ports/1/hw_counters
		echo "$(cat $h/sent_pkts) $(cat $h/rcvd_pkts) $(awk "/^Tcp:/ { if (++n == 2) print \$12 }" /proc/net/snmp)"'
}
check_fabric() {
	local n out rc t0 msgs bytes pkts tcpmax msgs_l=() pair a b
	declare -A before=() after=()
	[ "$N" -ge 2 ] || { not_ok "fabric: an MPI job over rxe0 between c1 and c2" "needs 2 computes"; return; }
	pair=$(fabric_pair)
	read -r a b <<< "$pair"
	fabric_params
	[ "$(suite_of c1)" = "$(suite_of c2)" ] || check_fabric_releases
	for n in $pair; do before[$n]=$(fabric_counters "$n" 2>&1) || true; done
	t0=$SECONDS
	out=$(fabric_job 240 2>&1) && rc=0 || rc=$?
	for n in $pair; do after[$n]=$(fabric_counters "$n" 2>&1) || true; done
	# what rank 0 sends (and echoes back): 3 sizes of iters + iters/10 + 1
	# round trips, then bw_iters + 2 of 4 MiB
	msgs=$((3 * (FABRIC_ITERS + FABRIC_ITERS / 10 + 1) + FABRIC_BW_ITERS + 2))
	bytes=$(((FABRIC_BW_ITERS + 2) * 4194304))
	pkts=$((bytes / 4096))
	tcpmax=$((bytes / 1448 / 4))
	if [ "$rc" != 0 ] || ! grep -q '^result status=ok' <<< "$out"; then
		not_ok "fabric: an MPI job with the files hpcinit wrote runs between $a and $b (rc $rc, $((SECONDS - t0)) s)" "$out"
		return
	fi
	ok "fabric: an MPI job with the files hpcinit wrote runs between $a and $b ($((SECONDS - t0)) s)"
	grep '^pair' <<< "$out" | sed 's/^/#   /'
	for n in $pair; do
		local s0 r0 p0 s1 r1 p1
		read -r s0 r0 p0 <<< "${before[$n]}"
		read -r s1 r1 p1 <<< "${after[$n]}"
		[[ "$s0$r0$p0$s1$r1$p1" =~ ^[0-9]+$ ]] || { msgs_l+=("$n: counters unreadable: before '${before[$n]}', after '${after[$n]}'"); continue; }
		echo "#   $n: rxe0 sent_pkts +$((s1 - s0)), rcvd_pkts +$((r1 - r0)); TCP OutSegs +$((p1 - p0)) (job: $msgs messages a way, $bytes bytes of 4 MiB messages a way)"
		[ $((s1 - s0)) -ge "$msgs" ] && [ $((s1 - s0)) -ge "$pkts" ] || msgs_l+=("$n: rxe0 sent $((s1 - s0)) packets, want >= $msgs messages and >= $pkts packets ($bytes bytes / 4096)")
		[ $((r1 - r0)) -ge "$msgs" ] && [ $((r1 - r0)) -ge "$pkts" ] || msgs_l+=("$n: rxe0 received $((r1 - r0)) packets, want >= $msgs and >= $pkts")
		[ $((p1 - p0)) -lt "$tcpmax" ] || msgs_l+=("$n: TCP sent $((p1 - p0)) segments, want < $tcpmax (a quarter of $bytes bytes in 1448-byte segments)")
	done
	[ ${#msgs_l[@]} -eq 0 ] && ok "fabric: its messages went over rxe0's verbs (rxe0's counters on $a and $b), not TCP" ||
		not_ok "fabric: its messages went over rxe0's verbs (rxe0's counters on $a and $b), not TCP" "${msgs_l[@]}"
	check_fabric_memlock
}
fabric_params() {
	local who="the computes'" head=skip
	[[ " $(fabric_pair) " != *" head "* ]] || { who="every VM's"; head=check; }
	each_vm "fabric: $who Open MPI params and ucx.conf make rxe0 the fabric (mpi.software_fabric)" '
		[ "$(hostname)" = head ] && [ '"$head"' = skip ] && exit 0
		for f in "/etc/openmpi/openmpi-mca-params.conf:pml = ucx" "/etc/openmpi/openmpi-mca-params.conf:pml_ucx_devices = any" \
			"/etc/ucx/ucx.conf:UCX_NET_DEVICES=rxe0:1" "/etc/ucx/ucx.conf:UCX_UD_VERBS_ETH_DGID_CHECK=n"; do
			grep -qxF "${f#*:}" "${f%%:*}" || { echo "${f%%:*} has no line \"${f#*:}\":"; cat "${f%%:*}"; exit 1; }
		done'
}
# --release, c1 and c2 of two releases: no MPI job spans two Open MPI
# releases (check mpi), so the fabric between them is proven with verbs
# alone: rping (rdma_cm, RDMA reads and writes; rdma-core 56 beside 42) of
# 100 x 65535 bytes from c1 to c2 over rxe0, rxe0's own counters on both
# moving by its payload in packets of at most 4 KiB.
check_fabric_releases() {
	local n out a s0 r0 s1 r1 msgs_l=() pkts=$((100 * 65535 / 4096))
	local name="fabric: verbs over rxe0 between c1 ($(suite_of c1)) and c2 ($(suite_of c2)): rping 100 x 64 KiB, rxe0's counters on both"
	declare -A before=() after=()
	a=$(addr_of c2)
	for n in c1 c2; do before[$n]=$(fabric_counters "$n" 2>&1) || true; done
	vm_exec c2 30 "rm -f /tmp/rping-big.*; (timeout 200 rping -s -a $a -C 100 -S 65535 > /tmp/rping-big.out 2>&1 &) ; sleep 2" > /dev/null 2>&1 || true
	out=$(vm_exec c1 200 "timeout 180 rping -c -a $a -C 100 -S 65535 2>&1 | tail -5; echo rc=\${PIPESTATUS[0]}" 2>&1) || true
	for n in c1 c2; do after[$n]=$(fabric_counters "$n" 2>&1) || true; done
	grep -q '^rc=0$' <<< "$out" || { not_ok "$name" "$out" "server: $(vm_exec c2 30 'cat /tmp/rping-big.out' 2>&1)"; return; }
	read -r s0 _ _ <<< "${before[c1]}"; read -r s1 _ _ <<< "${after[c1]}"
	[[ "$s0$s1" =~ ^[0-9]+$ ]] && [ $((s1 - s0)) -ge "$pkts" ] || msgs_l+=("c1: rxe0 sent_pkts ${before[c1]} -> ${after[c1]}, want +$pkts")
	read -r _ r0 _ <<< "${before[c2]}"; read -r _ r1 _ <<< "${after[c2]}"
	[[ "$r0$r1" =~ ^[0-9]+$ ]] && [ $((r1 - r0)) -ge "$pkts" ] || msgs_l+=("c2: rxe0 rcvd_pkts ${before[c2]} -> ${after[c2]}, want +$pkts")
	if [ ${#msgs_l[@]} -eq 0 ]; then
		ok "$name"
		echo "#   c1 rxe0 sent_pkts +$((s1 - s0)), c2 rxe0 rcvd_pkts +$((r1 - r0)) (payload 100 x 65535 bytes: >= $pkts packets)"
	else
		not_ok "$name" "${msgs_l[@]}" "$out"
	fi
}
check_fabric_memlock() {
	local out rc pair a
	pair=$(fabric_pair)
	a=${pair%% *}
	local name="fabric: memlock 64 KiB for azureuser on $pair: hpcinit check on $a predicts it, the verbs job fails"
	local chk job n
	for n in $pair; do
		vm_exec "$n" 30 "printf 'azureuser - memlock 64\n' > /etc/security/limits.d/99-vmcheck.conf" > /dev/null 2>&1
	done
	chk=$(vm_exec "$a" 120 'hpcinit check --only memlock,rdma 2>&1; echo "rc=$?"' 2>&1) || true
	# UCX's ibv_reg_mr fails (Cannot allocate memory) and it keeps trying:
	# the job ends at its timeout (seen on these VMs), or sooner
	job=$(fabric_job 45 2>&1) && rc=0 || rc=$?
	# Back to the spec, and the nodes' records say ready again: a record left
	# failed (memlock.limits.overridden) took both out of c1's hostfiles
	# (hostfile.exclude: failed) until their next timer run, and
	# vmcheck rdma-cm-peer.sh on c1 found no peer in them (seen).
	local back=()
	for n in $pair; do
		out=$(vm_exec "$n" 120 'rm -f /etc/security/limits.d/99-vmcheck.conf
			pkill -u azureuser -x mpirun; pkill -u azureuser -x orted; pkill -u azureuser -f /usr/libexec/hpcinit-mpiverify
			hpcinit apply > /tmp/fabric-reapply.txt 2>&1 || { cat /tmp/fabric-reapply.txt; exit 1; }' 2>&1) ||
			back+=("$n: hpcinit apply after the memlock proof:" "$out")
	done
	[ ${#back[@]} -eq 0 ] && ok "fabric: $pair ready again after the memlock proof (hpcinit apply)" ||
		not_ok "fabric: $pair ready again after the memlock proof (hpcinit apply)" "${back[@]}"
	if grep -q '^rc=1$' <<< "$chk" && grep -q '99-vmcheck.conf:1 sets memlock 64 KiB' <<< "$chk" &&
		grep -q 'reg-mr-enomem: rxe0: ibv_reg_mr of .* failed with ENOMEM' <<< "$chk" && [ "$rc" != 0 ] &&
		! grep -q '^result status=ok' <<< "$job" && grep -q 'ibv_reg_mr(.*) failed: Cannot allocate memory' <<< "$job"; then
		ok "$name"
		grep -m2 -E '^hpcinit\[(memlock|rdma)\]: error' <<< "$chk" | sed 's/^/#   check: /'
		grep -m1 'ibv_reg_mr(.*) failed' <<< "$job" | sed 's/^/#   job: /'
	else
		not_ok "$name" "hpcinit check --only memlock,rdma:" "$chk" "the job (rc $rc):" "$job"
	fi
}

# Benchmark (tests/bench/vm-verbs.sh; not a default check): hpcinit verify
# over rxe0 (the computes' mpi.software_fabric) beside perftest between the
# same two VMs in the same run: ib_send_lat (8 bytes, its typical one-way
# latency: the median, as verify's is the median round trip halved) and
# ib_write_bw (4 MiB messages, its average), both on rxe0 with the
# IPv4-mapped RoCE v2 GID (index 1).  Printed, not asserted; a baseline that
# did not run fails the check and no ratio is printed.
perftest_pair() {       # TOOL SERVER CLIENT ARGS...: the client's output
	local tool=$1 srv=$2 cli=$3 a
	shift 3
	a=$(addr_of "$srv")
	vm_exec "$srv" 30 "rm -f /tmp/pt-srv.out; (timeout 150 $tool -d rxe0 -x 1 -F $* > /tmp/pt-srv.out 2>&1 &); sleep 1" > /dev/null 2>&1 || true
	sleep 1
	vm_exec "$cli" 180 "timeout 140 $tool -d rxe0 -x 1 -F $* $a 2>&1"
}
check_verbsbench() {
	local out pair a b lat bw plat pbw t0
	t0=$SECONDS
	out=$(vm_exec c1 900 'hpcinit verify' 2>&1) || true
	pair=$(grep -m1 -oE 'pair [^ ]+ <-> [^ ]+: latency [0-9.]+ us .*, bandwidth [0-9.]+ MiB/s' <<< "$out") || true
	if ! grep -q "^result: ready" <<< "$out" || ! grep -qF "UCX on rxe0:1" <<< "$out" || [ -z "$pair" ]; then
		not_ok "verbsbench: hpcinit verify over rxe0 on c1 ($((SECONDS - t0)) s)" "$out"
		return
	fi
	ok "verbsbench: hpcinit verify over rxe0 on c1 ($((SECONDS - t0)) s)"
	read -r _ a _ b _ lat _ <<< "$pair"
	b=${b%:}
	bw=$(sed -E 's/.*bandwidth ([0-9.]+) MiB\/s.*/\1/' <<< "$pair")
	out=$(perftest_pair ib_send_lat "$b" "$a" -n 1000 -s 8 2>&1) || true
	plat=$(awk '$1 == 8 && NF >= 5 { print $5 }' <<< "$out")
	[ -n "$plat" ] || { not_ok "verbsbench: perftest ib_send_lat $a -> $b on rxe0 (the baseline)" "$out"; return; }
	out=$(perftest_pair ib_write_bw "$b" "$a" -n 20 -s 4194304 2>&1) || true
	pbw=$(awk '$1 == 4194304 && NF >= 4 { print $4 }' <<< "$out")
	[ -n "$pbw" ] || { not_ok "verbsbench: perftest ib_write_bw $a -> $b on rxe0 (the baseline)" "$out"; return; }
	ok "verbsbench: perftest ib_send_lat and ib_write_bw $a -> $b on rxe0 (the baseline)"
	printf '# %-34s %14s %18s\n' "$a <-> $b over rxe0" "latency (us)" "bandwidth (MiB/s)"
	printf '# %-34s %14s %18s\n' "hpcinit verify (MPI over UCX)" "$lat" "$bw"
	printf '# %-34s %14s %18s\n' "perftest (ib_send_lat, ib_write_bw)" "$plat" "$pbw"
	awk -v l="$lat" -v pl="$plat" -v b="$bw" -v pb="$pbw" \
		'BEGIN { printf "# %-34s %14.2f %18.2f\n", "verify / perftest", l / pl, b / pb }'
	echo "#   (verify: median round trip halved, worst of 8/64/512 B; 4 MiB ping-pong. perftest: ib_send_lat"
	echo "#    8 B t_typical, ib_write_bw 4 MiB BW average in perftest's MB/sec, 2^20 bytes)"
}
