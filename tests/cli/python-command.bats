#!/usr/bin/env bats
# cowrun.command() in a Python workload (workloads/python/module.c): a
# script's own command, with the rules cowrun_command() gives a C
# workload.  Its output is the report (or goes to stderr); the task fails,
# naming the command, when it fails, stops reading, or cannot start; no
# report is left under its final name then; it dies with its task; and
# every run leaves no process behind (each runs under the reaper).  The
# script is tests/fixtures/python/command.py, switched by PYC_* variables.

load helpers

SCRIPT="$ROOT/tests/fixtures/python/command.py"

setup() {
	OUT="$BATS_TEST_TMPDIR/out"
}

# The reports of a plain run (cowrun.report()): $BATS_TEST_TMPDIR/plain.
plain_reports() {
	run --separate-stderr cowrun -j 2 -o "$BATS_TEST_TMPDIR/plain" python "$SCRIPT" "$@"
	[ "$status" -eq 0 ] || { echo "plain run failed: $stderr" >&2; return 1; }
}

@test "python: cowrun.command('gzip -n') writes each report through gzip, text or bytes, in serial and fork modes; gzip -d gives a plain run's bytes" {
	plain_reports 5
	for m in serial fork; do
		for mode in w wb; do
			PYC_CMD='gzip -n' PYC_MODE=$mode run --separate-stderr \
				cowrun --mode "$m" -j 2 -o "$OUT.$m.$mode" --report-suffix .gz python "$SCRIPT" 5
			[ "$status" -eq 0 ] || { echo "$m $mode: $stderr" >&2; return 1; }
			assert_no_leftovers
			[ "$output" = "sum 10" ]
			for k in 0 1 2 3 4; do
				gzip -d <"$OUT.$m.$mode/item-0$k.gz" | cmp - "$BATS_TEST_TMPDIR/plain/item-0$k"
			done
			assert_no_temporary "$OUT.$m.$mode"
		done
	done
}

@test "python: a command that fails fails its task, naming it and its last stderr line; no report, no traceback" {
	PYC_CMD="sh -c 'cat >/dev/null; echo printer on fire >&2; exit 3'" \
		run --separate-stderr cowrun -j 2 -o "$OUT" python "$SCRIPT" 3
	[ "$status" -eq 3 ]
	assert_no_leftovers
	[ "$(grep -c "failed: 'sh -c 'cat >/dev/null; echo printer on fire >&2; exit 3'' exited with status 3: printer on fire$" <<<"$stderr")" -eq 3 ] ||
		{ echo "$stderr" >&2; return 1; }
	[[ "$stderr" != *Traceback* ]]
	[ -z "$(ls -A "$OUT" | grep -v '^\.cowrun-manifest')" ]
}

@test "python: a command that stops reading: the task fails on the broken pipe, or on the command's status, never on a traceback" {
	# head exits 0 after one byte: the script's write breaks on the pipe.
	PYC_CMD='head -c 1' PYC_BIG=20000 run --separate-stderr cowrun -j 2 -o "$OUT" python "$SCRIPT" 2
	[ "$status" -eq 2 ]
	assert_no_leftovers
	[ "$(grep -c "failed: cannot write to 'head': Broken pipe$" <<<"$stderr")" -eq 2 ] || { echo "$stderr" >&2; return 1; }
	[[ "$stderr" != *Traceback* && "$stderr" != *BrokenPipeError* ]]
	[ ! -e "$OUT/item-00" ] && [ ! -e "$OUT/item-01" ]
	# One that exits 5 without reading: its status is what the task says.
	PYC_CMD="sh -c 'exit 5'" PYC_BIG=20000 run --separate-stderr cowrun --mode serial -o "$OUT.5" python "$SCRIPT" 2
	[ "$status" -eq 2 ]
	assert_no_leftovers
	[ "$(grep -c "failed: 'sh -c 'exit 5'' exited with status 5$" <<<"$stderr")" -eq 2 ] || { echo "$stderr" >&2; return 1; }
	[[ "$stderr" != *Traceback* ]]
}

@test "python: a program that is not there: one line naming it per task; a script may catch cowrun.CommandError (an OSError) and go on" {
	PYC_CMD='no-such-printer-driver {/}' run --separate-stderr cowrun -j 2 -o "$OUT" python "$SCRIPT" 3
	[ "$status" -eq 3 ]
	assert_no_leftovers
	[ "$(grep -c "failed: cannot run 'no-such-printer-driver': No such file or directory$" <<<"$stderr")" -eq 3 ] ||
		{ echo "$stderr" >&2; return 1; }
	[[ "$stderr" != *Traceback* ]]
	plain_reports 3
	PYC_CMD='no-such-printer-driver {/}' PYC_CATCH=1 run --separate-stderr cowrun -j 2 -o "$OUT.caught" python "$SCRIPT" 3
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	diff -r -x '.cowrun-manifest.*' "$BATS_TEST_TMPDIR/plain" "$OUT.caught"
}

@test "python: cowrun.command(to='stderr') prints while the task's report is kept by cowrun.report()" {
	PYC_CMD='tr a-z A-Z' PYC_TO=stderr PYC_ALSO_REPORT=1 \
		run --separate-stderr cowrun -j 2 -o "$OUT" python "$SCRIPT" 3
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	assert_no_leftovers
	for k in 0 1 2; do
		[[ "$stderr" == *"ITEM-0$k: $k SQUARED IS $((k * k))"* ]] || { echo "$stderr" >&2; return 1; }
		[ "$(cat "$OUT/item-0$k")" = "kept: item-0$k: $k squared is $((k * k))" ]
	done
}

@test "python: a command outliving its task's --timeout is killed with it: no report, nothing left running" {
	PYC_CMD="sh -c 'cat; exec sleep 300'" PYC_SLEEP=0 \
		run --separate-stderr cowrun -j 2 -o "$OUT" --timeout 1 python "$SCRIPT" 2
	[ "$status" -eq 2 ]
	assert_no_leftovers
	[ "$(grep -c 'failed: timed out after 1.000 s (--timeout)$' <<<"$stderr")" -eq 2 ] || { echo "$stderr" >&2; return 1; }
	[ -z "$(ls -A "$OUT" | grep -v '^\.cowrun-manifest')" ]
	assert_no_temporary "$OUT"
}

@test "python: cowrun.command() called wrong: after report(), twice, with a bad to=, in setup(): the error says which" {
	for what in report-then-command command-twice bad-to; do
		PYC_MISUSE=$what run --separate-stderr cowrun -j 2 -o "$OUT.$what" python "$SCRIPT" 1
		[ "$status" -eq 1 ] || { echo "$what: status $status: $stderr" >&2; return 1; }
		assert_no_leftovers
		case $what in
		report-then-command) want='RuntimeError: cowrun.command(to="report") after cowrun.report(): the report is written by one of them' ;;
		command-twice) want='RuntimeError: cowrun.command() was already called in this task: one command per task' ;;
		bad-to) want="ValueError: cowrun.command(): to='printer': \"report\" (its output is the task's report) or \"stderr\"" ;;
		esac
		[[ "$stderr" == *"task 0 (item-00) failed: $want ("* ]] || { echo "$what: $stderr" >&2; return 1; }
	done
	PYC_MISUSE=command-in-setup run --separate-stderr cowrun -j 2 -o "$OUT.setup" python "$SCRIPT" 1
	[ "$status" -eq 255 ]
	[[ "$stderr" == *"in setup(): RuntimeError: cowrun.command() is only for run()" ]] || { echo "$stderr" >&2; return 1; }
}

@test "python: cowrun.command() refuses {} (it writes the report: no complete one exists) and a '|' pipeline in one line per task; {/} is the name" {
	PYC_CMD='cp /dev/stdin {}' run --separate-stderr cowrun -j 2 -o "$OUT" python "$SCRIPT" 3
	[ "$status" -eq 3 ]
	assert_no_leftovers
	[ "$(grep -c "failed: cowrun_command(): {} is the complete report's path, and this command writes the report: use {/}, its name$" <<<"$stderr")" -eq 3 ] ||
		{ echo "$stderr" >&2; return 1; }
	[[ "$stderr" != *Traceback* ]]
	PYC_CMD='tr a-z A-Z | cat' run --separate-stderr cowrun -j 2 -o "$OUT.pipe" python "$SCRIPT" 3
	[ "$status" -eq 3 ]
	[ "$(grep -c "failed: cowrun_command(): a '|' pipeline hides a failing stage" <<<"$stderr")" -eq 3 ] || { echo "$stderr" >&2; return 1; }
	PYC_CMD="sh -c 'cat; echo; echo {/}'" run --separate-stderr cowrun -j 2 -o "$OUT.name" python "$SCRIPT" 3
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	[ "$(tail -n 1 "$OUT.name/item-02")" = item-02 ]
}
