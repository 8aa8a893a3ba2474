#!/bin/bash
# The whole test suite, as CI runs it (after tools/setup.sh built build/):
#   1. make check: unit, system and cluster tests on the -Werror build, twice as many at once
#      as cores (and, in the background, the VM images' Debian layers: stage 8 needs them)
#   1b. README's demo command (bash tools/demo.sh) as a newcomer runs it: a private mount
#      namespace where no installed hpcinit is visible, a clean environment (tests/fresh-demo.sh)
#   2. ASan+UBSan build: unit and core system tests
#   3. valgrind: unit tests and the binary in the core system tests
#   4. make distcheck: the tarball has every tracked file (tests/dist-complete.sh, its hook),
#      builds with -Werror out of its read-only tree and passes the quick tests (the whole
#      suite ran in 1.; that the suite writes nothing into the source tree, which distcheck's
#      read-only tree used to prove for every test, the last stage checks for the whole run)
#   5. build variants: --without-libnfs and --without-mpi compile with -Werror
#      (and run the few quick unit tests their options touch)
#   6. libFuzzer: the spec loader, the peer-record parser and the etcd helper's input, 20 s each
#   6b. the fault campaign (tests/faults), 30 s of faults on each method, the three side by side
#   7. packaging: .deb (lintian, install, remove) and .rpm
#   8. real VMs: tests/vm/cluster.sh, a head and 2 computes under qemu (each check counted)
#   9. the run left the source tree as it found it (git status, build directories aside)
# Each stage prints its wall time.  It ends with one line: "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
SRC=$PWD
J=$(nproc)
pass=0
fail=0
stage_fail=()

count_log() {   # add the PASS/FAIL counts of an automake test-suite.log summary
	local log=$1 p f
	p=$(sed -n 's/^# PASS: *//p' "$log" | tail -1)
	f=$(sed -n 's/^# FAIL: *//p' "$log" | tail -1)
	x=$(sed -n 's/^# ERROR: *//p' "$log" | tail -1)
	s=$(sed -n 's/^# SKIP: *//p' "$log" | tail -1)
	pass=$((pass + ${p:-0}))
	fail=$((fail + ${f:-0} + ${x:-0} + ${s:-0}))   # skipped is not passed
}
stage() {       # stage NAME CMD...: a stage that is one test
	local name=$1 t0=$SECONDS; shift
	echo "=== $name"
	if "$@"; then pass=$((pass + 1)); echo "=== $name: ok ($((SECONDS - t0)) s)"
	else fail=$((fail + 1)); stage_fail+=("$name"); echo "=== $name: FAILED ($((SECONDS - t0)) s)"; fi
}
# The source tree as git sees it (ignored files too), build directories aside: stage 9
# compares the end of the run with its start.
tree_state() { git status --porcelain --ignored --untracked-files=all 2>/dev/null | grep -vE '^!! (build[^/]*/|autom4te\.cache/)' | sort; }
tree_state >build/tree-before.txt
UNIT_AND_CORE() { make -s -C "$1" print-fast-tests; }

# The VM stage's image layers that need no package of this run (the Debian 12 and 13 bases,
# debootstrap; Debian 13's own .deb of this tree) are built in the background from here,
# beside make check, whose tests mostly wait: on a fresh machine that is minutes the VM
# stage no longer waits for (tests/vm/image.sh --prepare; cached layers take a second).
# The VM stage waits for it; a failure here is the VM stage's (its image.sh says why).
( bash tests/vm/image.sh --prepare && bash tests/vm/image.sh --suite trixie --prepare ) >build/vm-prepare.out 2>&1 &
VM_PREPARE=$!

# make check runs twice as many tests at once as there are cores: its tests mostly wait
# (deadlines, leases, daemons; measured on 2 cores at -j2: 235 s of CPU in 435 s) and
# each names its own namespaces, bridge and scratch directory (tests/cluster/lib.sh).
echo "=== make check (build/, -j$((2 * J)))"
t0=$SECONDS
make -C build -j$((2 * J)) check >build/check.out 2>&1
rc=$?
grep -E '^(PASS|FAIL|ERROR|SKIP|XFAIL|XPASS):|^# ' build/check.out
echo "=== make check: exit $rc ($((SECONDS - t0)) s)"
[ $rc -eq 0 ] || { stage_fail+=("make check"); for f in $(grep -lE '^:test-result: (FAIL|ERROR|SKIP)' $(find build/tests -name '*.trs') 2>/dev/null); do echo "--- ${f%.trs}.log"; tail -40 "${f%.trs}.log"; done; }
count_log build/check.out

# After the .deb stage as before it: fresh-demo.sh hides any installed copy itself.
stage "README demo: bash tools/demo.sh, no installed hpcinit (tests/fresh-demo.sh)" \
	bash -c "cd '$SRC' && bash tests/fresh-demo.sh >build/fresh-demo.out 2>&1 || { tail -60 build/fresh-demo.out; exit 1; }; grep -E '^fresh-demo:|exited|hello from|allreduce|^demo:' build/fresh-demo.out"

asan() {
	mkdir -p build-asan && cd build-asan &&
	{ [ -f Makefile ] || ../configure --enable-werror --enable-test-backends --without-mpi \
		CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" \
		LDFLAGS="-fsanitize=address,undefined" >/dev/null; } &&
	make -j"$J" >/dev/null &&
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		make -j"$J" check TESTS="$(make -s print-fast-tests)" >check.out 2>&1
	local r=$?; grep -E '^(PASS|FAIL|ERROR|SKIP):|^# (TOTAL|PASS|FAIL)' check.out; [ $r -eq 0 ]
}
stage "ASan+UBSan: unit and core system tests" bash -c "$(declare -f asan); cd '$SRC' && J=$J asan"

valgrind_run() {
	cd build && make -j"$J" check TESTS="$(make -s print-fast-tests)" \
		LOG_COMPILER="valgrind --error-exitcode=99 -q --leak-check=full --errors-for-leak-kinds=definite" \
		HPCINIT_WRAPPER="valgrind --error-exitcode=99 -q --leak-check=full --errors-for-leak-kinds=definite" \
		KILL_TRIALS=5 >check-valgrind.out 2>&1
	local r=$?; grep -E '^(PASS|FAIL|ERROR|SKIP):|^# (TOTAL|PASS|FAIL)' check-valgrind.out; [ $r -eq 0 ]
}
stage "valgrind: unit and core system tests" bash -c "$(declare -f valgrind_run); cd '$SRC' && J=$J valgrind_run"

# distcheck: the tarball's completeness (its hook), its -Werror build and install, and the
# quick tests from it (TESTS reaches the tarball's make check through MAKEFLAGS).
stage "make distcheck (every tracked file in the tarball, quick tests)" bash -c "cd '$SRC/build' && make -j$J distcheck DISTCHECK_CONFIGURE_FLAGS='--enable-werror' TESTS=\"\$(make -s print-fast-tests)\" >distcheck.out 2>&1 || { tail -60 distcheck.out; exit 1; }; grep -E '^dist-complete:|^# (TOTAL|PASS|FAIL):' distcheck.out"

# A build variant in its own directory: configure --enable-werror with the
# options, build everything (check programs too), run the named quick tests.
variant() {     # variant DIR "TESTS" CONFIGURE-OPTION...
	local dir=$1 tests=$2; shift 2
	mkdir -p "$dir" && cd "$dir" || return 1
	if [ ! -f Makefile ]; then
		../configure --enable-werror "$@" >configure.out 2>&1 || { tail -20 configure.out; return 1; }
	fi
	make -j"$J" >make.out 2>&1 || { grep -E 'error|warning' make.out | head -40; tail -5 make.out; return 1; }
	make -j"$J" check TESTS="$tests" >check.out 2>&1
	local r=$?; grep -E '^(PASS|FAIL|ERROR|SKIP):|^# (TOTAL|PASS|FAIL)' check.out; [ $r -eq 0 ]
}
stage "build --without-libnfs (-Werror)" bash -c "$(declare -f variant); cd '$SRC' && J=$J variant build-nolibnfs 'tests/unit/test_nfs' --without-libnfs"
stage "build --without-mpi (-Werror)" bash -c "$(declare -f variant); cd '$SRC' && J=$J variant build-nompi 'tests/unit/test_mpi' --without-mpi"

# Short libFuzzer runs of the parsers (the long runs are by hand: run.sh 3600).
# A fuzzer is one process on one core: with 2 or more cores two run at once, each still
# with a core of its own for its 20 s (a third at once would share them: fewer runs).
fuzz_start() {  # fuzz_start NAME SCRIPT: run it in the background, output in build/fuzz-NAME.out
	sh "$2" 20 >"build/fuzz-$1.out" 2>&1 &
	FUZZ_PID[$1]=$!
}
fuzz_wait() {   # fuzz_wait NAME: its exit status, its last lines
	[ -n "${FUZZ_RC[$1]:-}" ] || { FUZZ_RC[$1]=0; wait "${FUZZ_PID[$1]}" || FUZZ_RC[$1]=$?; }
	tail -3 "build/fuzz-$1.out"
	return "${FUZZ_RC[$1]}"
}
declare -A FUZZ_PID=() FUZZ_RC=()
fuzz_start spec tests/fuzz/run.sh
[ "$J" -ge 2 ] || fuzz_wait spec >/dev/null || true
fuzz_start record tests/fuzz/run-record.sh
stage "fuzz: spec loader, 20 s" fuzz_wait spec
fuzz_start etcd tests/fuzz/run-etcd.sh
stage "fuzz: peer records, 20 s" fuzz_wait record
stage "fuzz: etcd helper's JSON, 20 s" fuzz_wait etcd

# The fault campaign (issue 26), short: random faults on 4 simulated nodes with invariants,
# each method, then the long etcd outages alone with a 3 s lease (issue 37; about a minute).
# CI uses fixed seeds (10 and 11 each green for 150 s by hand, 12 for its 30 s) so that a red
# run can be replayed as it was; new seeds and long runs are by hand (docs/faults.md).
# The three run side by side, each on its own /24 (FAULTS_NET), each its output in
# build/campaign-SEED.out, printed in seed order: they mostly wait (measured: 25 s of CPU
# in a 70 s run), and one after the other they took 3 minutes.
campaigns() {
	local rc=0 s p pids=()
	# camp SEED NET [VAR=VALUE...] -- ARGS...: 30 s of campaign.sh ARGS in the background, on
	# NET.0/24 (its own: the three run side by side), its output in build/campaign-SEED.out
	camp() {
		local seed=$1 net=$2 envs=()
		shift 2
		while [ "$1" != -- ]; do envs+=("$1"); shift; done
		shift
		env TOP_BUILDDIR="$SRC/build" FAULTS_NET="$net" "${envs[@]}" bash tests/faults/campaign.sh \
			--seed "$seed" --time 30 "$@" >"build/campaign-$seed.out" 2>&1 &
		pids+=($!)
	}
	camp 10 198.19.60 -- --quiet 20 --method shared
	camp 11 198.19.61 -- --quiet 20 --method etcd
	camp 12 198.19.62 LEASE_S=3 -- --quiet 60 --method etcd --faults etcd_outage,etcd_leader
	for p in "${pids[@]}"; do wait "$p" || rc=1; done
	for s in 10 11 12; do cat "build/campaign-$s.out"; done
	return $rc
}
stage "fault campaign: tests/faults/campaign.sh, 30 s of faults a method" bash -c "$(declare -f campaigns); cd '$SRC' && SRC='$SRC' campaigns"

for s in packaging/build-deb.sh packaging/build-rpm.sh; do
	[ -f "$s" ] && stage "$s" bash "$s"
done

# Real VMs (issue 12): a head and 2 computes under qemu (software emulation),
# booted by cloud-init from the product's custom-data; every named check
# counts.  A host that cannot run qemu fails here, it is not skipped.
# c1 runs Debian 13 beside the Debian 12 head and c2 (issue 35: two releases
# in one cluster; its image is built and cached once, like the other).
vm_stage() {
	local out=build/vm-stage.out p f rc=0 t0=$SECONDS
	echo "=== VM stage: tests/vm/cluster.sh -n 2 --nfs41 --release c1=trixie (log: $out)"
	# nfs-server-stopped.sh waits out real deadlines (~3 min): tests/vm/run.sh runs it.
	# The .debs the packaging stage built (and held to lintian) from this tree go into the
	# image: image.sh need not build them a second time.
	local debs=
	wait "$VM_PREPARE" || echo "# the background image layers failed (build/vm-prepare.out): image.sh tries again"
	grep -E '^image: (base|deb) [0-9a-f]+: (built|cached)' build/vm-prepare.out | sed 's/^/#   prepared: /'
	[[ " ${stage_fail[*]} " == *" packaging/build-deb.sh "* ]] || ! ls build/packages/hpcinit_*.deb >/dev/null 2>&1 ||
		debs=$SRC/build/packages
	HPCINIT_VM_DEBS=$debs bash tests/vm/cluster.sh -n 2 --nfs41 --release c1=trixie --vmcheck "health-live.sh memlock-systemd.sh nfs-self-probe.sh rdma-cm-peer.sh" > "$out" 2>&1 || rc=$?
	grep -E '^(ok|not ok) - |^#   |^# [0-9]+ passed|^# [0-9:]+ (image( [a-z]+)? ready|.*: cloud-init finished|check [a-z]+: [0-9]+ s)' "$out"
	p=$(grep -c '^ok - ' "$out")
	f=$(grep -c '^not ok - ' "$out")
	[ "$rc" -eq 0 ] || [ "$f" -gt 0 ] || f=1
	pass=$((pass + p))
	fail=$((fail + f))
	if [ "$rc" -ne 0 ]; then stage_fail+=("VM stage"); tail -30 "$out"; echo "=== VM stage: FAILED"
	else echo "=== VM stage: ok ($((SECONDS - t0)) s)"; fi
}
vm_stage

# No stage writes into the source tree (distcheck's read-only tree proved that for the
# tests it ran; this, for the whole run): what git sees is what it saw at the start.
stage "the run left the source tree as it found it (git status)" bash -c "cd '$SRC' && $(declare -f tree_state); tree_state | diff -U0 build/tree-before.txt - | grep '^[-+][^-+]' | sed 's/^/  changed: /'; tree_state | cmp -s build/tree-before.txt -"

echo
[ ${#stage_fail[@]} -eq 0 ] || echo "failed stages: ${stage_fail[*]}"
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ ${#stage_fail[@]} -eq 0 ]
