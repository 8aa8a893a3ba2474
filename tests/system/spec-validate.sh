#!/bin/bash
# The real binary on the spec fixtures: `hpcinit validate` exits 2 on every bad
# one and prints exactly the diagnostics of its .expect (with the path as given),
# each followed by the source line and a caret; the full example validates.
. "$(dirname "$0")/lib.sh"

n=0
for spec in "$FIX"/bad/*.yaml; do
	name=${spec##*/}
	run_hpc "$T/out" validate "$spec"
	check "$name: validate exits 2" [ "$rc" -eq 2 ]
	# The diag lines are the ones that start with the path; .expect has the basename.
	awk -v p="$spec:" 'index($0, p) == 1' "$T/out" >"$T/got"
	sed "s|^$name|$spec|" "${spec%.yaml}.expect" >"$T/want"
	check "$name: the diagnostics of ${name%.yaml}.expect" same_file "$T/got" "$T/want"
	n=$((n + 1))
done
check "at least 25 bad fixtures ran" [ "$n" -ge 25 ]

# The block for one diag: message, source line, caret under the column.
run_hpc "$T/several" validate "$FIX/bad/several-errors.yaml"
printf '%s\n' \
	"$FIX/bad/several-errors.yaml:4:9: error: cluster.role: expected one of compute, head, got \"boss\"" \
	"  role: boss" \
	"        ^" \
	"$FIX/bad/several-errors.yaml:7:10: error: memlock.limit: expected a size like 64G or 'unlimited', got \"64Q\"" \
	"  limit: 64Q" \
	"         ^" >"$T/block"
head -6 "$T/several" >"$T/head"
check "source line and caret follow each error" same_file "$T/head" "$T/block"
check "all nine errors, then the summary" contains "$T/several" "9 errors; nothing was changed"

# A tab before the caret column is copied, so the caret lines up in a terminal.
printf 'version: 1\ncluster: {name: c1}\nrdma: {\tlink_layer: x}\n' >"$T/tab.yaml"
run_hpc "$T/tab" validate "$T/tab.yaml"
check "tab spec exits 2" [ "$rc" -eq 2 ]
printf 'rdma: {\tlink_layer: x}\n       \t            ^\n' >"$T/tabwant"
sed -n '2,3p' "$T/tab" >"$T/tabgot"
check "caret line keeps the tab" same_file "$T/tabgot" "$T/tabwant"

run_hpc "$T/full" validate "$FIX/good/full.yaml"
check "the full DESIGN.md example validates" [ "$rc" -eq 0 ]
check "validate names the cluster" contains "$T/full" "full.yaml: ok (cluster glocluster)"

# A broken spec stops apply before anything is touched.
R=$T/root
mkroot "$R"
snapshot "$R" >"$T/before"
run_hpc "$T/apply" apply --root "$R" -c "$FIX/bad/several-errors.yaml"
check "apply with a broken spec exits 2" [ "$rc" -eq 2 ]
snapshot "$R" >"$T/after"
check "fake root unchanged" same_file "$T/after" "$T/before"

# --lock-timeout is a duration with the spec's one rule (units.c): a unit is
# required, 16E-sized numbers are out of range, nothing runs on a bad value.
run_hpc "$T/lt-bare" apply --lock-timeout 90 --root "$R" -c "$FIX/good/full.yaml"
check "bare --lock-timeout exits 2" [ "$rc" -eq 2 ]
check "bare --lock-timeout asks for a unit" contains "$T/lt-bare" "add a unit: ms, s, m or h"
run_hpc "$T/lt-big" apply --lock-timeout 99999999999999999999h --root "$R" -c "$FIX/good/full.yaml"
check "huge --lock-timeout exits 2" [ "$rc" -eq 2 ]
check "huge --lock-timeout is out of range" contains "$T/lt-big" "is out of range; use a duration from 0s to 24h"
run_hpc "$T/lt-25h" apply --lock-timeout 25h --root "$R" -c "$FIX/good/full.yaml"
check "--lock-timeout 25h exits 2" [ "$rc" -eq 2 ]
run_hpc "$T/lt-sp" apply --lock-timeout " 10s" --root "$R" -c "$FIX/good/full.yaml"
check "--lock-timeout with a space exits 2" [ "$rc" -eq 2 ]
snapshot "$R" >"$T/after2"
check "fake root unchanged by bad --lock-timeout" same_file "$T/after2" "$T/before"
done_testing
