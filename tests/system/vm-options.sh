#!/bin/bash
# tests/vm/cluster.sh reads its options before it touches qemu: a name in
# --vmcheck that tests/vmcheck does not have stops the run with exit 2 and
# says which names there are.  Run with a PATH without qemu, so that a
# cluster.sh that let the name through fails its preflight (exit 1) instead
# of booting anything.
. "$(dirname "$0")/lib.sh"
CL=$TOP_SRCDIR/tests/vm/cluster.sh
mkdir "$T/bin"
for t in dirname basename mktemp date seq id cat sed grep tr; do
	p=$(command -v "$t") && ln -s "$p" "$T/bin/$t"
done
# run_cl OUT ARGS...: cluster.sh with that PATH, exit code in $rc
SH=$(command -v bash)
run_cl() { local out=$1; shift; rc=0; PATH=$T/bin "$SH" "$CL" "$@" >"$out" 2>&1 || rc=$?; }

run_cl "$T/out1" --vmcheck "memlock-systemd.sh nosuch.sh"
check "unknown --vmcheck name: exit 2" test "$rc" = 2
check "...names the unknown file" contains "$T/out1" "--vmcheck: no file nosuch.sh in tests/vmcheck"
have=
for f in "$TOP_SRCDIR"/tests/vmcheck/*.sh; do have="$have ${f##*/}"; done
check "...and lists what tests/vmcheck has" contains "$T/out1" "it has:$have"
check "...before any preflight or VM" not_contains "$T/out1" "host can run qemu VMs"
run_cl "$T/out2" --vmcheck "memlock-systemd"
check "a name without .sh is unknown too: exit 2" test "$rc" = 2
run_cl "$T/out3" --vmcheck "../vm/cluster.sh"
check "a path out of tests/vmcheck is unknown: exit 2" test "$rc" = 2
# known names pass the option check and reach the preflight, which fails here (no qemu on PATH)
run_cl "$T/out4" --vmcheck "memlock-systemd.sh nfs-self-probe.sh"
check "known names: past the option check (the preflight fails: exit 1)" test "$rc" = 1
check "...at the preflight" contains "$T/out4" "not ok - host can run qemu VMs"
# --release: a compute of this run, a suite image.sh builds (issue 35)
run_cl "$T/out5" -n 2 --release c3=trixie
check "--release of a VM that is not a compute of the run: exit 2" test "$rc" = 2
check "...says which computes there are" contains "$T/out5" "--release c3=trixie: c3 is not a compute of this run (c1..c2)"
run_cl "$T/out6" --release head=trixie
check "--release of the head: exit 2" test "$rc" = 2
run_cl "$T/out7" --release c1=jessie
check "--release of a suite image.sh does not build: exit 2" test "$rc" = 2
check "...names the suites" contains "$T/out7" "the suites are bookworm (default) and trixie"
run_cl "$T/out8" -n 2 --release c1=trixie
check "--release c1=trixie: past the option check (the preflight fails: exit 1)" test "$rc" = 1
check "...at the preflight" contains "$T/out8" "not ok - host can run qemu VMs"
done_testing
