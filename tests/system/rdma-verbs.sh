#!/bin/bash
# The real libibverbs path: SYSFS_PATH points it at a fixture tree and a private
# /dev/infiniband/uverbs0 exists, so ibv_get_device_list() lists the fixture device.
# Opening it fails (there is no driver behind char 231:192): the agent must name the
# call and the errno.  Without the device node, the same tree gives "not-listed".
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
R=$T/root
fixture rdma/hbv3-healthy "$R"
rm "$R/etc/hpcinit/fake-rdma"           # the real ops, not the fixture ops
sed -i '/ipoib/d' "$R/node.yaml"        # getifaddrs sees this machine's interfaces, not the tree's

cat >"$T/run.sh" <<EOF2
"$HPCINIT" check --root "$R" -c "$R/node.yaml" --only rdma --json >"$T/out" 2>"$T/err" || echo \$? >"$T/rc"
EOF2
in_verbs_ns "$T/run.sh"
has_detail "libibverbs (SYSFS_PATH) lists the fixture device" "$T/out" rdma '^verbs: libibverbs lists 1 device\(s\)$'
has_detail "no fake ops in this run" "$T/out" rdma '^verbs: libibverbs '
is "exit code 1" "$(cat "$T/rc" 2>/dev/null)" 1
summary=$(jget "$T/out" rdma summary)
case $summary in
"open-failed: mlx5_ib0: ibv_open_device failed: "E[A-Z]*" ("*")") ok "open failure named: $summary" ;;
*) not_ok "open failure named"; echo "  got: $summary" ;;
esac
has_tag "open failure" "$T/out" rdma failed rdma.open-failed
has_detail "sysfs inventory read through the root" "$T/out" rdma '^mlx5_ib0 port 1: ACTIVE, LinkUp, 200 Gb/sec \(4X HDR\), InfiniBand'

# Control: the same tree without the device node is not listed, and that is named too.
run_hpc_stdout "$T/out2" check --root "$R" -c "$R/node.yaml" --only rdma --json
has_detail "without /dev/infiniband/uverbs0 libibverbs lists nothing" "$T/out2" rdma '^verbs: libibverbs lists 0 device\(s\)$'
is "and the anomaly is not-listed" "$(jget "$T/out2" rdma summary)" \
	"not-listed: mlx5_ib0 has uverbs0 but the verbs library does not list it: /dev/infiniband/uverbs0 is missing or no provider (ibverbs-providers) drives it"
has_tag "and the anomaly is not-listed: the finding" "$T/out2" rdma failed rdma.not-listed
# The real librdmacm path: ipoib on this machine's loopback (real getifaddrs).  There is
# no rdma_cm device here, so rdma_resolve_addr's setup fails, and says which call and why.
mkdir -p "$R/sys/class/net/lo"
printf 'unknown\n' >"$R/sys/class/net/lo/operstate"
printf '0x9\n' >"$R/sys/class/net/lo/flags"
printf '772\n' >"$R/sys/class/net/lo/type"
printf '  ipoib: lo\n' >>"$R/node.yaml"
in_verbs_ns "$T/run.sh"
has_detail "ipoib: the real address came from getifaddrs" "$T/out" rdma '^ipoib-resolve: lo: rdma_(create_id|resolve_addr)\(127\.0\.0\.1\) failed: E[A-Z]+ \('
has_detail "ipoib: a non-IPoIB interface is called out" "$T/out" rdma '^warning: lo has type 772, not InfiniBand \(32\): not an IPoIB interface$'
done_testing
