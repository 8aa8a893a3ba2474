# The shell tests' one TAP library: source it (tests/system/lib.sh and
# tests/cluster/lib.sh do), then check, ok, not_ok (bail_out where the rest
# cannot go on), and done_testing last.
# A test passes when nothing failed and something passed: a test that
# checked nothing is no pass.
fails=0
passes=0
ok() { passes=$((passes + 1)); echo "ok - $*${TAP_SECONDS:+ [${SECONDS}s]}"; }   # TAP_SECONDS=1: the time too
# not_ok DESCRIPTION [LINE...]: a failure; the lines after it (what went wrong) as "#   LINE"
not_ok() { fails=$((fails + 1)); echo "not ok - $1"; shift; [ $# -eq 0 ] || printf '%s\n' "$@" | sed 's/^/#   /'; }
# bail_out DESCRIPTION: a failure the rest cannot go on from: count it, say so, exit 1
bail_out() { not_ok "$*"; echo "Bail out! $*"; exit 1; }
# check DESCRIPTION COMMAND...: run the command, count the result
check() { local d=$1; shift; if "$@"; then ok "$d"; else not_ok "$d"; fi; }
done_testing() { echo "# $passes passed, $fails failed"; [ "$fails" -eq 0 ] && [ "$passes" -gt 0 ]; }
# contains FILE TEXT / not_contains FILE TEXT: for check; the file is shown when it fails
contains() { grep -qF -- "$2" "$1" || { echo "  '$2' not found in $1:"; sed 's/^/  | /' "$1"; return 1; }; }
# contains_line FILE LINE: LINE is a whole line of FILE (a metric's sample: its HELP text may hold
# the same words, "# HELP hpcinit_ready 1 when ...", which contains would take for the sample)
contains_line() { grep -qxF -- "$2" "$1" || { echo "  no line '$2' in $1:"; sed 's/^/  | /' "$1"; return 1; }; }
not_contains() { ! grep -qF -- "$2" "$1" || { echo "  '$2' unexpectedly in $1:"; sed 's/^/  | /' "$1"; return 1; }; }
