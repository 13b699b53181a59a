#!/usr/bin/env bats
# Nightly-batch robustness: joblog, retries, halt, timeouts, signals,
# resume, the parent's death.

load helpers

JOBLOG_HEADER=$'Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand'

@test "--joblog: GNU Parallel's header and one line per attempt" {
	run --separate-stderr cowrun -j 2 --joblog "$BATS_TEST_TMPDIR/log" selftest --tasks 6 --fail 2 --crash 4 --result-bytes 10
	[ "$status" -eq 2 ]
	[ "$(head -1 "$BATS_TEST_TMPDIR/log")" = "$JOBLOG_HEADER" ]
	[ "$(tail -n +2 "$BATS_TEST_TMPDIR/log" | wc -l)" -eq 6 ]
	# Seq, host, epoch start, runtime, send, receive, exitval, signal, command
	awk -F'\t' 'NR > 1 && (NF != 9 || $2 != ":" || $3 !~ /^[0-9]+\.[0-9][0-9][0-9]$/ ||
		$4 !~ /^ *[0-9]+\.[0-9][0-9][0-9]$/ || $5 != 0) { exit 1 }' "$BATS_TEST_TMPDIR/log"
	line() { awk -F'\t' -v s="$1" '$1 == s { print $6, $7, $8, $9 }' "$BATS_TEST_TMPDIR/log"; }
	[ "$(line 1)" = "10 0 0 selftest task-000000" ]
	[ "$(line 3)" = "0 1 0 selftest task-000002" ]
	[ "$(line 5)" = "0 0 11 selftest task-000004" ]
}

@test "--joblog +FILE appends; a plain FILE starts over" {
	f="$BATS_TEST_TMPDIR/log"
	cowrun --joblog "$f" selftest --tasks 3 >/dev/null
	cowrun --joblog "+$f" selftest --tasks 3 >/dev/null
	[ "$(grep -c '^Seq' "$f")" -eq 1 ]
	[ "$(wc -l < "$f")" -eq 7 ]
	cowrun --joblog "$f" selftest --tasks 2 >/dev/null
	[ "$(wc -l < "$f")" -eq 3 ]
}

@test "--retries: a crashing task gets N more attempts, each on a fresh worker" {
	run --separate-stderr cowrun -j 2 --retries 2 --joblog "$BATS_TEST_TMPDIR/log" selftest --tasks 8 --crash 5
	[ "$status" -eq 1 ]
	assert_no_leftovers
	[ "$(printf '%s\n' "$stderr" | grep -c 'task 5 (task-000005) attempt [12] failed: worker [0-9]* killed by SIGSEGV.*; retrying')" -eq 2 ]
	[ "$(awk -F'\t' '$1 == 6' "$BATS_TEST_TMPDIR/log" | wc -l)" -eq 3 ]
	# Three attempts, three different worker processes.
	[ "$(printf '%s\n' "$stderr" | grep -o 'worker [0-9]*' | sort -u | wc -l)" -eq 3 ]
}

@test "--retries: a task failing once then succeeding is merged normally" {
	run --separate-stderr cowrun -j 2 --retries 1 selftest --tasks 6 --fail 3
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"task 3 (task-000003) attempt 1 failed: failed on purpose (--fail 3); retrying"* ]]
	[[ "$output" == "tasks 5 of 6 merged"* ]]
}

@test "--timeout: the task is stopped, logged with Exitval -1, the rest run" {
	run --separate-stderr cowrun -j 2 --timeout 0.3 --joblog "$BATS_TEST_TMPDIR/log" --tasks 0-3 selftest --tasks 10 --sleep-ms 100
	[ "$status" -eq 0 ]
	run --separate-stderr cowrun -j 2 --timeout 0.2 --joblog "$BATS_TEST_TMPDIR/log" selftest --tasks 3 --sleep-ms 2000
	[ "$status" -eq 3 ]
	assert_no_leftovers
	[[ "$stderr" == *"task 0 (task-000000) failed: timed out after 0.200 s (--timeout)"* ]]
	[ "$(awk -F'\t' 'NR > 1 && $7 == -1 && $8 == 15' "$BATS_TEST_TMPDIR/log" | wc -l)" -eq 3 ]
}

@test "--halt now,fail=1 kills running tasks and prints no summary" {
	run --separate-stderr cowrun -j 2 --halt now,fail=1 selftest --tasks 40 --sleep-ms 100 --fail 2
	[ "$status" -eq 1 ]
	assert_no_leftovers
	[ -z "$output" ]
	[[ "$stderr" == *"--halt now: 1 failed"* ]]
	[[ "$stderr" == *"halted (--halt): "*" not started"*"; no summary"* ]]
}

@test "--halt soon,fail=2 lets running tasks finish; soon,success=N stops after N" {
	run --separate-stderr cowrun -j 2 --halt soon,fail=2 selftest --tasks 40 --sleep-ms 50 --fail 3,4
	[ "$status" -eq 2 ]
	[[ "$stderr" != *"killed while running"* ]]
	run --separate-stderr cowrun -j 2 --halt soon,success=5 selftest --tasks 40 --sleep-ms 50
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"halted (--halt): "*" done, 0 failed"* ]]
	done=$(printf '%s' "$stderr" | sed -n 's/.*halted (--halt): \([0-9]*\) done.*/\1/p')
	[ "$done" -ge 5 ] && [ "$done" -le 8 ]
}

@test "bad --halt, --retries, --timeout and --resume uses are one-line errors" {
	for bad in now soon,fail=0 now,fial=1 later,fail=1 now,fail=101% now,fail=x; do
		run --separate-stderr cowrun --halt "$bad" selftest
		[ "$status" -eq 255 ]
		assert_one_line_error "cowrun: --halt: bad value '$bad'*"
	done
	run --separate-stderr cowrun --retries -1 selftest
	assert_one_line_error "cowrun: --retries: bad value '-1'*"
	run --separate-stderr cowrun --timeout 0 selftest
	assert_one_line_error "cowrun: --timeout: bad value '0'*"
	run --separate-stderr cowrun --mode omp --timeout 1 selftest
	assert_one_line_error "cowrun: --timeout needs --mode fork*"
	run --separate-stderr cowrun --resume selftest
	assert_one_line_error "cowrun: --resume needs the --joblog FILE*"
}

@test "SIGINT: running tasks finish, none start, exit 130, then --resume equals a clean run" {
	d=$BATS_TEST_TMPDIR
	args="selftest --tasks 40 --sleep-ms 40 --result-bytes 64 --report-bytes 100"
	run --separate-stderr cowrun -j 2 -o "$d/clean" $args
	clean=$output
	"$REAPER" "$COWRUN" -j 2 -o "$d/out" --joblog "$d/log" $args >"$d/first" 2>"$d/err" &
	pid=$!
	sleep 0.4
	pkill -INT -P "$pid" -x cowrun
	wait "$pid" || status=$?
	[ "$status" -eq 130 ]
	[[ "$(cat "$d/err")" == *"interrupted: "*" done, "*" running finished, "*" not started; rerun with --resume"* ]]
	[ ! -s "$d/first" ]
	run --separate-stderr cowrun -j 2 -o "$d/out" --joblog "$d/log" --resume $args
	[ "$status" -eq 0 ]
	assert_no_leftovers
	[ "$output" = "$clean" ]
	diff -r "$d/clean" "$d/out"
	# Every task has exactly one successful line across both runs.
	[ "$(awk -F'\t' 'NR > 1 && $7 == 0 && $8 == 0 { print $1 }' "$d/log" | sort -u | wc -l)" -eq 40 ]
	[ "$(awk -F'\t' 'NR > 1 && $7 == 0 && $8 == 0' "$d/log" | wc -l)" -eq 40 ]
}

@test "SIGTERM twice: workers are killed at once, exit 143, nothing left behind" {
	d=$BATS_TEST_TMPDIR
	"$REAPER" "$COWRUN" -j 2 selftest --tasks 20 --sleep-ms 3000 >"$d/out" 2>"$d/err" &
	pid=$!
	sleep 0.4
	start=$(date +%s%N)
	pkill -TERM -P "$pid" -x cowrun
	sleep 0.1
	pkill -TERM -P "$pid" -x cowrun
	wait "$pid" || status=$?
	took=$(( ($(date +%s%N) - start) / 1000000 ))
	[ "$status" -eq 143 ]
	[ "$took" -lt 2500 ]
	[[ "$(cat "$d/err")" == *"2 killed while running"* ]]
}

@test "--resume-failed reruns failed tasks; --resume keeps them failed" {
	d=$BATS_TEST_TMPDIR
	run --separate-stderr cowrun -j 2 --joblog "$d/log" selftest --tasks 10 --fail 3,7
	[ "$status" -eq 2 ]
	run --separate-stderr cowrun -j 2 --joblog "$d/log" --resume selftest --tasks 10 --fail 3,7
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"task 3 (task-000003) failed: failed on purpose (--fail 3) (in an earlier run)"* ]]
	[ "$(wc -l < "$d/log")" -eq 11 ]
	run --separate-stderr cowrun -j 2 --joblog "$d/log" --resume-failed selftest --tasks 10 --fail 3,7
	[ "$status" -eq 2 ]
	# Only the two failed tasks ran again.
	[ "$(wc -l < "$d/log")" -eq 13 ]
}

@test "--resume refuses a joblog or journal of another workload or other arguments" {
	d=$BATS_TEST_TMPDIR
	cowrun --joblog "$d/log" selftest --tasks 5 >/dev/null
	run --separate-stderr cowrun --joblog "$d/log" --resume average --size 100 --chunks 5
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --joblog: '$d/log' line 2 is not a average task*"
	run --separate-stderr cowrun --joblog "$d/log" --resume selftest --tasks 6
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --resume: '$d/log.res' was saved by 'selftest --tasks 5 (5 tasks)', not by this run's 'selftest --tasks 6 (6 tasks)'"
	rm "$d/log.res"
	run --separate-stderr cowrun --joblog "$d/log" --resume selftest --tasks 5
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --resume: '$d/log' exists but its results journal '$d/log.res' does not"
}

@test "--resume with no earlier run simply runs everything" {
	run --separate-stderr cowrun --joblog "$BATS_TEST_TMPDIR/new" --resume selftest --tasks 4
	[ "$status" -eq 0 ]
	[[ "$output" == "tasks 4 of 4 merged"* ]]
}

@test "a torn last frame in the journal is dropped, the task reruns" {
	d=$BATS_TEST_TMPDIR
	run --separate-stderr cowrun --mode serial selftest --tasks 6 --result-bytes 1000
	clean=$output
	cowrun --joblog "$d/log" selftest --tasks 6 --result-bytes 1000 >/dev/null
	size=$(stat -c %s "$d/log.res")
	truncate -s $((size - 500)) "$d/log.res"
	run --separate-stderr cowrun --joblog "$d/log" --resume selftest --tasks 6 --result-bytes 1000
	[ "$status" -eq 0 ]
	[ "$output" = "$clean" ]
	[ "$(tail -n +2 "$d/log" | wc -l)" -eq 7 ]
}

@test "workers die with the parent, even when it is SIGKILLed" {
	d=$BATS_TEST_TMPDIR
	"$COWRUN" -j 3 selftest --tasks 30 --sleep-ms 5000 >/dev/null 2>&1 &
	pid=$!
	sleep 0.4
	workers=$(pgrep -P "$pid" | tr '\n' ' ')
	[ "$(echo $workers | wc -w)" -eq 3 ]
	kill -KILL "$pid"
	wait "$pid" || true
	sleep 0.3
	# Dead means gone, or a zombie waiting for whoever adopted it.
	for w in $workers; do
		state=$(awk '{ print $3 }' "/proc/$w/stat" 2>/dev/null || echo gone)
		[ "$state" = gone ] || [ "$state" = Z ] ||
			{ echo "worker $w outlived its parent (state $state)" >&2; return 1; }
	done
}

@test "workers are in their own process group and ignore the terminal's SIGINT" {
	"$COWRUN" -j 2 selftest --tasks 10 --sleep-ms 400 >/dev/null 2>&1 &
	pid=$!
	sleep 0.2
	for w in $(pgrep -P "$pid"); do
		[ "$(ps -o pgid= -p "$w" | tr -d ' ')" = "$w" ]
		kill -INT "$w"
	done
	wait "$pid"
}

@test "--bar=always draws progress on stderr; plain --bar stays quiet off a terminal" {
	run --separate-stderr cowrun -j 2 --bar=always selftest --tasks 20 --sleep-ms 20
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"20/20 done, 0 failed"* ]]
	run --separate-stderr cowrun -j 2 --bar selftest --tasks 20 --sleep-ms 20
	[ -z "$stderr" ]
}
