#!/bin/bash
# SPDX-License-Identifier: MIT
#
# tests/vm/exec.sh WORK NAME 'COMMAND' [TIMEOUT_S]
#
# Run COMMAND as root with bash inside VM NAME of a cluster that
# tests/vm/cluster.sh started in WORK (keep it up with --hold), through
# the same 9p agent the harness uses (tests/vm/agent.sh): print its output
# and exit with its status (124 when it did not finish in TIMEOUT_S,
# default 120).  For looking around in a held cluster:
#   tests/vm/exec.sh /tmp/hpcinit-vm.XXXX c1 'hpcinit status; journalctl -b -u hpcinit.service'
set -euo pipefail
[ $# -ge 3 ] || { echo "usage: $0 WORK NAME 'COMMAND' [TIMEOUT_S]" >&2; exit 2; }
W=$1 n=$2 cmd=$3 to=${4:-120}
d=$W/vm/$n
[ -d "$d/cmd" ] || { echo "$0: $d/cmd: no such VM in $W (names: $(ls "$W/vm" 2>/dev/null | tr '\n' ' '))" >&2; exit 2; }
id=x$(date +%s%N)$RANDOM
printf '%s\n' "$cmd" > "$d/cmd/.$id"
mv "$d/cmd/.$id" "$d/cmd/$id.sh"
end=$(($(date +%s) + to))
while [ ! -e "$d/out/$id.rc" ]; do
	if [ "$(date +%s)" -ge "$end" ]; then
		echo "(timed out after $to s)" >&2
		cat "$d/out/$id.out" 2>/dev/null || true
		exit 124
	fi
	sleep 0.3
done
cat "$d/out/$id.out"
exit "$(cat "$d/out/$id.rc")"
