#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Every example spec shipped in conf/ passes "hpcinit validate"; a spec with
# a mistake fails it with exit 2 and the mistake's line and column.
set -eu

# ok, bail_out, done_testing
. "$(dirname "$0")/../lib/tap.sh"
: "${HPCINIT:?}" "${TOP_SRCDIR:?}"

T=$(mktemp -d /tmp/hpcinit-conf.XXXXXX)
trap 'rm -rf "$T"' EXIT

n=0
for f in "$TOP_SRCDIR"/conf/*.yaml; do
	rc=0
	"$HPCINIT" validate "$f" > "$T/out" 2>&1 || rc=$?
	[ "$rc" -eq 0 ] || { cat "$T/out"; bail_out "$f: hpcinit validate exited $rc"; }
	ok "$(cat "$T/out")"
	n=$((n + 1))
done
[ "$n" -ge 5 ] || bail_out "expected at least 5 example specs, found $n"

# Safe by default (what people copy): every shared rendezvous has a cluster secret,
# and no export lets a client's root write as root.
unsafe() {
	python3 - "$@" <<-'PY'
	import sys, yaml
	bad = 0
	for path in sys.argv[1:]:
	    body = yaml.safe_load(open(path)) or {}
	    disc = body.get("discovery") or {}
	    if disc.get("method", "shared") == "shared" and disc.get("dir") and \
	            not (body.get("cluster") or {}).get("secret_file"):
	        print("%s: shared rendezvous without cluster.secret_file" % path)
	        bad = 1
	    for e in (body.get("nfs") or {}).get("exports") or []:
	        if "no_root_squash" in (e.get("options") or []):
	            print("%s: export %s with no_root_squash" % (path, e.get("path")))
	            bad = 1
	sys.exit(bad)
	PY
}
unsafe "$TOP_SRCDIR"/conf/*.yaml || bail_out "an example spec is not safe by default"
sed 's/root_squash, no_subtree_check/no_root_squash, no_subtree_check/' "$TOP_SRCDIR/conf/head.yaml" > "$T/nosquash.yaml"
unsafe "$T/nosquash.yaml" >/dev/null && bail_out "the check accepted an export with no_root_squash"
grep -v 'secret_file:' "$TOP_SRCDIR/conf/compute.yaml" > "$T/nosecret.yaml"
unsafe "$T/nosecret.yaml" >/dev/null && bail_out "the check accepted a shared rendezvous without a secret"
ok "every example sets a cluster secret for its shared rendezvous and squashes root on its exports"

# full.yaml sets every key: a typo in one is caught, with its place.
sed 's/^  restrict_from: true/  restrict_form: true/' "$TOP_SRCDIR/conf/full.yaml" > "$T/typo.yaml"
line=$(grep -n 'restrict_form' "$T/typo.yaml" | cut -d: -f1)
[ -n "$line" ] || bail_out "could not build the typo fixture"
rc=0
"$HPCINIT" validate "$T/typo.yaml" > "$T/out" 2>&1 || rc=$?
[ "$rc" -eq 2 ] || { cat "$T/out"; bail_out "a spec with an unknown key exited $rc, want 2"; }
grep -q "typo.yaml:$line:3:" "$T/out" || { cat "$T/out"; bail_out "the error does not name typo.yaml:$line:3"; }
ok "$n example specs valid; a typo is reported at its line"
done_testing
