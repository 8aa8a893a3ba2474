#!/bin/bash
# What a root on one node can make the other nodes do through its records,
# judged by the real OpenSSH client and sshd (issue 13).  The attacker is
# root on hps-4 with the cluster secret: every record below carries a valid
# HMAC, so only the rules of discovery/admit.c stand in its way.
#  1. an IPoIB address of its choosing (198.18.3.200, outside cluster.network)
#     does not widen from=: hps-4's alice key, used from .200, is refused;
#  2. a record "HPS-1" (hps-1's name in upper case) at an address hps-4 holds,
#     with hps-4's host key: no node's ssh to hps-1 reaches hps-4, hps-1 keeps
#     itself, no known_hosts, /etc/hosts or hostfile line maps the name there
#     (the others leave hps-1 out while two records claim its name);
#  3. a foreign name (hps-2.attacker.example), an address outside
#     cluster.network and a record dated an hour ahead get no known_hosts
#     entry, no ssh_config Host pattern, no hostfile or /etc/hosts line, and
#     hps-2 stays reachable by its name;
#  4. once the records are gone, everything is back.
# cluster.network is a /25: the nodes (.11-.14) are inside, .200 is not.
NET=198.18.3.0/25
. "$TOP_SRCDIR/tests/cluster/ssh-lib.sh"

cluster_up 4
NODES=$(nodes)
# shellcheck disable=SC2086
run_on 0 apply $NODES || bail_out "apply"
[ "$(login hps-2 alice hps-1)" = hps-1 ] || bail_out "control: hps-2 -> hps-1"
ok "4 nodes applied; hps-2 logs in to hps-1 by name"
REC=$SHARED/hpsc/nodes

# resign SRC DST FIELD=VALUE...: a copy of a record with fields set (an empty
# value deletes the field), signed with the cluster secret as hpcinit signs.
resign() {
	python3 - "$T/cluster.key" "$@" <<-'EOF'
	import hashlib, hmac, sys
	key = open(sys.argv[1], "rb").read().rstrip(b"\r\n")
	src, dst, sets = sys.argv[2], sys.argv[3], dict(a.split("=", 1) for a in sys.argv[4:])
	out, done = [], set()
	for line in open(src).read().split("\n"):
	    k = line.split(":", 1)[0]
	    if line in ("...", "") or k == "hmac":
	        continue
	    if not line.startswith(" ") and k in sets:
	        done.add(k)
	        if sets[k]:
	            out.append("%s: %s" % (k, sets[k]))
	        continue
	    out.append(line)
	    if k == "addr":
	        for f, v in sets.items():
	            if f not in done and f not in ("hostname", "addr") and v:
	                out.append("%s: %s" % (f, v))
	                done.add(f)
	body = ("\n".join(out) + "\n").encode()
	mac = hmac.new(key, body, hashlib.sha256).hexdigest()
	open(dst, "wb").write(body + b"hmac: " + mac.encode() + b"\n...\n")
	EOF
}

# 1. hps-4's own record, with an IPoIB address outside the cluster network.
cp -p "$REC/hps-4.rec" "$T/hps-4.rec.orig"
resign "$T/hps-4.rec.orig" "$REC/hps-4.rec" ipoib=198.18.3.200
grep -q '^ipoib: 198.18.3.200$' "$REC/hps-4.rec" || bail_out "test bug: ipoib not set"
hp hps-1 refresh
[ "$(cat "$T/rc.hps-1")" -le 3 ] || bail_out "refresh hps-1: rc $(cat "$T/rc.hps-1")"
on hps-1 grep -q '198.18.3.200' /home/alice/.ssh/authorized_keys &&
	bail_out "a record's IPoIB address widened from=: $(on hps-1 grep from= /home/alice/.ssh/authorized_keys)"
# An outsider on the bridge at .200 with hps-4's alice key (the attacker's own).
out=$(bash "$SIM" add)
[ "$out" = hps-5 ] || bail_out "sim add gave '$out'"
on hps-5 useradd -m -s /bin/bash alice
on hps-4 cat /home/alice/.ssh/id_ed25519 > "$T/k4"
on hps-5 install -d -o alice -m 0700 /home/alice/.ssh
on hps-5 install -o alice -m 0600 "$T/k4" /home/alice/.ssh/k4
on hps-1 cat /etc/hpcinit/ssh_known_hosts > "$T/kh"
on hps-5 install -o alice -m 0644 "$T/kh" /home/alice/.ssh/known_hosts
ip -n hps-5 addr add 198.18.3.200/24 dev eth0
k4() { on hps-5 runuser -u alice -- ssh -o BatchMode=yes -o StrictHostKeyChecking=yes \
	-o IdentitiesOnly=yes -i /home/alice/.ssh/k4 "$@" 198.18.3.11 hostname; }
if out=$(k4 -o BindAddress=198.18.3.200 2>&1); then bail_out "hps-4's key from .200 (its record's ipoib) logged in"; fi
grep -q 'Permission denied (publickey)' <<<"$out" || bail_out "key from .200: $out"
[ "$(k4 -o BindAddress=198.18.3.15 2>&1)" = hps-1 ] || bail_out "control: the same key from inside the network"
ok "a record's IPoIB address outside the network does not widen from= (refused from .200, works from .15)"
cp -p "$T/hps-4.rec.orig" "$REC/hps-4.rec"

# 2. "HPS-1" at .20, an address hps-4 holds, with hps-4's host key.
ip -n hps-4 addr add 198.18.3.20/25 dev eth0
resign "$T/hps-4.rec.orig" "$REC/HPS-1.rec" hostname=HPS-1 addr=198.18.3.20
# 3. a foreign name, and an address outside the network.
resign "$T/hps-4.rec.orig" "$REC/hps-2.attacker.example.rec" hostname=hps-2.attacker.example \
	addr=198.18.3.21
resign "$T/hps-4.rec.orig" "$REC/hps-6.rec" hostname=hps-6 addr=198.18.3.201
# and a record dated an hour ahead (it would never expire and win address conflicts)
resign "$T/hps-4.rec.orig" "$REC/hps-7.rec" hostname=hps-7 addr=198.18.3.27 updated=$(($(date +%s) + 3600))
k4key=$(on hps-4 cut -d' ' -f2 /etc/ssh/ssh_host_ed25519_key.pub)
for n in $NODES; do
	hp "$n" refresh
	[ "$(cat "$T/rc.$n")" = 0 ] ||
		bail_out "$n: refresh with planted records: rc $(cat "$T/rc.$n"), want 0 (others' records are cluster findings)"
done
det=$(module_field hps-1 discovery details)
grep -q "a record for HPS-1 (198.18.3.20) claims this node's name hps-1" <<<"$det" ||
	bail_out "hps-1 does not name the record claiming its name: $det"
det=$(module_field hps-2 discovery details)
grep -q "name HPS-1 is claimed by 2 records" <<<"$det" || bail_out "hps-2: no contested-name finding: $det"
grep -q "record hps-2.attacker.example.rec: hostname hps-2.attacker.example is not a short name" <<<"$det" ||
	bail_out "hps-2: foreign name not named: $det"
grep -q "record hps-6.rec: address 198.18.3.201 is outside cluster.network 198.18.3.0/25" <<<"$det" ||
	bail_out "hps-2: outside address not named: $det"
grep -q "record hps-7.rec: dated 3[56][0-9][0-9] s in the future (more than the 60 s of clock skew allowed); rejected" <<<"$det" ||
	bail_out "hps-2: future-dated record not named: $det"
ok "each planted record is named on the nodes ($(grep -c 'rejected\|claimed' <<<"$det") findings on hps-2)"
for n in $NODES; do
	on "$n" cat /etc/hpcinit/ssh_known_hosts > "$T/kh.$n"
	on "$n" cat /etc/ssh/ssh_config.d/90-hpcinit.conf > "$T/conf.$n"
	on "$n" cat /etc/hosts /etc/hpcinit/hostfile.openmpi /etc/hpcinit/hostfile.plain > "$T/names.$n"
	# hps-4's host key may only be pinned for hps-4's own names
	if grep "$k4key" "$T/kh.$n" | grep -v '^hps-4,198.18.3.14 ' | grep -q .; then
		bail_out "$n: hps-4's host key pinned under another name: $(grep "$k4key" "$T/kh.$n")"
	fi
	grep -qiE 'attacker|hps-[67]|198\.18\.3\.(20|21|27|201)\b' "$T/kh.$n" "$T/conf.$n" "$T/names.$n" &&
		bail_out "$n: a planted name or address reached known_hosts, ssh_config, /etc/hosts or a hostfile: $(grep -iE 'attacker|hps-[67]|198\.18\.3\.(20|21|27|201)\b' "$T/kh.$n" "$T/conf.$n" "$T/names.$n")"
	grep -q 'HPS-1' "$T/names.$n" && bail_out "$n: HPS-1 in /etc/hosts or a hostfile"
	eff=$(on "$n" runuser -u alice -- ssh -G hps-2.attacker.example 2>/dev/null)
	grep -q '/etc/hpcinit/' <<<"$eff" && bail_out "$n: the drop-in applies to hps-2.attacker.example"
done
ok "no planted name or address in any node's known_hosts, ssh_config drop-in, /etc/hosts or hostfiles"
# What ssh does: hps-1 by name never reaches hps-4.
for s in $NODES; do
	got=$(login "$s" alice hps-1 2>&1) || true
	[ "$got" != hps-4 ] || bail_out "$s: ssh hps-1 reached hps-4"
done
[ "$(login hps-1 alice hps-1)" = hps-1 ] || bail_out "hps-1 to itself by name"
# (The other nodes leave hps-1 out while two records claim its name, so hps-1's
# keys are not authorized there meanwhile: a record writer can hide a node, as
# it could by deleting its record, but not take its name.)
for s in hps-3 hps-4; do
	[ "$(login "$s" alice hps-2)" = hps-2 ] || bail_out "$s -> hps-2 by name (a foreign twin must not shadow it)"
done
ok "ssh to hps-1 by name never reaches hps-4; hps-1 keeps itself; hps-2 is reachable despite its foreign twin"

# 4. The planted records go; one refresh later everything is back.
rm -f "$REC/HPS-1.rec" "$REC/hps-2.attacker.example.rec" "$REC/hps-6.rec" "$REC/hps-7.rec"
ip -n hps-4 addr del 198.18.3.20/25 dev eth0
bash "$SIM" del hps-5 >/dev/null
for n in $NODES; do
	hp "$n" refresh
	[ "$(cat "$T/rc.$n")" = 0 ] || bail_out "$n: refresh after cleanup: rc $(cat "$T/rc.$n")"
done
for s in $NODES; do
	[ "$(login "$s" alice hps-1)" = hps-1 ] || bail_out "$s -> hps-1 after cleanup"
done
ok "after the planted records are gone every node logs in to hps-1 again"
done_testing
