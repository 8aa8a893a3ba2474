#!/bin/bash
# SPDX-License-Identifier: MIT
#
# "systemd-analyze verify" prints nothing for hpcinit's units and for
# slurmd.service with the hpcinit drop-in.  It needs no running systemd but
# checks that ExecStart= binaries exist and that Documentation= man pages
# open, so it runs with --root on a scratch tree holding systemd's own units
# (copied from this machine), the built units, the binary at the unit's
# ExecStart path and the man pages on MANPATH.  systemd-analyze exits 0 on
# warnings, so any output at all is a failure.
set -eu

# ok, bail_out, done_testing
. "$(dirname "$0")/../lib/tap.sh"
: "${HPCINIT:?}" "${TOP_SRCDIR:?}" "${TOP_BUILDDIR:?}"
command -v systemd-analyze >/dev/null || bail_out "systemd-analyze not found (Debian package systemd)"
SYSUNITS=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null || echo /lib/systemd/system)
[ -e "$SYSUNITS/sysinit.target" ] || SYSUNITS=/usr/lib/systemd/system
[ -e "$SYSUNITS/sysinit.target" ] || bail_out "systemd's own units not found"

T=$(mktemp -d /tmp/hpcinit-sdverify.XXXXXX)
trap 'rm -rf "$T"' EXIT
R=$T/root
mkdir -p "$R/usr/lib/systemd" "$R/etc/systemd/system" "$T/man/man8" "$T/man/man5"
cp -a "$SYSUNITS" "$R/usr/lib/systemd/system"
cp "$TOP_SRCDIR/packaging/man/hpcinit.8" "$T/man/man8/"
cp "$TOP_SRCDIR/packaging/man/hpcinit.yaml.5" "$T/man/man5/"
export MANPATH=$T/man LC_ALL=C.UTF-8

# The units as "make" builds them (@sbindir@ etc. substituted), and the timer.
units=("$TOP_BUILDDIR/packaging/systemd/hpcinit.service"
	"$TOP_BUILDDIR/packaging/systemd/hpcinit-refresh.service"
	"$TOP_BUILDDIR/packaging/systemd/hpcinit-leave.service" "$TOP_BUILDDIR/packaging/systemd/hpcinit-watch.service"
	"$TOP_SRCDIR/packaging/systemd/hpcinit-refresh.timer"
	"$TOP_BUILDDIR/packaging/systemd/hpcinit-check.service" "$TOP_SRCDIR/packaging/systemd/hpcinit-check.timer"
	"$TOP_SRCDIR/packaging/systemd/hpcinit-health.socket" "$TOP_BUILDDIR/packaging/systemd/hpcinit-health@.service")
names=()
for u in "${units[@]}"; do
	[ -e "$u" ] || bail_out "$u not built"
	grep -q '@[a-z]*dir@' "$u" && bail_out "$u has unsubstituted @dir@ placeholders"
	cp "$u" "$R/etc/systemd/system/"
	names+=("/etc/systemd/system/$(basename "$u")")
	# Put the real binaries where the Exec*= lines expect them: hpcinit's
	# own from the build, anything else (systemctl) from this machine.
	for exe in $(sed -n 's/^Exec[A-Za-z]*=[-@:+!]*\([^ ]*\).*/\1/p' "$u"); do
		mkdir -p "$R$(dirname "$exe")"
		case $exe in
		*/hpcinit) cp "$HPCINIT" "$R$exe" ;;
		*) [ -x "$exe" ] || bail_out "$u runs $exe, which this machine does not have"
		   cp "$exe" "$R$exe" ;;
		esac
	done
done

# slurmd.service from the slurmd package when installed, else a stand-in
# with the same ordering lines (a fake, named as one), plus the drop-in.
if [ -e "$SYSUNITS/slurmd.service" ]; then
	slurmd_unit=$SYSUNITS/slurmd.service
	# Its Exec*= binaries and its Documentation= page, as for hpcinit's units.
	for exe in $(sed -n 's/^Exec[A-Za-z]*=[-@:+!]*\([^ ]*\).*/\1/p' "$slurmd_unit"); do
		[ -x "$exe" ] || bail_out "slurmd.service runs $exe, which this machine does not have"
		mkdir -p "$R$(dirname "$exe")"
		cp "$exe" "$R$exe"
	done
	for page in /usr/share/man/man8/slurmd.8*; do
		[ -e "$page" ] && cp "$page" "$T/man/man8/"
	done
else
	slurmd_unit=$T/slurmd.service
	cat > "$slurmd_unit" <<-'UNIT'
	[Unit]
	Description=Slurm node daemon (stand-in for the test: slurmd is not installed)
	After=munge.service network-online.target remote-fs.target
	Wants=network-online.target

	[Service]
	Type=simple
	ExecStart=/usr/sbin/slurmd -D -s
	UNIT
	mkdir -p "$R/usr/sbin"
	cp /bin/true "$R/usr/sbin/slurmd"
fi
cp "$slurmd_unit" "$R/etc/systemd/system/slurmd.service"
mkdir -p "$R/etc/systemd/system/slurmd.service.d"
cp "$TOP_SRCDIR/packaging/systemd/slurmd-wait-hpcinit.conf" "$R/etc/systemd/system/slurmd.service.d/hpcinit.conf"
names+=(/etc/systemd/system/slurmd.service)

# verify ROOT UNIT...: output of systemd-analyze, empty when all is well.
verify() { local root=$1; shift; systemd-analyze --root="$root" verify "$@" 2>&1 || true; }

out=$(verify "$R" "${names[@]}")
if [ -n "$out" ]; then
	echo "$out"
	bail_out "systemd-analyze verify printed the lines above"
fi
ok "systemd-analyze verify is silent for: ${names[*]##*/}"

# The check can fail: an unknown key in the drop-in, a missing binary.
echo 'Bogus=yes' >> "$R/etc/systemd/system/slurmd.service.d/hpcinit.conf"
out=$(verify "$R" /etc/systemd/system/slurmd.service)
echo "$out" | grep -q "Unknown key 'Bogus'" || { echo "$out"; bail_out "an unknown key went unnoticed"; }
exe=$(sed -n 's/^ExecStart=\([^ ]*\).*/\1/p' "$R/etc/systemd/system/hpcinit.service")
rm "$R$exe"
out=$(verify "$R" /etc/systemd/system/hpcinit.service)
echo "$out" | grep -q "is not executable" || { echo "$out"; bail_out "a missing ExecStart binary went unnoticed"; }

# The unit says what the docs say.
u=$R/etc/systemd/system/hpcinit.service
for line in Type=oneshot RemainAfterExit=yes SuccessExitStatus=3 \
	"Wants=network-online.target" DefaultDependencies=no "Conflicts=shutdown.target"; do
	grep -qx "$line" "$u" || bail_out "hpcinit.service lacks $line"
done
# After cloud-init's final stage (packages: installed), so not before multi-user.target.
grep -q '^After=.*cloud-final.service' "$u" || bail_out "hpcinit.service is not after cloud-final.service"
grep -q '^After=network-online.target' "$u" || bail_out "hpcinit.service is not after network-online.target"
grep -qx "ExecStart=$exe apply" "$u" || bail_out "hpcinit.service does not run hpcinit apply"
# Leave at shutdown while the network and remote file systems are up; the watch stops before it.
u=$R/etc/systemd/system/hpcinit-leave.service
grep -qx "ExecStop=$exe leave" "$u" || bail_out "hpcinit-leave.service does not run hpcinit leave at stop"
grep -q '^After=network-online.target remote-fs.target' "$u" || bail_out "hpcinit-leave.service is not after the network"
u=$R/etc/systemd/system/hpcinit-watch.service
grep -qx "ExecStart=$exe watch" "$u" || bail_out "hpcinit-watch.service does not run hpcinit watch"
grep -q '^After=.*hpcinit-leave.service' "$u" || bail_out "hpcinit-watch.service does not stop before the leave"
grep -qx "Type=notify" "$u" || bail_out "hpcinit-watch.service is not Type=notify"
grep -qx "NotifyAccess=main" "$R/etc/systemd/system/hpcinit.service" || bail_out "hpcinit.service cannot say its STATUS="
# The health probe: loopback port 9119, one "hpcinit health" a connection on the socket.
u=$R/etc/systemd/system/hpcinit-health.socket
grep -qx "ListenStream=127.0.0.1:9119" "$u" || bail_out "hpcinit-health.socket does not listen on 127.0.0.1:9119"
grep -qx "Accept=yes" "$u" || bail_out "hpcinit-health.socket is not inetd style (Accept=yes)"
u=$R/etc/systemd/system/hpcinit-health@.service
grep -qx "ExecStart=$exe health" "$u" || bail_out "hpcinit-health@.service does not run hpcinit health"
grep -qx "StandardInput=socket" "$u" || bail_out "hpcinit-health@.service does not read the connection"
ok "systemd units"
done_testing
