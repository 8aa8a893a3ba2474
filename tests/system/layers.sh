#!/bin/bash
# The layers ARCHITECTURE.md draws, held against the built objects and the
# #include lines: an arrow (a call to a function another object defines, or
# an include) only points down cmd > core > the module table > a step >
# lib/ > base > loader > text, and no step reaches another step.  The
# helpers in libexec/ sit beside lib/: they may use lib/, base, loader and
# text, never a step (neither an include nor a file built into the helper).
# No two files reach each other, through any chain: the graph of calls and
# includes between files has no cycle, inside a folder too.  The arrows
# known to cross still (issue 24) are printed as such; any other is a
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
		if (f ~ /^libexec\//) return "3 libexec"
		if (f ~ /^common\/base\//) return "2 base"
		if (f ~ /^common\/loader\//) return "1 loader"
		if (f ~ /^common\/text\//) return "0 text"
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
	END { for (e in u) print e, u[e] }' | sort >"$T/callgraph"
# The helpers (libexec/): their objects are <dir>/<program>-<file>.o.  Each
# file built into a helper is an arrow from the helper's own file
# (libexec/...), and each call from a helper's object to a function another
# of its objects, or the agent's library, defines is one too.
# (an object whose source is gone, left by an earlier layout, is not one).
hobjs=$(find libexec lib modules agent common -name 'hpcinit_*-*.o' 2>/dev/null | sort |
	while read -r o; do s=${o##*/}; s=${s#*-}; [ ! -f "$TOP_SRCDIR/${o%/*}/${s%.o}.c" ] || echo "$o"; done)
# shellcheck disable=SC2086
[ -z "$hobjs" ] || { nm -A -P --defined-only $objs; echo "--"; nm -A -P $hobjs; } 2>/dev/null | awk '
	function src(o,   d, b) {
		sub(/:$/, "", o); d = o; sub(/\/[^\/]*$/, "", d); b = o; sub(/.*\//, "", b)
		prog = b; sub(/-.*/, "", prog); sub(/^[^-]*-/, "", b); sub(/\.o$/, ".c", b)
		return d "/" b
	}
	$1 == "--" { helpers = 1; next }
	!helpers { if ($3 ~ /^[TDBR]$/) { o = $1; sub(/:$/, "", o); sub(/\.o$/, ".c", o); def[$2] = o }; next }
	{
		s = src($1)
		if (!((prog, s) in seen)) { seen[prog, s] = 1; files[prog] = files[prog] " " s }
		if ($3 ~ /^[TDBR]$/) hdef[prog, $2] = s
		else if ($3 == "U") { nu++; us[nu] = $2; up[nu] = prog; uf[nu] = s }
	}
	END {
		for (i = 1; i <= nu; i++) {
			to = (up[i], us[i]) in hdef ? hdef[up[i], us[i]] : (us[i] in def ? def[us[i]] : "")
			if (to != "" && to != uf[i]) e[uf[i] " " to] = e[uf[i] " " to] (e[uf[i] " " to] ? ", " : "") us[i]
		}
		for (p in files) {
			n = split(files[p], f, " "); m = ""
			for (i = 1; i <= n; i++) if (f[i] ~ /^libexec\// && (m == "" || f[i] < m)) m = f[i]
			for (i = 1; i <= n; i++) if (m != "" && f[i] !~ /^libexec\//) print m, f[i], "built into " p
		}
		for (k in e) print k, e[k]
	}' | sort >>"$T/callgraph"
classify <"$T/callgraph" >"$T/calls"
grep '^#' "$T/calls" || true
check "no call goes up a layer or from one step into another" not_contains "$T/calls" "bad "
sed -n 's/^bad /  /p' "$T/calls"

# --- includes: each quoted #include, found where the compiler finds it ---
cd "$TOP_SRCDIR"
find agent modules lib libexec -name '*.[ch]' | sort >"$T/files"
grep -H '^#include "' $(cat "$T/files") | awk -v dirs="agent/cmd agent/core common/base common/loader common/text lib modules" '
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
	}' "$T/files" - | sort >"$T/incgraph"
classify <"$T/incgraph" >"$T/incs"
grep '^#' "$T/incs" || true
check "no #include goes up a layer or from one step into another" not_contains "$T/incs" "bad "
sed -n 's/^bad /  /p' "$T/incs"

# --- cycles: no file reaches itself through calls and includes (tsort names each loop) ---
awk '$1 != $2 { print $1, $2 }' "$T/callgraph" "$T/incgraph" | tsort >/dev/null 2>"$T/loops" || true
check "no cycle between files in the graph of calls and includes" not_contains "$T/loops" "loop"
# each loop's files with the arrows between them, from the graphs
awk 'FILENAME == ARGV[1] { if (/loop/) { n++ } else if (n) { sub(/^tsort: /, ""); l[n] = l[n] " " $0 }; next }
	{ e[$1 " " $2] = $0 }
	END { for (i = 1; i <= n; i++) { print "  loop:" l[i]; k = split(l[i], f, " ")
		for (a = 1; a <= k; a++) for (b = 1; b <= k; b++) if ((f[a] " " f[b]) in e) print "    " e[f[a] " " f[b]] } }' \
	"$T/loops" "$T/callgraph" "$T/incgraph"
done_testing
