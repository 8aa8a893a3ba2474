#!/bin/bash
# Tests findable by name (issue 24): every library file (agent/base,
# agent/core, agent/loader, agent/text, lib/) has a unit test of its own --
# tests/unit/test_<name>.c (test_<folder><name>.c in lib/ib), or for a
# backend its folder's test_<folder>.c #including it (as unit tests do to
# reach a file's statics) -- every unit test is built by an automake
# fragment, and no test file is over 1,000 lines.  The files known to lack one still are printed as such; any other
# fails, named.
. "$(dirname "$0")/lib.sh"
cd "$TOP_SRCDIR"

MAX_LINES=1000
# Known still: "PATH" (a library file without a test of its own, a test file
# over the limit).  Take a file off when it gets its test or is split.
KNOWN=""
known() { case " $KNOWN " in *" $1 "*) return 0 ;; esac; return 1; }

# --- each library file, and its unit test ---
libs=$(find agent/base agent/core agent/loader agent/text lib -name '*.c' | sort)
check "library files found" test -n "$libs"
for f in $libs; do
	base=$(basename "$f" .c)
	dir=$(basename "$(dirname "$f")")
	t=""
	for cand in "tests/unit/test_$base.c" "tests/unit/test_$dir$base.c" "tests/unit/test_${dir}_$base.c"; do
		[ -f "$cand" ] && { t=$cand; break; }
	done
	# a library folder's own test for its backends (test_rendezvous.c: dir.c, etcd.c)
	if [ -z "$t" ] && [ -f "tests/unit/test_$dir.c" ] && grep -qF "#include \"../../$f\"" "tests/unit/test_$dir.c"; then
		t=tests/unit/test_$dir.c
	fi
	if [ -n "$t" ]; then
		if known "$f"; then
			not_ok "$f has a test now ($t): take it off KNOWN in $0"
		else
			ok "$f: $t"
		fi
	elif known "$f"; then
		echo "# known, no unit test of its own yet: $f"
	else
		not_ok "$f: no unit test (tests/unit/test_$base.c, or test_$dir.c #including it)"
	fi
done

# --- each unit test is built and run by a fragment (else it is never run) ---
frags=$(find . -name '*.am' -not -path './build*' -not -path './_build*' | sort)
for t in tests/unit/test_*.c; do
	name=${t%.c}
	if grep -qE "(^|[[:space:]=])$name([[:space:]\\\\]|\$)" $frags; then
		ok "$t: in a fragment"
	else
		not_ok "$t: in no automake fragment (add $name to its folder's TESTS)"
	fi
done

# --- no test file over the limit ---
for f in $(find tests -type f \( -name '*.c' -o -name '*.h' -o -name '*.sh' -o -name '*.py' \) \
		-not -path 'tests/fixtures/*' -not -path 'tests/fuzz/corpus/*' | sort); do
	n=$(wc -l <"$f")
	if [ "$n" -le "$MAX_LINES" ]; then
		known "$f" && not_ok "$f: $n lines now: take it off KNOWN in $0"
		continue
	fi
	if known "$f"; then
		echo "# known, over $MAX_LINES lines still: $f ($n)"
	else
		not_ok "$f: $n lines (over $MAX_LINES): split it by the part of the product it tests"
	fi
done
ok "test files checked against $MAX_LINES lines"

done_testing
