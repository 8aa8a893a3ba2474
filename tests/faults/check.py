#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Invariant checks of the fault campaign (tests/faults/campaign.sh), on the
files hpcinit manages on each simulated node, read from the host side.

  check.py MODE CLUSTER LIVE DEPARTED NODE=ETC:RUN...

MODE parse: every managed file parses (hostfiles, known_hosts, the /etc/hosts
block, the JSON status files).  MODE quiet: that, and every LIVE member is in
every given node's hostfiles, known_hosts and /etc/hosts block, and no
DEPARTED node is in any of them.  LIVE and DEPARTED: comma-separated
name@address lists.  ETC: the node's /etc as the host sees it (its overlay
upper directory); RUN: its /run (/proc/PID/root/run of a process in it).

Prints one line a violation, "NODE: text"; exit 0 always (the caller counts).
"""
import base64
import ipaddress
import json
import os
import re
import sys

NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.-]*$")


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError as e:
        return e


def hostfile(path, fmt, cluster, out):
    """Names listed by a hostfile; its own header count must match."""
    text = read(path)
    if text is None:
        return None
    if isinstance(text, Exception):
        out.append(f"{path}: not UTF-8 ({text})")
        return None
    lines = text.split("\n")
    if not text.endswith("\n"):
        out.append(f"{path}: partial: no final newline")
        return None
    lines = lines[:-1]
    m = re.match(r"^# hpcinit: cluster (\S+), (\d+) nodes?; generated, do not edit$", lines[0] if lines else "")
    if not m or m.group(1) != cluster:
        out.append(f"{path}:1: bad header {lines[0] if lines else ''!r}")
        return None
    body = [l for l in lines[1:]]
    if len(body) != int(m.group(2)):
        out.append(f"{path}: header says {m.group(2)} nodes, {len(body)} lines follow")
    names = []
    for i, l in enumerate(body, 2):
        if fmt == "openmpi":
            mm = re.match(r"^(\S+) slots=\d+$", l)
        else:
            mm = re.match(r"^(\S+)$", l)
        if not mm or not NAME.match(mm.group(1)):
            out.append(f"{path}:{i}: does not parse: {l!r}")
            continue
        names.append(mm.group(1))
    return names


def known_hosts(path, out):
    """name -> key blob, for each hpcinit known_hosts line."""
    text = read(path)
    if text is None:
        return None
    if isinstance(text, Exception) or (text and not text.endswith("\n")):
        out.append(f"{path}: partial or not UTF-8")
        return None
    keys = {}
    for i, l in enumerate(text.split("\n")[:-1], 1):
        if not l or l.startswith("#"):
            continue
        f = l.split()
        if f[0].startswith("@"):
            f = f[1:]
        if len(f) < 3:
            out.append(f"{path}:{i}: does not parse: {l!r}")
            continue
        try:
            blob = base64.b64decode(f[2], validate=True)
        except Exception:
            out.append(f"{path}:{i}: key is not base64: {l!r}")
            continue
        n = int.from_bytes(blob[:4], "big") if len(blob) >= 4 else -1
        if n < 0 or blob[4:4 + n].decode("ascii", "replace") != f[1]:
            out.append(f"{path}:{i}: key blob does not start with its type {f[1]}")
            continue
        for name in f[0].split(","):
            keys.setdefault(name, set()).add(f[2])
    return keys


def hosts_block(path, out):
    """name -> address from the managed block of /etc/hosts (None: no block)."""
    text = read(path)
    if text is None or isinstance(text, Exception):
        out.append(f"{path}: missing or not UTF-8")
        return None
    if text and not text.endswith("\n"):
        out.append(f"{path}: partial: no final newline")
    lines = text.split("\n")
    begins = [i for i, l in enumerate(lines) if l.startswith("# BEGIN hpcinit ")]
    ends = [i for i, l in enumerate(lines) if l.startswith("# END hpcinit ")]
    if not begins and not ends:
        return None
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        out.append(f"{path}: managed block not one BEGIN..END pair (BEGIN at {begins}, END at {ends})")
        return None
    names = {}
    for i in range(begins[0] + 1, ends[0]):
        l = lines[i]
        if not l or l.startswith("#"):
            continue
        f = l.split()
        try:
            ipaddress.ip_address(f[0])
        except ValueError:
            out.append(f"{path}:{i + 1}: not an address line: {l!r}")
            continue
        if len(f) < 2:
            out.append(f"{path}:{i + 1}: address without a name: {l!r}")
        for n in f[1:]:
            names[n] = f[0]
    return names


def json_files(run, out):
    d = os.path.join(run, "hpcinit")
    try:
        files = [f for f in os.listdir(d) if f.endswith(".json")]
    except FileNotFoundError:
        return
    for f in files:
        p = os.path.join(d, f)
        try:
            with open(p, "rb") as fh:
                json.loads(fh.read().decode("utf-8"))
        except FileNotFoundError:
            pass
        except Exception as e:
            out.append(f"{p}: does not parse as JSON: {e}")


def members(spec):
    r = {}
    for x in filter(None, spec.split(",")):
        n, a = x.split("@")
        r[n] = a
    return r


def main():
    mode, cluster, live, departed = sys.argv[1:5]
    live, departed = members(live), members(departed)
    for arg in sys.argv[5:]:
        node, paths = arg.split("=", 1)
        etc, run = paths.split(":", 1)
        out = []
        hf = {}
        for fmt in ("plain", "openmpi"):
            hf[fmt] = hostfile(os.path.join(etc, "hpcinit", "hostfile." + fmt), fmt, cluster, out)
        kh = known_hosts(os.path.join(etc, "hpcinit", "ssh_known_hosts"), out)
        hb = hosts_block(os.path.join(etc, "hosts"), out)
        json_files(run, out)
        if mode == "quiet":
            for fmt, names in hf.items():
                got = set(names or [])
                if got & set(departed) or set(live) - got:
                    out.append(f"hostfile.{fmt}: missing {sorted(set(live) - got)}, departed still listed "
                               f"{sorted(got & set(departed))}")
            khn = set(kh or {})
            if set(live) - khn or khn & set(departed):
                out.append(f"ssh_known_hosts: missing {sorted(set(live) - khn)}, departed still listed "
                           f"{sorted(khn & set(departed))}")
            hbn = hb or {}
            wrong = sorted(n for n, a in live.items() if hbn.get(n) != a)
            gone = sorted(n for n in departed if n in hbn)
            if wrong or gone:
                out.append(f"/etc/hosts block: missing or wrong {wrong}, departed still listed {gone}")
        for o in out:
            print(f"{node}: {o}")


if __name__ == "__main__":
    main()
