#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The rendezvous on a share whose export squashes root (issue 12), with the
# real binary on fake roots that all see one shared directory ($SHARED, the
# export).  The head is the NFS server: it sees the export as a local
# directory where root is root.  A compute is a client whose root the
# server squashes: here it runs as uid 65534 (setpriv), which is what root
# on a root_squash client writes as.  What must hold:
#   - no_root_squash (the shipped conf): the tree is root's, as before;
#   - the head with root_squash: check says what apply will re-own and
#     changes nothing; apply gives every level of the tree and its own
#     record to 65534:65534 (0755 / 0644), a re-run changes nothing;
#   - squashed computes join: every node lists all three, a record owned by
#     anyone else is rejected with its reason, and a run without the cluster
#     secret says so with the tag discovery.squash.no-secret;
#   - the export back to no_root_squash: the head gives the anonymous uid's
#     tree back to root (check says so first), a user's tree stays refused.
# A compute simulated as uid 65534 cannot read root's 0600 secret or write
# hpcinit's status under /run: the runs without the secret show the owner
# rule (the HMAC with a secret is the same code as on root_squash-free
# shares, tested in discovery-reject.sh), and their status errors are noise.
SIM_PREFIX=dsq SIM_NET=198.19.31
. "$(dirname "$0")/lib.sh"
command -v setpriv >/dev/null || { echo "SKIP: needs setpriv (util-linux)"; exit 77; }

chmod 0755 "$SHARED"
NODES=$SHARED/.hpcinit/$CLUSTER/nodes
TNODES=/shared/.hpcinit/$CLUSTER/nodes      # as the runs name it

# mkroot NAME: a fake root whose /shared is the shared directory
mkroot() {
	local r=$T/$1
	mkdir -p "$r/etc/hpcinit" "$r/run/hpcinit"
	ln -s "$SHARED" "$r/shared"
	install -m 0600 "$T/cluster.key" "$r/etc/hpcinit/cluster.key"
}
# headspec OPTIONS [SECRET]: the head's spec, exporting /shared with OPTIONS
headspec() {
	cat <<-EOF
	version: 1
	cluster: {name: $CLUSTER, role: head, network: $SIM_NET.0/24${2:+, secret_file: /etc/hpcinit/cluster.key}}
	nfs:
	  exports:
	    - {path: /shared, options: $1}
	discovery: {method: shared, dir: /shared/.hpcinit, expect: 1, wait: 0s}
	EOF
}
# run_head OUT ARGS...: the head's run (as root), exit code in $rc
run_head() { local out=$1; shift; rc=0; HPCINIT_ADDRESS=$SIM_NET.10 "$HPCINIT" "$@" --root "$T/head" \
	--hostname head -c "$T/head.yaml" --only discovery -v >"$out" 2>&1 || rc=$?; }
# run_compute N OUT: compute N's run as uid 65534 (root squashed), exit code in $rc
run_compute() {
	local n=$1 out=$2 r=$T/c$1
	rc=0
	HPCINIT_ADDRESS=$SIM_NET.$((10 + n)) setpriv --reuid=65534 --regid=65534 --clear-groups \
		"$HPCINIT" apply --root "$r" --hostname "c$n" -c "$T/compute.yaml" --only discovery -v \
		>"$out" 2>&1 || rc=$?
}
# owner PATH UID:GID MODE
owner() { local got; got=$(stat -c '%u:%g %a' "$1"); [ "$got" = "$2 $3" ] || { echo "  $1: $got, want $2 $3"; return 1; }; }
tree_owned() {
	owner "$SHARED/.hpcinit" "$1" 755 && owner "$SHARED/.hpcinit/$CLUSTER" "$1" 755 && owner "$NODES" "$1" 755
}
listed() { local f=$1; shift; for n in "$@"; do contains "$f" "node $n " || return 1; done; }

mkroot head
for n in 1 2; do
	mkroot "c$n"
	# the lock file is the squashed user's: it cannot create one in root's /run/hpcinit
	: > "$T/c$n/run/hpcinit/lock"
	chown 65534:65534 "$T/c$n/run/hpcinit/lock"
done
cat > "$T/compute.yaml" <<-EOF
version: 1
cluster: {name: $CLUSTER, network: $SIM_NET.0/24}
discovery: {method: shared, dir: /shared/.hpcinit, expect: 1, wait: 0s}
EOF

# 1. no_root_squash, the shipped conf: root's tree, as before.
headspec "[rw, sync, no_root_squash, no_subtree_check]" secret > "$T/head.yaml"
run_head "$T/out.h1" apply
check "no_root_squash: the head's apply works (exit 0)" test "$rc" = 0
check "no_root_squash: the tree is root's, 0755" tree_owned 0:0
check "no_root_squash: the head's record is root's, 0644" owner "$NODES/head.rec" 0:0 644
run_compute 1 "$T/out.c1.refused"
check "no_root_squash tree: a squashed compute cannot write its record (exit 1)" test "$rc" = 1
check "...and says why and what to do" contains "$T/out.c1.refused" \
	"$TNODES is root's, and root cannot write there: does the share squash root"

# 2. The export squashes root now (an upgraded cluster): check first, then apply.
headspec "[rw, sync, no_subtree_check]" secret > "$T/head.yaml"
run_head "$T/out.h2" check
check "root_squash, check: says apply re-owns the tree" contains "$T/out.h2" \
	"$TNODES: owned by 0:0; apply gives it to 65534:65534 (the export's anonymous uid)"
check "root_squash, check: changes nothing" tree_owned 0:0
run_head "$T/out.h3" apply
check "root_squash, apply: exit 0" test "$rc" = 0
check "root_squash, apply: says it re-owned the tree" contains "$T/out.h3" \
	"$TNODES: re-owned from 0:0 to 65534:65534 (the export's anonymous uid)"
check "root_squash, apply: says whom it trusts and why" contains "$T/out.h3" \
	"$TNODES: this node exports /shared with root_squash: root on its clients writes as uid 65534"
check "root_squash, apply: every level is 65534:65534, 0755" tree_owned 65534:65534
check "root_squash, apply: the head's record is 65534:65534, 0644" owner "$NODES/head.rec" 65534:65534 644
check "the export itself stays root's" owner "$SHARED" 0:0 755
run_head "$T/out.h4" apply
check "root_squash, re-run: exit 0, nothing changed" test "$rc" = 0
check "root_squash, re-run: no re-owning" not_contains "$T/out.h4" "re-owned"

# 3. Squashed computes join (no secret: they could not read root's); so does the head.
headspec "[rw, sync, no_subtree_check]" > "$T/head.yaml"
run_head "$T/out.h5" apply --json
check "no secret on a squashed share: the head's run says so, with the tag" contains "$T/out.h5" \
	'"discovery.squash.no-secret"'
check "no secret: degraded (exit 3)" test "$rc" = 3
run_compute 1 "$T/out.c1"
check "squashed compute 1: its probe finds the anonymous uid" contains "$T/out.c1" \
	"$TNODES: root is squashed to uid 65534 on this share; records owned by uid 65534 are accepted"
check "squashed compute 1: no secret: the finding" contains "$T/out.c1" \
	"there is no cluster.secret_file: any process that writes as uid 65534 on any client"
check "squashed compute 1: its record is 65534's" owner "$NODES/c1.rec" 65534:65534 644
run_compute 2 "$T/out.c2"
check "squashed compute 2 lists the head and compute 1" listed "$T/out.c2" head c1 c2
# a record written by root on a client (not squashed: another server's rules) or by a user
mkdir "$T/gen"
"$TOP_BUILDDIR/tests/bench/gen-records" -p evil -n 10.77 "$T/gen" "$CLUSTER" 2
chown 1000:1000 "$T/gen/evil1.rec"
cp -p "$T/gen/evil1.rec" "$T/gen/evil2.rec" "$NODES/"
run_compute 1 "$T/out.c1b"
check "squashed compute: a record owned by root is rejected" contains "$T/out.c1b" \
	"record evil2.rec: owned by uid 0, not by the trusted writer (uid 65534, root squashed); rejected"
check "squashed compute: a record owned by a user is rejected" contains "$T/out.c1b" \
	"record evil1.rec: owned by uid 1000, not by the trusted writer (uid 65534, root squashed); rejected"
check "squashed compute 1 lists the head and compute 2" listed "$T/out.c1b" head c1 c2
run_head "$T/out.h6" apply
check "the head lists both squashed computes" listed "$T/out.h6" head c1 c2
check "the head rejects a user's record" contains "$T/out.h6" \
	"record evil1.rec: owned by uid 1000, not by the trusted writer (uid 65534, root squashed); rejected"
check "the head re-owns root's record (only root on the head writes as root here)" contains "$T/out.h6" \
	"record evil2.rec: owned by root (written before root was squashed); re-owned to uid 65534"

# 4. The export stops squashing root: the head gives the tree back to root (check first).
headspec "[rw, sync, no_root_squash, no_subtree_check]" > "$T/head.yaml"
run_head "$T/out.h7" check
check "no_root_squash again, check: says apply gives the tree back" contains "$T/out.h7" \
	"$TNODES: owned by 65534:65534 (the export's anonymous uid, from when it squashed root); apply gives it back to 0:0"
check "no_root_squash again, check: changes nothing" tree_owned 65534:65534
run_head "$T/out.h8" apply
check "no_root_squash again, apply: not refused" not_contains "$T/out.h8" "refusing it"
check "no_root_squash again, apply: says it re-owned the tree" contains "$T/out.h8" \
	"$TNODES: re-owned from 65534:65534 to 0:0 (this node exports /shared with no_root_squash now)"
check "no_root_squash again, apply: every level is 0:0, 0755" tree_owned 0:0
check "no_root_squash again, apply: the head's record is root's, 0644" owner "$NODES/head.rec" 0:0 644
check "no_root_squash again: a record still 65534's is not trusted as root's" contains "$T/out.h8" \
	"record c1.rec: owned by uid 65534, not by the trusted writer (uid 0, root); rejected"
run_head "$T/out.h9" apply
check "no_root_squash again, re-run: no re-owning" not_contains "$T/out.h9" "re-owned"
# only the anonymous uid's tree goes back to root: a user's is still refused
chown 1000:1000 "$SHARED/.hpcinit" "$SHARED/.hpcinit/$CLUSTER" "$NODES"
run_head "$T/out.h10" apply
check "a tree owned by a user: refused (exit 1)" test "$rc" = 1
check "...with the reason" contains "$T/out.h10" \
	"$TNODES is owned by uid 1000, not root (and root writes as uid 0 here, so it is not a root_squash share); refusing it (chown root $TNODES)"
check "...and left alone" tree_owned 1000:1000

# 5. A compute early: its mount works before the head made the tree (the
#    head's export is up before its discovery step runs).  On a root_squash
#    share only the head can make it; apply waits for it within
#    discovery.wait, a refresh looks once.
rm -rf "$SHARED/.hpcinit"
headspec "[rw, sync, no_subtree_check]" > "$T/head.yaml"
sed 's/wait: 0s/wait: 60s/' "$T/compute.yaml" > "$T/compute-wait.yaml"
rc=0
HPCINIT_ADDRESS=$SIM_NET.11 setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$HPCINIT" refresh --root "$T/c1" --hostname c1 -c "$T/compute-wait.yaml" -v >"$T/out.c1r" 2>&1 || rc=$?
check "no tree yet: a squashed compute's refresh fails at once (exit 1)" test "$rc" = 1
check "...saying it cannot create the tree" contains "$T/out.c1r" "cannot create: Permission denied"
HPCINIT_ADDRESS=$SIM_NET.11 setpriv --reuid=65534 --regid=65534 --clear-groups \
	"$HPCINIT" apply --root "$T/c1" --hostname c1 -c "$T/compute-wait.yaml" --only discovery -v \
	>"$T/out.c1w" 2>&1 &
cpid=$!
sleep 2
check "no tree yet: the squashed compute's apply is still waiting after 2 s" kill -0 "$cpid"
run_head "$T/out.h11" apply
check "the head makes the tree (exit 3: no secret)" test "$rc" = 3
rc=0
wait "$cpid" || rc=$?
check "the compute's apply then ends, degraded only by the missing secret (exit 3, as in 3.)" test "$rc" = 3
check "...having said it waited for the tree" contains "$T/out.c1w" "ms for the rendezvous tree: there now"
check "...and its record is 65534's" owner "$NODES/c1.rec" 65534:65534 644
check "...and it lists the head" listed "$T/out.c1w" head c1

done_testing
