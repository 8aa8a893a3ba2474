#!/bin/bash
# Text from elsewhere (file names in the rendezvous directory, record
# content) reaches the terminal, syslog and status.json only escaped:
# status.json is valid UTF-8 JSON and `hpcinit status` reads it back.
. "$(dirname "$0")/lib.sh"
R=$T/root
mkroot "$R"
mkdir -p "$R/etc/ssh" "$R/shared"
ssh-keygen -q -t ed25519 -N '' -f "$R/etc/ssh/ssh_host_ed25519_key"
cat >"$T/spec.yaml" <<'YAML'
version: 1
cluster: {name: esc, network: 198.18.9.0/24}
discovery: {method: shared, dir: /shared/.hpcinit, expect: 1, wait: 1s}
YAML
# A first run makes the rendezvous directory; then plant hostile names and content.
export HPCINIT_ADDRESS=198.18.9.1
run_hpc "$T/first" apply --root "$R" -c "$T/spec.yaml"
check "first apply exits 0" [ "$rc" -eq 0 ]
N=$R/shared/.hpcinit/esc/nodes
check "rendezvous directory made" [ -d "$N" ]
esc=$(printf '\033')
printf 'x\n' >"$N/$(printf 'evil\033]0;owned\007\033[31m')-.rec"
printf 'x\n' >"$N/$(printf 'bad\377\376name').rec"
printf 'x\n' >"$N/$(printf 'rtl\342\200\256cer').rec"
printf 'format: 1\ncluster: esc\nhostname: evil2\naddr: 198.18.9.2\033[2J\n...\n' >"$N/evil2.rec"
chmod 0644 "$N"/*.rec

run_hpc "$T/apply" apply -v --root "$R" -c "$T/spec.yaml"
check "apply reports the bad records as cluster findings: ready (exit 0), not failed" [ "$rc" -eq 0 ]
check "the terminal got no escape byte" not_contains "$T/apply" "$esc"
check "the rejected name is shown escaped" contains "$T/apply" 'evil\x1b]0;owned\x07\x1b[31m-.rec'
check "invalid UTF-8 in a name is shown as bytes" contains "$T/apply" 'bad\xff\xfename.rec'
check "a bidi override is shown as bytes" contains "$T/apply" 'rtl\xe2\x80\xaecer.rec'
valid_json() { python3 -c 'import json,sys; json.loads(open(sys.argv[1],"rb").read().decode("utf-8","strict"))' "$1"; }
check "status.json is valid UTF-8 JSON" valid_json "$R/run/hpcinit/status.json"
check "last-run.json is valid UTF-8 JSON" valid_json "$R/var/lib/hpcinit/last-run.json"
check "status.json holds no raw escape byte" not_contains "$R/run/hpcinit/status.json" "$esc"
run_hpc_stdout "$T/check.json" check --json --root "$R" -c "$T/spec.yaml"
check "check --json is valid UTF-8 JSON" valid_json "$T/check.json"
run_hpc "$T/status" status --root "$R"
check "hpcinit status reads it back: ready (exit 0)" [ "$rc" -eq 0 ]
check "status shows the cluster" contains "$T/status" "cluster esc"
check "status output has no escape byte" not_contains "$T/status" "$esc"
done_testing
