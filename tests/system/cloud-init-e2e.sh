#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The real cloud-init (NoCloud seed) runs conf/cloud-init/static-hosts.yaml
# end to end and starts the real hpcinit from runcmd: write_files puts the
# spec and the hosts entries in place, runcmd runs "hpcinit apply", and
# hpcinit's memlock, discovery (static) and hostfile steps converge.
#
# Nothing touches the host's /: the test runs in new mount, UTS, network
# and PID namespaces and chroots into a throwaway overlay of / (see
# overlay.sh).  Everything cloud-init and hpcinit write lands in a tmpfs
# that disappears with the namespace.  The inner
# half copies what the test inspects to $T/out; the outer half asserts, and
# also checks that the host's own files did not change.
#
# cloud-init's stages are the ones its systemd units run at boot:
#   cloud-init init --local; cloud-init init;
#   cloud-init modules --mode config; cloud-init modules --mode final
# A drop-in in the overlay selects the NoCloud datasource, turns off network
# configuration (the network namespace has only lo) and trims the module
# lists to the ones a VM's first boot needs here: the block-device modules
# (growpart, resizefs, disk_setup, mounts) and package managers stay off.
set -eu

# ok, bail_out, done_testing
. "$(dirname "$0")/../lib/tap.sh"

if [ "${1:-}" = inner ]; then
	# Inside the namespaces.  $2 scratch mount point, $3 user-data,
	# $4 hpcinit binary, $5 output directory on the host.
	T=$2 UD=$3 BIN=$4 OUT=$5
	# This node's address on the cluster network: a veth pair with both
	# ends in this network namespace, so nothing leaves it.
	ip link add hpc0 type veth peer name hpc1
	ip addr add 198.18.10.11/24 dev hpc0
	ip link set lo up
	ip link set hpc0 up
	ip link set hpc1 up
	. "$(dirname "$0")/overlay.sh"
	overlay_root "$T"
	R=$OVERLAY_ROOT

	# A fresh instance: no state from an earlier cloud-init run.
	rm -rf "$R/var/lib/cloud" "$R/var/log/cloud-init.log" \
		"$R/var/log/cloud-init-output.log" "$R/etc/hpcinit" \
		"$R/var/lib/hpcinit"
	mkdir -p "$R/var/lib/cloud/seed/nocloud"
	printf 'instance-id: iid-hpcinit-e2e\nlocal-hostname: lab-node01\n' \
		> "$R/var/lib/cloud/seed/nocloud/meta-data"
	cp "$UD" "$R/var/lib/cloud/seed/nocloud/user-data"
	mkdir -p "$R/etc/cloud/cloud.cfg.d"
	cat > "$R/etc/cloud/cloud.cfg.d/99-hpcinit-e2e.cfg" <<-'CFG'
	datasource_list: [NoCloud]
	network: {config: disabled}
	cloud_init_modules: [bootcmd, write-files, set_hostname, update_hostname, update_etc_hosts]
	cloud_config_modules: [runcmd]
	cloud_final_modules: [scripts-per-once, scripts-per-boot, scripts-per-instance, scripts-user, final-message]
	CFG
	install -m 0755 "$BIN" "$R/usr/sbin/hpcinit"

	export PATH=/usr/sbin:/usr/bin:/sbin:/bin LC_ALL=C.UTF-8
	rc=0
	for stage in "init --local" "init" "modules --mode config" "modules --mode final"; do
		echo "== cloud-init $stage"
		# shellcheck disable=SC2086
		chroot "$R" cloud-init $stage || { rc=$?; echo "cloud-init $stage exited $rc"; }
	done

	mkdir -p "$OUT"
	echo "$rc" > "$OUT/cloud-init-rc"
	hostname > "$OUT/uts-hostname"
	# What an admin logging in next would run.
	chroot "$R" hpcinit status > "$OUT/hpcinit-status" 2>&1 || echo "hpcinit status exited $?" >> "$OUT/hpcinit-status"
	# /var/lib/cloud/instance is an absolute symlink: read it from inside.
	chroot "$R" cat /var/lib/cloud/instance/scripts/runcmd > "$OUT/runcmd" || true
	for f in /var/lib/cloud/data/result.json /var/lib/cloud/data/status.json \
		/var/log/cloud-init.log /run/hpcinit/status.json \
		/var/lib/hpcinit/last-run.json /etc/hpcinit/node.yaml /etc/hosts \
		/etc/hpcinit/hostfile.openmpi /etc/security/limits.d/90-hpcinit.conf; do
		[ -e "$R$f" ] && cp "$R$f" "$OUT/$(echo "${f#/}" | tr / _)"
	done
	exit 0
fi

: "${HPCINIT:?HPCINIT must name the built binary}" "${TOP_SRCDIR:?}"
for tool in cloud-init unshare chroot python3; do
	command -v "$tool" >/dev/null || bail_out "$tool not found (Debian: cloud-init, util-linux, coreutils, python3)"
done
SHIPPED=$TOP_SRCDIR/conf/cloud-init/static-hosts.yaml
[ -r "$SHIPPED" ] || bail_out "missing $SHIPPED"

T=$(mktemp -d /tmp/hpcinit-e2e.XXXXXX)
trap 'rm -rf "$T"' EXIT
mkdir "$T/ns"

# The shipped file, with its lab network 192.168.10.0/24 moved to the
# benchmarking range the tests use (198.18.10.0/24): the hosts entries and
# cluster.network.  Nothing else changes.
USERDATA=$T/user-data
sed 's/192\.168\.10\./198.18.10./g' "$SHIPPED" > "$USERDATA"
[ "$(diff "$SHIPPED" "$USERDATA" | grep -c '^>')" -eq 5 ] ||
	bail_out "expected 5 lines with 192.168.10. in $SHIPPED"

# What the host has before: none of it may change.
host_state() {
	for f in /etc/hpcinit /run/hpcinit /var/lib/hpcinit /var/lib/cloud \
		/etc/security/limits.d/90-hpcinit.conf /usr/sbin/hpcinit \
		/etc/cloud/cloud.cfg.d/99-hpcinit-e2e.cfg; do
		if [ -e "$f" ]; then echo "$f present"; else echo "$f absent"; fi
	done
	md5sum /etc/hosts /etc/hostname 2>/dev/null || true
	hostname
}
host_state > "$T/before"

# The namespaces end with the inner shell; their mounts go with them.
unshare --mount --uts --net --pid --fork --propagation private -- \
	bash "$0" inner "$T/ns" "$USERDATA" "$HPCINIT" "$T/out" > "$T/log" 2>&1 ||
	{ cat "$T/log"; bail_out "the namespace script failed"; }

host_state > "$T/after"
diff -u "$T/before" "$T/after" || bail_out "the host's files changed"
[ -z "$(ls -A "$T/ns")" ] || bail_out "the scratch mount point is not empty on the host"

O=$T/out
show() {
	[ -e "$O/var_log_cloud-init.log" ] && tail -40 "$O/var_log_cloud-init.log"
	echo "--- output of the cloud-init stages (hpcinit's table is in it)"
	cat "$T/log"
	[ -e "$O/run_hpcinit_status.json" ] && { echo "--- /run/hpcinit/status.json"; cat "$O/run_hpcinit_status.json"; }
	return 0
}

[ "$(cat "$O/cloud-init-rc")" = 0 ] || { show; bail_out "a cloud-init stage failed"; }
[ "$(cat "$O/uts-hostname")" = lab-node01 ] || { show; bail_out "cloud-init did not set the host name from meta-data"; }

# cloud-init turned runcmd into its script, with hpcinit as an argv list ...
grep -qx "'hpcinit' 'apply'" "$O/runcmd" || { cat "$O/runcmd"; bail_out "runcmd script does not run hpcinit apply"; }
# ... and scripts-user ran that script.
grep -q "Running command \['/var/lib/cloud/instance/scripts/runcmd'\]" "$O/var_log_cloud-init.log" ||
	{ show; bail_out "cloud-init did not run the runcmd script"; }

# cloud-init reports no errors for the whole boot.
python3 - "$O/var_lib_cloud_data_result.json" "$O/var_lib_cloud_data_status.json" <<'PY' || { show; bail_out "cloud-init reported errors"; }
import json, sys
res = json.load(open(sys.argv[1]))["v1"]
if res["errors"]:
    sys.exit("result.json errors: %s" % res["errors"])
st = json.load(open(sys.argv[2]))["v1"]
for stage in ("init-local", "init", "modules-config", "modules-final"):
    if st[stage]["errors"]:
        sys.exit("%s errors: %s" % (stage, st[stage]["errors"]))
    if st[stage]["finished"] is None:
        sys.exit("%s did not finish" % stage)
PY

# write_files put the spec in place, and hpcinit's status file landed.
cmp -s "$O/etc_hpcinit_node.yaml" <(python3 -c '
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
print([w["content"] for w in d["write_files"] if w["path"] == "/etc/hpcinit/node.yaml"][0], end="")
' "$USERDATA") || bail_out "/etc/hpcinit/node.yaml differs from the custom-data"
[ -s "$O/run_hpcinit_status.json" ] || { show; bail_out "/run/hpcinit/status.json did not land"; }
# Every step of the spec this binary has converged (--help lists them).
known=$("$HPCINIT" --help | sed -n 's/^Modules, in run order: \(.*\)\.$/\1/p')
[ -n "$known" ] || bail_out "hpcinit --help lists no modules"
python3 - "$O/run_hpcinit_status.json" "$known" <<'PY' || { show; bail_out "status.json is not the report of a successful apply"; }
import json, sys
rep = json.load(open(sys.argv[1]))
known = [m.strip() for m in sys.argv[2].split(",")]
if rep["command"] != "apply" or rep["exit_code"] != 0 or rep["result"] != "ready":
    sys.exit("command %r exit_code %r result %r" % (rep["command"], rep["exit_code"], rep["result"]))
steps = {m["name"]: m["status"] for m in rep["modules"]}
want = [m for m in ("memlock", "discovery", "hostfile") if m in known]
if "memlock" not in want:
    sys.exit("this hpcinit has no memlock step")
for m in want:
    if steps.get(m) not in ("ok", "changed"):
        sys.exit("%s: %r" % (m, steps.get(m)))
print("steps: " + ", ".join("%s %s" % kv for kv in steps.items()))
PY
grep -q '^\* *hard *memlock *unlimited' "$O/etc_security_limits.d_90-hpcinit.conf" ||
	bail_out "the memlock limits file in the overlay lacks '* hard memlock unlimited'"
if echo "$known" | grep -qw hostfile; then
	for n in 01 02 03 04; do
		grep -q "^lab-node$n slots=" "$O/etc_hpcinit_hostfile.openmpi" ||
			{ cat "$O/etc_hpcinit_hostfile.openmpi"; bail_out "hostfile.openmpi lacks lab-node$n"; }
	done
fi
for want in '^last apply  *.*, ready (exit 0' '^MODULE  *RESULT  *TIME  *FROM  *SUMMARY$' '^memlock  *changed  *[0-9]*ms  *apply ' '^result: ready (exit 0'; do
	grep -q "$want" "$O/hpcinit-status" || { cat "$O/hpcinit-status"; bail_out "hpcinit status lacks /$want/"; }
done
cmp -s "$O/run_hpcinit_status.json" "$O/var_lib_hpcinit_last-run.json" ||
	bail_out "/var/lib/hpcinit/last-run.json differs from /run/hpcinit/status.json"
ok "cloud-init ran hpcinit apply from runcmd; status.json landed; host untouched"
done_testing
