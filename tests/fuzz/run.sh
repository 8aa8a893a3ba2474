#!/bin/sh
# Fuzz the spec loader with libFuzzer for $1 seconds (default 300).
#
# Builds tests/fuzz/fuzz_spec.c with clang -fsanitize=fuzzer,address,undefined
# straight from the sources (no configure needed), runs it on a copy of the
# seed corpus with the schema's words as a dictionary, and exits non-zero when
# libFuzzer finds a crash, a leak, UB or a timeout.  The work directory
# (corpus grown by the run, crash artifacts) is kept on failure or with
# FUZZ_KEEP=1; FUZZ_WORKDIR picks it.  Add a fixed crasher to tests/fuzz/corpus.
set -eu
secs=${1:-300}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
work=${FUZZ_WORKDIR:-$(mktemp -d /tmp/hpcinit-fuzz.XXXXXX)}
keep=${FUZZ_KEEP:-0}
cleanup() { [ "$keep" = 1 ] || rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 1' INT TERM

mkdir -p "$work/corpus" "$work/artifacts"
cp "$here"/corpus/* "$work/corpus/"
# The loader family includes config.h; it needs nothing from it but _GNU_SOURCE.
printf '#define _GNU_SOURCE 1\n' >"$work/config.h"
# shellcheck disable=SC2046
clang -g -O1 -fno-omit-frame-pointer \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-I"$work" -I"$top/common/base" -I"$top/common/loader" -I"$top/common/text" \
	"$here/fuzz_spec.c" "$top/common/loader/spec.c" "$top/common/loader/spec_tables.c" "$top/common/loader/diag.c" "$top/common/text/escape.c" "$top/common/loader/schema.c" \
	"$top/common/loader/handlers.c" "$top/common/loader/units.c" "$top/common/loader/names.c" "$top/common/text/number.c" "$top/common/loader/cidr.c" \
	"$top/common/loader/nodeset.c" "$top/common/loader/strlist.c" "$top/common/text/strbuf.c" \
	$(pkg-config --cflags --libs yaml-0.1) -lm -o "$work/fuzz_spec"

rc=0
"$work/fuzz_spec" -max_len=65536 -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 \
	-dict="$here/spec.dict" -artifact_prefix="$work/artifacts/" -print_final_stats=1 \
	"$work/corpus" || rc=$?
if [ "$rc" -ne 0 ]; then
	keep=1
	echo "run.sh: the fuzzer failed (exit $rc); artifacts in $work/artifacts" >&2
else
	echo "run.sh: no crash in ${secs}s; corpus now $(ls "$work/corpus" | wc -l) files"
fi
exit "$rc"
