#!/bin/sh
# Runs INSIDE a real-kernel VM guest (tests/vm boots it) as root, with
# nfs-kernel-server and hpcinit installed.  The head's self-probe: with the
# NFS server running, apply says clients may mount; with it stopped, apply
# fails and says the server does not serve the export.  Usage: nfs-self-probe.sh [CLUSTER_NETWORK]
set -u
net=${1:-198.18.0.0/24}
fails=0
ok() { echo "ok - $*"; }
no() { echo "not ok - $*"; fails=$((fails + 1)); }
t=$(mktemp -d)
cat >"$t/node.yaml" <<YAML
version: 1
cluster: {name: vmcheck, role: head, network: $net}
nfs: {exports: [{path: /export-vmcheck, options: [rw, no_subtree_check]}]}
YAML
systemctl start nfs-server
hpcinit apply -c "$t/node.yaml" --only nfs -v >"$t/a1" 2>&1
rc=$?
[ "$rc" = 0 ] && grep -q 'may mount .*:/export-vmcheck' "$t/a1" && ok "server up: apply says clients may mount" ||
	{ no "server up: rc=$rc"; cat "$t/a1"; }
systemctl stop nfs-server
hpcinit apply -c "$t/node.yaml" --only nfs >"$t/a2" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q 'the NFS server does not serve .*:/export-vmcheck' "$t/a2" && ok "server stopped: apply fails and says so" ||
	{ no "server stopped: rc=$rc"; cat "$t/a2"; }
systemctl start nfs-server
rm -f /etc/exports.d/hpcinit.exports; exportfs -ra; rmdir /export-vmcheck 2>/dev/null; rm -rf "$t"
echo "# $fails failed"
[ "$fails" = 0 ]
