#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Acting as a user (the ssh step writing ~/.ssh and the key pair with the
# user's filesystem identity) drops root's supplementary groups (issue 22).
# The real binary runs as root with a supplementary group (setpriv --groups)
# that alone opens a directory above alice's home (root:grp, 0710): alice
# cannot reach her home, so neither may hpcinit acting as her.  bob's home is
# ordinary: acting as him works.  strace shows the groups the process holds
# while it acts as each user: the user's own group only, root's back after.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "ssh-user-groups: needs root" >&2; exit 77; }
command -v strace > /dev/null || { echo "ssh-user-groups: strace not installed (tools/setup.sh)" >&2; exit 1; }
GRP=4444
chmod 0755 "$T"
R=$T/root
mkdir -p "$R/etc" "$R/home/grp/alice" "$R/home/bob"
printf 'root:x:0:0:root:/root:/bin/bash\nalice:x:4321:4321::/home/grp/alice:/bin/bash\nbob:x:4322:4322::/home/bob:/bin/bash\n' \
	> "$R/etc/passwd"
chown 0:"$GRP" "$R/home/grp"
chmod 0710 "$R/home/grp"
chown 4321:4321 "$R/home/grp/alice"
chown 4322:4322 "$R/home/bob"
cat > "$T/n.yaml" <<EOF
version: 1
cluster: {name: t, network: 10.0.0.0/24}
discovery: {method: static, hosts: [n1]}
ssh: {users: [alice, bob]}
EOF
rc=0
HPCINIT_ADDRESS=10.0.0.5 setpriv --groups "$GRP" -- strace -f -qq -o "$T/trace" \
	-e trace=setgroups,setfsuid,setfsgid ${HPCINIT_WRAPPER:-} "$HPCINIT" apply --only discovery,ssh \
	--root "$R" -c "$T/n.yaml" --hostname n1 > "$T/out" 2>&1 || rc=$?
echo "# the agent's identity changes (strace):"
grep -E 'set(groups|fsuid|fsgid)\(' "$T/trace" | sed 's/^[0-9]* */#   /' | uniq | head -20

# every setfsuid to a user comes after setgroups to that user's group only
check "acting as alice: groups [4321] before setfsuid(4321)" \
	bash -c "grep -oE 'setgroups\(1, \[[0-9]+\]\)|setfsuid\(4321\)' '$T/trace' | grep -B1 -m1 'setfsuid(4321)' | head -1 | grep -qx 'setgroups(1, \[4321\])'"
check "acting as bob: groups [4322] before setfsuid(4322)" \
	bash -c "grep -oE 'setgroups\(1, \[[0-9]+\]\)|setfsuid\(4322\)' '$T/trace' | grep -B1 -m1 'setfsuid(4322)' | head -1 | grep -qx 'setgroups(1, \[4322\])'"
check "root's group $GRP back after acting as a user" \
	bash -c "grep -oE 'setgroups\([0-9]+, \[[0-9, ]*\]\)' '$T/trace' | tail -1 | grep -q '$GRP'"
check "alice: hpcinit did not reach her home through root's group" [ ! -e "$R/home/grp/alice/.ssh" ]
check "alice: refused as she would be (Permission denied)" contains "$T/out" "Permission denied"
check "alice: the run fails (exit $rc)" [ "$rc" != 0 ]
check "bob: key pair written as bob" [ "$(stat -c %u "$R/home/bob/.ssh/id_ed25519" 2>/dev/null)" = 4322 ]
check "bob: authorized_keys written" grep -q "ssh-ed25519 .* bob@n1" "$R/home/bob/.ssh/authorized_keys"
done_testing
