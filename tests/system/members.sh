#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Readiness in the record (issue 33): each node's record says its state
# (ready, degraded, failed with its worst tag), covered by the HMAC; the MPI
# hostfiles leave a failed node out (hostfile.exclude: failed), the clush
# group keeps it, exclude: none puts it back; a repaired node announces
# itself ready; "hpcinit members" shows every member's state from the shared
# directory, bounded, escaped, fast at 1,000 members.  Real binary on one
# fake root with the rendezvous in it; each node (--hostname) keeps its own
# /run/hpcinit between its runs, as a machine would.
. "$(dirname "$0")/lib.sh"

R=$T/root
mkroot "$R"
mkdir -p "$R/shared" "$R/etc/hpcinit"
openssl rand -hex 32 > "$R/etc/hpcinit/cluster.key"
chmod 0600 "$R/etc/hpcinit/cluster.key"
NODES=$R/shared/.hpcinit/glocluster/nodes
spec() {
	cat <<-EOF
	version: 1
	cluster: {name: glocluster, network: 10.0.0.0/24, secret_file: /etc/hpcinit/cluster.key}
	memlock: {limit: unlimited}
	discovery: {method: shared, dir: /shared/.hpcinit, expect: 1}
	hostfile: {etc_hosts: always$1}
	EOF
}
spec "" > "$T/good.yaml"
spec ", exclude: none" > "$T/none.yaml"
spec ", dir: /etc/blocked" > "$T/bad.yaml"        # a file where the hostfiles' directory should be
touch "$R/etc/blocked"

# as NODE ARGS...: hpcinit ARGS as node NODE (address 10.0.0.<n>, its own /run/hpcinit); output in $T/NODE.out
as() {
	local n=$1
	shift
	rm -rf "$R/run/hpcinit"
	[ ! -d "$T/run.$n" ] || cp -a "$T/run.$n" "$R/run/hpcinit"
	rc=0
	HPCINIT_ADDRESS=10.0.0.${n#c} hpcinit "$@" --root "$R" --hostname "$n" >"$T/$n.out" 2>&1 || rc=$?
	rm -rf "$T/run.$n"
	[ ! -d "$R/run/hpcinit" ] || cp -a "$R/run/hpcinit" "$T/run.$n"
}
same_text() { [ "$1" = "$2" ] || { printf '  got:\n%s\n  wanted:\n%s\n' "$1" "$2" | sed 's/^/  | /'; return 1; }; }

as c1 apply -c "$T/good.yaml"
check "c1 applies (exit 0)" test "$rc" = 0
check "c1's record says ready" grep -qx 'state: ready' "$NODES/c1.rec"
as c2 apply -c "$T/good.yaml"
as c3 apply -c "$T/bad.yaml"
check "c3's apply fails (its hostfile step cannot write)" test "$rc" = 1
check "c3's record says failed, with its worst tag, before the HMAC" \
	same_text "$(grep -E '^(state|reason|hmac):' "$NODES/c3.rec" | cut -c1-6)" "$(printf 'state:\nreason\nhmac: ')"
check "... reason: hostfile.failed" grep -qx 'reason: hostfile.failed' "$NODES/c3.rec"

as c1 refresh -c "$T/good.yaml"
check "c1's refresh exits 0" test "$rc" = 0
check "c3 is out of c1's MPI hostfiles (plain)" \
	same_text "$(grep -v '^#' "$R/etc/hpcinit/hostfile.plain")" "$(printf 'c1\nc2')"
check "... (openmpi, mpich)" eval '! grep -q "^c3" "$R/etc/hpcinit/hostfile.openmpi" "$R/etc/hpcinit/hostfile.mpich"'
check "... and still in the clush group" grep -q "glocluster: 'c\[1-3\]'" "$R/etc/clustershell/groups.d/hpcinit.yaml"
check "the run says who was left out and why" contains "$T/c1.out" "1 failed, left out of the MPI hostfiles"

as c1 refresh -c "$T/none.yaml"
check "hostfile.exclude: none puts c3 back" \
	same_text "$(grep -v '^#' "$R/etc/hpcinit/hostfile.plain")" "$(printf 'c1\nc2\nc3')"

# From any node: every member's state.
as c2 members -c "$T/good.yaml"
check "members exits 0" test "$rc" = 0
check "members: 3 members, 1 failed, 2 ready" contains "$T/c2.out" "3 members, 1 failed, 2 ready"
check "members: c3 first, failed, with its reason" \
	same_text "$(sed -n 3p "$T/c2.out" | tr -s ' ')" "c3 failed - hostfile.failed"
as c2 members --json -c "$T/good.yaml"
json_ok() {
	python3 - "$T/c2.out" <<-'EOF'
	import json, sys
	d = json.load(open(sys.argv[1]))
	s = {n["hostname"]: (n["state"], n.get("reason")) for n in d["nodes"]}
	assert d["members"] == 3 and d["failed"] == 1 and d["ready"] == 2, d
	assert s == {"c1": ("ready", None), "c2": ("ready", None), "c3": ("failed", "hostfile.failed")}, s
	EOF
}
check "members --json: the same states" json_ok

# Repaired: c3's next apply announces ready, and c1's refresh takes it back.
as c3 apply -c "$T/good.yaml"
check "c3 repaired applies (exit 0)" test "$rc" = 0
check "c3's record says ready again (announced)" grep -qx 'state: ready' "$NODES/c3.rec"
check "... without a reason" eval '! grep -q "^reason:" "$NODES/c3.rec"'
as c1 refresh -c "$T/good.yaml"
check "c3 is back in c1's hostfile" \
	same_text "$(grep -v '^#' "$R/etc/hpcinit/hostfile.plain")" "$(printf 'c1\nc2\nc3')"

# A failure found after boot by hpcinit check (a limits.d file lowers memlock): its record says so, and
# says ready again once repaired.
SITE=$R/etc/security/limits.d/zz-site.conf
printf '*  soft  memlock  8192\n' >"$SITE"
as c2 check -c "$T/good.yaml"
check "c2's check finds the failure (exit 1)" test "$rc" = 1
check "... and c2's record says failed, with the memlock tag" grep -qx 'reason: memlock\..*' "$NODES/c2.rec"
rm -f "$SITE"
as c2 check -c "$T/good.yaml"
check "repaired, c2's check (exit 0) puts ready back in its record" \
	same_text "$rc $(grep -E '^(state|reason):' "$NODES/c2.rec")" "0 state: ready"

# The state is covered by the HMAC: c3's record edited to say failed is rejected.
sed -i 's/^state: ready$/state: failed/' "$NODES/c3.rec"
as c2 members -c "$T/good.yaml"
check "an edited state: c3 rejected, not counted" contains "$T/c2.out" "2 members, 2 ready"
check "... named with the HMAC's reason" contains "$T/c2.out" "c3.rec: HMAC does not match"

# A name with a newline under nodes/ prints no forged line.
printf 'x\n...\n' > "$NODES/$(printf 'evil\x0ac9 ready - forged.rec')"
as c2 members -c "$T/good.yaml"
check "a file name with a newline is shown escaped" contains "$T/c2.out" 'evil\x0ac9 ready - forged.rec'
check "... and forges no member line" eval '! grep -q "^c9" "$T/c2.out"'
rm -f "$NODES"/evil*

# 1,000 more members (real records, signed): fast, and the table bounded.
make -s -C "$TOP_BUILDDIR" tests/bench/gen-records >/dev/null 2>&1 || true
if [ -x "$TOP_BUILDDIR/tests/bench/gen-records" ]; then
	"$TOP_BUILDDIR/tests/bench/gen-records" -s "$R/etc/hpcinit/cluster.key" "$NODES" glocluster 1000 >/dev/null
	t0=$(date +%s%N)
	as c2 members -c "$T/good.yaml"
	t1=$(date +%s%N)
	echo "# members at 1,002 records: $(( (t1 - t0) / 1000000 )) ms"
	check "1,002 members listed (exit 0)" contains "$T/c2.out" "1002 members"
	check "... the table is bounded (2 heads, 100 members, the note, c3 rejected: 105 lines)" \
		same_text "$(wc -l < "$T/c2.out") $(tail -n 3 "$T/c2.out" | grep -c "902 more")" "105 1"
	as c2 members -v -c "$T/good.yaml"
	check "-v lists every member" test "$(grep -c '^syn' "$T/c2.out")" = 1000
	as c2 members --json -c "$T/good.yaml"
	check "--json lists every member" python3 -c "import json,sys; assert len(json.load(open(sys.argv[1]))['nodes']) == 1002" "$T/c2.out"
else
	not_ok "tests/bench/gen-records not built: cannot check 1,000 members"
fi

# hostfile.exclude takes failed or none: anything else is a spec error with its place.
spec ", exclude: sick" > "$T/sick.yaml"
rc=0
hpcinit validate "$T/sick.yaml" >"$T/sick.out" 2>&1 || rc=$?
check "hostfile.exclude: sick is refused (exit 2)" test "$rc" = 2
check "... naming the place and the key" grep -q "sick.yaml:5:.*hostfile.exclude" "$T/sick.out"

# No rendezvous in the spec: a usage error.
printf 'version: 1\ncluster: {name: glocluster}\n' > "$T/none-disc.yaml"
as c2 members -c "$T/none-disc.yaml"
check "members without discovery: exit 2, said" same_text "$rc $(grep -c 'shared or etcd' "$T/c2.out")" "2 1"
done_testing
