#!/bin/bash
# tests/dist-complete.sh (make distcheck's hook) names every file git tracks
# that a tarball lacks: a file left out of the list, and a path over 99
# characters that tar's v7 format drops (the fixture lost in distcheck
# before configure.ac asked for tar-ustar).  A real git repository and real
# tar archives in $T.
. "$(dirname "$0")/lib.sh"
DC=$TOP_SRCDIR/tests/dist-complete.sh
R=$T/src
long=tests/fixtures/rdma/sys/devices/pci0000:00/0000:00:08.0/0000:01:00.0/infiniband/mlx5_0/device/net/eth1/ifindex
[ ${#long} -gt 99 ] || { echo "the long path is only ${#long} characters"; exit 1; }
mkdir -p "$R/conf" "$(dirname "$R/$long")"
echo x > "$R/README.md"
echo y > "$R/conf/a.yaml"
echo 3 > "$R/$long"
echo '*.o' > "$R/.gitignore"
git -C "$R" init -q
git -C "$R" add -A
# pack TARNAME FORMAT FILE...: a release tarball of those files, unpacked in $T/TARNAME
pack() {
	local name=$1 fmt=$2; shift 2
	rm -rf "${T:?}/$name"
	(cd "$R" && tar --format="$fmt" -cf "$T/$name.tar" "$@" 2>/dev/null) || true
	mkdir "$T/$name"
	tar -xf "$T/$name.tar" -C "$T/$name"
}
run_dc() { local out=$1; shift; rc=0; bash "$DC" "$@" >"$out" 2>&1 || rc=$?; }

pack full ustar README.md conf "$(echo "$long" | cut -d/ -f1)"
run_dc "$T/o1" "$R" "$T/full"
check "every tracked file in the tarball (.gitignore aside): exit 0" test "$rc" = 0
check "...and says how many" contains "$T/o1" "all 3 tracked files are in $T/full"

pack nolist ustar README.md "$(echo "$long" | cut -d/ -f1)"
run_dc "$T/o2" "$R" "$T/nolist"
check "a tracked file not in the tarball: exit 1" test "$rc" = 1
check "...names it" contains "$T/o2" "  conf/a.yaml"
check "...and what to do" contains "$T/o2" "add to EXTRA_DIST"

pack v7 v7 README.md conf "$(echo "$long" | cut -d/ -f1)"
check "(tar v7 dropped the long path)" test ! -e "$T/v7/$long"
run_dc "$T/o3" "$R" "$T/v7"
check "a path tar v7 dropped: exit 1" test "$rc" = 1
check "...names it" contains "$T/o3" "  $long"
check "...and only it" not_contains "$T/o3" "conf/a.yaml"

mkdir "$T/notgit"
run_dc "$T/o4" "$T/notgit" "$T/full"
check "a source tree that is not a git checkout: nothing to compare, exit 0" test "$rc" = 0
check "...and says so" contains "$T/o4" "is not a git checkout"
done_testing
