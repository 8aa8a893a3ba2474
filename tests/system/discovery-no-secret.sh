#!/bin/bash
# SPDX-License-Identifier: MIT
#
# "hpcinit check" names an unauthenticated rendezvous on a share others can
# write: a head exporting the rendezvous with no_root_squash and no
# cluster.secret_file gets the finding discovery.rendezvous.no-secret
# (degraded, exit 3); the same head with a secret, or with root_squash and a
# secret (the shipped conf/head.yaml), does not.  Fake root, real binary.
. "$(dirname "$0")/lib.sh"

R=$T/root
mkroot "$R"
mkdir -p "$R/shared" "$R/etc/hpcinit" "$R/home/azureuser"
openssl rand -hex 32 > "$R/etc/hpcinit/cluster.key"
chmod 0600 "$R/etc/hpcinit/cluster.key"
# on_head SQUASH SECRET: the head's spec
on_head() {
	cat <<-EOF
	version: 1
	cluster: {name: glocluster, role: head, network: 10.0.0.0/24$2}
	nfs: {exports: [{path: /shared, options: [rw, sync, $1, no_subtree_check]}]}
	discovery: {method: shared, dir: /shared/.hpcinit}
	EOF
}
export HPCINIT_ADDRESS=10.0.0.4
on_head no_root_squash "" > "$T/open.yaml"
on_head no_root_squash ", secret_file: /etc/hpcinit/cluster.key" > "$T/secret.yaml"
cp "$TOP_SRCDIR/conf/head.yaml" "$T/shipped.yaml"

run_hpc "$T/first.out" apply --root "$R" -c "$T/secret.yaml" --only discovery --hostname head
check "the head with a secret applies (exit 0)" test "$rc" = 0
run_hpc_stdout "$T/open.json" check --json --root "$R" -c "$T/open.yaml" --only discovery --hostname head
check "no_root_squash export, no secret: check is degraded (exit 3)" test "$rc" = 3
check "... and names discovery.rendezvous.no-secret" contains "$T/open.json" '"discovery.rendezvous.no-secret"'
run_hpc_stdout "$T/secret.json" check --json --root "$R" -c "$T/secret.yaml" --only discovery --hostname head
check "with cluster.secret_file: no such finding" not_contains "$T/secret.json" 'no-secret'
R=$T/root2
mkroot "$R"
mkdir -p "$R/shared" "$R/etc/hpcinit" "$R/home/azureuser"
cp -p "$T/root/etc/hpcinit/cluster.key" "$R/etc/hpcinit/cluster.key"
run_hpc "$T/shipped.out" apply --root "$R" -c "$T/shipped.yaml" --only discovery --hostname head
[ "$rc" = 0 ] || sed "s/^/  | /" "$T/shipped.out"
check "the shipped conf/head.yaml (root_squash, a secret): apply exits 0" test "$rc" = 0
check "... with no finding about the secret" not_contains "$T/shipped.out" 'no-secret'
done_testing
