#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Every version of the nodes' membership files, as they are written.

  versions.py OUT NODE=ETC_DIR...   record until SIGTERM
  versions.py now                 the CLOCK_MONOTONIC time, ms
  versions.py lost OUT T0 T1 NAME...      the same, for the files of each NAME, and only the
                                  NAMEs its version before T0 (else its first) listed: a
                                  live node lost
  versions.py missing OUT T0 T1 NAME...   the versions written in [T0, T1] (ms) that
                                  lack one of NAME: "node file t n names"; nothing when none

ETC_DIR is the node's /etc seen from the host (its overlay's upper layer).  The
files (hpcinit/hostfile.plain, hpcinit/ssh_known_hosts) are replaced by rename:
a new inode or mtime is a new version.  They are polled every 2 ms (a version
that lived 100 ms is seen 50 times over); each version is one line of OUT:
"MS NODE FILE N NAME,NAME,..." with MS the CLOCK_MONOTONIC time in ms
("versions.py now" prints that clock, for the caller's T0 and T1).
"""
import os
import signal
import sys
import time

FILES = ("hpcinit/hostfile.plain", "hpcinit/ssh_known_hosts")


def names(path, text):
    out = []
    for line in text.splitlines():
        if not line or line[0] in "#@":
            continue
        w = line.split()[0]
        if path.endswith("known_hosts"):
            w = w.split(",")[0]
        if w not in out:
            out.append(w)
    return out


def record(out, pairs):
    stop = []
    signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
    seen = {}
    with open(out, "a", buffering=1) as f:
        while not stop:
            for node, etc in pairs:
                for rel in FILES:
                    p = os.path.join(etc, rel)
                    try:
                        st = os.stat(p)
                        key = (st.st_ino, st.st_mtime_ns, st.st_size)
                        if seen.get((node, rel)) == key:
                            continue
                        with open(p) as r:
                            text = r.read()
                    except OSError:
                        continue
                    seen[(node, rel)] = key
                    n = names(rel, text)
                    f.write("%d %s %s %d %s\n" % (time.clock_gettime(time.CLOCK_MONOTONIC) * 1000, node,
                                                  os.path.basename(rel), len(n), ",".join(n) or "-"))
            time.sleep(0.002)


def missing(out, t0, t1, want):
    with open(out) as f:
        for line in f:
            ms, node, rel, n, have = line.split()
            if not t0 <= int(ms) <= t1:
                continue
            have = have.split(",")
            lost = [w for w in want if w not in have]
            if lost:
                print("%s %s at %s ms: %s hosts, without %s" % (node, rel, ms, n, ",".join(lost)))


def lost(out, t0, t1, want):
    base, bad = {}, []
    with open(out) as f:
        for line in f:
            ms, node, rel, n, have = line.split()
            if node not in want:
                continue
            have = have.split(",")
            # the version before the fault: the last one by T0, else the first the recorder saw
            # (a recorder started with the fault sees the files as they were)
            if int(ms) <= t0 or (node, rel) not in base:
                base[(node, rel)] = have
            elif int(ms) <= t1:
                gone = [w for w in want if w in base.get((node, rel), []) and w not in have]
                if gone:
                    bad.append("%s %s at %s ms: %s hosts, without %s" % (node, rel, ms, n, ",".join(gone)))
    print("\n".join(bad[:20]), end="\n" if bad else "")


if __name__ == "__main__":
    if sys.argv[1:] == ["now"]:
        print("%d" % (time.clock_gettime(time.CLOCK_MONOTONIC) * 1000))
    elif len(sys.argv) > 4 and sys.argv[1] == "lost":
        lost(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:])
    elif len(sys.argv) > 4 and sys.argv[1] == "missing":
        missing(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5:])
    elif len(sys.argv) > 2:
        record(sys.argv[1], [a.split("=", 1) for a in sys.argv[2:]])
    else:
        sys.exit(__doc__)
