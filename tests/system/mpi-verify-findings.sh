#!/bin/bash
# hpcinit verify's findings before and after mpirun, by their tags, on a fake root:
# no mpirun on the PATH, no verify program, no hostfile, a hostfile with no hosts,
# and a verify program (a stand-in script) that answers and exits non-zero, run
# by the real mpirun on this machine (localhost; no ssh).  What verify_parse makes
# of the program's lines (slow pair, narrow pair, two ranks on a host) and a
# launch that fails or times out are in tests/unit/test_mpi.c.  And apply's profile
# and system files that cannot be written.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
R=$T/root
mkroot "$R"
printf 'version: 1\ncluster: {name: fx}\nmpi: {profile: false}\n' >"$R/node.yaml"
verify() { run_hpc_stdout "$T/out" verify --root "$R" -c "$R/node.yaml" --json; }

if ! command -v mpirun >/dev/null; then
	echo "SKIP: no mpirun here (openmpi-bin): these need it"; exit 77
fi
# No mpirun: hpcinit looks on its own safe PATH, so mpirun is hidden in a private mount
# namespace (/dev/null bound over it: not a regular file).
if [ "$(id -u)" = 0 ] && unshare --mount --propagation private true 2>/dev/null; then
	unshare --mount --propagation private bash -c 'mount --bind /dev/null "$(readlink -f "$(command -v mpirun)")" &&
		"$0" verify --root "$1" -c "$1/node.yaml" --json >"$2"' "$HPCINIT" "$R" "$T/out" || true
	has_tag "no mpirun" "$T/out" mpi failed mpi.verify.no-mpirun
else
	echo "# not root, or no mount namespaces: no-mpirun not made here"
fi
HPCINIT_MPIVERIFY=$T/nonexistent verify
has_tag "no verify program" "$T/out" mpi failed mpi.verify.no-program
printf '#!/bin/sh\necho "result status=ok nodes=1 pairs=0"\nexit 3\n' >"$T/prog"
chmod +x "$T/prog"
export HPCINIT_MPIVERIFY=$T/prog
verify
has_tag "no hostfile" "$T/out" mpi failed mpi.verify.no-hostfile
mkdir -p "$R/etc/hpcinit"
echo "# no hosts" >"$R/etc/hpcinit/hostfile.openmpi"
verify
has_tag "a hostfile with no hosts" "$T/out" mpi failed mpi.verify.no-hosts
echo "localhost slots=1" >"$R/etc/hpcinit/hostfile.openmpi"
verify
has_tag "the check answered, mpirun exited 3" "$T/out" mpi failed mpi.verify.exit-status
is "...and said so" "$(jget "$T/out" mpi summary | sed 's/;.*//')" "mpirun exited 3 after the check"
# apply: the profile cannot be written (/etc/profile.d a file)
printf 'version: 1\ncluster: {name: fx}\nmpi: {profile: true}\n' >"$R/node.yaml"
rm -rf "$R/etc/profile.d"
: >"$R/etc/profile.d"
run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --only mpi --json
has_tag "apply: the profile cannot be written" "$T/out" mpi failed mpi.profile.write
# apply on an HBv3 (the rdma fixture): /etc/ucx a file, ucx.conf cannot be written
fixture rdma/hbv3-healthy "$T/hbv3"
printf 'mpi: {profile: true}\n' >>"$T/hbv3/node.yaml"
: >"$T/hbv3/etc/ucx"
run_hpc_stdout "$T/out" apply --root "$T/hbv3" -c "$T/hbv3/node.yaml" --only mpi --json
has_tag "apply: ucx.conf cannot be written (/etc/ucx a file)" "$T/out" mpi failed mpi.sysfiles.write
done_testing
