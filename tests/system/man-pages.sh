#!/bin/bash
# SPDX-License-Identifier: MIT
#
# hpcinit(8) and hpcinit.yaml(5) render with man-db and groff without a
# single warning, and hpcinit.yaml(5) documents every key of the spec
# (taken from conf/full.yaml, which sets every key) with its default.
set -eu

# ok, bail_out, done_testing
. "$(dirname "$0")/../lib/tap.sh"
: "${TOP_SRCDIR:?}"
command -v man >/dev/null || bail_out "man not found (Debian package man-db)"

T=$(mktemp -d /tmp/hpcinit-man.XXXXXX)
trap 'rm -rf "$T"' EXIT
export MANWIDTH=80 LC_ALL=C.UTF-8

# render FILE OUT: 0 when man renders FILE to OUT with nothing on stderr.
render() {
	man --warnings -l "$1" > "$2" 2> "$2.err" || { cat "$2.err" >&2; return 1; }
	[ ! -s "$2.err" ] || { cat "$2.err" >&2; return 1; }
	[ -s "$2" ] || { echo "$1: rendered nothing" >&2; return 1; }
}

for page in hpcinit.8 hpcinit.yaml.5; do
	render "$TOP_SRCDIR/packaging/man/$page" "$T/$page.txt" || bail_out "$page has warnings"
	ok "$page renders without warnings ($(wc -l < "$T/$page.txt") lines)"
done

# The check can fail: a page with an undefined macro and a bad escape.
printf '.TH BROKEN 8\n.SH NAME\nbroken \\- x\n.BOGUS\n\\fQword\n' > "$T/broken.8"
render "$T/broken.8" "$T/broken.txt" 2>/dev/null && bail_out "a broken page rendered without warnings"

# Every section of hpcinit(8) an admin looks for.
for sect in NAME SYNOPSIS DESCRIPTION COMMANDS OPTIONS "EXIT STATUS" FILES ENVIRONMENT EXAMPLES "SEE ALSO"; do
	grep -qx "$sect" "$T/hpcinit.8.txt" || bail_out "hpcinit(8) lacks the section $sect"
done
for cmd in apply check plan refresh status verify validate; do
	grep -Eq "^       $cmd( |\$)" "$T/hpcinit.8.txt" || bail_out "hpcinit(8) does not describe the command $cmd"
done
for code in 0 1 2 3 4; do
	grep -Eq "^       $code +" "$T/hpcinit.8.txt" || bail_out "hpcinit(8) does not describe exit status $code"
done

# Every key path in conf/full.yaml appears in hpcinit.yaml(5), and every
# key there (but the required ones) states a default.
python3 - "$TOP_SRCDIR/conf/full.yaml" "$TOP_SRCDIR/packaging/man/hpcinit.yaml.5" <<'PY'
import re, sys, yaml
spec = yaml.safe_load(open(sys.argv[1]))
page = open(sys.argv[2]).read()
keys = []
def walk(node, prefix):
    for k, v in node.items():
        path = prefix + k
        if path.startswith("nfs.mounts") or path.startswith("nfs.exports"):
            keys.append(path)
            for entry_key in v[0]:
                keys.append(path + "[]." + entry_key)
            continue
        if isinstance(v, dict):
            walk(v, path + ".")
        else:
            keys.append(path)
walk(spec, "")
# Split the page into the entries of its KEYS section: ".TP" then ".B key".
entries = {}
keys_part = page.split(".SH KEYS", 1)[1].split(".SH EXAMPLES", 1)[0]
parent = None
for chunk in re.split(r"^\.TP\n", keys_part, flags=re.M)[1:]:
    first, _, body = chunk.partition("\n")
    m = re.match(r"^\.B (\S+)$", first)
    if not m:
        continue
    name = m.group(1)
    if "." not in name and name != "version":
        name = parent + "[]." + name
    elif name in ("nfs.mounts", "nfs.exports"):
        parent = name
    entries[name] = body
missing = [k for k in keys if k not in entries]
if missing:
    sys.exit("hpcinit.yaml(5) does not document: " + ", ".join(missing))
nodefault = [k for k, b in entries.items()
             if not re.search(r"^(Default:|Default: |No default\.|Required)", b, re.M)]
if nodefault:
    sys.exit("hpcinit.yaml(5) states no default for: " + ", ".join(nodefault))
print("ok hpcinit.yaml(5) documents all %d keys of conf/full.yaml with defaults" % len(keys))
PY

ok "man pages"
done_testing
