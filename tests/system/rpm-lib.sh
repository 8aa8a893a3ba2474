# Small rpms, a local repository and install roots for the real RPM package
# managers (rpm, dnf, zypper): source it after lib.sh.  The packages are
# stand-ins built by rpmbuild (empty, noarch); the resolvers are the real ones.

# need_tools TOOL...: SKIP (exit 77) when one is missing (tools/setup.sh installs them)
need_tools() {
	local t
	for t in "$@"; do
		command -v "$t" >/dev/null || { echo "SKIP: $t is not installed (tools/setup.sh installs it)"; exit 77; }
	done
}

# NONET: a prefix that runs a command without any network (a fresh network
# namespace) where this machine allows it; the repositories are file:// anyway.
NONET=()
if [ "$(id -u)" = 0 ] && unshare -n true 2>/dev/null; then NONET=(unshare -n); fi

# mkrpm REPO NAME VERSION RELEASE FILE [SPEC LINE...]: build NAME-VERSION-RELEASE.noarch.rpm
# into REPO; FILE ("" for none) is an empty file the package owns.
mkrpm() {
	local repo=$1 name=$2 ver=$3 rel=$4 file=$5 top=$T/rpmbuild spec
	shift 5
	mkdir -p "$top/SPECS" "$repo"
	spec=$top/SPECS/$name-$ver-$rel.spec
	{
		printf 'Name: %s\nVersion: %s\nRelease: %s\nSummary: stand-in %s\nLicense: MIT\nBuildArch: noarch\n' \
			"$name" "$ver" "$rel" "$name"
		[ $# -eq 0 ] || printf '%s\n' "$@"
		printf '%%description\nA stand-in package built by an hpcinit test.\n'
		[ -z "$file" ] || printf '%%install\nmkdir -p %%{buildroot}%s\ntouch %%{buildroot}%s\n' "${file%/*}" "$file"
		printf '%%files\n%s\n' "$file"
	} >"$spec"
	rpmbuild -bb --quiet --define "_topdir $top" --define "_rpmdir $repo" \
		--define '_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm' "$spec" >"$top/log" 2>&1 ||
		{ cat "$top/log"; return 1; }
}

# rpm_root ROOT RPM...: a fresh rpm database in ROOT with these packages installed by rpm
# (Debian's rpm says "use Alien instead" on every install: dropped)
rpm_root() {
	local r=$1
	shift
	rpm --root "$r" --initdb
	rpm --root "$r" -i "$@" 2>&1 | { grep -v '^rpm: ' || true; }
	[ "$(rpm --root "$r" -qa | wc -l)" -eq $# ]
}

# rpmq ROOT NAME: the installed versions of NAME, one line, sorted ("-" when none)
rpmq() {
	local v
	v=$(rpm --root "$1" -q --qf '%{VERSION}-%{RELEASE}\n' "$2" 2>/dev/null | sort | tr '\n' ' ') || v=""
	echo "${v% }" | sed 's/^$/-/; s/.*is not installed.*/-/'
}

# words W...: the words sorted as rpmq sorts them, on one line
words() { printf '%s\n' "$@" | sort | tr '\n' ' ' | sed 's/ $//'; }

# os_release ROOT ID VERSION_ID PRETTY [ID_LIKE]
os_release() {
	mkdir -p "$1/etc"
	printf 'NAME="%s"\nID="%s"\nVERSION_ID="%s"\nPRETTY_NAME="%s"\n' "${4%% *}" "$2" "$3" "$4" >"$1/etc/os-release"
	[ -z "${5:-}" ] || printf 'ID_LIKE="%s"\n' "$5" >>"$1/etc/os-release"
}
