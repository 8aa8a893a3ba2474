#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Where the agent finds its helper programs (agent/base/proc.h, proc_helper_path):
# HPCINIT_LIBEXEC_DIR (an override), else the binary's own directory when
# that is its build tree (configure's config.status beside it; the marker, the
# binary, the directory and every directory above it owned by root or the
# running user, not writable by group or others), else the configured libexec
# directory.  Root started from a build in a user's folder (7) never runs that
# user's helper (issue 33: shown with hpcinit watch).  Key generation for a user
# (the ssh step) runs hpcinit-ssh: the real binary, copied into directories
# that hold a stand-in hpcinit-ssh (a script recording that it ran), shows
# which one it ran.  The build tree's own binary, run without the variable,
# generates a real key with the hpcinit-ssh built beside it (the README demo
# failed there: issue 22).
. "$(dirname "$0")/lib.sh"
unset HPCINIT_LIBEXEC_DIR
[ "$(id -u)" = 0 ] || { echo "helper-path: needs root (chown)" >&2; exit 77; }
chmod 0755 "$T"
R=$T/root
mkdir -p "$R/etc" "$R/root"
printf 'root:x:0:0:root:/root:/bin/bash\n' > "$R/etc/passwd"
cat > "$T/n.yaml" <<EOF
version: 1
cluster: {name: t, network: 10.0.0.0/24}
discovery: {method: static, hosts: [n1]}
ssh: {users: [root]}
EOF

# stand_in DIR: a hpcinit-ssh in DIR that records its directory in $T/ran and fails
stand_in() {
	mkdir -p "$1"
	printf '#!/bin/sh\necho "%s" >> "%s/ran"\nexit 1\n' "$1" "$T" > "$1/hpcinit-ssh"
	chmod 0755 "$1/hpcinit-ssh"
}
# copy_bin DIR: the real binary, copied into DIR
copy_bin() { stand_in "$1"; cp "$HPCINIT" "$1/hpcinit"; chmod 0755 "$1"; }
# apply_with BIN OUT [VAR=VALUE...]: the ssh step from BIN on a fresh ~/.ssh
apply_with() {
	local bin=$1 out=$2; shift 2
	rm -rf "$R/root/.ssh" "$T/ran"
	rc=0
	env "$@" HPCINIT_ADDRESS=10.0.0.5 ${HPCINIT_WRAPPER:-} "$bin" apply --only discovery,ssh \
		--root "$R" -c "$T/n.yaml" --hostname n1 > "$out" 2>&1 || rc=$?
}
ran() { [ -f "$T/ran" ] && [ "$(sort -u "$T/ran")" = "$1" ] || { echo "  ran: $(cat "$T/ran" 2>/dev/null || echo none), wanted $1"; return 1; }; }
not_ran() { [ ! -f "$T/ran" ] || { echo "  a stand-in ran: $(cat "$T/ran")"; return 1; }; }

# 1. the build tree's binary, no variable: the real helper beside it
[ -f "$(dirname "$HPCINIT")/config.status" ] || { echo "helper-path: $HPCINIT is not in a build tree" >&2; exit 1; }
apply_with "$HPCINIT" "$T/1.out"
check "build tree binary: ssh step ran (exit $rc)" [ "$rc" = 0 ]
check "build tree binary: hpcinit-ssh beside it generated the key" \
	grep -q '^ssh-ed25519 ' "$R/root/.ssh/id_ed25519.pub"
check "build tree binary: no 'cannot run'" not_contains "$T/1.out" "cannot run"

# 2. no marker: an installed binary; the configured directory only
copy_bin "$T/inst"
apply_with "$T/inst/hpcinit" "$T/2.out"
check "no config.status: the helper beside it is not run" not_ran
check "no config.status: the configured libexec directory is used" \
	bash -c "grep -q 'cannot run .*/libexec/hpcinit/hpcinit-ssh' '$T/2.out' || grep -q '^ssh-ed25519 ' '$R/root/.ssh/id_ed25519.pub'"
check "no config.status: no warning" not_contains "$T/2.out" "looks like a build tree"

# 3. a build tree (config.status, mode 0755, root's): its helper
copy_bin "$T/bt"
: > "$T/bt/config.status"
apply_with "$T/bt/hpcinit" "$T/3.out"
check "build tree: the helper beside the binary is run" ran "$T/bt"

# 4. the same, writable by group: not trusted, said why
chmod 0775 "$T/bt"
apply_with "$T/bt/hpcinit" "$T/4.out"
check "group-writable build tree: its helper is not run" not_ran
check "group-writable build tree: the warning says why" contains "$T/4.out" "directory $T/bt is writable by group or others (mode 0775)"
chmod 0757 "$T/bt"
apply_with "$T/bt/hpcinit" "$T/4b.out"
check "other-writable build tree: its helper is not run" not_ran
chmod 0755 "$T/bt"

# 5. the marker a symlink, or owned by another user; the directory another user's
ln -s /dev/null "$T/bt/config.status.l"
mv "$T/bt/config.status.l" "$T/bt/config.status"
apply_with "$T/bt/hpcinit" "$T/5.out"
check "config.status a symlink: not trusted" not_ran
check "config.status a symlink: said why" contains "$T/5.out" "config.status is not a regular file"
rm "$T/bt/config.status"
: > "$T/bt/config.status"
chown 4321 "$T/bt/config.status"
apply_with "$T/bt/hpcinit" "$T/5b.out"
check "config.status another user's: not trusted" not_ran
chown 0 "$T/bt/config.status"
chown 4321 "$T/bt"
apply_with "$T/bt/hpcinit" "$T/5c.out"
check "directory another user's (binary root's): not trusted" not_ran
check "directory another user's: said why" contains "$T/5c.out" "directory $T/bt is owned by uid 4321, neither root nor this process's user (uid 0)"
chown 0 "$T/bt"

# 6. HPCINIT_LIBEXEC_DIR overrides even a trusted build tree; a relative value is ignored
stand_in "$T/over"
apply_with "$T/bt/hpcinit" "$T/6.out" HPCINIT_LIBEXEC_DIR="$T/over"
check "HPCINIT_LIBEXEC_DIR: its helper is run" ran "$T/over"
(cd "$T" && apply_with "$T/bt/hpcinit" "$T/6b.out" HPCINIT_LIBEXEC_DIR=over && ran "$T/bt") &&
	ok "relative HPCINIT_LIBEXEC_DIR: ignored, the build tree's helper is run" ||
	not_ok "relative HPCINIT_LIBEXEC_DIR: ignored, the build tree's helper is run"
# 7. A build tree a non-root user controls, run by root: never trusted.
# 7a: the whole build (directory, binary, marker) nobody's, as a build in a
# user's home is; 7b: root's own build tree inside a directory that user owns
# (they could rename it away and put another in its place); 7c: a directory
# above that is group-writable.  The configured libexec directory is used.
nob=$(id -u nobody)
mkdir -p "$T/home/u"
copy_bin "$T/home/u/bt"
: > "$T/home/u/bt/config.status"
chown -R "$nob" "$T/home/u"
apply_with "$T/home/u/bt/hpcinit" "$T/7a.out"
check "root, a build tree nobody owns (binary included): its helper is not run" not_ran
check "... said why" contains "$T/7a.out" "owned by uid $nob, neither root nor this process's user (uid 0)"
check "... the configured libexec directory is named" contains "$T/7a.out" "helpers come from"
chown -R 0 "$T/home/u/bt"
apply_with "$T/home/u/bt/hpcinit" "$T/7b.out"
check "root, root's build tree in a directory nobody owns: its helper is not run" not_ran
check "... said why (the directory above)" contains "$T/7b.out" "directory $T/home/u is owned by uid $nob"
chown 0 "$T/home/u"
chmod 0775 "$T/home"
apply_with "$T/home/u/bt/hpcinit" "$T/7c.out"
check "root, a group-writable directory above the build tree: its helper is not run" not_ran
check "... said why" contains "$T/7c.out" "directory $T/home is writable by group or others (mode 0775)"
chmod 0755 "$T/home"
apply_with "$T/home/u/bt/hpcinit" "$T/7d.out"
check "root's build tree, every directory up to / root's: its helper is run" ran "$T/home/u/bt"
done_testing
