#!/bin/bash
# sd_notify without libsystemd: hpcinit apply says its result in STATUS=
# (hpcinit.service, NotifyAccess=main), and hpcinit watch (Type=notify) says
# READY=1 with a STATUS= once it applied its first membership.  A python3
# datagram socket stands where systemd's notification socket would be (path
# and abstract), and prints each datagram it receives.
. "$(dirname "$0")/lib.sh"
R=$T/root
mkroot "$R"
export HPCINIT_ADDRESS=198.18.9.1

# listen ADDR OUT: receive datagrams on ADDR ("/path" or "@abstract") into OUT until killed.
listen() {
	python3 -u - "$1" "$2" <<'PY' &
import socket, sys
addr, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("\0" + addr[1:] if addr.startswith("@") else addr)
open(out + ".up", "w").close()
while True:
    d = s.recv(4096)
    with open(out, "ab") as f:
        f.write(d + b"\n--\n")
PY
	LPID=$!
	cleanup_add "kill $LPID 2>/dev/null || true"
	for _ in $(seq 100); do [ -e "$2.up" ] && break; sleep 0.05; done
}
# wait_for FILE TEXT: until FILE holds TEXT (at most 20 s)
wait_for() { for _ in $(seq 200); do grep -qF -- "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done; return 1; }

# apply, to a path socket
listen "$T/notify.sock" "$T/apply.msgs"
NOTIFY_SOCKET=$T/notify.sock run_hpc "$T/a1" apply --root "$R" -c "$FIX/core/status.yaml" --hostname node01 --kernel-release 6.9.1
check "apply exits 0" [ "$rc" -eq 0 ]
check "apply: STATUS= with its result" wait_for "$T/apply.msgs" "STATUS=hpcinit apply: ready (exit 0), 1 peers"
check "apply is no service of Type=notify: no READY=1" not_contains "$T/apply.msgs" "READY=1"
NOTIFY_SOCKET=$T/notify.sock run_hpc "$T/a2" apply --root "$R" -c "$FIX/core/status.yaml" --hostname node01 --kernel-release 5.15.0-1-azure
check "failed apply: STATUS= says why" wait_for "$T/apply.msgs" "STATUS=hpcinit apply: failed (exit 1), 1 peers: running kernel 5.15.0-1-azure does not match"

# watch (shared discovery), to an abstract socket
cat >"$T/watch.yaml" <<'YAML'
version: 1
cluster: {name: ntf, network: 198.18.9.0/24}
discovery: {method: shared, dir: /shared/.hpcinit, expect: 1, wait: 1s}
YAML
# start_watch: hpcinit watch in the background, its pid in WPID
start_watch() {
	NOTIFY_SOCKET=$name "$HPCINIT" watch --root "$R" -c "$T/watch.yaml" --hostname node01 >>"$T/watch.out" 2>&1 &
	WPID=$!
	cleanup_add "kill $WPID 2>/dev/null || true"
}
name="@hpcinit-test-$$-$RANDOM"
listen "$name" "$T/fail.msgs"
# The shared filesystem is not there yet (no /shared): the refresh fails, no READY=1.
start_watch
check "watch, refresh failed: STATUS= says so" wait_for "$T/fail.msgs" "STATUS=hpcinit watch: failed (exit 1)"
check "watch, refresh failed: not READY" not_contains "$T/fail.msgs" "READY=1"
kill "$WPID" "$LPID"
mkdir -p "$R/shared"
run_hpc "$T/w0" apply --root "$R" -c "$T/watch.yaml" --hostname node01
check "with /shared, the apply makes the rendezvous directory" [ "$rc" -eq 0 ]
name="@hpcinit-test-$$-$RANDOM-2"
listen "$name" "$T/watch.msgs"
start_watch
check "watch: READY=1" wait_for "$T/watch.msgs" "READY=1"
check "watch: STATUS= with the membership" wait_for "$T/watch.msgs" "STATUS=hpcinit watch: ready (exit 0), 1 peers"
# datagrams are separated by "--" lines in the file
one_datagram() { python3 -c 'import sys; sys.exit(not any(d.startswith("\nREADY=1\nSTATUS=hpcinit watch: ") or d.startswith("READY=1\nSTATUS=hpcinit watch: ") for d in open(sys.argv[1]).read().split("\n--\n")))' "$1"; }
check "READY=1 and STATUS= in one datagram" one_datagram "$T/watch.msgs"
kill "$WPID"

# Not under systemd (no NOTIFY_SOCKET): nothing is sent, the run is the same.
run_hpc "$T/a3" apply --root "$R" -c "$FIX/core/status.yaml" --hostname node01 --kernel-release 6.9.1
check "no NOTIFY_SOCKET: apply exits 0" [ "$rc" -eq 0 ]
done_testing
