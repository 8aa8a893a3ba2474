#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Every custom-data file in conf/cloud-init/ is valid for the real
# cloud-init ("cloud-init schema --config-file"), fits Azure's 64 KB
# custom-data limit, runs commands as argv lists, and embeds a node spec
# that "hpcinit validate" accepts.  A broken file must fail the same checks.
set -eu

# ok, bail_out, done_testing
. "$(dirname "$0")/../lib/tap.sh"

: "${HPCINIT:?HPCINIT must name the built binary}" "${TOP_SRCDIR:?}"
command -v cloud-init >/dev/null || bail_out "cloud-init not found (Debian package cloud-init)"
python3 -c 'import yaml' || bail_out "python3-yaml not found"

T=$(mktemp -d /tmp/hpcinit-ci-schema.XXXXXX)
trap 'rm -rf "$T"' EXIT

LIMIT=65536   # Azure custom-data, before base64

# check_file FILE [part]: 0 when FILE passes every check, 1 otherwise (reasons on stderr).
# A part (conf/cloud-init/parts/: more custom-data merged with a whole file) need not run hpcinit.
check_file() {
	local f=$1 size base ok=0
	export CHECK_PART=${2:-}
	base=$(basename "$f" .yaml)
	size=$(stat -c %s "$f")
	if [ "$size" -ge "$LIMIT" ]; then
		echo "$f: $size bytes, custom-data must stay under $LIMIT" >&2
		ok=1
	fi
	if ! cloud-init schema --config-file "$f" > "$T/$base.schema" 2>&1; then
		cat "$T/$base.schema" >&2
		echo "$f: cloud-init schema rejects it" >&2
		ok=1
	fi
	# Commands are argv lists, and the spec files are pulled out for hpcinit.
	if ! python3 - "$f" "$T/$base" <<-'PY' >&2; then
	import sys, yaml
	path, out = sys.argv[1], sys.argv[2]
	with open(path) as fh:
	    text = fh.read()
	if not text.startswith("#cloud-config\n"):
	    sys.exit("%s: first line must be #cloud-config" % path)
	doc = yaml.safe_load(text)
	if not isinstance(doc, dict):
	    sys.exit("%s: not a mapping" % path)
	cmds = doc.get("runcmd") or []
	if not cmds:
	    sys.exit("%s: no runcmd" % path)
	for c in cmds:
	    if not isinstance(c, list) or not all(isinstance(a, str) for a in c):
	        sys.exit("%s: runcmd entry %r is not an argv list of strings" % (path, c))
	import os
	if not os.environ.get("CHECK_PART") and not any(c[0] == "hpcinit" for c in cmds):
	    sys.exit("%s: runcmd never runs hpcinit" % path)
	files = {w.get("path"): w for w in doc.get("write_files") or []}
	spec = files.get("/etc/hpcinit/node.yaml")
	if spec is None:
	    sys.exit(0)
	body = yaml.safe_load(spec["content"])
	secret = (body.get("cluster") or {}).get("secret_file")
	want = "0600" if secret else "0644"
	if spec.get("permissions") != want:
	    sys.exit("%s: node.yaml permissions %r, want %r" % (path, spec.get("permissions"), want))
	if secret:
	    s = files.get(secret)
	    if s is None or s.get("permissions") not in ("0400", "0600"):
	        sys.exit("%s: secret %s must be written with permissions '0400' or '0600'" % (path, secret))
	    # A shipped secret would be everyone's: the placeholder, which hpcinit refuses (< 16 bytes).
	    if len(str(s.get("content", "")).strip()) >= 16:
	        sys.exit("%s: secret %s ships a usable value; ship a placeholder shorter than 16 bytes"
	                 % (path, secret))
	# Safe by default (issue 22): a rendezvous on a share is authenticated, exports squash root.
	disc = body.get("discovery") or {}
	if disc.get("method", "shared") == "shared" and disc.get("dir") and not secret:
	    sys.exit("%s: discovery.dir without cluster.secret_file: anyone root on a client of the "
	             "share could add a node" % path)
	for e in (body.get("nfs") or {}).get("exports") or []:
	    if "no_root_squash" in (e.get("options") or []):
	        sys.exit("%s: export %s with no_root_squash" % (path, e.get("path")))
	# The slurm key (munge) as the secret: root's alone, and only a placeholder
	# hpcinit refuses (munge keys need 32 bytes) is shipped.
	key = (body.get("slurm") or {}).get("key_file")
	if key:
	    k = files.get(key) or {}
	    if k.get("permissions") not in ("0400", "0600"):
	        sys.exit("%s: slurm key %s must be written with permissions '0400' or '0600'" % (path, key))
	    raw = str(k.get("content", "")).strip()
	    if k.get("encoding") in ("b64", "base64"):
	        import base64
	        raw = base64.b64decode(raw)
	    if len(raw) >= 32:
	        sys.exit("%s: slurm key %s ships a usable key; ship a placeholder shorter than 32 bytes"
	                 % (path, key))
	with open(out + ".node.yaml", "w") as fh:
	    fh.write(spec["content"])
	PY
		echo "$f: structure check failed" >&2
		ok=1
	fi
	if [ -e "$T/$base.node.yaml" ] &&
		! "$HPCINIT" validate "$T/$base.node.yaml" > "$T/$base.validate" 2>&1; then
		cat "$T/$base.validate" >&2
		echo "$f: the embedded spec does not validate" >&2
		ok=1
	fi
	return $ok
}

n=0
for f in "$TOP_SRCDIR"/conf/cloud-init/*.yaml; do
	check_file "$f" || bail_out "$f"
	ok "$f ($(stat -c %s "$f") bytes)"
	n=$((n + 1))
done
[ "$n" -ge 5 ] || bail_out "expected at least 5 custom-data files, found $n"
for f in "$TOP_SRCDIR"/conf/cloud-init/parts/*.yaml; do
	check_file "$f" part || bail_out "$f"
	ok "$f, a part ($(stat -c %s "$f") bytes)"
done

# The checks can fail: each broken file below must be rejected.
mkdir "$T/bad"
cp "$TOP_SRCDIR/conf/cloud-init/vmss-compute.yaml" "$T/bad/ok.yaml"
check_file "$T/bad/ok.yaml" 2>/dev/null || bail_out "a copy of a good file was rejected"

# Schema: runcmd must be a list; write_files entries need a path.
sed -e 's/^runcmd:$/runcmd: 5/' -e '/^  - \[hpcinit, apply\]$/d' \
	"$T/bad/ok.yaml" > "$T/bad/schema.yaml"
if cloud-init schema --config-file "$T/bad/schema.yaml" >/dev/null 2>&1; then
	bail_out "cloud-init schema accepted runcmd: 5"
fi
check_file "$T/bad/schema.yaml" 2>/dev/null && bail_out "check_file accepted runcmd: 5"

# Size: pad a valid file past 64 KB with a comment.
{ cat "$T/bad/ok.yaml"; head -c 70000 /dev/zero | tr '\0' '#'; echo; } > "$T/bad/big.yaml"
cloud-init schema --config-file "$T/bad/big.yaml" >/dev/null 2>&1 || bail_out "padding broke the schema check"
check_file "$T/bad/big.yaml" 2>/dev/null && bail_out "a file over 64 KB was accepted"

# A shell string instead of an argv list.
sed 's/^  - \[hpcinit, apply\]$/  - hpcinit apply/' "$T/bad/ok.yaml" > "$T/bad/string.yaml"
check_file "$T/bad/string.yaml" 2>/dev/null && bail_out "a runcmd shell string was accepted"

# An embedded spec hpcinit rejects (unknown key).
sed 's/^        name: glocluster$/        name: glocluster\n        colour: blue/' \
	"$T/bad/ok.yaml" > "$T/bad/spec.yaml"
grep -q 'colour: blue' "$T/bad/spec.yaml" || bail_out "could not build the bad-spec fixture"
check_file "$T/bad/spec.yaml" 2>/dev/null && bail_out "an invalid embedded spec was accepted"

# Unsafe defaults: an export without root squashing, a rendezvous without a secret.
sed 's/root_squash, no_subtree_check/no_root_squash, no_subtree_check/' \
	"$TOP_SRCDIR/conf/cloud-init/vmss-head.yaml" > "$T/bad/nosquash.yaml"
grep -q 'no_root_squash' "$T/bad/nosquash.yaml" || bail_out "could not build the no_root_squash fixture"
check_file "$T/bad/nosquash.yaml" 2>/dev/null && bail_out "an export with no_root_squash was accepted"
grep -v 'secret_file: /etc/hpcinit/cluster.key' "$T/bad/ok.yaml" > "$T/bad/nosecret.yaml"
check_file "$T/bad/nosecret.yaml" 2>/dev/null && bail_out "a shared rendezvous without a secret was accepted"
sed 's/^      CHANGE-ME$/      0123456789abcdef0123456789abcdef/' "$T/bad/ok.yaml" > "$T/bad/secret.yaml"
grep -q '0123456789abcdef' "$T/bad/secret.yaml" || bail_out "could not build the shipped-secret fixture"
check_file "$T/bad/secret.yaml" 2>/dev/null && bail_out "a custom-data shipping a usable secret was accepted"

# The Slurm custom-data installs its packages without the recommended ones
# (61 packages of MySQL, HDF5, X and GLib libraries on the Debian 12 test
# image) and still gets what a node needs.  The real apt resolves each
# file's packages: list with the apt.conf.d files its write_files puts in
# place (write_files runs in cloud-init's init stage, before packages: in
# the final stage; cloud-init's apt-get passes no --install-recommends), on
# an empty dpkg status, from this machine's package lists.
# apt_set FILE DIR: the packages apt would install for FILE, one a line, in DIR/inst.
apt_set() {
	local f=$1 d=$2
	mkdir -p "$d/parts"
	: > "$d/status"
	python3 - "$f" "$d" <<-'PY' || return 1
	import os, sys, yaml
	doc = yaml.safe_load(open(sys.argv[1]))
	d = sys.argv[2]
	for w in doc.get("write_files") or []:
	    p = w.get("path", "")
	    if p.startswith("/etc/apt/apt.conf.d/"):
	        open(os.path.join(d, "parts", os.path.basename(p)), "w").write(w.get("content", ""))
	open(os.path.join(d, "packages"), "w").write("\n".join(doc.get("packages") or []) + "\n")
	PY
	printf 'Dir::Etc::parts "%s/parts";\nDir::State::status "%s/status";\n' "$d" "$d" > "$d/apt.conf"
	# shellcheck disable=SC2046
	APT_CONFIG=$d/apt.conf apt-get -s install $(cat "$d/packages") > "$d/apt.out" 2>&1 ||
		{ cat "$d/apt.out" >&2; echo "$f: apt-get -s install failed (package lists: apt-get update)" >&2; return 1; }
	awk '$1 == "Inst" { print $2 }' "$d/apt.out" | sort > "$d/inst"
}
for role in head compute; do
	f=$TOP_SRCDIR/conf/cloud-init/slurm-$role.yaml
	daemon=slurmd; [ "$role" = head ] && daemon=slurmctld
	apt_set "$f" "$T/apt-$role" || bail_out "$f: apt could not resolve its packages"
	for p in "$daemon" slurm-client munge slurm-wlm-basic-plugins libpmix2 libpmix-dev; do
		grep -qx "$p" "$T/apt-$role/inst" || bail_out "$f: $p would not be installed"
	done
	if grep -qx slurm-wlm-plugins "$T/apt-$role/inst"; then
		bail_out "$f: installs the recommended slurm-wlm-plugins ($(wc -l < "$T/apt-$role/inst") packages)"
	fi
	ok "$f: $(wc -l < "$T/apt-$role/inst") packages on an empty system, no recommended ones"
done
# ... and without its apt.conf.d file the same packages: list pulls them in.
grep -v '^      APT::Install-Recommends "false";$' "$TOP_SRCDIR/conf/cloud-init/slurm-compute.yaml" > "$T/bad/recommends.yaml"
apt_set "$T/bad/recommends.yaml" "$T/apt-bad" || bail_out "apt could not resolve the recommends fixture"
grep -qx slurm-wlm-plugins "$T/apt-bad/inst" ||
	bail_out "without APT::Install-Recommends false, apt did not install slurm-wlm-plugins: the check cannot fail"
ok "without it: $(wc -l < "$T/apt-bad/inst") packages, slurm-wlm-plugins among them"

ok "$n custom-data files valid; 8 broken variants rejected"
done_testing
