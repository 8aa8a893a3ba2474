#!/bin/bash
# SPDX-License-Identifier: MIT
#
# The test bed's agent inside each VM (started by hpcvm-agent.service of
# the image that tests/vm/image.sh builds; this file is read from the
# VM's 9p share /hpcvm, so changing it needs no image rebuild).
#
# The harness (tests/vm/cluster.sh) drops scripts into /hpcvm/cmd/ID.sh;
# the agent takes each one (renames it into /hpcvm/cmd/taken/), runs it as
# root with bash, and writes /hpcvm/out/ID.out (stdout and stderr) and then
# /hpcvm/out/ID.rc (its exit status).  Scripts run concurrently.
# /hpcvm/out/agent-start records when the agent started: wall clock and
# /proc/uptime (so the harness can tell when the kernel came up).
OUT=/hpcvm/out CMD=/hpcvm/cmd
mkdir -p "$OUT" "$CMD/taken"
read -r up _ < /proc/uptime
echo "$(date +%s.%N) $up" > "$OUT/agent-start.tmp"
mv "$OUT/agent-start.tmp" "$OUT/agent-start"
echo "hpcvm-agent: up at $up s" > /dev/ttyS0 2>/dev/null || true
# The pause between looks is bash's own read timeout on a FIFO nobody
# writes: forking sleep(1) 3 times a second took CPU from the boot under
# emulation (the VM has one CPU).
rm -f /run/hpcvm-agent.fifo
mkfifo -m 0600 /run/hpcvm-agent.fifo
exec 3<> /run/hpcvm-agent.fifo
while :; do
	for f in "$CMD"/*.sh; do
		[ -e "$f" ] || continue
		id=$(basename "$f" .sh)
		mv "$f" "$CMD/taken/$id.sh" 2>/dev/null || continue
		(
			cd /
			bash "$CMD/taken/$id.sh" > "$OUT/$id.out" 2>&1 < /dev/null
			echo $? > "$OUT/$id.rc.tmp"
			mv "$OUT/$id.rc.tmp" "$OUT/$id.rc"
		) &
	done
	read -r -t 0.3 -u 3 _ || true
done
