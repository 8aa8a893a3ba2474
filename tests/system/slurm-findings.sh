#!/bin/bash
# The slurm step's key findings on a fake root, by their tags (the real binary,
# apply --only slurm; no munged or slurmd: under --root hpcinit starts no
# service): munge's user missing, Slurm's user missing (auth: slurm), a key of
# the wrong size, the key installed.  The findings that need a running
# slurmctld and slurmd are tests/cluster/slurm.sh's.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
R=$T/root
mkroot "$R"
mkdir -p "$R/etc/hpcinit" "$R/etc/munge"
key() { head -c "$1" /dev/urandom >"$R/etc/hpcinit/munge.key"; chmod 600 "$R/etc/hpcinit/munge.key"; }
spec() { printf 'version: 1\ncluster: {name: fx}\nslurm: {conf_servers: [head], key_file: /etc/hpcinit/munge.key%s}\n' "${1:-}" >"$R/node.yaml"; }
apply() { run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --only slurm --json; }

key 128
spec
apply
is "no munge user: exit 1" "$rc" 1
has_tag "no munge user for munge's key" "$T/out" slurm failed slurm.munge.missing
spec ", auth: slurm"
apply
has_tag "auth: slurm, no slurm user" "$T/out" slurm failed slurm.user.missing
echo 'munge:x:110:110::/nonexistent:/usr/sbin/nologin' >>"$R/etc/passwd"
echo 'munge:x:110:' >>"$R/etc/group"
spec
key 10
apply
has_tag "a 10-byte key" "$T/out" slurm failed slurm.key.size
check "...not installed" test ! -e "$R/etc/munge/munge.key"
key 128
apply
is "the key installed: exit 0" "$rc" 0
has_tag "the key installed" "$T/out" slurm change slurm.key.installed
check "...as munge's (uid 110), 0400" [ "$(stat -c '%u %a' "$R/etc/munge/munge.key")" = "110 400" ]
done_testing
