#!/bin/sh
# Fuzz the peer-record parser (the only parser fed by other machines) with
# libFuzzer for $1 seconds (default 300): tests/fuzz/fuzz_record.c built with
# clang -fsanitize=fuzzer,address,undefined straight from the sources, run on
# a copy of tests/fuzz/record-corpus with a dictionary of the record's words.
# Exits non-zero when libFuzzer finds a crash, a leak, UB, a timeout or a
# failed round trip.  The work directory is kept on failure or with
# FUZZ_KEEP=1 (FUZZ_WORKDIR picks it).  Add a fixed crasher to record-corpus.
set -eu
secs=${1:-300}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
work=${FUZZ_WORKDIR:-$(mktemp -d /tmp/hpcinit-fuzz-record.XXXXXX)}
keep=${FUZZ_KEEP:-0}
cleanup() { [ "$keep" = 1 ] || rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 1' INT TERM

mkdir -p "$work/corpus" "$work/artifacts"
cp "$here"/record-corpus/* "$work/corpus/"
# The version a record names (record.c says which release wrote a format it cannot read).
version=$(sed -n 's/^AC_INIT(\[hpcinit\], \[\([^]]*\)\].*/\1/p' "$top/configure.ac")
printf '#define _GNU_SOURCE 1\n#define PACKAGE_VERSION "%s"\n' "${version:-0}" >"$work/config.h"
cat >"$work/record.dict" <<'DICT'
"format: 1\x0a"
"cluster: simc\x0a"
"hostname: "
"addr: "
"ipoib_addr: "
"slots: "
"role: head\x0a"
"role: compute\x0a"
"version: "
"boot_id: "
"updated: "
"host_keys:\x0a"
"user_keys:\x0a"
"  - user: "
"    key: "
"  - ssh-ed25519 AAAA"
"hmac: "
"state: ready\x0a"
"state: degraded\x0a"
"state: failed\x0a"
"reason: "
"ready_ms: "
"users: "
"=10001:10001,"
"...\x0a"
DICT
clang -g -O1 -fno-omit-frame-pointer \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-I"$work" -I"$top/common/base" -I"$top/common/loader" -I"$top/common/text" \
	"$here/fuzz_record.c" "$top/common/base/record.c" "$top/common/base/hmac.c" "$top/common/base/sha256.c" "$top/common/loader/names.c" "$top/common/text/number.c" \
	"$top/common/loader/strlist.c" "$top/common/text/strbuf.c" \
	-o "$work/fuzz_record"

rc=0
"$work/fuzz_record" -max_len=65536 -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	-dict="$work/record.dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1 \
	"$work/corpus" || rc=$?
if [ "$rc" -ne 0 ]; then
	keep=1
	echo "run-record.sh: the fuzzer failed (exit $rc); artifacts in $work/artifacts" >&2
else
	echo "run-record.sh: no crash in ${secs}s; corpus now $(ls "$work/corpus" | wc -l) files"
fi
exit "$rc"
