#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Records that must not be trusted, on four simulated nodes with a cluster
# secret: a record with a bad HMAC, one without an HMAC, one owned by a
# non-root user, a truncated one, a symlink, one whose file name and host
# name disagree.  Each is rejected with its own message, as a cluster
# finding (the run stays ready: nobody is drained for another node's
# record), and the rest of the cluster is fine (hostfiles list exactly the
# four real nodes).  A
# record that goes stale while read (NFS, replaced by its writer) is read
# again (stand-in: estale_shim.so).  Then
# the rendezvous directory itself: world-writable, or owned by a user, is
# refused outright (hostfiles are left as they were) until it is fixed.
SIM_PREFIX=drj SIM_NET=198.19.13
. "$(dirname "$0")/lib.sh"
GEN=$TOP_BUILDDIR/tests/bench/gen-records

N1=$(node 1) N2=$(node 2) N3=$(node 3) N4=$(node 4)
ALL=("$N1" "$N2" "$N3" "$N4")
sim up 4 --shared "$SHARED" >/dev/null
spec 5m 4 > "$T/node.yaml"
for n in "${ALL[@]}"; do install_spec "$n" "$T/node.yaml"; done
check "4 nodes apply" apply_all "$T/apply" "${ALL[@]}"
NODES=$SHARED/.hpcinit/$CLUSTER/nodes

# Planted records, each made to fail in exactly one way.
mkdir "$T/gen"
# 1. bad HMAC: node 4's real record, renamed to a new host, HMAC kept
sed -e "s/^hostname: $N4\$/hostname: evil-hmac/" -e "s/^addr: .*/addr: $SIM_NET.99/" \
	"$NODES/$N4.rec" > "$NODES/evil-hmac.rec"
# 2. no HMAC: a well-formed record written without the secret
"$GEN" -p evil-nohmac -n 10.77 "$T/gen" "$CLUSTER" 1
mv "$T/gen/evil-nohmac1.rec" "$NODES/"
# 3. owned by a non-root user: correct HMAC, wrong owner
"$GEN" -s "$T/cluster.key" -p evil-owner -n 10.78 "$T/gen" "$CLUSTER" 1
chown 65534:65534 "$T/gen/evil-owner1.rec"
mv "$T/gen/evil-owner1.rec" "$NODES/"
# 4. truncated: correct HMAC, cut short (as a non-atomic writer would leave it)
"$GEN" -s "$T/cluster.key" -p evil-trunc -n 10.79 "$T/gen" "$CLUSTER" 1
head -c 300 "$T/gen/evil-trunc1.rec" > "$NODES/evil-trunc1.rec"
# 5. a symlink to a valid record
"$GEN" -s "$T/cluster.key" -p evil-link -n 10.80 "$T/gen" "$CLUSTER" 1
ln -s "$T/gen/evil-link1.rec" "$NODES/evil-link1.rec"
# 6. file name and hostname disagree: node 2's record copied under another name
cp -p "$NODES/$N2.rec" "$NODES/evil-name.rec"
# 7. a record of another cluster sharing the directory tree by mistake
"$GEN" -s "$T/cluster.key" -p evil-other -n 10.81 "$T/gen" othercluster 1
mv "$T/gen/evil-other1.rec" "$NODES/"

run_hpc "$T/refresh" "$N1" "${REFRESH[@]}" -v
check "refresh with rejected records: exit 0 (cluster findings: others' records, not this node's problem)" \
	test "$rc" = 0
check "bad HMAC: its own message" contains "$T/refresh" \
	"record evil-hmac.rec: bad HMAC (tampered, or written with another cluster secret); rejected"
check "no HMAC: its own message" contains "$T/refresh" \
	"record evil-nohmac1.rec: no HMAC while cluster.secret_file is set; rejected"
check "non-root owner: its own message" contains "$T/refresh" \
	"record evil-owner1.rec: owned by uid 65534, not by the trusted writer (uid 0, root); rejected"
check "truncated: its own message" contains "$T/refresh" \
	"record evil-trunc1.rec: truncated (no \"...\" end marker); rejected"
check "symlink: its own message" contains "$T/refresh" "record evil-link1.rec: is a symbolic link; rejected"
check "name mismatch: its own message" contains "$T/refresh" \
	"record evil-name.rec: describes host $N2, not evil-name; rejected"
check "other cluster: its own message" contains "$T/refresh" \
	"record evil-other1.rec: line 3: belongs to cluster \"othercluster\", not \"$CLUSTER\"; rejected"
check "the summary points at the details" contains "$T/refresh" "records rejected, see details"
run_hpc "$T/check" "$N1" check --only discovery
check "check (Slurm's HealthCheckProgram) with rejected records: exit 0, nobody drained" test "$rc" = 0
for n in "${ALL[@]}"; do
	run_hpc "$T/refresh.$n" "$n" "${REFRESH[@]}"
	check "$n: the rest of the cluster is fine: exactly the 4 real nodes" hostfiles_list "$n" "${ALL[@]}"
done
check "no planted name reaches a hostfile or the clustershell group" \
	not_contains <(on "$N3" cat /etc/hpcinit/hostfile.plain /etc/clustershell/groups.d/hpcinit.yaml) evil
check "rejected records are kept for the admin to inspect (pruned only after the lease)" \
	test -e "$NODES/evil-hmac.rec" -a -e "$NODES/evil-trunc1.rec"
rm -f "$NODES"/evil-*

# The rendezvous directory itself.
chmod 0777 "$NODES"
run_hpc "$T/ww" "$N2" "${REFRESH[@]}"
check "world-writable rendezvous directory: refresh fails (exit 1)" test "$rc" = 1
check "world-writable: its own message" contains "$T/ww" \
	"rendezvous directory $NODES is writable by group or others (mode 0777)"
check "world-writable: nothing is planted meanwhile (no record rewritten, hostfiles kept)" \
	hostfiles_list "$N2" "${ALL[@]}"
check "world-writable: hostfile is skipped because discovery failed" grep -q '^hostfile  *skipped ' "$T/ww"
check "the directory is left for the admin to fix (hpcinit does not chmod it)" \
	test "$(stat -c %a "$NODES")" = 777
chmod 0755 "$NODES"

chown 1000:1000 "$NODES"
run_hpc "$T/owner" "$N3" "${REFRESH[@]}"
check "rendezvous directory owned by a user: refresh fails (exit 1)" test "$rc" = 1
check "user-owned directory: its own message" contains "$T/owner" \
	"is owned by uid 1000 but $SHARED/.hpcinit by uid 0; refusing a tree with mixed owners"
chown -R 1000:1000 "$SHARED/.hpcinit"
run_hpc "$T/owner2" "$N3" "${REFRESH[@]}"
check "a whole tree owned by a user (not root_squash: root writes as 0 here): refused" contains "$T/owner2" \
	"is owned by uid 1000, not root (and root writes as uid 0 here, so it is not a root_squash share)"
chown -R 0:0 "$SHARED/.hpcinit"

run_hpc "$T/fixed" "$N4" "${REFRESH[@]}"
check "once fixed, refresh is back to exit 0" test "$rc" = 0
check "once fixed, the 4 nodes are listed" hostfiles_list "$N4" "${ALL[@]}"

# A record its writer replaces (by rename, on another NFS client) while this
# node reads it: the old inode is gone on the server, so open, fstat or read
# answer ESTALE.  The host kernel has no NFS client: estale_shim.so
# (LD_PRELOAD) is a stand-in that gives those answers for one record.
SHIM=$TOP_BUILDDIR/tests/system/estale_shim.so
HPCINIT_WRAPPER="env LD_PRELOAD=$SHIM HPCINIT_ESTALE_SHIM=$N2.rec:2:2" run_hpc "$T/stale" "$N4" "${REFRESH[@]}" -v
check "a record stale on 2 opens and 2 reads: opened again, refresh exit 0" test "$rc" = 0
check "... nothing rejected" not_contains "$T/stale" "rejected"
check "... node 2 still in the hostfiles" hostfiles_list "$N4" "${ALL[@]}"
HPCINIT_WRAPPER="env LD_PRELOAD=$SHIM HPCINIT_ESTALE_SHIM=$N2.rec:0:1000" run_hpc "$T/stale2" "$N4" "${REFRESH[@]}" -v
check "a record that stays stale: tried a bounded number of times, then rejected (a cluster finding, exit 0)" \
	test "$rc" = 0
check "... with its own message" contains "$T/stale2" "record $N2.rec: cannot read: Stale file handle; rejected"
run_hpc "$T/stale3" "$N4" "${REFRESH[@]}"
check "... and the next refresh lists node 2 again" hostfiles_list "$N4" "${ALL[@]}"

# The secret itself must be private.
on "$N1" chmod 0644 /etc/hpcinit/cluster.key
run_hpc "$T/key" "$N1" "${REFRESH[@]}"
check "a group/world-readable cluster secret is refused" contains "$T/key" \
	"cluster.secret_file /etc/hpcinit/cluster.key: must be a regular file not readable by group or others (mode 0644)"

done_testing
