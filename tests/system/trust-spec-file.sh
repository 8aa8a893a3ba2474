#!/bin/bash
# The spec decides what root does to the machine (issue 13): on the real root,
# apply, check, plan and refresh refuse a spec that anyone but root could
# change -- the file, or a directory above it -- with a message, before
# anything runs.  `hpcinit validate` of such a file, and runs on a fake root,
# still work.  Run as root (the case that matters); skipped otherwise.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (files owned by another user)"; exit 77; }
D=$T/spec
mkdir -m 0755 "$D"
printf 'version: 1\ncluster: {name: perms}\n' > "$D/node.yaml"
chmod 0644 "$D/node.yaml"
status() { stat -c '%Y %i' /run/hpcinit/status.json 2>/dev/null || echo none; }
refused() {     # refused NAME WHAT: check, plan and apply all exit 2 with the message
	local cmd
	for cmd in check plan apply refresh; do
		before=$(status)
		run_hpc "$T/$1.$cmd" "$cmd" -c "$D/node.yaml" --only memlock
		check "$1: $cmd exits 2" test "$rc" = 2
		check "$1: $cmd says why" contains "$T/$1.$cmd" "$2; whoever can change the spec decides what root does to this machine: refusing it"
		check "$1: $cmd changed nothing (status.json untouched)" test "$(status)" = "$before"
	done
}

run_hpc "$T/ok" check -c "$D/node.yaml" --only memlock
check "a root-owned 0644 spec in a root-owned directory is used" test "$rc" = 0

chmod 0664 "$D/node.yaml"
refused group "node.yaml: the file is writable by its group (mode 0664)"
chmod 0666 "$D/node.yaml"
refused others "node.yaml: the file is writable by others (mode 0666)"
run_hpc "$T/validate" validate "$D/node.yaml"
check "validate of the same file still works" test "$rc" = 0
mkdir "$T/root"
run_hpc "$T/fake" check --root "$T/root" -c "$D/node.yaml" --only memlock
check "a fake root run is not judged (it changes nothing of the system)" test "$rc" = 0
chmod 0644 "$D/node.yaml"

chown 1000:1000 "$D/node.yaml"
refused owner "node.yaml: the file is owned by uid 1000"
chown 0:0 "$D/node.yaml"

chmod 0777 "$D"
refused dir "node.yaml: its directory $D is writable by others (mode 0777)"
chmod 1777 "$D"
run_hpc "$T/sticky" check -c "$D/node.yaml" --only memlock
check "a sticky directory (like /tmp) is fine: others cannot replace root's file there" test "$rc" = 0
chmod 0755 "$D"

# A root-owned link to a spec in a user's directory: the file that is read counts.
mkdir -m 0755 "$T/user"
cp "$D/node.yaml" "$T/user/node.yaml"
chown 1000:1000 "$T/user"
ln -sf "$T/user/node.yaml" "$D/link.yaml"
run_hpc "$T/link" check -c "$D/link.yaml" --only memlock
check "a link to a spec in a user's directory: exit 2" test "$rc" = 2
check "a link: names the user's directory" contains "$T/link" "its directory $T/user is owned by uid 1000"

# --root: the spec is read from -c as given, not from inside the root (hpcinit(8)):
# a root whose own /etc/hpcinit/node.yaml is broken does not change what runs.
R=$T/root
mkroot "$R"
mkdir -p "$R/etc/hpcinit" "$R$D"
printf 'version: 1\ncluster: {name: BAD NAME}\n' > "$R/etc/hpcinit/node.yaml"
cp "$R/etc/hpcinit/node.yaml" "$R$D/node.yaml"
chmod 0644 "$D/node.yaml"
run_hpc "$T/rootspec" validate --root "$R" "$D/node.yaml"
check "--root: validate reads the spec from the path given, not from inside the root" \
	contains "$T/rootspec" "$D/node.yaml: ok (cluster perms)"
run_hpc "$T/rootplan" plan --root "$R" -c "$D/node.yaml" --only memlock
check "--root: plan runs the spec given (exit $rc)" test "$rc" = 0

done_testing
