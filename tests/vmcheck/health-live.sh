#!/bin/sh
# Runs INSIDE a real-kernel VM guest (tests/vm boots it), as root, with systemd
# as PID 1, pam_limits in common-session and hpcinit installed and applied from
# the node's custom-data (issue 33, item 1: health that stays true after boot).
# A failure a job would hit appears after boot (a limits.d file lowers every
# session's memlock below the spec's), then is repaired.  At each step the node's
# readiness is read from all its consumers at once and they must agree:
#   - the health endpoint (hpcinit-health.socket on 127.0.0.1:9119, as Azure's
#     Application Health extension asks it): Healthy / Unhealthy;
#   - the node_exporter textfile (hpcinit_ready 1 / 0);
#   - `hpcinit status` (its exit code: 0 ready, 1 failed).
# Nothing runs hpcinit by hand in between: the change is picked up by
# hpcinit-check.service, the unit hpcinit-check.timer starts every 2 minutes
# on every node (the harness stopped the timer so that it does not race this
# file; the file starts the unit as the timer would).
# Pure drift (the limits file's mode changed: apply would restore it, no job
# gets less) leaves the node ready.
# Prints "ok - ..." / "not ok - ..." and exits non-zero on any failure.
set -u
fails=0
ok() { echo "ok - $*"; }
no() { echo "not ok - $*"; fails=$((fails + 1)); }
TEXTDIR=/var/lib/prometheus/node-exporter
LOWER=/etc/security/limits.d/99-vmcheck-live.conf
made_dir=0
[ -d "$TEXTDIR" ] || { mkdir -p "$TEXTDIR"; made_dir=1; }
cleanup() {
	rm -f "$LOWER"
	[ "$made_dir" = 0 ] || rm -rf /var/lib/prometheus
	[ "${was_socket:-1}" = 1 ] || systemctl disable --now hpcinit-health.socket >/dev/null 2>&1
}
trap cleanup EXIT
systemctl is-enabled -q hpcinit-health.socket && was_socket=1 || was_socket=0
systemctl is-enabled -q hpcinit-check.timer && ok "hpcinit-check.timer is enabled (the .deb)" ||
	no "hpcinit-check.timer is not enabled"
systemctl enable --now hpcinit-health.socket >/dev/null 2>&1 ||
	no "systemctl enable --now hpcinit-health.socket"

# health: the endpoint's state word ("Healthy", "Unhealthy", or the HTTP code)
health() {
	# bash for /dev/tcp (this file runs under sh)
	r=$(bash -c 'exec 3<>/dev/tcp/127.0.0.1/9119 &&
		printf "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n" >&3 &&
		timeout 30 cat <&3' 2>/dev/null)
	case $r in
	*'"ApplicationHealthState": "Unhealthy"'*) echo Unhealthy ;;
	*'"ApplicationHealthState": "Healthy"'*) echo Healthy ;;
	*) echo "http:$(printf '%s\n' "$r" | head -1 | tr -d '\r')" ;;
	esac
}
ready_metric() { sed -n 's/^hpcinit_ready \([0-9]\)$/\1/p' "$TEXTDIR/hpcinit.prom" 2>/dev/null; }
status_rc() { hpcinit status >/tmp/live-status.txt 2>&1; echo $?; }
# refresh: what the node's check timer starts; then every consumer is read
refresh() {
	systemctl start hpcinit-check.service
	H=$(health); M=$(ready_metric); S=$(status_rc)
}
# agree WHAT H M S: the three consumers say WHAT
agree() {
	if [ "$H" = "$2" ] && [ "$M" = "$3" ] && [ "$S" = "$4" ]; then
		ok "$1: health $H, hpcinit_ready $M, hpcinit status exit $S"
	else
		no "$1: health $H (want $2), hpcinit_ready '$M' (want $3), hpcinit status exit $S (want $4)"
		sed 's/^/#   /' /tmp/live-status.txt
		journalctl -u hpcinit-check.service -n 30 --no-pager 2>/dev/null | sed 's/^/#   /'
	fi
}

refresh
agree "booted and ready" Healthy 1 0

# A failure a job would hit, after boot: every PAM session gets 4096 KiB.
printf '*  -  memlock  4096\n' > "$LOWER"
s=$(su -s /bin/sh nobody -c 'ulimit -l' 2>/dev/null)
[ "$s" = 4096 ] && ok "a PAM session now gets 4096 KiB (the failure is real)" || no "a PAM session gets '$s'"
refresh
agree "memlock lowered after boot, one refresh later" Unhealthy 0 1
grep -q 'memlock' /tmp/live-status.txt && ok "hpcinit status names the memlock step" ||
	no "hpcinit status does not name memlock"

# Repaired: the next refresh turns every consumer back.
rm -f "$LOWER"
refresh
agree "repaired, one refresh later" Healthy 1 0

# Pure drift: the limits file's mode (apply restores it; no session gets less).
f=$(ls /etc/security/limits.d/*hpcinit*.conf 2>/dev/null | head -1)
if [ -n "$f" ]; then
	m=$(stat -c %a "$f")
	chmod 600 "$f"
	refresh
	agree "drift only ($f mode 600), one refresh later" Healthy 1 0
	chmod "$m" "$f"
else
	no "no hpcinit limits.d file to drift"
fi
echo "# $fails failed"
[ "$fails" = 0 ]
