#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Two releases in one cluster (docs/formats.md): the previous release's
# hpcinit, built from git history, and this tree's, side by side on four
# simulated nodes (tests/cluster/sim.sh: real sshd, shared directory):
#  1. hps-1 and hps-2 run release 0.1.0, hps-3 and hps-4 this tree; one
#     apply on all four at once: every node's hostfiles list all four, and no
#     node rejects another's record;
#  2. ssh trust both ways: alice logs in from every node to every node, old
#     to new and new to old, with strict host-key checking;
#  3. a refresh on each release after the other's apply changes nothing;
#  4. upgrade in place: this tree's `hpcinit status` reads 0.1.0's status.json
#     on hps-1, and its apply there converges with the rest;
#  5. a record of a newer format (3) in the directory: this tree leaves it out
#     with discovery.record.format-newer; the hostfiles keep the four;
#  6. discovery method etcd (a real 3-member etcd), hps-1 back on 0.1.0 (a
#     downgrade) with hps-2: one apply on all four, every hostfile lists all
#     four, no record rejected, alice logs in old to new and new to old.
#
# By hand, not in make check (docs/formats.md has its cost: building 0.1.0
# at -O0 took 11 s of CPU, the cluster part 17 s):
#   tests/compat/two-releases.sh    (as root, from the source tree, built in build/)
# The previous release comes from `git archive` of OLD_COMMIT (default
# 1033c06, release 0.1.0) in TOP_SRCDIR's repository, configured with the
# optional parts off (OLD_CFLAGS, default -O0 -g0), only hpcinit,
# hpcinit-ssh and hpcinit-etcd built, or:
#   HPCINIT_OLD=/path/to/hpcinit   a 0.1.0 hpcinit already built (its helpers
#                                  beside it, or in HPCINIT_OLD_LIBEXEC)
#   HPCINIT_OLD_BUILD=DIR          build there and reuse it on the next run (a CI cache;
#                                  with --build-only: build it and stop)
# A clone without that commit (shallow) FAILS, saying so: it does not skip.
: "${OLD_COMMIT:=1033c06}"
: "${OLD_VERSION:=0.1.0}"
# -O0: the release's behaviour, at less than half the compile time of -O2
: "${OLD_CFLAGS:=-O0 -g0}"
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${TOP_BUILDDIR:=$TOP_SRCDIR/build}"
: "${HPCINIT:=$TOP_BUILDDIR/hpcinit}"
export HPCINIT TOP_SRCDIR TOP_BUILDDIR
set -euo pipefail
[ "$(id -u)" = 0 ] || { echo "needs root (network and mount namespaces)"; exit 77; }
TAP_SECONDS=1
. "$TOP_SRCDIR/tests/lib/tap.sh"

# ---- the previous release, built before the simulated cluster's lock is taken ----
build_old() {
	local dir=$1 t0=$SECONDS
	if ! git -C "$TOP_SRCDIR" cat-file -e "$OLD_COMMIT^{commit}" 2>/dev/null; then
		bail_out "commit $OLD_COMMIT (release $OLD_VERSION) is not in $TOP_SRCDIR's git history" \
			"(a shallow clone, or no git checkout): run 'git fetch --unshallow' (or fetch that" \
			"commit), or set HPCINIT_OLD to a built $OLD_VERSION hpcinit"
	fi
	if [ -x "$dir/hpcinit" ] && [ -x "$dir/hpcinit-ssh" ] && [ -x "$dir/hpcinit-etcd" ] && [ "$(cat "$dir/.hpcinit-commit" 2>/dev/null)" = "$OLD_COMMIT" ]; then
		echo "# release $OLD_VERSION: reusing the build in $dir"
		return 0
	fi
	rm -rf "$dir"
	mkdir -p "$dir"
	chmod 0755 "$dir"       # the ssh step runs its helper as each user
	git -C "$TOP_SRCDIR" archive "$OLD_COMMIT" | tar -x -C "$dir" ||
		bail_out "git archive $OLD_COMMIT failed"
	(
		cd "$dir" &&
			autoreconf -fi &&
			./configure --without-mpi --without-mpich --without-libnfs CFLAGS="$OLD_CFLAGS" &&
			make -j"$(nproc)" hpcinit hpcinit-ssh hpcinit-etcd
	) > "$dir/.build.log" 2>&1 || { tail -30 "$dir/.build.log"; bail_out "building release $OLD_VERSION ($OLD_COMMIT) failed"; }
	echo "$OLD_COMMIT" > "$dir/.hpcinit-commit"
	echo "# release $OLD_VERSION ($OLD_COMMIT) built in $((SECONDS - t0)) s (git archive, autoreconf, configure, make hpcinit and 2 helpers)"
}
OLD_TMP=
if [ -n "${HPCINIT_OLD:-}" ]; then
	OLD=$HPCINIT_OLD
	OLD_LIBEXEC=${HPCINIT_OLD_LIBEXEC:-$(dirname "$OLD")}
elif [ -n "${HPCINIT_OLD_BUILD:-}" ]; then
	build_old "$HPCINIT_OLD_BUILD"
	OLD=$HPCINIT_OLD_BUILD/hpcinit
else
	# world-readable: the ssh step runs its helper as each user
	OLD_TMP=$(mktemp -d /tmp/hpcinit-old.XXXXXX)
	chmod 0755 "$OLD_TMP"
	trap 'rm -rf "$OLD_TMP"' EXIT
	build_old "$OLD_TMP/build"
fi
if [ "${1:-}" = --build-only ]; then
	[ -n "${HPCINIT_OLD_BUILD:-}" ] || bail_out "--build-only needs HPCINIT_OLD_BUILD (where the build is kept)"
	ok "release $OLD_VERSION built in $HPCINIT_OLD_BUILD: $("$OLD" --version)"
	exit 0
fi
. "$TOP_SRCDIR/tests/cluster/ssh-lib.sh"       # its own T and cleanup from here on
_cleanup() { cleanup; }          # etcd-lib.sh's exit trap ends with the cluster's cleanup
. "$TOP_SRCDIR/tests/cluster/etcd-lib.sh"
if [ -n "$OLD_TMP" ]; then
	mv "$OLD_TMP/build" "$T/old"
	rmdir "$OLD_TMP"
	OLD=$T/old/hpcinit
fi
: "${OLD_LIBEXEC:=$(dirname "$OLD")}"
[ "$("$OLD" --version)" = "hpcinit $OLD_VERSION" ] || bail_out "$OLD --version says '$("$OLD" --version)', not hpcinit $OLD_VERSION"
ok "release $OLD_VERSION: $("$OLD" --version); this tree: $("$HPCINIT" --version)"

# bin NODE: the hpcinit a node runs; hpx NODE CMD [ARGS]: one run of it (output in $T/out.NODE)
OLD_NODES="hps-1 hps-2"
NEW_NODES="hps-3 hps-4"
bin() { case " $OLD_NODES " in *" $1 "*) echo "$OLD" ;; *) echo "$HPCINIT" ;; esac; }
hpx() {
	local n=$1 cmd=$2
	shift 2
	on "$n" env HPCINIT_LIBEXEC_DIR="$([ "$(bin "$n")" = "$OLD" ] && echo "$OLD_LIBEXEC" || dirname "$HPCINIT")" \
		"$(bin "$n")" "$cmd" -c "$T/node.yaml" --json "$@" > "$T/out.$n" 2> "$T/err.$n"
}
# each CMD NODE...: hpx on the nodes at once; fails, showing why, unless every one exits 0
each() {
	local cmd=$1 n pids=() bad=0 i=0
	shift
	for n in "$@"; do hpx "$n" "$cmd" & pids+=($!); done
	for n in "$@"; do
		wait "${pids[$i]}" || { echo "  hpcinit $cmd on $n ($(bin "$n")) failed:"; sed 's/^/  | /' "$T/err.$n" | tail -20; bad=1; }
		i=$((i + 1))
	done
	return $bad
}
# every node's plain hostfile lists the four
hostfiles_all() {
	local n got
	for n in $(nodes); do
		got=$(on "$n" grep -v '^#' /etc/hpcinit/hostfile.plain | tr '\n' ' ')
		[ "$got" = "hps-1 hps-2 hps-3 hps-4 " ] || { echo "  $n ($(bin "$n")): hostfile lists '$got'"; return 1; }
	done
}
# no node reports another's record as rejected (any discovery.record.* finding)
no_rejects() {
	local n
	for n in $(nodes); do
		if grep -q '"discovery\.record\.' "$T/out.$n"; then
			echo "  $n ($(bin "$n")) rejected a record:"; grep -o '"tag": "discovery\.record[^}]*' "$T/out.$n" | sed 's/^/  | /'
			return 1
		fi
	done
}

# ---- 1. one apply, two releases ----
cluster_up 4
# shellcheck disable=SC2086
each apply $OLD_NODES $NEW_NODES || bail_out "apply on the mixed cluster"
ok "apply on 2 nodes of $OLD_VERSION and 2 of this tree at once: every one exits 0"
check "every node's hostfile lists all four" hostfiles_all
check "no node rejects another's record" no_rejects
check "a $OLD_VERSION node's discovery counts 4 peers" [ "$(module_field hps-1 discovery summary | grep -o '^[0-9]*')" = 4 ]
check "a node of this tree counts 4 peers" [ "$(module_field hps-3 discovery summary | grep -o '^[0-9]*')" = 4 ]

# ---- 2. ssh both ways ----
logins() {
	local s d got bad=0
	for s in $(nodes); do
		for d in $(nodes); do
			got=$(login "$s" alice "$d" 2>&1) && [ "$got" = "$d" ] ||
				{ echo "  alice@$s ($(bin "$s")) -> $d ($(bin "$d")): $got"; bad=1; }
		done
	done
	return $bad
}
check "alice logs in from every node to every node, old to new and new to old (16, strict host keys)" logins

# ---- 3. each release's refresh after the other's apply: converged ----
unchanged() {
	local n m
	for n in "$@"; do
		for m in discovery ssh hostfile; do
			[ "$(module_field "$n" "$m" status)" = ok ] ||
				{ echo "  $n ($(bin "$n")): $m $(module_field "$n" "$m" status): $(module_field "$n" "$m" changed)"; return 1; }
		done
	done
}
# shellcheck disable=SC2086
each refresh $OLD_NODES $NEW_NODES || bail_out "refresh on the mixed cluster"
# shellcheck disable=SC2086
check "a refresh on every node changes nothing (discovery, ssh, hostfile ok)" unchanged $OLD_NODES $NEW_NODES
check "... and rejects no record" no_rejects

# ---- 4. upgrade in place: hps-1 from 0.1.0 to this tree ----
rc=0
on hps-1 "$HPCINIT" status > "$T/status.hps-1" 2>&1 || rc=$?
check "this tree's status reads $OLD_VERSION's status.json on hps-1: exit 0 (ready)" [ "$rc" = 0 ]
check "... and shows it" contains "$T/status.hps-1" "result: ready (exit 0"
OLD_NODES="hps-2"
NEW_VERSION=$("$HPCINIT" --version | sed 's/^hpcinit //')
rec1=$(find "$SHARED" -name hps-1.rec | head -1)
[ -n "$rec1" ] || bail_out "no hps-1.rec under $SHARED"
grep -v '^version: \|^updated: \|^hmac: ' "$rec1" >"$T/hps-1.rec.before"
each apply hps-1 || bail_out "apply of this tree on hps-1 after $OLD_VERSION"
# The upgraded node says its release in its record (version:, so updated: and the hmac too);
# nothing else of it changes,
# and the others' files see no change: ssh and hostfile converged.
upgraded() {
	local m
	for m in ssh hostfile; do
		[ "$(module_field hps-1 "$m" status)" = ok ] ||
			{ echo "  hps-1: $m $(module_field hps-1 "$m" status): $(module_field hps-1 "$m" changed)"; return 1; }
	done
	grep -qx "version: $NEW_VERSION" "$rec1" || { echo "  hps-1.rec:"; sed 's/^/  | /' "$rec1"; return 1; }
	grep -v '^version: \|^updated: \|^hmac: ' "$rec1" | diff -u "$T/hps-1.rec.before" - >"$T/hps-1.rec.diff" ||
		{ sed 's/^/  | /' "$T/hps-1.rec.diff"; return 1; }
}
check "the upgraded hps-1's apply: its record says $NEW_VERSION and nothing else changed; ssh and hostfile converged" upgraded
check "... status.json now says format 1" [ "$(on hps-1 python3 -c 'import json; print(json.load(open("/run/hpcinit/status.json")).get("format"))')" = 1 ]
check "the $OLD_VERSION node hps-2's check after hps-1's upgrade: in sync (exit 0)" each check hps-2
check "... every hostfile still lists the four" hostfiles_all

# ---- 5. a newer format in the directory ----
rec=$(find "$SHARED" -name hps-4.rec | head -1)
[ -n "$rec" ] || bail_out "no hps-4.rec under $SHARED"
sed -e 's/^format: 1$/format: 3/' -e 's/^hostname: hps-4$/hostname: hps-9/' -e 's/^version: .*/version: 9.0.0/' \
	"$rec" > "$(dirname "$rec")/hps-9.rec"
chmod 0644 "$(dirname "$rec")/hps-9.rec"
check "this tree's refresh beside a format-3 record: exit 0" each refresh hps-3
check "... the record left out, said" \
	contains "$T/out.hps-3" "record hps-9.rec: format 3 (written by hpcinit 9.0.0) is newer than hpcinit"
check "... as the cluster finding discovery.record.format-newer" \
	contains "$T/out.hps-3" '"tag": "discovery.record.format-newer"'
check "... which leaves hps-3's discovery ok" [ "$(module_field hps-3 discovery status)" = ok ]
check "... and the hostfiles keep the four" hostfiles_all
rm -f "$(dirname "$rec")/hps-9.rec"

# ---- 6. the etcd method; hps-1 back on the previous release ----
etcd_up || bail_out "etcd did not start"
sed -i "s|^discovery: .*|discovery: {method: etcd, endpoints: $(etcd_endpoints), expect: 4, wait: 60s, lease: 30s}|" "$T/node.yaml"
grep -q 'method: etcd' "$T/node.yaml" || bail_out "test bug: the etcd spec"
OLD_NODES="hps-1 hps-2"
# A cluster booting on etcd: no node has seen it formed yet (the mark a formed
# cluster leaves, docs/cluster.md), so each apply waits for discovery.expect.
for n in $(nodes); do on "$n" rm -f /run/hpcinit/discovery-ready; done
# shellcheck disable=SC2086
check "etcd: apply on 2 nodes of $OLD_VERSION (hps-1 downgraded) and 2 of this tree: every one exits 0" \
	each apply $OLD_NODES $NEW_NODES
check "etcd: every node's hostfile lists all four" hostfiles_all
check "etcd: no node rejects another's record" no_rejects
# shellcheck disable=SC2086
check "etcd: a refresh on every node exits 0" each refresh $OLD_NODES $NEW_NODES
check "etcd: ... every hostfile still lists all four" hostfiles_all
etcd_logins() {
	local s d got bad=0
	for s in hps-1 hps-4; do
		for d in hps-1 hps-4; do
			got=$(login "$s" alice "$d" 2>&1) && [ "$got" = "$d" ] || { echo "  alice@$s -> $d: $got"; bad=1; }
		done
	done
	return $bad
}
check "etcd: alice logs in $OLD_VERSION to this tree and back (hps-1, hps-4)" etcd_logins

done_testing
