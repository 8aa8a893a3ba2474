#!/bin/bash
# Deadlines the runner enforces: a step that touches shared storage runs in a
# child, and a filesystem that never answers (a FUSE mount whose readdir,
# create and read requests stay unanswered, as a hard NFS mount whose server
# died) costs that step its deadline, not the run.  The step is reported
# failed with what it was blocked in; the rest of the run goes on.
. "$(dirname "$0")/lib.sh"
R=$T/root
mkroot "$R"
mkdir -p "$R/shared"
STALL=${FUSE_STALL:-$TOP_BUILDDIR/tests/system/fuse_stall}
"$STALL" "$R/shared" >"$T/stall.out" &
stall_pid=$!
cleanup_add "kill -KILL $stall_pid 2>/dev/null; umount -l '$R/shared' 2>/dev/null || true"
for _ in $(seq 50); do grep -q . "$T/stall.out" 2>/dev/null && break; sleep 0.1; done
if grep -q '^SKIP' "$T/stall.out" || ! grep -q ready "$T/stall.out"; then
	cat "$T/stall.out"; exit 77
fi
cat >"$T/node.yaml" <<YAML
version: 1
cluster: {name: glocluster, network: 198.18.0.0/24}
memlock: {limit: unlimited}
discovery: {method: shared, dir: /shared, expect: 1, wait: 2s}
hostfile: {dir: /etc/hpcinit, formats: [plain]}
YAML
export HPCINIT_ADDRESS=198.18.0.1
start=$(date +%s%N)
run_hpc_stdout "$T/out" apply --root "$R" -c "$T/node.yaml" --hostname node01 --json
took=$(( ($(date +%s%N) - start) / 1000000 ))
echo "# apply took $took ms"
jv() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }
mod() { jv "$T/out" "[m[\"$2\"] for m in d[\"modules\"] if m[\"name\"]==\"$1\"][0]"; }
check "apply returns (exit 1)" [ "$rc" -eq 1 ]
# discovery's deadline is discovery.wait + 60 s = 62 s; the runner allows 1 s to report and 0.5 s to reap
between() { [ "$1" -ge "$2" ] && [ "$1" -lt "$3" ]; }
check "within the deadline and its grace (62-66 s)" between "$took" 62000 66000
check "discovery failed" [ "$(mod discovery status)" = failed ]
check "the finding is the deadline" [ "$(jv "$T/out" '[f["tag"] for m in d["modules"] if m["name"]=="discovery" for f in m["findings"]][0]')" = runner.deadline ]
summary=$(mod discovery summary)
echo "# discovery: $summary"
check "it names what it waited for (a call on the shared directory)" \
	grep -qE "did not finish within its deadline \([0-9]+ s\): blocked in [a-z0-9 ()]+ (on )?$R/shared" <<<"$summary"
check "memlock still ran" [ "$(mod memlock status)" = changed ]
check "hostfile skipped: needs discovery" [ "$(mod hostfile summary)" = "needs discovery, which failed" ]
check "status.json was written" [ "$(jv "$R/run/hpcinit/status.json" 'd["result"]')" = failed ]
# The timer's refresh is bounded the same way.
start=$(date +%s%N)
run_hpc "$T/r" refresh --root "$R" -c "$T/node.yaml" --hostname node01
took=$(( ($(date +%s%N) - start) / 1000000 ))
echo "# refresh took $took ms"
check "refresh returns too (exit 1)" [ "$rc" -eq 1 ]
check "refresh within the deadline and its grace" [ "$took" -lt 66000 ]
check "refresh logs the failed step" contains "$T/r" "hpcinit[discovery]: error: did not finish within its deadline"
done_testing
