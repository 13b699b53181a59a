#!/usr/bin/env bats
# Signals during the setup, SIGHUP, the summary whole or not at all (a
# finish() that fails, a reader gone, a closed stdout), and task names with
# control bytes: the runner's rules for every workload (issue 38, items 10
# and 11).  tests/fixtures/python/signals.py is switched by SIG_*
# environment variables (see its docstring).

load serve-helpers

SCRIPT="$ROOT/tests/fixtures/python/signals.py"

setup() {
	bg=
	srv=
	D=
}

# A run or a server the test did not get to end: taken down, so nothing
# outlives it.
teardown() {
	stop_background_run
	kill_server
	[ -z "${D:-}" ] || rm -rf "$D"
}

# Whether PID ignores SIGHUP (bit 0 of SigIgn in /proc/PID/status).
ignores_sighup() {
	local mask
	mask=$(awk '$1 == "SigIgn:" { print $2 }' "/proc/$1/status")
	[ -n "$mask" ] && (( 16#$mask & 1 ))
}

# dead_pipe COMMAND...: COMMAND with its stdout a pipe whose reader is
# gone before it starts (every write fails with EPIPE, and raises SIGPIPE);
# its exit status, 128 + N if signal N killed it.
dead_pipe() {
	python3 -c 'import os, subprocess, sys
r, w = os.pipe()
os.close(r)
rc = subprocess.run(sys.argv[1:], stdout=w).returncode
sys.exit(128 - rc if rc < 0 else rc)' "$@"
}

# start_in_setup ARGS...: cowrun ARGS... python signals.py in the
# background, its setup waiting for ever; returns once the setup runs.
# $bg the reaper, $cow cowrun; stdout in $d/out.txt, stderr in $d/err.
start_in_setup() {
	SIG_READY=$d/ready SIG_MARKS=$d/marks "$REAPER" "$COWRUN" "$@" python "$SCRIPT" \
		>"$d/out.txt" 2>"$d/err" &
	bg=$!
	wait_for 30 "the setup to start" test -e "$d/ready"
	cow=$(cowrun_of "$bg")
}

@test "SIGINT, SIGTERM, SIGHUP during a long setup: the run ends at once, 130, 143, 129, one line, no task started, nothing left" {
	d=$BATS_TEST_TMPDIR
	for sig in INT TERM HUP; do
		rm -rf "$d/marks" "$d/ready" "$d/out"
		mkdir "$d/marks"
		start_in_setup -j 2 -o "$d/out" --joblog "$d/log"
		start=$(date +%s%N)
		kill -"$sig" "$cow"
		# The setup never ends by itself: only the handler ends the run.
		wait_for 5 "cowrun to end after SIG$sig" all_dead "$cow"
		took=$(( ($(date +%s%N) - start) / 1000000 ))
		wait_background "$d/err"
		want=$((128 + $(kill -l "$sig")))
		[ "$status" -eq "$want" ] || { echo "SIG$sig: status $status, not $want: $err" >&2; return 1; }
		[ "$err" = "cowrun: interrupted (SIG$sig) during the setup: no task was started" ] ||
			{ echo "SIG$sig: $err" >&2; return 1; }
		[ "$took" -lt 2000 ] || { echo "SIG$sig: took $took ms" >&2; return 1; }
		[ ! -s "$d/out.txt" ]
		# No task started, no output directory, and the joblog this run
		# created (still empty) is gone with its journal.
		[ -z "$(ls -A "$d/marks")" ]
		[ ! -e "$d/out" ]
		[ ! -e "$d/log" ] && [ ! -e "$d/log.res" ]
		assert_no_temporary "$d"
	done
}

@test "SIGHUP while tasks run is a SIGTERM: running tasks finish, none start, 129, the interrupted line" {
	d=$BATS_TEST_TMPDIR
	"$REAPER" "$COWRUN" -j 2 -o "$d/out" --joblog "$d/log" selftest --tasks 8 --sleep-ms 300 \
		--report-bytes 10 --mark-start "$d/started" >"$d/out.txt" 2>"$d/err" &
	bg=$!
	wait_for 30 "two tasks to start" started_at_least "$d/started" 2
	kill -HUP "$(cowrun_of "$bg")"
	wait_background "$d/err"
	[ "$status" -eq 129 ] || { echo "status $status: $err" >&2; return 1; }
	[ ! -s "$d/out.txt" ]
	[[ "$err" == "cowrun: interrupted: "*" not started; rerun with --resume" ]] || { echo "$err" >&2; return 1; }
	# Every task that started finished and is in the joblog.
	[ "$(tail -n +2 "$d/log" | wc -l)" -eq "$(started_count "$d/started")" ]
	assert_no_temporary "$d"
}

@test "a signal during the setup of a --resume leaves the joblog it did not create as it was" {
	d=$BATS_TEST_TMPDIR
	mkdir "$d/marks"
	SIG_MARKS=$d/marks run --separate-stderr cowrun -j 2 -o "$d/out" --joblog "$d/log" python "$SCRIPT"
	[ "$status" -eq 0 ]
	cp "$d/log" "$d/log.before"
	cp "$d/log.res" "$d/res.before"
	rm "$d/marks"/*
	start_in_setup -j 2 -o "$d/out" --joblog "$d/log" --resume
	kill -INT "$cow"
	wait_for 5 "cowrun to end after SIGINT" all_dead "$cow"
	status=0
	wait "$bg" || status=$?
	bg=
	[ "$status" -eq 130 ] || { echo "status $status: $(cat "$d/err")" >&2; return 1; }
	cmp "$d/log" "$d/log.before"
	cmp "$d/log.res" "$d/res.before"
	[ -z "$(ls -A "$d/marks")" ]
}

@test "nohup: SIGHUP stays ignored, the run goes on and finishes" {
	d=$BATS_TEST_TMPDIR
	mkdir "$d/marks"
	SIG_GO=$d/go SIG_READY=$d/ready SIG_MARKS=$d/marks nohup "$REAPER" "$COWRUN" -j 2 \
		-o "$d/out" python "$SCRIPT" >"$d/out.txt" 2>"$d/err" &
	bg=$!
	wait_for 30 "the setup to start" test -e "$d/ready"
	cow=$(cowrun_of "$bg")
	# Ignored: the kernel drops the signal as it is sent.
	ignores_sighup "$cow"
	kill -HUP "$cow"
	touch "$d/go"
	status=0
	wait "$bg" || status=$?
	bg=
	[ "$status" -eq 0 ] || { echo "status $status: $(cat "$d/err")" >&2; return 1; }
	[ "$(head -1 "$d/out.txt")" = "summary line 0: total 6" ]
	[ "$(ls "$d/marks" | wc -l)" -eq 4 ]
}

@test "the summary into head -1: 254, one line, the reports' manifest and the joblog written, fork and serial" {
	d=$BATS_TEST_TMPDIR
	for mode in fork serial; do
		rm -rf "$d/out" "$d/log" "$d/log.res"
		# 200000 lines, megabytes: more than a pipe holds, so head has
		# gone before the summary is written.
		status=0
		SIG_LINES=200000 "$REAPER" "$COWRUN" --mode "$mode" -o "$d/out" --joblog "$d/log" \
			python "$SCRIPT" 2>"$d/err" | head -1 >"$d/first" || true
		status=${PIPESTATUS[0]}
		stderr=$(cat "$d/err")
		[ "$status" -eq 254 ] || { echo "$mode: status $status: $stderr" >&2; return 1; }
		assert_one_line_error "cowrun: cannot write the summary to standard output: Broken pipe"
		[ "$(cat "$d/first")" = "summary line 0: total 6" ]
		[ -s "$(echo "$d"/out/.cowrun-manifest.python.script-*)" ] || { echo "$mode: no manifest" >&2; return 1; }
		[ "$(tail -n +2 "$d/log" | wc -l)" -eq 4 ]
		assert_no_temporary "$d"
	done
}

@test "a reader gone or stdout closed while the summary is written: 254 in fork, serial and omp mode, manifest and joblog written" {
	d=$BATS_TEST_TMPDIR
	for mode in fork serial omp; do
		for how in dead_pipe closed; do
			rm -rf "$d/out" "$d/log" "$d/log.res"
			args=(--mode "$mode" -o "$d/out" --joblog "$d/log" selftest --tasks 4 --report-bytes 10)
			status=0
			if [ "$how" = dead_pipe ]; then
				dead_pipe "$REAPER" "$COWRUN" "${args[@]}" 2>"$d/err" || status=$?
				why="Broken pipe"
			else
				"$REAPER" "$COWRUN" "${args[@]}" 2>"$d/err" >&- || status=$?
				why="Bad file descriptor"
			fi
			stderr=$(cat "$d/err")
			[ "$status" -eq 254 ] || { echo "$mode $how: status $status: $stderr" >&2; return 1; }
			assert_one_line_error "cowrun: cannot write the summary to standard output: $why"
			[ -s "$d/out/.cowrun-manifest.selftest" ] || { echo "$mode $how: no manifest" >&2; return 1; }
			[ "$(tail -n +2 "$d/log" | wc -l)" -eq 4 ]
		done
	done
}

@test "a finish() that fails prints no summary at all; --resume with the joblog prints it, running no task" {
	d=$BATS_TEST_TMPDIR
	mkdir "$d/marks"
	SIG_FINISH_RAISE=1 SIG_MARKS=$d/marks run --separate-stderr cowrun -j 2 -o "$d/out" \
		--joblog "$d/log" python "$SCRIPT"
	[ "$status" -eq 254 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	# Its lines were written before it raised: none of them reaches stdout.
	[ -z "$output" ] || { echo "a partial summary: $output" >&2; return 1; }
	assert_one_line_error "cowrun: python: $SCRIPT:*: in finish(): RuntimeError: finish() broke half way"
	[ "$(ls "$d/marks" | wc -l)" -eq 4 ]
	[ -s "$d/log.res" ]
	# The fault gone (here an environment variable), the kept results
	# give the summary.
	SIG_MARKS=$d/marks run --separate-stderr cowrun -j 2 -o "$d/out" --joblog "$d/log" --resume \
		python "$SCRIPT"
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	[ "$output" = "summary line 0: total 6"$'\n'"summary line 1: total 6"$'\n'"summary line 2: total 6" ]
	[ "$(ls "$d/marks" | wc -l)" -eq 4 ]
}

@test "a served batch: a finish() that fails sends no summary to the client; a reader gone is 254 and one line" {
	serve_setup
	SIG_FINISH_RAISE=1 start_server -j 2 python "$SCRIPT"
	status=0
	submit -o "$D/out" >"$D/out.txt" 2>"$D/err" || status=$?
	[ "$status" -eq 254 ] || { echo "status $status: $(cat "$D/err")" >&2; return 1; }
	[ ! -s "$D/out.txt" ] || { echo "a partial summary: $(cat "$D/out.txt")" >&2; return 1; }
	stderr=$(cat "$D/err")
	assert_one_line_error "cowrun: python: $SCRIPT:*: in finish(): RuntimeError: finish() broke half way"
	stop_server
	[ "$status" -eq 0 ]
	SIG_LINES=200000 start_server -j 2 python "$SCRIPT"
	submit -o "$D/out2" 2>"$D/err" | head -1 >"$D/first" || true
	status=${PIPESTATUS[0]}
	[ "$status" -eq 254 ] || { echo "status $status: $(cat "$D/err")" >&2; return 1; }
	[ "$(cat "$D/first")" = "summary line 0: total 6" ]
	stderr=$(cat "$D/err")
	assert_one_line_error "cowrun: cannot write the summary to standard output: Broken pipe"
	[ -s "$(echo "$D"/out2/.cowrun-manifest.python.script-*)" ]
	stop_server
	[ "$status" -eq 0 ]
}

@test "a task name with a tab, a newline or 0x7f is refused before the first task: 255, one line naming the task and the byte" {
	d=$BATS_TEST_TMPDIR
	mkdir "$d/marks"
	for mode in fork serial; do
		for name in $'a\tb' $'a\nb' $'a\x7f' $'\x01a'; do
			SIG_NAME=$name SIG_MARKS=$d/marks run --separate-stderr cowrun --mode "$mode" \
				-o "$d/out" --joblog "$d/log" python "$SCRIPT"
			[ "$status" -eq 255 ] || { echo "$mode: status $status: $stderr" >&2; return 1; }
			assert_no_leftovers
			byte=$(printf '%s' "$name" | od -An -tx1 | tr -s ' ' '\n' | grep -vx '61\|62' | grep .)
			assert_one_line_error "cowrun: python: task 1's name holds byte 0x$byte at offset *: a task name may hold no byte below 0x20 and no 0x7f"
			[ -z "$output" ]
			[ -z "$(ls -A "$d/marks")" ]
			[ ! -e "$d/out" ] && [ ! -e "$d/log" ]
		done
	done
	# A name with every other byte of UTF-8 text is a name.
	SIG_NAME='été 2025 (b)' SIG_MARKS=$d/marks run --separate-stderr cowrun -o "$d/out" python "$SCRIPT"
	[ "$status" -eq 0 ]
	[ -e "$d/out/été 2025 (b)" ]
}
