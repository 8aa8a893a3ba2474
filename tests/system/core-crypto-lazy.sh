#!/bin/bash
# libcrypto is loaded on first use (agent/base/crypto.c): the agent does not
# link it, a run that signs and reads no key never maps it (a converged check
# on a timer paid 1.8 MB and ~1 ms for it), and a run that signs its record
# loads it and works.  LD_DEBUG=files names each library the loader maps; the
# binary runs without HPCINIT_WRAPPER here (a wrapper's own libraries would be
# named too).  Fake root, real binary.
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
# A record signed with cluster.secret_file: libcrypto loaded then, the run ok.
mkdir -p "$R/shared" "$R/etc/hpcinit"
head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$R/etc/hpcinit/cluster.key"
chmod 0600 "$R/etc/hpcinit/cluster.key"
cat >"$T/shared.yaml" <<-YAML
	version: 1
	cluster: {name: glocluster, network: 10.0.0.0/24, secret_file: /etc/hpcinit/cluster.key}
	discovery: {method: shared, dir: /shared/.hpcinit, expect: 1, wait: 1s}
YAML
rc=0
HPCINIT_ADDRESS=10.0.0.4 LD_DEBUG=files "$HPCINIT" apply --root "$R" -c "$T/shared.yaml" --only discovery \
	--hostname node01 >"$T/shared.out" 2>"$T/shared.ld" || rc=$?
check "discovery with a cluster secret: exit 0" test "$rc" = 0
check "... libcrypto loaded for it" contains "$T/shared.ld" 'file=libcrypto.so'
check "... and its record carries an HMAC" grep -rqs '^hmac' "$R/shared/.hpcinit"
done_testing
