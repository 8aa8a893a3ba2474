#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A failed mount is never written through (docs/nfs.md "A mount that is not
# there").  A fake root whose spec mounts /shared (and /home) from a server
# that is not there (127.0.0.1: nothing serves NFS on this machine's
# loopback; were one there, this kernel has no NFS client and mount(8) would
# fail with ENODEV): the nfs step fails, and the
# steps that would write under the mount point -- discovery's rendezvous
# (discovery.dir), the hostfiles (hostfile.dir), users' ~/.ssh under /home
# -- fail naming the mount and write nothing there, in apply, refresh and
# check (tests/unit/test_userkeys.c: the ssh step's side of the homes).  With the mount there (the fake root's proc/self/mountinfo lists
# it) or with the directory on no mount of the spec, the same steps work.
# Real binary, no network beyond loopback.
. "$(dirname "$0")/lib.sh"

export HPCINIT_ADDRESS=10.0.0.5
MOUNT='{source: "127.0.0.1:/export", path: /shared, options: [vers=3, hard, proto=tcp], wait: 0s}'
HOME_MOUNT='{source: "127.0.0.1:/home", path: /home, options: [vers=3, hard, proto=tcp], wait: 0s}'
# spec MOUNTS DISCOVERY [EXTRA]
spec() {
	cat <<-EOF
	version: 1
	cluster: {name: glocluster, network: 10.0.0.0/24}
	nfs: {mounts: [$1]}
	discovery: $2
	hostfile: {dir: ${HF_DIR:-/etc/hpcinit}, formats: [plain]}
	${3:-}
	EOF
}
# tree DIR: what is under DIR of the fake root (nothing: empty output)
tree() { (cd "$R$1" 2>/dev/null && find . -mindepth 1 | sort); }
# finding FILE TAG TEXT: the run's JSON has a finding TAG whose text is TEXT
finding() {
	python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
ok = any(f["tag"] == sys.argv[2] and f["text"] == sys.argv[3] for m in d["modules"] for f in m.get("findings", []))
sys.exit(0 if ok else 1)' "$1" "$2" "$3" || { echo "  no $2 finding \"$3\" in:"; grep -o '"tag": "[^"]*"' "$1" | sed 's/^/  | /'; return 1; }
}
status_of() { python3 -c 'import json,sys
d = json.load(open(sys.argv[1]))
print([m["status"] for m in d["modules"] if m["name"] == sys.argv[2]][0])' "$1" "$2"; }
# works FILE STEP: the step is ok or changed
works() { case $(status_of "$1" "$2") in ok|changed) ;; *) echo "  $2: $(status_of "$1" "$2")"; return 1;; esac; }

echo "# 1. the rendezvous on a mount that failed"
R=$T/r1
mkroot "$R"
spec "$MOUNT" '{method: shared, dir: /shared/hpc, expect: 1, wait: 0s}' >"$T/shared.yaml"
run_hpc_stdout "$T/a1.json" apply --json --root "$R" -c "$T/shared.yaml" --hostname node01
check "apply exits 1" [ "$rc" -eq 1 ]
check "the nfs step failed" [ "$(status_of "$T/a1.json" nfs)" = failed ]
check "discovery failed" [ "$(status_of "$T/a1.json" discovery)" = failed ]
check "... naming the mount (discovery.mount.absent)" finding "$T/a1.json" discovery.mount.absent \
	"discovery.dir /shared/hpc is on the NFS mount /shared (127.0.0.1:/export), which is not mounted; nothing is written there"
check "nothing was created under the mount point" [ -z "$(tree /shared)" ]
check "no hostfile was cut (the step is skipped)" [ ! -e "$R/etc/hpcinit/hostfile.plain" ]
run_hpc "$T/a1.txt" apply --root "$R" -c "$T/shared.yaml" --hostname node01
check "the table's discovery line names the mount" \
	grep -Eq "^discovery +failed +[0-9]+ms +discovery.dir /shared/hpc is on the NFS mount /shared \\(127.0.0.1:/export\\), which is not mounted" "$T/a1.txt"
# refresh runs no nfs step: discovery alone must see the mount is not there.
run_hpc_stdout "$T/f1.json" refresh --json --root "$R" -c "$T/shared.yaml" --hostname node01
check "refresh exits 1" [ "$rc" -eq 1 ]
check "refresh: discovery names the mount" finding "$T/f1.json" discovery.mount.absent \
	"discovery.dir /shared/hpc is on the NFS mount /shared (127.0.0.1:/export), which is not mounted; nothing is written there"
check "refresh: still nothing under the mount point" [ -z "$(tree /shared)" ]
run_hpc_stdout "$T/c1.json" check --json --root "$R" -c "$T/shared.yaml" --hostname node01 --only discovery
check "check: discovery fails (exit 1), naming the mount" \
	eval '[ "$rc" -eq 1 ] && finding "$T/c1.json" discovery.mount.absent "discovery.dir /shared/hpc is on the NFS mount /shared (127.0.0.1:/export), which is not mounted; nothing is written there"'

echo "# 2. the hostfiles on a mount that failed (static discovery: no rendezvous)"
R=$T/r2
mkroot "$R"
HF_DIR=/shared/hostfiles spec "$MOUNT" '{method: static, hosts: [node01]}' >"$T/hf.yaml"
run_hpc_stdout "$T/a2.json" apply --json --root "$R" -c "$T/hf.yaml" --hostname node01
check "apply exits 1" [ "$rc" -eq 1 ]
check "discovery (static) works" works "$T/a2.json" discovery
check "the hostfile step failed" [ "$(status_of "$T/a2.json" hostfile)" = failed ]
check "... naming the mount (hostfile.mount.absent)" finding "$T/a2.json" hostfile.mount.absent \
	"hostfile.dir /shared/hostfiles is on the NFS mount /shared (127.0.0.1:/export), which is not mounted; nothing is written there"
check "nothing was created under the mount point" [ -z "$(tree /shared)" ]

echo "# 3. users' homes on a mount that failed"
R=$T/r3
mkroot "$R"
# The image made the user's home on the local disk, under the mount point
# (and the user may reach it: the step acts as the user there).
chmod 0755 "$T"
mkdir -p "$R/home/azureuser" && chown 1000:1000 "$R/home/azureuser"
spec "$HOME_MOUNT" '{method: static, hosts: [node01]}' 'ssh: {users: [azureuser]}' >"$T/home.yaml"
run_hpc_stdout "$T/a3.json" apply --json --root "$R" -c "$T/home.yaml" --hostname node01 --only discovery,ssh
check "apply exits 1" [ "$rc" -eq 1 ]
check "discovery names the mount (it makes the user's key pair in the home)" finding "$T/a3.json" discovery.mount.absent \
	"user azureuser's home /home/azureuser is on the NFS mount /home (127.0.0.1:/home), which is not mounted; nothing is written there"
check "no ~/.ssh was made on the local disk under /home" [ "$(tree /home)" = ./azureuser ]

echo "# 4. the mount there: the same spec works"
R=$T/r4
mkroot "$R"
mkdir -p "$R/proc/self" "$R/shared"
printf '25 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n60 25 0:50 / /shared rw,relatime - nfs 127.0.0.1:/export rw,vers=3,hard,proto=tcp\n' \
	>"$R/proc/self/mountinfo"
run_hpc_stdout "$T/a4.json" apply --json --root "$R" -c "$T/shared.yaml" --hostname node01
[ "$rc" -eq 0 ] || cat "$T/a4.json" "$T/a4.json.err"
check "apply exits 0" [ "$rc" -eq 0 ]
check "this node's record is in the rendezvous" [ -f "$R/shared/hpc/glocluster/nodes/node01.rec" ]
check "no mount.absent finding" not_contains "$T/a4.json" mount.absent
# Another NFS export mounted there is not the spec's mount.
sed -i 's|127.0.0.1:/export|127.0.0.1:/elsewhere|' "$R/proc/self/mountinfo"
run_hpc_stdout "$T/f4.json" refresh --json --root "$R" -c "$T/shared.yaml" --hostname node01
check "another export at /shared: refresh fails naming the mount" \
	eval '[ "$rc" -eq 1 ] && finding "$T/f4.json" discovery.mount.absent "discovery.dir /shared/hpc is on the NFS mount /shared (127.0.0.1:/export), which is not mounted; nothing is written there"'

echo "# 5. a directory on no mount of the spec: written as before"
R=$T/r5
mkroot "$R"
spec "$MOUNT" '{method: shared, dir: /var/lib/hpc-rendezvous, expect: 1, wait: 0s}' >"$T/local.yaml"
run_hpc_stdout "$T/a5.json" apply --json --root "$R" -c "$T/local.yaml" --hostname node01
check "apply exits 1 (the nfs step still fails)" [ "$rc" -eq 1 ]
check "discovery works" works "$T/a5.json" discovery
check "this node's record is in the rendezvous" [ -f "$R/var/lib/hpc-rendezvous/glocluster/nodes/node01.rec" ]
check "the hostfile was cut" [ -f "$R/etc/hpcinit/hostfile.plain" ]
done_testing
