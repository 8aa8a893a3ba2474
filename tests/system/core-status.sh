#!/bin/bash
# status: a refresh never hides a failed boot.  status.json keeps the last full
# apply and the last refresh apart (each with its time), its result is the worst
# current state, and a run that cannot write its status leaves no stale "ready".
# hpcinit status exits with that state: 0 ready, 1 failed, 3 degraded, 4 unknown.
. "$(dirname "$0")/lib.sh"
R=$T/root
mkroot "$R"
SPEC=$FIX/core/status.yaml
export HPCINIT_ADDRESS=198.18.0.1
ST=$R/run/hpcinit/status.json
# jq-like: print a value of a JSON file (python3 path expression)
jv() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }

# A refresh before any apply since boot: not ready, whatever the refresh says.
run_hpc "$T/r0" refresh --root "$R" -c "$SPEC" --hostname node01
check "refresh alone exits 0" [ "$rc" -eq 0 ]
check "no apply since boot: status.json says failed" [ "$(jv "$ST" 'd["result"], d["exit_code"], d["applied"]')" = "('failed', 1, False)" ]
run_hpc "$T/s0" status --root "$R"
check "status names the missing apply" contains "$T/s0" "last apply    never since boot"
check "status exits 1: not ready without an apply" [ "$rc" -eq 1 ]

# A failed boot: kernel.expect does not match.
run_hpc "$T/a1" apply --root "$R" -c "$SPEC" --hostname node01 --kernel-release 5.15.0-1-azure
check "apply fails" [ "$rc" -eq 1 ]
check "kernel failed in the apply" [ "$(jv "$ST" '[m["status"] for m in d["modules"] if m["name"]=="kernel"][0]')" = failed ]
sleep 1.1
# The timer's refresh one minute later succeeds ...
run_hpc "$T/r1" refresh --root "$R" -c "$SPEC" --hostname node01
check "refresh exits 0" [ "$rc" -eq 0 ]
check "refresh ran discovery" contains "$T/r1" "discovery  ok"
# ... and the failure stays visible to a health checker reading the JSON.
check "status.json result stays failed" [ "$(jv "$ST" 'd["result"], d["exit_code"]')" = "('failed', 1)" ]
check "status.json keeps the apply's kernel failure" \
	[ "$(jv "$ST" '[(m["status"], m["part"]) for m in d["modules"] if m["name"]=="kernel"][0]')" = "('failed', 'apply')" ]
check "status.json has discovery from the refresh" \
	[ "$(jv "$ST" '[(m["status"], m["part"]) for m in d["modules"] if m["name"]=="discovery"][0]')" = "('ok', 'refresh')" ]
check "both parts with their times" [ "$(jv "$ST" 'd["parts"]["apply"]["exit_code"], d["parts"]["refresh"]["exit_code"], d["parts"]["refresh"]["started"] > d["parts"]["apply"]["started"]')" = "(1, 0, True)" ]
check "last-run.json is the same document" same_file "$R/var/lib/hpcinit/last-run.json" "$ST"
run_hpc "$T/s1" status --root "$R"
check "status shows the kernel failure" contains "$T/s1" "kernel     failed"
check "status says which part ran it" contains "$T/s1" "apply    running kernel 5.15.0-1-azure does not match"
check "status shows the last apply failed" contains "$T/s1" "last apply    "
check "status result is failed" contains "$T/s1" "result: failed (exit 1"
check "status exits 1 after a failed boot and a good refresh" [ "$rc" -eq 1 ]
run_hpc_stdout "$T/sj" status --json --root "$R"
check "status --json result failed" [ "$(jv "$T/sj" 'd["result"]')" = failed ]
check "status --json exits 1 too" [ "$rc" -eq 1 ]
# check --json: the worst current state and when each part last ran
run_hpc_stdout "$T/cj" check --json --root "$R" -c "$SPEC" --hostname node01 --only discovery
check "check --json carries status.json's result" [ "$(jv "$T/cj" 'd["status"]["result"], d["status"]["parts"]["apply"]["exit_code"]')" = "('failed', 1)" ]

# The boot is repaired: apply succeeds, and status says ready.
run_hpc "$T/a2" apply --root "$R" -c "$SPEC" --hostname node01 --kernel-release 6.9.1
check "apply exits 0" [ "$rc" -eq 0 ]
check "status.json ready after a good apply" [ "$(jv "$ST" 'd["result"]')" = ready ]
run_hpc "$T/s2" status --root "$R"
check "status exits 0 when ready" [ "$rc" -eq 0 ]

# Degraded (pam_limits missing for sshd: memlock degraded): status exits 3.
cp "$R/etc/pam.d/common-session" "$T/common-session"
printf 'session required pam_unix.so\n' >"$R/etc/pam.d/common-session"
run_hpc "$T/a2d" apply --root "$R" -c "$SPEC" --hostname node01 --kernel-release 6.9.1
check "apply degraded (exit 3)" [ "$rc" -eq 3 ]
run_hpc "$T/s2d" status --root "$R"
check "status exits 3 when degraded" [ "$rc" -eq 3 ]
check "status says degraded" contains "$T/s2d" "result: degraded (exit 3"
run_hpc_stdout "$T/s2dj" status --json --root "$R"
check "status --json exits 3 when degraded" [ "$rc" -eq 3 ]
cp "$T/common-session" "$R/etc/pam.d/common-session"
run_hpc "$T/a2r" apply --root "$R" -c "$SPEC" --hostname node01 --kernel-release 6.9.1
check "apply ready again" [ "$rc" -eq 0 ]

# A status.json that says neither ready, degraded nor failed is unknown (4), never ready.
cp "$ST" "$T/st.good"
sed -i 's/"result": "ready"/"result": "splendid"/' "$ST"
run_hpc "$T/sx" status --root "$R"
check "status exits 4 on a result it does not know" [ "$rc" -eq 4 ]
check "status says so" contains "$T/sx" "does not say ready, degraded or failed: status unknown"
printf '{"result": "ready", "exit_code": 1' >"$ST"
run_hpc "$T/sy" status --root "$R"
check "status exits 4 on an unreadable status.json" [ "$rc" -eq 4 ]
cp "$T/st.good" "$ST"

# A run that cannot write its status (a file-size limit: EFBIG) removes the old one.
rc=0
( trap '' XFSZ; ulimit -f 1; exec "$HPCINIT" apply --root "$R" -c "$SPEC" --hostname node01 --kernel-release 5.15.0-1-azure ) >"$T/a3" 2>&1 || rc=$?
check "the run still reports its own failure" [ "$rc" -eq 1 ]
check "it says it cannot write the status" contains "$T/a3" "removing the old status so nobody reads it as current"
check "the old ready status.json is gone" [ ! -e "$ST" ]
check "the old last-run.json is gone" [ ! -e "$R/var/lib/hpcinit/last-run.json" ]
run_hpc "$T/s3" status --root "$R"
check "status exits 4 (unknown)" [ "$rc" -eq 4 ]
check "status says it is stale" contains "$T/s3" "status unknown (stale): hpcinit apply could not write"
check "status does not say ready" not_contains "$T/s3" "ready"
run_hpc_stdout "$T/s3j" status --json --root "$R"
check "status --json: unknown and stale" [ "$(jv "$T/s3j" 'd["result"], d["stale"], d["exit_code"]')" = "('unknown', True, 4)" ]
check "status --json exits 4" [ "$rc" -eq 4 ]

# The next good run clears the note.
run_hpc "$T/a4" apply --root "$R" -c "$SPEC" --hostname node01 --kernel-release 6.9.1
check "the note is gone after a good write" [ ! -e "$R/run/hpcinit/status-error.json" ]
run_hpc "$T/s4" status --root "$R"
check "status readable again" [ "$rc" -eq 0 ]

# After a reboot (/run is empty), the last boot's report is shown as stale, never as current.
rm -rf "$R/run/hpcinit"
run_hpc "$T/s5" status --root "$R"
check "status after reboot exits 4 (unknown)" [ "$rc" -eq 4 ]
check "status after reboot says stale" contains "$T/s5" "stale: no hpcinit run since boot"
run_hpc_stdout "$T/s5j" status --json --root "$R"
check "status --json after reboot: unknown, with the old report" [ "$(jv "$T/s5j" 'd["result"], d["exit_code"], d["last_run"]["result"]')" = "('unknown', 4, 'ready')" ]
check "status --json after reboot exits 4" [ "$rc" -eq 4 ]
rm -f "$R/var/lib/hpcinit/last-run.json"
run_hpc "$T/s6" status --root "$R"
check "no status at all exits 4" [ "$rc" -eq 4 ]
done_testing
