#!/bin/bash
# Deadlines for every step that touches shared storage or users' homes, not
# only discovery (issue 22, item 4).  Two nodes' roots, run at the same time:
#   A: hostfile.dir on a file system stalled from its top (fuse_stall -a: a
#      stat, open or mkdir below it never returns, as on a hard NFS mount
#      whose server died);
#   B: /home on a half-dead file system (fuse_stall -r: what is there can be
#      read, as an NFS client serves what it cached; anything new, and every
#      write, never returns): discovery reads the user's key pair, the ssh
#      step then writes ~/.ssh/authorized_keys and blocks.
# The step fails at its deadline (60 s), naming the call and the file it is
# blocked on; the rest of the run goes on; the run lock is released although
# the child sleeps on in the kernel; the next refresh is not stuck behind it
# (it says at once that the step is still blocked) and starts no second child.
. "$(dirname "$0")/lib.sh"
STALL=${FUSE_STALL:-$TOP_BUILDDIR/tests/system/fuse_stall}
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
stall() { # stall DIR [OPTIONS]: mount a stalled file system on DIR
	local dir=$1; shift
	"$STALL" "$@" "$dir" >"$dir.out" &
	local pid=$!
	cleanup_add "kill -KILL $pid 2>/dev/null || true; umount -l '$dir' 2>/dev/null || true"
	for _ in $(seq 50); do grep -q . "$dir.out" 2>/dev/null && break; sleep 0.1; done
	if grep -q '^SKIP' "$dir.out" || ! grep -q ready "$dir.out"; then
		cat "$dir.out"; exit 77
	fi
}
# The ssh step looks into a user's home as the user (a root_squash NFS home):
# the user must reach the fake roots as on a node, through a 0755 path.
chmod 0755 "$T"
A=$T/a
B=$T/b
for r in "$A" "$B"; do
	mkroot "$r"
	mkdir -p "$r/shared" "$r/etc/hpcinit"
done
mkdir -p "$A/stall" "$B/home"
# B's /home as the client last saw it: the user's home with a key pair (its
# .pub as hpcinit writes it: discovery reads the pair and has nothing to write).
H=$T/bhome/azureuser
mkdir -p "$H/.ssh"
ssh-keygen -q -t ed25519 -N "" -C azureuser@hpcinit -f "$H/.ssh/id_ed25519"
chmod 0700 "$H/.ssh"
chown -R 1000:1000 "$H"
# A run blocked in the agent itself ends when its server goes: wait for it before
# the files go (cleanups run last added first, so this runs after the kills).
cleanup_add "wait"
stall "$A/stall" -a
stall "$B/home" -r "$T/bhome"
# Both specs: the shared directory is local and answers; discovery succeeds at once.
cat >"$A/node.yaml" <<YAML
version: 1
cluster: {name: glocluster, network: 198.18.0.0/24}
discovery: {method: shared, dir: /shared, expect: 1, wait: 0s}
hostfile: {dir: /stall/hostfiles, formats: [plain]}
YAML
# users_wait: 0s: the ssh step's deadline is its own 60 s (a directory wait adds to it).
cat >"$B/node.yaml" <<YAML
version: 1
cluster: {name: glocluster, network: 198.18.0.0/24}
discovery: {method: shared, dir: /shared, expect: 1, wait: 0s}
ssh: {users: [azureuser], users_wait: 0s}
hostfile: {formats: [plain]}
YAML
export HPCINIT_ADDRESS=198.18.0.1
export HPCINIT_LIBEXEC_DIR=${HPCINIT_LIBEXEC_DIR:-$TOP_BUILDDIR}
jv() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {"d": d}))' "$@"; }
mod() { jv "$1" "[m[\"$3\"] for m in d[\"modules\"] if m[\"name\"]==\"$2\"][0]"; }
tag() { jv "$1" "[f[\"tag\"] for m in d[\"modules\"] if m[\"name\"]==\"$2\" for f in m[\"findings\"]][0]"; }
between() { [ "$1" -ge "$2" ] && [ "$1" -lt "$3" ]; }

# Both applies at once, each in the background: a run blocked in the agent
# itself (not in a child) cannot be killed either, so wait at most 100 s.
start=$(date +%s%N)
for r in "$A" "$B"; do
	( rc=0; hpcinit apply --root "$r" -c "$r/node.yaml" --hostname node01 --json >"$r/out" 2>"$r/err" || rc=$?
	  echo "$rc $(( ($(date +%s%N) - start) / 1000000 ))" >"$r/done" ) &
done
for _ in $(seq 1000); do [ -e "$A/done" ] && [ -e "$B/done" ] && break; sleep 0.1; done
for r in "$A" "$B"; do
	n=${r##*/}
	check "apply $n returned within 100 s" [ -e "$r/done" ]
	if [ ! -e "$r/done" ]; then
		echo "# apply $n blocked; its stderr:"; sed 's/^/  | /' "$r/err"
		echo "# its processes:"; pgrep -a -f "$r/node.yaml" | sed 's/^/  | /' || true
	fi
done
[ -e "$A/done" ] && [ -e "$B/done" ] || { done_testing || true; exit 1; }
read -r rc_a took_a <"$A/done"
read -r rc_b took_b <"$B/done"
echo "# apply A (hostfile.dir stalled) took $took_a ms, apply B (/home stalled) took $took_b ms"

# A: hostfile.dir.  The step's deadline is 60 s; the runner allows 1 s to report and 0.5 s to reap.
check "A: apply exits 1" [ "$rc_a" -eq 1 ]
check "A: within hostfile's deadline and its grace (60-64 s)" between "$took_a" 60000 64000
check "A: discovery ok" [ "$(mod "$A/out" discovery status)" != failed ]
check "A: hostfile failed" [ "$(mod "$A/out" hostfile status)" = failed ]
check "A: the finding is the deadline" [ "$(tag "$A/out" hostfile)" = runner.deadline ]
sum_a=$(mod "$A/out" hostfile summary)
echo "# A hostfile: $sum_a"
check "A: it names the call and the file below hostfile.dir" \
	grep -qE "did not finish within its deadline \(60 s\): blocked in [a-z0-9 ()]+ of $A/stall/hostfiles" <<<"$sum_a"
check "A: status.json was written" [ "$(jv "$A/run/hpcinit/status.json" 'd["result"]')" = failed ]
check "A: the stuck child is recorded" [ -s "$A/run/hpcinit/stuck/step.hostfile" ]

# B: a user's home.
check "B: apply exits 1" [ "$rc_b" -eq 1 ]
check "B: discovery read the user's key pair there (not failed)" [ "$(mod "$B/out" discovery status)" != failed ]
check "B: within ssh's deadline and its grace (60-64 s)" between "$took_b" 60000 64000
check "B: ssh failed" [ "$(mod "$B/out" ssh status)" = failed ]
check "B: the finding is the deadline" [ "$(tag "$B/out" ssh)" = runner.deadline ]
sum_b=$(mod "$B/out" ssh summary)
echo "# B ssh: $sum_b"
check "B: it names the call and the user's home" \
	grep -qE "did not finish within its deadline \(60 s\): blocked in [a-z0-9 ()]+ of $B/home/azureuser/.ssh/" <<<"$sum_b"
check "B: hostfile still ran (it does not need ssh)" [ "$(mod "$B/out" hostfile status)" = changed ]
check "B: and wrote its file" contains "$B/etc/hpcinit/hostfile.plain" node01
check "B: the stuck child is recorded" [ -s "$B/run/hpcinit/stuck/step.ssh" ]

check "one stuck child per node" [ "$(stuck_children)" -eq 2 ]
for r in "$A" "$B"; do
	check "${r##*/}: the run lock is free while the child sleeps on" flock -n "$r/run/hpcinit/lock" true
done

# The timer's refreshes are not stuck behind them: each says at once that the step is still blocked.
for i in 1 2; do
	for r in "$A" "$B"; do
		n=${r##*/}
		step=hostfile; [ "$n" = b ] && step=ssh
		pid=$(sed -n 's/^pid //p' "$r/run/hpcinit/stuck/step.$step")
		start=$(date +%s%N)
		run_hpc "$r/r$i" refresh --root "$r" -c "$r/node.yaml" --hostname node01
		took=$(( ($(date +%s%N) - start) / 1000000 ))
		echo "# refresh $i of $n took $took ms"
		check "$n: refresh $i exits 1" [ "$rc" -eq 1 ]
		check "$n: refresh $i does not wait for the deadline again" [ "$took" -lt 5000 ]
		check "$n: refresh $i names the stuck child" grep -qE \
			"hpcinit\[$step\]: error: still blocked since [0-9-]+ [0-9:]+ [A-Z]+ \(pid $pid, waiting in [a-z_0-9 ]+\): .*$r/(stall|home).*; no new child started" "$r/r$i"
	done
done
check "two refreshes later: still one stuck child per node" [ "$(stuck_children)" -eq 2 ]
check "B: the refresh still ran hostfile" grep -qE "^hostfile +ok" "$B/r1"
done_testing
