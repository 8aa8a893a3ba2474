#!/bin/bash
# One live state after boot: hpcinit check records what status, the health
# endpoint and the textfile read.  The scenario (the VM check repeats it on
# a booted node):
#   1. apply: ready everywhere
#   2. a failure a job would hit appears after boot (a limits.d file lowers
#      memlock below memlock.limit), hpcinit check runs: failed everywhere
#   3. repaired (the file goes), hpcinit check: ready everywhere again
#   4. drift only (the mode of hpcinit's own limits file, what apply quietly
#      restores): check exits 1 (drift) but the node stays ready, with
#      hpcinit_drift and "drift:" in status; apply restores it
#   5. drift never clears a failure apply left
#   6. a check that cannot get the run lock (an apply runs) records nothing;
#      a check --only records nothing; a check writes nothing but its status
#   7. a wall clock stepped back: a failed apply made under the clock ahead does not
#      outrank the clean check after it
# "Everywhere" is: the Azure health answer (hpcinit health under
# systemd-socket-activate, asked with curl as health-endpoint.sh does),
# hpcinit_ready and hpcinit_state from a real node_exporter's scrape, and
# hpcinit status's exit code and result line.
. "$(dirname "$0")/lib.sh"
command -v systemd-socket-activate >/dev/null || { echo "systemd-socket-activate not found (package systemd)"; exit 1; }
command -v curl >/dev/null || { echo "curl not found"; exit 1; }
command -v flock >/dev/null || { echo "flock not found (util-linux)"; exit 1; }
NE=$(command -v prometheus-node-exporter || true)
[ -n "$NE" ] || { echo "prometheus-node-exporter not found (Debian package prometheus-node-exporter)"; exit 1; }
R=$T/root
mkroot "$R"
SPEC=$FIX/core/status.yaml
export HPCINIT_ADDRESS=198.18.0.1
D=$R/var/lib/prometheus/node-exporter
mkdir -p "$D"
OURS=$R/etc/security/limits.d/90-hpcinit.conf
SITE=$R/etc/security/limits.d/zz-site.conf
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

HPORT=$(free_port)
systemd-socket-activate -l "127.0.0.1:$HPORT" --inetd -a "$HPCINIT" health --root "$R" 2>"$T/activate.err" &
cleanup_add "kill $! 2>/dev/null || true"
NPORT=$(free_port)
"$NE" --web.listen-address="127.0.0.1:$NPORT" --collector.disable-defaults --collector.textfile \
	--collector.textfile.directory="$D" >"$T/ne.log" 2>&1 &
cleanup_add "kill $! 2>/dev/null || true"
for _ in $(seq 100); do
	grep -q "Listening on" "$T/activate.err" && curl -s "http://127.0.0.1:$NPORT/metrics" >/dev/null && break
	sleep 0.1
done
check "socket activation and node_exporter listen" grep -q "Listening on" "$T/activate.err"

run() { run_hpc "$T/$1" "$2" --root "$R" -c "$SPEC" --hostname node01 --kernel-release 6.9.1 "${@:3}"; }
# health NAME: the ApplicationHealthState the extension would parse ("none": no valid answer)
health() {
	curl -s -o "$T/$1.health" "http://127.0.0.1:$HPORT/health" || true
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ApplicationHealthState"])' \
		"$T/$1.health" 2>/dev/null || echo none
}
# agree NAME STATE: health, the scrape, hpcinit status and its exit code all say STATE
agree() {
	local name=$1 want=$2 h code ready
	case $want in
	ready) h=Healthy code=0 ready=1 ;;
	failed) h=Unhealthy code=1 ready=0 ;;
	esac
	check "$name: health answers $h" [ "$(health "$name")" = "$h" ]
	curl -s "http://127.0.0.1:$NPORT/metrics" >"$T/$name.prom" || true
	check "$name: node_exporter read the textfile" contains "$T/$name.prom" "node_textfile_scrape_error 0"
	check "$name: hpcinit_ready $ready" contains_line "$T/$name.prom" "hpcinit_ready $ready"
	check "$name: hpcinit_state $want" contains "$T/$name.prom" "hpcinit_state{state=\"$want\"} 1"
	run_hpc "$T/$name.status" status --root "$R"
	check "$name: hpcinit status exits $code" [ "$rc" -eq "$code" ]
	check "$name: hpcinit status says $want" contains "$T/$name.status" "result: $want (exit $code"
}

# 1. The boot's apply: ready.
run a1 apply
check "apply ready" [ "$rc" -eq 0 ]
agree boot ready
run c1 check
check "check in sync exits 0" [ "$rc" -eq 0 ]
agree in-sync ready
check "the check is a part of the state" contains "$T/in-sync.prom" 'hpcinit_last_run_exit_code{part="check"} 0'
check "status names the last check" grep -q '^last check .*in-sync (exit 0' "$T/in-sync.status"

# 2. After boot, a site file lowers memlock below memlock.limit: a job gets 8 MiB.
printf '*  soft  memlock  8192\n' >"$SITE"
run c2 check
check "check finds it (exit 1)" [ "$rc" -eq 1 ]
check "check says what a job gets" contains "$T/c2" "zz-site.conf:1 sets memlock 8192 KiB"
agree broken failed
check "broken: the reason by tag" \
	contains "$T/broken.prom" 'hpcinit_finding{severity="failed",step="memlock",tag="memlock.limits.overridden"} 1'
check "broken: status shows memlock failed, from the check" grep -qE '^memlock +failed +[0-9]+ms +check ' "$T/broken.status"

# 3. Repaired: the next check turns everything back.
rm -f "$SITE"
run c3 check
check "check in sync again (exit 0)" [ "$rc" -eq 0 ]
agree repaired ready

# 4. Drift only: apply would restore the mode of its file; nothing a job hits.
chmod 0600 "$OURS"
run c4 check
check "check reports the drift (exit 1)" [ "$rc" -eq 1 ]
check "check says what drifted" contains "$T/c4" "90-hpcinit.conf: wrong mode or owner"
agree drift ready
check "drift: hpcinit_drift for memlock" contains "$T/drift.prom" 'hpcinit_drift{step="memlock"} 1'
check "drift: not for the others" contains "$T/drift.prom" 'hpcinit_drift{step="kernel"} 0'
check "drift: status says so" contains "$T/drift.status" "drift: memlock (what hpcinit apply restores"
check "drift: the step reads drift" grep -qE '^memlock +drift +[0-9]+ms +check ' "$T/drift.status"
check "drift: status.json lists it" [ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["drift"])' "$R/run/hpcinit/status.json")" = "['memlock']" ]
run a2 apply
check "apply restores the mode" [ "$(stat -c %a "$OURS")" = 644 ]
agree restored ready
curl -s "http://127.0.0.1:$NPORT/metrics" >"$T/restored2.prom" || true
check "restored: hpcinit_drift 0" contains "$T/restored2.prom" 'hpcinit_drift{step="memlock"} 0'

# 5. Drift does not clear a failure the apply left: only a clean check or a run that converges.
printf '*  soft  memlock  8192\n' >"$SITE"
run a3 apply
check "apply with the site file fails" [ "$rc" -eq 1 ]
rm -f "$SITE"
chmod 0600 "$OURS"
run c5 check
check "check finds drift (exit 1)" [ "$rc" -eq 1 ]
check "check finds only drift" grep -qE '^memlock +drift ' "$T/c5"
agree drift-after-failure failed
chmod 0644 "$OURS"
run c6 check
check "check in sync" [ "$rc" -eq 0 ]
agree clean-check ready

# 6a. A check while another run holds the lock waits --lock-timeout, then runs without recording.
printf '*  soft  memlock  8192\n' >"$SITE"
# the holder: one process (exec), so killing it releases the lock
(exec 9>>"$R/run/hpcinit/lock"; flock 9; exec sleep 30) &
LOCKER=$!
cleanup_add "kill $LOCKER 2>/dev/null || true"
for _ in $(seq 50); do flock -n "$R/run/hpcinit/lock" true || break; sleep 0.1; done
rc=0
hpcinit check --json --lock-timeout 1s --root "$R" -c "$SPEC" --hostname node01 --kernel-release 6.9.1 \
	>"$T/c7.json" 2>"$T/c7.err" || rc=$?
check "locked out: the check still runs (exit 1: it finds the failure)" [ "$rc" -eq 1 ]
check "locked out: it says it is not recorded" contains "$T/c7.err" "check: not recorded (it could not take the run lock)"
check "locked out: --json says recorded false" \
	[ "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["recorded"])' "$T/c7.json")" = False ]
agree locked-out ready
kill "$LOCKER"
wait "$LOCKER" 2>/dev/null || true
# 6b. check --only is a look: not recorded.
run c8 check --only memlock
check "check --only finds it" [ "$rc" -eq 1 ]
agree only-look ready
# 6c. A recorded check writes only hpcinit's status files and the textfile.
(cd "$R" && find . -path ./run/hpcinit -prune -o -path ./var/lib/hpcinit -prune -o -path ./var/lib/prometheus -prune \
	-o -printf '%y %m %s %T@ %p\n' | sort) >"$T/before"
run c9 check
check "the recorded check finds it" [ "$rc" -eq 1 ]
(cd "$R" && find . -path ./run/hpcinit -prune -o -path ./var/lib/hpcinit -prune -o -path ./var/lib/prometheus -prune \
	-o -printf '%y %m %s %T@ %p\n' | sort) >"$T/after"
check "check changed nothing else under the root" same_file "$T/after" "$T/before"
agree recorded failed
rm -f "$SITE"
run c10 check
agree end ready

# 7. A wall clock stepped back (600 s ahead, then put right, as NTP does): the apply made under
#    the wrong clock does not outrank the check after it (this boot's runs are ordered by the
#    boot clock, started_boot_ms: status.c).  The apply's part gets the times that clock wrote.
#    The old order (the wall clock's) kept the node failed for those 600 s (fault campaign,
#    seed 3703: a node 262 s ahead, its failed apply, then ready and its record still failed).
printf '*  soft  memlock  8192\n' >"$SITE"
run a4 apply
check "apply with the site file fails" [ "$rc" -eq 1 ]
python3 - "$R/run/hpcinit/apply.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["started"] += 600
d["started_ms"] += 600000
json.dump(d, open(sys.argv[1], "w"))
PY
rm -f "$SITE"
run c11 check
check "the clock put right, the check in sync (exit 0)" [ "$rc" -eq 0 ]
agree clock-back ready
done_testing
