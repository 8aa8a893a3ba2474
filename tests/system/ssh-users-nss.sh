#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Directory users through NSS (issue 35): the real binary on the real root
# of a throwaway overlay of / (tests/system/overlay.sh), in its own mount,
# PID and network namespaces, where nsswitch.conf says
# "passwd: files extrausers" and alice exists only in
# /var/lib/extrausers (libnss-extrausers, standing in for sssd or nslcd: a
# second NSS source, not /etc/passwd).  The host's own nsswitch.conf and
# files are never touched.  alice's home is 0700 and hers, and the run has
# no CAP_DAC_OVERRIDE, CAP_DAC_READ_SEARCH or CAP_FOWNER (setpriv): like
# root on an NFS home exported with root_squash, root cannot reach into it;
# only acting as alice can.
#  1. alice from NSS only: ready; her key pair and authorized_keys written
#     as her; the record carries alice=6001:6001 (getpwnam's answer);
#  2. the source is late (alice appears 2 s after apply began): waited for;
#  3. the source gives alice a per-VM UID (3197663, as Entra ID login
#     does) while the other nodes (fake roots n2, n3 sharing the rendezvous
#     directory) say 6001: this node fails with ssh.user.ids-differ, and
#     n2 names it in a cluster finding.
if [ "${1:-}" != inner ]; then
	. "$(dirname "$0")/lib.sh"
	[ "$(id -u)" = 0 ] || { echo "ssh-users-nss: needs root (namespaces, an overlay of /)" >&2; exit 77; }
	for tool in unshare chroot setpriv python3; do
		command -v "$tool" > /dev/null || bail_out "$tool not found"
	done
	[ -n "$(find /usr/lib /lib -name 'libnss_extrausers.so.2' -print -quit 2>/dev/null)" ] ||
		bail_out "libnss-extrausers not installed (tools/setup.sh)"
	before=$(md5sum /etc/nsswitch.conf /etc/passwd)
	rc=0
	unshare --mount --net --pid --fork --propagation private -- bash "$0" inner "$T" || rc=$?
	[ "$before" = "$(md5sum /etc/nsswitch.conf /etc/passwd)" ] || { echo "not ok - the host's nsswitch.conf or passwd changed"; exit 1; }
	echo "ok - the host's nsswitch.conf and passwd are unchanged"
	exit "$rc"
fi

# ---- inside the namespaces ----
set -eu
T=$2
. "$(dirname "$0")/../lib/tap.sh"
. "$(dirname "$0")/overlay.sh"
: "${HPCINIT:?}"
ip link set lo up
mkdir -p "$T/ovl" "$T/shared"
chmod 0755 "$T"
overlay_root "$T/ovl"
R=$OVERLAY_ROOT
# The overlay's /tmp and /run are empty tmpfs: a build tree under them (a clone in /tmp) is
# bound in at its own path, read-only, so the binary and its helpers run there too.
for d in "$(dirname "$HPCINIT")" "${HPCINIT_LIBEXEC_DIR:-}"; do
	case $d in
	/tmp/* | /run/*)
		[ -d "$R$d" ] && [ -n "$(ls -A "$R$d" 2>/dev/null)" ] && continue
		mkdir -p "$R$d" && mount --bind "$d" "$R$d" && mount -o remount,bind,ro "$R$d" ;;
	esac
done
mkdir -p "$R/shared" "$R/var/lib/extrausers" "$R/etc/hpcinit" "$R/etc/ssh" "$R/home/alice"
mount --bind "$T/shared" "$R/shared"
rm -rf "$R/etc/hpcinit/"* "$R/run/hpcinit" "$R/var/lib/hpcinit"
sed -i -e 's/^passwd:.*/passwd:         files extrausers/' -e 's/^group:.*/group:          files extrausers/' \
	"$R/etc/nsswitch.conf"
openssl rand -hex 32 > "$T/cluster.key"
install -m 0600 "$T/cluster.key" "$R/etc/hpcinit/cluster.key"
chown 6001:6001 "$R/home/alice"
chmod 0700 "$R/home/alice"
# extra ID: alice in the second source only
extra() {
	echo "alice:x:$1:$1::/home/alice:/bin/bash" > "$R/var/lib/extrausers/passwd"
	echo "alice:x:$1:" > "$R/var/lib/extrausers/group"
}
: > "$R/var/lib/extrausers/passwd"
: > "$R/var/lib/extrausers/group"
printf '%s\n' 'version: 1' \
	'cluster: {name: dx, network: 10.0.0.0/24, secret_file: /etc/hpcinit/cluster.key}' \
	'discovery: {method: shared, dir: /shared/.hpcinit, wait: 0s}' \
	'ssh: {users: [alice], users_wait: 8s}' > "$R/etc/hpcinit/node.yaml"
# n1: hpcinit apply on the overlay's real root, without the capabilities that pass over a 0700 home
n1() {
	rc=0
	HPCINIT_ADDRESS=10.0.0.1 chroot "$R" setpriv --bounding-set -dac_override,-dac_read_search,-fowner -- \
		"$HPCINIT" "$@" --json -c /etc/hpcinit/node.yaml --hostname n1 > "$T/out.json" 2> "$T/out.err" || rc=$?
}
cat > "$T/finding.py" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
def walk(o):
    if isinstance(o, dict):
        if "tag" in o and "severity" in o:
            yield o
        for v in o.values():
            yield from walk(v)
    elif isinstance(o, list):
        for v in o:
            yield from walk(v)
hits = [f["text"] for f in walk(doc) if f["tag"] == sys.argv[2] and f["severity"] == sys.argv[3]]
print("\n".join(hits))
sys.exit(0 if hits else 1)
PY
# has JSON TAG SEVERITY TEXT: that finding, its text containing TEXT
has() { python3 "$T/finding.py" "$1" "$2" "$3" | grep -qF -- "$4"; }
show() { python3 "$T/finding.py" "$1" "$2" "$3" | sed 's/^/#   /' || true; }
NODES=$T/shared/.hpcinit/dx/nodes

# ---- 1. alice from NSS only ----
extra 6001
check "setup: alice is not in the overlay's /etc/passwd" bash -c "! grep -q '^alice:' '$R/etc/passwd'"
check "setup: getent (NSS) finds her there" bash -c "chroot '$R' getent passwd alice | grep -q ':6001:6001:'"
check "setup: root without DAC capabilities cannot enter her home" \
	bash -c "! chroot '$R' setpriv --bounding-set -dac_override,-dac_read_search,-fowner -- ls /home/alice > /dev/null 2>&1"
n1 apply
check "NSS user: apply exits 0 (exit $rc)" test "$rc" = 0 ||
	python3 -c 'import json,sys; [print("#  ", m["name"], m["status"], m["summary"], m["details"]) for m in json.load(open(sys.argv[1]))["modules"] ]' "$T/out.json"; tail -3 "$T/out.err" 
check "... alice's private key is hers, written as her" test "$(stat -c %u:%a "$R/home/alice/.ssh/id_ed25519" 2>/dev/null)" = 6001:600
check "... so is her authorized_keys" test "$(stat -c %u "$R/home/alice/.ssh/authorized_keys" 2>/dev/null)" = 6001
check "... the record carries what NSS said" grep -qx 'users: alice=6001:6001' "$NODES/n1.rec"

# ---- 2. the source is late ----
: > "$R/var/lib/extrausers/passwd"
(sleep 2; extra 6001) &
late=$!
start=$(date +%s%N)
n1 apply
wait "$late"
took=$((($(date +%s%N) - start) / 1000000))
check "late source: apply waited (${took} ms >= 2000) and exits 0 (exit $rc)" test "$rc" = 0 -a "$took" -ge 2000

# ---- 3. a per-VM UID on this node ----
for n in n2 n3; do
	r=$T/$n
	mkdir -p "$r/etc/hpcinit" "$r/etc/ssh" "$r/home/alice" "$r/run" "$r/var/lib" "$r/proc"
	printf 'root:x:0:0:root:/root:/bin/bash\nalice:x:6001:6001::/home/alice:/bin/bash\n' > "$r/etc/passwd"
	chown 6001:6001 "$r/home/alice"
	install -m 0600 "$T/cluster.key" "$r/etc/hpcinit/cluster.key"
	ln -s "$T/shared" "$r/shared"
done
sed 's/dx, network/dx, role: head, network/' "$R/etc/hpcinit/node.yaml" > "$T/head.yaml"
cp "$R/etc/hpcinit/node.yaml" "$T/compute.yaml"
# fake N ADDRESS SPEC OUT: hpcinit apply --json on the fake root N
fake() {
	rc=0
	HPCINIT_ADDRESS=$2 "$HPCINIT" apply --json --root "$T/$1" -c "$T/$3.yaml" --hostname "$1" > "$4" 2> "$4.err" || rc=$?
}
fake n2 10.0.0.2 head "$T/n2.json"
fake n3 10.0.0.3 compute "$T/n3.json"
check "setup: n2 (head) and n3 ready, alice 6001 in their records" \
	bash -c "grep -qx 'users: alice=6001:6001' '$NODES/n2.rec' && grep -qx 'users: alice=6001:6001' '$NODES/n3.rec'"
extra 3197663
n1 apply
show "$T/out.json" ssh.user.ids-differ failed
check "per-VM UID: this node fails (exit $rc)" test "$rc" != 0
check "... ssh.user.ids-differ names alice and both ids" \
	has "$T/out.json" ssh.user.ids-differ failed "user alice is 3197663:3197663 here but 6001:6001 on 2 of 3 nodes, the head's among them"
check "... its record says what NSS gave it, and that it failed" \
	bash -c "grep -qx 'users: alice=3197663:3197663' '$NODES/n1.rec' && grep -qx 'reason: ssh.user.ids-differ' '$NODES/n1.rec'"
fake n2 10.0.0.2 head "$T/n2b.json"
show "$T/n2b.json" ssh.user.ids-differ cluster
check "... the head stays ready (exit $rc) and names n1" \
	has "$T/n2b.json" ssh.user.ids-differ cluster "but not on n1 (3197663:3197663)"
umount "$R/shared"
done_testing
