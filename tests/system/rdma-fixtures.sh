#!/bin/bash
# rdma on fixture sysfs trees, through the real binary: the exact verdict of each case.
# The trees are under tests/fixtures/rdma; each carries /etc/hpcinit/fake-rdma, the
# documented test-only verbs behaviour (libexec/rdma-fake.c, in the probe helper of test builds): no RDMA hardware here.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
need_fixture_ops
R=$T/root
# The probes pin memory without CAP_IPC_LOCK: make the limit the same everywhere.
ulimit -l 8192

# run_case CASE: check --only rdma on a copy of the fixture; sets rc and $T/out
run_case() {
	fixture "rdma/$1" "$R"
	[ -z "${2:-}" ] || eval "$2"
	run_hpc_stdout "$T/out" check --root "$R" -c "$R/node.yaml" --only rdma --json
}

run_case hbv3-healthy
is "healthy HBv3: exit 0" "$rc" 0
is "healthy HBv3: ok" "$(jget "$T/out" rdma status)" ok
is "healthy HBv3: summary" "$(jget "$T/out" rdma summary)" \
	"mlx5_ib0: 200 Gb/s InfiniBand, verbs probe ok (reg_mr 1 MiB); ib0 172.16.1.4 -> mlx5_ib0"
has_detail "healthy HBv3: mlx5_an0 (Ethernet) is left alone" "$T/out" rdma '^mlx5_an0: not selected'
has_detail "healthy HBv3: inventory of mlx5_ib0 port 1" "$T/out" rdma \
	'^mlx5_ib0 port 1: ACTIVE, LinkUp, 200 Gb/sec \(4X HDR\), InfiniBand, lid 0x2a7, sm_lid 0x1, pkey 0x800b \(2 set\)$'
has_detail "healthy HBv3: the fixture ops are named as fake" "$T/out" rdma '^verbs: FAKE fixture ops from .*/etc/hpcinit/fake-rdma \(test only\)$'
has_detail "healthy HBv3: reg_mr pinned under the memlock limit" "$T/out" rdma \
	'^mlx5_ib0: verbs probe ok in [0-9]+ ms: fw 20.28.4000, 1 port\(s\), registered 1 MiB \(memlock 8192 KiB\)$'

run_case port-down
is "port down: exit 1" "$rc" 1
is "port down: failed" "$(jget "$T/out" rdma status)" failed
is "port down: summary" "$(jget "$T/out" rdma summary)" "port-down: mlx5_ib0 port 1 is DOWN (phys_state Disabled)"
has_tag "port down: the finding" "$T/out" rdma failed rdma.port-down

run_case rate-low
is "rate too low: exit 1" "$rc" 1
is "rate too low: summary" "$(jget "$T/out" rdma summary)" \
	"rate: mlx5_ib0 port 1 runs at 100 Gb/sec (4X EDR), below rdma.min_rate_gbps 200"
has_tag "rate too low: the finding" "$T/out" rdma failed rdma.rate

run_case ipoib-missing
is "IPoIB missing: exit 1" "$rc" 1
is "IPoIB missing: summary" "$(jget "$T/out" rdma summary)" \
	"ipoib-missing: ib0: no such interface (/sys/class/net/ib0); on Azure, waagent creates it with OS.EnableRDMA=y on IPoIB SKUs"
has_tag "IPoIB missing: the finding" "$T/out" rdma failed rdma.ipoib-missing
has_detail "IPoIB missing: the device itself still probed fine" "$T/out" rdma '^mlx5_ib0: verbs probe ok'

# The probe helper is not installed (an image without the hpcinit-rdma package):
# said first, not as "libibverbs does not list the device".
mkdir -p "$T/no-helper"
HPCINIT_LIBEXEC_DIR=$T/no-helper run_case hbv3-healthy
is "no helper: exit 1" "$rc" 1
is "no helper: summary" "$(jget "$T/out" rdma summary)" \
	"no-helper: $T/no-helper/hpcinit-rdma-probe is not installed: the verbs probes cannot run; install the hpcinit-rdma package"
has_tag "no helper: the finding" "$T/out" rdma failed rdma.no-helper
check "no helper: not reported as not-listed" bash -c '! grep -q "not-listed" <<<"$1"' _ "$(jget "$T/out" rdma details)"

run_case no-devices
is "no devices: exit 1" "$rc" 1
is "no devices: summary" "$(jget "$T/out" rdma summary)" \
	"no-devices: no RDMA devices (/sys/class/infiniband is empty): no RDMA driver is loaded, or this VM size has no RDMA network"
has_tag "no devices: the finding" "$T/out" rdma failed rdma.no-devices
has_detail "no devices: no probe helper is started for them" "$T/out" rdma \
	'^verbs: no uverbs node in /sys/class/infiniband_verbs: nothing for libibverbs to list \(not asked\)$'

t0=$(date +%s%N)
run_case a8a9
t1=$(date +%s%N)
is "A8/A9: exit 1" "$rc" 1
is "A8/A9: summary names the hang" "$(jget "$T/out" rdma summary)" \
	"hang: mlx4_0: ibv_open_device did not return within 1000 ms; probe killed (+3 more)"
has_tag "A8/A9: the finding" "$T/out" rdma failed rdma.hang
has_detail "A8/A9: iWARP where InfiniBand is expected" "$T/out" rdma '^iwarp: mlx4_0 reports transport iWARP \(node_type 4: RNIC\)'
has_detail "A8/A9: fw_ver 0.0.000" "$T/out" rdma '^fw-0.0.000: mlx4_0 reports fw_ver 0.0.000'
has_detail "A8/A9: Ethernet link layer" "$T/out" rdma '^link-layer: mlx4_0 has link layer Ethernet; rdma.link_layer is infiniband$'
has_tag "A8/A9: every cause a finding" "$T/out" rdma failed rdma.hang
has_tag "A8/A9: every cause a finding" "$T/out" rdma failed rdma.iwarp
has_tag "A8/A9: every cause a finding" "$T/out" rdma failed rdma.fw-0.0.000
has_tag "A8/A9: every cause a finding" "$T/out" rdma failed rdma.link-layer
# The module's own duration (from the report), so a slow wrapper (valgrind) or a loaded
# machine starting the process does not count against the probe's deadline.
check "A8/A9: the hung probe is cut off at open_timeout (< open_timeout + 5 s, slack for a loaded machine)" [ "$(jget "$T/out" rdma duration_ms)" -lt 6000 ]
echo "# A8/A9 run: $(((t1 - t0) / 1000000)) ms wall, rdma module $(jget "$T/out" rdma duration_ms) ms"

# Variants of the healthy tree, one change each.
run_case hbv3-healthy "sed -i 's/mlx5_ib\*/mlx5_[0-9]*/' \$R/node.yaml"
is "misnamed devices: summary" "$(jget "$T/out" rdma summary)" \
	"no-match: no device matches rdma.devices 'mlx5_[0-9]*' (found: mlx5_an0 (Ethernet), mlx5_ib0 (InfiniBand)); Azure names InfiniBand ports mlx5_ib* and accelerated-networking NICs mlx5_an*"
has_tag "misnamed devices: the finding" "$T/out" rdma failed rdma.no-match

# devices: "*" on HBv3: the accelerated-networking NIC (Ethernet) is skipped, not an error.
run_case hbv3-healthy "sed -i 's/\"mlx5_ib\*\"/\"*\"/' \$R/node.yaml"
is "devices '*': exit 0" "$rc" 0
is "devices '*': same verdict" "$(jget "$T/out" rdma summary)" \
	"mlx5_ib0: 200 Gb/s InfiniBand, verbs probe ok (reg_mr 1 MiB); ib0 172.16.1.4 -> mlx5_ib0"
has_detail "devices '*': mlx5_an0 left out for its link layer" "$T/out" rdma \
	'^mlx5_an0: not selected \(link layer differs from rdma.link_layer\)$'

run_case hbv3-healthy "printf '1: DOWN\n' >\$R/sys/class/infiniband/mlx5_ib0/ports/1/state; printf '2: Polling\n' >\$R/sys/class/infiniband/mlx5_ib0/ports/1/phys_state"
is "port polling: summary" "$(jget "$T/out" rdma summary)" \
	"port-polling: mlx5_ib0 port 1 is DOWN with phys_state Polling: no link partner answers (cable, switch port, or the fabric attachment)"
has_tag "port polling: the finding" "$T/out" rdma failed rdma.port-polling

run_case hbv3-healthy "printf '2: INIT\n' >\$R/sys/class/infiniband/mlx5_ib0/ports/1/state"
is "no subnet manager: summary" "$(jget "$T/out" rdma summary)" \
	"port-init: mlx5_ib0 port 1 has link (LinkUp) but is INIT: no subnet manager has activated it"
has_tag "no subnet manager: the finding" "$T/out" rdma failed rdma.port-init

run_case hbv3-healthy "rm -r \$R/sys/class/infiniband_verbs/uverbs0"
is "no uverbs node: summary" "$(jget "$T/out" rdma summary)" \
	"no-uverbs: mlx5_ib0 has no uverbs node in /sys/class/infiniband_verbs: userspace cannot use it (load ib_uverbs)"
has_tag "no uverbs node: the finding" "$T/out" rdma failed rdma.no-uverbs

run_case hbv3-healthy "sed -i 's/^ipoib ib0 172.16.1.4/ipoib ib0 -/' \$R/etc/hpcinit/fake-rdma"
is "IPoIB without address: summary" "$(jget "$T/out" rdma summary)" "ipoib-no-address: ib0 is up but has no address"
has_tag "IPoIB without address: the finding" "$T/out" rdma failed rdma.ipoib-no-address

run_case hbv3-healthy "printf 'down\n' >\$R/sys/class/net/ib0/operstate"
is "IPoIB down: summary" "$(jget "$T/out" rdma summary)" "ipoib-down: ib0 is down"
has_tag "IPoIB down: the finding" "$T/out" rdma failed rdma.ipoib-down

run_case hbv3-healthy "sed -i 's/ mlx5_ib0\$/ EADDRNOTAVAIL/' \$R/etc/hpcinit/fake-rdma"
is "IPoIB address not resolvable: summary" "$(jget "$T/out" rdma summary)" \
	"ipoib-resolve: ib0: rdma_resolve_addr(172.16.1.4) failed: EADDRNOTAVAIL (Cannot assign requested address)"
has_tag "IPoIB address not resolvable: the finding" "$T/out" rdma failed rdma.ipoib-resolve

run_case hbv3-healthy "sed -i 's/^probe mlx5_ib0 ok/probe mlx5_ib0 fail ibv_alloc_pd ENOMEM/' \$R/etc/hpcinit/fake-rdma"
is "alloc_pd failure: summary" "$(jget "$T/out" rdma summary)" \
	"probe-failed: mlx5_ib0: ibv_alloc_pd failed: ENOMEM (Cannot allocate memory)"
has_tag "alloc_pd failure: the finding" "$T/out" rdma failed rdma.probe-failed

# memlock too low for reg_mr: the kernel refuses to pin 64 MiB under a 4096 KiB limit.
run_case hbv3-healthy "sed -i 's/reg_mr: 1M/reg_mr: 64M/' \$R/node.yaml"
is "reg_mr ENOMEM (8192 KiB): summary" "$(jget "$T/out" rdma summary)" \
	"reg-mr-enomem: mlx5_ib0: ibv_reg_mr of 64 MiB failed with ENOMEM: the memlock limit in force is 8192 KiB (hard 8192 KiB); set memlock: unlimited and restart the services that use RDMA"
has_tag "reg_mr ENOMEM (8192 KiB): the finding" "$T/out" rdma failed rdma.reg-mr-enomem
fixture rdma/hbv3-healthy "$R"
sed -i 's/reg_mr: 1M/reg_mr: 64M/' "$R/node.yaml"
(ulimit -l 4096 && hpcinit check --root "$R" -c "$R/node.yaml" --only rdma --json >"$T/out" 2>/dev/null) || true
is "reg_mr ENOMEM names the limit in force (4096 KiB)" "$(jget "$T/out" rdma summary)" \
	"reg-mr-enomem: mlx5_ib0: ibv_reg_mr of 64 MiB failed with ENOMEM: the memlock limit in force is 4096 KiB (hard 4096 KiB); set memlock: unlimited and restart the services that use RDMA"
has_tag "reg_mr ENOMEM names the limit in force (4096 KiB): the finding" "$T/out" rdma failed rdma.reg-mr-enomem

# The probe dies (a signal, no answer): named as a crash, not as a hang or a failure.
# A stand-in helper lists as the real one does and kills itself for the probe.
mkdir -p "$T/crash"
cat >"$T/crash/hpcinit-rdma-probe" <<EOF2
#!/bin/bash
for a in "\$@"; do [ "\$a" = list ] && exec "${HPCINIT_LIBEXEC_DIR:-$TOP_BUILDDIR}/hpcinit-rdma-probe" "\$@"; done
kill -SEGV \$\$
EOF2
chmod +x "$T/crash/hpcinit-rdma-probe"
HPCINIT_LIBEXEC_DIR=$T/crash run_case hbv3-healthy
is "probe crashed: exit 1" "$rc" 1
has_tag "probe crashed" "$T/out" rdma failed rdma.probe-crashed
check "probe crashed: the signal named" contains "$T/out" "with signal Segmentation fault"

# required: false turns absence into degraded (exit 3).
run_case no-devices "sed -i 's/required: true/required: false/' \$R/node.yaml"
is "not required, no devices: exit 3" "$rc" 3
is "not required, no devices: degraded" "$(jget "$T/out" rdma status)" degraded
is "not required: summary says why it is only degraded" "$(jget "$T/out" rdma summary)" \
	"no-devices: no RDMA devices (/sys/class/infiniband is empty): no RDMA driver is loaded, or this VM size has no RDMA network [rdma.required: false]"
has_tag "not required: degraded, the same tag" "$T/out" rdma degraded rdma.no-devices

# apply and plan write nothing: rdma only observes.
fixture rdma/hbv3-healthy "$R"
snapshot "$R" >"$T/s1"
run_hpc "$T/apply" apply --root "$R" -c "$R/node.yaml" --only rdma
is "apply on the healthy tree: exit 0" "$rc" 0
snapshot "$R" | grep -v -e ' \.$' -e ./run -e ./var >"$T/s2"
grep -v -e ' \.$' -e ./run -e ./var "$T/s1" >"$T/s1f"
check "apply wrote nothing but the run status" same_file "$T/s2" "$T/s1f"

done_testing
