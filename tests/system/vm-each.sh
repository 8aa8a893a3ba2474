#!/bin/bash
# tests/vm/checks-cluster.sh's each_vm runs one script on every VM at once
# inside the harness, which runs under set -Eeuo pipefail.  A VM whose script
# fails must make the check "not ok" with that VM's output, and the harness
# must go on to the next check: before, the failing VM's background
# subshell ended (set -e) before it wrote its exit code, wait returned that
# status and set -e ended the whole run (a real-VM Slurm run stopped after
# its first check, printing no counts).  No VMs here: vm_exec is a stand-in
# that answers for the VM names without qemu.
. "$(dirname "$0")/lib.sh"
cat > "$T/harness.sh" <<'SH'
set -Eeuo pipefail
W=$1
names() { echo head; echo c1; echo c2; }
. "$3"    # tests/lib/tap.sh, as cluster.sh sources it
# stand-in for the 9p agent: c2 (the last waited for) fails with output, c1 silently
vm_exec() {
	case $1 in
	c2) echo "c2 says no"; return 1 ;;
	c1) return 3 ;;
	*) echo "fine" ;;
	esac
}
. "$2"
each_vm "a check failing on c1 and c2" 'true'
vm_exec() { echo fine; }
each_vm "a check passing everywhere" 'true'
echo "harness went on"
SH
mkdir "$T/w"
rc=0
bash "$T/harness.sh" "$T/w" "$TOP_SRCDIR/tests/vm/checks-cluster.sh" "$TOP_SRCDIR/tests/lib/tap.sh" > "$T/out" 2>&1 || rc=$?
check "the harness under set -e goes on after a failing VM script (exit $rc)" contains "$T/out" "harness went on"
check "...the check is not ok" contains "$T/out" "not ok - a check failing on c1 and c2"
check "...with the failing VM's output" contains "$T/out" "#   c2 says no"
check "...and the silent one named" contains "$T/out" "#   c1:"
check "...the next check passes" grep -qx "ok - a check passing everywhere" "$T/out"
done_testing
