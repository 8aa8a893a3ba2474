#!/bin/bash
# The repository points only inside itself (issue 36): no tracked file --
# code, comment, doc, test or example -- names the design, style or test-bed
# notes that lived beside the project and are not part of it, nor the folder
# that held them.  What the code relies on from them is in docs/ (conventions.md,
# testing.md); a comment points there.  The names are put together below so
# that this file does not name them itself.
. "$(dirname "$0")/lib.sh"
cd "$TOP_SRCDIR"

# The files: git's list in a checkout, else (the unpacked tarball of make
# distcheck) every file but the build's.
list_files() {   # list_files DIR
	if git -C "$1" rev-parse --is-inside-work-tree >/dev/null 2>&1 &&
		[ "$(git -C "$1" rev-parse --show-toplevel)" = "$(cd "$1" && pwd -P)" ]; then
		git -C "$1" ls-files
	else
		(cd "$1" && find . -type f -not -path './_build/*' -not -path './build*/*' \
			-not -path './autom4te.cache/*' -not -path './.git/*' | sed 's|^\./||')
	fi
}

field='FIELD''-NOTES'
notes="(DESIGN|STYLE|TESTBED|$field)"
pattern="\\<$notes\\.md\\>|$field|\\.\\./shared\\>|/work/(shared)\\>"

# outside DIR OUT: the lines of DIR's files that point outside, in OUT.
outside() {
	(cd "$1" && list_files . | while IFS= read -r f; do [ -f "$f" ] && printf '%s\0' "$f"; done |
		xargs -0 -r grep -IHnE "$pattern" >"$2") || true
}

# The check can fail: a tree with a comment that points outside.
mkdir -p "$T/tree/src"
printf '/* see %s.md "Peers" */\nint x;\n' DESIGN >"$T/tree/src/a.c"
printf 'the test bed: ../%s/notes\n' shared >"$T/tree/notes.txt"
printf 'nothing outside here\n' >"$T/tree/ok.txt"
outside "$T/tree" "$T/bad"
check "a planted pointer outside is found (the check can fail)" contains "$T/bad" 'src/a.c:1:'
check "a planted ../ path outside is found" contains "$T/bad" 'notes.txt:1:'
check "a clean file is not named" not_contains "$T/bad" 'ok.txt'

files=$(list_files . | wc -l)
check "the repository's files are listed ($files)" [ "$files" -gt 100 ]
outside . "$T/found"
[ ! -s "$T/found" ] || sed 's/^/#   /' "$T/found"
check "no file of the repository points outside it (docs/conventions.md, docs/testing.md)" [ ! -s "$T/found" ]
done_testing
