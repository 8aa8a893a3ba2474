#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Power-on to schedulable on real VMs (issue 25): a head and N computes
# (default 2) booted by tests/vm/cluster.sh --slurm from the product's Slurm
# custom-data (conf/cloud-init/slurm-head.yaml runs slurmctld; each
# slurm-compute.yaml VM registers itself as a dynamic node).  After the
# checks (sinfo, srun, drains), for each compute the split from power-on:
# kernel, cloud-init start, hpcinit ready, registered with Slurm, cloud-init
# end (from /run/hpcinit/boot.json), slurmd's start (Slurm's own
# SlurmdStartTime), and the first srun's end (its job's EndTime).  Printed, not asserted.  Software emulation (no KVM): the absolute
# numbers are this machine's, shared with whatever else runs.
#
# --baked: the VMs boot from an image that already holds the custom-data's
# packages (HPCINIT_VM_BAKE for tests/vm/image.sh: slurmd, slurmctld,
# slurm-client, munge, libpmix-dev), as a real deployment bakes them
# (conf/cloud-init/image-build.yaml); cloud-init's "packages:" then installs
# nothing.  The slurmshare check prints hpcinit's own part of each compute's
# boot from its run's report (/run/hpcinit/boot.json, hpcinit status).
#
#   tests/bench/vm-slurm-boot.sh [--baked] [N]
set -euo pipefail
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BAKED=0
[ "${1:-}" != --baked ] || { BAKED=1; shift; }
N=${1:-2}
echo "# vm-slurm-boot: head + $N computes, $(nproc) host cores, load $(cut -d' ' -f1-3 /proc/loadavg)$([ $BAKED = 0 ] || echo ', baked image')"
[ "$BAKED" = 0 ] || export HPCINIT_VM_BAKE="slurmd slurmctld slurm-client munge libpmix-dev"
exec bash "$SRC/tests/vm/cluster.sh" -n "$N" --slurm --checks "slurm slurmbench slurmshare slurmleave"
