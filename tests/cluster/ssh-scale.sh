#!/bin/bash
# ssh across scale-in and scale-out on simulated nodes, judged by real OpenSSH:
#  1. scale-in: hps-4 is deleted; once its record's lease expires the others
#     prune its host key and its users' keys;
#  2. scale-out at the same name and address with a new host key (a rebuilt
#     VM): accepted after refresh, logins both ways, the old key gone;
#  3. the same again without the others noticing the departure in between:
#     the new boot id in the record lets the new key replace the old one;
#  4. a live node (same boot id) whose host key changes: refused loudly, ssh
#     to it fails, until an admin removes the pinned key; then accepted.
. "$TOP_SRCDIR/tests/cluster/ssh-lib.sh"

LEASE=6s cluster_up 4
write_spec "$T/long.yaml"      # same cluster, 5 minute lease, for the later steps
NODES=$(nodes)
# shellcheck disable=SC2086
run_on 0 apply $NODES || bail_out "apply"
hostkey() { cut -d' ' -f2 "$SIM_STATE/nodes/$1/ssh_host_ed25519_key.pub"; }
userkey() { on "$1" cut -d' ' -f2 "/home/$2/.ssh/id_ed25519.pub"; }
# no_key_anywhere KEY WHAT: no node's known_hosts or authorized_keys holds KEY.
no_key_anywhere() {
	local n
	for n in $(nodes); do
		if on "$n" grep -qF "$1" /etc/hpcinit/ssh_known_hosts /home/alice/.ssh/authorized_keys; then
			bail_out "$n still holds $2"
		fi
	done
}
all_logins() {          # every node <-> every node as alice, sources in parallel
	local s d bad=0
	for s in $(nodes); do
		(
			for d in $(nodes); do
				got=$(login "$s" alice "$d" 2>&1) || { echo "alice@$s -> $d: $got"; exit 1; }
				[ "$got" = "$d" ] || { echo "alice@$s -> $d: got '$got'"; exit 1; }
			done
		) > "$T/login.$s" 2>&1 &
	done
	for s in $(nodes); do
		wait -n || bad=1
	done
	[ $bad = 0 ] || { cat "$T"/login.*; bail_out "a login was refused"; }
}
# sim.sh add brings hps-4 back at the same address with a new MAC; the other
# nodes' neighbour caches would send to the old one for a minute or more.
readd_hps4() {
	[ "$(bash "$SIM" add)" = hps-4 ] || bail_out "sim add did not recreate hps-4"
	for n in hps-1 hps-2 hps-3; do
		ip -n "$n" neigh flush to "$(bash "$SIM" addr hps-4)"
	done
	prepare_node hps-4
}
old_host=$(hostkey hps-4)
old_user=$(userkey hps-4 alice)
on hps-1 grep -qF "$old_host" /etc/hpcinit/ssh_known_hosts || bail_out "hps-4's host key not pinned on hps-1"

# 1. Scale-in.  The live nodes refresh every half second (their timer does it every
# minute) while hps-4, deleted, stops refreshing its record until its lease expires.
(
	while :; do
		for n in hps-1 hps-2 hps-3; do
			on "$n" "$HPCINIT" refresh -c "$T/node.yaml" > /dev/null 2>&1 || true
		done
		sleep 0.5
	done
) &
timer=$!
bash "$SIM" del hps-4
pruned=no
for _ in $(seq 1 60); do
	pruned=yes
	for n in hps-1 hps-2 hps-3; do
		on "$n" grep -qF "$old_host" /etc/hpcinit/ssh_known_hosts && pruned=no
	done
	[ $pruned = yes ] && break
	sleep 0.5
done
kill "$timer"
wait "$timer" 2>/dev/null || true
[ $pruned = yes ] || bail_out "hps-4 was never pruned"
for n in hps-1 hps-2 hps-3; do  # nobody else was dropped meanwhile
	hp "$n" refresh -c "$T/node.yaml"
	[ "$(module_field "$n" discovery summary)" = "3 nodes known (expect 4)" ] ||
		bail_out "$n: $(module_field "$n" discovery summary)"
done
no_key_anywhere "$old_host" "the departed node's host key"
no_key_anywhere "$old_user" "the departed node's user key"
ok "scale-in: hps-4's host key and user keys pruned on every node"

# 2. Scale-out: a new VM at the same name and address, new host key, new boot id.
readd_hps4
new_host=$(hostkey hps-4)
[ "$new_host" != "$old_host" ] || bail_out "test bug: same host key"
hp hps-4 apply -c "$T/long.yaml"
[ "$(cat "$T/rc.hps-4")" = 0 ] || bail_out "apply on the new hps-4: $(cat "$T/out.hps-4" "$T/err.hps-4")"
for n in hps-1 hps-2 hps-3; do
	hp "$n" refresh -c "$T/long.yaml"
	[ "$(cat "$T/rc.$n")" = 0 ] || bail_out "refresh on $n: $(cat "$T/out.$n")"
done
all_logins
no_key_anywhere "$old_host" "the old host key of hps-4"
ok "scale-out at the same address: new host key accepted after refresh, old key gone, 16 logins"

# 3. Rebuilt again before anyone saw it leave: the new boot id lets the new key in.
prev_host=$new_host
prev_boot=$(cat "$T/boot_id.hps-4")
bash "$SIM" del hps-4
readd_hps4
new_host=$(hostkey hps-4)
hp hps-4 apply -c "$T/long.yaml"
[ "$(cat "$T/rc.hps-4")" = 0 ] || bail_out "apply on the rebuilt hps-4: $(cat "$T/out.hps-4")"
for n in hps-1 hps-2 hps-3; do
	hp "$n" refresh -c "$T/long.yaml"
	[ "$(cat "$T/rc.$n")" = 0 ] || bail_out "refresh on $n: $(cat "$T/out.$n")"
	det=$(module_field "$n" ssh details)
	grep -q "hps-4: host key replaced (now ssh-ed25519 SHA256:.*boot id $prev_boot -> $(cat "$T/boot_id.hps-4"))" \
		<<<"$det" || bail_out "$n did not report the replacement: $det"
done
all_logins
no_key_anywhere "$prev_host" "the previous host key of hps-4"
ok "rebuilt in place (new boot id): $(grep -m1 'host key replaced' <<<"$det")"

# 4. hps-3 gets a new host key while it stays up (same boot id).
ssh-keygen -q -t ed25519 -N '' -C "root@hps-3" -f "$T/hk3"
on hps-3 install -m 0600 "$T/hk3" /etc/ssh/ssh_host_ed25519_key
on hps-3 install -m 0644 "$T/hk3.pub" /etc/ssh/ssh_host_ed25519_key.pub
kill -HUP "$(cat "$SIM_STATE/nodes/hps-3/sshd.pid")"     # sshd re-reads its host key
sleep 0.3
hp hps-3 refresh -c "$T/long.yaml"      # publishes the new key, same boot id
pinned=$(cut -d' ' -f2 "$SIM_STATE/nodes/hps-3/ssh_host_ed25519_key.pub")
hp hps-1 refresh -c "$T/long.yaml"
[ "$(cat "$T/rc.hps-1")" = 1 ] || bail_out "refresh with a changed live host key exited $(cat "$T/rc.hps-1")"
[ "$(module_field hps-1 ssh status)" = failed ] || bail_out "ssh status $(module_field hps-1 ssh status)"
sum=$(module_field hps-1 ssh summary)
[ "$sum" = "host key changed while the node stayed up: hps-3; refused (see details)" ] || bail_out "summary: $sum"
module_field hps-1 ssh details | grep -q "hps-3: HOST KEY CHANGED while the node stayed up" || bail_out "no detail"
on hps-1 grep -qF "$pinned" /etc/hpcinit/ssh_known_hosts || bail_out "the pinned key was dropped"
on hps-1 grep -qF "$(cut -d' ' -f2 "$T/hk3.pub")" /etc/hpcinit/ssh_known_hosts && bail_out "the new key was accepted"
if out=$(login hps-1 alice hps-3 2>&1); then bail_out "ssh accepted the changed host key"; fi
grep -q 'REMOTE HOST IDENTIFICATION HAS CHANGED' <<<"$out" || bail_out "ssh said: $out"
ok "changed key of a live node: refused, exit 1, '$sum'; ssh refuses the host"
# Other nodes and users are unaffected meanwhile.
[ "$(login hps-1 bob hps-2)" = hps-2 ] || bail_out "bob@hps-1 -> hps-2 during the refusal"
# The admin accepts it.
on hps-1 ssh-keygen -q -R hps-3 -f /etc/hpcinit/ssh_known_hosts >/dev/null
hp hps-1 refresh -c "$T/long.yaml"
[ "$(cat "$T/rc.hps-1")" = 0 ] || bail_out "refresh after ssh-keygen -R: $(cat "$T/out.hps-1")"
[ "$(login hps-1 alice hps-3)" = hps-3 ] || bail_out "login after accepting the key"
on hps-1 grep -qF "$pinned" /etc/hpcinit/ssh_known_hosts && bail_out "old key of hps-3 still pinned"
ok "after ssh-keygen -R and refresh the new key is pinned and the login works"
done_testing
