# Shared by the bats suites: paths, and running cowrun under the reaper so
bats_require_minimum_version 1.5.0
# every test also proves the run left no zombie and no orphan behind.

ROOT="$(cd "$BATS_TEST_DIRNAME/../.." && pwd)"
# Each test runs in an empty directory of its own, beside its
# $BATS_TEST_TMPDIR: a run without -o writes its reports to ./out there,
# never in the checkout, and tests running side by side (bats --jobs)
# share none.
if [ -n "${BATS_TEST_TMPDIR:-}" ]; then
	mkdir -p "$BATS_TEST_TMPDIR.cwd" && cd "$BATS_TEST_TMPDIR.cwd" || exit 1
fi
COWRUN="$ROOT/bin/cowrun"
REAPER="$ROOT/build/tests/reaper"

# cowrun ARGS...: bin/cowrun under the reaper.  Exit status 99 and
# "reaper: N leftover processes" on stderr mean processes were left behind.
cowrun() {
	"$REAPER" "$COWRUN" "$@"
}

# Fail unless the last `run` left no processes behind.
assert_no_leftovers() {
	if [ "$status" -eq 99 ] || [[ "${stderr:-$output}" == *"leftover processes"* ]]; then
		echo "processes left behind: ${stderr:-$output}" >&2
		return 1
	fi
}

# assert_no_temporary DIR: no temporary file (.NAME....tmp) left in DIR.
assert_no_temporary() {
	local left
	left=$(find "$1" -name '.*.tmp' | head -3)
	[ -z "$left" ] || { echo "temporary files left: $left" >&2; return 1; }
}

# assert_one_line_error PATTERN: stderr is exactly one line matching PATTERN.
assert_one_line_error() {
	local lines
	lines=$(printf '%s\n' "$stderr" | grep -c .)
	if [ "$lines" -ne 1 ]; then
		echo "expected one line on stderr, got $lines: $stderr" >&2
		return 1
	fi
	if [[ "$stderr" != $1 ]]; then
		echo "stderr '$stderr' does not match '$1'" >&2
		return 1
	fi
}

# Run cowrun in serial mode and with each -j given, and require identical
# stdout (and identical report trees).  Usage: same_output_all_modes "1 2 7 0" WORKLOAD ARGS...
same_output_all_modes() {
	local jobs=$1; shift
	run --separate-stderr cowrun --mode serial -o "$BATS_TEST_TMPDIR/serial" "$@"
	[ "$status" -eq 0 ] || { echo "serial failed ($status): $stderr" >&2; return 1; }
	local reference=$output
	for j in $jobs; do
		run --separate-stderr cowrun -j "$j" -o "$BATS_TEST_TMPDIR/j$j" "$@"
		[ "$status" -eq 0 ] || { echo "-j $j failed ($status): $stderr" >&2; return 1; }
		[ "$output" = "$reference" ] || { echo "-j $j stdout differs: $output" >&2; return 1; }
		if [ -d "$BATS_TEST_TMPDIR/serial" ]; then
			diff -r "$BATS_TEST_TMPDIR/serial" "$BATS_TEST_TMPDIR/j$j" >&2 || return 1
		fi
	done
}

# Tests wait for states, never for a fixed time: a loaded machine only
# makes them slower.  A limit (30 s in the tests) only keeps a broken
# runner from hanging the suite, and fails the test saying what never
# happened.

# wait_for [SECONDS WHAT] COMMAND [ARGS...]: run COMMAND every 50 ms until
# it succeeds; after SECONDS (default 30), fail with "gave up waiting for
# WHAT" (default: the command).
wait_for() {
	local limit=30 what="$*"
	if [ $# -ge 3 ] && [[ $1 =~ ^[0-9]+$ ]]; then
		limit=$1 what=$2
		shift 2
	fi
	local deadline=$((SECONDS + limit))
	until "$@"; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			echo "gave up after $limit s waiting for $what" >&2
			return 1
		fi
		sleep 0.05
	done
}

# selftest --mark-start DIR leaves DIR/task-NNNNNN.PID as each task begins.
started_count() {
	local files
	files=$(ls "$1" 2>/dev/null) || true
	printf '%s' "$files" | grep -c . || true
}
started_at_least() { [ "$(started_count "$1")" -ge "$2" ]; }
# The pid of the worker that started the lowest-numbered task.
first_started_pid() {
	local files
	files=$(ls "$1")
	files=${files%%$'\n'*}
	echo "${files##*.}"
}
# Every pid in DIR's marks, one per line.
started_pids() {
	local files
	files=$(ls "$1")
	printf '%s\n' "$files" | sed 's/.*\.//'
}

# ---- a run in the background ($bg: the reaper's pid) ----

# cowrun_of PID: the cowrun a backgrounded reaper runs (found once the
# reaper has forked it).
cowrun_of() {
	pgrep -P "$1" -x cowrun
}

# sigkill_background_run ERRFILE: SIGKILL the cowrun that the backgrounded
# reaper $bg runs and wait for the reaper, which exits 99 once it has taken
# in the workers that died with their parent (else the test fails with its
# status and ERRFILE, the run's stderr); $bg is then cleared.
sigkill_background_run() {
	local status=0
	kill -KILL "$(cowrun_of "$bg")"
	wait "$bg" || status=$?
	bg=
	[ "$status" -eq 99 ] || { echo "status $status: $(cat "$1")" >&2; return 1; }
}

# wait_background ERRFILE: wait for the backgrounded reaper $bg and clear
# it; sets $status to its exit status and $err to ERRFILE, the run's
# stderr.
wait_background() {
	status=0
	wait "$bg" || status=$?
	bg=
	err=$(cat "$1")
}

# all_dead PID...: whether every pid given has died: gone, or a zombie not
# yet reaped.
all_dead() {
	local pid state
	for pid in "$@"; do
		state=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null) || continue
		[ -z "$state" ] || [ "$state" = Z ] || return 1
	done
}

# stop_background_run: a backgrounded run ($bg) the test did not get to
# end is taken down (its workers die with it), so nothing outlives the test.
stop_background_run() {
	if [ -n "${bg:-}" ] && kill -0 "$bg" 2>/dev/null; then
		pkill -KILL -P "$bg" -x cowrun || true
		wait "$bg" || true
	fi
}

# example_equals_sales WORKLOAD SCRIPT: a 20,000-row, 24-store CSV run
# by `cowrun sales --input` and by WORKLOAD SCRIPT (a bundled language's
# sales example) at -j 2, -j 1 and in serial mode: the company totals,
# then the whole summary and every report, byte for byte.
example_equals_sales() {
	local workload=$1 script=$2 csv=$BATS_TEST_TMPDIR/sales.csv out=$BATS_TEST_TMPDIR/$1
	"$ROOT/tests/helpers/make-sales-csv" 20000 24 5 >"$csv"
	run --separate-stderr cowrun -o "$BATS_TEST_TMPDIR/c" sales --input "$csv"
	[ "$status" -eq 0 ]
	local reference=$output
	[[ "$reference" =~ Revenue\ +\$[0-9,]+\.[0-9][0-9] ]]
	local mode
	for mode in "-j 2" "-j 1" "--mode serial"; do
		rm -rf "$out"
		# shellcheck disable=SC2086
		run --separate-stderr cowrun $mode -o "$out" "$workload" "$script" --input "$csv"
		[ "$status" -eq 0 ] || { echo "$mode: exit $status: $stderr" >&2; return 1; }
		assert_no_leftovers
		# The company totals first (what the issue asks), then everything.
		[ "$(grep -E '^  (Transactions|Units sold|Revenue) ' <<<"$output")" = \
		  "$(grep -E '^  (Transactions|Units sold|Revenue) ' <<<"$reference")" ]
		[ "$output" = "$reference" ]
		diff -r -x '.cowrun-manifest.*' "$BATS_TEST_TMPDIR/c" "$out"
		[ "$(ls "$out" | wc -l)" -eq 24 ]
	done
}
