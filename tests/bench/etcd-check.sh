# SPDX-License-Identifier: MIT
#
# Sourced by the discovery benches (etcd-load.sh, etcd-converge.sh); usable by any script that
# keeps a node's "hpcinit apply" table and its root (the fault campaign: after each run).
#
# hostfile_agrees APPLY_OUT HOSTFILE: the invariant "a hostfile never disagrees with the report
# of the run that wrote it".  APPLY_OUT is the table "hpcinit apply" printed, HOSTFILE the
# hostfile.plain that run left.  Agrees (exit 0, nothing printed) when the hostfile step's count
# ("N nodes in DIR"), the discovery step's ("N nodes known through ...", "only N of M ..."; the failed nodes the
# hostfile step says it left out taken off), the count in the hostfile's own header ("cluster
# C, N nodes") and the hosts it lists are one number.  Else exit 1 and one line saying which
# numbers differ.  A run whose hostfile step did not end ok or changed is not judged (exit 0,
# "-" printed: it wrote no hostfile to agree with).
hostfile_agrees() {
	local out=$1 file=$2 disc hf left header lines
	# the first count in a step's summary ("1000 nodes known", "only 998 of 1000 expected")
	hf=$(awk '$1 == "hostfile" && ($2 == "ok" || $2 == "changed") {
		for (i = 4; i <= NF; i++) if ($i ~ /^[0-9]+$/) { print $i; exit } }' "$out" 2>/dev/null)
	[ -n "$hf" ] || { echo "-"; return 0; }
	disc=$(awk '$1 == "discovery" { for (i = 4; i <= NF; i++) if ($i ~ /^[0-9]+$/) { print $i; exit } }' "$out")
	left=$(awk '$1 == "hostfile" { if (match($0, /\([0-9]+ failed, left out/)) print substr($0, RSTART + 1) + 0; exit }' "$out")
	header=$(sed -n '1s/^# hpcinit: cluster [^,]*, \([0-9]*\) nodes\{0,1\};.*/\1/p' "$file" 2>/dev/null)
	lines=$(grep -vc '^#' "$file" 2>/dev/null || true)
	if [ "$hf" = "${header:-x}" ] && [ "$hf" = "${lines:-y}" ] && [ "$((hf + ${left:-0}))" = "${disc:-z}" ]; then
		return 0
	fi
	echo "discovery reported ${disc:-nothing}, hostfile step ${hf}${left:+ (+$left failed left out)}, the file's header ${header:-nothing}, the file lists ${lines:-nothing}"
	return 1
}

# hostfiles_agree LABEL APPLY_OUT HOSTFILE [APPLY_OUT HOSTFILE]...: the invariant over every
# node; prints "LABEL: invariant held on K of K nodes (a hostfile agrees with its run's report)"
# or how many disagree and the first; exit 1 when any disagrees.
hostfiles_agree() {
	local label=$1 n=0 bad=0 first="" why
	shift
	while [ $# -ge 2 ]; do
		n=$((n + 1))
		if ! why=$(hostfile_agrees "$1" "$2"); then
			bad=$((bad + 1))
			[ -n "$first" ] || first="$1: $why"
		fi
		shift 2
	done
	if [ "$bad" = 0 ]; then
		echo "$label: invariant held on $n of $n nodes (each hostfile agrees with the report of the run that wrote it)"
		return 0
	fi
	echo "$label: invariant BROKEN on $bad of $n nodes (a hostfile disagrees with the report of the run that wrote it); first: $first"
	return 1
}
