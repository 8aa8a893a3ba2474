#!/bin/bash
# SIGKILL apply at random moments, 50 times: every managed file holds its old
# or its new content, never a mix, and the next apply converges with no temp files left.
. "$(dirname "$0")/lib.sh"
R=$T/root
mkroot "$R"
A=$FIX/core/memlock.yaml
B=$FIX/core/memlock-64g.yaml
FILES="etc/security/limits.d/90-hpcinit.conf etc/systemd/system.conf.d/90-hpcinit.conf etc/systemd/user.conf.d/90-hpcinit.conf run/hpcinit/status.json"

# The two complete versions of each file, from clean runs on scratch roots.
for v in A B; do
	mkroot "$T/ref$v"
	eval spec=\$$v
	hpcinit apply --root "$T/ref$v" -c "$spec" >/dev/null
done
TRIALS=${KILL_TRIALS:-50}
mixed=0
killed_mid=0
for i in $(seq 1 "$TRIALS"); do
	if [ $((i % 2)) -eq 0 ]; then spec=$A; else spec=$B; fi
	"$HPCINIT" apply --root "$R" -c "$spec" >/dev/null 2>&1 &
	pid=$!
	# 0-3 ms: the whole run takes a few ms, so kills land before, during and after writes
	sleep "0.00$((RANDOM % 4))"
	if kill -KILL "$pid" 2>/dev/null; then killed_mid=$((killed_mid + 1)); fi
	wait "$pid" 2>/dev/null || true
	for f in $FILES; do
		[ -e "$R/$f" ] || continue
		if [ "$f" = run/hpcinit/status.json ]; then
			python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$R/$f" 2>/dev/null ||
				{ echo "  trial $i: $f is not complete JSON"; mixed=$((mixed + 1)); }
		elif ! cmp -s "$R/$f" "$T/refA/$f" && ! cmp -s "$R/$f" "$T/refB/$f"; then
			echo "  trial $i: $f is neither the old nor the new content"
			mixed=$((mixed + 1))
		fi
	done
done
echo "# $TRIALS trials, $killed_mid killed while running"
check "no file ever held a mix of old and new content" [ "$mixed" -eq 0 ]
check "most kills landed while apply ran" [ "$killed_mid" -ge $((TRIALS / 2)) ]
run_hpc "$T/final" apply --root "$R" -c "$A"
check "apply after the kills converges" [ "$rc" -eq 0 ]
for f in $FILES; do
	[ "$f" = run/hpcinit/status.json ] && continue
	check "$f converged" same_file "$R/$f" "$T/refA/$f"
done
left=$(find "$R" -name '*.hpcinit-tmp.*' | wc -l)
check "no temp files left after the converging apply ($left)" [ "$left" -eq 0 ]
done_testing
