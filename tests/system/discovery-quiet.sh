#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A node that waits on the shared directory stops reading a directory that has not changed
# (lib/rendezvous/dirlist.c: once the directory's times are 2 s older than its own clock, a
# list over it unchanged is one stat of it), and still sees the first record that arrives
# after: the record's rename changes the directory.  The real binary, one fake root a node,
# the rendezvous one directory of this machine that every root links to (as an NFS mount is).
. "$(dirname "$0")/lib.sh"

openssl rand -hex 32 > "$T/cluster.key"
mkdir -p "$T/share"
chmod 0755 "$T/share"
# mknode N E W: node N's fake root and spec (expect E, wait W)
mknode() {
	local r=$T/$1
	mkroot "$r"
	mkdir -p "$r/etc/hpcinit"
	install -m 0600 "$T/cluster.key" "$r/etc/hpcinit/cluster.key"
	ln -sfn "$T/share" "$r/shared"
	cat >"$r/etc/hpcinit/node.yaml" <<-YAML
	version: 1
	cluster: {name: quiet, network: 10.0.0.0/24, secret_file: /etc/hpcinit/cluster.key}
	discovery: {method: shared, dir: /shared/.hpcinit, expect: $2, wait: $3, lease: 5m}
	hostfile: {}
	YAML
}
# apply_as NODE: hpcinit apply -v on its root (address 10.0.0.<n>)
apply_as() {
	HPCINIT_ADDRESS=10.0.0.${1#c} hpcinit apply -v --only discovery,hostfile --root "$T/$1" \
		-c "$T/$1/etc/hpcinit/node.yaml" --hostname "$1"
}
# the detail a waiting run ends with: "waiting: N lists of DIR, Q of them over the directory unchanged ..."
quiet_lists() { sed -n 's/.*waiting: [0-9]* lists of .*, \([0-9]*\) of them over the directory unchanged.*/\1/p' "$1"; }

# c1 and c3 do not wait (and so never say the cluster formed: a formed cluster is joined at once)
mknode c1 4 0s
mknode c2 5 6s
mknode c3 4 0s
mknode c4 4 30s
rc=0; apply_as c1 >"$T/c1.out" 2>&1 || rc=$?
check "c1 (expect 4, wait 0 s) writes its record, degraded" test "$rc" = 3 -a -f "$T/share/.hpcinit/quiet/nodes/c1.rec"

# c4 waits for 4: c1, c2 and itself are there; c3 comes once c4's lists are quiet: 14 s later
# (c4 lists at 3.15 s after its start, settled, then at 6.35 and 11.35 s over the directory
# unchanged; under valgrind its start takes a few seconds more).  Were a quiet list blind to
# c3's record, c4 would list the unchanged directory to the end of its 30 s and end degraded.
t0=$(date +%s)
apply_as c4 >"$T/c4.out" 2>&1 &
c4=$!
cleanup_add "kill $c4 2>/dev/null || true"
# meanwhile, once c4's record is there, c2 waits 6 s for 5 and ends with 3 (c1, c4 and
# itself): its lists after the directory settled (2 s after its own record) were stats of it.
for _ in $(seq 100); do [ -e "$T/share/.hpcinit/quiet/nodes/c4.rec" ] && break; sleep 0.1; done
rc=0; apply_as c2 >"$T/c2.out" 2>&1 || rc=$?
check "c2 (expect 5, wait 6 s) ends degraded with 3 nodes" test "$rc" = 3
check "... 3 nodes after its wait" grep -q 'only 3 of 5 expected nodes after waiting 6 s' "$T/c2.out"
check "... it says how it listed (the detail of a run that waited)" grep -q 'waiting: [0-9]* lists of ' "$T/c2.out"
check "... and at least one list was over the directory unchanged: $(grep -o 'waiting: .*' "$T/c2.out")" \
	test "$(quiet_lists "$T/c2.out")" -ge 1
left=$((t0 + 14 - $(date +%s)))
[ "$left" -le 0 ] || sleep "$left"
t3=$(date +%s%N)
rc=0; apply_as c3 >"$T/c3.out" 2>&1 || rc=$?
check "c3 (expect 4, wait 0 s) writes its record while c4 waits, and finds the 4" test "$rc" = 0
rc=0; wait "$c4" || rc=$?
t4=$(date +%s%N)
check "c4 ends ready with all 4 (exit 0), not at its 30 s wait" test "$rc" = 0
check "... 4 nodes known (expect 4)" grep -q '4 nodes known (expect 4)' "$T/c4.out"
check "... its hostfile lists c3" grep -qx c3 "$T/c4/etc/hpcinit/hostfile.plain"
echo "# c4 ended $(((t4 - t3) / 1000000)) ms after c3 started (its lists come every 5 s at most)"
check "... and it had listed the directory unchanged before c3 came: $(grep -o 'waiting: .*' "$T/c4.out")" \
	test "$(quiet_lists "$T/c4.out")" -ge 1
done_testing
