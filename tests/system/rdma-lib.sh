# Helpers for the kernel and rdma tests; source after lib.sh.
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3   # pyenv shims cost ~0.4 s a call
# jget FILE MODULE FIELD: that field of MODULE in a --json report (lists: one item a line).
jget() {
	"$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
for m in d["modules"]:
    if m["name"] == sys.argv[2]:
        v = m[sys.argv[3]]
        print("\n".join(v) if isinstance(v, list) else v)' "$@"
}
# is DESC ACTUAL EXPECTED: exact comparison, counted
is() {
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1"; printf '  got:      %s\n  expected: %s\n' "$2" "$3"; fi
}
# has_detail DESC FILE MODULE REGEX: a detail line of MODULE matches the extended regex
has_detail() {
	local d
	d=$(jget "$2" "$3" details)
	if grep -E -- "$4" >/dev/null <<<"$d"; then ok "$1"; else
		not_ok "$1"; echo "  no detail matching /$4/ in:"; sed 's/^/  | /' <<<"$d"; fi
}
# fixture NAME DEST: a private copy of a fixture root (tests write into it).  Paths too
# long for make dist's tar format are listed in the tree's empty-files and made here.
# Symlinks (sysfs's device/driver, a VF's master) are listed in the tree's
# symlinks file ("PATH TARGET") and made here: make dist copies a link as the
# thing it points to.
fixture() { rm -rf "$2"; cp -a "$FIX/$1" "$2"; empty_files "$2"; fixture_links "$2"; }
fixture_links() {
	local p t
	[ -f "$1/symlinks" ] || return 0
	while read -r p t; do
		case $p in /*) mkdir -p "$1$(dirname "$p")" && ln -sfn "$t" "$1$p" ;; esac
	done <"$1/symlinks"
	rm "$1/symlinks"
}
empty_files() {
	local p
	[ -f "$1/empty-files" ] || return 0
	while read -r p; do
		case $p in /*) mkdir -p "$1$(dirname "$p")" && : >"$1$p" ;; esac
	done <"$1/empty-files"
	rm "$1/empty-files"
}

# in_verbs_ns SCRIPT: run SCRIPT (bash) in a private mount namespace whose /dev is an
# overlay with /dev/infiniband/uverbs0 (char 231:192), so the real libibverbs lists a
# fixture device (docs/testing.md "A verbs device without hardware").  Exits 77 (SKIP, never a pass) where that cannot work.
in_verbs_ns() {
	if [ "$(id -u)" != 0 ] || ! unshare --mount --propagation private true 2>/dev/null; then
		echo "SKIP: needs root and mount namespaces (unshare --mount)"; exit 77
	fi
	if ls /sys/class/infiniband 2>/dev/null | grep -q .; then
		echo "SKIP: this machine has real RDMA devices; libibverbs would list them, not the fixture"; exit 77
	fi
	mkdir -p "$T/ov"
	cat >"$T/ns-setup.sh" <<NS
set -e
mount -t tmpfs tmpfs "$T/ov"
mkdir "$T/ov/u" "$T/ov/w"
mount -t overlay overlay -o "lowerdir=/dev,upperdir=$T/ov/u,workdir=$T/ov/w" /dev
mkdir -p /dev/infiniband
mknod /dev/infiniband/uverbs0 c 231 192
NS
	unshare --mount --propagation private bash -c ". '$T/ns-setup.sh' && . '$1'"
}

# need_fixture_ops: exit 77 (SKIP) when the probe helper has no fixture ops (a build
# configured without --enable-test-backends, as production builds are).
need_fixture_ops() {
	local r=$T/fixture-ops-root
	mkdir -p "$r/etc/hpcinit" && : >"$r/etc/hpcinit/fake-rdma"
	if ! "${HPCINIT_LIBEXEC_DIR:-$TOP_BUILDDIR}/hpcinit-rdma-probe" --root "$r" list | grep -q '^backend FAKE'; then
		echo "SKIP: hpcinit-rdma-probe has no fixture ops (configure --enable-test-backends)"; exit 77
	fi
	rm -rf "$r"
}
# has_tag DESC FILE MODULE SEVERITY TAG: MODULE's findings in a --json report include TAG
# with SEVERITY (failed, degraded, ok, changed, skipped): the finding tags index the tests
# (tests/system/tests-findable.sh).
has_tag() {
	local f
	f=$("$PY" -c 'import json, sys
d = json.load(open(sys.argv[1]))
for m in d["modules"]:
    if m["name"] == sys.argv[2]:
        for x in m.get("findings", []):
            print(x["severity"], x["tag"])' "$2" "$3")
	if grep -qxF -- "$4 $5" <<<"$f"; then ok "$1 ($5)"; else
		not_ok "$1: no $4 finding $5"; echo "  findings of $3:"; sed 's/^/  | /' <<<"$f"; fi
}
