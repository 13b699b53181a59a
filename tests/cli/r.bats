#!/usr/bin/env bats
# cowrun r SCRIPT.R (workloads/r): an R script's setup, tasks, reports and
# errors as a cowrun batch.  The script is tests/fixtures/r/batch.R; what
# goes wrong is switched by RT_* environment variables (see its header),
# never by arguments, which would be inputs of the run.  Each run starts
# R (0.2-0.4 s): checks that share a run share it.

load helpers

FIX="$ROOT/tests/fixtures/r"
BATCH="$FIX/batch.R"

setup() {
	bg=
	[ -e "$ROOT/build/workloads/r.so" ] || skip "no r.so (r-base-core): make deps, then make"
}

teardown() {
	stop_background_run
}

# marks DIR WHAT: how many files batch.R left in DIR for WHAT (start, done).
marks() {
	local files
	files=$(ls "$1" 2>/dev/null) || true
	printf '%s\n' "$files" | grep -c "^$2-" || true
}
marks_at_least() { [ "$(marks "$1" "$2")" -ge "$3" ]; }

# The line of FILE holding MARKER (a comment the fixture carries).
line_of() {
	grep -n -- "# $2\$" "$1" | head -1 | cut -d: -f1
}

@test "r: serial and fork -j 1, 2 give byte-identical stdout and reports, with tasks that make R collect garbage" {
	RT_ALLOC=1 same_output_all_modes "1 2" r "$BATCH" 5
	[ "$output" = "merged 5: item-00 item-01 item-02 item-03 item-04
sum of squares 30
tempdir kept, extra none" ]
	[ "$(cat "$BATS_TEST_TMPDIR/j2/item-03")" = "item-03: 3 squared is 9" ]
}

@test "r: contract.R runs as the working script it says it is: -j 2, --dry-run; --help points to it" {
	run --separate-stderr cowrun -j 2 -o "$BATS_TEST_TMPDIR/out" r "$ROOT/workloads/r/contract.R" --count 4
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	[ "$output" = "4 parts, sum of squares 30" ]
	[ "$(head -n 1 "$BATS_TEST_TMPDIR/out/part-02.txt")" = "part-02.txt: 3 squared is 9" ]
	[[ "$(sed -n 2p "$BATS_TEST_TMPDIR/out/part-02.txt")" =~ ^draw\ 0\.[0-9]{6}$ ]]
	run --separate-stderr cowrun --dry-run r "$ROOT/workloads/r/contract.R" --count 3
	[ "$status" -eq 0 ]
	[[ "$output" == *"3 of 3: part-00.txt part-01.txt part-02.txt"* ]]
	run cowrun r --help
	[[ "$output" == *"contract.R"*"docs/r.md"* ]]
}

@test "r: a parse error, an error in setup(): one line naming the script and line, 255, nothing written; merge() returning an assignment's value: no summary" {
	d=$BATS_TEST_TMPDIR
	printf 'setup <- function(args) list()\nx <- (1 +\n  y y)\n' >"$d/bad.R"
	run --separate-stderr cowrun -o "$d/out" r "$d/bad.R"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: r: $d/bad.R:3:5: unexpected symbol (parsing the script)"
	[ ! -e "$d/out" ]
	RT_SETUP_FAIL=1 run --separate-stderr cowrun -o "$d/out" r "$BATCH" 3
	[ "$status" -eq 255 ]
	assert_no_leftovers
	assert_one_line_error "cowrun: r: $BATCH:$(line_of "$BATCH" SETUP_LINE): in setup(): no data for tonight"
	[ ! -e "$d/out" ]
	RT_MERGE=assign run --separate-stderr cowrun -o "$d/out" r "$BATCH" 2
	[ "$status" -eq 254 ]
	[ -z "$output" ]
	[[ "$stderr" == *"cowrun: r: $BATCH: merge() returned a double for task 0 (item-00), but the state is a list: it returns the new state (an assignment's value is not: end merge() with \`state\`)"* ]]
}

@test "r: stop(), q() and an external pointer in run() fail their task only; the traceback once; R's tempdir kept" {
	d=$BATS_TEST_TMPDIR
	RT_FAIL=1 RT_QUIT=2 RT_EXTPTR=3 run --separate-stderr cowrun -j 2 -o "$d/out" r "$BATCH" 5
	[ "$status" -eq 3 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[ "$output" = "merged 2: item-00 item-04
sum of squares 16
tempdir kept, extra none" ]
	[[ "$stderr" == *"cowrun: r: task 1 (item-01) failed: Error in run(state, i, name): missing store item-01 ($BATCH:$(line_of "$BATCH" FAIL_LINE))"* ]]
	# A traceback once for each of the two errors (stop(), q()).
	[ "$(printf '%s\n' "$stderr" | grep -c 'traceback, innermost last:$')" -eq 2 ]
	[[ "$stderr" == *"cowrun: r: task 2 (item-02) failed: Error in q(status = 3): q(status = 3) was called"*"tempdir() stay"* ]]
	[[ "$stderr" == *"cowrun: r: task 3 (item-03) failed: run() returned a 'list' holding an external pointer ('externalptr'), which cannot leave the worker"* ]]
	[ "$(ls "$d/out")" = "item-00
item-04" ]
}

@test "r: -v names R and the threads at fork; profiles print on stderr; a 100 MB result; merges wait for the workers' end" {
	d=$BATS_TEST_TMPDIR
	echo 'cat("profile says hello\n")' >"$d/Rprofile"
	R_PROFILE_USER=$d/Rprofile RT_LIVE=1 RT_SLOW=1:1 RT_BIG=1 run --separate-stderr cowrun -v -j 2 -o "$d/out" r "$BATCH" 2
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[ "$output" = "merged 2: item-00 item-01
sum of squares 1
tempdir kept, extra none
big 12500000
workers alive at merge 0" ]
	[[ "$stderr" == *"profile says hello"* ]]
	[[ "$stderr" == *"cowrun: r: R version 4."*", R_HOME /usr/lib/R; packages from: "*"/usr/lib/R/library"* ]]
	[[ "$stderr" == *"alive at fork"* ]]
	# The parent's collections before the fork end with R's own full one,
	# so a worker's first 120 collections hold no full one (R makes every
	# 126th collection full): none marks and copies the setup's pages.
	[[ "$stderr" == *"cowrun: r: before the fork: "*" collections, the last R's own full one"* ]]
	RT_GCS=120 run --separate-stderr cowrun -j 1 -o "$d/gcs" r "$BATCH" 1
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	[ "$(grep -c '^Garbage collection .* (level [0-9])' <<<"$stderr")" -eq 120 ]
	! grep -q '(level 2)' <<<"$stderr" || { echo "a full collection in the worker" >&2; return 1; }
}

@test "r: --resume refuses a file the script source()d, changed" {
	d=$BATS_TEST_TMPDIR
	echo 'extra <- function() "one"' >"$d/helper.R"
	RT_SOURCE=$d/helper.R RT_FAIL=1 run --separate-stderr cowrun -o "$d/out" --joblog "$d/log" r "$BATCH" 3
	[ "$status" -eq 1 ]
	[[ "$output" == *"extra one" ]]
	echo 'extra <- function() "three"' >"$d/helper.R"
	RT_SOURCE=$d/helper.R run --separate-stderr cowrun -o "$d/out" --joblog "$d/log" --resume-failed r "$BATCH" 3
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --resume: input '$d/helper.R' (cowrun_input) changed since the run being resumed: its size changed from 26 to 28 bytes: run again without --resume"
}

@test "r: SIGTERM once: running tasks finish, none start, 143; SIGINT: 130; no R message" {
	d=$BATS_TEST_TMPDIR
	for sig in TERM INT; do
		rm -rf "$d/marks" "$d/out" "$d/log"
		mkdir "$d/marks"
		RT_MARKS=$d/marks RT_SLEEP=0.5 "$REAPER" "$COWRUN" -j 2 -o "$d/out" --joblog "$d/log" \
			r "$BATCH" 8 >"$d/first" 2>"$d/err" &
		bg=$!
		wait_for 30 "two tasks to start" marks_at_least "$d/marks" start 2
		kill -"$sig" "$(cowrun_of "$bg")"
		wait_background "$d/err"
		want=143
		[ "$sig" = TERM ] || want=130
		[ "$status" -eq "$want" ] || { echo "SIG$sig: status $status: $err" >&2; return 1; }
		[ ! -s "$d/first" ]
		[[ "$err" != *"Error"* && "$err" != *"traceback"* ]] || { echo "$err" >&2; return 1; }
		[[ "$err" == *"cowrun: interrupted: "*"rerun with --resume"* ]] || { echo "$err" >&2; return 1; }
		started=$(marks "$d/marks" start)
		[ "$(marks "$d/marks" done)" -eq "$started" ]
		[ "$started" -lt 8 ]
		[ "$(ls "$d/out" | grep -c '^item-')" -eq "$started" ]
	done
}

@test "r: a package's OpenMP region, 2 threads in setup, the default in tasks: 20 workers forked after it, none hangs" {
	command -v R >/dev/null || skip "no R CMD SHLIB"
	d=$BATS_TEST_TMPDIR
	mkdir "$d/lib"
	cp "$FIX/omp.c" "$d/lib/"
	printf 'PKG_CFLAGS = $(SHLIB_OPENMP_CFLAGS)\nPKG_LIBS = $(SHLIB_OPENMP_CFLAGS)\n' >"$d/lib/Makevars"
	(cd "$d/lib" && R CMD SHLIB -o omp.so omp.c >/dev/null)
	# A fresh fork of the parent for each of the 20 tasks: each one's
	# first region would wait forever for the setup's second thread
	# (libgomp after fork) unless the worker runs OpenMP on one thread.
	RT_OMP=$d/lib/omp.so run --separate-stderr cowrun -j 2 --tasks-per-worker 1 --timeout 20 -o "$d/out" r "$BATCH" 20
	[ "$status" -eq 0 ] || { echo "status $status (1, a task timed out: it hung): $stderr" >&2; return 1; }
	assert_no_leftovers
	[[ "$output" == "merged 20: item-00 item-01 "* ]]
}

@test "r: the setup's threads follow -j (data.table's, OpenMP's), one in serial mode and in every worker; the environment's count wins" {
	command -v Rscript >/dev/null && Rscript -e 'library(data.table)' 2>/dev/null || skip "no data.table"
	cat >"$BATS_TEST_TMPDIR/dt.R" <<-'EOF2'
		library(data.table)
		setup <- function(args) { message("setup threads ", getDTthreads()); list() }
		tasks <- function(state) c("a", "b")
		run <- function(state, i, name) getDTthreads()
		merge <- function(state, i, name, result) c(state, result)
		finish <- function(state, out) cat("workers", unlist(state), "\n", file = out)
	EOF2
	run --separate-stderr cowrun -v -j 2 -o "$BATS_TEST_TMPDIR/o1" r "$BATS_TEST_TMPDIR/dt.R"
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	[ "$output" = "workers 1 1 " ]
	[[ "$stderr" == *"setup threads 2"* ]]
	[[ "$stderr" == *"cowrun: r: the setup's threads: data.table 2, OpenMP 2"* ]]
	# the runner's line counts them (cowrun_setup_threaded())
	[[ "$stderr" == *"cowrun: r: setup "*" s, 2 tasks, 2 setup threads (the workload's own; 2 available)"$'\n'* ]]
	run --separate-stderr cowrun -v --mode serial -o "$BATS_TEST_TMPDIR/o2" r "$BATS_TEST_TMPDIR/dt.R"
	[ "$status" -eq 0 ] && [[ "$stderr" == *"setup threads 1"* ]]
	[[ "$stderr" == *"cowrun: r: setup "*" s, 2 tasks, 1 setup thread (the workload's own; 1 available)"$'\n'* ]]
	R_DATATABLE_NUM_THREADS=1 run --separate-stderr cowrun -j 2 -o "$BATS_TEST_TMPDIR/o3" r "$BATS_TEST_TMPDIR/dt.R"
	[ "$status" -eq 0 ] && [[ "$stderr" == *"setup threads 1"* ]]
	assert_no_leftovers
}
