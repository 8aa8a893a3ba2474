#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Every example spec shipped in conf/ passes "hpcinit validate"; a spec with
# a mistake fails it with exit 2 and the mistake's line and column.
set -eu

fail() { echo "FAIL: $*" >&2; exit 1; }
: "${HPCINIT:?}" "${TOP_SRCDIR:?}"

T=$(mktemp -d /tmp/hpcinit-conf.XXXXXX)
trap 'rm -rf "$T"' EXIT

n=0
for f in "$TOP_SRCDIR"/conf/*.yaml; do
	rc=0
	"$HPCINIT" validate "$f" > "$T/out" 2>&1 || rc=$?
	[ "$rc" -eq 0 ] || { cat "$T/out"; fail "$f: hpcinit validate exited $rc"; }
	echo "ok $(cat "$T/out")"
	n=$((n + 1))
done
[ "$n" -ge 5 ] || fail "expected at least 5 example specs, found $n"

# full.yaml sets every key: a typo in one is caught, with its place.
sed 's/^  restrict_from: true/  restrict_form: true/' "$TOP_SRCDIR/conf/full.yaml" > "$T/typo.yaml"
line=$(grep -n 'restrict_form' "$T/typo.yaml" | cut -d: -f1)
[ -n "$line" ] || fail "could not build the typo fixture"
rc=0
"$HPCINIT" validate "$T/typo.yaml" > "$T/out" 2>&1 || rc=$?
[ "$rc" -eq 2 ] || { cat "$T/out"; fail "a spec with an unknown key exited $rc, want 2"; }
grep -q "typo.yaml:$line:3:" "$T/out" || { cat "$T/out"; fail "the error does not name typo.yaml:$line:3"; }
echo "PASS: $n example specs valid; a typo is reported at its line"
