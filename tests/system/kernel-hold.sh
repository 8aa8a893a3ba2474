#!/bin/bash
# Kernel hold per distro family on fake roots (tests/fixtures/kernel/*): check sees the
# missing hold, plan shows it and changes nothing, apply holds with the distro's own
# mechanism, re-apply is a no-op (every mtime kept), check is then in sync.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
R=$T/root

# cycle DISTRO FILE: the common part; FILE is the hold file apply writes (under the root)
cycle() {
	local d=$1 f=$2
	fixture "kernel/$d" "$R"
	run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --only kernel --json
	is "$d: check before apply exits 1 (drift)" "$rc" 1
	is "$d: check says drift" "$(jget "$T/out" kernel status)" drift
	snapshot "$R" >"$T/s0"
	run_hpc "$T/plan" plan --root "$R" -c "$R/node.yaml" --only kernel
	is "$d: plan exits 0" "$rc" 0
	check "$d: plan names $f" contains "$T/plan" "$f"
	snapshot "$R" >"$T/s1"
	check "$d: plan changed nothing" same_file "$T/s1" "$T/s0"
	run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --only kernel --json
	is "$d: apply exits 0" "$rc" 0
	is "$d: apply changed" "$(jget "$T/out" kernel status)" changed
	check "$d: apply lists $f as changed" bash -c "grep -qx -- '$f' <<<\"\$1\"" _ "$(jget "$T/out" kernel changed)"
	snapshot "$R" | grep -v -e ./run/hpcinit -e ./var/lib/hpcinit >"$T/a1"
	sleep 1.1
	run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --only kernel --json
	is "$d: re-apply exits 0" "$rc" 0
	is "$d: re-apply is ok" "$(jget "$T/out" kernel status)" ok
	is "$d: re-apply changed nothing" "$(jget "$T/out" kernel changed)" ""
	snapshot "$R" | grep -v -e ./run/hpcinit -e ./var/lib/hpcinit >"$T/a2"
	check "$d: re-apply kept every file and mtime" same_file "$T/a2" "$T/a1"
	run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --only kernel --json
	is "$d: check after apply exits 0" "$rc" 0
}

# Debian/Ubuntu: dpkg selections in the root's admindir, read back with dpkg-query.
cycle debian /var/lib/dpkg/status
is "debian: summary" "$(jget "$T/out" kernel summary)" \
	"kernel 5.15.0-1057-azure held, RDMA modules present and loaded"
dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${Package} ${db:Status-Want}\n' | sort >"$T/sel"
printf '%s\n' "bash install" "linux-azure hold" "linux-headers-azure install" "linux-image-5.15.0-1057-azure hold" \
	"linux-image-azure hold" "linux-modules-5.15.0-1057-azure hold" "unattended-upgrades install" >"$T/want"
check "debian: dpkg-query sees exactly the kernel packages held" same_file "$T/sel" "$T/want"
check "debian: unattended-upgrades blacklist" grep -qx '	"linux-azure\$";' "$R/etc/apt/apt.conf.d/51hpcinit-kernel-hold"
check "debian: blacklist option name" grep -qx 'Unattended-Upgrade::Package-Blacklist {' "$R/etc/apt/apt.conf.d/51hpcinit-kernel-hold"

# RHEL family: exclude=kernel* inside [main] of dnf.conf.
cycle rhel /etc/dnf/dnf.conf
printf '%s\n' "[main]" "gpgcheck=1" "installonly_limit=3" "clean_requirements_on_remove=True" "best=True" \
	"skip_if_unavailable=False" "# BEGIN hpcinit fixture" "exclude=kernel*" "# END hpcinit fixture" >"$T/want"
check "rhel: dnf.conf keeps its lines and gains the exclude in [main]" same_file "$R/etc/dnf/dnf.conf" "$T/want"
# A site exclude= line in [main] is not doubled (dnf keeps one): covered means held ...
fixture kernel/rhel "$R"
sed -i 's/^best=True/exclude=shim* kernel* grub2*/' "$R/etc/dnf/dnf.conf"
run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --only kernel --json
is "rhel: a site exclude covering kernel* counts as held" "$rc" 0
# ... an image's exclude= without kernel* is kept as it is, and hpcinit's block uses the
# other key (dnf keeps a key's last value only; exclude and excludepkgs add up) ...
sed -i 's/^exclude=.*/exclude=nvidia*/' "$R/etc/dnf/dnf.conf"
run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --only kernel --json
is "rhel: a foreign exclude= without kernel*: held beside it" "$rc" 0
check "rhel: the image's line is kept" grep -qx 'exclude=nvidia\*' "$R/etc/dnf/dnf.conf"
check "rhel: hpcinit's line is excludepkgs=kernel*" grep -qx 'excludepkgs=kernel\*' "$R/etc/dnf/dnf.conf"
# ... and a [main] that sets both keys already is reported, not edited.
fixture kernel/rhel "$R"
sed -i 's/^best=True/exclude=nvidia*\nexcludepkgs=gdrcopy/' "$R/etc/dnf/dnf.conf"
cp "$R/etc/dnf/dnf.conf" "$T/dnf.before"
run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --only kernel --json
is "rhel: exclude= and excludepkgs= both foreign fails" "$rc" 1
is "rhel: and says what to do" "$(jget "$T/out" kernel summary)" \
	"/etc/dnf/dnf.conf: [main] already sets both exclude= and excludepkgs= without kernel*, and dnf keeps only the last value of a key: add kernel* to one of them (hpcinit does not edit lines it does not own)"
check "rhel: the file is untouched" same_file "$R/etc/dnf/dnf.conf" "$T/dnf.before"

# SLES: a package lock in /etc/zypp/locks, separated from the site's lock by a blank line.
cycle suse /etc/zypp/locks
check "suse: the site lock is kept" grep -qx 'solvable_name: nvidia-gfxG05-kmp-default' "$R/etc/zypp/locks"
check "suse: kernel-azure locked exactly" bash -c "grep -A1 -x 'match_type: exact' '$R/etc/zypp/locks' | grep -q . && grep -qx 'solvable_name: kernel-azure' '$R/etc/zypp/locks'"
check "suse: a blank line ends the site entry before ours" bash -c "awk 'p && /^type: package/ {exit !(blank)} /^# BEGIN hpcinit/ {p=1} p && /^\$/ {blank=1}' '$R/etc/zypp/locks'"
has_detail "suse: the multiversion caveat is reported" "$T/out" kernel 'openSUSE bug 1177262'

# Azure Linux: exact names in tdnf locks.d; a wildcard elsewhere is called out.
cycle azl /etc/tdnf/locks.d/hpcinit-kernel.conf
check "azl: lock file holds the exact name" [ "$(cat "$R/etc/tdnf/locks.d/hpcinit-kernel.conf")" = kernel ]
has_detail "azl: the site's wildcard lock is reported as locking nothing" "$T/out" kernel \
	"^warning: /etc/tdnf/locks.d/site.conf: 'kernel-\*' locks nothing: tdnf locks.d takes exact package names, no wildcards$"

done_testing
