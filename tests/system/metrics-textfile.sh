#!/bin/bash
# The node_exporter textfile: a real prometheus-node-exporter (Debian's
# package), on loopback with --collector.textfile.directory at the fake
# root's /var/lib/prometheus/node-exporter (the package's default), scrapes
# hpcinit.prom.  node_exporter rejects a malformed file
# (node_textfile_scrape_error 1, none of its metrics): that proves the format.
# The boot phases come from a fake /proc and cloud-init status (stand-ins for
# this boot's: the numbers below are theirs).
. "$(dirname "$0")/lib.sh"
NE=$(command -v prometheus-node-exporter || true)
[ -n "$NE" ] || { echo "prometheus-node-exporter not found (Debian package prometheus-node-exporter)"; exit 1; }
R=$T/root
mkroot "$R"
SPEC=$FIX/core/status.yaml
export HPCINIT_ADDRESS=198.18.0.1
D=$R/var/lib/prometheus/node-exporter
PROM=$D/hpcinit.prom

# No exporter directory: nothing written.
run_hpc "$T/a0" apply --root "$R" -c "$SPEC" --hostname node01 --kernel-release 6.9.1
check "no textfile directory: no textfile" [ ! -e "$PROM" ]
mkdir -p "$D" "$R/proc/1" "$R/run/cloud-init"
printf 'cpu  1 2 3 4\nbtime 1764000000\nprocesses 9\n' >"$R/proc/stat"
# PID 1 started 215 ticks (2.15 s at USER_HZ 100) after boot
echo '1 (systemd) S 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 215 1000 100' >"$R/proc/1/stat"
cat >"$R/run/cloud-init/status.json" <<'JSON'
{"v1": {"datasource": "DataSourceAzure", "init-local": {"errors": [], "start": 1764000004.5, "finished": 1764000005.0},
 "init": {"errors": [], "start": 1764000006.0, "finished": 1764000010.0},
 "modules-config": {"errors": [], "start": 1764000011.0, "finished": 1764000012.0},
 "modules-final": {"errors": [], "start": 1764000030.0, "finished": 1764000042.25}, "stage": null}}
JSON
# The boot's record is per boot (/run): start it again with the fake boot.
rm -f "$R/run/hpcinit/boot.json"
run_hpc "$T/a1" apply --root "$R" -c "$SPEC" --hostname node01 --kernel-release 6.9.1
check "apply ready" [ "$rc" -eq 0 ]
check "textfile written" [ -f "$PROM" ]
check "no temp file left in the directory" [ "$(ls "$D")" = hpcinit.prom ]

PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$NE" --web.listen-address="127.0.0.1:$PORT" --collector.disable-defaults --collector.textfile \
	--collector.textfile.directory="$D" >"$T/ne.log" 2>&1 &
NEPID=$!
cleanup_add "kill $NEPID 2>/dev/null || true"
scrape() { curl -s "http://127.0.0.1:$PORT/metrics" >"$1" || true; }
for _ in $(seq 100); do
	scrape "$T/m0"
	grep -q '^node_textfile_scrape_error' "$T/m0" && break
	sleep 0.1
done
scrape "$T/m1"
check "node_exporter read the textfile without error" contains "$T/m1" "node_textfile_scrape_error 0"
check "hpcinit_ready 1" contains_line "$T/m1" "hpcinit_ready 1"
check "state ready" contains "$T/m1" 'hpcinit_state{state="ready"} 1'
check "kernel step ok" contains "$T/m1" 'hpcinit_step_result{result="ok",step="kernel"} 1'
check "a skipped step" contains "$T/m1" 'hpcinit_step_result{result="skipped",step="nfs"} 1'
check "step durations" grep -q '^hpcinit_step_duration_seconds{step="discovery"} [0-9.e+-]*$' "$T/m1"
check "the apply's last run" grep -q '^hpcinit_last_run_timestamp_seconds{part="apply"} 1\.[0-9.e+]*$' "$T/m1"
check "the apply's exit code" contains "$T/m1" 'hpcinit_last_run_exit_code{part="apply"} 0'
check "peers known" contains "$T/m1" "hpcinit_peers 1"
check "boot: kernel 2.15 s (215 ticks)" contains "$T/m1" 'hpcinit_boot_phase_seconds{phase="kernel"} 2.15'
check "boot: cloud-init start 4.5 s" contains "$T/m1" 'hpcinit_boot_phase_seconds{phase="cloud-init.start"} 4.5'
check "boot: cloud-init end 42.25 s" contains "$T/m1" 'hpcinit_boot_phase_seconds{phase="cloud-init.end"} 42.25'
check "boot: ready" grep -q '^hpcinit_boot_phase_seconds{phase="ready"} ' "$T/m1"
check "boot: each step" grep -q '^hpcinit_boot_phase_seconds{phase="step.hostfile"} ' "$T/m1"
check "boot time" grep -q '^hpcinit_boot_time_seconds 1.764e+09$' "$T/m1"
run_hpc "$T/s1" status --root "$R"
check "hpcinit status shows the boot" contains "$T/s1" "boot, seconds after the kernel started:"
check "hpcinit status: kernel 2.150" grep -qE '^  kernel +2\.150$' "$T/s1"
check "hpcinit status: cloud-init.end 42.250" grep -qE '^  cloud-init.end +42\.250$' "$T/s1"

# Degraded: the reason in the metrics, by tag; a later apply keeps "ready" at its first time.
ready1=$(grep '^hpcinit_boot_phase_seconds{phase="ready"}' "$T/m1")
printf 'session required pam_unix.so\n' >"$R/etc/pam.d/sshd"
run_hpc "$T/a2" apply --root "$R" -c "$SPEC" --hostname node01 --kernel-release 6.9.1
check "apply degraded" [ "$rc" -eq 3 ]
scrape "$T/m2"
check "degraded: hpcinit_ready 0" contains_line "$T/m2" "hpcinit_ready 0"
check "degraded: state" contains "$T/m2" 'hpcinit_state{state="degraded"} 1'
check "degraded: the reason's tag" contains "$T/m2" 'hpcinit_finding{severity="degraded",step="memlock",tag="memlock.pam.inactive"} 1'
check "the boot's ready stays the first" contains "$T/m2" "$ready1"

# Two findings with one tag in one step (pam_limits missing for sshd and for
# login): one series, its value the count.  The same series twice is a
# gather error node_exporter logs at every scrape (its scrape_error stays 0).
printf 'session required pam_unix.so\n' >"$R/etc/pam.d/login"
run_hpc "$T/a3" apply --root "$R" -c "$SPEC" --hostname node01 --kernel-release 6.9.1
check "apply degraded twice over" [ "$rc" -eq 3 ]
check "two memlock.pam.inactive findings" [ "$(grep -c 'pam_limits is NOT active' "$T/a3")" -ge 2 ]
scrape "$T/m4"
check "one series for the tag, counted 2" contains "$T/m4" \
	'hpcinit_finding{severity="degraded",step="memlock",tag="memlock.pam.inactive"} 2'
# every series (name and labels) once in the file
grep -v '^#' "$PROM" | sed 's/ [^ ]*$//' | sort | uniq -d >"$T/repeated"
check "no series twice in the textfile" [ ! -s "$T/repeated" ]
check "node_exporter gathered without error" not_contains "$T/ne.log" "collected before"
check "scrape error still 0" contains "$T/m4" "node_textfile_scrape_error 0"

# A malformed textfile is refused by node_exporter: the check above can fail.
printf 'hpcinit_bad{x="1" 1\n' >"$D/broken.prom"
scrape "$T/m3"
check "node_exporter flags a malformed file" contains "$T/m3" "node_textfile_scrape_error 1"
rm -f "$D/broken.prom"

# The next boot: the real systemd-tmpfiles with the package's tmpfiles.d entry, as
# systemd-tmpfiles-setup.service runs it early at boot, removes the file the last boot left
# (its hpcinit_ready said the last boot's state) and nothing else of the exporter's.
echo 'other_metric 1' >"$D/other.prom"
check "before the reboot: the last boot's textfile" contains "$PROM" "hpcinit_ready"
check "systemd-tmpfiles --boot --remove exits 0" \
	systemd-tmpfiles --root "$R" --boot --remove "$TOP_SRCDIR/packaging/tmpfiles/hpcinit.conf"
check "at boot: the last boot's hpcinit.prom removed" [ ! -e "$PROM" ]
check "at boot: another exporter's file kept" [ -e "$D/other.prom" ]
scrape "$T/m5"
check "the exporter then serves no hpcinit_ready (not the last boot's 1)" not_contains "$T/m5" "hpcinit_ready"
run_hpc "$T/a5" apply --root "$R" -c "$SPEC" --hostname node01 --kernel-release 6.9.1
check "this boot's first run writes it again" contains "$PROM" "hpcinit_ready"
done_testing
