#!/bin/bash
# SPDX-License-Identifier: MIT
#
# A node's health is about the node (issue 33, items 2 and 7), on fake roots
# sharing one rendezvous directory with a cluster secret, real binary:
#  1. junk in nodes/ (a file that is no record, a truncated record) is a
#     cluster finding: apply and check exit 0, discovery ok, the finding in
#     --json with severity "cluster" (nothing this node would be drained for);
#  2. every host name the spec names is reserved: a member publishing a
#     record as "slurmhead" (slurm.conf_servers of the compute's spec) or as
#     "nfsclient1" (an nfs.exports client of the head's) is rejected and never
#     reaches /etc/hosts or a hostfile;
#  3. a newline in a file name under nodes/ (a record's or a temporary
#     file's) prints no line of its own: shown escaped (\x0a).
. "$(dirname "$0")/lib.sh"

openssl rand -hex 32 > "$T/cluster.key"
mkdir -p "$T/shared"
# node NAME: a fake root whose /shared is the one shared directory
node() {
	local r=$T/$1
	mkroot "$r"
	mkdir -p "$r/etc/hpcinit" "$r/etc/ssh"
	install -m 0600 "$T/cluster.key" "$r/etc/hpcinit/cluster.key"
	ln -s "$T/shared" "$r/shared"
}
cat > "$T/compute.yaml" <<-EOF
version: 1
cluster: {name: cx, network: 10.0.0.0/24, secret_file: /etc/hpcinit/cluster.key}
discovery: {method: shared, dir: /shared/.hpcinit, expect: 2, wait: 0s}
hostfile: {etc_hosts: always}
slurm: {conf_servers: ["slurmhead:6817"]}
EOF
sed -e 's/secret_file/role: head, secret_file/' -e '/^slurm/d' "$T/compute.yaml" > "$T/head.yaml"
echo 'nfs: {exports: [{path: /srv, clients: nfsclient1}]}' >> "$T/head.yaml"
# on NAME ADDRESS SPEC OUT CMD ARGS...: hpcinit CMD as NAME (discovery and hostfile only)
on() {
	local n=$1 a=$2 s=$3 out=$4 cmd=$5
	shift 5
	HPCINIT_ADDRESS=$a run_hpc "$out" "$cmd" --only discovery,hostfile --root "$T/$n" -c "$T/$s.yaml" \
		--hostname "$n" "$@"
}
on_json() {
	local n=$1 a=$2 s=$3 out=$4 cmd=$5
	shift 5
	HPCINIT_ADDRESS=$a run_hpc_stdout "$out" "$cmd" --json --only discovery,hostfile --root "$T/$n" \
		-c "$T/$s.yaml" --hostname "$n" "$@"
}
for n in n1 n2 n3 slurmhead nfsclient1; do node "$n"; done
on n2 10.0.0.2 head "$T/a.n2" apply
on n3 10.0.0.3 compute "$T/a.n3" apply
on slurmhead 10.0.0.4 compute "$T/a.slurmhead" apply
on nfsclient1 10.0.0.5 compute "$T/a.nfsclient1" apply
on n1 10.0.0.1 compute "$T/a.n1" apply
NODES=$T/shared/.hpcinit/cx/nodes
check "setup: every writer published its record" \
	bash -c "ls '$NODES' | sort | tr '\n' ' ' | grep -qx 'n1.rec n2.rec n3.rec nfsclient1.rec slurmhead.rec '"

# ---- 1. junk in nodes/ ----
echo junk > "$NODES/junk.rec"
head -c 200 "$NODES/n3.rec" > "$NODES/cut.rec"
# ---- 3. (planted with it) a newline in file names ----
printf x > "$NODES/$(printf 'bad\nresult: ready.rec')"
printf x > "$NODES/$(printf 'n9\nresult: ready.rec.hpcinit-tmp.abcdef')"
touch -d '2 hours ago' "$NODES/$(printf 'n9\nresult: ready.rec.hpcinit-tmp.abcdef')"

on n1 10.0.0.1 compute "$T/apply" apply -v
check "junk in nodes/: apply exits 0 (ready)" test "$rc" = 0
check "... discovery is ok" grep -Eq '^discovery +ok ' "$T/apply"
check "... each rejection named (truncated, not a record)" \
	bash -c "grep -q 'record cut.rec: truncated' '$T/apply' && grep -q 'record junk.rec: truncated' '$T/apply'"
on_json n1 10.0.0.1 compute "$T/check.json" check
check "junk in nodes/: check exits 0 (what Slurm's HealthCheckProgram runs: nobody drained)" test "$rc" = 0
cluster_only() {
	python3 - "$1" <<-'PY'
	import json, sys
	d = json.load(open(sys.argv[1]))
	m = [x for x in d["modules"] if x["name"] == "discovery"][0]
	assert m["status"] == "ok", m["status"]
	kinds = {f["tag"]: f["severity"] for f in m["findings"]}
	assert kinds.get("discovery.record.truncated") == "cluster", kinds
	assert kinds.get("discovery.record.bad-name") == "cluster", kinds
	assert "degraded" not in kinds.values() and "failed" not in kinds.values(), kinds
	assert d["exit_code"] == 0, d["result"]
	PY
}
check "... --json: discovery ok, the rejections are findings of severity \"cluster\", exit_code 0" \
	cluster_only "$T/check.json"

# ---- 2. reserved names ----
check "reserved: slurmhead (slurm.conf_servers) is rejected, saying why" contains "$T/apply" \
	"record slurmhead.rec: hostname slurmhead is the slurmctld host slurmhead:6817 (slurm.conf_servers) in this node's spec (slurmhead); a record may not take a name this node needs for something else; rejected"
check "... and is in neither /etc/hosts nor the hostfile" \
	bash -c "! grep -qw slurmhead '$T/n1/etc/hosts' '$T/n1/etc/hpcinit/hostfile.plain'"
check "... while the members are (n1, n2, n3, nfsclient1)" \
	bash -c "grep -qx n3 '$T/n1/etc/hpcinit/hostfile.plain' && grep -qw nfsclient1 '$T/n1/etc/hosts'"
on n2 10.0.0.2 head "$T/head" apply -v
check "reserved: on the head, nfsclient1 (an nfs.exports client) is rejected; apply exits 0" \
	bash -c "test $rc = 0 && grep -q 'record nfsclient1.rec: hostname nfsclient1 is the NFS client of the export /srv in this node.s spec' '$T/head'"
check "... and is not in the head's /etc/hosts" bash -c "! grep -qw nfsclient1 '$T/n2/etc/hosts'"

# ---- 3. newlines in file names ----
check "newline: a record's file name is shown escaped (\\x0a)" contains "$T/apply" \
	'record bad\x0aresult: ready.rec: file name is not <hostname>.rec; rejected'
check "... and no line of the output begins with the name's second line" \
	bash -c "! grep -Eq '^[[:space:]]*result: ready\\.rec' '$T/apply' '$T/head' '$T/check.json.err'"
done_testing
