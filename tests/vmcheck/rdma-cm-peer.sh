#!/bin/sh
# Runs INSIDE a real-kernel VM guest (tests/vm boots it; on a compute) as root,
# with hpcinit installed, Soft-RoCE (rxe0 on eth0) and the cluster up.  The
# real rdma_cm path of the peer check: the probe helper's "route" command
# (rdma_resolve_addr, then rdma_resolve_route) resolves another VM's address
# through rxe0, an address nobody has does not resolve (named, within the
# timeout), and hpcinit check's mpi step reports every peer it probed.
# Usage: rdma-cm-peer.sh [PEER_ADDRESS]   (default: the head, from the hostfile)
set -u
fails=0
ok() { echo "ok - $*"; }
no() { echo "not ok - $*"; fails=$((fails + 1)); }
t=$(mktemp -d)
helper=$(dpkg -L hpcinit-rdma hpcinit 2>/dev/null | grep '/hpcinit-rdma-probe$' | head -1)
[ -x "$helper" ] || { no "hpcinit-rdma-probe installed (dpkg -L hpcinit-rdma)"; echo "# $fails failed"; exit 1; }
me=$(hostname)
peer=${1:-}
if [ -z "$peer" ]; then
	# another node's cluster address, from /etc/hosts as hpcinit wrote it
	other=$(grep -v '^#' /etc/hpcinit/hostfile.plain | awk '{print $1}' | grep -vx "$me" | head -1)
	peer=$(getent hosts "$other" | awk '{print $1}' | head -1)
fi
[ -n "$peer" ] || { no "a peer address (hostfile.plain: $(cat /etc/hpcinit/hostfile.plain 2>&1))"; echo "# $fails failed"; exit 1; }

"$helper" route "$peer" 5000 >"$t/r1" 2>&1
grep -q '^resolved rxe0$' "$t/r1" && grep -q '^result 8 0 ' "$t/r1" &&
	ok "rdma_resolve_addr + rdma_resolve_route to $peer via rxe0" ||
	{ no "route to $peer"; cat "$t/r1"; }
grep -q '^step 9$' "$t/r1" && ok "the route step ran (step 9: rdma_resolve_route)" || { no "no route step"; cat "$t/r1"; }

# An address on the cluster network that no VM has: no ARP answer, not resolved.
net=$(echo "$peer" | cut -d. -f1-3)
s=$(date +%s)
"$helper" route "$net.199" 3000 >"$t/r2" 2>&1
e=$(($(date +%s) - s))
grep -q '^result 8 ' "$t/r2" && { no "$net.199 resolved?"; cat "$t/r2"; } ||
	{ grep -q '^result ' "$t/r2" && [ "$e" -le 10 ] && ok "$net.199 (nobody) does not resolve, answered in $e s: $(grep -E '^(event|result)' "$t/r2" | tr '\n' ' ')" ||
	{ no "$net.199: no answer in $e s"; cat "$t/r2"; }; }

# hpcinit check: the mpi step probes the peers that follow this node and says so.
hpcinit check --json >"$t/c.json" 2>"$t/c.err"
python3 - "$t/c.json" <<'PY' >"$t/mpi" 2>&1 && ok "hpcinit check: $(head -1 "$t/mpi")" || { no "hpcinit check mpi step"; cat "$t/mpi" "$t/c.err"; }
import json, re, sys
d = json.load(open(sys.argv[1]))
m = [m for m in d["modules"] if m["name"] == "mpi"][0]
probed = [l for l in m["details"] if l.startswith("rdma_cm to ")]
good = [l for l in probed if re.search(r"resolves \(address and route\) via rxe0 in \d+ ms$", l)]
assert probed and len(good) == len(probed), (m["summary"], probed)
assert re.search(r"rdma_cm to (\d+) of \1 peer\(s\) ok", m["summary"]), m["summary"]
print(m["summary"])
for l in probed:
    print(l)
PY
grep '^rdma_cm to ' "$t/mpi" | sed 's/^/# /'
rm -rf "$t"
echo "# $fails failed"
[ "$fails" = 0 ]
