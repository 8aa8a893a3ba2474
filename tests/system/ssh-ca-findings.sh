#!/bin/bash
# ssh.host_keys: ca, each finding of a compute by its tag, on two fake roots
# sharing one directory (as tests/system/ssh-ca-certs.sh; real ssh-keygen, no
# sshd): no certificate yet; in certs/ a certificate that is not one
# (bad-certificate), signed by another CA, a user certificate, one for a key the
# node does not hold, one naming another host, an expired one; revoked.krl
# missing or a link; the CA key on a compute; sshd_config without the drop-in
# directory; hostbased without ssh-keysign; discovery with no place for
# certificates; certs/ not a directory.  The compute keeps the certificate it
# installed: the bad ones are cluster findings, the node stays ready.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
H=$T/head C=$T/compute
for r in "$H" "$C"; do
	mkroot "$r"
	mkdir -p "$r/etc/ssh" "$r/etc/hpcinit"
done
mkdir -p "$H/shared"
ln -s "$H/shared" "$C/shared"           # one share, seen by both roots
ssh-keygen -q -t ed25519 -N '' -f "$H/etc/ssh/ssh_host_ed25519_key"
ssh-keygen -q -t ed25519 -N '' -f "$C/etc/ssh/ssh_host_ed25519_key"
ssh-keygen -q -t ed25519 -N '' -C cca -f "$T/ca"
install -m 0600 "$T/ca" "$H/etc/hpcinit/ssh-ca"
CAPUB=$(cut -d' ' -f1,2 "$T/ca.pub")
spec() {        # spec ROLE [EXTRA]: the cluster's spec for a role
	cat <<YAML
version: 1
cluster: {name: cca, network: 198.18.10.0/24$([ "$1" = head ] && echo ", role: head")}
discovery: {method: shared, dir: /shared/.hpcinit, expect: 1, wait: 0s}
ssh: {host_keys: ca, ca_public_key: "$CAPUB", cert_validity: 24h$([ "$1" = head ] && echo ", ca_key_file: /etc/hpcinit/ssh-ca")}
${2:-}
YAML
}
spec head >"$T/head.yaml"
spec compute >"$T/compute.yaml"
on_head() {     # on_head OUT ARGS...: hpcinit on the head's root
	local out=$1
	shift
	HPCINIT_ADDRESS=198.18.10.1 run_hpc "$out" "$@" --root "$H" --hostname hd1 -c "$T/head.yaml"
}
on_compute() {  # on_compute OUT ARGS...: hpcinit on the compute's root
	local out=$1
	shift
	HPCINIT_ADDRESS=198.18.10.2 run_hpc "$out" "$@" --root "$C" --hostname cn2 -c "$T/compute.yaml"
}
CERTS=$H/shared/.hpcinit/cca/certs
NODES=$H/shared/.hpcinit/cca/nodes
# refresh [SPEC]: the compute's refresh, its report in $T/out
refresh() {
	HPCINIT_ADDRESS=198.18.10.2 run_hpc_stdout "$T/out" refresh --root "$C" --hostname cn2 -c "${1:-$T/compute.yaml}" --json
}

on_compute "$T/c0" apply --only discovery
refresh
is "no certificate yet: exit 3" "$rc" 3
has_tag "no certificate yet" "$T/out" ssh degraded ssh.ca.no-certificate
on_head "$T/h1" apply
on_compute "$T/c1" apply
check "the compute installed its certificate" [ -s "$C/etc/ssh/ssh_host_ed25519_key-cert.pub" ]
cp "$CERTS/cn2.cert" "$T/good.cert"
ssh-keygen -q -t ed25519 -N '' -f "$T/other-ca"
ssh-keygen -q -t ed25519 -N '' -f "$T/k2"
cp "$C/etc/ssh/ssh_host_ed25519_key.pub" "$T/own.pub"
# cert CASE TAG SIGNER KEY ARGS...: certs/cn2.cert signed so; refresh keeps the installed one
cert() {
	rm -f "$T/$4-cert.pub"
	ssh-keygen -q -s "$3" -I cn2 "${@:5}" "$T/$4.pub"
	cat "$T/$4-cert.pub" >"$CERTS/cn2.cert"
	refresh
	is "$1: exit 0 (the installed certificate kept)" "$rc" 0
	has_tag "$1" "$T/out" ssh cluster "$2"
}
echo "not a certificate" >"$CERTS/cn2.cert"
refresh
has_tag "certs/cn2.cert not a certificate" "$T/out" ssh cluster ssh.ca.bad-certificate
cert "signed by another CA" ssh.ca.other-ca "$T/other-ca" own -h -n cn2 -V +1d
cert "a user certificate" ssh.ca.not-host-cert "$T/ca" own -n cn2 -V +1d
cert "for a key the node does not hold" ssh.ca.not-own-key "$T/ca" k2 -h -n cn2 -V +1d
cert "naming another host too" ssh.ca.foreign-name "$T/ca" own -h -n cn2,evil -V +1d
cert "expired" ssh.ca.expired "$T/ca" own -h -n cn2 -V -2d:-1d
cp "$T/good.cert" "$CERTS/cn2.cert"

mv "$CERTS/revoked.krl" "$T/krl"
refresh
has_tag "revoked.krl missing (the installed one stays)" "$T/out" ssh cluster ssh.ca.krl-missing
ln -s /etc/passwd "$CERTS/revoked.krl"
refresh
has_tag "revoked.krl a link: refused, not read" "$T/out" ssh cluster ssh.ca.refused
rm "$CERTS/revoked.krl"
mv "$T/krl" "$CERTS/revoked.krl"

cp "$T/ca" "$C/etc/hpcinit/ssh-ca"
refresh
is "the CA key on a compute: exit 1" "$rc" 1
has_tag "the CA key on a compute" "$T/out" ssh failed ssh.ca.key-on-compute
rm "$C/etc/hpcinit/ssh-ca"

printf 'Port 22\n' >"$C/etc/ssh/sshd_config"
refresh
has_tag "sshd_config without sshd_config.d/" "$T/out" ssh degraded ssh.sshd.no-include
rm "$C/etc/ssh/sshd_config"

spec compute | sed 's/cert_validity: 24h}/cert_validity: 24h, hostbased: true}/' >"$T/hb.yaml"
refresh "$T/hb.yaml"
has_tag "hostbased, no setuid ssh-keysign in the root" "$T/out" ssh degraded ssh.hostbased.no-keysign

spec compute | sed 's|^discovery:.*|discovery: {method: static, hosts: [cn2]}|' >"$T/static.yaml"
HPCINIT_ADDRESS=198.18.10.2 run_hpc_stdout "$T/out" apply --root "$C" --hostname cn2 -c "$T/static.yaml" --json
has_tag "host_keys: ca with static discovery (no place for certificates)" "$T/out" ssh failed ssh.ca.no-rendezvous

mv "$CERTS" "$T/certs.d"
echo "not a directory" >"$CERTS"
refresh
is "certs/ a file: exit 1" "$rc" 1
has_tag "certs/ a file" "$T/out" ssh failed ssh.ca.store-unreachable
rm "$CERTS"
mv "$T/certs.d" "$CERTS"
# The head: the CA's own key in certs/revoked.keys (a rebuilt head reads certs/'s list) is dropped,
# never revoked, and said (ssh-ca-revoke.sh proves the KRL).
printf '%s\n' "$CAPUB" >>"$CERTS/revoked.keys"
rm -f "$H/var/lib/hpcinit/ssh-ca/revoked.keys"
HPCINIT_ADDRESS=198.18.10.1 run_hpc_stdout "$T/out" apply --root "$H" --hostname hd1 -c "$T/head.yaml" --json
is "head, the CA's key in revoked.keys: exit 0" "$rc" 0
has_tag "head, the CA's key in revoked.keys: dropped" "$T/out" ssh cluster ssh.ca.revoke-ca
done_testing
