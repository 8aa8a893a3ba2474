#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Boot-to-ready of real VMs (issue 12): a head and N computes (default 2)
# booted by tests/vm/cluster.sh from the product's custom-data, then for
# each VM the split from power-on: kernel start, userspace, cloud-init,
# hpcinit.service start and ready, cloud-final done, hpcinit's boot run
# (its waits for the NFS server and the peers included) and a converged
# "hpcinit apply" (hpcinit's own share once server and peers are up).
# Then a compute that joins the running cluster: power-on to kernel,
# cloud-init done, hpcinit ready, and listed by every old node (their
# hpcinit-refresh.timer, every minute).
# Printed, not asserted.  Software emulation (no KVM): the absolute numbers
# are those of this machine's CPUs, shared with whatever else runs.
#
#   tests/bench/vm-boot.sh [N]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
N=${1:-2}
echo "# vm-boot: head + $N computes, $(nproc) host cores, load $(cut -d' ' -f1-3 /proc/loadavg)"
exec bash "$SRC/tests/vm/cluster.sh" -n "$N" --checks "boot bench scaleout"
