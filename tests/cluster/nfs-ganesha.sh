#!/bin/bash
# The nfs module against a real NFS server: nfs-ganesha in one network
# namespace, the agent (real binary, real libnfs probe) in another.
#   1. export present (v3): the probe passes, then the real mount(8) runs;
#      this machine's kernel has no NFS, so it ends in ENODEV, and the
#      agent must say so.  The argv given to mount and the fstab line are
#      asserted exactly.
#   2. export present (v4), with a fake mount(8) (the kernel cannot mount
#      NFS here): mounted, verified, and a second run changes nothing.
#   3. wrong export (v3): the error lists the server's real exports.
#   4. wrong path (v4): the error lists the server's pseudo root.
#   5. server started 10 s late: the agent waits and goes on.
#   6. server never starts: failure after `wait`, naming host, port and
#      time, while memlock (in the same spec) still ran.
. "$TOP_SRCDIR/tests/system/lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
. "$TOP_SRCDIR/tests/cluster/nfs-lib.sh"

hpn_setup
hpn_server_start
ROOT=$T/root

newroot() {
	rm -rf "$ROOT"
	mkdir -p "$ROOT/etc" "$ROOT/proc/self" "$ROOT/run" "$ROOT/var/lib"
	printf 'root:x:0:0:root:/root:/bin/bash\n' >"$ROOT/etc/passwd"
	printf '# existing line\nUUID=abcd / ext4 defaults 0 1\n' >"$ROOT/etc/fstab"
}

# spec FILE MOUNT-YAML [EXTRA-YAML]
spec() {
	{
		printf 'version: 1\ncluster: {name: nfstest, network: %s.0/24}\n' "$HPN_NET"
		[ -n "${3:-}" ] && printf '%s\n' "$3"
		printf 'nfs:\n  mounts:\n    - %s\n' "$2"
	} >"$1"
}

# A fake mount(8) for the fake root (named as a fake: the kernel here cannot
# mount NFS).  It records its argv and adds the mount to the fake root's
# mountinfo, which is what the agent then verifies.
cat >"$T/fake-mount" <<EOF
#!/bin/sh
# argv: -t nfs -o OPTIONS SOURCE TARGET
printf '%s\n' "\$@" >"$T/fake-mount.argv"
printf '90 1 0:90 / %s rw,relatime - nfs %s rw,%s\n' "\${6#$ROOT}" "\$5" "\$4" >>"$ROOT/proc/self/mountinfo"
EOF
chmod +x "$T/fake-mount"

# A recording wrapper around the real mount(8).
cat >"$T/record-mount" <<EOF
#!/bin/sh
printf '%s\n' "\$0" "\$@" >"$T/mount.argv"
exec /bin/mount "\$@"
EOF
chmod +x "$T/record-mount"

echo "# 1. export present (v3), real mount(8)"
newroot
spec "$T/v3.yaml" '{source: "'$HPN_SRV_IP':/export", path: /scratch, options: [vers=3, hard, nolock, proto=tcp], wait: 5s}'
rc=0
ip netns exec "$HPN_CLI" unshare --mount --propagation private \
	env HPCINIT_MOUNT_PROG="$T/record-mount" ${HPCINIT_WRAPPER:-} "$HPCINIT" apply --root "$ROOT" \
	-c "$T/v3.yaml" --only nfs --json >"$T/1.json" 2>"$T/1.err" || rc=$?
json_get "$T/1.json" nfs details >"$T/1.details"
json_get "$T/1.json" nfs summary >"$T/1.summary"
printf '%s\n' "$T/record-mount" -t nfs -o vers=3,hard,nolock,proto=tcp "$HPN_SRV_IP:/export" "$ROOT/scratch" >"$T/1.argv.want"
check "1: mount(8) got exactly the expected argv" same_file "$T/mount.argv" "$T/1.argv.want"
printf '# existing line\nUUID=abcd / ext4 defaults 0 1\n# BEGIN hpcinit nfstest\n%s:/export /scratch nfs vers=3,hard,nolock,proto=tcp,_netdev,nofail,x-systemd.mount-timeout=5s 0 0\n# END hpcinit nfstest\n' "$HPN_SRV_IP" >"$T/1.fstab.want"
check "1: fstab: the managed line, other lines kept" same_file "$ROOT/etc/fstab" "$T/1.fstab.want"
check "1: the probe passed (no wait, no export error)" not_contains "$T/1.details" "unreachable"
check "1: the mount point was created" test -d "$ROOT/scratch"
if grep -qw nfs /proc/filesystems; then
	# A kernel with NFS: the mount works (in the private mount namespace).
	check "1: exit 0 with a kernel that has NFS" test "$rc" = 0
else
	check "1: exit 1 (the mount failed)" test "$rc" = 1
	check "1: summary names ENODEV" contains "$T/1.summary" "/scratch: kernel has no NFS client support (ENODEV)"
	check "1: details explain ENODEV and what to do" contains "$T/1.details" \
		"/scratch: the kernel has no NFS client support (mount: mount.nfs: No such device; ENODEV, 'unknown filesystem type'): install nfs-common (RHEL: nfs-utils) and load the nfs module (modprobe nfs)"
fi

echo "# 2. export present (v4), fake mount(8): mounted, then idempotent"
newroot
spec "$T/v4.yaml" '{source: "'$HPN_SRV_IP':/export", path: /data, options: [vers=4.1, hard, proto=tcp], wait: 5s}'
rc=0
HPCINIT_MOUNT_PROG="$T/fake-mount" hpn_agent apply --root "$ROOT" -c "$T/v4.yaml" --only nfs --json >"$T/2.json" 2>"$T/2.err" || rc=$?
json_get "$T/2.json" nfs status >"$T/2.status"
json_get "$T/2.json" nfs details >"$T/2.details"
check "2: exit 0" test "$rc" = 0
check "2: status changed" contains "$T/2.status" "changed"
check "2: mounted detail" contains "$T/2.details" "/data: mounted $HPN_SRV_IP:/export ($T/fake-mount -t nfs -o vers=4.1,hard,proto=tcp $HPN_SRV_IP:/export $ROOT/data)"
printf '%s\n' -t nfs -o vers=4.1,hard,proto=tcp "$HPN_SRV_IP:/export" "$ROOT/data" >"$T/2.argv.want"
check "2: fake mount got the argv" same_file "$T/fake-mount.argv" "$T/2.argv.want"
check "2: the write probe left nothing behind" test -z "$(ls -A "$ROOT/data")"
cp -p "$ROOT/etc/fstab" "$T/2.fstab"
before=$(stat -c %Y.%i "$ROOT/etc/fstab")
sleep 1
rc=0
HPCINIT_MOUNT_PROG="$T/fake-mount" hpn_agent apply --root "$ROOT" -c "$T/v4.yaml" --only nfs --json >"$T/2b.json" 2>"$T/2b.err" || rc=$?
json_get "$T/2b.json" nfs status >"$T/2b.status"
check "2: second run exit 0" test "$rc" = 0
check "2: second run ok" contains "$T/2b.status" "ok"
check "2: fstab not rewritten" test "$before" = "$(stat -c %Y.%i "$ROOT/etc/fstab")"
rc=0
hpn_agent check --root "$ROOT" -c "$T/v4.yaml" --only nfs >"$T/2c.out" 2>&1 || rc=$?
check "2: check says in sync (exit 0)" test "$rc" = 0

echo "# 3. wrong export (v3): the real export list"
newroot
spec "$T/bad3.yaml" '{source: "'$HPN_SRV_IP':/nope", path: /scratch, options: [vers=3, nolock], wait: 2s}'
rc=0
hpn_agent apply --root "$ROOT" -c "$T/bad3.yaml" --only nfs --json >"$T/3.json" 2>"$T/3.err" || rc=$?
json_get "$T/3.json" nfs details >"$T/3.details"
json_get "$T/3.json" nfs summary >"$T/3.summary"
check "3: exit 1" test "$rc" = 1
check "3: summary" contains "$T/3.summary" "/scratch: export /nope not found on $HPN_SRV_IP"
check "3: the server's words" contains "$T/3.details" "MNT3ERR_ACCES"
check "3: lists the real exports" grep -qxF "  $HPN_SRV_IP exports:" "$T/3.details"
check "3: ... which is /export" grep -qxF "    /export" "$T/3.details"
check "3: fstab line written anyway (the next boot tries)" contains "$ROOT/etc/fstab" "$HPN_SRV_IP:/nope /scratch nfs"

echo "# 4. wrong path (v4): the pseudo root"
newroot
spec "$T/bad4.yaml" '{source: "'$HPN_SRV_IP':/export/missing", path: /scratch, options: [vers=4], wait: 1s}'
rc=0
hpn_agent apply --root "$ROOT" -c "$T/bad4.yaml" --only nfs --json >"$T/4.json" 2>"$T/4.err" || rc=$?
json_get "$T/4.json" nfs details >"$T/4.details"
check "4: exit 1" test "$rc" = 1
check "4: not found" contains "$T/4.details" "/scratch: export /export/missing not found on $HPN_SRV_IP"
check "4: lists the pseudo root" grep -qxF "    /export" "$T/4.details"

echo "# 5. server starts 10 s late: the agent waits"
hpn_server_stop
newroot
spec "$T/late.yaml" '{source: "'$HPN_SRV_IP':/export", path: /scratch, options: [vers=3, hard, nolock, proto=tcp], wait: 40s}'
start=$(date +%s)
rc_file=$T/5.rc
( rc=0; HPCINIT_MOUNT_PROG="$T/fake-mount" hpn_agent apply -v --root "$ROOT" -c "$T/late.yaml" --only nfs --json \
	>"$T/5.json" 2>"$T/5.err" || rc=$?; echo $rc >"$rc_file" ) &
agent=$!
sleep 10
check "5: the agent is still waiting after 10 s" kill -0 "$agent"
hpn_server_start
wait "$agent"
end=$(date +%s)
json_get "$T/5.json" nfs details >"$T/5.details"
check "5: exit 0" test "$(cat "$rc_file")" = 0
check "5: took at least 10 s" test $((end - start)) -ge 10
check "5: ... and not the whole wait" test $((end - start)) -lt 35
check "5: says how long it waited" grep -qE "^/scratch: server $HPN_SRV_IP answered after 1[0-9]\.[0-9]s \([0-9]+ attempts\)$" "$T/5.details"
check "5: then mounted" contains "$T/5.details" "/scratch: mounted $HPN_SRV_IP:/export"
check "5: logged that it waits" contains "$T/5.err" "waiting for the server"

echo "# 6. server never starts: failure after wait; memlock still runs"
hpn_server_stop
newroot
spec "$T/dead.yaml" '{source: "'$HPN_SRV_IP':/export", path: /scratch, options: [vers=3, hard], wait: 3s}' \
	'memlock: {limit: unlimited}'
start=$(date +%s%N)
rc=0
hpn_agent apply --root "$ROOT" -c "$T/dead.yaml" --json >"$T/6.json" 2>"$T/6.err" || rc=$?
end=$(date +%s%N)
json_get "$T/6.json" nfs status >"$T/6.status"
json_get "$T/6.json" nfs details >"$T/6.details"
json_get "$T/6.json" memlock status >"$T/6.memlock"
# the last probe runs 200 ms before the deadline (a server up late is seen), so the wait reported is 2.8 s of 3
sed 's/^/#   /' "$T/6.details"
check "6: exit 1" test "$rc" = 1
check "6: nfs failed" contains "$T/6.status" "failed"
check "6: host, port, error and wait named" grep -qE "^/scratch: server $HPN_SRV_IP unreachable on port 111 \(portmapper\): Connection refused; waited (2\.[5-9]|3\.[0-9])s \([0-9]+ attempts, wait 3s\)$" "$T/6.details"
check "6: says what to do" contains "$T/6.details" "raise nfs.mounts wait if the server boots later"
check "6: waited about 3 s" test $(((end - start) / 1000000)) -ge 2500 -a $(((end - start) / 1000000)) -lt 9000
check "6: memlock still ran" grep -qxE "changed|ok" "$T/6.memlock"
check "6: memlock wrote its file" test -f "$ROOT/etc/security/limits.d/90-hpcinit.conf"

done_testing
