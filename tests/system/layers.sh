#!/bin/bash
# The layers ARCHITECTURE.md draws, held against the built objects and the
# #include lines: an arrow (a call to a function another object defines, or
# an include) only points down cmd > core > the module table > a step >
# lib/ > base > loader > text, and no step reaches another step.  The
# arrows known to cross still (issue 24) are printed as such; any other is a
# failure naming both files and the symbols or the header.
. "$(dirname "$0")/lib.sh"

# Known to cross still, "FROM->TO" (ARCHITECTURE.md says what is left).
KNOWN=""

# classify: lines "FROM TO WHAT..." in, the verdicts out ("bad ..." or "# known ...")
classify() {
	awk -v known="$KNOWN" '
	function layer(f,   s) {
		if (f ~ /^agent\/cmd\//) return "7 cmd"
		if (f ~ /^agent\/core\//) return "6 core"
		if (f ~ /^modules\/table\./) return "5 table"
		if (f ~ /^modules\//) { s = substr(f, 9); sub(/[\/.].*/, "", s); return "4 step:" s }
		if (f ~ /^lib\//) return "3 lib"
		if (f ~ /^agent\/base\//) return "2 base"
		if (f ~ /^agent\/loader\//) return "1 loader"
		if (f ~ /^agent\/text\//) return "0 text"
		return ""
	}
	BEGIN { n = split(known, k, " "); for (i = 1; i <= n; i++) ok[k[i]] = 1 }
	{
		from = $1; to = $2; what = $0; sub(/^[^ ]+ [^ ]+ /, "", what)
		lf = layer(from); lt = layer(to)
		if (lf == "" || lt == "" || lf == lt) next
		split(lf, a, " "); split(lt, b, " ")
		if (a[1] + 0 > b[1] + 0 || (a[1] == b[1] && a[1] != 4)) next
		line = from " (" a[2] ") -> " to " (" b[2] "): " what
		print ((from "->" to) in ok ? "# known, still crossing: " : "bad ") line
	}'
}

# --- calls: the agent's objects, each undefined symbol of one that another defines ---
cd "$TOP_BUILDDIR"
objs=$(awk '/^am_libhpcinit_a_OBJECTS *=/ {f = 1} f {print} f && !/\\$/ {exit}' Makefile |
	tr ' \\\t' '\n\n\n' | sed -n 's/\$(OBJEXT)$/o/p')
objs="$objs agent/cmd/main.o"
missing=$(for o in $objs; do [ -f "$o" ] || echo "$o"; done)
check "the agent's objects are built" [ -z "$missing" ]
# shellcheck disable=SC2086
{ nm -A -P --defined-only $objs; echo "--"; nm -A -P -u $objs; } 2>/dev/null | awk '
	$1 == "--" { undef = 1; next }
	{ o = $1; sub(/:$/, "", o); sub(/\.o$/, ".c", o) }
	!undef && $3 ~ /^[TDBR]$/ { def[$2] = o; next }
	undef && ($2 in def) && def[$2] != o { u[o " " def[$2]] = u[o " " def[$2]] (u[o " " def[$2]] ? ", " : "") $2 }
	END { for (e in u) print e, u[e] }' | sort | classify >"$T/calls"
grep '^#' "$T/calls" || true
check "no call goes up a layer or from one step into another" not_contains "$T/calls" "bad "
sed -n 's/^bad /  /p' "$T/calls"

# --- includes: each quoted #include, found where the compiler finds it ---
cd "$TOP_SRCDIR"
find agent modules lib libexec -name '*.[ch]' | sort >"$T/files"
grep -H '^#include "' $(cat "$T/files") | awk -v dirs="agent/cmd agent/core agent/base agent/loader agent/text lib" '
	function norm(p,   n, i, a, out, m) {
		n = split(p, a, "/"); m = 0
		for (i = 1; i <= n; i++) {
			if (a[i] == "." || a[i] == "") continue
			if (a[i] == "..") { if (m) m--; continue }
			st[++m] = a[i]
		}
		out = st[1]; for (i = 2; i <= m; i++) out = out "/" st[i]
		return out
	}
	FILENAME == ARGV[1] { have[$0] = 1; next }
	{
		f = $0; sub(/:.*/, "", f); h = $0; sub(/^[^"]*"/, "", h); sub(/".*/, "", h)
		d = f; sub(/\/[^\/]*$/, "", d)
		to = norm(d "/" h)
		if (!(to in have)) {
			to = ""; n = split(dirs, D, " ")
			for (i = 1; i <= n && to == ""; i++) if ((D[i] "/" h) in have) to = D[i] "/" h
		}
		if (to != "") print f, to, "#include \"" h "\""
	}' "$T/files" - | classify >"$T/incs"
grep '^#' "$T/incs" || true
check "no #include goes up a layer or from one step into another" not_contains "$T/incs" "bad "
sed -n 's/^bad /  /p' "$T/incs"
done_testing
