#!/bin/bash
# libcrypto is loaded on first use (common/base/crypto.c) and only to read a
# PEM private key: the agent does not link it, and a run that signs and checks
# peer records (HMAC-SHA256) or prints SSH key fingerprints never maps it
# (common/base/sha256.c; its dlopen cost each node 2-3 ms of CPU at cold
# start, docs/performance.md).  LD_DEBUG=files names each library the loader
# maps; the binary runs without HPCINIT_WRAPPER here (a wrapper's own
# libraries would be named too).  The fingerprints are ssh-keygen -lf's.
# Fake root, real binary, two nodes sharing one discovery directory.
. "$(dirname "$0")/lib.sh"
needed=$(readelf -d "$HPCINIT" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
check "the agent binary does not link libcrypto" bash -c '! grep -q "^libcrypto\." <<<"$1"' _ "$needed"
R=$T/root
mkroot "$R"
printf 'version: 1\ncluster: {name: glocluster}\nmemlock: {limit: unlimited}\n' >"$T/memlock.yaml"
"$HPCINIT" apply --root "$R" -c "$T/memlock.yaml" >/dev/null 2>&1 || true
rc=0
LD_DEBUG=files "$HPCINIT" check --root "$R" -c "$T/memlock.yaml" >"$T/check.out" 2>"$T/check.ld" || rc=$?
check "a converged check of memlock: exit 0" test "$rc" = 0
check "... and libcrypto was never loaded" not_contains "$T/check.ld" 'file=libcrypto.so'
# Records signed with cluster.secret_file and checked: no libcrypto for it.
mkdir -p "$R/shared" "$R/etc/hpcinit" "$R/etc/ssh"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$R/etc/hpcinit/cluster.key"
chmod 0600 "$R/etc/hpcinit/cluster.key"
ssh-keygen -q -t ed25519 -N '' -f "$R/etc/ssh/ssh_host_ed25519_key"
cat >"$T/shared.yaml" <<-YAML
	version: 1
	cluster: {name: glocluster, network: 10.0.0.0/24, secret_file: /etc/hpcinit/cluster.key}
	discovery: {method: shared, dir: /shared/.hpcinit, expect: 2, wait: 0s}
	ssh: {}
	hostfile: {formats: [plain]}
YAML
# node ADDR NAME CMD OUT: hpcinit CMD as node NAME, libraries named in OUT.ld
node() {
	rc=0
	HPCINIT_ADDRESS=$1 LD_DEBUG=files "$HPCINIT" "$3" --root "$R" -c "$T/shared.yaml" --hostname "$2" -v \
		>"$4" 2>"$4.ld" || rc=$?
}
REC=$R/shared/.hpcinit/glocluster/nodes
node 10.0.0.4 node01 apply "$T/n1"
check "node01 signs its record (alone: degraded, exit 3)" test "$rc" = 3
check "... its record carries an HMAC" grep -qs '^hmac: [0-9a-f]\{64\}$' "$REC/node01.rec"
check "... and libcrypto was never loaded" not_contains "$T/n1.ld" 'file=libcrypto.so'
node 10.0.0.5 node02 apply "$T/n2"
check "node02 signs its own and checks node01's record: exit 0" test "$rc" = 0
check "... node01 in its hostfile" grep -qx node01 "$R/etc/hpcinit/hostfile.plain"
check "... and libcrypto was never loaded" not_contains "$T/n2.ld" 'file=libcrypto.so'
# node01's record changed after it was signed: the check refuses it, still without libcrypto.
cp "$REC/node01.rec" "$T/node01.rec"
sed -i 's/^slots: .*/slots: 999/' "$REC/node01.rec"
node 10.0.0.5 node02 check "$T/n3"
check "a tampered record: node02's check fails (exit 1)" test "$rc" = 1
check "... it names the bad HMAC" contains "$T/n3.ld" 'record node01.rec: bad HMAC'
check "... and libcrypto was never loaded" not_contains "$T/n3.ld" 'file=libcrypto.so'
cp "$T/node01.rec" "$REC/node01.rec"
# A stray known_hosts key: the check names it by ssh-keygen -lf's fingerprint.
ssh-keygen -q -t ed25519 -N '' -C stray -f "$T/stray"
echo "stray.example $(cut -d' ' -f1,2 "$T/stray.pub")" >>"$R/etc/hpcinit/ssh_known_hosts"
fp=$(ssh-keygen -lf "$T/stray.pub" | cut -d' ' -f2)
node 10.0.0.5 node02 check "$T/n4"
check "a stray known_hosts key: drift (exit 1)" test "$rc" = 1
check "... named by its fingerprint as ssh-keygen -lf prints it ($fp)" \
	contains "$T/n4" "stray.example: extra key ssh-ed25519 $fp"
check "... and libcrypto was never loaded" not_contains "$T/n4.ld" 'file=libcrypto.so'
done_testing
