#!/bin/bash
# The nfs module's files on a fake root, with the real binary and no network:
# the example specs validate and plan to the documented fstab lines; fstab
# and exports edits are idempotent, keep other lines byte for byte, and a
# mount removed from the spec loses its line.  Mounts are "already mounted"
# through a mountinfo fixture (<root>/proc/self/mountinfo), so nothing is
# probed or mounted.
. "$TOP_SRCDIR/tests/system/lib.sh"
CONF=$TOP_SRCDIR/conf
R=$T/root

echo "# the examples validate"
for f in nfs-plain blob-nfs anf nfs-head; do
	run_hpc "$T/v.out" validate "$CONF/$f.yaml"
	check "validate conf/$f.yaml (exit $rc)" test "$rc" = 0
done

echo "# plan of each example: the fstab lines it would write"
plan_has() {    # plan_has EXAMPLE LINE...
	local f=$1; shift
	rm -rf "$R"; mkroot "$R"
	run_hpc "$T/plan.out" plan --root "$R" -c "$CONF/$f.yaml" --only nfs
	check "plan $f: exit 0" test "$rc" = 0
	for l in "$@"; do check "plan $f: $l" contains "$T/plan.out" "$l"; done
	check "plan $f: no fstab written" test ! -e "$R/etc/fstab"
}
plan_has nfs-plain \
	"+10.0.0.4:/shared /shared nfs vers=3,hard,proto=tcp,rsize=1048576,wsize=1048576,_netdev,nofail,x-systemd.mount-timeout=600s 0 0" \
	"+10.0.0.4:/home /home nfs vers=4.1,hard,proto=tcp,_netdev,nofail,x-systemd.mount-timeout=600s 0 0" \
	"/shared: would wait up to 600s for 10.0.0.4, then run: mount -t nfs -o vers=3,hard,proto=tcp,rsize=1048576,wsize=1048576 10.0.0.4:/shared $R/shared"
plan_has blob-nfs \
	"+mystorageacct.blob.core.windows.net:/mystorageacct/shared /blob nfs sec=sys,vers=3,nolock,proto=tcp,_netdev,nofail,x-systemd.mount-timeout=300s 0 0"
plan_has anf \
	"+10.0.2.4:/hpcvol1 /anf nfs rw,hard,vers=3,proto=tcp,rsize=262144,wsize=262144,nconnect=8,_netdev,nofail,x-systemd.mount-timeout=120s 0 0"

echo "# fstab: managed block, idempotent, other lines byte for byte"
rm -rf "$R"; mkroot "$R"
mkdir -p "$R/proc/self" "$R/scratch" "$R/data"
# Odd but legal lines, tabs, comments, no newline at the end.
printf '# /etc/fstab\nUUID=1234\t/\text4\terrors=remount-ro 0 1\n  # indented comment\n\n/dev/sdb1 /mnt ext4 defaults,nofail 0 2' >"$R/etc/fstab"
cp "$R/etc/fstab" "$T/fstab.orig"
cat >"$R/proc/self/mountinfo" <<EOF
25 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw
60 25 0:50 / /scratch rw,relatime - nfs 10.0.0.7:/shared rw,vers=3,hard,proto=tcp,local_lock=all
61 25 0:51 / /data rw,relatime - nfs4 10.0.0.8:/vol1 rw,vers=4.1,hard,proto=tcp
EOF
cat >"$T/two.yaml" <<EOF
version: 1
cluster: {name: glocluster, network: 10.0.0.0/24}
nfs:
  mounts:
    - {source: "10.0.0.7:/shared", path: /scratch, options: [vers=3, hard, nolock, proto=tcp], wait: 1m}
    - {source: "10.0.0.8:/vol1", path: /data, options: [vers=4.1, hard, proto=tcp], wait: 30s}
EOF
run_hpc_stdout "$T/a1.json" apply --root "$R" -c "$T/two.yaml" --only nfs --json
check "apply: exit 0" test "$rc" = 0
{ cat "$T/fstab.orig"; printf '\n# BEGIN hpcinit glocluster\n'
  printf '10.0.0.7:/shared /scratch nfs vers=3,hard,nolock,proto=tcp,_netdev,nofail,x-systemd.mount-timeout=60s 0 0\n'
  printf '10.0.0.8:/vol1 /data nfs vers=4.1,hard,proto=tcp,_netdev,nofail,x-systemd.mount-timeout=30s 0 0\n'
  printf '# END hpcinit glocluster\n'; } >"$T/fstab.want"
check "apply: fstab = original + a newline + the block" same_file "$R/etc/fstab" "$T/fstab.want"
check "apply: report says both mounted" contains "$T/a1.json" '"summary": "2 mounts: 2 ok"'
snap() { snapshot "$R" | grep -vE ' \./(run|var)(/|$)'; }
snap >"$T/snap1"
sleep 1
run_hpc_stdout "$T/a2.json" apply --root "$R" -c "$T/two.yaml" --only nfs --json
check "apply again: exit 0" test "$rc" = 0
check "apply again: status ok" contains "$T/a2.json" '"name": "nfs", "status": "ok"'
snap >"$T/snap2"
check "apply again: nothing written (tree, modes, mtimes)" same_file "$T/snap2" "$T/snap1"
run_hpc "$T/c1.out" check --root "$R" -c "$T/two.yaml" --only nfs
check "check: in sync (exit 0)" test "$rc" = 0

echo "# check: stale fstab and wrong options"
sed -i 's/x-systemd.mount-timeout=30s/x-systemd.mount-timeout=31s/' "$R/etc/fstab"
run_hpc "$T/c2.out" check --root "$R" -c "$T/two.yaml" --only nfs
check "check stale fstab: exit 1" test "$rc" = 1
check "check stale fstab: says so" contains "$T/c2.out" "/etc/fstab: the managed lines for cluster glocluster are stale or missing"
run_hpc "$T/p2.out" plan --root "$R" -c "$T/two.yaml" --only nfs
check "plan: shows the fstab diff (old)" contains "$T/p2.out" "-10.0.0.8:/vol1 /data nfs vers=4.1,hard,proto=tcp,_netdev,nofail,x-systemd.mount-timeout=31s 0 0"
check "plan: shows the fstab diff (new)" contains "$T/p2.out" "+10.0.0.8:/vol1 /data nfs vers=4.1,hard,proto=tcp,_netdev,nofail,x-systemd.mount-timeout=30s 0 0"
run_hpc "$T/a3.out" apply --root "$R" -c "$T/two.yaml" --only nfs
check "apply repairs the block" same_file "$R/etc/fstab" "$T/fstab.want"
sed -i 's/vers=4.1,hard/vers=4.2,soft/' "$R/proc/self/mountinfo"
run_hpc "$T/c3.out" check --root "$R" -c "$T/two.yaml" --only nfs
check "check wrong options: exit 1" test "$rc" = 1
check "check wrong options: names them" contains "$T/c3.out" "/data: mounted with other options than the spec: want vers=4.1, mounted vers=4.2; want hard, mounted soft"
run_hpc "$T/a4.out" apply --root "$R" -c "$T/two.yaml" --only nfs
check "apply with wrong options: degraded (exit 3), no remount" test "$rc" = 3
sed -i 's/vers=4.2,soft/vers=4.1,hard/' "$R/proc/self/mountinfo"

echo "# a mount removed from the spec loses its line; all removed, the block goes"
cat >"$T/one.yaml" <<EOF
version: 1
cluster: {name: glocluster, network: 10.0.0.0/24}
nfs:
  mounts:
    - {source: "10.0.0.7:/shared", path: /scratch, options: [vers=3, hard, nolock, proto=tcp], wait: 1m}
EOF
run_hpc "$T/r1.out" apply --root "$R" -c "$T/one.yaml" --only nfs
check "remove one: exit 0" test "$rc" = 0
grep -v '10.0.0.8:/vol1' "$T/fstab.want" >"$T/fstab.want1"
check "remove one: its line gone, the rest byte for byte" same_file "$R/etc/fstab" "$T/fstab.want1"
printf 'version: 1\ncluster: {name: glocluster}\nnfs: {mounts: []}\n' >"$T/none.yaml"
run_hpc "$T/r2.out" apply --root "$R" -c "$T/none.yaml" --only nfs
check "remove all: exit 0" test "$rc" = 0
{ cat "$T/fstab.orig"; echo; } >"$T/fstab.want0"
check "remove all: the original lines (plus the final newline)" same_file "$R/etc/fstab" "$T/fstab.want0"

echo "# another cluster's block and a foreign line for the same mount point"
printf '10.0.0.9:/old /scratch nfs defaults 0 0\n# BEGIN hpcinit other\nx:/y /other nfs defaults 0 0\n# END hpcinit other\n' >>"$R/etc/fstab"
cp "$R/etc/fstab" "$T/fstab.before"
run_hpc "$T/f1.out" apply -v --root "$R" -c "$T/one.yaml" --only nfs
check "foreign line reported" contains "$T/f1.out" "/etc/fstab: another line (10.0.0.9:/old) also mounts /scratch"
check "foreign line and other block kept" cmp -s -n "$(stat -c %s "$T/fstab.before")" "$R/etc/fstab" "$T/fstab.before"

echo "# head: /etc/exports.d/hpcinit.exports"
rm -rf "$R"; mkroot "$R"
mkdir -p "$R/etc/exports.d" "$R/apps"
chmod 0700 "$R/apps"
printf '/legacy 10.1.0.0/16(ro)\n' >"$R/etc/exports"
printf '/other *(ro)\n' >"$R/etc/exports.d/other.exports"
run_hpc "$T/h1.out" apply -v --root "$R" -c "$CONF/nfs-head.yaml" --only nfs --hostname head0
check "head: exit 0" test "$rc" = 0
cat >"$T/exports.want" <<EOF
# Written by hpcinit from nfs.exports of cluster glocluster; edit the spec, not this file.
/shared 10.0.0.0/24(rw,sync,root_squash,no_subtree_check)
/apps 10.0.0.0/24(ro,sync,root_squash,no_subtree_check)
EOF
check "head: the exports file" same_file "$R/etc/exports.d/hpcinit.exports" "$T/exports.want"
check "head: lists the exports" contains "$T/h1.out" "export: head0:/shared to clients in 10.0.0.0/24 (rw,sync,root_squash,no_subtree_check)"
check "head: no 'may mount' without the self-probe (fake root)" contains "$T/h1.out" "fake root: the export self-probe does not run"
check "head: /shared created" test -d "$R/shared"
check "head: existing /apps left as it was (0700)" test "$(stat -c %a "$R/apps")" = 700
check "head: /etc/exports untouched" test "$(cat "$R/etc/exports")" = "/legacy 10.1.0.0/16(ro)"
check "head: other exports.d files untouched" test "$(cat "$R/etc/exports.d/other.exports")" = "/other *(ro)"
check "head: fake root, exportfs not run" contains "$T/h1.out" "fake root: exportfs -ra not run"
snap >"$T/hs1"
sleep 1
run_hpc "$T/h2.out" apply --root "$R" -c "$CONF/nfs-head.yaml" --only nfs --hostname head0
check "head again: exit 0" test "$rc" = 0
snap >"$T/hs2"
check "head again: nothing written" same_file "$T/hs2" "$T/hs1"
printf 'version: 1\ncluster: {name: glocluster, role: head, network: 10.0.0.0/24}\nnfs: {exports: []}\n' >"$T/noexp.yaml"
run_hpc "$T/h3.out" plan --root "$R" -c "$T/noexp.yaml" --only nfs
check "head, no exports: plan shows the removal" contains "$T/h3.out" "-/shared 10.0.0.0/24(rw,sync,root_squash,no_subtree_check)"
run_hpc "$T/h4.out" apply --root "$R" -c "$T/noexp.yaml" --only nfs
check "head, no exports: our file removed" test ! -e "$R/etc/exports.d/hpcinit.exports"
check "head, no exports: other exports.d files untouched" test "$(cat "$R/etc/exports.d/other.exports")" = "/other *(ro)"

# libnfs is the helper's (hpcinit-nfs-probe), not the agent's.
check "the agent binary does not link libnfs" \
	bash -c '! readelf -d "$1" | grep -q "(NEEDED).*\[libnfs\."' _ "$HPCINIT"

done_testing
