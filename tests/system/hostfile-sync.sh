#!/bin/bash
# SPDX-License-Identifier: MIT
#
# What a cold apply (discovery, hostfile) syncs to disk.  The hostfiles, the
# clustershell group and the node's record are hpcinit's alone and written again by
# every apply (the record at every lease refresh): each is synced as a file
# (after a crash its name holds the old file or the new one, whole), and their
# directory is not synced for each (at 1,000 nodes a join rewrites them on every
# watcher).  A file that is the admin's too (/etc/hosts, the clustershell
# local.cfg, Open MPI's default hostfile: managed blocks) keeps the full sync.
# Real binary on a fake root, strace -y showing each fsync's file.
. "$(dirname "$0")/lib.sh"
command -v strace >/dev/null || { echo "SKIP: needs strace"; exit 77; }

R=$T/root
mkroot "$R"
mkdir -p "$R/etc/hpcinit" "$R/shared" "$R/var/lib/prometheus/node-exporter"
openssl rand -hex 32 > "$R/etc/hpcinit/cluster.key"
chmod 0600 "$R/etc/hpcinit/cluster.key"
cat > "$T/node.yaml" <<-EOF
version: 1
cluster: {name: syncc, network: 10.0.0.0/24, secret_file: /etc/hpcinit/cluster.key}
discovery: {method: shared, dir: /shared/.hpcinit, expect: 1}
hostfile: {etc_hosts: always}
EOF
rc=0
# (LeakSanitizer cannot run under ptrace: an ASan build's leak check is off for this one run)
HPCINIT_ADDRESS=10.0.0.1 ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace -f -y -qq -e trace=fsync,fdatasync -o "$T/sync" \
	"$HPCINIT" apply --only discovery,hostfile --root "$R" -c "$T/node.yaml" --hostname n1 >"$T/out" 2>&1 || rc=$?
check "the cold apply exits 0" test "$rc" = 0
synced() { grep -c "fsync([0-9]*<$R$1>)" "$T/sync" || true; }
for f in hostfile.openmpi hostfile.mpich hostfile.plain; do
	check "$f is synced once, as a file" test "$(grep -c "fsync([0-9]*<$R/etc/hpcinit/$f\.hpcinit-tmp\." "$T/sync" || true)" = 1
done
check "/etc/hpcinit (the hostfiles' directory) is not synced" test "$(synced /etc/hpcinit)" = 0
check "/etc (for /etc/hosts, a managed block) is synced" test "$(synced /etc)" -ge 1
check "the node's record is synced once, as a file" \
	test "$(grep -c "fsync([0-9]*<$R/shared/.hpcinit/syncc/nodes/n1\.rec\.hpcinit-tmp\." "$T/sync" || true)" = 1
check "the records' directory is not synced" test "$(synced /shared/.hpcinit/syncc/nodes)" = 0
check "nothing under /run is synced" test "$(grep -c "<$R/run" "$T/sync" || true)" = 0
# the node_exporter textfile: written, not synced (no later boot reads it: tmpfiles.d removes it)
check "the node_exporter textfile is written" test -s "$R/var/lib/prometheus/node-exporter/hpcinit.prom"
check "the textfile and its directory are not synced" \
	test "$(grep -c "<$R/var/lib/prometheus" "$T/sync" || true)" = 0
done_testing
