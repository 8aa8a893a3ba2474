#!/bin/bash
# NFSv4.1-only servers (Azure Files NFS, Azure NetApp Files 4.1 volumes)
# against a real nfs-ganesha serving `Minor_Versions = 1` only, the agent
# (real binary, real libnfs probe, which speaks NFSv4.0) in another
# namespace.  A server that answers at the NFS level is up whatever minor
# version it refuses: the kernel's mount decides.  The network is blamed
# only when TCP does not connect.
#   1. vers=4.1,nconnect=4: the probe says the server is up (speaks 4.1,
#      refuses 4.0) and the real mount(8) runs with the spec's options; this
#      machine's kernel has no NFS client, so it ends in ENODEV, said so.
#   2. Azure Files' documented options (vers=4,minorversion=1,sec=sys,
#      nconnect=4) with a fake mount(8): mounted.
#   3. Something that takes TCP 2049 and is no NFS server: "no NFS answer",
#      not the network.
#   4. Nothing on 2049: unreachable, check the NSG and firewall.
. "$TOP_SRCDIR/tests/system/lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (network namespaces)"; exit 77; }
HPN_NFSV4_EXTRA="Minor_Versions = 1;"
. "$TOP_SRCDIR/tests/cluster/nfs-lib.sh"

hpn_setup
hpn_server_start
ROOT=$T/root

newroot() {
	rm -rf "$ROOT"
	mkdir -p "$ROOT/etc" "$ROOT/proc/self" "$ROOT/run" "$ROOT/var/lib"
	printf 'root:x:0:0:root:/root:/bin/bash\n' >"$ROOT/etc/passwd"
	: >"$ROOT/etc/fstab"
}

# spec FILE MOUNT-YAML
spec() {
	printf 'version: 1\ncluster: {name: nfstest, network: %s.0/24}\nnfs:\n  mounts:\n    - %s\n' \
		"$HPN_NET" "$2" >"$1"
}

# The server really is 4.1 only: the helper's raw COMPOUNDs say so.
ip netns exec "$HPN_CLI" "$TOP_BUILDDIR/hpcinit-nfs-probe" "$HPN_SRV_IP" /export 4 5000 >"$T/0.helper" || true
sed 's/^/#   helper: /' "$T/0.helper"
check "0: ganesha refuses 4.0" grep -qx "minor 0 NFS4ERR_MINOR_VERS_MISMATCH" "$T/0.helper"
check "0: ganesha speaks 4.1" grep -qx "minor 1 NFS4_OK" "$T/0.helper"

# A recording wrapper around the real mount(8).
cat >"$T/record-mount" <<EOF
#!/bin/sh
printf '%s\n' "\$0" "\$@" >"$T/mount.argv"
exec /bin/mount "\$@"
EOF
chmod +x "$T/record-mount"

# A fake mount(8) for case 2 (named as a fake: the kernel here cannot mount
# NFS): records its argv and adds the mount to the fake root's mountinfo.
cat >"$T/fake-mount" <<EOF
#!/bin/sh
printf '%s\n' "\$@" >"$T/fake-mount.argv"
printf '90 1 0:90 / %s rw,relatime - nfs4 %s rw,vers=4.1,%s\n' "\${6#$ROOT}" "\$5" "\$4" >>"$ROOT/proc/self/mountinfo"
EOF
chmod +x "$T/fake-mount"

echo "# 1. vers=4.1,nconnect=4 against a 4.1-only server: up, mount(8) runs"
newroot
spec "$T/v41.yaml" '{source: "'$HPN_SRV_IP':/export", path: /data, options: [vers=4.1, nconnect=4, hard, proto=tcp], wait: 5s}'
rc=0
ip netns exec "$HPN_CLI" unshare --mount --propagation private \
	env HPCINIT_MOUNT_PROG="$T/record-mount" ${HPCINIT_WRAPPER:-} "$HPCINIT" apply --root "$ROOT" \
	-c "$T/v41.yaml" --only nfs --json >"$T/1.json" 2>"$T/1.err" || rc=$?
json_get "$T/1.json" nfs details >"$T/1.details"
json_get "$T/1.json" nfs summary >"$T/1.summary"
sed 's/^/#   /' "$T/1.details"
check "1: the probe says the server is up and speaks 4.1" contains "$T/1.details" \
	"/data: server $HPN_SRV_IP answered NFSv4 (speaks 4.1; refuses 4.0, 4.2 with NFS4ERR_MINOR_VERS_MISMATCH, and 4.0 is all the probe speaks): the export is not checked before the mount"
check "1: no network blamed" not_contains "$T/1.details" "unreachable"
check "1: no NSG advice" not_contains "$T/1.details" "NSG"
check "1: no waiting (the first probe decided)" not_contains "$T/1.details" "waited"
printf '%s\n' "$T/record-mount" -t nfs -o vers=4.1,nconnect=4,hard,proto=tcp "$HPN_SRV_IP:/export" "$ROOT/data" >"$T/1.argv.want"
check "1: mount(8) ran with the spec's options" same_file "$T/mount.argv" "$T/1.argv.want"
if grep -qw nfs /proc/filesystems; then
	check "1: exit 0 with a kernel that has NFS" test "$rc" = 0
else
	check "1: exit 1 (the mount failed)" test "$rc" = 1
	check "1: summary names ENODEV" contains "$T/1.summary" "/data: kernel has no NFS client support (ENODEV)"
fi

echo "# 2. Azure Files' documented options, fake mount(8): mounted"
newroot
spec "$T/afs.yaml" '{source: "'$HPN_SRV_IP':/export", path: /afs, options: [vers=4, minorversion=1, sec=sys, nconnect=4], wait: 5s}'
rc=0
HPCINIT_MOUNT_PROG="$T/fake-mount" hpn_agent apply --root "$ROOT" -c "$T/afs.yaml" --only nfs --json >"$T/2.json" 2>"$T/2.err" || rc=$?
json_get "$T/2.json" nfs status >"$T/2.status"
json_get "$T/2.json" nfs details >"$T/2.details"
check "2: exit 0" test "$rc" = 0
check "2: status changed" contains "$T/2.status" "changed"
printf '%s\n' -t nfs -o vers=4,minorversion=1,sec=sys,nconnect=4 "$HPN_SRV_IP:/export" "$ROOT/afs" >"$T/2.argv.want"
check "2: mount got Azure Files' options" same_file "$T/fake-mount.argv" "$T/2.argv.want"
check "2: mounted" contains "$T/2.details" "/afs: mounted $HPN_SRV_IP:/export"

echo "# 3. TCP 2049 taken by something that is no NFS server"
hpn_server_stop
ip netns exec "$HPN_SRV" python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 2049)); s.listen(16)
while True:
    c, _ = s.accept(); c.sendall(b"SSH-2.0-not-nfs\r\n"); c.close()
' "$HPN_SRV_IP" &
NOTNFS=$!
cleanup_add "kill $NOTNFS 2>/dev/null || true"
for _ in $(seq 50); do ip netns exec "$HPN_CLI" bash -c "echo >/dev/tcp/$HPN_SRV_IP/2049" 2>/dev/null && break; sleep 0.1; done
newroot
spec "$T/notnfs.yaml" '{source: "'$HPN_SRV_IP':/export", path: /data, options: [vers=4.1], wait: 2s}'
rc=0
hpn_agent apply --root "$ROOT" -c "$T/notnfs.yaml" --only nfs --json >"$T/3.json" 2>"$T/3.err" || rc=$?
kill "$NOTNFS" 2>/dev/null || true
wait "$NOTNFS" 2>/dev/null || true
json_get "$T/3.json" nfs details >"$T/3.details"
sed 's/^/#   /' "$T/3.details"
check "3: exit 1" test "$rc" = 1
check "3: TCP answered, NFS did not" grep -qE "^/data: server $HPN_SRV_IP took the TCP connection \(NFSv4 port 2049\) but gave no NFS answer: .+; waited" "$T/3.details"
check "3: the finding's tag" contains "$T/3.json" '"nfs.server.no-nfs-answer"'
check "3: no network blamed" not_contains "$T/3.details" "unreachable"
check "3: no NSG advice" not_contains "$T/3.details" "NSG"

echo "# 4. nothing on TCP 2049: unreachable, the network is named"
newroot
rc=0
hpn_agent apply --root "$ROOT" -c "$T/notnfs.yaml" --only nfs --json >"$T/4.json" 2>"$T/4.err" || rc=$?
json_get "$T/4.json" nfs details >"$T/4.details"
check "4: exit 1" test "$rc" = 1
check "4: unreachable on 2049" grep -qE "^/data: server $HPN_SRV_IP unreachable on port 2049 \(nfs\): Connection refused; waited" "$T/4.details"
check "4: NSG advice" contains "$T/4.details" "(NSG, firewall)"
check "4: the finding's tag" contains "$T/4.json" '"nfs.server.unreachable"'

done_testing
