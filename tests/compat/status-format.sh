#!/bin/bash
# The status document's format (docs/formats.md): status.json, each part's
# file and a run's --json report say "format": 1; a document without the key
# (release 0.1.0's) is read as format 1; one of a newer format is neither
# shown nor trusted: hpcinit status and the health probe say unknown (exit 4,
# 503) and name the format, its writer and the formats read; a part file of a
# newer format (a downgrade without a reboot) is not read, so the node is not
# ready until its next full apply.
. "$(dirname "$0")/../system/lib.sh"
R=$T/root
mkroot "$R"
SPEC=$FIX/core/status.yaml
export HPCINIT_ADDRESS=198.18.0.1
ST=$R/run/hpcinit/status.json
jv() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }
# jset FILE EXPR: change a JSON file in place (d is the document)
jset() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); exec(sys.argv[2]); json.dump(d, open(sys.argv[1], "w"))' "$@"; }
# hp OUT CMD [ARGS]: a run on the fake root whose kernel matches the spec
hp() { local out=$1 cmd=$2; shift 2; run_hpc "$T/$out" "$cmd" --root "$R" -c "$SPEC" --hostname node01 --kernel-release 6.9.1 "$@"; }
apply() { hp "$1" apply; }
V=$("$HPCINIT" --version | awk '{print $NF}')

apply a1
check "apply exits 0" [ "$rc" -eq 0 ]
check "status.json says format 1, after the writer's version" \
	[ "$(jv "$ST" 'list(d)[:2], d["format"]')" = "(['hpcinit', 'format'], 1)" ]
check "the apply part's file says format 1" [ "$(jv "$R/run/hpcinit/apply.json" 'd["format"]')" = 1 ]
rc=0; hpcinit check --json --root "$R" -c "$SPEC" --hostname node01 --kernel-release 6.9.1 >"$T/j1" 2>&1 || rc=$?
check "a run's --json report says format 1" [ "$(jv "$T/j1" 'd["format"]')" = 1 ]

# Release 0.1.0 wrote no "format": read as format 1 (an upgrade in place keeps /run).
for f in "$ST" "$R"/run/hpcinit/apply.json "$R"/run/hpcinit/check.json; do
	jset "$f" 'd.pop("format", None); d["hpcinit"] = "0.1.0"'
done
run_hpc "$T/s1" status --root "$R"
check "status of a document without format (0.1.0's): exit 0, ready" [ "$rc" -eq 0 ]
check "... and its table shown" contains "$T/s1" "result: ready (exit 0"
printf 'GET / HTTP/1.1\r\nHost: x\r\n\r\n' > "$T/req"
rc=0; "$HPCINIT" health --root "$R" < "$T/req" > "$T/h1" 2>&1 || rc=$?
check "health of 0.1.0's document: 200 Healthy" contains "$T/h1" '"ApplicationHealthState": "Healthy"'
hp c1 check
check "a check on 0.1.0's part files keeps the apply: exit 0" [ "$rc" -eq 0 ]
check "... status.json still ready, with the apply read back" \
	[ "$(jv "$ST" 'd["result"], d["applied"], d["format"]')" = "('ready', True, 1)" ]

# A newer hpcinit's status.json (a downgrade without a reboot): unknown, said why.
jset "$ST" 'd["format"] = 2; d["hpcinit"] = "9.0.0"; d["result"] = "ready"; d["exit_code"] = 0'
run_hpc "$T/s2" status --root "$R"
check "status of format 2: exit 4 (unknown)" [ "$rc" -eq 4 ]
check "... naming the format, its writer and the formats read" contains "$T/s2" \
	"status.json: status format 2 (written by hpcinit 9.0.0) is newer than hpcinit $V reads (formats 1 to 1): status unknown"
check "... and its table not shown as if understood" not_contains "$T/s2" "result: ready"
run_hpc_stdout "$T/s3" status --json --root "$R"
check "status --json of format 2: exit 4, the document handed on as it is" \
	[ "$rc:$(jv "$T/s3" 'd["format"]')" = "4:2" ]
rc=0; "$HPCINIT" health --root "$R" < "$T/req" > "$T/h2" 2>&1 || rc=$?
check "health of format 2: 503, not Healthy" contains "$T/h2" "503 Service Unavailable"
jset "$ST" 'd["format"] = "two"'
run_hpc "$T/s4" status --root "$R"
check "a format that is not a number: exit 4" [ "$rc" -eq 4 ]
check "... said" contains "$T/s4" "its format is not a number"

# A newer hpcinit's apply part file: not read, so no apply on record; the next apply writes it again.
apply a2
jset "$R/run/hpcinit/apply.json" 'd["format"] = 2; d["hpcinit"] = "9.0.0"'
hp c2 check -v
check "a check beside a format-2 apply part: it is not read, said so" contains "$T/c2" \
	"apply.json: status format 2 (written by hpcinit 9.0.0) is newer than hpcinit $V reads (formats 1 to 1); not read"
check "... so status.json says no apply since boot: failed" \
	[ "$(jv "$ST" 'd["result"], d["applied"]')" = "('failed', False)" ]
apply a3
check "the next apply writes it again: ready" [ "$rc:$(jv "$ST" 'd["result"]')" = "0:ready" ]
done_testing
