#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The full VM scenario, by hand (CI runs the short one: tests/vm/cluster.sh):
#   1. a head and N computes (default 3) with the shipped custom-data and a
#      2 min lease: every check of cluster.sh, then a reboot of a compute (the
#      NFS mount and the node come back), the boot-to-ready split, a compute
#      booted later (scale-out through the refresh timer, its join split),
#      that compute shut down cleanly (hpcinit-leave.service at poweroff) and
#      c2's power cut (gone after its lease);
#   2. a head and 2 computes with no_root_squash on the export (and the
#      cluster secret; --no-squash): boot, NFS, rendezvous, names, ssh, verify;
#   3. a head and 2 computes, the head booted 60 s after the computes: they
#      wait for its export, then converge;
#   4. a head and 2 computes that also run hpcinit-watch.service (--watch):
#      a compute booted later is listed within seconds, its clean shutdown
#      is gone everywhere within 15 s of it being off, c2's power cut after
#      its lease.
# Prints every check; ends with "# N passed, N failed" over all runs.
#
#   tests/vm/run.sh [N]
set -uo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
N=${1:-3}
pass=0 fail=0
run() {
	local out
	out=$(mktemp)
	bash "$SRC/tests/vm/cluster.sh" "$@" 2>&1 | tee "$out"
	pass=$((pass + $(grep -c '^ok - ' "$out")))
	fail=$((fail + $(grep -c '^not ok - ' "$out")))
	rm -f "$out"
}
run -n "$N" --lease 2m --checks "boot bench nfs hosts ssh mpi verify rdma rdmacm memlock kernel reboot gating vmcheck scaleout leave scalein"
run -n 2 --no-squash --checks "boot nfs hosts ssh verify"
run -n 2 --late-head 60 --checks "boot latehead nfs hosts ssh"
run -n 2 --watch --lease 2m --checks "boot scaleout leave scalein"
echo "# full scenario: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
