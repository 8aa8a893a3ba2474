# A real NFS server for tests: nfs-ganesha (and rpcbind for v3) inside a
# network namespace, and a second namespace for the agent, joined by a
# bridge.  Source after tests/system/lib.sh (it uses $T and cleanup_add).
#
# Names and addresses are reserved for the nfs tests and can be overridden:
#   HPN_PREFIX (hpn-)  namespace prefix: ${HPN_PREFIX}srv, ${HPN_PREFIX}cli
#   HPN_BRIDGE (hpnbr0)
#   HPN_NET    (198.18.2)  /24 in the benchmarking range; .2 server, .3 client
# and the server's NFSv4 block can be extended:
#   HPN_NFSV4_EXTRA  e.g. "Minor_Versions = 1;" (a server that speaks 4.1 only)
# Nothing gets a default route; traffic stays between the two namespaces.
#
# The server runs in its own mount namespace with a private /run and
# /var/lib/nfs, so its rpcbind socket and state never meet the host's or
# another test's.  Everything is stopped by PID and torn down by a trap.

: "${HPN_PREFIX:=hpn-}"
: "${HPN_BRIDGE:=hpnbr0}"
: "${HPN_NET:=198.18.2}"
HPN_SRV="${HPN_PREFIX}srv"
HPN_CLI="${HPN_PREFIX}cli"
HPN_SRV_IP="$HPN_NET.2"
HPN_CLI_IP="$HPN_NET.3"
HPN_EXPORT_DIR="$T/export"
HPN_GANESHA_PID=""
HPN_RPCBIND_PIDFILE="$T/rpcbind.pid"

hpn_need() {
	local missing=""
	for p in ip unshare ganesha.nfsd rpcbind rpcinfo python3; do
		command -v "$p" >/dev/null 2>&1 || missing="$missing $p"
	done
	# mount.nfs (nfs-common): the real mount(8) must reach the kernel's ENODEV.
	[ -x /sbin/mount.nfs ] || [ -x /usr/sbin/mount.nfs ] || missing="$missing mount.nfs(nfs-common)"
	[ -z "$missing" ] || { echo "missing:$missing (tools/setup.sh installs them)"; exit 1; }
	[ -e /usr/lib/x86_64-linux-gnu/ganesha/libfsalvfs.so ] || ls /usr/lib*/ganesha/libfsalvfs.so >/dev/null 2>&1 ||
		{ echo "missing: nfs-ganesha-vfs"; exit 1; }
}

hpn_teardown() {
	hpn_server_stop
	ip netns del "$HPN_SRV" 2>/dev/null || true
	ip netns del "$HPN_CLI" 2>/dev/null || true
	ip link del "${HPN_PREFIX}srv-h" 2>/dev/null || true
	ip link del "${HPN_PREFIX}cli-h" 2>/dev/null || true
	ip link del "$HPN_BRIDGE" 2>/dev/null || true
}

hpn_setup() {
	hpn_need
	# The names are fixed, so two runs of the suite on one machine (a CI
	# run and a developer's make check) take turns instead of tearing down
	# each other's namespaces ("Network is unreachable" half way through).
	exec {HPN_LOCK_FD}>"/tmp/hpcinit-${HPN_PREFIX}nfs.lock"
	flock -w 900 "$HPN_LOCK_FD" ||
		{ echo "FAIL: another test holds /tmp/hpcinit-${HPN_PREFIX}nfs.lock for 15 minutes" >&2; exit 1; }
	# Leftovers of a killed run use our reserved names: they are ours to remove.
	hpn_teardown
	cleanup_add hpn_teardown
	ip link add "$HPN_BRIDGE" type bridge
	ip link set "$HPN_BRIDGE" up
	for n in srv cli; do
		ip netns add "$HPN_PREFIX$n"
		ip link add "${HPN_PREFIX}$n-h" type veth peer name eth0 netns "$HPN_PREFIX$n"
		ip link set "${HPN_PREFIX}$n-h" master "$HPN_BRIDGE" up
		ip -n "$HPN_PREFIX$n" link set lo up
		ip -n "$HPN_PREFIX$n" link set eth0 up
	done
	ip -n "$HPN_SRV" addr add "$HPN_SRV_IP/24" dev eth0
	ip -n "$HPN_CLI" addr add "$HPN_CLI_IP/24" dev eth0
	mkdir -p "$HPN_EXPORT_DIR/data"
	cat >"$T/ganesha.conf" <<-EOF
	NFS_CORE_PARAM {
		Bind_addr = $HPN_SRV_IP;
		Protocols = 3, 4;
		Enable_NLM = false;
		Enable_UDP = false;
		Enable_RQUOTA = false;
		Mount_Path_Pseudo = true;
	}
	NFSV4 { Graceless = true; ${HPN_NFSV4_EXTRA:-} }
	NFS_KRB5 { Active_krb5 = false; }
	MDCACHE { Dir_Chunk = 0; }
	EXPORT {
		Export_Id = 1;
		Path = $HPN_EXPORT_DIR;
		Pseudo = /export;
		Access_Type = RW;
		Squash = No_Root_Squash;
		Attr_Expiration_Time = 0;
		Protocols = 3, 4;
		Transports = TCP;
		SecType = sys;
		FSAL { Name = VFS; }
	}
	EOF
	# Runs inside the server's namespaces: private /run and /var/lib/nfs,
	# rpcbind in the background, then ganesha in the foreground (same PID).
	cat >"$T/ganesha-run.sh" <<-EOF
	set -e
	mount -t tmpfs tmpfs /run
	mount -t tmpfs tmpfs /var/lib/nfs
	mkdir -p /run/ganesha /var/lib/nfs/ganesha
	rpcbind -f -w &
	echo \$! >"$HPN_RPCBIND_PIDFILE"
	for i in \$(seq 50); do [ -S /run/rpcbind.sock ] && break; sleep 0.1; done
	exec ganesha.nfsd -F -f "$T/ganesha.conf" -L "$T/ganesha.log" -p /run/ganesha/ganesha.pid
	EOF
}

# Is the server answering NFS and MOUNT (v3, through the portmapper) yet?
hpn_server_ready() {
	ip netns exec "$HPN_CLI" rpcinfo -T tcp "$HPN_SRV_IP" mountd 3 >/dev/null 2>&1 &&
		ip netns exec "$HPN_CLI" rpcinfo -T tcp "$HPN_SRV_IP" nfs 4 >/dev/null 2>&1
}

hpn_server_start() {
	ip netns exec "$HPN_SRV" unshare --mount --propagation private \
		/bin/sh "$T/ganesha-run.sh" >>"$T/ganesha.out" 2>&1 &
	HPN_GANESHA_PID=$!
	for _ in $(seq 100); do
		hpn_server_ready && return 0
		kill -0 "$HPN_GANESHA_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "nfs-ganesha did not come up:"; tail -20 "$T/ganesha.out" "$T/ganesha.log" 2>/dev/null
	return 1
}

hpn_server_stop() {
	local rp=""
	[ -f "$HPN_RPCBIND_PIDFILE" ] && rp=$(cat "$HPN_RPCBIND_PIDFILE")
	if [ -n "$HPN_GANESHA_PID" ]; then
		kill "$HPN_GANESHA_PID" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$HPN_GANESHA_PID" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$HPN_GANESHA_PID" 2>/dev/null || true
		wait "$HPN_GANESHA_PID" 2>/dev/null || true
		HPN_GANESHA_PID=""
	fi
	if [ -n "$rp" ]; then
		kill "$rp" 2>/dev/null || true
		for _ in $(seq 50); do kill -0 "$rp" 2>/dev/null || break; sleep 0.1; done
		kill -9 "$rp" 2>/dev/null || true
		rm -f "$HPN_RPCBIND_PIDFILE"
	fi
}

# hpn_agent ARGS...: run the agent in the client namespace.
hpn_agent() {
	ip netns exec "$HPN_CLI" ${HPCINIT_WRAPPER:-} "$HPCINIT" "$@"
}

# json_get FILE MODULE FIELD: a module's field from the --json report
# (lists are printed one item a line).
json_get() {
	python3 - "$1" "$2" "$3" <<-'EOF' || echo "(no JSON report in $1)"
	import json, sys
	try:
	    rep = json.load(open(sys.argv[1]))
	except Exception as e:
	    print("(no JSON report in %s: %s)" % (sys.argv[1], e))
	    sys.exit(0)
	for m in rep["modules"]:
	    if m["name"] == sys.argv[2]:
	        v = m.get(sys.argv[3], "")
	        print("\n".join(v) if isinstance(v, list) else v)
	        break
	else:
	    print("(module %s not in the report)" % sys.argv[2])
	EOF
}
