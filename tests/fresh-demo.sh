#!/bin/bash
# SPDX-License-Identifier: MIT
#
# README's first command, run as a newcomer runs it on a fresh machine:
# `bash tools/demo.sh` from the checkout, in a private mount namespace
# (unshare -m) where no installed copy of hpcinit is visible, and with a
# clean environment (no HPCINIT_* or other test variables).  An installed
# copy (the .deb stage of tests/run-all.sh installs and removes one, a
# developer's machine may have one) is hidden: a directory named hpcinit*
# (/usr/libexec/hpcinit, /usr/lib/hpcinit, ...) gets an empty tmpfs over it, a
# file (/usr/sbin/hpcinit, /usr/libexec/hpcinit-mpiverify, ...) an empty
# file of mode 0000.  Then no executable file named hpcinit* may remain
# under /usr or /opt, or this fails before the demo starts.  The binary of
# the checkout's build/ must therefore find its helpers itself
# (common/base/proc.h, proc_helper_path).
#
# Usage (root): bash tests/fresh-demo.sh
# SIM_PREFIX, SIM_BRIDGE and SIM_NET are passed on when set (names only,
# for a machine where the demo's defaults are in use); nothing else is.
# tests/run-all.sh runs it as a stage with none of them set.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "fresh-demo: needs root (mount namespace)" >&2; exit 2; }
# On one CPU: sim.sh keeps each node's mount namespace by bind-mounting its
# nsfs file, which the kernel refuses (EINVAL, "mount namespace loop") unless
# the namespace is newer than the caller's by id.  Ids come from per-CPU
# batches (seen on 6.18): nodes made on another CPU than this private
# namespace can get a smaller id, and "sim: a node did not come up" (18 of 60
# such binds failed unpinned, 0 of 60 pinned).  The host's initial namespace
# has the smallest id, so the demo run outside a namespace never meets this.
if [ "${1:-}" != --inside ]; then
	cpu=$(taskset -pc $$ | sed 's/.*: *//; s/[-,].*//')
	exec taskset -c "$cpu" unshare -m --propagation private bash "$0" --inside
fi

E=$(mktemp -d /tmp/hpcinit-fresh.XXXXXX)
: > "$E/empty"
chmod 0000 "$E/empty"
hidden=0
for dir in /usr/sbin /usr/bin /usr/local/sbin /usr/local/bin /usr/libexec /usr/local/libexec \
	   /usr/lib /usr/local/lib /usr/share /usr/local/share /opt; do
	for p in "$dir"/hpcinit*; do
		[ -e "$p" ] || [ -L "$p" ] || continue
		if [ -d "$p" ]; then
			mount -t tmpfs -o mode=0755,size=64k fresh-demo-hidden "$p"
		else
			mount --bind "$E/empty" "$p"
		fi
		echo "fresh-demo: hid $p (installed copy)"
		hidden=$((hidden + 1))
	done
done
left=$(find /usr /opt -name 'hpcinit*' -type f -perm /111 2>/dev/null || true)
[ -z "$left" ] || { echo "fresh-demo: an installed hpcinit is still visible: $left" >&2; exit 1; }
echo "fresh-demo: no installed hpcinit visible ($hidden paths hidden); running: bash tools/demo.sh"

keep=(PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8)
for v in SIM_PREFIX SIM_BRIDGE SIM_NET; do
	[ -z "${!v:-}" ] || keep+=("$v=${!v}")
done
rc=0
env -i "${keep[@]}" bash tools/demo.sh </dev/null || rc=$?
rm -rf "$E"
echo "fresh-demo: tools/demo.sh exited $rc"
exit "$rc"
