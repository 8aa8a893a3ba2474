#!/bin/sh
# Fuzz hpcinit-etcd's JSON and HTTP handling (what an etcd endpoint or the
# Scheduled Events address answers) with libFuzzer for $1 seconds (default 300):
# tests/fuzz/fuzz_etcd.c, which compiles libexec/hpcinit-etcd.c in, built with
# clang -fsanitize=fuzzer,address,undefined straight from the sources, run on
# a copy of tests/fuzz/etcd-corpus with a dictionary of the answers' words.
# Exits non-zero when libFuzzer finds a crash, a leak, UB or a timeout.  The
# work directory is kept on failure or with FUZZ_KEEP=1 (FUZZ_WORKDIR picks
# it).  Add a fixed crasher to etcd-corpus.
set -eu
secs=${1:-300}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
work=${FUZZ_WORKDIR:-$(mktemp -d /tmp/hpcinit-fuzz-etcd.XXXXXX)}
keep=${FUZZ_KEEP:-0}
cleanup() { [ "$keep" = 1 ] || rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 1' INT TERM

mkdir -p "$work/corpus" "$work/artifacts"
cp "$here"/etcd-corpus/* "$work/corpus/"
printf '#define _GNU_SOURCE 1\n' >"$work/config.h"
cat >"$work/etcd.dict" <<'DICT'
"\"header\""
"\"revision\""
"\"kvs\""
"\"key\""
"\"value\""
"\"lease\""
"\"more\""
"\"count\""
"\"result\""
"\"events\""
"\"type\""
"\"DELETE\""
"\"kv\""
"\"created\""
"\"canceled\""
"\"compact_revision\""
"\"error\""
"\"message\""
"\"token\""
"\"Events\""
"\"EventId\""
"\"EventType\""
"\"EventStatus\""
"\"Resources\""
"\"DocumentIncarnation\""
"null"
"true"
"[]"
"{}"
"HTTP/1.1 200 OK\x0d\x0a"
"\x0d\x0a"
"Content-Length: "
"Transfer-Encoding: chunked\x0d\x0a"
"Connection: close\x0d\x0a"
"Date: Sun, 06 Nov 1994 08:49:37 GMT\x0d\x0a"
"http://[::1]:2379/"
DICT
# shellcheck disable=SC2046
clang -g -O1 -fno-omit-frame-pointer \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-I"$work" -I"$top/common/base" -I"$top/common/loader" -I"$top/common/text" \
	"$here/fuzz_etcd.c" "$top/common/text/escape.c" "$top/common/text/strbuf.c" "$top/common/text/number.c" \
	"$top/common/text/base64.c" \
	$(pkg-config --cflags --libs libcurl json-c) -o "$work/fuzz_etcd"

rc=0
"$work/fuzz_etcd" -max_len=65536 -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -close_fd_mask=2 \
	-dict="$work/etcd.dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1 \
	"$work/corpus" || rc=$?
if [ "$rc" -ne 0 ]; then
	keep=1
	echo "run-etcd.sh: the fuzzer failed (exit $rc); artifacts in $work/artifacts" >&2
else
	echo "run-etcd.sh: no crash in ${secs}s; corpus now $(ls "$work/corpus" | wc -l) files"
fi
exit "$rc"
