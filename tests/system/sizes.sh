#!/bin/bash
# The sizes issue 24 set for the code in agent/, lib/, modules/ and libexec/:
# no source file over 900 lines, no function over 120 lines.  A function is
# measured as ctags measures it, from the line its name is on to its closing
# brace in column 0 (the kernel style the code is written in); the longest
# are printed either way, so the numbers are there to read.  And one rule
# kept by text: numbers are read through agent/text/number.c, never a bare
# strtol/strtoul/strtoll/strtoull/strtod (agent/loader/units.c checks its
# own grammar before its strtod), nor sscanf (number.c's field readers,
# num_ll_field, num_ull_field and num_word_field, read a line's fields).
. "$(dirname "$0")/lib.sh"

cd "$TOP_SRCDIR"
find agent lib modules libexec -name '*.[ch]' | sort >"$T/files"
check "the sources are found" test -s "$T/files"

# shellcheck disable=SC2046
wc -l $(cat "$T/files") | awk '$2 != "total"' | sort -rn >"$T/lines"
echo "# longest files:"; head -3 "$T/lines" | sed 's/^/#   /'
awk '$1 > 900 { print "  " $2 ": " $1 " lines" }' "$T/lines" >"$T/long-files"
check "no source file over 900 lines" not_contains "$T/long-files" ":"

# shellcheck disable=SC2046
awk '
	FNR == 1 { head = 0; infn = 0 }
	# a definition starts in column 0 with its name and "(", and is no statement
	!infn && /^[A-Za-z_][A-Za-z0-9_ \t*]*\(/ && !/;[ \t]*$/ && !/^(typedef|return|if|for|while|switch|#)[ \t(]/ {
		head = FNR; name = $0; sub(/\(.*/, "", name); sub(/.*[ \t*]/, "", name); next }
	!infn && /^\{/ && head { infn = 1; next }
	!infn && /^[^ \t]/ && head && /;[ \t]*$|^#|^\/\*/ { head = 0 }
	infn && /^\}/ { print FNR - head + 1, FILENAME ":" head, name; infn = 0; head = 0 }
' $(grep '\.c$' "$T/files") | sort -rn >"$T/functions"
check "functions are found (the measure reads the code)" [ "$(wc -l <"$T/functions")" -gt 500 ]
echo "# longest functions:"; head -3 "$T/functions" | sed 's/^/#   /'
awk '$1 > 120 { print "  " $2 " " $3 "(): " $1 " lines" }' "$T/functions" >"$T/long-functions"
check "no function over 120 lines" not_contains "$T/long-functions" "lines"

# shellcheck disable=SC2046
grep -nE '\<strto(l|ul|ll|ull|d|f|ld|imax|umax)[[:space:]]*\(' $(grep '\.c$' "$T/files") |
	grep -v -e '^agent/text/number\.c:' -e '^agent/loader/units\.c:.*strtod(' >"$T/strto" || true
check "numbers are read through agent/text/number.c (no strto* elsewhere)" not_contains "$T/strto" ":"
# shellcheck disable=SC2046
grep -nE '\<v?sscanf[[:space:]]*\(' $(grep '\.c$' "$T/files") | grep -v '^agent/text/number\.c:' >"$T/sscanf" || true
sed 's/^/#   /' "$T/sscanf"
check "fields are read through agent/text/number.c (no sscanf elsewhere)" not_contains "$T/sscanf" ":"
done_testing
