#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The full VM scenario, by hand (CI runs the short one: tests/vm/cluster.sh):
#   1. a head and N computes (default 3) with the shipped custom-data: every
#      check of cluster.sh, then a reboot of a compute (the NFS mount and the
#      node come back), a compute booted later (scale-out through the refresh
#      timer), and the boot-to-ready split;
#   2. a head and 2 computes with root_squash on the export and a cluster
#      secret (--squash): boot, NFS, rendezvous, names, ssh, hpcinit verify.
# Prints every check; ends with "# N passed, N failed" over both runs.
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
run -n "$N" --checks "boot bench nfs hosts ssh mpi verify rdma memlock kernel reboot gating scaleout"
run -n 2 --squash --checks "boot nfs hosts ssh verify"
echo "# full scenario: $pass passed, $fail failed"
[ "$fail" -eq 0 ] && [ "$pass" -gt 0 ]
