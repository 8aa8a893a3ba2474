#!/bin/bash
# The README demo: install and build, then bring up a simulated cluster (a head and 3
# compute nodes in network namespaces, a shared directory), run `hpcinit apply` on every
# node, show each node's status, run mpirun across all nodes, and tear everything down.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
export HPCINIT=$PWD/build/hpcinit TOP_SRCDIR=$PWD TOP_BUILDDIR=$PWD/build
exec bash tests/cluster/demo.sh "$@"
