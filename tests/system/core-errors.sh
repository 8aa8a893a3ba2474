#!/bin/bash
# Bad input: exit 2 with a clear message, and the fake root stays byte-for-byte the same.
. "$(dirname "$0")/lib.sh"
R=$T/root
mkroot "$R"
cat >"$T/bad.yaml" <<'YAML'
version: 1
cluster:
  name: glocluster
memlock:
  limt: unlimited
  systemd: maybe
YAML
snapshot "$R" >"$T/before"
for cmd in refresh plan check apply; do
	run_hpc "$T/out" $cmd --root "$R" -c "$T/bad.yaml"
	check "$cmd with a broken spec exits 2" [ "$rc" -eq 2 ]
done
check "the error has file:line:col" contains "$T/out" "bad.yaml:5:3: error:"
check "every error is reported" contains "$T/out" "bad.yaml:6:12: error:"
check "the summary says nothing changed" contains "$T/out" "2 errors; nothing was changed"
snapshot "$R" >"$T/after"
check "fake root unchanged after broken spec" same_file "$T/after" "$T/before"

run_hpc "$T/v" validate "$T/bad.yaml"
check "validate exits 2 on errors" [ "$rc" -eq 2 ]
run_hpc "$T/v2" validate "$FIX/core/memlock.yaml"
check "validate exits 0 on a good spec" [ "$rc" -eq 0 ]
check "validate says ok" contains "$T/v2" "memlock.yaml: ok (cluster glocluster)"
run_hpc "$T/m" apply --root "$R" -c "$T/missing.yaml"
check "missing spec exits 2" [ "$rc" -eq 2 ]
check "missing spec names the file" contains "$T/m" "missing.yaml"
run_hpc "$T/u" frobnicate
check "unknown command exits 2" [ "$rc" -eq 2 ]
check "unknown command is named" contains "$T/u" "unknown command 'frobnicate'"
run_hpc "$T/o" apply --only memlok --root "$R" -c "$FIX/core/memlock.yaml"
check "unknown --only module exits 2" [ "$rc" -eq 2 ]
check "--only lists the modules" contains "$T/o" "unknown module 'memlok'; modules are: memlock"
run_hpc "$T/l" apply --lock-timeout soon --root "$R" -c "$FIX/core/memlock.yaml"
check "bad --lock-timeout exits 2" [ "$rc" -eq 2 ]
snapshot "$R" >"$T/after2"
check "fake root unchanged after usage errors" same_file "$T/after2" "$T/before"
run_hpc "$T/nr" apply --root "$T/no-such-root" -c "$FIX/core/memlock.yaml"
check "missing --root exits 2" [ "$rc" -eq 2 ]
check "missing --root is named" contains "$T/nr" "--root $T/no-such-root: not a directory"
check "missing --root is not created" [ ! -e "$T/no-such-root" ]
run_hpc "$T/h" --help
check "--help exits 0" [ "$rc" -eq 0 ]
run_hpc "$T/ver" --version
check "--version prints the version" grep -qE '^hpcinit [0-9]+\.[0-9]+' "$T/ver"
done_testing
