#!/usr/bin/env bats
# A Python setup on every core (issue 41): cowrun.parallel(fn, items) runs
# fn(item) in forked children of the setup, min(setup threads, items) of
# them, the results back in item order; cowrun.csv_parts(path) cuts a CSV
# into parts fixed by the file.  The script is
# tests/fixtures/python/parallel.py, switched by PAR_* variables.

load serve-helpers

FIX="$ROOT/tests/fixtures/python"
PAR="$FIX/parallel.py"
EXAMPLE="$ROOT/workloads/python/examples/sales_report.py"

setup() {
	serve_setup
	cd "$D"
}

# par NAME [RUNNER OPTIONS]: a run of parallel.py into $D/NAME; must succeed.
par() {
	local name=$1
	shift
	python_ok "$name" "$PAR" "$@"
}

# par_fails [RUNNER OPTIONS]: a run that must fail in the setup: 255, one
# line, nothing on stdout, no report.
par_fails() {
	run --separate-stderr cowrun "$@" -o "$D/failed" python "$PAR"
	[ "$status" -eq 255 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[ -z "$output" ]
	[ ! -e "$D/failed/only" ]
}

@test "python parallel: results in item order, the same bytes at -j 1, -j 2 and serial, more items than children; stdout to stderr; register_at_fork once per child" {
	mkdir marks
	PAR_PRINT=1 PAR_ITEMS=9 PAR_SLEEP=0.05 PAR_MARKS=$D/marks par j2 -j 2
	reference=$output
	# Both children ran items (9 items, 2 children, each item 50 ms).
	[ "$(ls marks | sed 's/.*\.//' | sort -u | grep -c .)" -eq 2 ]
	[ "$(printf '%s\n' "$output" | grep -c '^(')" -eq 9 ]
	[ "$(printf '%s\n' "$output" | grep '^(' | cut -d, -f1 | tr -d '(' | tr '\n' ' ')" = "0 1 2 3 4 5 6 7 8 " ]
	# Each item its own draws (seeded from the run's seed and its index).
	[ "$(printf '%s\n' "$output" | grep '^(' | cut -d, -f2 | sort -u | grep -c .)" -eq 9 ]
	[ "$(printf '%s\n' "$output" | tail -1)" = "forks 2" ]
	[[ "$stderr" == *"item 8 printed"* ]]
	PAR_ITEMS=9 par j1 -j 1
	[ "$(printf '%s\n' "$output" | grep '^(')" = "$(printf '%s\n' "$reference" | grep '^(')" ]
	[ "$(printf '%s\n' "$output" | tail -1)" = "forks 1" ]
	PAR_ITEMS=9 par serial --mode serial
	[ "$(printf '%s\n' "$output" | grep '^(')" = "$(printf '%s\n' "$reference" | grep '^(')" ]
	# Another --seed: other draws.
	PAR_ITEMS=9 par seeded -j 2 --seed 7
	[ "$(printf '%s\n' "$output" | grep '^(')" != "$(printf '%s\n' "$reference" | grep '^(')" ]
}

@test "python parallel: a raising item: the lowest failing one is named, the same line at -j 1 and -j 2; 255, nothing written; none started after it at -j 1" {
	mkdir marks
	PAR_FAIL=5,3 PAR_MARKS=$D/marks par_fails -j 1
	line=$stderr
	assert_one_line_error "cowrun: python: $PAR:*: in setup(): ParallelError: cowrun.parallel(): item 3 failed: ValueError: bad item 3 ($PAR:*)"
	# One child ran items 0..3 in order, and stopped at the failure.
	[ "$(ls marks | sed 's/\..*//' | sort | tr '\n' ' ')" = "item-0 item-1 item-2 item-3 " ]
	PAR_FAIL=5,3 par_fails -j 2
	[ "$stderr" = "$line" ]
	PAR_FAIL=5,3 par_fails --mode serial
	[ "$stderr" = "$line" ]
	# Item 4 fails first at -j 2 (item 3 is slow): item 3 is still named.
	PAR_FAIL=4,3 PAR_SLOW=3 par_fails -j 1
	line=$stderr
	[[ "$line" == *"item 3 failed: ValueError: bad item 3"* ]]
	PAR_FAIL=4,3 PAR_SLOW=3 par_fails -j 2
	[ "$stderr" = "$line" ]
	# Under -v: the failing item's traceback.
	PAR_FAIL=3 run --separate-stderr cowrun -v -j 2 -o "$D/v" python "$PAR"
	[ "$status" -eq 255 ]
	[[ "$stderr" == *'raise ValueError(f"bad item {i}")'* ]]
}

@test "python parallel: a killed item and an unpicklable result fail the setup in one line naming the item, at -j 1 and -j 2" {
	for j in 1 2; do
		PAR_KILL=2 par_fails -j $j
		assert_one_line_error "cowrun: python: $PAR:*: in setup(): ParallelError: cowrun.parallel(): item 2 failed: its child was killed by signal 9 (Killed)"
		PAR_LAMBDA=4 par_fails -j $j
		assert_one_line_error "cowrun: python: $PAR:*: in setup(): ParallelError: cowrun.parallel(): item 4 failed: fn returned a function, which cannot be pickled: *"
	done
}

@test "python parallel: refused at the top level, in plan(), in run(), nested, with a thread alive; cowrun.input() refused in an item" {
	PAR_WHERE=top par_fails -j 2
	assert_one_line_error "cowrun: python: $PAR:*: RuntimeError: cowrun.parallel() is only for setup() and merge_setup() (not the script's top level, plan(), run(), merge() or finish()) (loading the script)"
	PAR_WHERE=plan run --separate-stderr cowrun --dry-run -o "$D/dry" python "$PAR"
	[[ "$stderr" == *"in plan(): RuntimeError: cowrun.parallel() is only for setup() and merge_setup()"* ]]
	PAR_WHERE=run run --separate-stderr cowrun -j 2 -o "$D/run" python "$PAR"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"task 0 (only) failed: RuntimeError: cowrun.parallel() is only for setup() and merge_setup()"* ]]
	PAR_WHERE=nested par_fails -j 2
	assert_one_line_error "*item 0 failed: RuntimeError: cowrun.parallel() inside a cowrun.parallel() item: no nesting*"
	PAR_WHERE=input par_fails -j 2
	assert_one_line_error "*item 0 failed: RuntimeError: cowrun.input() inside a cowrun.parallel() item: declare the run's inputs in setup(), before the call*"
	PAR_WHERE=thread par_fails -j 2
	assert_one_line_error "*RuntimeError: cowrun.parallel(): 1 thread alive: 'pinger': a fork copies only this one*"
}

@test "python parallel: -v names the setup's child processes and each item's time" {
	PAR_ITEMS=3 run --separate-stderr cowrun -v -j 2 -o "$D/v" python "$PAR"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"cowrun: python: cowrun.parallel(): 3 items on 2 child processes in "*" s; each item (s, - not run): "[0-9]*.[0-9][0-9][0-9]" "[0-9]*" "[0-9]*"; results "* ]]
	[[ "$stderr" == *"setup "*" s, 1 tasks, 2 setup processes (forked by the workload; 2 available)"* ]]
	[[ "$stderr" != *"never called cowrun_parallel"* ]]
	PAR_ITEMS=3 run --separate-stderr cowrun -v --mode serial -o "$D/s" python "$PAR"
	[[ "$stderr" == *"3 items on 1 child process in "* ]]
	[[ "$stderr" == *"1 setup process (forked by the workload; 1 available)"* ]]
}

@test "python parallel: Ctrl-C (SIGINT) during cowrun.parallel() ends the run at once, 130, and leaves no child" {
	mkdir marks
	PAR_SLEEP=60 PAR_MARKS=$D/marks "$REAPER" "$COWRUN" -j 2 -o "$D/int" python "$PAR" 2>"$D/err" &
	bg=$!
	wait_for 30 "both children to start" started_at_least marks 2
	children=$(started_pids marks)
	kill -INT "$(cowrun_of "$bg")"
	status=0
	wait "$bg" || status=$?
	[ "$status" -eq 130 ] || { cat "$D/err" >&2; return 1; }
	[ "$(cat "$D/err")" = "cowrun: interrupted (SIGINT) during the setup: no task was started" ]
	# shellcheck disable=SC2086
	all_dead $children
}

@test "python parallel: cowrun SIGKILLed during cowrun.parallel(): its children end with it; --resume then equals a clean run" {
	mkdir marks
	PAR_SLEEP=60 PAR_MARKS=$D/marks "$REAPER" "$COWRUN" -j 2 -o "$D/k" --joblog "$D/log" \
		python "$PAR" >/dev/null 2>"$D/err" &
	bg=$!
	wait_for 30 "both children to start" started_at_least marks 2
	children=$(started_pids marks)
	kill -KILL "$(cowrun_of "$bg")"
	# shellcheck disable=SC2086
	wait_for 5 "the setup's children to die with cowrun" all_dead $children
	wait "$bg" || true
	par clean -j 2
	clean=$output
	run --separate-stderr cowrun -j 2 -o "$D/k" --joblog "$D/log" --resume python "$PAR"
	[ "$status" -eq 0 ] || { echo "resume: $stderr" >&2; return 1; }
	assert_no_leftovers
	[ "$output" = "$clean" ]
}

@test "python parallel: merge_setup() may use it; a served batch whose generation's setup uses it equals a direct run" {
	par first -j 2 --save "$D/r.cowrun"
	run --separate-stderr cowrun -j 2 --merge "$D/r.cowrun" python "$PAR"
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	[ "$(printf '%s\n' "$output" | grep -c '^(')" -eq 3 ]
	PAR_ITEMS=5 start_server -j 2 python "$PAR"
	submit -o "$D/served" >"$D/served.out"
	PAR_ITEMS=5 cowrun -j 2 -o "$D/direct" python "$PAR" >"$D/direct.out"
	cmp "$D/served.out" "$D/direct.out"
	[ "$(grep -c '^(' "$D/served.out")" -eq 5 ]
	stop_server
	[ "$status" -eq 0 ]
}

# csv FILE ROWS: a CSV of columns a,b,c whose fields hold quoted commas,
# line ends and doubled quotes.
quoted_csv() {
	python3 - "$1" "$2" <<'PY'
import csv, random, sys
r = random.Random(5)
with open(sys.argv[1], "w", newline="") as f:
    w = csv.writer(f, lineterminator="\n")
    w.writerow(["a", "b", "c"])
    for i in range(int(sys.argv[2])):
        w.writerow([i, r.choice(["x", 'say "hi"', "two\nlines", "a,b", "", "\n\n"]), "z" * r.randrange(40)])
PY
}

@test "python csv_parts: quoted line ends, commas and doubled quotes are cut exactly: the parts' frame is the whole file's, at -j 1 and 2" {
	quoted_csv q.csv 3000
	COWRUN_PYTHON_CSV_BLOCK=64 PAR_CSV=$D/q.csv par q2 -j 2
	[[ "$output" == "parts "*" rows 3000 lines 2 "* ]]
	parts=$(cut -d' ' -f2 <<<"$output")
	[ "$parts" -gt 100 ]
	COWRUN_PYTHON_CSV_BLOCK=64 PAR_CSV=$D/q.csv par q1 -j 1
	[ "$output" = "$(COWRUN_PYTHON_CSV_BLOCK=64 PAR_CSV=$D/q.csv cowrun -j 2 -o "$D/q3" python "$PAR")" ]
	# A part's line is the file's: the line holding its first row.
	COWRUN_PYTHON_CSV_BLOCK=4096 PAR_CSV=$D/q.csv par q4 -j 2
	second=$(cut -d' ' -f7 <<<"$output")
	[ "$second" -gt 2 ]
	# A quote inside an unquoted field is not RFC 4180: refused.
	printf 'a,b,c\n1,ab"c,2\n' >stray.csv
	PAR_CSV=$D/stray.csv par_fails -j 2
	assert_one_line_error "*ValueError: cowrun.csv_parts('$D/stray.csv'): the quote at byte 10 is not RFC 4180 (a field's quotes open it, close it before a comma or a line end, or are doubled): its parts cannot be cut exactly; read it whole (pd.read_csv(path))"
}

@test "python csv_parts: an empty CSV, a pipe, a compressed file, escapechar, header=None and UTF-16 are refused in one line; a header alone and a file shorter than a block are one part" {
	: >empty.csv
	PAR_CSV=$D/empty.csv par_fails -j 2
	assert_one_line_error "*cowrun.csv_parts('$D/empty.csv'): an empty file: no header line: its parts cannot be cut exactly; read it whole (pd.read_csv(path))"
	printf 'a,b,c\n' >header.csv
	PAR_CSV=$D/header.csv par h -j 2
	[ "$output" = "parts 1 rows 0 lines 2" ]
	printf 'a,b,c\n1,2,3\n4,5,6' >short.csv   # no line end at the end, too
	PAR_CSV=$D/short.csv par s -j 2
	[ "$output" = "parts 1 rows 2 lines 2" ]
	mkfifo fifo
	cat short.csv >fifo 2>/dev/null &
	writer=$!
	PAR_CSV=$D/fifo par_fails -j 2
	assert_one_line_error "*cowrun.csv_parts('$D/fifo'): not a regular file (a pipe, a device): it has no offsets to cut at: *read it whole*"
	kill "$writer" 2>/dev/null || true
	wait "$writer" || true
	gzip -k short.csv
	PAR_CSV=$D/short.csv.gz par_fails -j 2
	assert_one_line_error "*cowrun.csv_parts('$D/short.csv.gz'): is compressed (gzip): *"
	PAR_CSV=$D/short.csv PAR_CSV_KW="escapechar='\\\\'" par_fails -j 2
	assert_one_line_error "*cowrun.csv_parts('$D/short.csv'): escapechar: *read it whole (pd.read_csv(path))"
	PAR_CSV=$D/short.csv PAR_CSV_KW="header=None" par_fails -j 2
	assert_one_line_error "*cowrun.csv_parts('$D/short.csv'): header=None: *"
	PAR_CSV=$D/short.csv PAR_CSV_KW="encoding='utf-16'" par_fails -j 2
	assert_one_line_error "*cowrun.csv_parts('$D/short.csv'): encoding 'utf-16' is not ASCII-compatible*"
}

@test "python csv_parts: the example's CSV is one input, hashed once by its parts' read, with the hash the runner computes" {
	"$ROOT/tests/helpers/make-sales-csv" 170000 20 5 >sales.csv
	[ "$(stat -c %s sales.csv)" -gt 4194304 ]   # two blocks of COWRUN_INPUT_BLOCK
	SALES_REPORT_PART_BLOCKS=1 run --separate-stderr cowrun -v -j 2 -o "$D/ex" --save "$D/parts.cowrun" \
		python "$EXAMPLE" --input sales.csv
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	[[ "$stderr" == *"cowrun: python: 2 inputs, "*" bytes: 1 hashed by the setup's own read, 1 ("*" bytes) hashed here"* ]]
	[[ "$stderr" == *"cowrun.parallel(): 2 items on 2 child processes"* ]]
	# The runner's own hash of the same file (the C workload does not
	# hand it over at another part size): the same input line.
	COWRUN_SALES_CSV_PART=1000000 cowrun -o "$D/c" --save "$D/c.cowrun" sales --input sales.csv >"$D/c.out"
	# Two parts, each sorted by store in its child, then joined: the C
	# report's bytes, summary and reports.
	[ "$output" = "$(cat "$D/c.out")" ]
	diff -r -x '.cowrun-manifest.*' "$D/ex" "$D/c"
	ours=$(grep -a '^input [0-9]* argv\[2\] file ' "$D/parts.cowrun" | cut -d' ' -f4-6)
	theirs=$(grep -a '^input [0-9]* --input file ' "$D/c.cowrun" | cut -d' ' -f4-6)
	[ -n "$ours" ]
	[ "$ours" = "$theirs" ]
}

@test "python csv_parts: the example joins parts that hold a few stores each (the CSV sorted by store, 40 parts) into the C report's bytes" {
	"$ROOT/tests/helpers/make-sales-csv" 20000 30 7 >s.csv
	{ head -1 s.csv; tail -n +2 s.csv | sort -t, -k2,2n -s; } >sorted.csv
	COWRUN_PYTHON_CSV_BLOCK=4096 SALES_REPORT_PART_BLOCKS=3 run --separate-stderr \
		cowrun -v -j 2 -o "$D/py" python "$EXAMPLE" --input sorted.csv
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	assert_no_leftovers
	[[ "$stderr" =~ cowrun\.parallel\(\):\ ([0-9]+)\ items ]]
	[ "${BASH_REMATCH[1]}" -ge 40 ]
	cowrun -o "$D/c" sales --input sorted.csv >"$D/c.out"
	[ "$output" = "$(cat "$D/c.out")" ]
	diff -r -x '.cowrun-manifest.*' "$D/py" "$D/c"
}
