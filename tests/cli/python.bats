#!/usr/bin/env bats
# cowrun python SCRIPT.py (workloads/python): a script's setup, tasks,
# reports and errors as a cowrun batch.  The scripts are in
# tests/fixtures/python; batch.py's behaviour is switched by PYT_*
# environment variables (see its docstring), never by arguments, which
# would be inputs of the run.

load serve-helpers

FIX="$ROOT/tests/fixtures/python"
BATCH="$FIX/batch.py"
PY=/usr/bin/python3   # Debian's, the one cowrun embeds (numpy, venv)

setup() {
	srv=
	D=
	bg=
}

# A backgrounded run or a server the test did not get to stop: taken
# down, so nothing outlives the test.
teardown() {
	stop_background_run
	kill_server
	[ -z "${D:-}" ] || rm -rf "$D"
}

# marks DIR WHAT [NAME]: how many files batch.py left in DIR for WHAT
# (start, done), for task NAME or all.
marks() {
	local files
	files=$(ls "$1" 2>/dev/null) || true
	printf '%s\n' "$files" | grep -c "^$2-${3:-}" || true
}
marks_at_least() { [ "$(marks "$1" "$2")" -ge "$3" ]; }

# The joblog's rows (its header left out).
joblog_rows() { tail -n +2 "$1" 2>/dev/null | grep -c . || true; }
joblog_rows_at_least() { [ "$(joblog_rows "$1")" -ge "$2" ]; }

# The line of FILE holding MARKER (a comment the fixtures carry).
line_of() {
	grep -n -- "$2" "$1" | head -1 | cut -d: -f1
}

# The reports in DIR, hidden files too, one a line.
listing() {
	ls -A "$1"
}

# clean_run NAME ARGS...: a reference run of batch.py (no PYT_* set) into
# $BATS_TEST_TMPDIR/NAME; its stdout in $clean.
clean_run() {
	local dir=$BATS_TEST_TMPDIR/$1
	shift
	run --separate-stderr env -u PYT_FAIL -u PYT_KILL -u PYT_FAIL_ONCE -u PYT_SLEEP \
		"$REAPER" "$COWRUN" -j 2 -o "$dir" python "$BATCH" "$@"
	[ "$status" -eq 0 ] || { echo "the clean run failed ($status): $stderr" >&2; return 1; }
	clean=$output
}

@test "python: serial and fork -j 1, 2, 4 and more workers than tasks give byte-identical stdout and reports" {
	same_output_all_modes "1 2 4" python "$BATCH" --tasks 7
	assert_no_leftovers
	[[ "$output" == "merged 7: item-00 item-01 item-02 item-03 item-04 item-05 item-06"$'\n'"sum of squares 91" ]]
	[ "$(listing "$BATS_TEST_TMPDIR/j4" | grep -c '^item-')" -eq 7 ]
	[ "$(cat "$BATS_TEST_TMPDIR/j4/item-05")" = "item-05: 5 squared is 25" ]
	# 3 tasks, 8 workers asked for: as many workers as tasks, the same bytes.
	rm -rf "$BATS_TEST_TMPDIR"/serial "$BATS_TEST_TMPDIR"/j*
	same_output_all_modes "8" python "$BATCH" --tasks 3
	assert_no_leftovers
	[ "$output" = "merged 3: item-00 item-01 item-02"$'\n'"sum of squares 5" ]
	run --separate-stderr cowrun -v -j 8 -o "$BATS_TEST_TMPDIR/v" python "$BATCH" --tasks 3
	[ "$status" -eq 0 ]
	assert_no_leftovers
	[[ "$stderr" == *"fork: 3 workers"* ]]
}

@test "python: an exception in run() fails that task only: traceback once, one line, joblog; --resume-failed reruns it alone" {
	d=$BATS_TEST_TMPDIR
	clean_run clean --tasks 5
	mkdir "$d/marks"
	touch "$d/cause"
	export PYT_MARKS=$d/marks PYT_FAIL=2 PYT_FAIL_IF=$d/cause
	run --separate-stderr cowrun -j 2 -o "$d/out" --joblog "$d/log" python "$BATCH" --tasks 5
	[ "$status" -eq 1 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	# The other tasks went on, and the summary covers them.
	[ "$output" = "merged 4: item-00 item-01 item-03 item-04"$'\n'"sum of squares 26" ]
	line=$(line_of "$BATCH" '# FAIL_LINE')
	[ "$(printf '%s\n' "$stderr" | grep -c '^Traceback (most recent call last):$')" -eq 1 ]
	[[ "$stderr" == *"File \"$BATCH\", line $line, in run"*"KeyError: 'missing'"* ]]
	printf '%s\n' "$stderr" | grep -qxF "cowrun: python: task 2 (item-02) failed: KeyError: 'missing' ($BATCH:$line)"
	printf '%s\n' "$stderr" | grep -qxF "cowrun: python: 1 of 5 tasks failed; the summary covers the other 4"
	# The joblog's row: the task returned an error (Exitval 1, no signal);
	# its journal keeps the error.
	[ "$(awk -F'\t' '$9 == "python item-02" { print $7, $8 }' "$d/log")" = "1 0" ]
	grep -aqF "KeyError: 'missing' ($BATCH:$line)" "$d/log.res"
	# No report under its name, and nothing temporary beside the others.
	[ "$(listing "$d/out" | grep -v '^\.cowrun-manifest\.python\.script-[0-9a-f]*$' | tr '\n' ' ')" = "item-00 item-01 item-03 item-04 " ]
	# --resume keeps it failed, saying so; it does not run again.
	run --separate-stderr cowrun -j 2 -o "$d/out" --joblog "$d/log" --resume python "$BATCH" --tasks 5
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"task 2 (item-02) failed: KeyError: 'missing' ($BATCH:$line) (in an earlier run)"* ]]
	[ "$(marks "$d/marks" start)" -eq 5 ]
	# The cause removed, --resume-failed runs task 2 and only it.
	rm "$d/cause"
	run --separate-stderr cowrun -j 2 -o "$d/out" --joblog "$d/log" --resume-failed python "$BATCH" --tasks 5
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[ "$output" = "$clean" ]
	diff -r -x '.cowrun-manifest.*' "$d/clean" "$d/out"
	[ "$(marks "$d/marks" start item-02)" -eq 2 ]
	for k in 00 01 03 04; do
		[ "$(marks "$d/marks" start "item-$k")" -eq 1 ] || { echo "item-$k ran again" >&2; return 1; }
	done
}

@test "python: --retries 1 retries an exception and a worker that SIGKILLed itself; without retries the kill fails its task" {
	d=$BATS_TEST_TMPDIR
	clean_run clean --tasks 5
	# An exception on the first attempt only.
	mkdir "$d/m1"
	PYT_MARKS=$d/m1 PYT_FAIL_ONCE=3 run --separate-stderr cowrun -j 2 --retries 1 -o "$d/r1" python "$BATCH" --tasks 5
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[[ "$stderr" == *"task 3 (item-03) attempt 1 failed: RuntimeError: first attempt of item-03 ($BATCH:"*"); retrying"* ]]
	[ "$(marks "$d/m1" start item-03)" -eq 2 ]
	[ "$output" = "$clean" ]
	diff -r "$d/clean" "$d/r1"
	# The worker SIGKILLs itself on the first attempt only.
	mkdir "$d/m2"
	PYT_MARKS=$d/m2 PYT_KILL=3 PYT_KILL_ONCE=1 run --separate-stderr cowrun -j 2 --retries 1 -o "$d/r2" python "$BATCH" --tasks 5
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[[ "$stderr" == *"task 3 (item-03) attempt 1 failed: worker "*" killed by SIGKILL"*"; retrying"* ]]
	[ "$(marks "$d/m2" start item-03)" -eq 2 ]
	[ "$output" = "$clean" ]
	diff -r "$d/clean" "$d/r2"
	# Without retries: the task fails naming the signal, the rest finish.
	mkdir "$d/m3"
	PYT_MARKS=$d/m3 PYT_KILL=3 run --separate-stderr cowrun -j 2 -o "$d/r3" python "$BATCH" --tasks 5
	[ "$status" -eq 1 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[[ "$stderr" == *"cowrun: python: task 3 (item-03) failed: worker "*" killed by SIGKILL"* ]]
	[ "$output" = "merged 4: item-00 item-01 item-02 item-04"$'\n'"sum of squares 21" ]
	[ "$(marks "$d/m3" done)" -eq 4 ]
	[ ! -e "$d/r3/item-03" ]
}

# assert_nothing_written: the failed run created no output directory, no
# joblog, and nothing in its working directory.
assert_nothing_written() {
	[ ! -e "$BATS_TEST_TMPDIR/out" ] || { echo "an output directory was created" >&2; return 1; }
	[ ! -e "$BATS_TEST_TMPDIR/log" ] || { echo "a joblog was created" >&2; return 1; }
	[ ! -e "$BATS_TEST_TMPDIR/log.res" ] || { echo "a journal was created" >&2; return 1; }
	[ -z "$(ls -A .)" ] || { echo "written in the working directory: $(ls -A .)" >&2; return 1; }
}

@test "python: a SyntaxError, an ImportError, an exception in setup(): one line naming the script and line, 255, nothing written" {
	d=$BATS_TEST_TMPDIR
	line=$(line_of "$FIX/syntax_error.py" '^def run')
	run --separate-stderr cowrun -o "$d/out" --joblog "$d/log" python "$FIX/syntax_error.py"
	[ "$status" -eq 255 ]
	assert_no_leftovers
	assert_one_line_error "cowrun: python: $FIX/syntax_error.py:$line: SyntaxError: *"
	[ -z "$output" ]
	assert_nothing_written
	line=$(line_of "$FIX/import_error.py" '# IMPORT_LINE')
	run --separate-stderr cowrun -o "$d/out" --joblog "$d/log" python "$FIX/import_error.py"
	[ "$status" -eq 255 ]
	assert_no_leftovers
	assert_one_line_error "cowrun: python: $FIX/import_error.py:$line: ModuleNotFoundError: No module named 'cowrun_no_such_module'*"
	assert_nothing_written
	line=$(line_of "$BATCH" '# SETUP_LINE')
	PYT_SETUP_RAISE=1 run --separate-stderr cowrun -j 2 -o "$d/out" --joblog "$d/log" python "$BATCH"
	[ "$status" -eq 255 ]
	assert_no_leftovers
	assert_one_line_error "cowrun: python: $BATCH:$line: in setup(): ValueError: no data today"
	assert_nothing_written
}

@test "python: a result that cannot be pickled fails its task, naming the type" {
	d=$BATS_TEST_TMPDIR
	PYT_UNPICKLABLE=1 run --separate-stderr cowrun -j 2 -o "$d/out" python "$BATCH" --tasks 3
	[ "$status" -eq 1 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[[ "$stderr" == *"cowrun: python: task 1 (item-01) failed: run() returned a _thread.lock, which cannot be pickled: TypeError: cannot pickle '_thread.lock' object"* ]]
	[ "$output" = "merged 2: item-00 item-02"$'\n'"sum of squares 4" ]
	# A failed task keeps no report, though run() wrote one.
	[ "$(listing "$d/out" | grep -v '^\.cowrun-manifest\.python\.script-[0-9a-f]*$' | tr '\n' ' ')" = "item-00 item-02 " ]
}

@test "python: reports: a run() that raises keeps none, \"wb\" writes bytes, report() in setup() or with mode \"a\" is refused" {
	d=$BATS_TEST_TMPDIR
	# Half a report written and flushed, then an exception: no report,
	# final or temporary, in fork or serial mode.
	for mode in fork serial; do
		PYT_PARTIAL=1 run --separate-stderr cowrun --mode "$mode" -j 2 -o "$d/$mode" python "$BATCH" --tasks 3
		[ "$status" -eq 1 ] || { echo "$mode: status $status: $stderr" >&2; return 1; }
		assert_no_leftovers
		[[ "$stderr" == *"task 1 (item-01) failed: OSError: the disk went away half-way ($BATCH:"* ]]
		[ "$(listing "$d/$mode" | grep -v '^\.cowrun-manifest\.python\.script-[0-9a-f]*$' | tr '\n' ' ')" = "item-00 item-02 " ] || {
			echo "$mode left: $(listing "$d/$mode")" >&2; return 1; }
	done
	# "wb": the bytes as written, NULs and all.
	PYT_BYTES=1 run --separate-stderr cowrun -j 2 -o "$d/bytes" python "$BATCH" --tasks 3
	[ "$status" -eq 0 ]
	"$PY" -c 'import sys; sys.stdout.buffer.write(b"\x00\xff" + b"item-02: 2 squared is 4\n" + bytes(range(256)))' >"$d/expected"
	cmp "$d/expected" "$d/bytes/item-02"
	# cowrun.report() in setup(): a RuntimeError there, a setup error.
	PYT_REPORT_IN_SETUP=1 run --separate-stderr cowrun -o "$d/setup" python "$BATCH"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: python: $BATCH:*: in setup(): RuntimeError: cowrun.report() is only for run()"
	[ ! -e "$d/setup" ]
	# Mode "a" is refused: that task fails, saying why.
	PYT_APPEND=1 run --separate-stderr cowrun -j 2 -o "$d/append" python "$BATCH" --tasks 3
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"task 1 (item-01) failed: ValueError: cowrun.report(): mode 'a': a report is written from its start, \"w\" (text) or \"wb\" (bytes) ($BATCH:"* ]]
	[ ! -e "$d/append/item-01" ]
}

@test "python: --mode omp is refused, even with --force: one line, 255" {
	for force in "" --force; do
		run --separate-stderr cowrun --mode omp $force -o "$BATS_TEST_TMPDIR/out" python "$BATCH"
		[ "$status" -eq 255 ] || { echo "'$force': status $status" >&2; return 1; }
		assert_one_line_error "cowrun: python runs no task on a thread: --mode omp is refused, even with --force (use fork or serial)"
		[ -z "$output" ]
		[ ! -e "$BATS_TEST_TMPDIR/out" ]
	done
}

@test "python: --resume refuses a changed script and a changed cowrun.input() file; --not-input FILE is not checked" {
	d=$BATS_TEST_TMPDIR
	cp "$BATCH" "$d/script.py"
	# The script changed since the unfinished run (task 1 failed).
	PYT_FAIL=1 run --separate-stderr cowrun -o "$d/out" --joblog "$d/log" python "$d/script.py" --tasks 3
	[ "$status" -eq 1 ]
	echo "# changed" >>"$d/script.py"
	run --separate-stderr cowrun -o "$d/out" --joblog "$d/log" --resume-failed python "$d/script.py" --tasks 3
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --resume: input '$d/script.py' (script) changed since the run being resumed: its size changed from * to * bytes: run again without --resume"
	# --not-input FILE both times: an argument naming a file is not an
	# input, and its change goes unchecked.
	echo hello >"$d/data.txt"
	rm -rf "$d/out" "$d/log" "$d/log.res"
	PYT_FAIL=1 run --separate-stderr cowrun -o "$d/out" --joblog "$d/log" --not-input "$d/data.txt" python "$BATCH" --tasks 3 --data "$d/data.txt"
	[ "$status" -eq 1 ]
	[[ "$output" == *"extra hello" ]]
	echo bye >"$d/data.txt"
	run --separate-stderr cowrun -o "$d/out" --joblog "$d/log" --not-input "$d/data.txt" --resume-failed python "$BATCH" --tasks 3 --data "$d/data.txt"
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	[ "$(cat "$d/out/item-01")" = "item-01: 1 squared is 1 bye" ]
	# A file setup() declares with cowrun.input(): refused after the setup.
	echo one >"$d/declared.txt"
	rm -rf "$d/out" "$d/log" "$d/log.res"
	mkdir "$d/marks"
	export PYT_INPUT=$d/declared.txt PYT_MARKS=$d/marks PYT_SETUP_MARK=$d/setups
	PYT_FAIL=1 run --separate-stderr cowrun -o "$d/out" --joblog "$d/log" python "$BATCH" --tasks 3
	[ "$status" -eq 1 ]
	[[ "$output" == *"extra one" ]]
	echo three >"$d/declared.txt"
	run --separate-stderr cowrun -o "$d/out" --joblog "$d/log" --resume-failed python "$BATCH" --tasks 3
	[ "$status" -eq 255 ]
	assert_no_leftovers
	assert_one_line_error "cowrun: --resume: input '$d/declared.txt' (cowrun_input) changed since the run being resumed: its size changed from 4 to 6 bytes: run again without --resume"
	# The setup ran (twice in all), no task did.
	[ "$(grep -c setup "$d/setups")" -eq 2 ]
	[ "$(marks "$d/marks" start)" -eq 3 ]
}

@test "python: --resume refuses a changed argument file (an input), saying what changed" {
	d=$BATS_TEST_TMPDIR
	echo hello >"$d/data.txt"
	PYT_FAIL=1 run --separate-stderr cowrun -o "$d/out" --joblog "$d/log" python "$BATCH" --tasks 3 --data "$d/data.txt"
	[ "$status" -eq 1 ]
	[[ "$output" == *"extra hello" ]]
	# 6 bytes, then 4.
	echo bye >"$d/data.txt"
	run --separate-stderr cowrun -o "$d/out" --joblog "$d/log" --resume-failed python "$BATCH" --tasks 3 --data "$d/data.txt"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --resume: input '$d/data.txt' (argv?[0-9]?) changed since the run being resumed: its size changed from 6 to 4 bytes: run again without --resume"
	# The same size, other bytes: refused before the setup, by its
	# modification time.
	echo jello >"$d/data.txt"
	run --separate-stderr cowrun -o "$d/out" --joblog "$d/log" --resume-failed python "$BATCH" --tasks 3 --data "$d/data.txt"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --resume: input '$d/data.txt' (argv?[0-9]?) changed since the run being resumed: it was modified (modification time * UTC then, * UTC now): run again without --resume"
}

@test "python: cowrun SIGKILLed mid-batch, then --resume: the finished tasks do not run again, the output equals a clean run" {
	d=$BATS_TEST_TMPDIR
	clean_run clean --tasks 8
	mkdir "$d/marks"
	PYT_MARKS=$d/marks PYT_SLEEP=0.5 "$REAPER" "$COWRUN" -j 2 -o "$d/out" --joblog "$d/log" \
		python "$BATCH" --tasks 8 >"$d/first" 2>"$d/err" &
	bg=$!
	wait_for 30 "two tasks to finish" joblog_rows_at_least "$d/log" 2
	sigkill_background_run "$d/err"
	[ ! -s "$d/first" ]
	finished=$(awk -F'\t' 'NR > 1 && $7 == 0 { sub(/^python /, "", $9); print $9 }' "$d/log")
	n_finished=$(printf '%s\n' "$finished" | grep -c .)
	[ "$n_finished" -ge 2 ] && [ "$n_finished" -lt 8 ]
	PYT_MARKS=$d/marks run --separate-stderr cowrun -j 2 -o "$d/out" --joblog "$d/log" --resume python "$BATCH" --tasks 8
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[ "$output" = "$clean" ]
	diff -r -x '.cowrun-manifest.*' "$d/clean" "$d/out"
	for name in $finished; do
		[ "$(marks "$d/marks" start "$name")" -eq 1 ] || { echo "$name ran again" >&2; return 1; }
	done
	[ "$(marks "$d/marks" done)" -ge 8 ]
}

@test "python: --shard K/2 --save-results twice, then --merge, equals a whole run; merge_setup() spares the setup" {
	d=$BATS_TEST_TMPDIR
	clean_run whole --tasks 5
	for context in "" 1; do
		rm -rf "$d/shards" "$d/setups"
		for k in 0 1; do
			PYT_CONTEXT=$context run --separate-stderr cowrun -j 2 -o "$d/shards" --shard "$k/2" \
				--save-results "$d/$k.res" python "$BATCH" --tasks 5
			[ "$status" -eq 0 ] || { echo "shard $k: status $status: $stderr" >&2; return 1; }
			[ -z "$output" ]
		done
		PYT_CONTEXT=$context PYT_SETUP_MARK=$d/setups run --separate-stderr cowrun --merge "$d/0.res" \
			--merge "$d/1.res" python "$BATCH" --tasks 5
		[ "$status" -eq 0 ] || { echo "merge: status $status: $stderr" >&2; return 1; }
		assert_no_leftovers
		[ "$output" = "$clean" ]
		diff -r -x '.cowrun-manifest.*' "$d/whole" "$d/shards"
		# Without merge_context(), --merge runs setup(); with it,
		# merge_setup() and no setup().
		if [ -z "$context" ]; then
			[ "$(cat "$d/setups")" = setup ]
		else
			[ "$(cat "$d/setups")" = merge_setup ]
		fi
	done
}

@test "python: --merge refuses shards saved from different contents of an argument file" {
	d=$BATS_TEST_TMPDIR
	echo hello >"$d/data.txt"
	run --separate-stderr cowrun -o "$d/shards" --shard 0/2 --save-results "$d/0.res" python "$BATCH" --tasks 4 --data "$d/data.txt"
	[ "$status" -eq 0 ]
	# The same size, other bytes.
	echo jello >"$d/data.txt"
	run --separate-stderr cowrun -o "$d/shards" --shard 1/2 --save-results "$d/1.res" python "$BATCH" --tasks 4 --data "$d/data.txt"
	[ "$status" -eq 0 ]
	run --separate-stderr cowrun --merge "$d/0.res" --merge "$d/1.res" python "$BATCH" --tasks 4 --data "$d/data.txt"
	[ "$status" -eq 255 ] || { echo "status $status, merged: $output" >&2; return 1; }
	assert_one_line_error "cowrun: merge: *saved from another input*'$d/data.txt'*"
}

@test "python: --dry-run lists plan()'s names without a setup; without plan() the tasks are known after the setup" {
	d=$BATS_TEST_TMPDIR
	PYT_PLAN=1 PYT_SETUP_MARK=$d/setups run --separate-stderr cowrun --dry-run -o "$d/out" python "$BATCH" --tasks 3
	[ "$status" -eq 0 ]
	[[ "$output" == *$'\n'"tasks      3 of 3: item-00 item-01 item-02"$'\n'* ]]
	[[ "$output" == *"create   $d/out/item-02"* ]]
	PYT_SETUP_MARK=$d/setups run --separate-stderr cowrun --dry-run -o "$d/out" python "$BATCH" --tasks 3
	[ "$status" -eq 0 ]
	[[ "$output" == *$'\n'"tasks      known after the setup (the workload names them from what it builds)"$'\n'* ]]
	[[ "$output" != *"item-0"* ]]
	# Nothing set up, nothing written.
	[ ! -e "$d/setups" ]
	[ ! -e "$d/out" ]
}

@test "python: numpy products in setup and tasks at -j 2: 20 runs, none hangs, the same output each time" {
	"$PY" -c 'import numpy' 2>/dev/null || { echo "Debian's python3 has no numpy: make deps installs it" >&2; return 1; }
	d=$BATS_TEST_TMPDIR
	run --separate-stderr cowrun --mode serial -o "$d/ref" python "$FIX/matmul.py" 4 64
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	ref=$output
	[[ "$ref" == "total "* ]]
	for i in $(seq 20); do
		rm -rf "$d/out"
		run --separate-stderr timeout 60 "$REAPER" "$COWRUN" -j 2 -o "$d/out" python "$FIX/matmul.py" 4 64
		[ "$status" -eq 0 ] || { echo "run $i: status $status (124: it hung): $stderr" >&2; return 1; }
		[ "$output" = "$ref" ] || { echo "run $i: $output" >&2; return 1; }
		diff -r "$d/ref" "$d/out" || { echo "run $i: other reports" >&2; return 1; }
	done
}

@test "python: -v names the interpreter, where modules come from, and the threads alive at fork" {
	version=$("$PY" -c 'import sys; print(sys.version.split()[0])')
	run --separate-stderr cowrun -v -j 2 -o "$BATS_TEST_TMPDIR/a" python "$BATCH" --tasks 3
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"cowrun: python: Python $version ("*"); modules from: $FIX, "*"/usr/lib/python${version%.*}"* ]]
	[[ "$stderr" != *"alive at fork"* ]]
	PYT_THREAD=1 run --separate-stderr cowrun -v -j 2 -o "$BATS_TEST_TMPDIR/b" python "$BATCH" --tasks 3
	[ "$status" -eq 0 ]
	assert_no_leftovers
	[[ "$stderr" == *"cowrun: python: 1 thread besides the main one alive at fork: 'idle-waiter' ("[0-9]*") (a forked worker has none of them"* ]]
	[[ "$stderr" == *"threads at fork 2"* ]]
	# The worker has no thread: the tasks ran as without it.
	diff -r "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
}

@test "python: SIGTERM once: running tasks finish, none start, 143, no KeyboardInterrupt or traceback" {
	d=$BATS_TEST_TMPDIR
	mkdir "$d/marks"
	PYT_MARKS=$d/marks PYT_SLEEP=1.5 "$REAPER" "$COWRUN" -j 2 -o "$d/out" --joblog "$d/log" \
		python "$BATCH" --tasks 8 >"$d/first" 2>"$d/err" &
	bg=$!
	wait_for 30 "two tasks to start" marks_at_least "$d/marks" start 2
	kill -TERM "$(cowrun_of "$bg")"
	wait_background "$d/err"
	[ "$status" -eq 143 ] || { echo "status $status: $err" >&2; return 1; }
	[ ! -s "$d/first" ]
	[[ "$err" != *"Traceback"* && "$err" != *"KeyboardInterrupt"* ]] || { echo "$err" >&2; return 1; }
	msg='interrupted: \([0-9]*\) done, \([0-9]*\) running ended (0 failed), \([0-9]*\) not started; rerun with --resume'
	counts=$(printf '%s\n' "$err" | sed -n "s/^cowrun: $msg\$/\1 \2 \3/p")
	[ -n "$counts" ] || { echo "no interrupted line: $err" >&2; return 1; }
	read -r n_done n_ended n_not_started <<<"$counts"
	started=$(marks "$d/marks" start)
	# Every task that started finished, its report written, successful in
	# the joblog; the others never started.
	[ "$(marks "$d/marks" done)" -eq "$started" ]
	[ "$((n_done + n_ended))" -eq "$started" ]
	[ "$n_not_started" -eq $((8 - started)) ]
	[ "$n_not_started" -ge 1 ]
	[ "$(awk -F'\t' 'NR > 1 && $7 == 0 && $8 == 0' "$d/log" | wc -l)" -eq "$started" ]
	[ "$(listing "$d/out" | grep -c '^item-')" -eq "$started" ]
}

@test "python: --timeout 1 stops a task sleeping 30 s as timed out; the rest pass" {
	d=$BATS_TEST_TMPDIR
	start=$SECONDS
	PYT_SLOW=1:30 run --separate-stderr cowrun -j 2 --timeout 1 --joblog "$d/log" -o "$d/out" python "$BATCH" --tasks 4
	[ "$status" -eq 1 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[ $((SECONDS - start)) -lt 20 ]
	[[ "$stderr" == *"cowrun: python: task 1 (item-01) failed: timed out after 1.000 s (--timeout)"* ]]
	[[ "$stderr" != *"Traceback"* ]]
	[ "$output" = "merged 3: item-00 item-02 item-03"$'\n'"sum of squares 13" ]
	[ "$(awk -F'\t' '$9 == "python item-01" { print $7 }' "$d/log")" = "-1" ]
	[ ! -e "$d/out/item-01" ]
}

@test "python: a served batch is byte-identical to a direct run: stdout and reports" {
	serve_setup
	start_server -j 2 python "$BATCH" --tasks 5
	submit -o "$D/served" >"$D/served.out"
	cowrun -j 2 -o "$D/direct" python "$BATCH" --tasks 5 >"$D/direct.out"
	cmp "$D/served.out" "$D/direct.out"
	diff -r "$D/served" "$D/direct"
	[ "$(ls "$D/served" | wc -l)" -eq 5 ]
	submit -o "$D/served2" --tasks 1,3 -j 1 >"$D/served2.out"
	cowrun -j 1 -o "$D/direct2" --tasks 1,3 python "$BATCH" --tasks 5 >"$D/direct2.out"
	cmp "$D/served2.out" "$D/direct2.out"
	diff -r "$D/served2" "$D/direct2"
	[ "$(cat "$D/served2.out")" = "merged 2: item-01 item-03"$'\n'"sum of squares 10" ]
	stop_server
	[ "$status" -eq 0 ]
}

@test "python: VIRTUAL_ENV's modules are found; a virtualenv of another Python, even of this version, is refused in one line, 255" {
	d=$BATS_TEST_TMPDIR
	"$PY" -m venv --without-pip --system-site-packages "$d/venv"
	site=$("$d/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
	echo 'MARK = "from the venv"' >"$site/venvmark.py"
	VIRTUAL_ENV=$d/venv run --separate-stderr cowrun -o "$d/out" python "$FIX/uses_venv.py"
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	[ "$output" = "from the venv" ]
	run --separate-stderr env -u VIRTUAL_ENV "$REAPER" "$COWRUN" -o "$d/out2" python "$FIX/uses_venv.py"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: python: $FIX/uses_venv.py:*: ModuleNotFoundError: No module named 'venvmark' (loading the script)"
	# A virtualenv of Python 3.99: refused, no setup (PYT_SETUP_MARK).
	cp -r "$d/venv" "$d/venv99"
	sed -i 's/^version *=.*/version = 3.99.0/' "$d/venv99/pyvenv.cfg"
	PYT_SETUP_MARK=$d/setups VIRTUAL_ENV=$d/venv99 run --separate-stderr cowrun -o "$d/out3" python "$BATCH" --tasks 2
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: python: VIRTUAL_ENV '$d/venv99' is not a virtualenv of the Python this workload embeds, /usr/bin/python3.*: it is Python 3.99 (pyvenv.cfg's version); make one with /usr/bin/python3.* -m venv *, or unset VIRTUAL_ENV"
	[ ! -e "$d/setups" ] && [ ! -e "$d/out3" ]
	# Written by hand: another build's home (the same minor version, say)
	# is refused, naming both; Debian's /usr/bin is taken.
	mkdir -p "$d/fake/bin"
	ln -s "$(readlink -f "$PY")" "$d/fake/bin/python3"
	version=$("$PY" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
	printf 'home = /tmp/fakepython\nversion = %s\n' "$version" >"$d/fake/pyvenv.cfg"
	PYT_SETUP_MARK=$d/setups VIRTUAL_ENV=$d/fake run --separate-stderr cowrun -o "$d/out4" python "$BATCH" --tasks 2
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: python: VIRTUAL_ENV '$d/fake' is not a virtualenv of the Python this workload embeds, /usr/bin/python3.*: it was made from the Python in /tmp/fakepython (pyvenv.cfg's home); *"
	[ ! -e "$d/setups" ] && [ ! -e "$d/out4" ]
	printf 'home = /usr/bin\nexecutable = /opt/python%s/bin/python3\n' "$version" >"$d/fake/pyvenv.cfg"
	VIRTUAL_ENV=$d/fake run --separate-stderr cowrun -o "$d/out5" python "$BATCH" --tasks 2
	[ "$status" -eq 255 ]
	assert_one_line_error "*: it was made from /opt/python$version/bin/python3 (pyvenv.cfg's executable); *"
	printf 'home = /usr/bin\nversion = %s\n' "$version" >"$d/fake/pyvenv.cfg"
	VIRTUAL_ENV=$d/fake run --separate-stderr cowrun -o "$d/out6" python "$BATCH" --tasks 2
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	[ -z "$stderr" ]
	[ "$(ls "$d/out6" | wc -l)" -eq 2 ]
	# Not a virtualenv at all (no pyvenv.cfg): refused too.
	rm "$d/fake/pyvenv.cfg"
	VIRTUAL_ENV=$d/fake run --separate-stderr cowrun -o "$d/out7" python "$BATCH" --tasks 2
	[ "$status" -eq 255 ]
	assert_one_line_error "*: it has no pyvenv.cfg: no virtualenv; *"
}

@test "python: contract.py, the contract, runs as the working script it says it is: serial, -j 2, --dry-run" {
	local contract=$ROOT/workloads/python/contract.py
	same_output_all_modes "2" python "$contract" --count 5
	assert_no_leftovers
	[ "$output" = "5 tasks, sum of squares 30" ]
	[ -z "$stderr" ]
	[ "$(cat "$BATS_TEST_TMPDIR/j2/task-0003.txt")" = "task-0003.txt: 3 squared is 9" ]
	[ "$(ls "$BATS_TEST_TMPDIR/j2" | wc -l)" -eq 5 ]
	# The command its docstring gives, as given, from the source's root.
	grep -q '`cowrun python workloads/python/contract.py$' "$contract"
	cd "$ROOT" && run --separate-stderr cowrun -o "$BATS_TEST_TMPDIR/as-given" python workloads/python/contract.py --count 5
	[ "$status" -eq 0 ]
	[ "$output" = "5 tasks, sum of squares 30" ]
	# plan(): the names without the setup.
	run --separate-stderr cowrun --dry-run python "$contract" --count 3
	[ "$status" -eq 0 ]
	[[ "$output" == *"tasks      3 of 3: task-0000.txt task-0001.txt task-0002.txt"* ]]
}

@test "python: --help points to the contract (contract.py), -- --help the script's; no script or a name with '/' is one line, 255" {
	run --separate-stderr cowrun python --help
	[ "$status" -eq 0 ]
	for f in "setup(argv)" "run(state, i, name)" "finish(state, out)" \
		"workloads/python/contract.py" "share/cowrun/python/" \
		"cowrun python contract.py --count 5" "docs/python.md"; do
		[[ "$output" == *"$f"* ]] || { echo "no $f in: $output" >&2; return 1; }
	done
	[ -f "$ROOT/workloads/python/contract.py" ]
	# It points, and does not repeat: no function table, no error rules.
	[[ "$output" != *"merge_context(state), merge_setup"* ]]
	[[ "$output" != *"exit 255"* ]]
	# After "--", --help is the script's (argparse's help, then its exit).
	run --separate-stderr cowrun python "$BATCH" -- --help
	[[ "$output" == "usage: batch.py [-h] [--tasks TASKS]"* ]]
	[[ "$output" == *"cowrun's test batch"* ]]
	[[ "$output" != *"Runs a Python script"* ]]
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: python: the script exited with status 0 in setup() (its --help, or sys.exit()): no batch ran"
	run --separate-stderr cowrun python
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: python: no script: cowrun \[RUNNER OPTIONS\] python SCRIPT.py \[SCRIPT ARGS\] (cowrun python --help)"
	PYT_BAD_NAME=1 run --separate-stderr cowrun -o "$BATS_TEST_TMPDIR/out" python "$BATCH"
	[ "$status" -eq 255 ]
	assert_no_leftovers
	assert_one_line_error "cowrun: python: tasks(): task 1's name holds a '/' or a NUL ('sub/dir')"
	[ ! -e "$BATS_TEST_TMPDIR/out" ]
}
