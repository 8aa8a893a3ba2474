#!/bin/bash
# The real binary on a fake root: plan, apply, re-apply (no change, mtimes kept),
# check, drift and repair, status, --json.
. "$(dirname "$0")/lib.sh"
R=$T/root
mkroot "$R"
SPEC=$FIX/core/memlock.yaml
LIM=$R/etc/security/limits.d/90-hpcinit.conf
SYS=$R/etc/systemd/system.conf.d/90-hpcinit.conf

# plan on a fresh root lists the files and their content, and changes nothing
snapshot "$R" >"$T/before"
run_hpc "$T/plan" plan --root "$R" -c "$SPEC"
check "plan exits 0" [ "$rc" -eq 0 ]
check "plan lists the limits drop-in" contains "$T/plan" "+++ /etc/security/limits.d/90-hpcinit.conf (planned)"
check "plan shows the limits lines" contains "$T/plan" "+*                soft memlock unlimited"
check "plan lists the systemd drop-in" contains "$T/plan" "+DefaultLimitMEMLOCK=infinity"
check "plan says would change" contains "$T/plan" "memlock    would change"
snapshot "$R" >"$T/after"
check "plan changed nothing" same_file "$T/after" "$T/before"

# apply writes exactly the files
run_hpc "$T/apply1" apply --root "$R" -c "$SPEC"
check "apply exits 0" [ "$rc" -eq 0 ]
check "apply reports changed" contains "$T/apply1" "memlock    changed"
printf '%s\n' "# Managed by hpcinit for cluster glocluster: locked memory for RDMA." \
	"# Changes here are overwritten; edit memlock: in the hpcinit spec instead." \
	"*                soft memlock unlimited" "*                hard memlock unlimited" \
	"@hpc             soft memlock unlimited" "@hpc             hard memlock unlimited" >"$T/want-limits"
check "limits drop-in content" same_file "$LIM" "$T/want-limits"
check "systemd drop-in content" grep -qx 'DefaultLimitMEMLOCK=infinity' "$SYS"
check "user manager drop-in" grep -qx 'DefaultLimitMEMLOCK=infinity' "$R/etc/systemd/user.conf.d/90-hpcinit.conf"
check "limits mode 0644" [ "$(stat -c %a "$LIM")" = 644 ]
check "status.json written" [ -s "$R/run/hpcinit/status.json" ]
check "last-run.json written" [ -s "$R/var/lib/hpcinit/last-run.json" ]

# the second apply changes nothing and keeps every mtime
snapshot "$R" | grep -v -e ./run/hpcinit -e ./var/lib/hpcinit >"$T/s1"
sleep 1.1
run_hpc "$T/apply2" apply --root "$R" -c "$SPEC"
check "re-apply exits 0" [ "$rc" -eq 0 ]
check "re-apply reports ok" contains "$T/apply2" "memlock    ok"
snapshot "$R" | grep -v -e ./run/hpcinit -e ./var/lib/hpcinit >"$T/s2"
check "re-apply keeps every file and mtime" same_file "$T/s2" "$T/s1"

# check after apply: in sync
run_hpc "$T/check1" check --root "$R" -c "$SPEC"
check "check after apply exits 0" [ "$rc" -eq 0 ]
check "check reports in sync" contains "$T/check1" "memlock    ok"
run_hpc "$T/check1v" check -v --root "$R" -c "$SPEC"
check "check names the PAM file" contains "$T/check1v" "pam: pam_limits is active for sshd (/etc/pam.d/common-session)"

# a hand edit is drift; apply repairs it
sed -i 's/unlimited/65536/' "$LIM"
# (a check records the node's state: only hpcinit's status files may change)
nostatus() { grep -vE ' \./(run/hpcinit|var/lib/hpcinit)(/|$)'; }
snapshot "$R" | nostatus >"$T/pre-check"
run_hpc "$T/check2" check --root "$R" -c "$SPEC"
check "check on drift exits 1" [ "$rc" -eq 1 ]
check "check names the drifted file" contains "$T/check2" "/etc/security/limits.d/90-hpcinit.conf: content differs"
snapshot "$R" | nostatus >"$T/post-check"
check "check changed nothing but the status files" same_file "$T/post-check" "$T/pre-check"
check "check recorded its part" [ -f "$R/run/hpcinit/check.json" ]
run_hpc "$T/apply3" apply --root "$R" -c "$SPEC"
check "apply repairs drift" same_file "$LIM" "$T/want-limits"

# a changed spec converges; systemd: false removes our drop-ins
sed 's/systemd: true/systemd: false/' "$SPEC" >"$T/nosysd.yaml"
run_hpc "$T/apply4" apply --root "$R" -c "$T/nosysd.yaml"
check "systemd: false removes the drop-in" [ ! -e "$SYS" ]

# pam_limits missing for sshd: degraded (exit 3) with the fix named
printf 'session required pam_unix.so\n' >"$R/etc/pam.d/common-session"
run_hpc "$T/apply5" apply --root "$R" -c "$SPEC"
check "missing pam_limits is degraded (exit 3)" [ "$rc" -eq 3 ]
check "degraded message names the fix" contains "$T/apply5" "pam_limits is NOT active for sshd sessions: limits.d is ignored there; add 'session required pam_limits.so' to /etc/pam.d/sshd"

# the running sshd's limit from /proc/PID/limits (a fixture /proc under the fake root)
mkdir -p "$R/proc/4242"
printf '%s\n' 'Limit                     Soft Limit           Hard Limit           Units' \
	'Max locked memory         65536                65536                bytes' >"$R/proc/4242/limits"
echo sshd >"$R/proc/4242/comm"
echo 4242 >"$R/run/sshd.pid"
run_hpc "$T/check3" check -v --root "$R" -c "$SPEC"
check "check reports sshd's memlock" contains "$T/check3" "sshd (pid 4242) runs with memlock soft 64 KiB, hard 64 KiB"

# status: table and JSON of the last apply
run_hpc "$T/status" status --root "$R"
check "status exits 3: the node is degraded" [ "$rc" -eq 3 ]
check "status shows the module row" contains "$T/status" "memlock    degraded"
check "status shows the result" contains "$T/status" "result: degraded (exit 3"
run_hpc_stdout "$T/statusj" status --json --root "$R"
check "status --json is JSON" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["modules"][0]["name"]=="memlock"' "$T/statusj"
run_hpc_stdout "$T/applyj" apply --json --root "$R" -c "$SPEC"
check "apply --json is JSON with exit_code" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["exit_code"]==3 and d["result"]=="degraded"' "$T/applyj"
# a step whose need was skipped (hostfile without a discovery section): skipped, tagged
mkroot "$T/needs"
printf 'version: 1\ncluster: {name: fx}\nhostfile: {formats: [openmpi]}\n' >"$T/needs.yaml"
run_hpc_stdout "$T/needs.json" apply --root "$T/needs" -c "$T/needs.yaml" --json
check "a need skipped: exit 0" [ "$rc" -eq 0 ]
check "...the step skipped, tagged runner.needs.skipped" contains "$T/needs.json" '"tag": "runner.needs.skipped"'
done_testing
