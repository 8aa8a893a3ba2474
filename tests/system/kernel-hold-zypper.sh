#!/bin/bash
# The SLES kernel hold against the real zypper: an install root whose os-release says
# SLES 15 SP5, zypp.conf installing kernels as multiversion (as SLES ships it), the
# image's own lock on gdrcopy, stand-in kernel-default packages at two versions and an
# unrelated one built by rpmbuild into a local createrepo_c repository, the old ones
# installed by rpm.  After hpcinit apply, `zypper --root R update` and `zypper --root R dup`
# leave the running kernel alone (multiversion or not: the lock holds), move the
# unrelated package and keep the image's lock; check agrees; kernel.hold: false takes out
# only hpcinit's lock block, and zypper then installs the newer kernel beside the old.
# zypper reads only the root's repositories and config and logs into the test's folder
# (ZYPP_CONF, --config, ZYPP_LOGFILE), without a
# network where this machine allows it.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
. "$(dirname "$0")/rpm-lib.sh"
need_tools zypper rpm rpmbuild createrepo_c
REPO=$T/repo R=$T/root
KV=5.14.21 KOLD=150500.55.39.1 KNEW=150500.55.44.1
RUN=$KV-${KOLD%.1}-default

for r in $KOLD $KNEW; do
	mkrpm "$REPO" kernel-default "$KV" "$r" "/lib/modules/$KV-${r%.1}-default/vmlinuz" \
		'Provides: multiversion(kernel)'
done
for v in 1.0 1.1; do mkrpm "$REPO" hello "$v" 1 ""; done
for v in 2.4 2.4.1; do mkrpm "$REPO" gdrcopy "$v" 1 ""; done
createrepo_c -q "$REPO"

os_release "$R" sles 15.5 "SUSE Linux Enterprise Server 15 SP5" suse
mkdir -p "$R/etc/hpcinit" "$R/etc/zypp/repos.d"
echo "$RUN" >"$R/etc/hpcinit/kernel-release"
printf '[main]\nmultiversion = provides:multiversion(kernel)\nmultiversion.kernels = latest,latest-1,running\n' \
	>"$R/etc/zypp/zypp.conf"
: >"$R/etc/zypp/zypper.conf"
printf '[local]\nname=local\nenabled=1\nautorefresh=1\nbaseurl=file://%s\ntype=rpm-md\ngpgcheck=0\n' "$REPO" \
	>"$R/etc/zypp/repos.d/local.repo"
# The image's lock (what `zypper addlock gdrcopy` writes).
printf 'type: package\nmatch_type: glob\ncase_sensitive: on\nsolvable_name: gdrcopy\n\n' >"$R/etc/zypp/locks"
cp "$R/etc/zypp/locks" "$T/locks.image"
printf 'version: 1\ncluster: {name: holdtest}\nkernel:\n  hold: true\n' >"$R/node.yaml"
check "the old packages install with rpm" rpm_root "$R" "$REPO/kernel-default-$KV-$KOLD.noarch.rpm" \
	"$REPO/hello-1.0-1.noarch.rpm" "$REPO/gdrcopy-2.4-1.noarch.rpm"
cp -a "$R" "$T/root.fresh"

# zyp ARGS...: the real zypper on the root only (its output in $T/zypper.log, shown on failure)
zyp() {
	local rc=0
	ZYPP_CONF=$R/etc/zypp/zypp.conf ZYPP_LOGFILE=$T/zypp.log "${NONET[@]}" zypper --root "$R" --config "$R/etc/zypp/zypper.conf" \
		--non-interactive --no-gpg-checks "$@" >"$T/zypper.log" 2>&1 || rc=$?
	[ "$rc" = 0 ] || [ -n "${ZYP_MAY_FAIL:-}" ] || sed 's/^/  | /' "$T/zypper.log"
	return "$rc"
}

run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --json
is "check before apply: drift (not held)" "$(jget "$T/out" kernel status)" drift
run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --json
is "apply exits 0" "$rc" 0
has_detail "apply says held" "$T/out" kernel '^held: lock for kernel-default added to /etc/zypp/locks$'
run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --json
is "check after apply exits 0 (no drift)" "$rc" 0
check "zypper locks lists hpcinit's lock" bash -c "$(declare -p NONET R T); $(declare -f zyp); zyp locks && grep -q 'kernel-default' \"\$T/zypper.log\""

for cmd in update dup; do
	check "zypper $cmd runs" zyp "$cmd"
	is "zypper $cmd: held: kernel-default stays (multiversion)" "$(rpmq "$R" kernel-default)" "$KV-$KOLD"
	is "zypper $cmd: the unrelated package moves" "$(rpmq "$R" hello)" 1.1-1
	is "zypper $cmd: the image's lock still holds gdrcopy" "$(rpmq "$R" gdrcopy)" 2.4-1
	run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --json
	is "zypper $cmd: check after it exits 0" "$rc" 0
	[ "$cmd" = dup ] || { rm -rf "$R"; cp -a "$T/root.fresh" "$R"; hpcinit apply --root "$R" -c "$R/node.yaml" >/dev/null; }
done
# Asking for the kernel by name is refused by the solver; `install --force` is not
# (what zypper really does: the lock is no hold against --force).
rc=0; ZYP_MAY_FAIL=1 zyp install "kernel-default-$KV-$KNEW" || rc=$?
is "zypper install of the newer kernel by name: refused (4: solver problem)" "$rc" 4
check "  and the solver names the lock" contains "$T/zypper.log" "remove lock to allow installation of kernel-default-$KV-$KNEW"

sed -i 's/hold: true/hold: false/' "$R/node.yaml"
run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --json
has_detail "hold: false: apply releases" "$T/out" kernel "^released \(kernel.hold: false\): hpcinit's lock block in /etc/zypp/locks$"
check "the locks file is the image's again, byte for byte" same_file "$R/etc/zypp/locks" "$T/locks.image"
run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --json
check "check after the release finds no hold drift" not_contains "$T/out" kernel.hold.release
check "zypper update runs" zyp update
is "released: the newer kernel-default installs beside the running one" "$(rpmq "$R" kernel-default)" \
	"$(words "$KV-$KOLD" "$KV-$KNEW")"
is "the image's lock holds after the release" "$(rpmq "$R" gdrcopy)" 2.4-1
run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --json
has_detail "check names the newer kernel the next boot takes" "$T/out" kernel "newer kernel $KV-${KNEW%.1}-default installed"

# install --force: with hpcinit's lock back, zypper still installs the kernel beside it.
rm -rf "$R"; cp -a "$T/root.fresh" "$R"
run_hpc_stdout "$T/out" apply --root "$R" -c "$R/node.yaml" --json
is "a fresh root: apply holds again" "$rc" 0
has_detail "  and warns about install --force on multiversion kernels" "$T/out" kernel \
	'^warning: /etc/zypp/zypp.conf installs kernels as multiversion: zypper install --force puts a new kernel-default beside the locked one'
check "zypper install --force kernel-default runs" zyp install --force kernel-default
is "known limit: install --force installs a kernel beside the lock" "$(rpmq "$R" kernel-default)" \
	"$(words "$KV-$KOLD" "$KV-$KNEW")"
done_testing
