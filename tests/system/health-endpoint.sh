#!/bin/bash
# The Azure Application Health answer (Rich Health States over HTTP) in each
# state, through a real socket activation: systemd-socket-activate (from the
# systemd package; the test machine runs no systemd) listens on loopback and
# starts "hpcinit health" per connection with it on stdin/stdout, as
# hpcinit-health.socket (Accept=yes) does.  curl asks as the extension does:
#   before the first full apply of the boot   no valid answer (503, no state)
#   ready, degraded                           200 {"ApplicationHealthState": "Healthy"}
#   failed                                    200 {"ApplicationHealthState": "Unhealthy"}
. "$(dirname "$0")/lib.sh"
command -v systemd-socket-activate >/dev/null || { echo "systemd-socket-activate not found (package systemd)"; exit 1; }
command -v curl >/dev/null || { echo "curl not found"; exit 1; }
R=$T/root
mkroot "$R"
SPEC=$FIX/core/status.yaml
export HPCINIT_ADDRESS=198.18.0.1
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

systemd-socket-activate -l "127.0.0.1:$PORT" --inetd -a "$HPCINIT" health --root "$R" 2>"$T/activate.err" &
SA=$!
cleanup_add "kill $SA 2>/dev/null || true"
for _ in $(seq 100); do
	grep -q "Listening on" "$T/activate.err" && break
	sleep 0.05
done
check "socket activation listens on 127.0.0.1:$PORT" grep -q "Listening on" "$T/activate.err"

# probe NAME: the answer's HTTP code in $T/NAME.code, its body in $T/NAME.body
probe() { curl -s -o "$T/$1.body" -w '%{http_code}' "http://127.0.0.1:$PORT/health" >"$T/$1.code" || true; }
# state FILE: the body's ApplicationHealthState, as the extension parses it (JSON)
state() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ApplicationHealthState"])' "$1" 2>/dev/null || echo none; }

probe none
check "no status yet: 503" [ "$(cat "$T/none.code")" = 503 ]
check "no status yet: no ApplicationHealthState" [ "$(state "$T/none.body")" = none ]
check "no status yet: the reason" contains "$T/none.body" "status unknown"

# A refresh is not the boot's full apply: still no valid answer.
run_hpc "$T/r0" refresh --root "$R" -c "$SPEC" --hostname node01
probe refresh
check "refresh alone: still 503" [ "$(cat "$T/refresh.code")" = 503 ]
check "refresh alone: the reason" contains "$T/refresh.body" "no full apply since boot"

run_hpc "$T/a1" apply --root "$R" -c "$SPEC" --hostname node01 --kernel-release 6.9.1
check "apply ready (exit 0)" [ "$rc" -eq 0 ]
probe ready
check "ready: 200" [ "$(cat "$T/ready.code")" = 200 ]
check "ready: Healthy" [ "$(state "$T/ready.body")" = Healthy ]
check "ready: the documented body" [ "$(cat "$T/ready.body")" = '{"ApplicationHealthState": "Healthy"}' ]

# Degraded (pam_limits missing for sshd): the node works, Healthy.
printf 'session required pam_unix.so\n' >"$R/etc/pam.d/sshd"
run_hpc "$T/a2" apply --root "$R" -c "$SPEC" --hostname node01 --kernel-release 6.9.1
check "apply degraded (exit 3)" [ "$rc" -eq 3 ]
probe degraded
check "degraded: 200" [ "$(cat "$T/degraded.code")" = 200 ]
check "degraded: Healthy" [ "$(state "$T/degraded.body")" = Healthy ]

# Failed (kernel.expect does not match): Unhealthy, so automatic repair acts.
run_hpc "$T/a3" apply --root "$R" -c "$SPEC" --hostname node01 --kernel-release 5.15.0-1-azure
check "apply failed (exit 1)" [ "$rc" -eq 1 ]
probe failed
check "failed: 200" [ "$(cat "$T/failed.code")" = 200 ]
check "failed: Unhealthy" [ "$(state "$T/failed.body")" = Unhealthy ]

# A HEAD request: headers only; another method: 405; a request never ended: 400.
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$PORT/health" || true)
check "POST: 405" [ "$code" = 405 ]
python3 - "$PORT" >"$T/long.out" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET /health HTTP/1.1\r\nX-Pad: " + b"a" * 20000)
s.settimeout(10)
data = b""
try:
    while True:
        d = s.recv(4096)
        if not d:
            break
        data += d
except OSError:
    pass
print(data.split(b"\r\n")[0].decode())
PY
check "a request over 8 KiB: 400, no health state" contains "$T/long.out" "HTTP/1.1 400"
done_testing
