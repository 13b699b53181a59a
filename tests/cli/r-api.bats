#!/usr/bin/env bats
# The cowrun functions of `cowrun r` (workloads/r/rmodule.c) and run()'s
# errors in cowrun's terms (issue 42, items 1 and 4): cowrun_report(),
# cowrun_command(), cowrun_input(), cowrun_task(), cowrun_seed(), R's
# random numbers per task, an error and warnings in run(), stop() in
# finish().  Every run starts R (about 0.3 s): each test batches its checks
# into few runs.  The script is tests/fixtures/r/api.R (args[1] picks the
# batch); every run is under the reaper.

load helpers

API="$ROOT/tests/fixtures/r/api.R"

setup() {
	OUT="$BATS_TEST_TMPDIR/out"
}

@test "r api: cowrun_report() text (UTF-8, a latin1 string converted), binary, twice, closed, under sink(); a failed run()'s report is not committed; cowrun_task(); cowrun_input() in run() refused" {
	run --separate-stderr cowrun -j 2 -o "$OUT" r "$API" report
	[ "$status" -eq 2 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[ "$(cat "$OUT/text")" = "text café ü" ]
	cmp "$OUT/binary" <(printf "$(printf '\\%03o' $(seq 0 255))")
	[ "$(cat "$OUT/twice")" = "$(printf 'first\nTRUE ')" ]
	[ "$(cat "$OUT/sink")" = "$(printf 'a b \n1 2 ')" ]
	[ "$(cat "$OUT/task")" = "5 integer task " ]
	# The failed task: no report under its name, no temporary left.
	[ ! -e "$OUT/failed" ] && [ ! -e "$OUT/input" ]
	assert_no_temporary "$OUT"
	[[ "$stderr" == *"task 4 (failed) failed: Error in run_report(state, i, name): failed after writing (${API}:61)"* ]] ||
		{ echo "$stderr" >&2; return 1; }
	[[ "$stderr" == *"task 6 (input) failed: Error in cowrun_input(\"somefile\"): cowrun_input() is only for setup() (${API}:42)"* ]]
	# finish() sees the merged results; cowrun_task() is NULL there.
	[ "$(printf '%s\n' "$output" | head -5 | tr '\n' ' ')" = "text binary twice sink task " ]
	[[ "$output" == *" TRUE " ]]
}

@test "r api: a text report in a latin1 locale is written as UTF-8" {
	command -v localedef >/dev/null || skip "no localedef"
	[ -e /usr/share/i18n/charmaps/ISO-8859-1.gz ] || skip "no ISO-8859-1 charmap"
	localedef -i en_US -f ISO-8859-1 "$BATS_TEST_TMPDIR/en_US.ISO-8859-1" 2>/dev/null || true
	[ -d "$BATS_TEST_TMPDIR/en_US.ISO-8859-1" ] || skip "localedef made no latin1 locale"
	run --separate-stderr env LOCPATH="$BATS_TEST_TMPDIR" LC_ALL=en_US.ISO-8859-1 "$REAPER" "$COWRUN" \
		--mode serial --tasks 0 -o "$OUT" r "$API" report
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	[ "$(cat "$OUT/text")" = "text café ü" ]
}

@test "r api: cowrun_command() to the report and to stderr; {} and a '|' pipeline refused in one line each" {
	run --separate-stderr cowrun -j 2 -o "$OUT" r "$API" command
	[ "$status" -eq 2 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[ "$(cat "$OUT/cmd")" = "TO THE REPORT CMD " ]
	[ "$(cat "$OUT/err")" = "kept" ]
	[[ "$stderr" == *"TO STDERR ERR "* ]]
	[ ! -e "$OUT/brace" ] && [ ! -e "$OUT/pipe" ]
	assert_no_temporary "$OUT"
	[ "$(grep -c "task 2 (brace) failed: cowrun_command(): {} is the complete report's path, and this command writes the report: use {/}, its name$" <<<"$stderr")" -eq 1 ]
	[ "$(grep -c "task 3 (pipe) failed: cowrun_command(): a '|' pipeline hides a failing stage" <<<"$stderr")" -eq 1 ]
	# The runner's own lines: no traceback for them.
	[[ "$stderr" != *traceback* ]]
}

@test "r api: a file setup() declares with cowrun_input() is refused changed on --resume" {
	echo one >"$BATS_TEST_TMPDIR/declared.txt"
	mkdir "$BATS_TEST_TMPDIR/marks"
	export API_INPUT=$BATS_TEST_TMPDIR/declared.txt
	run --separate-stderr cowrun -j 2 --joblog "$BATS_TEST_TMPDIR/log" -o "$OUT" r "$API" errors "$BATS_TEST_TMPDIR/marks"
	[ "$status" -eq 2 ] || { echo "status $status: $stderr" >&2; return 1; }
	echo three >"$BATS_TEST_TMPDIR/declared.txt"
	run --separate-stderr cowrun -j 2 --joblog "$BATS_TEST_TMPDIR/log" --resume-failed -o "$OUT" r "$API" errors "$BATS_TEST_TMPDIR/marks"
	[ "$status" -eq 255 ]
	assert_no_leftovers
	assert_one_line_error "cowrun: --resume: input '$BATS_TEST_TMPDIR/declared.txt' (cowrun_input) changed since the run being resumed: its size changed from 4 to 6 bytes: run again without --resume"
	[ ! -e "$OUT/b" ]
}

@test "r api: each task draws the same numbers (L'Ecuyer-CMRG from its seed) serial, -j 1, -j 2 and on a retry; merge() and finish() go on from setup()'s seed" {
	mkdir "$BATS_TEST_TMPDIR/m0"
	run --separate-stderr cowrun --mode serial -o "$OUT.s" r "$API" draws "$BATS_TEST_TMPDIR/m0"
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	reference=$output
	tasks_of() { grep '^t' <<<"$1"; }
	# Six tasks, each its own numbers, its own seed, the generator named.
	[ "$(tasks_of "$reference" | grep -c " L'Ecuyer-CMRG [0-9]*$")" -eq 6 ]
	[ "$(tasks_of "$reference" | awk '{ print $2 }' | sort -u | grep -c .)" -eq 6 ]
	[ "$(tasks_of "$reference" | awk '{ print $NF }' | sort -u | grep -c .)" -eq 6 ]
	# set.seed(42) and runif(1) in setup(): finish()'s draw is the second.
	[ "$(tail -n 1 <<<"$reference")" = "finish 0.93707541 0 TRUE " ]
	run --separate-stderr cowrun -j 1 -o "$OUT.1" r "$API" draws "$BATS_TEST_TMPDIR/m0"
	[ "$status" -eq 0 ]
	[ "$output" = "$reference" ]
	# -j 2, and t2 fails once after its draws: its retry, a fresh fork of
	# the parent, draws them again.
	mkdir "$BATS_TEST_TMPDIR/m1" && touch "$BATS_TEST_TMPDIR/m1/fail"
	run --separate-stderr cowrun -j 2 --retries 1 -o "$OUT.2" r "$API" draws "$BATS_TEST_TMPDIR/m1"
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[ -e "$BATS_TEST_TMPDIR/m1/t2" ]
	[[ "$stderr" == *"task 2 (t2) attempt 1 failed: Error in run(state, i, name): t2 fails once"* ]]
	[ "$output" = "$reference" ]
}

@test "r api: an error in run(): the message, the call, the script's line, the traceback once; warnings once per task, 50 kept; the other tasks go on (fork and serial); --resume-failed completes" {
	mkdir "$BATS_TEST_TMPDIR/marks"
	run --separate-stderr cowrun -j 2 --joblog "$BATS_TEST_TMPDIR/log" -o "$OUT" r "$API" errors "$BATS_TEST_TMPDIR/marks"
	[ "$status" -eq 2 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[[ "$stderr" == *"cowrun: r: task 1 (b) failed: Error in helper(i): task 1 has no data (${API}:14)"* ]] ||
		{ echo "$stderr" >&2; return 1; }
	[[ "$stderr" == *"cowrun: r: task 4 (e) failed: Error in run(state, i, name): e stops in run (${API}:100)"* ]]
	[[ "$stderr" == *"cowrun: r: task 1 (b): traceback, innermost last:
  1: run(state, i, name)
  2: helper(i) at ${API}:99
  3: stop(\"task \", i, \" has no data\") at ${API}:14"* ]]
	[ "$(grep -c 'traceback, innermost last' <<<"$stderr")" -eq 2 ]
	# Two warnings per task, each once, named by the task.
	for t in "0 (a)" "1 (b)" "2 (c)" "3 (d)" "4 (e)"; do
		[ "$(grep -c "^cowrun: r: task $t: warning: first warning of .* (in run(state, i, name)) at ${API}:95$" <<<"$stderr")" -eq 1 ]
		[ "$(grep -c "^cowrun: r: task $t: warning: second warning of " <<<"$stderr")" -eq 1 ]
	done
	# d warns 60 times more in a loop: R's 50 kept, a run of equal ones
	# one line, the rest counted.
	[ "$(grep -c "^cowrun: r: task 3 (d): warning: NAs introduced by coercion (in run(state, i, name)) at ${API}:98 (48 times)$" <<<"$stderr")" -eq 1 ]
	[ "$(grep -c "^cowrun: r: task 3 (d): 12 more warnings, not shown (options(nwarnings = 50) keeps the first)$" <<<"$stderr")" -eq 1 ]
	[ "$(grep -c "^cowrun: r: task 3 (d): " <<<"$stderr")" -eq 4 ]
	[ -e "$OUT/a" ] && [ -e "$OUT/c" ] && [ -e "$OUT/d" ] && [ ! -e "$OUT/b" ] && [ ! -e "$OUT/e" ]
	[ "$(head -3 <<<"$output" | tr '\n' ' ')" = "a c d " ]
	run --separate-stderr cowrun -j 2 --joblog "$BATS_TEST_TMPDIR/log" --resume-failed -o "$OUT" r "$API" errors "$BATS_TEST_TMPDIR/marks"
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	[ "$(head -5 <<<"$output" | tr '\n' ' ')" = "a b c d e " ]
	[ -e "$OUT/b" ] && [ -e "$OUT/e" ]
	# Serial mode runs every task in one process: an error there ends
	# only its task.
	rm -rf "$BATS_TEST_TMPDIR/marks" && mkdir "$BATS_TEST_TMPDIR/marks"
	run --separate-stderr cowrun --mode serial -o "$OUT.s" r "$API" errors "$BATS_TEST_TMPDIR/marks"
	[ "$status" -eq 2 ] || { echo "status $status: $stderr" >&2; return 1; }
	[ "$(head -3 <<<"$output" | tr '\n' ' ')" = "a c d " ]
	[[ "$stderr" == *"task 1 (b) failed: Error in helper(i): task 1 has no data (${API}:14)"* ]]
}

@test "r api: stop() in finish(): one line, no half summary, exit 254" {
	run --separate-stderr cowrun -j 2 -o "$OUT" r "$API" finish
	[ "$status" -eq 254 ]
	assert_no_leftovers
	[ -z "$output" ]
	assert_one_line_error "cowrun: r: ${API}:113: in finish(): finish fails"
}
