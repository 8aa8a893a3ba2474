#!/bin/bash
# SPDX-License-Identifier: MIT
#
# discovery method etcd against a real etcd (Debian's etcd-server) with
# security turned on, on 127.0.0.1 of this machine; the node is "hpcinit
# apply --only discovery" on a fake root (--root), as tests/bench/etcd-load.sh.
#  1. TLS with client certificates (--client-cert-auth): certificates made
#     here with openssl (a CA, a server certificate for 127.0.0.1, a client
#     certificate); ca_file, cert_file and key_file work; another CA, or no
#     client certificate, fail with a clear error naming the endpoint.
#  2. User authentication (etcdctl user add root, auth enable) over https:
#     auth_file works; a wrong password fails naming the file and etcd's
#     answer, and the password is in no message.  auth_file with an http://
#     endpoint is a spec error (the password would go out in clear text),
#     and the helper refuses it at run time too; auth_file and key_file
#     readable by others, or not root's, are refused as the cluster secret
#     is.  A stand-in for a hostile endpoint that answers every call with
#     401 makes the helper log in once more and fail, not recurse.
set -euo pipefail
TOP=${TOP_SRCDIR:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=${TOP_BUILDDIR:-$TOP/build}
HPCINIT=${HPCINIT:-$BUILD/hpcinit}
export HPCINIT_LIBEXEC_DIR=${HPCINIT_LIBEXEC_DIR:-$BUILD}
command -v etcd >/dev/null || { echo "SKIP: etcd not installed (Debian package etcd-server)"; exit 77; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (the fake root's files are root's)"; exit 77; }
T=$(mktemp -d /tmp/hpcinit-etcd-tls.XXXXXX)
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$T"
}
trap cleanup EXIT
. "$(dirname "$0")/../lib/tap.sh"
# Ports from the process ID, so two runs side by side do not collide.
P0=$((24000 + ($$ % 400) * 4))

# ---- certificates ----
cd "$T"
ossl() { openssl "$@" >/dev/null 2>&1; }
mkca() {   # mkca NAME
	ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=$1" \
		-keyout "$1.key" -out "$1.pem"
}
mkcert() {   # mkcert NAME CA CN EXT
	ossl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$3" -keyout "$1.key" -out "$1.csr"
	printf '%s\n' "$4" > "$1.ext"
	ossl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial -days 2 -extfile "$1.ext" -out "$1.pem"
}
mkca ca
mkca otherca
# clientAuth too: etcd 3.4's JSON gateway dials its own member with the server certificate.
mkcert server ca etcd-test "subjectAltName=IP:127.0.0.1
extendedKeyUsage=serverAuth,clientAuth"
mkcert client ca root "extendedKeyUsage=clientAuth"
for f in ca.pem server.pem client.pem; do
	[ -s "$f" ] || { echo "Bail out! openssl did not make $f"; exit 1; }
done

start_etcd() {   # start_etcd NAME CLIENT_URL PEER_PORT EXTRA...
	local name=$1 url=$2 peer=$3
	shift 3
	etcd --name "$name" --data-dir "$T/$name" --listen-client-urls "$url" --advertise-client-urls "$url" \
		--listen-peer-urls "http://127.0.0.1:$peer" --initial-advertise-peer-urls "http://127.0.0.1:$peer" \
		--initial-cluster "$name=http://127.0.0.1:$peer" "$@" >"$T/$name.log" 2>&1 &
	PIDS+=($!)
}
start_etcd tls "https://127.0.0.1:$P0" $((P0 + 1)) --cert-file server.pem --key-file server.key \
	--trusted-ca-file ca.pem --client-cert-auth
# Passwords only over TLS: the auth member serves https (no client certificates).
start_etcd auth "https://127.0.0.1:$((P0 + 2))" $((P0 + 3)) --cert-file server.pem --key-file server.key
ETCDCTL=(env ETCDCTL_API=3 etcdctl --cacert "$T/ca.pem" --endpoints "https://127.0.0.1:$((P0 + 2))")
for _ in $(seq 1 100); do
	curl -sf --cacert ca.pem --cert client.pem --key client.key "https://127.0.0.1:$P0/health" >/dev/null &&
		curl -sf --cacert ca.pem "https://127.0.0.1:$((P0 + 2))/health" >/dev/null && break
	sleep 0.1
done
PASSWORD="pw-$(openssl rand -hex 12)"
"${ETCDCTL[@]}" user add "root:$PASSWORD" >/dev/null
"${ETCDCTL[@]}" role add root >/dev/null 2>&1 || true   # 3.4: auth enable needs root to have it
"${ETCDCTL[@]}" user grant-role root root >/dev/null
"${ETCDCTL[@]}" auth enable >/dev/null

# ---- the node ----
R=$T/node
mkdir -p "$R/etc/hpcinit/tls" "$R/etc/ssh" "$R/etc/openmpi" "$R/run/hpcinit"
printf 'root:x:0:0:root:/root:/bin/bash\n' > "$R/etc/passwd"
openssl rand -hex 32 > "$R/etc/hpcinit/cluster.key"
chmod 0600 "$R/etc/hpcinit/cluster.key"
cp ca.pem otherca.pem client.pem "$R/etc/hpcinit/tls/"
install -m 0600 client.key "$R/etc/hpcinit/tls/client.key"
# node_spec ENDPOINT EXTRA: the spec, discovery with method etcd
node_spec() {
	cat > "$R/etc/hpcinit/node.yaml" <<-EOF
	version: 1
	cluster: {name: tls, network: 10.0.0.0/8, secret_file: /etc/hpcinit/cluster.key}
	discovery: {method: etcd, endpoints: ["$1"], expect: 1, wait: 0s, lease: 30s$2}
	EOF
}
# run OUT: apply --only discovery on the node; exit code in $rc
run() {
	rc=0
	HPCINIT_ADDRESS=10.0.0.5 "$HPCINIT" apply --only discovery --root "$R" -c "$R/etc/hpcinit/node.yaml" \
		--hostname node1 -v >"$1" 2>&1 || rc=$?
	rm -f "$R/run/hpcinit/etcd-lease"       # each case starts without a lease
}
TLSURL=https://127.0.0.1:$P0
AUTHURL=https://127.0.0.1:$((P0 + 2))

# 1. TLS
node_spec "$TLSURL" ", ca_file: /etc/hpcinit/tls/ca.pem, cert_file: /etc/hpcinit/tls/client.pem, key_file: /etc/hpcinit/tls/client.key"
run "$T/tls-ok"
check "TLS with ca_file, cert_file and key_file: apply exits 0" test "$rc" = 0
check "... and etcd knows this node" contains "$T/tls-ok" "1 node known through etcd"
check "... the key is in etcd (read back over TLS by curl)" \
	bash -c "curl -sf --cacert ca.pem --cert client.pem --key client.key -X POST -d '{\"key\":\"$(printf /hpcinit/tls/nodes/node1 | base64 -w0)\"}' $TLSURL/v3/kv/range | grep -q '\"count\":\"1\"'"

node_spec "$TLSURL" ", ca_file: /etc/hpcinit/tls/otherca.pem, cert_file: /etc/hpcinit/tls/client.pem, key_file: /etc/hpcinit/tls/client.key"
run "$T/tls-wrong-ca"
check "another CA in ca_file: apply exits 1" test "$rc" = 1
check "... discovery failed, naming the endpoint, the certificate problem and the key to look at" \
	grep -Eq "$TLSURL: .*certificate.*discovery.ca_file" "$T/tls-wrong-ca"
echo "# wrong CA: $(grep -o "$TLSURL: [^;]*" "$T/tls-wrong-ca" | head -1)"

node_spec "$TLSURL" ", ca_file: /etc/hpcinit/tls/ca.pem"
run "$T/tls-no-cert"
check "no client certificate (etcd --client-cert-auth): apply exits 1" test "$rc" = 1
check "... discovery failed, naming the endpoint, its answer and the keys to set" \
	grep -q "$TLSURL: .*discovery.cert_file and key_file" "$T/tls-no-cert"
echo "# no client certificate: $(grep -o "$TLSURL: [^;]*" "$T/tls-no-cert" | head -1)"

# 2. user authentication
printf 'root:%s\n' "$PASSWORD" > "$R/etc/hpcinit/etcd-auth"
chmod 0600 "$R/etc/hpcinit/etcd-auth"
node_spec "$AUTHURL" ", ca_file: /etc/hpcinit/tls/ca.pem, auth_file: /etc/hpcinit/etcd-auth"
run "$T/auth-ok"
check "auth_file with the right password: apply exits 0" test "$rc" = 0
check "... and etcd knows this node" contains "$T/auth-ok" "1 node known through etcd"
check "... the key is in etcd (etcdctl as root)" \
	test "$("${ETCDCTL[@]}" --user "root:$PASSWORD" get --keys-only /hpcinit/tls/nodes/node1 | head -1)" = /hpcinit/tls/nodes/node1
check "without auth_file etcd refuses: apply exits 1" bash -c "
	sed -i 's|, auth_file: /etc/hpcinit/etcd-auth||' '$R/etc/hpcinit/node.yaml'
	HPCINIT_ADDRESS=10.0.0.5 '$HPCINIT' apply --only discovery --root '$R' -c '$R/etc/hpcinit/node.yaml' --hostname node1 >'$T/auth-none' 2>&1
	test \$? = 1"
echo "# no auth_file: $(grep -m1 -i "etcd" "$T/auth-none" | head -1)"

WRONG="wrong-$(openssl rand -hex 12)"
printf 'root:%s\n' "$WRONG" > "$R/etc/hpcinit/etcd-auth"
node_spec "$AUTHURL" ", ca_file: /etc/hpcinit/tls/ca.pem, auth_file: /etc/hpcinit/etcd-auth"
run "$T/auth-wrong"
check "a wrong password: apply exits 1" test "$rc" = 1
check "... the error names the auth file and etcd's answer" \
	grep -q "etcd refused the user in $R/etc/hpcinit/etcd-auth: .*authentication failed" "$T/auth-wrong"
echo "# wrong password: $(grep -m1 "refused the user" "$T/auth-wrong")"
check "... no password (right or wrong) in any message, status file or log" bash -c "
	! grep -rqF -e '$WRONG' -e '$PASSWORD' '$T/auth-wrong' '$T/auth-ok' '$T/auth-none' '$T/tls-ok' '$R/var' '$R/run' 2>/dev/null"


# 3. credentials: never over plain HTTP, never readable by others
printf 'root:%s\n' "$PASSWORD" > "$R/etc/hpcinit/etcd-auth"
node_spec "http://127.0.0.1:$((P0 + 2))" ", auth_file: /etc/hpcinit/etcd-auth"
run "$T/auth-http"
check "auth_file with an http:// endpoint: a spec error (exit 2) at auth_file's place" \
	bash -c "test $rc = 2 && grep -q 'node.yaml:3:[0-9]*: .*auth_file sends its password.*http://127.0.0.1:$((P0 + 2)) is not https://' '$T/auth-http'"
echo "# http: $(grep -m1 'auth_file sends' "$T/auth-http")"
check "... and the helper itself refuses a password for an http:// endpoint (exit 3), asking nothing" bash -c "
	'$BUILD/hpcinit-etcd' --endpoint http://127.0.0.1:$((P0 + 2)) --auth '$R/etc/hpcinit/etcd-auth' list /x/ \
		>'$T/helper-http' 2>&1; test \$? = 3 && grep -q 'is not https://.*clear text; refused' '$T/helper-http'"
chmod 0644 "$R/etc/hpcinit/etcd-auth"
node_spec "$AUTHURL" ", ca_file: /etc/hpcinit/tls/ca.pem, auth_file: /etc/hpcinit/etcd-auth"
run "$T/auth-0644"
check "auth_file readable by others (0644): refused, exit 1, naming the file and the fix" \
	bash -c "test $rc = 1 && grep -q 'discovery.auth_file /etc/hpcinit/etcd-auth: must be a regular file not readable by group or others (mode 0644); refused (chmod 600' '$T/auth-0644'"
chmod 0600 "$R/etc/hpcinit/etcd-auth"
chown 65534 "$R/etc/hpcinit/etcd-auth"
run "$T/auth-owner"
check "auth_file owned by another user: refused, exit 1" \
	bash -c "test $rc = 1 && grep -q 'discovery.auth_file /etc/hpcinit/etcd-auth: owned by uid 65534, not root' '$T/auth-owner'"
chown 0 "$R/etc/hpcinit/etcd-auth"
chmod 0640 "$R/etc/hpcinit/tls/client.key"
node_spec "$TLSURL" ", ca_file: /etc/hpcinit/tls/ca.pem, cert_file: /etc/hpcinit/tls/client.pem, key_file: /etc/hpcinit/tls/client.key"
run "$T/key-0640"
check "key_file readable by its group (0640): refused, exit 1" \
	bash -c "test $rc = 1 && grep -q 'discovery.key_file /etc/hpcinit/tls/client.key: must be a regular file not readable by group or others (mode 0640)' '$T/key-0640'"
chmod 0600 "$R/etc/hpcinit/tls/client.key"
ln -sf /etc/shadow "$R/etc/hpcinit/etcd-link"
node_spec "$AUTHURL" ", ca_file: /etc/hpcinit/tls/ca.pem, auth_file: /etc/hpcinit/etcd-link"
run "$T/auth-link"
check "auth_file a symbolic link: refused, exit 1" \
	bash -c "test $rc = 1 && grep -q 'discovery.auth_file /etc/hpcinit/etcd-link: is a symbolic link; refused' '$T/auth-link'"

# 4. a stand-in for a hostile endpoint (real etcd never does this): it issues a token, then
# answers every call with 401.  The helper logs in again once, then fails; it never recurses.
cat > "$T/always401.py" <<'PY'
import http.server, json, ssl, sys
logins = 0
class H(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        global logins
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.path == "/v3/auth/authenticate":
            logins += 1
            code, body = 200, {"token": "t%d" % logins}
        else:
            code, body = 401, {"error": "invalid auth token", "code": 16}
        data = json.dumps(body).encode()
        # counted before the answer goes out: the helper may exit on it at once
        with open(sys.argv[3], "w") as f:
            f.write("%d\n" % logins)
        self.send_response(code)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(sys.argv[2] + "/server.pem", sys.argv[2] + "/server.key")
s.socket = ctx.wrap_socket(s.socket, server_side=True)
s.serve_forever()
PY
python3 "$T/always401.py" $((P0 + 4)) "$T" "$T/logins" &
PIDS+=($!)
for _ in $(seq 1 50); do curl -s --cacert ca.pem -o /dev/null "https://127.0.0.1:$((P0 + 4))/" && break; sleep 0.1; done
rc=0
timeout 20 "$BUILD/hpcinit-etcd" --endpoint "https://127.0.0.1:$((P0 + 4))" --cacert "$T/ca.pem" \
	--auth "$R/etc/hpcinit/etcd-auth" list /x/ >"$T/helper-401" 2>&1 || rc=$?
check "an endpoint answering 401 to every call: the helper exits 3 (refused), no crash" test "$rc" = 3
check "... saying the endpoint refused the token it had just issued" grep -q 'refused the token it had just issued (HTTP 401)' "$T/helper-401"
check "... after exactly two logins (the first, and one renewal)" test "$(cat "$T/logins")" = 2
echo "# 401: $(grep -m1 'just issued' "$T/helper-401")"

done_testing
