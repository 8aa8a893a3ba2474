#!/bin/bash
# SPDX-License-Identifier: MIT
#
# --root acts on a tree, never on the machine hpcinit runs on (issue 33: an
# image build that applied a spec with a slurm section under --root started
# real munged and slurmd on the build machine, which then showed up idle in
# sinfo).  apply, check, plan and leave of a compute spec with slurm and
# memlock sections, on a fake root standing for an image tree, run under
# strace: no systemctl, systemd-run, setpriv, munged, slurmd, scontrol or sshd
# is executed, the munge key is installed in the tree, and the slurm step says
# "not started: --root".  Once with no /run/systemd/system in the tree (an
# image: old code ran setpriv munged and slurmd), once with one (a tree whose
# /run is the build machine's: old code ran systemctl and systemd-run).  Any
# munged or slurmd this test's runs started (only the old code does) is ended
# by its PID from the trace.
. "$(dirname "$0")/lib.sh"
command -v strace >/dev/null || { echo "root-no-services: strace not installed (tools/setup.sh)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "root-no-services: needs root (the tree's key is root's)" >&2; exit 77; }
R=$T/root

# end_started TRACE: end the munged or slurmd a traced run left behind (their PIDs are in the trace)
end_started() {
	local p
	for p in $(awk '{print $1}' "$1" 2>/dev/null | sort -un); do
		case "$(cat "/proc/$p/comm" 2>/dev/null)" in
		munged | slurmd) kill "$p" 2>/dev/null && echo "# ended pid $p ($(cat "/proc/$p/comm" 2>/dev/null || echo gone)), started by a traced run" ;;
		esac
	done
}
TRACES=()
cleanup_add 'for t in "${TRACES[@]}"; do end_started "$t"; done'

setup() {
	rm -rf "$R"
	mkroot "$R"
	printf 'munge:x:104:111::/nonexistent:/usr/sbin/nologin\nslurm:x:64030:64030::/nonexistent:/usr/sbin/nologin\n' >>"$R/etc/passwd"
	printf 'root:x:0:\nmunge:x:111:\nslurm:x:64030:\n' >"$R/etc/group"
	mkdir -p "$R/etc/hpcinit" "$R/etc/munge"
	head -c 64 /dev/urandom | base64 -w0 >"$R/etc/hpcinit/munge.key"
	chmod 0600 "$R/etc/hpcinit/munge.key"
	cat >"$T/n.yaml" <<-EOF
	version: 1
	cluster: {name: img, network: 10.0.0.0/24}
	memlock: {limit: unlimited, systemd: true}
	slurm: {conf_servers: ["198.18.0.1"], key_file: /etc/hpcinit/munge.key}
	EOF
}

# traced NAME ARGS...: hpcinit ARGS under strace (execve of every process it starts), exit code in $rc.
# LeakSanitizer cannot run under ptrace (it aborts: "does not work under ptrace"): in the ASan
# build the traced runs go without leak detection (the other runs and the valgrind pass have it).
traced() {
	local name=$1; shift
	rc=0
	TRACES+=("$T/$name.trace")
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
	strace -f -qq -e trace=execve -e signal=none -o "$T/$name.trace" ${HPCINIT_WRAPPER:-} "$HPCINIT" "$@" \
		--root "$R" -c "$T/n.yaml" --hostname img1 >"$T/$name.out" 2>&1 || rc=$?
}
# no_service TRACE: no program that starts, stops, asks or reloads a service was executed
no_service() {
	local hits
	hits=$(grep -E 'execve\("[^"]*/(systemctl|systemd-run|setpriv|munged|slurmd|scontrol|sshd)"' "$1" || true)
	[ -z "$hits" ] || { echo "  executed under --root:"; echo "$hits" | sed 's/^/  | /' | head; return 1; }
}

for variant in image run-systemd; do
	setup
	[ "$variant" = run-systemd ] && mkdir -p "$R/run/systemd/system"
	traced "$variant-apply" apply --only memlock,slurm --json
	check "$variant: apply --root exits 0 (exit $rc)" [ "$rc" = 0 ]
	check "$variant: apply --root executed no systemctl, munged, slurmd, scontrol..." no_service "$T/$variant-apply.trace"
	check "$variant: the munge key is installed in the tree" cmp -s "$R/etc/hpcinit/munge.key" "$R/etc/munge/munge.key"
	check "$variant: the slurm step says it started nothing" contains "$T/$variant-apply.out" \
		'munged and slurmd: not started: --root '"$R"' is a tree, not this machine'
	traced "$variant-check" check --only memlock,slurm
	check "$variant: check --root executed no scontrol, systemctl..." no_service "$T/$variant-check.trace"
	traced "$variant-plan" plan --only memlock,slurm
	check "$variant: plan --root executed no scontrol, systemctl..." no_service "$T/$variant-plan.trace"
	traced "$variant-leave" leave
	check "$variant: leave --root exits 0 (exit $rc)" [ "$rc" = 0 ]
	check "$variant: leave --root executed no scontrol, systemctl..." no_service "$T/$variant-leave.trace"
	check "$variant: leave --root says Slurm was not touched" contains "$T/$variant-leave.out" \
		'not drained or removed from Slurm: --root'
done
done_testing
