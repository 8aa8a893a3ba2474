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
check "the full example (every key of the schema) validates" [ "$rc" -eq 0 ]
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
# The shipped custom-data's placeholders (issue 33): a node booted with
# slurm-compute.yaml or vmss-compute.yaml as shipped holds CHANGE-ME in its
# secret file and munge key.  validate and apply refuse them as spec errors
# at the key that names the file (exit 2, the file named, nothing changed) and
# say to generate the secret once for every node's custom-data.
# write_files FILE ROOT: the custom-data's write_files into ROOT (b64 decoded)
write_files() {
	python3 - "$1" "$2" <<-'PY'
	import base64, os, sys, yaml
	for f in yaml.safe_load(open(sys.argv[1]))["write_files"]:
	    data = f["content"].encode()
	    if f.get("encoding") in ("b64", "base64"):
	        data = base64.b64decode(data)
	    p = sys.argv[2] + f["path"]
	    os.makedirs(os.path.dirname(p), exist_ok=True)
	    open(p, "wb").write(data)
	    os.chmod(p, int(str(f.get("permissions", "0644")), 8))
	PY
}
for ex in slurm-compute vmss-compute; do
	P=$T/ph-$ex
	mkroot "$P"
	write_files "$TOP_SRCDIR/conf/cloud-init/$ex.yaml" "$P"
	snapshot "$P" >"$T/ph-before"
	run_hpc "$T/ph-$ex.val" validate --root "$P" "$P/etc/hpcinit/node.yaml"
	check "$ex.yaml as shipped: validate exits 2 (exit $rc)" [ "$rc" -eq 2 ]
	if [ "$ex" = vmss-compute ]; then
		line=$(grep -n '^  secret_file: ' "$P/etc/hpcinit/node.yaml" | cut -d: -f1)
		check "$ex.yaml: the secret file's placeholder, at the key that names it" contains "$T/ph-$ex.val" \
			"$P/etc/hpcinit/node.yaml:$line:3: error: cluster.secret_file: $P/etc/hpcinit/cluster.key still holds the placeholder 'CHANGE-ME' of the example custom-data: generate the secret ONCE, on your workstation (openssl rand -hex 32), and put the same value in every node's custom-data"
	else
		line=$(grep -n '^  key_file: ' "$P/etc/hpcinit/node.yaml" | cut -d: -f1)
		check "$ex.yaml: the munge key's placeholder, at slurm.key_file" contains "$T/ph-$ex.val" \
			"$P/etc/hpcinit/node.yaml:$line:3: error: slurm.key_file: $P/etc/hpcinit/munge.key still holds the placeholder 'CHANGE-ME' of the example custom-data: generate the secret ONCE, on your workstation (dd if=/dev/urandom bs=128 count=1 | base64 -w0; custom-data encoding: b64)"
	fi
	run_hpc "$T/ph-$ex.apply" apply --root "$P" -c "$P/etc/hpcinit/node.yaml"
	check "$ex.yaml as shipped: apply exits 2 (exit $rc)" [ "$rc" -eq 2 ]
	check "$ex.yaml: apply changed nothing" contains "$T/ph-$ex.apply" "nothing was changed"
	snapshot "$P" >"$T/ph-after"
	check "$ex.yaml: the root is unchanged" same_file "$T/ph-after" "$T/ph-before"
done
# With the key put in, the same files validate.
head -c 128 /dev/urandom | base64 -w0 >"$T/ph-slurm-compute/etc/hpcinit/munge.key"
run_hpc "$T/ph-filled" validate --root "$T/ph-slurm-compute" "$T/ph-slurm-compute/etc/hpcinit/node.yaml"
check "the key put in: validate exits 0 (exit $rc)" [ "$rc" -eq 0 ]
# The munge key placeholder of the examples before issue 33 ("REPLACE ME") is refused too.
printf 'REPLACE ME\n' >"$T/ph-slurm-compute/etc/hpcinit/munge.key"
run_hpc "$T/ph-old" validate --root "$T/ph-slurm-compute" "$T/ph-slurm-compute/etc/hpcinit/node.yaml"
check "the old munge key placeholder: validate exits 2 (exit $rc)" [ "$rc" -eq 2 ]
check "... named" contains "$T/ph-old" "still holds the placeholder 'REPLACE ME'"
done_testing
