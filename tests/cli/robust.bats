#!/usr/bin/env bats
# Nightly-batch robustness: joblog, retries, halt, timeouts, signals,
# resume, the parent's death.

load helpers

JOBLOG_HEADER=$'Seq\tHost\tStarttime\tJobRuntime\tSend\tReceive\tExitval\tSignal\tCommand'

# These tests wait for states, never for a fixed time: a loaded machine only
# makes them slower.  A limit (30 s) only keeps a broken runner from hanging
# the suite, and fails the test saying what never happened.

# Whether PID has a SIGTERM pending, sent but not yet delivered (bit 14 of
# ShdPnd in /proc/PID/status).
sigterm_pending() {
	local mask
	mask=$(awk '$1 == "ShdPnd:" { print $2 }' "/proc/$1/status" 2>/dev/null) || return 1
	[ -n "$mask" ] && (( (16#$mask >> 14) & 1 ))
}

# Whether PID ignores SIGINT (bit 1 of SigIgn in /proc/PID/status).
ignores_sigint() {
	local mask
	mask=$(awk '$1 == "SigIgn:" { print $2 }' "/proc/$1/status")
	[ -n "$mask" ] && (( (16#$mask >> 1) & 1 ))
}

# A test that failed before waiting for its backgrounded run: take the run
# down (its workers die with it) so nothing outlives the test.
teardown() {
	stop_background_run
}

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
	# Tasks well inside the limit (20x) are left alone.
	run --separate-stderr cowrun -j 2 --timeout 2 --joblog "$BATS_TEST_TMPDIR/log" --tasks 0-3 selftest --tasks 10 --sleep-ms 100
	[ "$status" -eq 0 ]
	[[ "$output" == "tasks 4 of 10 merged"* ]]
	run --separate-stderr cowrun -j 2 --timeout 0.2 --joblog "$BATS_TEST_TMPDIR/log" selftest --tasks 3 --sleep-ms 2000
	[ "$status" -eq 3 ]
	assert_no_leftovers
	[[ "$stderr" == *"task 0 (task-000000) failed: timed out after 0.200 s (--timeout)"* ]]
	[ "$(awk -F'\t' 'NR > 1 && $7 == -1 && $8 == 15' "$BATS_TEST_TMPDIR/log" | wc -l)" -eq 3 ]
}

@test "--timeout: a task ignoring SIGTERM gets SIGKILL 2 s later; the rest run" {
	d=$BATS_TEST_TMPDIR
	start=$(date +%s%N)
	# Task 2 ignores SIGTERM and would sleep 40 s; the others take 20 ms.
	run --separate-stderr cowrun -j 2 --timeout 1 --joblog "$d/log" selftest --tasks 6 --sleep-ms 20 --slow 2:40000 --ignore-sigterm 2
	took=$(( ($(date +%s%N) - start) / 1000000 ))
	[ "$status" -eq 1 ] || { echo "status $status after $took ms: $stderr" >&2; return 1; }
	assert_no_leftovers
	[[ "$stderr" == *"task 2 (task-000002) failed: timed out after 1.000 s (--timeout)"* ]]
	[[ "$output" == "tasks 5 of 6 merged"* ]]
	[ "$(tail -n +2 "$d/log" | wc -l)" -eq 6 ]
	[ "$(awk -F'\t' 'NR > 1 && $1 != 3 && $7 == 0 && $8 == 0' "$d/log" | wc -l)" -eq 5 ]
	# Killed by SIGKILL, no sooner than the 1 s limit plus the 2 s grace.
	[ "$(awk -F'\t' '$1 == 3 { print $7, $8 }' "$d/log")" = "-1 9" ]
	runtime=$(awk -F'\t' '$1 == 3 { print $4 + 0 }' "$d/log")
	awk -v t="$runtime" 'BEGIN { exit !(t >= 2.9) }' ||
		{ echo "task 2 was killed after $runtime s, before the 2 s grace" >&2; return 1; }
	# ... and not left to its 40 s sleep (about 3 s expected; the limit is 10x).
	[ "$took" -lt 30000 ] || { echo "the run took $took ms" >&2; return 1; }
}

@test "--timeout: a task's own child (fork and exec, no supervisor) gets SIGTERM and the grace period with it; one left behind by a task that succeeded dies with its worker" {
	# Each task runs child.sh, in its worker's process group.  The first
	# one waits, so its task times out; on SIGTERM it waits until the
	# parent reaped its worker (a group with its grace period), then says
	# so.  The other leaves a sleep behind and succeeds: it must not hold
	# the run up when its worker exits (60 s: only a broken run waits).
	d=$BATS_TEST_TMPDIR
	cat >"$d/child.sh" <<-EOF
		#!/bin/sh
		if mkdir "$d/first" 2>/dev/null; then
		    trap 'while kill -0 \$PPID 2>/dev/null; do sleep 0.05; done; echo term >"$d/term"; exit 0' TERM
		    sleep 60 & wait
		else
		    sleep 60 >/dev/null 2>&1 &
		fi
	EOF
	chmod +x "$d/child.sh"
	REAPER_TIMEOUT=30 run --separate-stderr cowrun -j 2 --timeout 1 selftest --tasks 2 --fork-exec "$d/child.sh"
	[ "$status" -eq 1 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[[ "$stderr" == *"failed: timed out after 1.000 s (--timeout)"* ]]
	[[ "$output" == "tasks 1 of 2 merged"* ]]
	[ "$(cat "$d/term")" = term ]
}

# halt_after_kill POLICY SLEEP_MS: 6 tasks of SLEEP_MS at -j 2 with
# --halt POLICY and a joblog; once both workers run a task, SIGKILL the
# first one, so its task fails.  Sets d, victim, status, err.
halt_after_kill() {
	d=$BATS_TEST_TMPDIR
	"$REAPER" "$COWRUN" -j 2 --halt "$1" --joblog "$d/log" selftest --tasks 6 --sleep-ms "$2" \
		--mark-start "$d/started" >"$d/out" 2>"$d/err" &
	bg=$!
	wait_for 30 "two tasks to start" started_at_least "$d/started" 2
	victim=$(first_started_pid "$d/started")
	kill -KILL "$victim"
	status=0
	wait "$bg" || status=$?
	err=$(cat "$d/err")
}

@test "--halt now,fail=1: the other running task is killed, nothing more starts, no summary" {
	# Both workers are in a 5 s task: one is killed, its task fails, and
	# the halt must kill the other at once.
	halt_after_kill now,fail=1 5000
	[ "$status" -eq 1 ] || { echo "status $status: $err" >&2; return 1; }
	[ ! -s "$d/out" ]
	[[ "$err" == *"task "*" failed: worker $victim killed by SIGKILL"* ]]
	[[ "$err" == *"--halt now: 1 failed, 0 succeeded; killing running tasks"* ]]
	[[ "$err" == *"halted (--halt): 1 done, 1 failed, 4 not started, 1 killed while running; no summary"* ]]
	# Nothing more started; only the failed attempt is in the joblog.
	[ "$(started_count "$d/started")" -eq 2 ]
	[ "$(tail -n +2 "$d/log" | wc -l)" -eq 1 ]
	[ "$(awk -F'\t' 'NR > 1 { print $7, $8 }' "$d/log")" = "0 9" ]
}

@test "--halt soon,fail=1: the other running task finishes, nothing more starts" {
	halt_after_kill soon,fail=1 2000
	[ "$status" -eq 1 ] || { echo "status $status: $err" >&2; return 1; }
	[ ! -s "$d/out" ]
	[[ "$err" == *"--halt soon: 1 failed, 0 succeeded; letting running tasks finish"* ]]
	[[ "$err" == *"halted (--halt): 2 done, 1 failed, 4 not started; no summary"* ]]
	[[ "$err" != *"killed while running"* ]]
	# The other task finished and succeeded; nothing more started.
	[ "$(started_count "$d/started")" -eq 2 ]
	[ "$(tail -n +2 "$d/log" | wc -l)" -eq 2 ]
	[ "$(awk -F'\t' 'NR > 1 { print $7, $8 }' "$d/log" | sort | tr '\n' ' ')" = "0 0 0 9 " ]
}

@test "--halt soon,success=5 stops after 5 successes; running tasks finish" {
	d=$BATS_TEST_TMPDIR
	run --separate-stderr cowrun -j 2 --halt soon,success=5 --joblog "$d/log" selftest --tasks 40 --sleep-ms 300 --mark-start "$d/started"
	[ "$status" -eq 0 ]
	assert_no_leftovers
	[ -z "$output" ]
	line=$(printf '%s\n' "$stderr" | grep -F 'halted (--halt)') || { echo "no halt: $stderr" >&2; return 1; }
	n_done=$(printf '%s\n' "$line" | sed -n 's/.*halted (--halt): \([0-9]*\) done, 0 failed, [0-9]* not started; no summary$/\1/p')
	[ -n "$n_done" ] || { echo "unexpected: $line" >&2; return 1; }
	[[ "$line" == *", 0 failed, $((40 - n_done)) not started; no summary" ]]
	# The 5th success stops the hand-out.  Tasks this slow are claimed one
	# at a time, so each of the 2 workers may still finish one it was
	# running and one it had already sent: at most 5 + 3.
	[ "$n_done" -ge 5 ]
	[ "$n_done" -le 8 ]
	# Every task that started finished, and succeeded.
	[ "$(started_count "$d/started")" -eq "$n_done" ]
	[ "$(tail -n +2 "$d/log" | wc -l)" -eq "$n_done" ]
	[ "$(awk -F'\t' 'NR > 1 && $7 == 0 && $8 == 0' "$d/log" | wc -l)" -eq "$n_done" ]
}

@test "bad --halt, --retries, --timeout and --resume uses are one-line errors" {
	for bad in now soon,fail=0 now,fial=1 later,fail=1 now,fail=101% now,fail=x; do
		run --separate-stderr cowrun --halt "$bad" selftest
		[ "$status" -eq 255 ]
		assert_one_line_error "cowrun: --halt: bad value '$bad'*"
	done
	run --separate-stderr cowrun --retries -1 selftest
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --retries: bad value '-1'*"
	run --separate-stderr cowrun --timeout 0 selftest
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --timeout: bad value '0'*"
	run --separate-stderr cowrun --mode omp --timeout 1 selftest
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --timeout needs --mode fork*"
	run --separate-stderr cowrun --resume selftest
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --resume needs the --joblog FILE*"
}

@test "SIGINT: running tasks finish, none start, exit 130, then --resume equals a clean run" {
	d=$BATS_TEST_TMPDIR
	args="selftest --tasks 20 --sleep-ms 200 --result-bytes 64 --report-bytes 100"
	# The reference: one worker per task, for speed (the output is the same
	# at every -j).
	run --separate-stderr cowrun -j 0 -o "$d/clean" $args
	[ "$status" -eq 0 ]
	clean=$output
	"$REAPER" "$COWRUN" -j 2 -o "$d/out" --joblog "$d/log" $args --mark-start "$d/started" >"$d/first" 2>"$d/err" &
	bg=$!
	wait_for 30 "two tasks to start" started_at_least "$d/started" 2
	kill -INT "$(cowrun_of "$bg")"
	status=0
	wait "$bg" || status=$?
	err=$(cat "$d/err")
	[ "$status" -eq 130 ] || { echo "status $status: $err" >&2; return 1; }
	[ ! -s "$d/first" ]
	msg='interrupted: \([0-9]*\) done, \([0-9]*\) running ended (0 failed), \([0-9]*\) not started; rerun with --resume'
	counts=$(printf '%s\n' "$err" | sed -n "s/^cowrun: $msg\$/\1 \2 \3/p")
	[ -n "$counts" ] || { echo "no interrupted line: $err" >&2; return 1; }
	read -r n_done n_finished n_not_started <<<"$counts"
	# Every task that started finished and is in the joblog, successful;
	# the others never started.
	started=$(started_count "$d/started")
	[ "$((n_done + n_finished))" -eq "$started" ]
	[ "$n_not_started" -eq $((20 - started)) ]
	[ "$n_not_started" -ge 1 ]
	[ "$(tail -n +2 "$d/log" | wc -l)" -eq "$started" ]
	[ "$(awk -F'\t' 'NR > 1 && $7 == 0 && $8 == 0' "$d/log" | wc -l)" -eq "$started" ]
	run --separate-stderr cowrun -j 2 -o "$d/out" --joblog "$d/log" --resume $args --mark-start "$d/started"
	[ "$status" -eq 0 ]
	assert_no_leftovers
	[ "$output" = "$clean" ]
	diff -r -x '.cowrun-manifest.*' "$d/clean" "$d/out"
	# The resumed run ran only the rest: each task started once in all.
	[ "$(started_count "$d/started")" -eq 20 ]
	# Every task has exactly one successful line across both runs.
	[ "$(awk -F'\t' 'NR > 1 && $7 == 0 && $8 == 0 { print $1 }' "$d/log" | sort -u | wc -l)" -eq 20 ]
	[ "$(awk -F'\t' 'NR > 1 && $7 == 0 && $8 == 0' "$d/log" | wc -l)" -eq 20 ]
}

@test "SIGTERM twice: workers are killed at once, exit 143, nothing left behind" {
	d=$BATS_TEST_TMPDIR
	"$REAPER" "$COWRUN" -j 2 selftest --tasks 20 --sleep-ms 30000 --mark-start "$d/started" >"$d/out" 2>"$d/err" &
	bg=$!
	wait_for 30 "two tasks to start" started_at_least "$d/started" 2
	cow=$(cowrun_of "$bg")
	start=$(date +%s%N)
	kill -TERM "$cow"
	# Two signals pending at once would be one: send the second only once
	# the first has been delivered.
	wait_for 30 "the first SIGTERM to be delivered" eval '! sigterm_pending "$cow"'
	kill -TERM "$cow"
	status=0
	wait "$bg" || status=$?
	took=$(( ($(date +%s%N) - start) / 1000000 ))
	err=$(cat "$d/err")
	# 143, not 99: nothing left behind.
	[ "$status" -eq 143 ] || { echo "status $status: $err" >&2; return 1; }
	[[ "$err" == *"interrupted: 0 done, 0 running ended (0 failed), 18 not started, 2 killed while running; "* ]]
	# At once: not after the tasks' 30 s (well under a second expected).
	[ "$took" -lt 15000 ] || { echo "took $took ms" >&2; return 1; }
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
	# Tasks of 45 s: a worker that did not die with its parent would still be
	# running when the 30 s wait below gives up.
	"$REAPER" "$COWRUN" -j 3 selftest --tasks 30 --sleep-ms 45000 --mark-start "$d/started" >/dev/null 2>"$d/err" &
	bg=$!
	wait_for 30 "three tasks to start" started_at_least "$d/started" 3
	cow=$(cowrun_of "$bg")
	workers=$(started_pids "$d/started")
	[ "$(printf '%s\n' "$workers" | sort -u | wc -l)" -eq 3 ]
	children=$(pgrep -P "$cow" | sort | tr '\n' ' ')
	[ "$children" = "$(printf '%s\n' "$workers" | sort | tr '\n' ' ')" ]
	kill -KILL "$cow"
	# Dead means gone, or a zombie waiting for the reaper that adopted it.
	if ! wait_for 30 "the workers to die with their parent" all_dead $workers; then
		kill -KILL $workers || true
		return 1
	fi
	status=0
	wait "$bg" || status=$?
	# The reaper adopted and reaped exactly the 3 workers: the parent was
	# SIGKILLed, so they are its leftovers, and nothing else is.
	[ "$status" -eq 99 ]
	[ "$(cat "$d/err")" = "reaper: 3 leftover processes" ]
}

@test "workers are in their own process group and ignore the terminal's SIGINT" {
	d=$BATS_TEST_TMPDIR
	"$REAPER" "$COWRUN" -j 2 selftest --tasks 4 --sleep-ms 1500 --mark-start "$d/started" >"$d/out" 2>"$d/err" &
	bg=$!
	wait_for 30 "two tasks to start" started_at_least "$d/started" 2
	cow=$(cowrun_of "$bg")
	workers=$(pgrep -P "$cow")
	[ "$(printf '%s\n' "$workers" | grep -c .)" -eq 2 ] || { echo "workers: $workers" >&2; return 1; }
	for w in $workers; do
		[ "$(ps -o pgid= -p "$w" | tr -d ' ')" = "$w" ] || { echo "worker $w not in its own group" >&2; return 1; }
		ignores_sigint "$w" || { echo "worker $w does not ignore SIGINT" >&2; return 1; }
		kill -INT "$w"
	done
	status=0
	wait "$bg" || status=$?
	[ "$status" -eq 0 ] || { echo "status $status: $(cat "$d/err")" >&2; return 1; }
	[[ "$(cat "$d/out")" == "tasks 4 of 4 merged"* ]]
}

@test "--bar=always draws progress on stderr; plain --bar stays quiet off a terminal" {
	run --separate-stderr cowrun -j 2 --bar=always selftest --tasks 20 --sleep-ms 20
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"20/20 done, 0 failed"* ]]
	run --separate-stderr cowrun -j 2 --bar selftest --tasks 20 --sleep-ms 20
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
}
