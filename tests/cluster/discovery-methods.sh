#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The other two discovery methods on four simulated nodes, no shared
# directory.  static: names and a range from the spec, resolved through
# each node's /etc/hosts; a name that does not resolve is reported and the
# run is degraded, the others are used.  scan: parallel connects across the
# /24, each answer confirmed by its SSH banner, in well under a second; with
# ssh.host_keys: scan the host keys come from the peers' real sshd (libssh).
SIM_PREFIX=dmt SIM_NET=198.19.14
. "$(dirname "$0")/lib.sh"

N1=$(node 1) N2=$(node 2) N3=$(node 3) N4=$(node 4)
ALL=("$N1" "$N2" "$N3" "$N4")
sim up 4 --dns >/dev/null

# --- static ---
cat > "$T/static.yaml" <<-SPEC
	version: 1
	cluster: {name: $CLUSTER, network: $SIM_NET.0/24}
	discovery: {method: static, hosts: ["${SIM_PREFIX}[1-3]", "$N4", "ghost-node"], expect: 4, wait: 5s}
	hostfile: {}
SPEC
for n in "${ALL[@]}"; do on "$n" install -D -m 0644 "$T/static.yaml" /etc/hpcinit/node.yaml; done
run_hpc "$T/static" "$N2" apply -v
check "static with one unknown name: exit 3 (degraded)" test "$rc" = 3
check "static: the unknown name is reported" contains "$T/static" "static host ghost-node does not resolve"
check "static: the 4 real nodes are in the hostfiles" hostfiles_list "$N2" "${ALL[@]}"
check "static: addresses come from resolution" contains "$T/static" "node $N3 $SIM_NET.13 "

# --- scan ---
cat > "$T/scan.yaml" <<-SPEC
	version: 1
	cluster: {name: $CLUSTER, network: $SIM_NET.0/24}
	discovery: {method: scan, scan: {port: 22, timeout: 500ms}, expect: 4, wait: 10s}
	ssh: {users: [root], host_keys: scan}
	hostfile: {}
SPEC
for n in "${ALL[@]}"; do on "$n" install -D -m 0644 "$T/scan.yaml" /etc/hpcinit/node.yaml; done
run_hpc "$T/scan" "$N3" apply --only discovery,hostfile -v
check "scan: exit 0" test "$rc" = 0
check "scan: the 4 nodes are in the hostfiles, named by reverse lookup" hostfiles_list "$N3" "${ALL[@]}"
ms=$(sed -n "s/.*scan of $SIM_NET.0\/24 port 22: 4 SSH servers in \([0-9]*\) ms.*/\1/p" "$T/scan")
# Parallel, not timed: one host after another at 500 ms each would take
# over 2 minutes for a /24; 5 s leaves room for a loaded CI machine.
check "scan: 4 SSH servers found in a /24 in parallel (took ${ms:-?} ms, under 5 s)" \
	test -n "$ms" -a "${ms:-9999}" -lt 5000
check "scan: trust on first use is called out" contains "$T/scan" "trust on first use"
keys_ok() {
	local n key
	for n in "$N1" "$N2" "$N4"; do
		grep -q "node $n $(sim addr "$n") slots=[0-9]* host_keys=1\$" "$T/scan" ||
			{ echo "  $n: no fetched host key"; sed 's/^/  | /' "$T/scan"; return 1; }
	done
}
check "scan with host_keys: scan: each peer's host key fetched from its sshd" keys_ok

# A listener that is not sshd does not count: a plain TCP server on node 4,
# port 2222, that answers two connections (the readiness probe, the scan).
on "$N4" timeout 20 python3 -c '
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind((sys.argv[1], 2222))
s.listen(8)
for _ in range(2):
    c, _ = s.accept()
    c.sendall(b"HTTP/1.0 200 OK\r\n\r\n")
    c.close()' "$(sim addr "$N4")" &
LISTENER=$!
sed -e 's/port: 22,/port: 2222,/' -e 's/expect: 4, wait: 10s/expect: 1, wait: 1s/' "$T/scan.yaml" > "$T/scan2.yaml"
on "$N3" install -D -m 0644 "$T/scan2.yaml" /etc/hpcinit/node.yaml
for _ in $(seq 1 50); do
	on "$N3" bash -c "exec 3<>/dev/tcp/$(sim addr "$N4")/2222" 2>/dev/null && break
	sleep 0.1
done
run_hpc "$T/scan2" "$N3" apply --only discovery -v
wait "$LISTENER" || true
check "scan: a port that answers without an SSH banner is not a node" \
	contains "$T/scan2" "port 2222: 0 SSH servers"

done_testing
