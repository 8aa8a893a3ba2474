#!/bin/sh
# Runs INSIDE a real-kernel VM guest (tests/vm boots it), as root, with systemd
# as PID 1, pam_limits in common-session and hpcinit installed.  Proves what
# the host cannot (no systemd, no CAP_SYS_RESOURCE there):
#  1. apply's systemd drop-in reaches services started later in the same boot
#     (daemon-reload, verified with systemctl show and a real transient service);
#  2. a fresh PAM session gets the limits.d value, and a later 99-site.conf that
#     lowers it is what the session gets and what `hpcinit check` names.
# Prints "ok - ..." / "not ok - ..." and exits non-zero on any failure.
set -u
fails=0
ok() { echo "ok - $*"; }
no() { echo "not ok - $*"; fails=$((fails + 1)); }
t=$(mktemp -d)
trap 'rm -rf "$t"; rm -f /etc/security/limits.d/99-vmcheck.conf' EXIT
cat >"$t/node.yaml" <<YAML
version: 1
cluster: {name: vmcheck}
memlock: {limit: 8M, users: ["*"], systemd: true}
YAML
hpcinit apply -c "$t/node.yaml" --only memlock -v >"$t/apply" 2>&1
live=$(systemctl show -p DefaultLimitMEMLOCK --value)
[ "$live" = 8388608 ] && ok "systemctl show: DefaultLimitMEMLOCK=8388608 after apply" ||
	no "systemctl show gives $live after apply"
grep -q 'systemd: reloaded\|systemd: services started now get memlock 8192 KiB' "$t/apply" &&
	ok "apply reported the live default" || no "apply did not report the live default"
svc=$(systemd-run --wait --pipe --quiet /bin/sh -c 'ulimit -l' 2>/dev/null)
[ "$svc" = 8192 ] && ok "a service started after apply gets 8192 KiB" || no "a new service gets '$svc'"
s=$(su -s /bin/sh nobody -c 'ulimit -l' 2>/dev/null)
[ "$s" = 8192 ] && ok "a PAM session (su) gets 8192 KiB" || no "a PAM session gets '$s'"
printf '*  -  memlock  4096\n' >/etc/security/limits.d/99-vmcheck.conf
s=$(su -s /bin/sh nobody -c 'ulimit -l' 2>/dev/null)
[ "$s" = 4096 ] && ok "99-vmcheck.conf lowers a PAM session to 4096 KiB" || no "with 99-vmcheck.conf a session gets '$s'"
hpcinit check -c "$t/node.yaml" --only memlock >"$t/check" 2>&1
rc=$?
[ "$rc" = 1 ] && grep -q '99-vmcheck.conf:1 sets memlock 4096 KiB' "$t/check" &&
	ok "hpcinit check fails and names 99-vmcheck.conf" || { no "check rc=$rc"; cat "$t/check"; }
echo "# $fails failed"
[ "$fails" = 0 ]
