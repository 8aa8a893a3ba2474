#!/bin/bash
# The RHEL-family kernel hold against the real dnf: install roots whose os-release says
# AlmaLinux 8, AlmaLinux 9 and RHEL 9, small kernel packages (kernel, kernel-core,
# kernel-modules at two versions) and an unrelated one built by rpmbuild into a local
# createrepo_c repository, the old ones installed by rpm.  The AlmaLinux roots carry the
# image's own exclude= pin (as Azure's AlmaLinux HPC images pin nvidia-fabricmanager and
# gdrcopy).  After hpcinit apply, `dnf --installroot R upgrade` leaves the running kernel's
# packages alone, moves the unrelated package, and the image's pins still hold; check
# agrees; kernel.hold: false takes out only hpcinit's block, and dnf then installs the
# newer kernel.  dnf reads only the root's dnf.conf and repository (--config, reposdir,
# no plugins), without a network where this machine allows it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
. "$(dirname "$0")/rpm-lib.sh"
need_tools dnf rpm rpmbuild createrepo_c

# The packages, once: a repository per release line (EL8, EL9) with two kernels, hello
# and the image's pinned packages at two versions each.
repo() {  # VERSION OLD NEW
	local r v REPO=$T/repo-$1
	for r in "$2" "$3"; do
		mkrpm "$REPO" kernel-core "$1" "$r" "/lib/modules/$1-$r.x86_64/vmlinuz" 'Provides: installonlypkg(kernel)'
		mkrpm "$REPO" kernel-modules "$1" "$r" "" 'Provides: installonlypkg(kernel-module)' \
			'Requires: kernel-core = %{version}-%{release}'
		mkrpm "$REPO" kernel "$1" "$r" "" 'Requires: kernel-core = %{version}-%{release}' \
			'Requires: kernel-modules = %{version}-%{release}'
	done
	for v in 1.0 1.1; do mkrpm "$REPO" hello "$v" 1 ""; done
	for v in 535.183.01 550.54.15; do mkrpm "$REPO" nvidia-fabricmanager "$v" 1 ""; done
	for v in 2.4 2.4.1; do mkrpm "$REPO" gdrcopy "$v" 1 ""; done
	createrepo_c -q "$REPO"
}
repo 4.18.0 553.el8_10 553.16.1.el8_10
repo 5.14.0 427.13.1.el9_4 427.18.1.el9_4

# dnf_root R ARGS...: the real dnf on the root only (its output in $T/dnf.log, shown on failure)
dnf_root() {
	"${NONET[@]}" dnf -y --installroot="$1" --config="$1/etc/dnf/dnf.conf" \
		--setopt=reposdir="$1/etc/yum.repos.d" --releasever="${1##*-}" --noplugins "${@:2}" \
		>"$T/dnf.log" 2>&1 || { sed 's/^/  | /' "$T/dnf.log"; return 1; }
}

# pinned NAME ROOT PIN-LINE: the packages the image's line names stay, the others move
pinned() {
	local p old=(535.183.01-1 2.4-1) new=(550.54.15-1 2.4.1-1) i=0
	for p in nvidia-fabricmanager gdrcopy; do
		case $3 in
		*"$p"*) is "$1: the image's pin holds $p" "$(rpmq "$2" $p)" "${old[$i]}" ;;
		*) is "$1: $p, not pinned, moves" "$(rpmq "$2" $p)" "${new[$i]}" ;;
		esac
		i=$((i + 1))
	done
}

# case_el NAME ID VERSION_ID PRETTY KVER KOLD KNEW IMAGE-PIN-LINE: one root, the whole cycle
case_el() {
	local name=$1 id=$2 vid=$3 pretty=$4 kv=$5 kold=$6 knew=$7 pin=$8 R=$T/root-${3%%.*}
	local run=$kv-$kold.x86_64 p REPO=$T/repo-$kv
	rm -rf "$R"
	os_release "$R" "$id" "$vid" "$pretty" "rhel centos fedora"
	mkdir -p "$R/etc/hpcinit" "$R/etc/dnf" "$R/etc/yum.repos.d"
	echo "$run" >"$R/etc/hpcinit/kernel-release"
	ln -s dnf/dnf.conf "$R/etc/yum.conf"   # as on EL8 and EL9
	printf '[main]\ngpgcheck=1\ninstallonly_limit=3\nclean_requirements_on_remove=True\nbest=True\nskip_if_unavailable=False\n%s' \
		"$pin" >"$R/etc/dnf/dnf.conf"
	cp "$R/etc/dnf/dnf.conf" "$T/dnf.conf.image"
	printf '[local]\nname=local\nbaseurl=file://%s\ngpgcheck=0\nenabled=1\n' "$REPO" >"$R/etc/yum.repos.d/local.repo"
	printf 'version: 1\ncluster: {name: holdtest}\nkernel:\n  hold: true\n' >"$R/node.yaml"
	check "$name: the old packages install with rpm" rpm_root "$R" "$REPO/kernel-core-$kv-$kold.noarch.rpm" \
		"$REPO/kernel-modules-$kv-$kold.noarch.rpm" "$REPO/kernel-$kv-$kold.noarch.rpm" \
		"$REPO/hello-1.0-1.noarch.rpm" "$REPO/nvidia-fabricmanager-535.183.01-1.noarch.rpm" \
		"$REPO/gdrcopy-2.4-1.noarch.rpm"

	run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --json
	is "$name: check before apply: drift (not held)" "$(jget "$T/out" kernel status)" drift
	run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --json
	is "$name: apply exits 0" "$rc" 0
	has_detail "$name: apply says held" "$T/out" kernel '^held: kernel\* excluded in hpcinit.s block in \[main\] of /etc/dnf/dnf.conf'
	run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --json
	is "$name: check after apply exits 0 (no drift)" "$rc" 0
	sed '/^# BEGIN hpcinit holdtest$/,/^# END hpcinit holdtest$/d' "$R/etc/dnf/dnf.conf" >"$T/outside"
	check "$name: every line outside hpcinit's block is the image's, unchanged" same_file "$T/outside" "$T/dnf.conf.image"

	check "$name: dnf upgrade runs" dnf_root "$R" upgrade
	is "$name: held: kernel stays" "$(rpmq "$R" kernel)" "$kv-$kold"
	is "$name: held: kernel-core stays" "$(rpmq "$R" kernel-core)" "$kv-$kold"
	is "$name: held: kernel-modules stays" "$(rpmq "$R" kernel-modules)" "$kv-$kold"
	is "$name: the unrelated package moves" "$(rpmq "$R" hello)" 1.1-1
	pinned "$name" "$R" "$pin"
	run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --json
	is "$name: check after the upgrade exits 0" "$rc" 0

	sed -i 's/hold: true/hold: false/' "$R/node.yaml"
	run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --json
	is "$name: hold: false, check: drift (the block would go)" "$(jget "$T/out" kernel status)" drift
	run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --json
	has_detail "$name: apply releases" "$T/out" kernel '^released \(kernel.hold: false\): hpcinit.s kernel\* exclude block in /etc/dnf/dnf.conf$'
	check "$name: dnf.conf is the image's again, byte for byte" same_file "$R/etc/dnf/dnf.conf" "$T/dnf.conf.image"
	run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --json
	check "$name: check after the release finds no hold drift" not_contains "$T/out" kernel.hold.release
	check "$name: dnf upgrade runs" dnf_root "$R" upgrade
	for p in kernel kernel-core kernel-modules; do
		is "$name: released: $p $kv-$knew installs beside the running one" "$(rpmq "$R" $p)" "$(words "$kv-$kold" "$kv-$knew")"
	done
	pinned "$name: after the release" "$R" "$pin"
	run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --json
	has_detail "$name: check names the newer kernel the next boot takes" "$T/out" kernel "newer kernel $kv-$knew.x86_64 installed"
}

# How dnf reads [main] (what pm_dnf.c relies on), asked of the real dnf: the names it
# would upgrade, with each dnf.conf.
upgrades() {
	"${NONET[@]}" dnf -q --installroot="$1" --config="$1/etc/dnf/dnf.conf" --setopt=reposdir="$1/etc/yum.repos.d" \
		--releasever=9 --noplugins list --upgrades 2>/dev/null | awk 'NR > 1 { sub(/\..*/, "", $1); print $1 }' |
		sort | tr '\n' ' ' | sed 's/ $//'
}
P=$T/probe-9
mkdir -p "$P/etc/dnf" "$P/etc/yum.repos.d"
printf '[local]\nname=local\nbaseurl=file://%s\ngpgcheck=0\n' "$T/repo-5.14.0" >"$P/etc/yum.repos.d/local.repo"
rpm_root "$P" "$T"/repo-5.14.0/{kernel-core,kernel-modules,kernel}-5.14.0-427.13.1.el9_4.noarch.rpm \
	"$T"/repo-5.14.0/{hello-1.0,nvidia-fabricmanager-535.183.01,gdrcopy-2.4}-1.noarch.rpm
dnf_reads() {  # DESCRIPTION EXPECTED DNF.CONF
	printf "$3" >"$P/etc/dnf/dnf.conf"
	is "dnf reads [main]: $1" "$(upgrades "$P")" "$2"
}
ALL="gdrcopy hello kernel kernel-core kernel-modules nvidia-fabricmanager"
dnf_reads "nothing excluded" "$ALL" '[main]\n'
dnf_reads "a second exclude= drops the first" "gdrcopy hello nvidia-fabricmanager" \
	'[main]\nexclude=nvidia-fabricmanager gdrcopy\nexclude=kernel*\n'
dnf_reads "keys are case-insensitive (EXCLUDE= is exclude=)" "gdrcopy hello nvidia-fabricmanager" \
	'[main]\nEXCLUDE=nvidia-fabricmanager gdrcopy\nexclude=kernel*\n'
dnf_reads "exclude= and excludepkgs= add up" "hello" \
	'[main]\nexclude=nvidia-fabricmanager gdrcopy\nexcludepkgs=kernel*\n'
dnf_reads "an empty value clears what came before" "$ALL" '[main]\nexcludepkgs=kernel*\nexclude=\n'
dnf_reads "the keys count in the order of their first line" "gdrcopy hello nvidia-fabricmanager" \
	'[main]\nexclude=nvidia-fabricmanager gdrcopy\nexcludepkgs=kernel*\nexclude=\n'
dnf_reads "an indented line continues a value" "hello" \
	'[main]\nexclude=nvidia-fabricmanager gdrcopy\n  kernel*\n'
printf '[main]\nexcludepkgs=kernel*\n' >"$P/etc/yum.repos.d/zz-main.repo"
mkdir -p "$P/etc/dnf/dnf.conf.d"
printf '[main]\nexcludepkgs=kernel*\n' >"$P/etc/dnf/dnf.conf.d/hold.conf"
dnf_reads "no drop-in: a [main] in a .repo file or dnf.conf.d/ counts for nothing" "$ALL" '[main]\n'

PIN='exclude=nvidia-fabricmanager gdrcopy
'
case_el alma8 almalinux 8.10 "AlmaLinux 8.10 (Cerulean Leopard)" 4.18.0 553.el8_10 553.16.1.el8_10 "$PIN"
case_el alma9 almalinux 9.4 "AlmaLinux 9.4 (Seafoam Ocelot)" 5.14.0 427.13.1.el9_4 427.18.1.el9_4 "$PIN"
# RHEL 9 with a site's excludepkgs= line: hpcinit's block takes exclude=.
case_el rhel9 rhel 9.4 "Red Hat Enterprise Linux 9.4 (Plow)" 5.14.0 427.13.1.el9_4 427.18.1.el9_4 'excludepkgs=gdrcopy
'
done_testing
