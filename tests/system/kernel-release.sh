#!/bin/bash
# kernel.hold: false releases the holds hpcinit made, in all four families, and
# says so; holds made by others are left alone and named.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
R=$T/root
findings() {
	"$PY" -c 'import json, sys
for m in json.load(open(sys.argv[1]))["modules"]:
    if m["name"] == "kernel":
        for f in m["findings"]:
            if f["tag"].startswith("kernel.hold"): print(f["tag"] + ": " + f["text"])' "$1"
}
# release DISTRO: hold, then hold: false; check shows the release as drift, apply releases.
release() {
	local d=$1
	run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --only kernel --json
	is "$d: held first (exit 0)" "$rc" 0
	sed -i 's/hold: true/hold: false/' "$R/node.yaml"
	snapshot "$R" | grep -v -e ./run/hpcinit >"$T/s0"
	run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --only kernel --json
	is "$d: check with hold: false is drift (exit 1)" "$rc" 1
	check "$d: check names what apply would release" bash -c 'grep -q "^kernel.hold.release: " <<<"$1"' _ "$(findings "$T/out")"
	snapshot "$R" | grep -v -e ./run/hpcinit >"$T/s1"
	check "$d: check changed nothing" same_file "$T/s1" "$T/s0"
	run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --only kernel --json
	is "$d: apply exits 0" "$rc" 0
	is "$d: apply changed" "$(jget "$T/out" kernel status)" changed
	findings "$T/out" >"$T/f"
	check "$d: apply says it released" grep -q "^kernel.hold.released: released (kernel.hold: false): " "$T/f"
	check "$d: summary says released" bash -c 'grep -q "^released (kernel.hold: false): " <<<"$1"' _ "$(jget "$T/out" kernel summary)"
	run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --only kernel --json
	is "$d: re-apply is ok" "$(jget "$T/out" kernel status)" ok
	findings "$T/out" >"$T/f2"
}

# Debian: the site held linux-image-azure itself before hpcinit ran.
fixture kernel/debian "$R"
dpkg --admindir="$R/var/lib/dpkg" --set-selections <<<"linux-image-azure hold"
release debian
sel() { dpkg-query --admindir="$R/var/lib/dpkg" -W -f='${db:Status-Want}' "$1"; }
is "debian: hpcinit's hold on the image is gone" "$(sel linux-image-5.15.0-1057-azure)" install
is "debian: and on the metapackage it held" "$(sel linux-azure)" install
is "debian: the site's hold stays" "$(sel linux-image-azure)" hold
check "debian: the site's hold is named" grep -qx "kernel.hold.foreign: left alone: linux-image-azure is on hold (not by hpcinit)" "$T/f"
check "debian: the unattended-upgrades blacklist is gone" [ ! -e "$R/etc/apt/apt.conf.d/51hpcinit-kernel-hold" ]
check "debian: the ledger is gone" [ ! -e "$R/var/lib/hpcinit/kernel-holds" ]
check "debian: re-apply still names the site's hold" grep -q "kernel.hold.foreign: left alone: linux-image-azure" "$T/f2"

# RHEL: our block goes; the site's own exclude line in /etc/yum.conf is left alone.
fixture kernel/rhel "$R"
printf '[main]\nexclude=kernel* shim*\n' >"$R/etc/yum.conf"
release rhel
check "rhel: no hpcinit block left in dnf.conf" not_contains "$R/etc/dnf/dnf.conf" "# BEGIN hpcinit"
check "rhel: no exclude left in dnf.conf" not_contains "$R/etc/dnf/dnf.conf" "exclude=kernel*"
check "rhel: yum.conf untouched" grep -qx 'exclude=kernel\* shim\*' "$R/etc/yum.conf"
check "rhel: the site's exclude is named" grep -qx "kernel.hold.foreign: left alone: /etc/yum.conf \[main\] excludes kernel\* shim\* (not hpcinit's)" "$T/f"

# SLES: our lock block goes; the site's lock and a site lock on the kernel stay.
fixture kernel/suse "$R"
release suse
check "suse: no hpcinit block left" not_contains "$R/etc/zypp/locks" "# BEGIN hpcinit"
check "suse: the site's lock is kept" grep -qx 'solvable_name: nvidia-gfxG05-kmp-default' "$R/etc/zypp/locks"
fixture kernel/suse "$R"
printf '\ntype: package\nmatch_type: glob\nsolvable_name: kernel-*\n' >>"$R/etc/zypp/locks"
sed -i 's/hold: true/hold: false/' "$R/node.yaml"
run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --only kernel --json
findings "$T/out" >"$T/f"
check "suse: a site lock on kernel-* is named" grep -q "kernel.hold.foreign: left alone: .*locks kernel-azure (not hpcinit's)" "$T/f"
check "suse: and kept" grep -qx 'solvable_name: kernel-\*' "$R/etc/zypp/locks"

# Azure Linux: our lock file goes; a site lock file naming kernel stays and is named.
fixture kernel/azl "$R"
release azl
check "azl: hpcinit's lock file is gone" [ ! -e "$R/etc/tdnf/locks.d/hpcinit-kernel.conf" ]
fixture kernel/azl "$R"
printf 'kernel\n' >"$R/etc/tdnf/locks.d/site-kernel.conf"
run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --only kernel --json
sed -i 's/hold: true/hold: false/' "$R/node.yaml"
run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --only kernel --json
findings "$T/out" >"$T/f"
check "azl: a site lock file is named" grep -qx "kernel.hold.foreign: left alone: /etc/tdnf/locks.d/site-kernel.conf locks kernel (not hpcinit's)" "$T/f"
check "azl: and kept" [ -e "$R/etc/tdnf/locks.d/site-kernel.conf" ]
done_testing
