#!/bin/bash
# ARCHITECTURE.md's claims, held against the tree (the layers and the sizes
# have their own checks: layers.sh, sizes.sh; the unit tests of library
# files: tests-findable.sh).  What this one holds:
#  - every source file and every header without a .c of its name is named in
#    ARCHITECTURE.md, so the guide cannot fall behind the tree;
#  - a header declares its own file's functions, or those of its folder's
#    files it names (a folder's inside header);
#  - every folder with sources has its build fragment beside them, and
#    modules/modules.am includes the steps' fragments in modules/table.c's run
#    order;
#  - the typed outputs table says who produces and who reads each output, as
#    the modules declare it (.outputs, .inputs);
#  - each program file (the commands in agent/cmd/, the helpers in libexec/)
#    is in the table of the tests that run it, and those tests exist;
#  - one owner each: only lib/rendezvous/etcd.c names the etcd helper, the
#    commands read no directory by hand and include no step's header, no step asks the host name or
#    whether systemd runs by itself.
. "$(dirname "$0")/lib.sh"
cd "$TOP_SRCDIR"
ARCH=ARCHITECTURE.md
check "ARCHITECTURE.md is there" test -s "$ARCH"

srcdirs="agent lib modules libexec common"
# shellcheck disable=SC2086
srcs=$(find $srcdirs -name '*.c' 2>/dev/null | sort)
check "source files found" test -n "$srcs"

# --- every source file named ---
missing=""
for f in $srcs; do
	grep -qF "$(basename "$f")" "$ARCH" || missing="$missing $f"
done
check "every source file is named in ARCHITECTURE.md${missing:+ (not:$missing)}" test -z "$missing"

# --- headers without a .c of their name: each named (it declares something of its own) ---
missing=""
# shellcheck disable=SC2086
for h in $(find $srcdirs -name '*.h' 2>/dev/null | sort); do
	[ -f "${h%.h}.c" ] && continue
	grep -qF "$(basename "$h")" "$ARCH" || missing="$missing $h"
done
check "every header without a .c of its name is named in ARCHITECTURE.md${missing:+ (not:$missing)}" test -z "$missing"

# --- a header is named for what it declares ---
# Each function a header declares is defined in the file of its name, or in
# another file of its folder that the header's own text names (a folder's
# inside header, slurm.h for words.c and gres.c, names its files).  From the
# built objects' definitions (nm) and the headers' declarations.
# (the objects the Makefile names, as layers.sh takes them: not one an earlier layout left)
objs=$(cd "$TOP_BUILDDIR" && awk '/^am_libhpcinit_a_OBJECTS *=/ {f = 1} f {print} f && !/\\$/ {exit}' Makefile |
	tr ' \\\t' '\n\n\n' | sed -n 's|\$(OBJEXT)$|o|p' | while read -r o; do [ -f "$o" ] && echo "$TOP_BUILDDIR/$o"; done)
if [ -n "$objs" ]; then
	# shellcheck disable=SC2086
	nm -P --defined-only -A $objs 2>/dev/null | awk -v b="$TOP_BUILDDIR/" '$3 == "T" {
		o = $1; sub(/:$/, "", o); sub(b, "", o); d = o; sub(/\/[^\/]*$/, "", d)
		f = o; sub(/.*\//, "", f); sub(/\.o$/, ".c", f); print $2, d "/" f }' >"$T/defs"
	bad=""
	# shellcheck disable=SC2086
	for h in $(find $srcdirs -name '*.h' 2>/dev/null | sort); do
		d=$(dirname "$h"); b=$(basename "$h" .h)
		for fn in $(grep -oE '^[a-z][a-z_ *0-9]*[ *][a-z_][a-z_0-9]*\(' "$h" | grep -oE '[a-z_][a-z_0-9]*\($' | tr -d '(' | sort -u); do
			awk -v f="$fn" '$1 == f { print $2 }' "$T/defs"
		done | sort -u | while read -r src; do
			[ "$src" = "$d/$b.c" ] && continue
			if [ "$(dirname "$src")" != "$d" ]; then echo "$h declares a function of $src (another folder)"
			elif ! grep -qF "$(basename "$src")" "$h"; then echo "$h declares functions of $(basename "$src") without naming it"; fi
		done >>"$T/hdr-bad"
	done
	touch "$T/hdr-bad"
	if [ -s "$T/hdr-bad" ]; then not_ok "each header declares only its file's functions, or its folder's files it names:"; sed 's/^/  | /' "$T/hdr-bad"
	else ok "each header declares only its file's functions, or its folder's files it names"; fi
else
	not_ok "the agent's objects are built (run make first): the headers cannot be checked"
fi

# --- a build fragment beside every folder's sources ---
missing=""
for d in $(for f in $srcs; do dirname "$f"; done | sort -u); do
	if [ "$d" = modules ]; then
		for f in modules/*.c; do
			n=$(basename "$f" .c)
			[ "$n" = table ] || [ -f "modules/$n.am" ] || missing="$missing modules/$n.am"
		done
		continue
	fi
	ls "$d"/*.am >/dev/null 2>&1 || missing="$missing $d/"
done
check "every folder with sources has its build fragment${missing:+ (none in:$missing)}" test -z "$missing"

# --- modules.am includes the steps in table.c's order ---
order_table=$(sed -n 's/^[[:space:]]*&\([a-z_]*\)_module,.*/\1/p' modules/table.c | tr '\n' ' ')
order_am=$(sed -n 's#^include $(srcdir)/modules/\([a-z_]*\)[/.].*#\1#p' modules/modules.am | tr '\n' ' ')
check "the run order is found in modules/table.c" test -n "$order_table"
if [ "$order_table" = "$order_am" ]; then
	ok "modules.am includes the steps in run order ($order_am)"
else
	not_ok "modules.am includes the steps in run order: table.c '$order_table', modules.am '$order_am'"
fi

# --- the typed outputs table ---
# From the code: "OUT_X producer module" and "OUT_X reader module" lines.
code_io() {
	for f in $(find modules -name '*.c' | sort); do
		awk -v f="$f" '
			/\.outputs[[:space:]]*=/ || /\.inputs[[:space:]]*=/ {
				kind = ($0 ~ /\.outputs/) ? "producer" : "reader"
				line = $0; sub(/\/\*.*/, "", line)
				while (match(line, /OUT_[A-Z]+/)) {
					print substr(line, RSTART, RLENGTH), kind, f
					line = substr(line, RSTART + RLENGTH)
				}
			}' "$f"
	done | while read -r out kind f; do
		m=$(sed -n 's/^const struct module \([a-z_]*\)_module.*/\1/p' "$f")
		echo "$out $kind $m"
	done | sort -u
}
# From ARCHITECTURE.md: "| `OUT_X` | type | producer | readers, with notes |"
doc_io() {
	grep '^| `OUT_' "$ARCH" | while IFS='|' read -r _ out _ prod readers _; do
		out=$(echo "$out" | tr -d '` ')
		for p in $(echo "$prod" | sed 's/([^)]*)//g' | tr ',' ' '); do echo "$out producer $p"; done
		for r in $(echo "$readers" | sed 's/([^)]*)//g' | tr ',' ' '); do echo "$out reader $r"; done
	done | sort -u
}
code_io >"$T/code-io"
doc_io >"$T/doc-io"
check "the modules declare outputs" test -s "$T/code-io"
if diff "$T/doc-io" "$T/code-io" >"$T/io-diff"; then
	ok "the typed outputs table names each output's producer and readers as the modules declare them"
else
	not_ok "the typed outputs table disagrees with the modules (< ARCHITECTURE.md, > the code):"
	sed 's/^/  | /' "$T/io-diff"
fi

# --- programs and the tests that run them ---
# A row "| `file.c` | tests/... tests/... |" under "### What runs the programs".
sed -n "/^### What runs the programs/,/^#/p" "$ARCH" | { grep "^| \`" || true; } >"$T/prog-rows"
check "the table of what runs the programs is there" test -s "$T/prog-rows"
missing=""
badtest=""
for f in $(find agent/cmd libexec -name '*.c' | sort); do
	row=$(grep -F "| \`$(basename "$f")\`" "$T/prog-rows" || true)
	[ -n "$row" ] || { missing="$missing $f"; continue; }
	for t in $(echo "$row" | grep -o 'tests/[A-Za-z0-9_./-]*'); do
		[ -e "$t" ] || badtest="$badtest $t"
	done
	echo "$row" | grep -q 'tests/' || badtest="$badtest ($f: no test)"
done
check "each command and helper file is in the table of what runs it${missing:+ (not:$missing)}" test -z "$missing"
check "the tests the table names exist${badtest:+ (not:$badtest)}" test -z "$badtest"

# --- one owner each ---
hits=$(grep -rln '"hpcinit-etcd"\|ETCD_HELPER_NAME' agent lib modules common 2>/dev/null |
	grep -v '^lib/rendezvous/etcd.c$\|^lib/rendezvous/etcd-proto.h$' || true)
check "only lib/rendezvous/etcd.c runs hpcinit-etcd${hits:+ (also: $hits)}" test -z "$hits"
hits=$(grep -rn 'opendir' agent/cmd || true)
check "the commands read no directory by hand${hits:+ ($hits)}" test -z "$hits"
hits=$(grep -rn '#include "[./]*modules/[a-z_]*/' agent/cmd agent/core || true)
check "no command or core file includes a step's header${hits:+ ($hits)}" test -z "$hits"
hits=$(grep -rn 'gethostname\|/run/systemd/system' modules || true)
check "no step asks the host name or whether systemd runs by itself${hits:+ ($(echo "$hits" | cut -d: -f1,2 | tr '\n' ' '))}" test -z "$hits"
hits=$(grep -rln 'gethostname *(' agent lib modules common libexec --include=*.c | grep -v '^common/base/util.c$' || true)
check "one gethostname(2) caller, node_hostname in common/base/util.c${hits:+ (also: $hits)}" test -z "$hits"

done_testing
