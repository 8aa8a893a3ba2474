#!/bin/bash
# Deadlines the runner enforces: a step that touches shared storage runs in a
# child, and a filesystem that never answers (a FUSE mount whose readdir,
# create and read requests stay unanswered, as a hard NFS mount whose server
# died) costs that step its deadline, not the run.  The step is reported
# failed with what it was blocked in; the rest of the run goes on.  The child
# left asleep in the kernel is recorded: later runs (the timer's refreshes)
# see it still stuck and start no second one, so N runs leave one such child.
. "$(dirname "$0")/lib.sh"
R=$T/root
mkroot "$R"
mkdir -p "$R/shared"
STALL=${FUSE_STALL:-$TOP_BUILDDIR/tests/system/fuse_stall}
"$STALL" "$R/shared" >"$T/stall.out" &
stall_pid=$!
cleanup_add "kill -KILL $stall_pid 2>/dev/null || true; umount -l '$R/shared' 2>/dev/null || true"
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
# Our runs' children carry this in their environment: count those asleep in the kernel.
export HPCINIT_TEST_STUCK_TAG=$T
stuck_children() {
	local n=0 p
	for p in /proc/[0-9]*; do
		[ "$(awk '{sub(/.*\) /, ""); print $1}' "$p/stat" 2>/dev/null)" = D ] || continue
		{ tr '\0' '\n' <"$p/environ"; } 2>/dev/null | grep -qxF "HPCINIT_TEST_STUCK_TAG=$T" && n=$((n + 1))
	done
	echo $n
}
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
check "the child asleep in the kernel is recorded" [ -s "$R/run/hpcinit/stuck/step.discovery" ]
check "one child stuck after the apply" [ "$(stuck_children)" -eq 1 ]
stuck_pid=$(sed -n 's/^pid //p' "$R/run/hpcinit/stuck/step.discovery")
# The timer's refreshes: each sees the apply's child still stuck, starts none, and says so at once.
for i in 1 2 3; do
	start=$(date +%s%N)
	run_hpc "$T/r$i" refresh --root "$R" -c "$T/node.yaml" --hostname node01
	took=$(( ($(date +%s%N) - start) / 1000000 ))
	echo "# refresh $i took $took ms"
	check "refresh $i returns (exit 1)" [ "$rc" -eq 1 ]
	check "refresh $i does not wait for the deadline again" [ "$took" -lt 5000 ]
	check "refresh $i names the stuck child" \
		grep -qE "hpcinit\[discovery\]: error: still blocked since [0-9-]+ [0-9:]+ [A-Z]+ \(pid $stuck_pid, waiting in [a-z_0-9 ]+\): .*$R/shared.*; no new child started" "$T/r$i"
done
check "three refreshes later: still one stuck child" [ "$(stuck_children)" -eq 1 ]
# hpcinit leave removes the record on that same directory: in a child too, so
# it says at once that the step is still blocked instead of hanging on the
# share with the run lock held (it waits at most 30 s here, in the background).
( rc=0; hpcinit leave --root "$R" -c "$T/node.yaml" --hostname node01 >"$T/leave" 2>&1 || rc=$?
  echo "$rc" >"$T/leave.rc" ) &
for _ in $(seq 300); do [ -e "$T/leave.rc" ] && break; sleep 0.1; done
check "leave returns" [ -e "$T/leave.rc" ]
if [ -e "$T/leave.rc" ]; then
	check "leave exits 1" [ "$(cat "$T/leave.rc")" -eq 1 ]
	check "leave names the stuck child" grep -qE \
		"^leave: failed: still blocked since [0-9-]+ [0-9:]+ [A-Z]+ \(pid $stuck_pid, .*$R/shared.*; no new child started" "$T/leave"
else
	echo "# leave blocked:"; pgrep -a -f "leave --root $R" | sed "s/^/  | /" || true
fi
check "leave left the run lock free" flock -n "$R/run/hpcinit/lock" true
run_hpc_stdout "$T/st.json" status --json --root "$R"
check "status shows it (exit 1)" [ "$rc" -eq 1 ]
check "status.json: discovery failed, still blocked" [ "$(jv "$T/st.json" '[f["tag"] for m in d["modules"] if m["name"]=="discovery" for f in m["findings"]][0]')" = runner.still-blocked ]
# A health checker's "hpcinit check" of an NFS mount that never answers (the
# same FUSE mount, listed as NFS in a mountinfo fixture): one stuck probe per
# mount point, however many checks run.
mkdir -p "$R/proc/self"
printf '25 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n60 25 0:50 / /shared rw,relatime - nfs 198.18.0.9:/shared rw,vers=3,hard,proto=tcp\n' >"$R/proc/self/mountinfo"
cat >"$T/nfs.yaml" <<YAML
version: 1
cluster: {name: glocluster, network: 198.18.0.0/24}
nfs:
  mounts:
    - {source: "198.18.0.9:/shared", path: /shared, options: [vers=3, hard, proto=tcp], wait: 1m}
YAML
for i in 1 2 3; do
	start=$(date +%s%N)
	run_hpc "$T/c$i" check --root "$R" -c "$T/nfs.yaml" --only nfs -v
	took=$(( ($(date +%s%N) - start) / 1000000 ))
	echo "# nfs check $i took $took ms"
	check "nfs check $i: the mount is not answering (exit 1)" [ "$rc" -eq 1 ]
	check "nfs check $i names the mount" contains "$T/c$i" "/shared: mounted but not answering"
	if [ "$i" -eq 1 ]; then
		check "nfs check 1 waits for its probe's deadline (10 s)" [ "$took" -ge 10000 ]
	else
		check "nfs check $i starts no new probe" contains "$T/c$i" "no new probe started"
		check "nfs check $i: the stuck probe, since when, its pid" grep -qE "/shared: mounted but not answering: the last probe of it is still blocked since [0-9-]+ [0-9:]+ [A-Z]+ \(pid [0-9]+, waiting in " "$T/c$i"
		check "nfs check $i returns at once" [ "$took" -lt 5000 ]
	fi
done
check "three checks later: two stuck children (discovery's and the mount probe's)" [ "$(stuck_children)" -eq 2 ]
# The server goes (the mount aborts): the stuck child ends, and the next refresh starts a new one.
kill -KILL $stall_pid
wait $stall_pid 2>/dev/null || true
wait    # a leave blocked on the share (before the fix) ends with its server
umount -l "$R/shared" 2>/dev/null || true
for _ in $(seq 50); do [ "$(stuck_children)" -eq 0 ] && break; sleep 0.1; done
check "the stuck child ended with its server" [ "$(stuck_children)" -eq 0 ]
run_hpc "$T/r9" refresh --root "$R" -c "$T/node.yaml" --hostname node01
check "the next refresh runs the step again" not_contains "$T/r9" "still blocked"
check "its stale record is gone" [ ! -e "$R/run/hpcinit/stuck/step.discovery" ]
done_testing
