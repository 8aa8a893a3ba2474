#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Slurm arrival, by hand (not part of make check; root, network namespaces,
# Debian's slurmctld/slurmd 22.05 and munge, as tests/cluster/slurm.sh):
# a head running slurmctld (configless, SlurmctldDebug=debug2 for its
# registration lines) and N computes that all run "hpcinit apply" at once.
# The head's resolver knows no compute's name.
#   1. baseline: slurm.register_window 0 (no pacing): when slurmctld logged
#      each node's first registration, the spread (first to last) and the
#      largest gap;
#   2. paced: every node leaves, then all apply again at once with
#      slurm.register_window WINDOW: each node's slot (its apply -v) and the
#      same figures; goal: spread near WINDOW x (N-1)/N, gaps near WINDOW/N;
#   and in each, the RPCs slurmctld served while the N nodes arrived (sdiag,
#   reset first), a node's share: what registering costs the controller;
#   3. steady state: "hpcinit check" on every node every INTERVAL seconds
#      for STEADY seconds (slurmd's HealthCheckProgram does it every
#      HealthCheckInterval); slurmctld's RPC counts (sdiag --reset first;
#      REQUEST_STATS_INFO, sdiag's own, left out), split into what the checks
#      asked and slurmd's own traffic, as calls a node an hour: measured, and
#      at HealthCheckInterval=300 s.  With BASELINE_HPCINIT=<an older
#      hpcinit>, the same window with its checks, in the same run.
# Usage: tests/bench/slurm-arrival.sh [N [WINDOW [STEADY [INTERVAL]]]]
#        defaults 8 computes, 8s, 60 s, 10 s.
SIM_PREFIX=sla SIM_NET=198.19.57
. "$(dirname "$0")/../cluster/lib.sh"
N=${1:-8} WINDOW=${2:-8s} STEADY=${3:-60} INTERVAL=${4:-10}
HC=300

for t in slurmctld slurmd munged scontrol sdiag; do
	command -v "$t" >/dev/null || { echo "SKIP: $t not installed (slurm-wlm, munge)"; exit 77; }
done

H=$(node 1)
COMPUTES=()
for i in $(seq 2 $((N + 1))); do COMPUTES+=("$(node "$i")"); done
sim up $((N + 1)) --shared "$SHARED" --dns >/dev/null
HA=$(sim addr "$H")
on "$H" sh -c "printf '127.0.0.1\\tlocalhost\\n%s\\t%s\\n' '$HA' '$H' > /etc/hosts"
head -c 128 /dev/urandom > "$T/munge.key"
for n in "$H" "${COMPUTES[@]}"; do on "$n" install -D -m 0600 "$T/munge.key" /etc/hpcinit/munge.key; done
for n in "${COMPUTES[@]}"; do on "$n" mount -t tmpfs sim-cgroup /sys/fs/cgroup; done

mkdir -m 0755 "$T/ctld"
cat > "$T/slurm.conf" <<EOF
ClusterName=$CLUSTER
SlurmctldHost=$H($HA)
SlurmctldParameters=enable_configless
SlurmctldDebug=debug2
AuthType=auth/munge
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MaxNodeCount=$((N + 8))
Nodeset=dyn Feature=$CLUSTER
PartitionName=main Nodes=dyn Default=YES MaxTime=INFINITE State=UP
ReturnToService=2
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$T/ctld
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=$T/slurmctld.log
SlurmdLogFile=$T/slurmd-%n.log
SlurmdSpoolDir=/var/lib/slurm/slurmd
TmpFS=/var/lib/slurm
EOF
echo 'CgroupPlugin=cgroup/v1' > "$T/cgroup.conf"
on "$H" install -D -m 0644 "$T/slurm.conf" /etc/slurm/slurm.conf
on "$H" install -D -m 0644 "$T/cgroup.conf" /etc/slurm/cgroup.conf
printf 'version: 1\ncluster: {name: %s, role: head}\nslurm: {key_file: /etc/hpcinit/munge.key}\n' "$CLUSTER" > "$T/head.yaml"
install_spec "$H" "$T/head.yaml"
hpc "$H" apply > "$T/head.out" 2>&1 || { cat "$T/head.out"; exit 1; }
on "$H" slurmctld -i
for i in $(seq 50); do on "$H" scontrol ping 2>/dev/null | grep -q 'is UP' && break; sleep 0.2; done

compute_spec() {   # [WINDOW]: no window key when empty (an older hpcinit knows none)
	cat <<-EOF
	version: 1
	cluster: {name: $CLUSTER, network: $SIM_NET.0/24, secret_file: /etc/hpcinit/cluster.key}
	discovery: {method: shared, dir: $SHARED/.hpcinit, expect: $N, wait: 60s}
	slurm: {conf_servers: ["$HA"], key_file: /etc/hpcinit/munge.key${1:+, register_window: $1}}
	EOF
}
# all_apply TAG: every compute's "hpcinit apply -v" at once; fails unless all exit 0
all_apply() {
	local n pids=() bad=0
	for n in "${COMPUTES[@]}"; do hpc "$n" apply -v > "$T/$1.$n.out" 2>&1 & pids+=($!); done
	for p in "${pids[@]}"; do wait "$p" || bad=$((bad + 1)); done
	[ "$bad" = 0 ] || { echo "$bad of $N applies failed; e.g.:"; sed 's/^/  | /' "$T/$1.${COMPUTES[0]}.out"; exit 1; }
}
# arrivals FROM_LINE: each compute's first registration in slurmctld's log after that line, in ms of the day
arrivals() {
	tail -n +"$1" "$T/slurmctld.log" | awk -v pre="$SIM_PREFIX" '
		/_slurm_rpc_node_registration complete for/ {
			for (i = 1; i <= NF; i++) if ($i == "for") name = $(i + 1)
			if (index(name, pre) != 1 || (name in seen)) next
			seen[name] = 1
			split(substr($1, 13, 12), t, /[:.]/)     # [YYYY-MM-DDTHH:MM:SS.mmm]
			print (t[1] * 3600 + t[2] * 60 + t[3]) * 1000 + t[4], name
		}' | sort -n
}
# rpcs FILE: slurmctld's RPC counts since the reset, by type, but sdiag's own
rpcs() {
	on "$H" sdiag | sed -n '/by message type/,/by user/p' |
		awk '/count:/ && $1 != "REQUEST_STATS_INFO" { sub("count:", "", $4); print $1, $4 }' > "$1"
}
# arrival_rpcs LABEL FILE: an arrival's RPCs, a node's share
arrival_rpcs() {
	awk -v label="$1" -v n="$N" '{ t += $2; what = what " " $1 "=" $2 }
		END { printf "%-9s arrival: slurmctld served %d RPCs, %.1f a node (%s )\n", label, t, t / n, what }' "$2"
}
# spread LABEL FILE: the figures of one arrival
spread() {
	awk -v label="$1" -v n="$N" '
		{ ms[NR] = $1 }
		END {
			gap = 0
			for (i = 2; i <= NR; i++) if (ms[i] - ms[i - 1] > gap) gap = ms[i] - ms[i - 1]
			printf "%-9s %d of %d registered; first to last %d ms; largest gap %d ms\n",
			       label, NR, n, NR ? ms[NR] - ms[1] : 0, gap
		}' "$2"
}

echo "slurm-arrival: $N computes, window $WINDOW, steady state $STEADY s with a check every $INTERVAL s"
# 1. baseline: no pacing
compute_spec 0s > "$T/c0.yaml"
for n in "${COMPUTES[@]}"; do install_spec "$n" "$T/c0.yaml"; done
from=$(( $(wc -l < "$T/slurmctld.log") + 1 ))
on "$H" sdiag --reset > /dev/null
all_apply base
rpcs "$T/base.rpcs"
arrivals "$from" > "$T/base.arr"
for n in "${COMPUTES[@]}"; do hpc "$n" leave > "$T/leave.$n.out" 2>&1 & done
wait
# 2. paced
compute_spec "$WINDOW" > "$T/cw.yaml"
for n in "${COMPUTES[@]}"; do install_spec "$n" "$T/cw.yaml"; done
from=$(( $(wc -l < "$T/slurmctld.log") + 1 ))
on "$H" sdiag --reset > /dev/null
all_apply paced
rpcs "$T/paced.rpcs"
arrivals "$from" > "$T/paced.arr"
echo "node slots (apply -v) and slurmctld's registration, ms after the first:"
first=$(head -1 "$T/paced.arr" | cut -d' ' -f1)
while read -r ms name; do
	slot=$(grep -o 'registration paced: [0-9]* ms' "$T/paced.$name.out" | grep -o '[0-9]*' || echo '?')
	printf '  %-12s slot %6s ms  registered +%d ms\n' "$name" "$slot" $((ms - first))
done < "$T/paced.arr"
spread "no pacing" "$T/base.arr"
spread "paced" "$T/paced.arr"
arrival_rpcs "no pacing" "$T/base.rpcs"
arrival_rpcs "paced" "$T/paced.rpcs"

# 3. steady state
steady() {   # LABEL BINARY
	local label=$1 bin=$2 t0 t1 n rounds=0
	compute_spec > "$T/cs.yaml"
	for n in "${COMPUTES[@]}"; do install_spec "$n" "$T/cs.yaml"; done
	for n in "${COMPUTES[@]}"; do on "$n" "$bin" check > /dev/null 2>&1 || true; done   # its first (it may ask)
	on "$H" sdiag --reset > /dev/null
	t0=$(date +%s%N)
	while [ $(( ($(date +%s%N) - t0) / 1000000000 )) -lt "$STEADY" ]; do
		for n in "${COMPUTES[@]}"; do on "$n" "$bin" check > /dev/null 2>&1 & done
		wait
		rounds=$((rounds + 1))
		sleep "$INTERVAL"
	done
	t1=$(date +%s%N)
	rpcs "$T/steady.$label"
	awk -v label="$label" -v n="$N" -v s="$(( (t1 - t0) / 1000000 ))" -v iv="$INTERVAL" -v hc="$HC" -v checks="$rounds" '
		/^MESSAGE_/ { own += $2; next }
		{ asked += $2; what = what " " $1 "=" $2 }
		END {
			printf "%-9s over %.1f s: checks asked slurmctld %d RPCs (%s ), slurmd itself %d\n", label, s / 1000,
			       asked, what == "" ? " none" : what, own
			printf "%-9s a node an hour: %.0f asked at one check every %d s, %.0f at HealthCheckInterval=%d s; slurmd itself %.0f\n",
			       label, asked / n * 3600000 / s, iv, asked / n / checks * 3600 / hc, hc, own / n * 3600000 / s
		}' "$T/steady.$label"
}
steady this "$HPCINIT"
[ -z "${BASELINE_HPCINIT:-}" ] || steady baseline "$BASELINE_HPCINIT"
on "$H" scontrol shutdown >/dev/null 2>&1 || true
