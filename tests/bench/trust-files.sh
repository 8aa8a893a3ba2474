#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Trust files per node at N = 100, 1,000, 10,000 records (issue 17), printed,
# not asserted: the real binary ("hpcinit refresh") on a compute node's fake
# root whose rendezvous holds N records (tests/bench/gen-records: the real
# format, HMAC-signed, one host key and one key of the cluster user each).
#
#   pinned         ssh: {users: [user0]}: known_hosts pins every node's host
#                  key, user0's authorized_keys holds every node's user0 key,
#                  the ssh_config drop-in lists every name in Host lines;
#   ca+hostbased   ssh: {host_keys: ca, hostbased: true} and no ssh.users:
#                  known_hosts is the CA lines, no authorized_keys, plus what
#                  host-based login needs (shosts.equiv: names and addresses,
#                  /etc/ssh/ssh_known_hosts: the CA lines again), the KRL copy
#                  and the node's own certificate (signed here by a test CA,
#                  as the head would).
# Usage: tests/bench/trust-files.sh [SIZES...]   (default 100 1000 10000)
set -euo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${TOP_BUILDDIR:-$TOP/build}
HPCINIT=${HPCINIT:-$BUILD/hpcinit}
SIZES=("$@")
[ ${#SIZES[@]} -gt 0 ] || SIZES=(100 1000 10000)
GEN=$BUILD/tests/bench/gen-records
[ -x "$GEN" ] || make -s -C "$BUILD" tests/bench/gen-records
T=$(mktemp -d /tmp/hpcinit-bench-trust.XXXXXX)
chmod 0755 "$T"
trap 'rm -rf "$T"' EXIT
export HPCINIT_ADDRESS=10.0.0.1
# The libexec helpers (hpcinit-ssh for key generation) from the build tree,
# copied where the ssh module's users can run them: a tree cloned into a
# mode-0700 directory (mktemp -d) is closed to them.
if [ -z "${HPCINIT_LIBEXEC_DIR:-}" ]; then
	mkdir -m 0755 "$T/libexec"
	cp "$(dirname "$HPCINIT")"/hpcinit-* "$T/libexec/"
	export HPCINIT_LIBEXEC_DIR=$T/libexec
fi
ssh-keygen -q -t ed25519 -N '' -C bench-ca -f "$T/ca"
CAPUB=$(cut -d' ' -f1,2 "$T/ca.pub")

mkroot() { # mkroot DIR N MODE
	local r=$1 n=$2 mode=$3
	mkdir -p "$r/etc/hpcinit" "$r/etc/ssh/ssh_config.d" "$r/etc/ssh/sshd_config.d" "$r/etc/openmpi" \
		"$r/home/user0" "$r/srv/share/.hpcinit/bench/nodes" "$r/srv/share/.hpcinit/bench/certs" \
		"$r/run" "$r/var/lib"
	printf 'root:x:0:0:root:/root:/bin/bash\nuser0:x:1000:1000::/home/user0:/bin/bash\n' > "$r/etc/passwd"
	printf 'Include /etc/ssh/ssh_config.d/*.conf\n' > "$r/etc/ssh/ssh_config"
	printf 'Include /etc/ssh/sshd_config.d/*.conf\n' > "$r/etc/ssh/sshd_config"
	ssh-keygen -q -t ed25519 -N '' -C "root@bench-self" -f "$r/etc/ssh/ssh_host_ed25519_key"
	chown 1000:1000 "$r/home/user0"
	head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$r/etc/hpcinit/cluster.key"
	chmod 0600 "$r/etc/hpcinit/cluster.key"
	if [ "$mode" = pinned ]; then
		ssh='ssh: {users: [user0]}'
	else
		ssh="ssh: {host_keys: ca, ca_public_key: \"$CAPUB\", hostbased: true}"
		cp "$r/etc/ssh/ssh_host_ed25519_key.pub" "$T/self.pub"
		ssh-keygen -q -s "$T/ca" -h -I bench-self -n bench-self,10.0.0.1 -V +1d "$T/self.pub"
		cp "$T/self-cert.pub" "$r/srv/share/.hpcinit/bench/certs/bench-self.cert"
	fi
	cat > "$r/etc/hpcinit/node.yaml" <<-EOF
	version: 1
	cluster: {name: bench, network: 10.0.0.0/8, secret_file: /etc/hpcinit/cluster.key}
	discovery: {method: shared, dir: /srv/share/.hpcinit, expect: 1, lease: 1h}
	$ssh
	EOF
	"$GEN" -s "$r/etc/hpcinit/cluster.key" -k 1 "$r/srv/share/.hpcinit/bench/nodes" bench "$n"
}
size() { [ -e "$1" ] && stat -c %s "$1" || echo 0; }

echo "trust files on one compute node (bytes), hpcinit refresh on a fake root, N peer records + itself"
printf '%7s  %-13s %12s %15s %11s %13s %13s %5s %5s %10s\n' N mode known_hosts authorized_keys \
	ssh_config shosts.equiv ssh_known_hosts KRL cert total
for n in "${SIZES[@]}"; do
	for mode in pinned ca+hostbased; do
		R=$T/root-$mode-$n
		mkroot "$R" "$n" "$mode"
		rc=0
		"$HPCINIT" refresh --root "$R" -c "$R/etc/hpcinit/node.yaml" --hostname bench-self > "$T/out" 2>&1 || rc=$?
		# 0 ready, 3 degraded (no ssh-keysign under a fake root) are both fine here
		[ "$rc" = 0 ] || [ "$rc" = 3 ] || { cat "$T/out"; echo "refresh exited $rc" >&2; exit 1; }
		kh=$(size "$R/etc/hpcinit/ssh_known_hosts")
		cf=$(size "$R/etc/ssh/ssh_config.d/90-hpcinit.conf")
		ak=$(size "$R/home/user0/.ssh/authorized_keys")
		eq=$(size "$R/etc/ssh/shosts.equiv")
		skh=$(size "$R/etc/ssh/ssh_known_hosts")
		krl=$(size "$R/etc/hpcinit/ssh_revoked_keys")
		crt=$(size "$R/etc/ssh/ssh_host_ed25519_key-cert.pub")
		if [ "$mode" = pinned ]; then
			got=$(grep -vc '^#' "$R/etc/hpcinit/ssh_known_hosts") || true
			[ "$got" = $((n + 1)) ] || { echo "pinned $n: known_hosts has $got keys" >&2; exit 1; }
		else
			got=$(grep -c '^@cert-authority' "$R/etc/hpcinit/ssh_known_hosts") || true
			[ "$got" = 2 ] || { cat "$T/out"; echo "ca $n: known_hosts has $got CA lines" >&2; exit 1; }
			[ "$crt" -gt 0 ] || { cat "$T/out"; echo "ca $n: certificate not installed" >&2; exit 1; }
		fi
		printf '%7d  %-13s %12d %15d %11d %13d %13d %5d %5d %10d\n' "$n" "$mode" "$kh" "$ak" "$cf" "$eq" \
			"$skh" "$krl" "$crt" $((kh + ak + cf + eq + skh + krl + crt))
		rm -rf "$R"
	done
done
