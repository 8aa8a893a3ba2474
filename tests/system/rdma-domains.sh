#!/bin/bash
# Fabric identity across a cluster, through the real binary (shared discovery on a
# fake root): node01 is the HBv4 fixture (mlx5_ib0, P_Key 0x800b); the other nodes
# are records as their agents write them: node02 the same, node03 not renamed
# (mlx5_1), node04 another scale set (P_Key 0x8014), node05 an older agent without
# the fields.  The placement group comes from a STAND-IN for Azure's metadata
# service (tests/system/imds-standin.py): this machine is not an Azure VM.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
need_fixture_ops
R=$T/root
ulimit -l 8192
fixture rdma/hbv4 "$R"
mkroot "$R"
start_standin() {       # start_standin PG [hang]: sets IMDS_PID, PORT
	rm -f "$T/port"
	"$TOP_SRCDIR/tests/system/imds-standin.py" "$T/port" "$@" >"$T/imds.log" 2>&1 &
	IMDS_PID=$!
	for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
	PORT=$(cat "$T/port")
	[ ! -f "$R/node.yaml" ] || sed -i -E "s|http://127\.0\.0\.1:[0-9]+/|http://127.0.0.1:$PORT/|" "$R/node.yaml"
}
stop_standin() { kill "$IMDS_PID" 2>/dev/null; wait "$IMDS_PID" 2>/dev/null || true; }
cleanup_add stop_standin   # lib.sh's trap also removes $T
start_standin pg-a
cat >>"$R/node.yaml" <<YAML
discovery: {method: shared, dir: /shared, expect: 1, wait: 1s}
hostfile: {formats: [openmpi, mpich], etc_hosts: never, openmpi_default: false}
mpi: {profile: true}
YAML
sed -i "s|^  ipoib: ib0|  imds_url: \"http://127.0.0.1:$PORT/metadata/instance/compute/placementGroupId?api-version=2021-02-01\&format=text\"|" "$R/node.yaml"
sed -i 's/^cluster: {name: fixture}/cluster: {name: fixture, network: 10.0.0.0\/24}/' "$R/node.yaml"
N=$R/shared/fixture/nodes
mkdir -p "$N"
now=$(date +%s)
rec() {         # rec HOST ADDR [EXTRA-LINES]
	printf '# hpcinit peer record\nformat: 1\ncluster: fixture\nhostname: %s\naddr: %s\n%sslots: 4\nrole: compute\nversion: 0\nupdated: %s\n...\n' \
		"$1" "$2" "${3:-}" "$now" >"$N/$1.rec"
}
rec node02 10.0.0.5 $'fabric: mlx5_ib0=0015:5dff:fe33:aa01\npkey: 0x800b\nplacement_group: pg-a\n'
rec node03 10.0.0.6 $'fabric: mlx5_1=0015:5dff:fe33:aa02\npkey: 0x800b\nplacement_group: pg-a\n'
rec node05 10.0.0.8
# node04 is a VM of another scale set: its own agent, on its own sysfs fixture
# (hbv4-pkey2: P_Key 0x8014), writes its record; the stand-in answers pg-b there.
R4=$T/root4
fixture rdma/hbv4-pkey2 "$R4"
mkroot "$R4"
sed -n '/^discovery:/!p' "$R/node.yaml" >"$R4/node.yaml"
printf 'discovery: {method: shared, dir: /shared, expect: 1, wait: 1s}\n' >>"$R4/node.yaml"
mkdir -p "$R4/shared/fixture/nodes"
stop_standin; start_standin pg-b
sed -i -E "s|http://127\.0\.0\.1:[0-9]+/|http://127.0.0.1:$PORT/|" "$R4/node.yaml"
HPCINIT_ADDRESS=10.0.0.7 run_hpc_stdout "$T/out4" apply --root "$R4" -c "$R4/node.yaml" --hostname node04 --only discovery --json
check "node04's agent: discovery wrote its record" [ "$(jget "$T/out4" discovery status)" = changed ]
check "node04's own record: P_Key 0x8014 from its sysfs" grep -qx 'pkey: 0x8014' "$R4/shared/fixture/nodes/node04.rec"
cp "$R4/shared/fixture/nodes/node04.rec" "$N/node04.rec"
stop_standin; start_standin pg-a
chmod 0644 "$N"/*.rec
export HPCINIT_ADDRESS=10.0.0.4
run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --hostname node01 --json
head -3 "$T/out.err"
check "discovery found 5 nodes (node05's older record parses)" grep -q "^5 nodes" <<<"$(jget "$T/out" discovery summary)"
own=$N/node01.rec
check "own record: the fabric devices and port GUIDs (never the VF)" grep -qx 'fabric: mlx5_ib0=0015:5dff:fe33:ff2c' "$own"
check "own record: the tenant P_Key" grep -qx 'pkey: 0x800b' "$own"
check "own record: the placement group from the stand-in" grep -qx 'placement_group: pg-a' "$own"
check "the stand-in was asked with Metadata: true" grep -q '^GET /metadata/instance/compute/placementGroupId?api-version=2021-02-01&format=text Metadata=true$' "$T/imds.log"
has_detail "names that differ are named" "$T/out" mpi \
	'^warning: fabric device names differ: this node has mlx5_ib0; node03 has mlx5_1: '
has_detail "node05's identity is unknown, said" "$T/out" mpi '^1 peer\(s\) publish no fabric identity'
has_detail "the domains are listed" "$T/out" mpi \
	'^InfiniBand domains \(P_Key\[-placement group\]\): 0x800b-pg-a \(3 nodes\), 0x8014-pg-b \(1 node\)'
# node04 alone in its domain is node04's problem: on node01 a cluster finding, not its state (issue 33)
is "mpi: changed, not degraded (another node alone is a cluster finding)" "$(jget "$T/out" mpi status)" changed
check "node04 alone in its domain: a cluster finding of node01's mpi step" \
	grep -q '{"severity": "cluster", "tag": "mpi.fabric.alone", "text": "node04 is alone in InfiniBand domain 0x8014-pg-b: MPI over InfiniBand reaches no other node from it (P_Key 0x8014, placement group pg-b is its scale set.s own)"}' "$T/out"
# ... and on node04 itself, alone in its domain, it is its own problem: degraded.
cp -n "$N"/*.rec "$R4/shared/fixture/nodes/"
HPCINIT_ADDRESS=10.0.0.7 run_hpc_stdout "$T/out4b" apply --root "$R4" -c "$R4/node.yaml" --hostname node04 --only discovery,mpi --json
is "node04 (alone in its domain): its mpi step is degraded" "$(jget "$T/out4b" mpi status)" degraded
check "... with the finding mpi.fabric.alone about itself (severity degraded)" \
	grep -q '{"severity": "degraded", "tag": "mpi.fabric.alone", "text": "node04 is alone in InfiniBand domain 0x8014' "$T/out4b"
check "the profile says per node what to use" grep -qx '# Device names differ between nodes (node03 has mlx5_1): the names below are this node.s,' "$R/etc/profile.d/hpcinit-mpi.sh"
check "the profile still names this node's devices" grep -qx 'export UCX_NET_DEVICES=mlx5_ib0:1' "$R/etc/profile.d/hpcinit-mpi.sh"
H=$R/etc/hpcinit
check "whole-cluster hostfile: 5 nodes" [ "$(grep -vc '^#' "$H/hostfile.openmpi")" = 5 ]
is "domain hostfile 0x800b-pg-a" "$(grep -v '^#' "$H/hostfile.openmpi.0x800b-pg-a" | sed 's/^node01 slots=[0-9]*$/node01 slots=N/' | tr '\n' ' ')" \
	"node01 slots=N node02 slots=4 node03 slots=4 "
is "domain hostfile 0x8014-pg-b" "$(grep -v "^#" "$H/hostfile.mpich.0x8014-pg-b" | sed "s/:[0-9]*$/:N/")" "node04:N"
check "domain hostfile header names the domain" grep -q '^# hpcinit: InfiniBand domain 0x800b-pg-a: cluster fixture, 3 nodes' "$H/hostfile.openmpi.0x800b-pg-a"

# hpcinit verify pairs only within a domain (real mpirun; these node names do not
# resolve here, so the runs fail at launch: the command lines and domains are what counts).
cp "$R/etc/profile.d/hpcinit-mpi.sh" "$T/profile-before"
# A build without Open MPI (--without-mpi: the ASan stage) has no verify program; mpirun
# fails at launch here before any program runs, so any executable serves then.
prog=$TOP_BUILDDIR/hpcinit-mpiverify
[ -x "$prog" ] || prog=/bin/true
HPCINIT_MPIVERIFY=$prog run_hpc_stdout "$T/verify" verify --root "$R" -c "$R/node.yaml" --hostname node01 --json
has_detail "verify: node04's domain is not measured" "$T/verify" mpi \
	'^domain 0x8014-pg-b: 1 node, nothing to pair within it: not measured$'
has_detail "verify: the domain of 3 is" "$T/verify" mpi '^domain 0x800b-pg-a: 3 nodes: verify pairs only within it$'
has_detail "verify: mpirun runs on that domain's hostfile, 3 ranks" "$T/verify" mpi \
	"--hostfile $R/etc/hpcinit/hostfile.openmpi.0x800b-pg-a --map-by node -np 3 "
has_detail "verify: the names differ, so no device list is passed to other nodes" "$T/verify" mpi \
	'^(runuser|mpirun) ([^U]|U[^C])*$'

check "verify writes nothing: the profile is as apply left it" cmp -s "$R/etc/profile.d/hpcinit-mpi.sh" "$T/profile-before"

# node04 joins its peers' scale set: its domain file goes, nobody is alone.
rec node04 10.0.0.7 $'fabric: mlx5_ib0=0015:5dff:fe33:aa03\npkey: 0x800b\nplacement_group: pg-a\n'
run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --hostname node01 --json
check "the gone domain's hostfiles are removed" [ ! -e "$H/hostfile.openmpi.0x8014-pg-b" ] && [ ! -e "$H/hostfile.mpich.0x8014-pg-b" ]
is "one domain of 4" "$(grep -vc '^#' "$H/hostfile.openmpi.0x800b-pg-a")" 4
is "mpi: ok (names still differ: a warning, each node's files name its own)" "$(jget "$T/out" mpi status)" ok
check "summary: names differ on 1 peer" grep -qF 'device names differ on 1 peer(s) (node03 has mlx5_1)' <<<"$(jget "$T/out" mpi summary)"

# IMDS not there (nothing listens): the answer an earlier run of this boot kept
# (/run/hpcinit/facts) still holds: a placement group does not change while the VM runs.
stop_standin
check "the answer is kept for this boot, with the URL it answered" grep -q '^http://127.0.0.1:.*placementGroupId' "$R/run/hpcinit/facts/placement-group"
run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --hostname node01 --json
check "no IMDS, asked earlier this boot: the kept placement group" grep -qx 'placement_group: pg-a' "$own"
# A new boot (/run is empty) without IMDS: never required, the domain is the P_Key alone.
rm -r "$R/run/hpcinit/facts"
run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --hostname node01 --json
check "no IMDS: no placement_group line" bash -c "! grep -q '^placement_group:' '$own'"
has_detail "no IMDS: said" "$T/out" discovery '^placement group: not known \(http://127\.0\.0\.1:[0-9]+/.*: connect|^placement group: not known \(http://127\.0\.0\.1:[0-9]+/.*: Connection refused'
# A stand-in that accepts and never answers: bounded by the 2 s deadline.
start_standin pg-a hang
t0=$(date +%s%N)
run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --hostname node01 --json
t1=$(date +%s%N)
has_detail "IMDS that hangs: cut at its deadline" "$T/out" discovery '^placement group: not known \(.*: no answer within 2000 ms\)'
echo "# apply with a hanging metadata service: $(( (t1 - t0) / 1000000 )) ms"
# placement_group: false asks nothing.
stop_standin
start_standin pg-a
sed -i 's/^  imds_url:/  placement_group: false\n  imds_url:/' "$R/node.yaml"
run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --hostname node01 --json
is "placement_group: false: the service is not asked" "$(grep -c GET "$T/imds.log" || true)" 0
done_testing
