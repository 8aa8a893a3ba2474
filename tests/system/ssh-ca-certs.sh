#!/bin/bash
# ssh.host_keys: ca, the certs/ collection of the shared directory, on two
# fake roots (a head and a compute seeing the same share; real ssh-keygen,
# no sshd): certs/ gets the checks nodes/ has (issue 23, class 1).
#  - certs/ not made yet (before the head's first run): the compute is
#    degraded, "no certificate yet" (issue 33), not failed;
#  - certs/revoked.krl a link to a root-only file: the compute does not
#    copy it into its world-readable /etc/hpcinit/ssh_revoked_keys; a
#    cluster finding, the last good KRL stays, the run is ready (issue 33);
#  - certs/ itself a link: the head writes and deletes nothing in the target;
#  - a FIFO as the compute's certificate: the run ends (no hang), the
#    certificate installed before is kept;
#  - a compute without its certificate: refresh does not wait 30 s for it
#    (class 10; only apply waits), keeps the one installed, and with none
#    installed either is degraded;
#  - a head exporting the share root_squash: certs/ is the anonymous uid's
#    and the head signs there.
. "$(dirname "$0")/lib.sh"
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
on_head() {        # on_head OUT ARGS...: hpcinit on the head's root
	local out=$1
	shift
	HPCINIT_ADDRESS=198.18.10.1 run_hpc "$out" "$@" --root "$H" --hostname hd1 -c "$T/head.yaml"
}
compute() {     # compute OUT ARGS...: hpcinit on the compute's root
	local out=$1
	shift
	HPCINIT_ADDRESS=198.18.10.2 run_hpc "$out" "$@" --root "$C" --hostname cn2 -c "$T/compute.yaml"
}
CERTS=$H/shared/.hpcinit/cca/certs
NODES=$H/shared/.hpcinit/cca/nodes

# The compute publishes its record, the head signs it, the compute installs it.
compute "$T/c0" apply --only discovery
check "compute publishes its record" [ "$rc" -eq 0 ]
# 0. Before the head's first run certs/ does not exist: the documented "no certificate yet",
# degraded (exit 3), not a failure ("Bad file descriptor").
compute "$T/c0b" refresh -v
check "no certs/ yet: refresh is degraded (exit 3), not failed" [ "$rc" -eq 3 ]
check "... saying no certificate yet" contains "$T/c0b" "no certificate for this node yet"
check "... and not 'Bad file descriptor'" not_contains "$T/c0b" "Bad file descriptor"
on_head "$T/h1" apply
check "head signs (exit 0)" [ "$rc" -eq 0 ]
check "certs/ made, owned by root, 0755" [ "$(stat -c '%u %a' "$CERTS")" = "0 755" ]
check "the compute's certificate is there" [ -s "$CERTS/cn2.cert" ]
compute "$T/c1" apply
check "compute installs its certificate (exit 0)" [ "$rc" -eq 0 ]
check "compute: certificate installed" [ -s "$C/etc/ssh/ssh_host_ed25519_key-cert.pub" ]

# 1. revoked.krl a link to a root-only secret on the compute.
printf 'TOP-SECRET-shadow-line\n' >"$C/etc/secret"
chmod 0600 "$C/etc/secret"
rm -f "$CERTS/revoked.krl"
ln -s "$C/etc/secret" "$CERTS/revoked.krl"
cp "$C/etc/hpcinit/ssh_revoked_keys" "$T/krl.good"
compute "$T/c2" apply -v
check "linked KRL: the secret is not copied into ssh_revoked_keys" not_contains "$C/etc/hpcinit/ssh_revoked_keys" "TOP-SECRET"
check "linked KRL: the compute says it refused it" contains "$T/c2" "revoked.krl: is a symbolic link; refused, not read"
# Whoever planted it (on a root_squash head, any client's anonymous uid can) is not this node:
# a cluster finding, the last good KRL stays, the compute stays ready.
check "linked KRL: a cluster finding; the compute's run is ready (exit 0)" [ "$rc" -eq 0 ]
check "linked KRL: the last good KRL stays installed" cmp -s "$C/etc/hpcinit/ssh_revoked_keys" "$T/krl.good"
rm -f "$CERTS/revoked.krl"

# 2. certs/ a link to a directory of the head's: nothing written or deleted there.
mkdir -p "$H/etc/victim"
printf 'keep me\n' >"$H/etc/victim/gone.cert"
mv "$CERTS" "$CERTS.real"
ln -s "$H/etc/victim" "$CERTS"
on_head "$T/h2" apply
check "linked certs/: the head fails the step (exit 1)" [ "$rc" -eq 1 ]
check "linked certs/: nothing deleted in the target" [ -f "$H/etc/victim/gone.cert" ]
check "linked certs/: nothing written in the target" [ "$(ls "$H/etc/victim")" = gone.cert ]
check "linked certs/: says why" contains "$T/h2" "not a directory (a symlink is refused too)"
rm "$CERTS"
mv "$CERTS.real" "$CERTS"

# 3. A FIFO as the compute's certificate: refused at once, no hang.
mv "$CERTS/cn2.cert" "$T/cn2.cert.saved"
mkfifo -m 0644 "$CERTS/cn2.cert"
rc=0
HPCINIT_ADDRESS=198.18.10.2 timeout 60 "$HPCINIT" refresh -v --root "$C" --hostname cn2 -c "$T/compute.yaml" >"$T/c3" 2>&1 || rc=$?
check "FIFO certificate: the refresh ends (not killed by timeout)" [ "$rc" -ne 124 ]
check "FIFO certificate: refused as not a regular file" contains "$T/c3" "not a regular file"
check "FIFO certificate: refresh does not wait for a certificate" not_contains "$T/c3" "waited"
rm -f "$CERTS/cn2.cert"

check "FIFO certificate: the certificate installed before is kept (exit 0)" \
	bash -c "[ $rc -eq 0 ] && grep -q 'ssh_host_ed25519_key-cert.pub: the last good certificate, kept' '$T/c3'"
rm -f "$CERTS/cn2.cert"

# 3b. No certificate at all: refresh (and the watch's refreshes) do not wait 30 s, only apply does.
compute "$T/c3a" refresh -v
check "certificate gone from certs/: the installed one is kept (exit 0)" \
	bash -c "[ $rc -eq 0 ] && grep -q 'the last good certificate, kept' '$T/c3a'"
mv "$C/etc/ssh/ssh_host_ed25519_key-cert.pub" "$T/cert.installed"
compute "$T/c3b" refresh -v
check "no certificate: refresh says so (degraded, exit 3)" \
	bash -c "[ $rc -eq 3 ] && grep -q 'no certificate for this node yet' '$T/c3b'"
check "no certificate: refresh does not wait for it" not_contains "$T/c3b" "waited"
mv "$T/cert.installed" "$C/etc/ssh/ssh_host_ed25519_key-cert.pub"
mv "$T/cn2.cert.saved" "$CERTS/cn2.cert"

# 4. The head exports the share with root_squash: certs/ is the anonymous uid's.
spec head "nfs: {exports: [{path: /shared, options: [rw, root_squash]}]}" >"$T/head.yaml"
on_head "$T/h4" apply --only discovery,ssh
check "root_squash head: ssh signs there (degraded only for the missing cluster secret)" [ "$rc" -eq 3 ]
check "root_squash head: the ssh step changed, not failed" grep -q '^ssh  *changed' "$T/h4"
check "root_squash head: certs/ owned by 65534" [ "$(stat -c '%u' "$CERTS")" = 65534 ]
check "root_squash head: revoked.keys owned by 65534" [ "$(stat -c '%u' "$CERTS/revoked.keys")" = 65534 ]
done_testing
