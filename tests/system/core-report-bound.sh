#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A step's details and findings are bounded (agent/base/report.c): 10,000 junk
# records in the rendezvous directory are 10,000 rejections, but the run
# keeps the first 1000 detail lines and 1000 findings, then one "... N more"
# line and one report.more-findings finding that count the rest.  Before the
# bound, 30,000 such records gave a 6 MB status.json and 1.9 MB of output
# (issue 22); 10,000 gave 2 MB.
. "$(dirname "$0")/lib.sh"
N=10000
chmod 0755 "$T"
R=$T/root
D=$R/sh/.hpcinit/t/nodes
mkdir -p "$R/etc" "$D"
printf 'root:x:0:0:root:/root:/bin/bash\n' > "$R/etc/passwd"
for i in $(seq 1 "$N"); do echo "junk $i" > "$D/junk$i.rec"; done
cat > "$T/n.yaml" <<EOF
version: 1
cluster: {name: t, network: 10.0.0.0/24}
discovery: {method: shared, dir: /sh/.hpcinit, expect: 1, wait: 1s}
EOF
HPCINIT_ADDRESS=10.0.0.5 run_hpc "$T/out" apply -v --only discovery --root "$R" -c "$T/n.yaml" --hostname n1
S=$R/run/hpcinit/status.json
check "the run ends ready: junk records are cluster findings, not this node's problem (exit $rc)" [ "$rc" = 0 ]
check "status.json written" [ -s "$S" ]
echo "# status.json $(stat -c %s "$S") bytes, output $(stat -c %s "$T/out") bytes, $(wc -l < "$T/out") lines"
check "status.json under 400 KB" [ "$(stat -c %s "$S")" -lt 409600 ]
check "output under 100 KB" [ "$(stat -c %s "$T/out")" -lt 102400 ]
python3 - "$S" "$N" > "$T/py" 2>&1 <<'EOF' && ok "status.json: 1000 details + a count, 1000 findings + a count" || { sed 's/^/  | /' "$T/py"; not_ok "status.json: 1000 details + a count, 1000 findings + a count"; }
import json, sys
d = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
m = [x for x in d["modules"] if x["name"] == "discovery"][0]
det, fin = m["details"], m["findings"]
assert len(det) == 1001, len(det)
# the N rejections and two lines of its own (no host keys; the node itself): all but 1000 counted
assert det[-1] == "... %d more detail lines not kept (a step keeps its first 1000 lines, 128 KiB)" % (n + 2 - 1000), det[-1]
assert sum(1 for x in det if x.startswith("record junk")) == 999, "999 rejections listed"
assert len(fin) == 1001, len(fin)
assert fin[-1]["tag"] == "report.more-findings", fin[-1]
assert fin[-1]["text"] == "... %d more findings not kept (a step keeps at most 1000)" % (n - 1000), fin[-1]
assert fin[-1]["severity"] == "cluster", fin[-1]        # it counts cluster findings only
assert all(f["tag"] == "discovery.record.unreadable" or f["tag"].startswith("discovery.") for f in fin[:-1]), fin[0]
EOF
check "output: the count line" contains "$T/out" "... $((N + 2 - 1000)) more detail lines not kept"
check "the log says how many the details list" contains "$T/out" "the run's details list them (up to 1000)"
# hpcinit status reads it back and shows the same bounded details
rc=0
hpcinit status --root "$R" > "$T/status" 2>&1 || rc=$?
check "hpcinit status: bounded too (under 100 KB)" [ "$(stat -c %s "$T/status")" -lt 102400 ]
done_testing
