#!/bin/bash
# ssh with host_keys: scan (opt-in trust on first use) on 3 simulated nodes with
# static discovery (no records, so no published host keys):
#  1. apply fetches each peer's host key with libssh, says "trust on first use",
#     and OpenSSH accepts the pinned keys with strict checking;
#  2. a second apply fetches nothing (the pinned key stays) and changes nothing;
#  3. check never connects, and a peer that does not answer is left out, not fatal.
. "$TOP_SRCDIR/tests/cluster/ssh-lib.sh"

bash "$SIM" up 3 --no-ssh-trust --dns > /dev/null
cat > "$T/node.yaml" <<EOF
version: 1
cluster: {name: hpsc, network: $NET}
discovery: {method: static, hosts: ["hps-[1-3]"], expect: 3, wait: 10s}
ssh: {users: [alice], host_keys: scan}
EOF
for n in $(nodes); do on "$n" useradd -m -s /bin/bash alice; done
# shellcheck disable=SC2046
run_on 0 apply $(nodes) || bail_out "apply"
det=$(module_field hps-1 ssh details)
for d in hps-2 hps-3; do
	grep -q "^$d: host key ssh-ed25519 SHA256:.* fetched from $(bash "$SIM" addr "$d") (trust on first use, not verified)$" \
		<<<"$det" || bail_out "hps-1 did not report fetching $d: $det"
	# the pinned key is the one the node really has
	key=$(cut -d' ' -f2 "$SIM_STATE/nodes/$d/ssh_host_ed25519_key.pub")
	on hps-1 grep -q "^$d,$(bash "$SIM" addr "$d") ssh-ed25519 $key\$" /etc/hpcinit/ssh_known_hosts ||
		bail_out "hps-1 pinned the wrong key for $d"
done
grep -q '^# host hps-2 boot_id=- source=scan$' <(on hps-1 cat /etc/hpcinit/ssh_known_hosts) ||
	bail_out "known_hosts does not mark the key as scanned"
[[ $(module_field hps-1 ssh summary) == *"(some trusted on first use)"* ]] || bail_out "summary: $(module_field hps-1 ssh summary)"
ok "apply: $(module_field hps-1 ssh summary)"

# OpenSSH accepts the host (no record carries alice's key here, so the login
# itself is refused: what is judged is the host key).
out=$(login hps-1 alice hps-2 2>&1) && bail_out "login unexpectedly worked"
grep -q 'Permission denied (publickey)' <<<"$out" || bail_out "host key not accepted by ssh: $out"
ok "ssh -o StrictHostKeyChecking=yes accepts the fetched key (then: Permission denied, no record)"

on hps-1 stat -c '%i %Y' /etc/hpcinit/ssh_known_hosts > "$T/st1"
hp hps-1 apply
[ "$(cat "$T/rc.hps-1")" = 0 ] || bail_out "second apply: $(cat "$T/out.hps-1")"
module_field hps-1 ssh details | grep -q fetched && bail_out "second apply fetched again"
on hps-1 stat -c '%i %Y' /etc/hpcinit/ssh_known_hosts > "$T/st2"
cmp -s "$T/st1" "$T/st2" || bail_out "second apply rewrote known_hosts"
ok "second apply: no fetch, nothing rewritten"

# A peer whose sshd is gone: check says what apply would do; apply leaves it out.
on hps-1 sed -i '/hps-3/d' /etc/hpcinit/ssh_known_hosts
kill "$(cat "$SIM_STATE/nodes/hps-3/sshd.pid")"
hp hps-1 check
module_field hps-1 ssh details | grep -q "^hps-3: apply fetches its host key from $(bash "$SIM" addr hps-3):22 (trust on first use)$" ||
	bail_out "check: $(module_field hps-1 ssh details)"
hp hps-1 apply
[ "$(cat "$T/rc.hps-1")" = 3 ] || bail_out "apply with an unreachable peer exited $(cat "$T/rc.hps-1")"
module_field hps-1 ssh details | grep -q "^hps-3: cannot fetch its host key from .*; left out$" ||
	bail_out "apply: $(module_field hps-1 ssh details)"
[ "$(module_field hps-1 ssh status)" = degraded ] || bail_out "status $(module_field hps-1 ssh status)"
ok "unreachable peer: check does not connect, apply leaves it out (degraded, exit 3)"
done_testing
