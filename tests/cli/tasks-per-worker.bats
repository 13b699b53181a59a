#!/usr/bin/env bats
# --tasks-per-worker N: a worker that has run N tasks leaves and a fresh
# fork of the parent takes its place, so a workload whose tasks change the
# state (against the contract) still gives the same output at every -j.
# Fork mode only; served batches take it too (its standby worker included).

load serve-helpers

MUTATES="$ROOT/tests/fixtures/tasks-per-worker/mutates.py"

# tasks_per_pid TIMELINE: how many tasks each worker pid ran, most first
# (the --timeline CSV: task,name,worker,pid,start_s,end_s,status,slot).
tasks_per_pid() {
	tail -n +2 "$1" | cut -d, -f 4 | sort | uniq -c | sort -rn | awk '{ print $1 }'
}

@test "tasks-per-worker: a script that changes its state gives one output at -j 1, 2, 3 with 1; without it the change is kept" {
	local j
	for j in 1 2 3; do
		run --separate-stderr cowrun -j "$j" --tasks-per-worker 1 python "$MUTATES" 0.05
		[ "$status" -eq 0 ] || { echo "-j $j: exit $status: $stderr" >&2; return 1; }
		assert_no_leftovers
		# Every task saw the setup's 42, each in a process of its own.
		[ "$output" = "84 84 84 84 84 84
6 processes" ]
	done
	# Without it one worker keeps its changes for its later tasks: the
	# reason the option exists (and why the contract forbids the change).
	run --separate-stderr cowrun -j 1 python "$MUTATES"
	[ "$status" -eq 0 ]
	[ "$output" = "84 168 336 672 1344 2688
1 processes" ]
}

@test "tasks-per-worker: N caps every worker's tasks, all tasks merged, with chunks of quick tasks too" {
	local n
	for n in 1 3; do
		run --separate-stderr cowrun -j 2 --tasks-per-worker "$n" --timeline "$BATS_TEST_TMPDIR/log$n" \
			selftest --tasks 40
		[ "$status" -eq 0 ] || { echo "N=$n: exit $status: $stderr" >&2; return 1; }
		assert_no_leftovers
		[ "$(tail -n +2 "$BATS_TEST_TMPDIR/log$n" | wc -l)" -eq 40 ]
		[ "$(tasks_per_pid "$BATS_TEST_TMPDIR/log$n" | head -1)" -le "$n" ]
		[ "$(tasks_per_pid "$BATS_TEST_TMPDIR/log$n" | wc -l)" -ge $((40 / n)) ]
	done
	# The summary is the reference run's.
	run --separate-stderr cowrun --mode serial selftest --tasks 40
	local reference=$output
	run --separate-stderr cowrun -j 3 --tasks-per-worker 2 selftest --tasks 40
	[ "$status" -eq 0 ]
	[ "$output" = "$reference" ]
}

@test "tasks-per-worker: a crashed task is retried on a fresh fork; more workers than tasks" {
	run --separate-stderr cowrun -j 4 --tasks-per-worker 1 --retries 1 selftest --tasks 3 --crash 1
	[ "$status" -eq 1 ]
	assert_no_leftovers
	[[ "$stderr" == *"task 1"*"SIGSEGV"* ]]
	run --separate-stderr cowrun -j 8 --tasks-per-worker 2 selftest --tasks 3
	[ "$status" -eq 0 ]
	assert_no_leftovers
}

@test "tasks-per-worker: refused outside fork mode and for a bad count, in one line, nothing run" {
	local mode
	for mode in serial omp; do
		run --separate-stderr cowrun --mode "$mode" --tasks-per-worker 1 selftest --tasks 2
		[ "$status" -eq 255 ]
		assert_one_line_error "cowrun: --tasks-per-worker needs --mode fork: *"
		[ -z "$output" ]
	done
	local bad
	for bad in 0 -1 x 1.5 ""; do
		run --separate-stderr cowrun --tasks-per-worker "$bad" selftest --tasks 2
		[ "$status" -eq 255 ]
		assert_one_line_error "cowrun: --tasks-per-worker: bad value *"
	done
}

@test "tasks-per-worker: a served batch takes it (cowrun submit --tasks-per-worker), its standby too" {
	start_server -j 2 python "$MUTATES" 0.05
	run --separate-stderr submit -j 2 --tasks-per-worker 1 -o "$D/out"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	[ "$output" = "84 84 84 84 84 84
6 processes" ]
	run --separate-stderr submit --tasks-per-worker 0 -o "$D/out"
	[ "$status" -eq 255 ]
	[[ "$stderr" == *"--tasks-per-worker: bad value '0'"* ]]
	stop_server
}

@test "tasks-per-worker: with 1, the Python guard and detector stand down: in-place writes run, no line, one output at every -j" {
	local j mode
	for mode in imul column; do
		for j in 1 2 3; do
			PYS_MODE=$mode PYS_SLEEP=0.05 run --separate-stderr cowrun -j "$j" --tasks-per-worker 1 \
				-o "$BATS_TEST_TMPDIR/o$mode$j" python "$ROOT/tests/fixtures/python/state_change.py"
			[ "$status" -eq 0 ] || { echo "$mode -j $j: exit $status: $stderr" >&2; return 1; }
			assert_no_leftovers
			[ "$output" = "seen: 42 42 42 42 42 42
total: 252" ]
			[ -z "$stderr" ] || { echo "$mode -j $j: $stderr" >&2; return 1; }
		done
	done
	# Without it the guard fails the in-place writer's tasks.
	PYS_MODE=imul run --separate-stderr cowrun -j 2 -o "$BATS_TEST_TMPDIR/guarded" \
		python "$ROOT/tests/fixtures/python/state_change.py"
	[ "$status" -eq 6 ]
	[[ "$stderr" == *"or run with --tasks-per-worker 1 (a fresh fork per task: no guard)"* ]]
}
