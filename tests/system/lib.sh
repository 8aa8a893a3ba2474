# Shared helpers for shell tests.  Source it; it sets -eu and a cleanup trap.
# HPCINIT (binary), TOP_SRCDIR and TOP_BUILDDIR come from `make check`;
# HPCINIT_WRAPPER (e.g. "valgrind -q --error-exitcode=99") wraps every run.
set -eu
: "${TOP_SRCDIR:=$(cd "$(dirname "$0")/../.." && pwd)}"
: "${TOP_BUILDDIR:=$TOP_SRCDIR}"
: "${HPCINIT:=$TOP_BUILDDIR/hpcinit}"
FIX="$TOP_SRCDIR/tests/fixtures"
T=$(mktemp -d /tmp/hpcinit-test.XXXXXX)
_cleanups=""
cleanup_add() { _cleanups="$1; $_cleanups"; }
_cleanup() { eval "$_cleanups"; rm -rf "$T"; }
trap _cleanup EXIT
trap 'exit 1' INT TERM

# ok, not_ok, check, done_testing, contains, not_contains
. "$TOP_SRCDIR/tests/lib/tap.sh"

hpcinit() { ${HPCINIT_WRAPPER:-} "$HPCINIT" "$@"; }
# run_hpc OUTFILE ARGS...: run, keep stdout+stderr in OUTFILE, return the exit code in $rc
run_hpc() { local out=$1; shift; rc=0; hpcinit "$@" >"$out" 2>&1 || rc=$?; }
# run_hpc_stdout OUTFILE ARGS...: the same, stdout only (JSON), stderr to OUTFILE.err
run_hpc_stdout() { local out=$1; shift; rc=0; hpcinit "$@" >"$out" 2>"$out.err" || rc=$?; }
same_file() { cmp -s "$1" "$2" || { echo "  $1 differs from $2:"; diff -u "$2" "$1" | head -20; return 1; }; }

# A fake root: passwd, PAM stacks like Debian's (pam_limits via common-session).
mkroot() {
	local r=$1
	mkdir -p "$r/etc/pam.d" "$r/etc/security/limits.d" "$r/run" "$r/var/lib" "$r/proc"
	printf 'root:x:0:0:root:/root:/bin/bash\nazureuser:x:1000:1000::/home/azureuser:/bin/bash\n' >"$r/etc/passwd"
	printf 'session required pam_unix.so\nsession required pam_limits.so\n' >"$r/etc/pam.d/common-session"
	printf '@include common-auth\n@include common-session\n' >"$r/etc/pam.d/sshd"
	printf 'session include common-session\n' >"$r/etc/pam.d/login"
}

# snapshot DIR: one line per entry with type, mode, owner, size, mtime (ns) and content hash.
snapshot() {
	(cd "$1" && find . -printf '%y %m %u:%g %s %T@ %p\n' | sort -k6 | while read -r y m o s t p; do
		h=-; [ "$y" = f ] && h=$(sha1sum <"$p" | cut -c1-12)
		echo "$y $m $o $s $t $h $p"
	done)
}
