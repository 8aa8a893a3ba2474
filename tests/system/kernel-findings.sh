#!/bin/bash
# The kernel step's findings that tests/system/kernel-checks.sh does not make, each by
# its tag, on the fixture roots with one change: the dpkg status gone or without the
# kernel's package, a kernel pending with no modules listed to check it by, the
# ledger's directory a file, dnf.conf unreadable or with a foreign exclude=, zypper's
# multiversion(kernel), dpkg failing.  The real binary, check or apply --only kernel.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
R=$T/root
# case NAME FIXTURE VERB CHANGE EXIT SEVERITY TAG: the fixture with CHANGE (shell, $R the root)
case_() {
	fixture "kernel/$2" "$R"
	eval "$4"
	run_hpc_stdout "$T/out" "$3" --root "$R" -c "$R/node.yaml" --only kernel --json
	is "$1: exit $5" "$rc" "$5"
	has_tag "$1" "$T/out" kernel "$6" "$7"
}
case_ "no dpkg status" debian check 'rm "$R/var/lib/dpkg/status"' 1 failed kernel.hold.no-dpkg-status
case_ "no package provides the running kernel" debian apply \
	"awk -v RS= -v ORS='\n\n' '/^Package: bash\n/' '$FIX/kernel/debian/var/lib/dpkg/status' >\"\$R/var/lib/dpkg/status\"" \
	1 failed kernel.hold.no-package
case_ "a newer kernel, no modules listed to check it by" debian check \
	'sed -i "s/modules: .*/modules: []/" "$R/node.yaml"; : >"$R/boot/vmlinuz-5.15.0-1061-azure"; mkdir -p "$R/lib/modules/5.15.0-1061-azure/kernel"' \
	3 degraded kernel.pending.unchecked
case_ "the hold ledger cannot be written (/var/lib/hpcinit a file)" debian apply \
	'rm -rf "$R/var/lib/hpcinit"; : >"$R/var/lib/hpcinit"' 3 degraded kernel.hold.ledger
case_ "dnf.conf unreadable (a directory)" rhel apply \
	'rm -f "$R/etc/dnf/dnf.conf"; mkdir "$R/etc/dnf/dnf.conf"' 1 failed kernel.hold.unreadable
case_ "dnf.conf sets exclude= and excludepkgs= without kernel*" rhel apply \
	'printf "[main]\nexclude=foo\nexcludepkgs=bar\n" >"$R/etc/dnf/dnf.conf"' 1 failed kernel.hold.foreign-exclude
check "...and dnf.conf is left as it was" grep -qx 'exclude=foo' "$R/etc/dnf/dnf.conf"
case_ "zypper keeps several kernels (multiversion(kernel))" suse apply \
	'printf "[main]\nmultiversion = provides:multiversion(kernel)\n" >"$R/etc/zypp/zypp.conf"' 0 info kernel.hold.warning
# (not its lock: dpkg waits for a held lock, as apply waits for apt at boot)
case_ "dpkg cannot use its database (/var/lib/dpkg/updates a file)" debian apply \
	'rm -rf "$R/var/lib/dpkg/updates"; : >"$R/var/lib/dpkg/updates"' 1 failed kernel.hold.dpkg-failed
done_testing
