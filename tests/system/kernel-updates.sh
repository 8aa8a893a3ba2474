#!/bin/bash
# kernel.updates (issue 35) with the real apt on a fake root: a local repository
# (dpkg-deb, dpkg-scanpackages, apt-ftparchive) offers a newer Ubuntu Azure kernel,
# 5.15.0-1060-azure, once without and once with the out-of-tree module the spec
# needs (lustre).  apt-get update (with the Contents index target apt-file
# configures) fetches it into the root.  check reports the newer kernel and which
# module it lacks; kernel.updates: when_modules keeps the hold while one is
# missing and lets the kernel in (the metapackages hpcinit held go back to
# install, the running kernel stays held) once all exist, which real apt then
# confirms: its simulated upgrade installs the new kernel.  A kernel installed
# but not running is judged by its /lib/modules.  check asks apt again only
# after apt update or dpkg changed something (strace counts apt's runs).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
R=$T/root
REPO=$T/repo
NEW=5.15.0-1060-azure

findings() {
	"$PY" -c 'import json, sys
for m in json.load(open(sys.argv[1]))["modules"]:
    if m["name"] == "kernel":
        for f in m["findings"]:
            if f["tag"].startswith(("kernel.update", "kernel.hold.foreign")): print(f["tag"] + ": " + f["text"])' "$1"
}
# deb NAME VERSION DEPENDS FILE...: a package into the repository (files get a byte each)
deb() {
	local n=$1 v=$2 d=$3 k=$T/pkg
	shift 3
	rm -rf "$k" && mkdir -p "$k/DEBIAN"
	{
		printf 'Package: %s\nVersion: %s\nArchitecture: amd64\nMaintainer: hpcinit tests <root@localhost>\n' "$n" "$v"
		[ -z "$d" ] || printf 'Depends: %s\n' "$d"
		printf 'Description: kernel.updates test package\n'
	} >"$k/DEBIAN/control"
	for f; do mkdir -p "$k/$(dirname "$f")" && echo x >"$k/$f"; done
	rm -f "$REPO/${n}_"*.deb
	dpkg-deb -Zgzip --build "$k" "$REPO/${n}_${v}_amd64.deb" >/dev/null
}
index() {
	(cd "$REPO" && dpkg-scanpackages --multiversion . /dev/null >Packages 2>/dev/null &&
		apt-ftparchive contents . >Contents-amd64 && apt-ftparchive release . >Release)
}
C=Acquire::IndexTargets::deb::Contents-deb
APT=(-o "Dir=$R/" -o "Dir::State::status=$R/var/lib/dpkg/status" -o Debug::NoLocking=true)
# apt update into the root, fetching the Contents index as apt-file's configuration has it do
apt_update() {
	apt-get "${APT[@]}" -o "$C::MetaKey=\$(COMPONENT)/Contents-\$(ARCHITECTURE)" \
		-o "$C::flatMetaKey=Contents-\$(ARCHITECTURE)" -o "$C::ShortDescription=Contents-\$(ARCHITECTURE)" \
		-o "$C::Description=\$(RELEASE)/\$(COMPONENT) Contents" -o "$C::flatDescription=\$(RELEASE) Contents" \
		${1:+-o "$C::DefaultEnabled=false"} -q update >"$T/apt.log" 2>&1
}
MODS=lib/modules/$NEW/kernel/drivers/infiniband
# repo lustre_in_kernel_package: the newer kernel, lustre in linux-modules-<new> (yes) or only
# in a package its upgrade does not pull in (no), like a per-kernel Lustre client
repo() {
	mkdir -p "$REPO"
	deb linux-azure 5.15.0.1060.58 "linux-image-azure (= 5.15.0.1060.58)"
	deb linux-image-azure 5.15.0.1060.58 "linux-image-$NEW"
	deb "linux-image-$NEW" 5.15.0-1060.69 "linux-modules-$NEW"
	if [ "$1" = yes ]; then
		deb "linux-modules-$NEW" 5.15.0-1060.70 "" "$MODS/hw/mlx5/mlx5_ib.ko" "$MODS/core/rdma_ucm.ko" \
			"lib/modules/$NEW/updates/lustre/lustre.ko"
	else
		deb "linux-modules-$NEW" 5.15.0-1060.69 "" "$MODS/hw/mlx5/mlx5_ib.ko" "$MODS/core/rdma_ucm.ko"
	fi
	deb "lustre-client-modules-$NEW" 2.15.4-1 "" "lib/modules/$NEW/updates/lustre/lustre.ko"
	index
}
# root MODE: the Ubuntu fixture, lustre loaded on the running kernel, kernel.updates: MODE (hold: the default, unset)
root() {
	fixture kernel/debian "$R"
	mkdir -p "$R/lib/modules/5.15.0-1057-azure/updates/lustre" "$R/sys/module/lustre" "$R/etc/apt/preferences.d" \
		"$R/var/lib/apt/lists/partial" "$R/var/cache/apt/archives/partial" "$R/etc/apt/sources.list.d"
	: >"$R/lib/modules/5.15.0-1057-azure/updates/lustre/lustre.ko"
	# what the fixture's packages depend on, so that apt sees a consistent system
	for p in linux-headers-5.15.0-1057-azure base-files debianutils python3; do
		printf 'Package: %s\nStatus: install ok installed\nVersion: 99\nArchitecture: amd64\n%s\n%s\n\n' \
			"$p" "Maintainer: hpcinit tests <root@localhost>" "Description: stands in for $p" >>"$R/var/lib/dpkg/status"
	done
	# hold is the default: no updates: key then
	local upd=""
	[ "$1" = hold ] || upd="  updates: $1"$'\n'
	printf 'version: 1\ncluster: {name: fixture}\nkernel:\n  hold: true\n%s  modules: [mlx5_ib, rdma_ucm, lustre]\n' \
		"$upd" >"$R/node.yaml"
	echo "deb [trusted=yes] file:$REPO ./" >"$R/etc/apt/sources.list"
}
kcheck() { run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --only kernel --json; findings "$T/out" >"$T/f"; dbg; }
kapply() { run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --only kernel --json; findings "$T/out" >"$T/f"; dbg; }
dbg() { [ -z "${KG_DEBUG:-}" ] || { cat "$T/f"; grep -o '"kernel.updates[^"]*' "$T/out"; } >&2; }
sel() { dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${db:Status-Want}' "$1"; }
# trace: how many apt programs one check runs
trace() {
	strace -f -qq -e trace=execve -o "$T/strace" "$HPCINIT" check --root "$R" -c "$R/node.yaml" --only kernel \
		>/dev/null 2>&1 || true
	grep -cE 'execve\("[^"]*/(apt-get|apt-cache|apt-helper)"' "$T/strace" || true
}
# What real apt would do now: a simulated upgrade that may install new packages.
apt_sim() { apt-get "${APT[@]}" -s -q upgrade --with-new-pkgs 2>/dev/null | sed -n 's/^Inst \([^ ]*\).*/\1/p' | sort | tr '\n' ' '; }

# --- kernel.updates: hold (the default): reported, held ---
repo no
root hold
apt_update
check "apt update fetched the Contents index" bash -c "ls '$R/var/lib/apt/lists/' | grep -q _Contents-amd64"
kapply
is "hold: apply exits 0" "$rc" 0
check "hold: the newer kernel is reported" grep -qx "kernel.update.available: newer kernel $NEW offered (linux-image-$NEW)" "$T/f"
check "hold: the missing module is named with the package that has it" grep -qx \
	"kernel.update.modules-missing: kernel $NEW lacks lustre (in lustre-client-modules-$NEW, which the upgrade does not install) (not installed: the packages its upgrade installs)" "$T/f"
is "hold: the metapackage is held" "$(sel linux-image-azure) $(sel linux-azure)" "hold hold"
is "hold: real apt installs nothing" "$(apt_sim)" ""
repo yes
apt_update
kcheck
is "hold: with every module there, check is still in sync (exit 0)" "$rc" 0
check "hold: says every module exists, and the kernel stays held" grep -qx \
	"kernel.update.modules-ok: every kernel.modules exists for kernel $NEW (not installed: the packages its upgrade installs); held (kernel.updates: hold)" "$T/f"

# --- kernel.updates: when_modules, a module missing: still held ---
repo no
root when_modules
apt_update
kapply
is "gate, missing: apply exits 0" "$rc" 0
check "gate, missing: names module and version, held" grep -qx \
	"kernel.update.modules-missing: kernel $NEW lacks lustre (in lustre-client-modules-$NEW, which the upgrade does not install) (not installed: the packages its upgrade installs); held" "$T/f"
is "gate, missing: the metapackages stay held" "$(sel linux-image-azure) $(sel linux-azure)" "hold hold"
is "gate, missing: real apt installs nothing" "$(apt_sim)" ""
check "gate, missing: the unattended-upgrades blacklist keeps kernels out" \
	grep -qx '	"linux-image-";' "$R/etc/apt/apt.conf.d/51hpcinit-kernel-hold"

# --- every module in the packages the upgrade installs: let in ---
repo yes
apt_update
snapshot "$R" | grep -v ./run/hpcinit >"$T/s0"
kcheck
is "gate, present: check is drift (exit 1)" "$rc" 1
check "gate, present: check says apply lets it in" grep -qx \
	"kernel.update.let-in: kernel $NEW may come in, but hpcinit's hold on linux-azure linux-image-azure keeps it out (apply releases it)" "$T/f"
snapshot "$R" | grep -v ./run/hpcinit >"$T/s1"
check "gate, present: check changed nothing" same_file "$T/s1" "$T/s0"
kapply
is "gate, present: apply exits 0" "$rc" 0
is "gate, present: apply changed" "$(jget "$T/out" kernel status)" changed
check "gate, present: apply says it let the kernel in" grep -q \
	"^kernel.update.let-in: kernel $NEW let in: linux-azure linux-image-azure back to install" "$T/f"
is "gate, present: the metapackages are released" "$(sel linux-image-azure) $(sel linux-azure)" "install install"
is "gate, present: the running kernel stays held" \
	"$(sel linux-image-5.15.0-1057-azure) $(sel linux-modules-5.15.0-1057-azure)" "hold hold"
is "gate, present: real apt's upgrade now installs the new kernel" "$(apt_sim)" \
	"linux-azure linux-image-$NEW linux-image-azure linux-modules-$NEW "
check "gate, present: the blacklist names the running kernel's packages only" \
	not_contains "$R/etc/apt/apt.conf.d/51hpcinit-kernel-hold" '"linux-image-";'
check "gate, present: the ledger forgot the released metapackages" not_contains "$R/var/lib/hpcinit/kernel-holds" linux-azure
kapply
is "gate, present: re-apply is ok" "$(jget "$T/out" kernel status)" ok
kcheck
is "gate, present: check is then in sync" "$rc" 0

# --- the repository loses the module again: the hold comes back ---
repo no
apt_update
kcheck
is "gate, gone again: check is drift (exit 1)" "$rc" 1
kapply
is "gate, gone again: the metapackages are held again" "$(sel linux-image-azure) $(sel linux-azure)" "hold hold"

# --- no Contents index: unknown, held ---
root when_modules
rm -f "$R/var/lib/apt/lists/"*Contents*
repo yes
apt_update no-contents
check "no Contents index fetched" bash -c "! ls '$R/var/lib/apt/lists/' | grep -q Contents"
kapply
check "no Contents: unknown, held" grep -qx \
	"kernel.update.modules-unknown: kernel $NEW: whether kernel.modules exist for it is unknown (no file lists in the package index); held" "$T/f"
is "no Contents: the metapackages stay held" "$(sel linux-image-azure) $(sel linux-azure)" "hold hold"

# --- apt itself fails (a broken dependency): unknown, held, not asked again at every check ---
cp "$R/var/lib/dpkg/status" "$T/status.good"
printf 'Package: broken\nStatus: install ok installed\nVersion: 1\nArchitecture: amd64\nDepends: not-there\n%s\n\n' \
	"Maintainer: hpcinit tests <root@localhost>"$'\n'"Description: depends on nothing there" >>"$R/var/lib/dpkg/status"
kapply
check "broken: unknown, held" grep -qx "kernel.update.modules-unknown: kernel $NEW: whether kernel.modules exist \
for it is unknown (the package manager failed; asked again after its index or database changes); held" "$T/f"
is "broken: the next check asks apt nothing" "$(trace)" 0
cp "$T/status.good" "$R/var/lib/dpkg/status"

# --- installed, not running: its /lib/modules decides ---
cat >>"$R/var/lib/dpkg/status" <<-EOF
	Package: linux-image-$NEW
	Status: install ok installed
	Version: 5.15.0-1060.69
	Architecture: amd64
	Maintainer: hpcinit tests <root@localhost>
	Description: kernel.updates test package

EOF
mkdir -p "$R/$MODS/hw/mlx5" "$R/$MODS/core"
: >"$R/$MODS/hw/mlx5/mlx5_ib.ko"
: >"$R/$MODS/core/rdma_ucm.ko"
kapply
check "installed: reported as installed, not running" grep -qx \
	"kernel.update.available: newer kernel $NEW offered (linux-image-$NEW), installed, not running" "$T/f"
check "installed: lustre missing from /lib/modules/$NEW" grep -qx \
	"kernel.update.modules-missing: kernel $NEW lacks lustre (installed: /lib/modules, modules.builtin, DKMS); held" "$T/f"
mkdir -p "$R/lib/modules/$NEW/updates/dkms"
: >"$R/lib/modules/$NEW/updates/dkms/lustre.ko.zst"
kapply
check "installed: with lustre there, let in" grep -q "^kernel.update.let-in: kernel $NEW let in: " "$T/f"

# --- cost: check asks apt only after apt update or dpkg changed something ---
trace >/dev/null
is "cache: a second check asks apt nothing" "$(trace)" 0
touch "$R/var/lib/apt/lists"
is "cache: after apt update, apt is asked again (apt-cache show, once)" "$(trace)" 1
is "cache: and then not again" "$(trace)" 0
done_testing
