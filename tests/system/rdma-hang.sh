#!/bin/bash
# A verbs probe that never returns: hang_shim.so (LD_PRELOAD) makes ibv_open_device
# block, as on Azure A8/A9 (in the probe helper hpcinit-rdma-probe, which the agent runs
# with its own environment).  The agent kills the probe, names the device and the call,
# finishes within open_timeout + 1 s, and the other modules' results are intact.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/rdma-lib.sh"
SHIM=$TOP_BUILDDIR/tests/system/hang_shim.so
[ -f "$SHIM" ] || { echo "missing $SHIM (make check builds it)"; exit 99; }
R=$T/root
mkroot "$R"
cp -a "$FIX/kernel/debian/." "$R/"
empty_files "$R"
cp -a "$FIX/rdma/hbv3-healthy/." "$R/"
rm "$R/etc/hpcinit/fake-rdma"
cat >"$R/node.yaml" <<'EOF2'
version: 1
cluster: {name: hang}
memlock: {limit: unlimited}
kernel: {hold: true, modules: [mlx5_ib, ib_uverbs]}
rdma: {devices: "mlx5_ib*", link_layer: infiniband, open_timeout: 2s, reg_mr: 1M}
EOF2

# ASan (the sanitizer build) wants its runtime first; the shim is preloaded before it.
cat >"$T/run.sh" <<EOF2
export ASAN_OPTIONS="\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}verify_asan_link_order=0"
t0=\$(date +%s%N)
LD_PRELOAD="$SHIM" "$HPCINIT" apply --root "$R" -c "$R/node.yaml" --json >"$T/out" 2>"$T/err" || echo \$? >"$T/rc"
t1=\$(date +%s%N)
echo \$(( (t1 - t0) / 1000000 )) >"$T/ms"
EOF2
in_verbs_ns "$T/run.sh"
ms=$(cat "$T/ms")
is "rdma reports the hang by device and call" "$(jget "$T/out" rdma summary)" \
	"hang: mlx5_ib0: ibv_open_device did not return within 2000 ms; probe killed"
is "rdma failed" "$(jget "$T/out" rdma status)" failed
# Bounded, not timed: a hang that were not cut off would last forever; the
# slack is for a loaded 2-core CI machine (the benchmarks measure speed).
check "the whole run is bounded by open_timeout + 5 s (${ms} ms)" [ "$ms" -lt 7000 ]
check "and not less than open_timeout (${ms} ms)" [ "$ms" -ge 2000 ]
is "exit code 1 (a step failed)" "$(cat "$T/rc" 2>/dev/null)" 1
is "kernel still ran: changed" "$(jget "$T/out" kernel status)" changed
is "kernel summary intact" "$(jget "$T/out" kernel summary)" "kernel 5.15.0-1057-azure held (Debian/Ubuntu)"
is "memlock still ran: changed" "$(jget "$T/out" memlock status)" changed
check "the run was recorded" grep -q '"name": "rdma", "status": "failed"' "$R/run/hpcinit/status.json"
check "kernel hold really applied" grep -q '^Status: hold ok installed' "$R/var/lib/dpkg/status"
# The probes are hpcinit-rdma-probe helpers (the shim reached them through the agent's environment).
no_probe_left() { ! pgrep -f -- "apply --root $R " >/dev/null && ! pgrep -f -- "hpcinit-rdma-probe --root $R " >/dev/null; }
check "no probe process left behind" no_probe_left
done_testing
