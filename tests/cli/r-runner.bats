#!/usr/bin/env bats
# cowrun r with the runner's options (issue 42, item 2: "everything a C
# workload has"): --stats, --metrics, --tasks-per-worker, --retries on a
# fresh fork, --timeout, --halt now and soon, --tasks and --shard with
# --save-results and --merge, --joblog and --resume after cowrun is
# SIGKILLed, --dry-run, --mode omp.  The script is tests/fixtures/r/batch.R,
# switched by RT_* variables (see its header).  Every run starts R (about
# 0.3 s): each test batches its checks, and they share one reference run.
# (--resume refusing a changed source()d file is in r.bats, a changed
# cowrun_input() file in r-api.bats.)

load helpers

BATCH="$ROOT/tests/fixtures/r/batch.R"

# The reference: a plain run of 6 tasks at -j 2, its stdout in $REF.out
# and its reports in $REF, with --stats and --metrics.
setup_file() {
	[ -e "$ROOT/build/workloads/r.so" ] || return 0
	REF=$BATS_FILE_TMPDIR/ref
	"$REAPER" "$COWRUN" -j 2 -o "$REF" --stats "$REF.stats" --metrics "$REF.prom" \
		r "$BATCH" 6 >"$REF.out" 2>"$REF.err"
	echo $? >"$REF.status"
}

setup() {
	bg=
	[ -e "$ROOT/build/workloads/r.so" ] || skip "no r.so (r-base-core): make deps, then make"
	REF=$BATS_FILE_TMPDIR/ref
	d=$BATS_TEST_TMPDIR
	# R makes its session directory (tempdir()) under TMPDIR when it starts;
	# a run SIGKILLed or halted here cannot remove it: in the test's own
	# directory it goes with the test, not left in /tmp.
	export TMPDIR=$d
	[ "$(cat "$REF.status")" -eq 0 ] || { echo "the reference run failed: $(cat "$REF.err")" >&2; return 1; }
}

teardown() {
	stop_background_run
}

# same_as_reference DIR: the last run's stdout and DIR's reports are the
# reference's, byte for byte (manifests are named after the script and
# the selection).
same_as_reference() {
	[ "$output" = "$(cat "$REF.out")" ] || { echo "stdout differs: $output" >&2; return 1; }
	diff -r -x '.cowrun-manifest.*' "$REF" "$1" >&2
}

# marks DIR WHAT [NAME]: how many files batch.R left in DIR for WHAT.
marks() {
	local files
	files=$(ls "$1" 2>/dev/null) || true
	printf '%s\n' "$files" | grep -c "^$2-${3:-}" || true
}

# joblog_rows_at_least LOG N: LOG holds N tasks' rows or more (a task is
# in the joblog once its result is kept, after its report).
joblog_rows_at_least() {
	[ "$(tail -n +2 "$1" 2>/dev/null | grep -c .)" -ge "$2" ]
}

# csv_column FILE NAME: the column NAME of a CSV (its header first), each row's value.
csv_column() {
	awk -F, -v n="$2" '/^#/ { next } !c { for (i = 1; i <= NF; i++) if ($i == n) c = i; next } { print $c }' "$1"
}

@test "r runner: --stats and --metrics; --tasks-per-worker 1 and 2 give a plain run's bytes, with 1 every task sees the parent's state; --retries 1 after a worker SIGKILLed itself" {
	[ "$(cat "$REF.out")" = "merged 6: item-00 item-01 item-02 item-03 item-04 item-05
sum of squares 55
tempdir kept, extra none" ]
	# --stats: a row per worker (2 at -j 2), all 6 tasks, its memory read.
	[ "$(csv_column "$REF.stats" tasks | awk '{ n++; s += $1 } END { print n, s }')" = "2 6" ]
	[ "$(csv_column "$REF.stats" pss_kb | awk '$1 > 0' | wc -l)" -eq 2 ]
	# --metrics: the run's figures, named after the workload.
	grep -qx 'cowrun_tasks_succeeded{workload="r"} 6' "$REF.prom"
	grep -qx 'cowrun_exit_status{workload="r"} 0' "$REF.prom"
	grep -q '^cowrun_run_info{workload="r",' "$REF.prom"
	# run() counts its calls in an environment of the state.  With 1
	# task per worker each task is a fresh fork of the parent (6 workers,
	# each at 0); with 2, a worker's second task sees its first's change.
	for n in 1 2; do
		RT_STATE=1 run --separate-stderr cowrun -j 1 --tasks-per-worker "$n" --stats "$d/st$n" -o "$d/t$n" r "$BATCH" 6
		[ "$status" -eq 0 ] || { echo "--tasks-per-worker $n: status $status: $stderr" >&2; return 1; }
		assert_no_leftovers
		same_as_reference "$d/t$n"
		[ "$(csv_column "$d/st$n" tasks | tr '\n' ' ')" = "$([ "$n" = 1 ] && echo '1 1 1 1 1 1 ' || echo '2 2 2 ')" ]
		seen=$(printf '%s\n' "$stderr" | sed -n 's/^item-0\(.\): \(.\) earlier tasks in this process$/\1\2/p' | tr '\n' ' ')
		[ "$seen" = "$([ "$n" = 1 ] && echo '00 10 20 30 40 50 ' || echo '00 11 20 31 40 51 ')" ] ||
			{ echo "--tasks-per-worker $n: $seen" >&2; return 1; }
	done
	# Task 2 SIGKILLs its worker on its first attempt; the retry, a fresh
	# fork, passes: the reference's bytes, exit 0.
	mkdir "$d/marks"
	RT_MARKS=$d/marks RT_KILL=2 run --separate-stderr cowrun -j 2 --retries 1 -o "$d/r" r "$BATCH" 6
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[[ "$stderr" == *"cowrun: r: task 2 (item-02) attempt 1 failed: worker "*" killed by SIGKILL (Killed); retrying"* ]]
	[ "$(marks "$d/marks" start item-02)" -eq 2 ]
	same_as_reference "$d/r"
}

@test "r runner: --timeout kills a sleeping task, named, the rest go on; --halt now kills the running task; --halt soon lets it finish; neither prints a summary" {
	# Task 1 sleeps 30 s after writing its report: --timeout 1 kills it.
	start=$SECONDS
	RT_SLOW=1:30 run --separate-stderr cowrun -j 2 --timeout 1 --joblog "$d/log" -o "$d/out" r "$BATCH" 4
	[ "$status" -eq 1 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[ $((SECONDS - start)) -lt 20 ]
	[[ "$stderr" == *"cowrun: r: task 1 (item-01) failed: timed out after 1.000 s (--timeout)"* ]]
	[[ "$stderr" != *traceback* ]]
	[ "$output" = "merged 3: item-00 item-02 item-03
sum of squares 13
tempdir kept, extra none" ]
	[ "$(awk -F'\t' '$9 == "r item-01" { print $7 }' "$d/log")" = "-1" ]
	[ "$(ls -A "$d/out" | grep -v '^.cowrun-manifest' | tr '\n' ' ')" = "item-00 item-02 item-03 " ]
	# Task 0 fails once task 1 has started; task 1 and later ones wait for
	# a file.  now: task 1 is killed, nothing more starts.
	for when in now soon; do
		rm -rf "$d/marks" "$d/out"
		mkdir "$d/marks"
		RT_MARKS=$d/marks RT_FAIL=0 RT_HOLD="0=$d/marks/start-item-01.*,1+=$d/marks/release" \
			"$REAPER" "$COWRUN" -j 2 --halt "$when,fail=1" -o "$d/out" r "$BATCH" 4 >"$d/first" 2>"$d/err" &
		bg=$!
		# soon: the file comes once the halt is said, so task 1 runs
		# on after it and ends.
		if [ "$when" = soon ]; then
			wait_for 30 "the halt" grep -q "letting running tasks finish" "$d/err"
			touch "$d/marks/release"
		fi
		wait_background "$d/err"
		[ "$status" -eq 1 ] || { echo "$when: status $status: $err" >&2; return 1; }
		[ ! -s "$d/first" ]
		[[ "$err" == *"cowrun: r: task 0 (item-00) failed: Error in run(state, i, name): missing store item-00"* ]]
		[[ "$err" == *"halted (--halt): "*"; no summary"* ]] || { echo "$err" >&2; return 1; }
		[ "$(marks "$d/marks" start item-03)" -eq 0 ]
		assert_no_temporary "$d/out"
		if [ "$when" = now ]; then
			[[ "$err" == *"--halt now: 1 failed, 0 succeeded; killing running tasks"* ]]
			[[ "$err" == *"killed while running; no summary"* ]]
			[ "$(marks "$d/marks" start item-01)" -eq 1 ]
			[ "$(marks "$d/marks" done)" -eq 0 ]
			[ ! -e "$d/out/item-01" ]
		else
			[[ "$err" == *"--halt soon: 1 failed, 0 succeeded; letting running tasks finish"* ]]
			[[ "$err" != *"killed while running"* ]]
			[ "$(marks "$d/marks" done item-01)" -eq 1 ]
			[ "$(cat "$d/out/item-01")" = "item-01: 1 squared is 1" ]
		fi
	done
}

@test "r runner: --tasks and --shard runs saved with --save-results, then --merge: the whole run's bytes; setup() without merge_context(), merge_setup() with it" {
	for how in tasks shard; do
		rm -rf "$d/parts" "$d/setups"
		if [ "$how" = tasks ]; then
			parts=("--tasks 0,1" "--tasks 2-5") context=
		else
			parts=("--shard 0/2" "--shard 1/2") context=1
		fi
		for k in 0 1; do
			RT_CONTEXT=$context run --separate-stderr cowrun -j 2 -o "$d/parts" ${parts[$k]} \
				--save-results "$d/$how$k.res" r "$BATCH" 6
			[ "$status" -eq 0 ] || { echo "${parts[$k]}: status $status: $stderr" >&2; return 1; }
			[ -z "$output" ]
		done
		RT_CONTEXT=$context RT_SETUP_MARK=$d/setups run --separate-stderr cowrun \
			--merge "$d/${how}0.res" --merge "$d/${how}1.res" r "$BATCH" 6
		[ "$status" -eq 0 ] || { echo "$how merge: status $status: $stderr" >&2; return 1; }
		assert_no_leftovers
		same_as_reference "$d/parts"
		[ "$(cat "$d/setups")" = "$([ -n "$context" ] && echo merge_setup || echo setup)" ]
	done
}

@test "r runner: cowrun SIGKILLed mid-batch, then --resume: a clean run's bytes, no finished task again; --resume refuses a changed script and a changed argument file" {
	cp "$BATCH" "$d/batch.R"
	echo data >"$d/arg.txt"
	args=(r "$d/batch.R" 6 "$d/arg.txt")
	mkdir "$d/marks"
	# Tasks 4 and 5 wait for a file that never comes: the run cannot end
	# before it is killed.
	RT_MARKS=$d/marks RT_HOLD="4+=$d/never" "$REAPER" "$COWRUN" -j 2 -o "$d/out" --joblog "$d/log" \
		"${args[@]}" >"$d/first" 2>"$d/err" &
	bg=$!
	wait_for 30 "four tasks in the joblog" joblog_rows_at_least "$d/log" 4
	sigkill_background_run "$d/err"
	[ ! -s "$d/first" ]
	[ "$(marks "$d/marks" done)" -eq 4 ]
	[ "$(ls "$d/out" | grep -c '^item-')" -eq 4 ]
	# The script changed, then the argument file: refused before the setup.
	cp -p "$d/batch.R" "$d/batch.bak"
	echo '# changed' >>"$d/batch.R"
	run --separate-stderr cowrun -j 2 -o "$d/out" --joblog "$d/log" --resume "${args[@]}"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --resume: input '$d/batch.R' (script) changed since the run being resumed: its size changed from * to * bytes: run again without --resume"
	cp -p "$d/batch.bak" "$d/batch.R"
	cp -p "$d/arg.txt" "$d/arg.bak"
	echo date >"$d/arg.txt"
	run --separate-stderr cowrun -j 2 -o "$d/out" --joblog "$d/log" --resume "${args[@]}"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --resume: input '$d/arg.txt' (argv?[0-9]?) changed since the run being resumed: it was modified (modification time * UTC then, * UTC now): run again without --resume"
	cp -p "$d/arg.bak" "$d/arg.txt"
	# Unchanged: the resume runs the two unfinished tasks only.
	RT_MARKS=$d/marks run --separate-stderr cowrun -j 2 -o "$d/out" --joblog "$d/log" --resume "${args[@]}"
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	same_as_reference "$d/out"
	for k in 0 1 2 3; do
		[ "$(marks "$d/marks" start "item-0$k")" -eq 1 ] || { echo "item-0$k ran again" >&2; return 1; }
	done
	[ "$(marks "$d/marks" done)" -eq 6 ]
}

@test "r runner: --dry-run lists plan()'s names without a setup, and without plan() says after the setup; no R tempdir outlives it or a failed setup; --mode omp is refused, even with --force, in one line" {
	RT_PLAN=1 RT_SETUP_MARK=$d/setups run --separate-stderr cowrun --dry-run -o "$d/out" r "$BATCH" 3
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	[[ "$output" == *$'\n'"tasks      3 of 3: item-00 item-01 item-02"$'\n'* ]]
	[[ "$output" == *"create   $d/out/item-02"* ]]
	# R's session directory (tempdir(), under TMPDIR) goes with R in a
	# process that gets no state: here, and after an error in setup().
	mkdir "$d/tmp"
	TMPDIR=$d/tmp RT_SETUP_MARK=$d/setups run --separate-stderr cowrun --dry-run -o "$d/out" r "$BATCH" 3
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	[[ "$output" == *$'\n'"tasks      known after the setup (the workload names them from what it builds)"$'\n'* ]]
	[[ "$output" != *"item-0"* ]]
	[ ! -e "$d/setups" ]
	[ ! -e "$d/out" ]
	TMPDIR=$d/tmp RT_SETUP_FAIL=1 run --separate-stderr cowrun -o "$d/out" r "$BATCH" 3
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: r: $BATCH:*: in setup(): no data for tonight"
	[ -z "$(ls -A "$d/tmp")" ] || { echo "left in TMPDIR: $(ls -A "$d/tmp")" >&2; return 1; }
	for force in "" --force; do
		run --separate-stderr cowrun --mode omp $force -o "$d/out" r "$BATCH" 3
		[ "$status" -eq 255 ] || { echo "'$force': status $status" >&2; return 1; }
		assert_one_line_error "cowrun: r runs no task on a thread: --mode omp is refused, even with --force (use fork or serial)"
		[ -z "$output" ]
		[ ! -e "$d/out" ]
	done
}
