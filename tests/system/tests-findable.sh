#!/bin/bash
# Tests findable by name (issue 24): every library file (common/base,
# agent/core, common/loader, common/text, lib/) has a unit test of its own --
# tests/unit/test_<name>.c (test_<folder><name>.c in lib/ib), or for a
# backend its folder's test_<folder>.c #including it (as unit tests do to
# reach a file's statics) -- every unit test is built by an automake
# fragment, no test file is over 1,000 lines, and the shell tests count with
# the one TAP library (tests/lib/tap.sh).  The files known to fall short
# still are printed as such; any other fails, named.
. "$(dirname "$0")/lib.sh"
cd "$TOP_SRCDIR"

MAX_LINES=1000
# Known still, by name: library files without a test of their own, test
# files over the limit, shell tests with their own ok/fail.  Take a file off
# when that is fixed (this test says so).
KNOWN_NO_TEST=""
KNOWN_LONG=""
KNOWN_DIALECT=""
known() { case " $1 " in *" $2 "*) return 0 ;; esac; return 1; }   # known LIST FILE

# --- each library file, and its unit test ---
libs=$(find common/base agent/core common/loader common/text lib -name '*.c' | sort)
check "library files found" test -n "$libs"
for f in $libs; do
	base=$(basename "$f" .c)
	dir=$(basename "$(dirname "$f")")
	t=""
	for cand in "tests/unit/test_$base.c" "tests/unit/test_$dir$base.c" "tests/unit/test_${dir}_$base.c"; do
		[ -f "$cand" ] && { t=$cand; break; }
	done
	# a library folder's own test for its backends (test_rendezvous.c: dir.c, etcd.c)
	if [ -z "$t" ] && [ -f "tests/unit/test_$dir.c" ] && grep -qF "#include \"../../$f\"" "tests/unit/test_$dir.c"; then
		t=tests/unit/test_$dir.c
	fi
	if [ -n "$t" ]; then
		if known "$KNOWN_NO_TEST" "$f"; then
			not_ok "$f has a test now ($t): take it off KNOWN_NO_TEST in $0"
		else
			ok "$f: $t"
		fi
	elif known "$KNOWN_NO_TEST" "$f"; then
		echo "# known, no unit test of its own yet: $f"
	else
		not_ok "$f: no unit test (tests/unit/test_$base.c, or test_$dir.c #including it)"
	fi
done

# --- each unit test is built and run by a fragment (else it is never run) ---
frags=$(find . -name '*.am' -not -path './build*' -not -path './_build*' | sort)
for t in tests/unit/test_*.c; do
	name=${t%.c}
	if grep -qE "(^|[[:space:]=])$name([[:space:]\\\\]|\$)" $frags; then
		ok "$t: in a fragment"
	else
		not_ok "$t: in no automake fragment (add $name to its folder's TESTS)"
	fi
done

# --- no test file over the limit ---
for f in $(find tests -type f \( -name '*.c' -o -name '*.h' -o -name '*.sh' -o -name '*.py' \) \
		-not -path 'tests/fixtures/*' -not -path 'tests/fuzz/corpus/*' | sort); do
	n=$(wc -l <"$f")
	if [ "$n" -le "$MAX_LINES" ]; then
		known "$KNOWN_LONG" "$f" && not_ok "$f: $n lines now: take it off KNOWN_LONG in $0"
		continue
	fi
	if known "$KNOWN_LONG" "$f"; then
		echo "# known, over $MAX_LINES lines still: $f ($n)"
	else
		not_ok "$f: $n lines (over $MAX_LINES): split it by the part of the product it tests"
	fi
done
ok "test files checked against $MAX_LINES lines"

# --- one TAP library: no shell test defines its own ok/not_ok/fail ---
# (tests/vmcheck/*.sh run inside the VMs on their own, without the tree.)
for f in $(find tests -name '*.sh' -not -path 'tests/vmcheck/*' -not -path 'tests/lib/*' | sort); do
	if grep -qE '^[[:space:]]*(ok|not_ok|notok|fail|pass|bail_out)\(\)' "$f"; then
		if known "$KNOWN_DIALECT" "$f"; then
			echo "# known, its own ok/fail still: $f"
		else
			not_ok "$f defines its own ok/not_ok/fail: source tests/lib/tap.sh instead"
		fi
	elif known "$KNOWN_DIALECT" "$f"; then
		not_ok "$f: uses tests/lib/tap.sh now: take it off KNOWN_DIALECT in $0"
	fi
done
ok "shell tests checked for their own TAP dialect"

# --- a shell test's name says the step it covers (modules/<step>), or the part of
# the house: core and runner (agent/core), spec and conf (the spec, conf/ examples),
# cloud-init, etcd (the rendezvous), vm (the VM harness), and the tree's own checks ---
PARTS="core runner spec conf cloud-init etcd vm dist man layers sizes tests architecture points systemd"
# Known still, by name: the readiness exports (issue 33), records' readiness across nodes,
# the spec file's trust, the demo; take a file off when it is renamed (this test says so).
KNOWN_UNNAMED="tests/system/health-endpoint.sh tests/system/metrics-textfile.sh tests/system/notify.sh
	tests/system/live-state.sh tests/system/members.sh tests/system/trust-spec-file.sh tests/cluster/demo.sh"
steps=$(find modules -mindepth 1 -maxdepth 1 \( -type d -o -name '*.c' \) | sed 's|^modules/||; s|\.c$||' | sort -u)
for f in $(find tests/system tests/cluster -name '*.sh' -not -name '*lib.sh' -not -name overlay.sh -not -name sim.sh | sort); do
	b=$(basename "$f" .sh)
	named=
	for p in $steps $PARTS; do
		case $b in "$p"|"$p"-*) named=$p; break ;; esac
	done
	if [ -n "$named" ]; then
		known "$(echo $KNOWN_UNNAMED)" "$f" && not_ok "$f says its step now: take it off KNOWN_UNNAMED in $0"
	elif known "$(echo $KNOWN_UNNAMED)" "$f"; then
		echo "# known, its name does not say its step yet: $f"
	else
		not_ok "$f: the name does not say the step it covers (<step>-*.sh: $(echo $steps), or $PARTS)"
	fi
done
ok "shell tests' names checked for their step"

# --- the finding tags are an index of the tests ---
# Every tag a finding can carry (tests/system/finding-tags.pl reads them from
# the sources) appears in some test, where the test asserts it: grep for a tag
# and find the test of that failure.  A tag no test on this machine can make
# (hardware, the machine's own root, a fork that fails) is named in NOT_HERE, one a
# line "TAG: why; what covers it".
# KNOWN_UNTESTED is what is left of the backlog this check started with (141 of
# 260): take a tag off when a test asserts it (this check says so); a new tag in
# neither list fails.  The slurm.* ones need a running slurmctld and slurmd
# (tests/cluster/slurm.sh makes most of them and asserts their text, not the tag).
NOT_HERE="
	nfs.mounted.not-nfs: statfs's type is read on the real root only (a fake root's mounts are a mountinfo fixture); covers it: the same verify_mounted in test_nfs (not-answering, stat-failed, write-failed) and the VM stage's real NFS mounts (tests/vm check nfs)
	nfs.exports.exportfs-failed: exportfs runs on the real root only; covers it: the VM stage's head runs the real exportfs (check nfs, tests/vmcheck/nfs-self-probe.sh)
	nfs.exports.no-server: exportfs is looked for on the real root only; covers it: the VM stage's head (check nfs)
	memlock.self.limit: hpcinit's own getrlimit, said on the real root only; covers it: tests/vmcheck/memlock-systemd.sh in the VM stage
	ssh.sshd.config-invalid: sshd -t on the machine's own sshd_config, real root only; covers it: the VM stage's check ssh (sshd -t passes there)
	ssh.sshd.not-reloaded: SIGHUP to the machine's running sshd, real root only; covers it: the VM stage's check ssh
	gpu.nvml.reader: the agent cannot fork NVML's reader (no processes or memory left); covers it: gpu.nvml.timeout and the stand-in library (tests/system/gpu-nvml.sh), the same path after the start
	mpi.verify.cannot-run: the agent cannot fork mpirun (no processes or memory left); covers it: mpi.verify.launch-failed and timeout (tests/unit/test_mpi.c), the same report after the start
"
KNOWN_UNTESTED="
	discovery.dir.unreadable kernel.hold.error kernel.update.unknown rendezvous.value-too-large
	slurm.controller slurm.drain.admin slurm.drain.failed slurm.drained slurm.gres.short slurm.nodeaddr.failed
	slurm.gres.write slurm.leave.deleted slurm.leave.drained slurm.munge.start 
	slurm.register.timeout slurm.registered slurm.resume.failed slurm.resumed slurm.slurmd.rekey
	slurm.slurmd.start slurm.slurmd.stopped ssh.ca.no-secret ssh.ca.record-cert
"
srcs=$(find . \( -path ./tests -o -path './build*' -o -path './_build*' -o -path ./.git \) -prune \
	-o -name '*.c' -print | sed 's|^\./||' | sort)
tfiles=$(find tests -type f -not -path tests/system/finding-tags.pl -not -path tests/system/tests-findable.sh | sort)
perl tests/system/finding-tags.pl $srcs -- $tfiles >"$T/tags" || bail_out "finding-tags.pl failed"
listed() { echo "$NOT_HERE" | grep -qE "^[[:space:]]*$1:" || known "$(echo $KNOWN_UNTESTED)" "$1"; }
n=0 nt=0 nh=0 nk=0
while read -r what tag where; do
	case $what in
	unknown) not_ok "a finding at $tag with a computed tag ($where): teach finding-tags.pl's %dynamic which tags it can be"; continue ;;
	esac
	n=$((n + 1))
	if [ "$what" = tested ]; then
		nt=$((nt + 1))
		if listed "$tag"; then not_ok "finding tag $tag ($where) is in a test now: take it off the lists in $0"; else ok "finding tag $tag: in a test"; fi
	elif echo "$NOT_HERE" | grep -qE "^[[:space:]]*$tag:"; then
		nh=$((nh + 1)); echo "# finding tag $tag ($where) is not made here: $(echo "$NOT_HERE" | grep -E "^[[:space:]]*$tag:" | sed 's/^[^:]*: //')"
	elif known "$(echo $KNOWN_UNTESTED)" "$tag"; then
		nk=$((nk + 1)); echo "# known, finding tag in no test yet: $tag ($where)"
	else
		not_ok "finding tag $tag ($where) is in no test: write one that makes it and asserts it (or, where it cannot be made here, name it in NOT_HERE in $0 with what covers it)"
	fi
done <"$T/tags"
check "finding tags found" test "$n" -gt 100
for tag in $KNOWN_UNTESTED $(echo "$NOT_HERE" | sed -n 's/^[[:space:]]*\([a-z0-9.-]*\):.*/\1/p'); do
	grep -q " $tag " "$T/tags" || not_ok "finding tag $tag in the lists of $0 is in no source now: take it off"
done
echo "# finding tags: $n; in a test: $nt; not made here, covered otherwise: $nh; known untested: $nk"

done_testing
