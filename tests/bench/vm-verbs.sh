#!/bin/bash
# SPDX-License-Identifier: MIT
#
# MPI over real verbs on the VMs (issue 27): a head and 2 computes booted by
# tests/vm/cluster.sh, whose computes make Soft-RoCE rxe0 the MPI fabric
# (mpi.software_fabric); then "hpcinit verify" from c1 and, between the two
# VMs verify measured, in the same run, perftest's ib_send_lat and
# ib_write_bw on rxe0: the latency and bandwidth of both side by side, and
# their ratio.  A perftest that does not run fails the run and no ratio is
# printed.  Printed, not asserted.  Software emulation (no KVM): the
# numbers are those of this machine's CPUs, shared with whatever else runs.
#
#   tests/bench/vm-verbs.sh      (as root, under flock /work/vm.lock on shared hosts)
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
echo "# vm-verbs: head + 2 computes, $(nproc) host cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
exec bash "$SRC/tests/vm/cluster.sh" -n 2 --checks "boot hosts fabric verbsbench"
