#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Is the release tarball complete?  Every file git tracks in the source
# tree must be in it (.gitignore aside): scripts, fixtures, conf/, docs/,
# packaging/, the tests themselves.  A file left out of EXTRA_DIST, or one
# tar dropped (the v7 format silently loses paths over 99 characters), is
# named here.  `make distcheck` runs it on the unpacked tarball before it
# builds (Makefile.am: distcheck-hook), so a missing file fails distcheck
# even when only the quick tests run there (tests/run-all.sh).
#
#   tests/dist-complete.sh SRCDIR UNPACKED-DIR
#
# Exit 0 when complete, 1 naming every missing file.  A SRCDIR that is not
# a git checkout (a build from the tarball itself) has nothing to compare
# against: it says so and exits 0.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 SRCDIR UNPACKED-DIR" >&2; exit 2; }
src=$1 dist=$2
[ -d "$dist" ] || { echo "dist-complete: $dist: not a directory" >&2; exit 2; }
if ! command -v git >/dev/null || [ "$(git -C "$src" rev-parse --is-inside-work-tree 2>/dev/null)" != true ]; then
	echo "dist-complete: $src is not a git checkout: nothing to compare the tarball with"
	exit 0
fi
n=0 missing=0
while IFS= read -r -d '' f; do
	case $f in .gitignore|*/.gitignore) continue ;; esac
	n=$((n + 1))
	[ -e "$dist/$f" ] || [ -L "$dist/$f" ] && continue
	[ "$missing" -gt 0 ] || echo "dist-complete: FAIL: tracked by git in $src but not in the tarball (add to EXTRA_DIST in the fragment that owns it):" >&2
	echo "  $f" >&2
	missing=$((missing + 1))
done < <(git -C "$src" ls-files -z)
[ "$missing" -eq 0 ] || { echo "dist-complete: $missing of $n tracked files missing from $dist" >&2; exit 1; }
echo "dist-complete: all $n tracked files are in $dist"
