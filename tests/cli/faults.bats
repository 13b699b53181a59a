#!/usr/bin/env bats
# What a task may not do, in every mode: write the frozen setup, call
# exit() or _exit(), die of a signal, print to stdout.  Fork mode fails the
# task and goes on; serial and omp run their task phase in a child under a
# watchdog, which names the task and ends the run with 254, no summary and
# no temporary or half-written side file.  run()'s stdout goes to stderr.

load helpers

SELF="selftest --tasks 6 --sleep-ms 20 --report-bytes 100"

# The run ended at task 3 in serial or omp: 254, the task named in one
# line (with the reason matching PATTERN), nothing on stdout.
assert_run_ended() {
	[ "$status" -eq 254 ] || { echo "status $status: $stderr" >&2; return 1; }
	[ -z "$output" ] || { echo "a summary from an unfinished run: $output" >&2; return 1; }
	local line
	line=$(printf '%s\n' "$stderr" | grep 'ended the run\|the run ended while') || {
		echo "no line naming the task: $stderr" >&2; return 1; }
	[[ "$line" == *"task 3 (task-000003)"* ]] || { echo "task 3 not named: $line" >&2; return 1; }
	[[ "$line" == $1 ]] || { echo "'$line' does not match '$1'" >&2; return 1; }
	[[ "$line" == *"; no summary" ]]
	assert_no_leftovers
}

# Fork mode: task 3 failed with a reason matching PATTERN, the others merged.
assert_task_failed() {
	[ "$status" -eq 1 ] || { echo "status $status: $stderr" >&2; return 1; }
	[[ "$output" == "tasks 5 of 6 merged,"* ]]
	[[ "$stderr" == *"cowrun: selftest: task 3 (task-000003) failed: "$1* ]] || {
		echo "stderr: $stderr" >&2; return 1; }
	assert_no_leftovers
}

@test "a task writing the frozen setup: serial and omp name it and the offset, 254; fork fails it" {
	for m in serial omp; do
		run --separate-stderr cowrun --mode "$m" -j 2 -o "$BATS_TEST_TMPDIR/$m" $SELF --setup-mb 1 --write-shared 3
		assert_run_ended "*task 3 (task-000003) ended the run: killed by SIGSEGV: wrote to shared setup memory at offset 12320 of the setup arena, which is read-only after setup*"
	done
	run --separate-stderr cowrun -j 2 -o "$BATS_TEST_TMPDIR/fork" $SELF --setup-mb 1 --write-shared 3
	assert_task_failed "wrote to shared setup memory at offset 12320 of the setup arena"
}

@test "a task calling exit(3): serial and omp name it, 254 (not 3); fork fails it" {
	for m in serial omp; do
		run --separate-stderr cowrun --mode "$m" -j 2 -o "$BATS_TEST_TMPDIR/$m" $SELF --call-exit 3
		assert_run_ended "*task 3 (task-000003) ended the run: exit(3) called inside the task*"
	done
	run --separate-stderr cowrun --mode serial $SELF --call-exit 3:0
	assert_run_ended "*exit(0) called inside the task*"
	run --separate-stderr cowrun -j 2 -o "$BATS_TEST_TMPDIR/fork" $SELF --call-exit 3
	assert_task_failed "worker * exited with status 3 before finishing the task"
}

@test "a task calling _exit(0): serial and omp name it, 254 (not 0); fork fails it" {
	for m in serial omp; do
		run --separate-stderr cowrun --mode "$m" -j 2 -o "$BATS_TEST_TMPDIR/$m" $SELF --exit 3
		assert_run_ended "*_exit(0) called inside the task*"
	done
	run --separate-stderr cowrun -j 2 -o "$BATS_TEST_TMPDIR/fork" $SELF --exit 3
	assert_task_failed "worker * exited with status 0 before finishing the task"
}

@test "a task killed by a signal: serial and omp name it and the signal, 254; fork fails it" {
	for m in serial omp; do
		run --separate-stderr cowrun --mode "$m" -j 2 -o "$BATS_TEST_TMPDIR/$m" $SELF --crash 3:ABRT
		assert_run_ended "*killed by SIGABRT*"
		run --separate-stderr cowrun --mode "$m" -j 2 -o "$BATS_TEST_TMPDIR/$m" $SELF --crash 3
		assert_run_ended "*killed by SIGSEGV (Segmentation fault)*"
	done
	run --separate-stderr cowrun -j 2 -o "$BATS_TEST_TMPDIR/fork" $SELF --crash 3:ABRT
	assert_task_failed "worker * killed by SIGABRT"
}

@test "omp: every task running when the run ended is named" {
	# Task 2 sleeps while task 3 ends the run: both are running.
	run --separate-stderr cowrun --mode omp -j 2 selftest --tasks 6 --slow 2:2000 --sleep-ms 100 --exit 3
	assert_run_ended "*the run ended while *task 2 (task-000002)*were running: _exit(0)*"
	run --separate-stderr cowrun --mode omp -j 2 selftest --tasks 6 --slow 2:2000 --sleep-ms 100 --call-exit 3
	assert_run_ended "*task 3 (task-000003) ended the run: exit(3) called inside the task; also running: task 2 (task-000002); no summary"
}

@test "a run ended by a task leaves no temporary or half-written side file, and a complete joblog" {
	for m in serial omp; do
		for fault in "--exit 3" "--call-exit 3" "--crash 3" "--setup-mb 1 --write-shared 3"; do
			d=$BATS_TEST_TMPDIR/$m-${fault// /}
			mkdir -p "$d"
			run --separate-stderr cowrun --mode "$m" -j 2 -o "$d/out" --save-results "$d/r.res" \
				--timeline "$d/t.csv" --joblog "$d/log" $SELF $fault
			assert_run_ended "*"
			[ ! -e "$d/r.res" ] && [ ! -e "$d/t.csv" ]
			leftovers=$(find "$d" -name '*.tmp')
			[ -z "$leftovers" ] || { echo "$m $fault left: $leftovers" >&2; return 1; }
			# No report for task 3; every joblog line complete, none for task 3.
			[ ! -e "$d/out/task-000003" ]
			awk -F'\t' 'NF != 9 { exit 1 }' "$d/log"
			! grep -q 'task-000003' "$d/log" || { echo "$m $fault: task 3 in the joblog" >&2; return 1; }
		done
	done
}

@test "--resume after a run ended by a task skips the finished tasks, reruns that one" {
	d=$BATS_TEST_TMPDIR
	args="$SELF --call-exit 3 --mark-start $d/started"
	run --separate-stderr cowrun --mode serial -o "$d/out" --joblog "$d/log" $args
	assert_run_ended "*"
	[ "$(tail -n +2 "$d/log" | wc -l)" -eq 3 ]
	run --separate-stderr cowrun --mode serial -o "$d/out" --joblog "$d/log" --resume $args
	assert_run_ended "*exit(3) called inside the task*"
	# Tasks 0-2 ran once, task 3 twice, 4 and 5 never.
	[ "$(ls "$d/started" | grep -c '^task-00000[012]\.')" -eq 3 ]
	[ "$(ls "$d/started" | grep -c '^task-000003\.')" -eq 2 ]
	[ "$(started_count "$d/started")" -eq 5 ]
	[ "$(tail -n +2 "$d/log" | wc -l)" -eq 3 ]
}

@test "run()'s prints to stdout reach stderr in every mode; stdout holds the summary alone" {
	run --separate-stderr cowrun --mode serial $SELF
	reference=$output
	for m in serial omp fork; do
		run --separate-stderr cowrun --mode "$m" -j 2 -o "$BATS_TEST_TMPDIR/$m" $SELF --print 1,4
		[ "$status" -eq 0 ]
		[ "$output" = "$reference" ] || { echo "$m stdout: $output" >&2; return 1; }
		[[ "$stderr" == *"selftest: task 1 printed this to stdout"* ]]
		[[ "$stderr" == *"selftest: task 4 printed this to stdout"* ]] || {
			echo "$m lost a print: $stderr" >&2; return 1; }
	done
}

@test "serial and omp under the watchdog: failed counts, --save-results and the timeline as before" {
	d=$BATS_TEST_TMPDIR
	run --separate-stderr cowrun -j 2 -o "$d/f" --timeline "$d/f.csv" $SELF --fail 1,4
	[ "$status" -eq 2 ]
	fork=$output
	for m in serial omp; do
		run --separate-stderr cowrun --mode "$m" -j 2 -o "$d/$m" --timeline "$d/$m.csv" $SELF --fail 1,4
		[ "$status" -eq 2 ]
		[ "$output" = "$fork" ]
		[ "$(wc -l <"$d/$m.csv")" -eq "$(wc -l <"$d/f.csv")" ]
		run --separate-stderr cowrun --mode "$m" -o "$d/$m" --save-results "$d/$m.res" $SELF
		[ "$status" -eq 0 ] && [ -z "$output" ] && [ -s "$d/$m.res" ]
		run --separate-stderr cowrun --merge "$d/$m.res" $SELF
		[ "$status" -eq 0 ]
		assert_no_leftovers
	done
}

@test "serial: SIGTERM to cowrun alone is passed to the task phase: 143, and --resume finishes" {
	d=$BATS_TEST_TMPDIR
	args="selftest --tasks 6 --sleep-ms 300 --mark-start $d/started"
	"$REAPER" "$COWRUN" --mode serial -o "$d/out" --joblog "$d/log" $args >"$d/first" 2>"$d/err" &
	bg=$!
	wait_for 30 "a task to start" started_at_least "$d/started" 1
	kill -TERM "$(pgrep -P "$bg" -x cowrun)"
	status=0
	wait "$bg" || status=$?
	[ "$status" -eq 143 ] || { echo "status $status: $(cat "$d/err")" >&2; return 1; }
	grep -q '^cowrun: interrupted: .*rerun with --resume$' "$d/err"
	[ ! -s "$d/first" ]
	run --separate-stderr cowrun --mode serial -o "$d/out" --joblog "$d/log" --resume $args
	[ "$status" -eq 0 ]
	[ "$(started_count "$d/started")" -eq 6 ]
	[[ "$output" == "tasks 6 of 6 merged,"* ]]
	assert_no_leftovers
}
