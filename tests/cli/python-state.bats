#!/usr/bin/env bats
# The state rule for a script (workloads/python/state.c): run() must not
# change the state.  The guard makes the state's numpy arrays read-only in
# run(), so an in-place write fails its task in one line; the detector
# compares a fingerprint of the state after each task and says once per
# worker that later tasks saw a change.  The fixture is
# tests/fixtures/python/state_change.py, switched by PYS_* variables.

load helpers

SCRIPT="$ROOT/tests/fixtures/python/state_change.py"

# The lines of stderr matching PATTERN (a grep -E pattern), counted.
lines_matching() {
	printf '%s\n' "$stderr" | grep -cE -- "$1" || true
}

# The reports' values in task order, on one line.
seen_values() {
	local out=$1 n=$2 k values=
	for ((k = 0; k < n; k++)); do
		values+="$(cat "$out/t$k") "
	done
	echo "${values% }"
}

DETECTED="^cowrun: python: run\(\) of task [0-9]+ \(t[0-9]+\) changed the state at state\['df'\] \(its blocks\), and this worker's later tasks saw the change \(task [0-9]+ \(t[0-9]+\) first\): the output may depend on -j\.  run\(\) must not change the state; --tasks-per-worker 1 starts every task from the setup's state$"

@test "python state: df[\"x\"] = df[\"x\"] * 2 in run(): the detector says it once per worker, naming state['df'] (its blocks), -j and --tasks-per-worker 1" {
	# 6 tasks of 0.2 s at -j 2: each worker runs several of them.
	PYS_MODE=column PYS_SLEEP=0.2 run --separate-stderr cowrun -j 2 -o "$BATS_TEST_TMPDIR/j2" python "$SCRIPT"
	[ "$status" -eq 0 ]
	assert_no_leftovers
	local lines
	lines=$(printf '%s\n' "$stderr" | grep -c .)
	[ "$lines" -ge 1 ] && [ "$lines" -le 2 ] || { echo "$lines lines: $stderr" >&2; return 1; }
	[ "$(lines_matching "$DETECTED")" -eq "$lines" ] || { echo "$stderr" >&2; return 1; }
	# One worker, six tasks, five of which saw the change: one line.
	PYS_MODE=column run --separate-stderr cowrun -j 1 -o "$BATS_TEST_TMPDIR/j1" python "$SCRIPT"
	[ "$status" -eq 0 ]
	[ "$(seen_values "$BATS_TEST_TMPDIR/j1" 6)" = "42 84 168 336 672 1344" ]
	[ "$(lines_matching "$DETECTED")" -eq 1 ]
	[[ "$stderr" == *"run() of task 0 (t0) changed the state"*"(task 1 (t1) first)"* ]]
	# Serial mode: merge() changes the state between tasks (it may); the
	# line is still run()'s, once.
	PYS_MODE=column run --separate-stderr cowrun --mode serial -o "$BATS_TEST_TMPDIR/s" python "$SCRIPT"
	[ "$status" -eq 0 ]
	[ "$(lines_matching "$DETECTED")" -eq 1 ]
	[ "$(printf '%s\n' "$stderr" | grep -c .)" -eq 1 ]
}

@test "python state: a list the tasks append to is named with its length, also when the script never imports numpy" {
	PYS_NO_NUMPY=1 PYS_MODE=list run --separate-stderr cowrun -j 1 -o "$BATS_TEST_TMPDIR/o" python "$SCRIPT"
	[ "$status" -eq 0 ]
	assert_one_line_error "cowrun: python: run() of task 0 (t0) changed the state at state?'rows'? (4 items, were 3), and this worker's later tasks saw the change (task 1 (t1) first): *--tasks-per-worker 1*"
	[ "$output" = "seen: 3 4 5 6 7 8" ]
}

@test "python state: COWRUN_PYTHON_DETECT=0 turns the detector off" {
	COWRUN_PYTHON_DETECT=0 PYS_MODE=column run --separate-stderr cowrun -j 1 -o "$BATS_TEST_TMPDIR/o" python "$SCRIPT"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ "$(seen_values "$BATS_TEST_TMPDIR/o" 6)" = "42 84 168 336 672 1344" ]
}

# guard_fails MODE MARKER: every task of PYS_MODE=MODE fails with the
# guard's one line, naming the fixture's line holding MARKER.
guard_fails() {
	local line
	line=$(grep -n -- "$2" "$SCRIPT" | head -1 | cut -d: -f1)
	PYS_MODE=$1 PYS_TASKS=3 run --separate-stderr cowrun -j 2 -o "$BATS_TEST_TMPDIR/$1" python "$SCRIPT"
	[ "$status" -eq 3 ] || { echo "$1: exit $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	local expected="^cowrun: python: task [0-2] \(t[0-2]\) failed: ValueError: assignment destination is read-only \($SCRIPT:$line\): run\(\) wrote to an array of the state, which cowrun's guard makes read-only in run\(\): run\(\) must not change the state \(a worker's later tasks would see the change\); write to a copy, keep a scratch array writable with cowrun\.writable\(arr\) in setup\(\), or run with --tasks-per-worker 1 \(a fresh fork per task: no guard\)$"
	[ "$(lines_matching "$expected")" -eq 3 ] || { echo "$1: $stderr" >&2; return 1; }
	# Those three lines and the run's count: no traceback without -v.
	[ "$(printf '%s\n' "$stderr" | grep -c .)" -eq 4 ] || { echo "$1: $stderr" >&2; return 1; }
	[[ "$stderr" == *"3 of 3 tasks failed"* ]]
	[ -z "$(ls "$BATS_TEST_TMPDIR/$1")" ]
}

@test "python state: the guard: arr[0] = 1, df.loc[0, \"x\"] = 5 and df[\"x\"] *= 2 (a column setup() read) fail their task in one line naming the guard and the ways out" {
	guard_fails arr WRITE_ARR
	guard_fails loc WRITE_LOC
	guard_fails imul WRITE_IMUL
}

@test "python state: the guard in serial mode: run() cannot write the arrays, merge() still can" {
	PYS_MODE=arr PYS_TASKS=2 run --separate-stderr cowrun --mode serial -o "$BATS_TEST_TMPDIR/a" python "$SCRIPT"
	[ "$status" -eq 2 ]
	[ "$(lines_matching "failed: ValueError: assignment destination is read-only .*cowrun's guard")" -eq 2 ]
	# merge() adds to the totals array after each task.
	PYS_TASKS=3 run --separate-stderr cowrun --mode serial -o "$BATS_TEST_TMPDIR/b" python "$SCRIPT"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ "$output" = "$(printf 'seen: 42 42 42\ntotal: 126')" ]
}

@test "python state: opting out: cowrun.writable(arr, df) or cowrun.guard(False) in setup() lets run() write; -v counts the guarded arrays" {
	local opt mode
	for opt in writable guard; do
		for mode in arr loc; do
			PYS_OPT_OUT=$opt PYS_MODE=$mode PYS_TASKS=3 run --separate-stderr cowrun -j 1 -o "$BATS_TEST_TMPDIR/$opt-$mode" python "$SCRIPT"
			[ "$status" -eq 0 ] || { echo "$opt $mode: exit $status: $stderr" >&2; return 1; }
			[ -z "$stderr" ] || { echo "$opt $mode: $stderr" >&2; return 1; }
		done
	done
	# The arrays: arr, totals, the frame's two blocks and the view its
	# cached column holds; writable(arr, df) keeps all but totals out.
	PYS_OPT_OUT=writable run --separate-stderr cowrun -v -j 1 -o "$BATS_TEST_TMPDIR/v1" python "$SCRIPT"
	[[ "$stderr" == *"cowrun: python: the state rule: 1 array of the state read-only in run(); changes to the state checked after each task"* ]]
	run --separate-stderr cowrun -v -j 1 -o "$BATS_TEST_TMPDIR/v2" python "$SCRIPT"
	[[ "$stderr" == *"cowrun: python: the state rule: 5 arrays of the state read-only in run(); changes to the state checked after each task"* ]]
}

@test "python state: a run() that only reads (columns, a groupby, the array) gets no line, the same output at -j 2 and serial; so does a script without numpy" {
	PYS_SLEEP=0.1 run --separate-stderr cowrun -j 2 -o "$BATS_TEST_TMPDIR/j2" python "$SCRIPT"
	[ "$status" -eq 0 ]
	assert_no_leftovers
	[ -z "$stderr" ] || { echo "$stderr" >&2; return 1; }
	local reference=$output
	[ "$reference" = "$(printf 'seen: 42 42 42 42 42 42\ntotal: 252')" ]
	run --separate-stderr cowrun --mode serial -o "$BATS_TEST_TMPDIR/s" python "$SCRIPT"
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ "$output" = "$reference" ]
	# run() raises if numpy was imported behind the script's back.
	PYS_NO_NUMPY=1 run --separate-stderr cowrun -v -j 2 -o "$BATS_TEST_TMPDIR/n" python "$SCRIPT"
	[ "$status" -eq 0 ]
	[ "$output" = "seen: 3 3 3 3 3 3" ]
	[[ "$stderr" == *"the state rule: 0 arrays of the state read-only in run()"* ]]
	[[ "$stderr" != *"failed"* ]]
}
