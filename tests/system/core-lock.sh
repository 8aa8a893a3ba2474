#!/bin/bash
# Two runs never interleave: the second waits for the lock, or gives up with a clear message.
. "$(dirname "$0")/lib.sh"
R=$T/root
mkroot "$R"
SPEC=$FIX/core/memlock.yaml
mkdir -p "$R/run/hpcinit"

# Hold the lock from this shell: apply waits, says so, and succeeds once the lock is
# released.  The release waits for the "waiting" message, not for a fixed time, so a slow
# start (valgrind) cannot let apply in before the lock is held.
exec {lockfd}>"$R/run/hpcinit/lock"
flock "$lockfd"
start=$(date +%s%N)
hpcinit apply --root "$R" -c "$SPEC" >"$T/wait" 2>&1 {lockfd}>&- &
apid=$!
cleanup_add "kill $apid 2>/dev/null || true"
for _ in $(seq 600); do grep -q 'waiting up to' "$T/wait" 2>/dev/null && break; sleep 0.1; done
sleep 0.6
flock -u "$lockfd"
exec {lockfd}>&-
rc=0; wait "$apid" || rc=$?
end=$(date +%s%N)
check "apply behind a held lock exits 0" [ "$rc" -eq 0 ]
check "it said it was waiting" contains "$T/wait" "holds $R/run/hpcinit/lock; waiting up to 600 s"
check "it waited for the holder (> 0.5 s)" [ $(((end - start) / 1000000)) -gt 500 ]

# Held longer than --lock-timeout: exit 1, clear message, nothing written.
rm -rf "$R/etc/security/limits.d/90-hpcinit.conf" "$R/etc/systemd"
exec {lockfd}>"$R/run/hpcinit/lock"
flock "$lockfd"
run_hpc "$T/busy" apply --lock-timeout 1s --root "$R" -c "$SPEC" {lockfd}>&-
flock -u "$lockfd"
exec {lockfd}>&-
check "lock timeout exits 1" [ "$rc" -eq 1 ]
check "lock timeout message" contains "$T/busy" "still holds $R/run/hpcinit/lock after 1 s; let it finish (hpcinit status) or raise --lock-timeout"
check "nothing written while locked out" [ ! -e "$R/etc/security/limits.d/90-hpcinit.conf" ]

# Two applies started together: both end correctly, the files are right.
"$HPCINIT" apply --root "$R" -c "$SPEC" >"$T/a1" 2>&1 & p1=$!
"$HPCINIT" apply --root "$R" -c "$SPEC" >"$T/a2" 2>&1 & p2=$!
r1=0; wait "$p1" || r1=$?
r2=0; wait "$p2" || r2=$?
check "first concurrent apply exits 0" [ "$r1" -eq 0 ]
check "second concurrent apply exits 0" [ "$r2" -eq 0 ]
check "exactly one of them changed the files" [ "$(cat "$T/a1" "$T/a2" | grep -c 'memlock    changed')" -eq 1 ]
check "files are complete" grep -qx '\*                hard memlock unlimited' "$R/etc/security/limits.d/90-hpcinit.conf"
done_testing
