#!/usr/bin/env bats
# cowrun python and fork: what a forked worker of an embedded interpreter
# must find (Python's at-fork hooks run, setup's threads gone), and no hang
# when threads a library started in setup (numexpr's pool) are alive at
# every fork.  The rest of the workload: python.bats.

load helpers

FORKSTATE="$ROOT/tests/fixtures/python-fork/forkstate.py"
FRAMES="$ROOT/tests/fixtures/python-fork/frames.py"

@test "python: a worker is a proper Python fork: at-fork hooks ran, setup's thread is gone, setup's buffered print once" {
	local mode
	for mode in "-j 2" "-j 4" "--mode serial"; do
		# shellcheck disable=SC2086
		run --separate-stderr cowrun $mode -o "$BATS_TEST_TMPDIR/out" python "$FORKSTATE" 5
		[ "$status" -eq 0 ] || { echo "$mode: exit $status: $stderr" >&2; return 1; }
		assert_no_leftovers
		# Every worker saw one after_in_child hook, one thread, as main.
		[ "$(sed -n 2p <<<"$output")" = "child hooks 1, threads 1, main True" ]
		[ "$(grep -c '^child hooks' <<<"$output")" -eq 1 ]
		[ "$(grep -c 'setup says hello' <<<"$output$stderr")" -eq 1 ]
		[ "$(head -n 1 <<<"$output")" = "setup says hello" ]
		[ "$(cat "$BATS_TEST_TMPDIR"/out/fork-0* | sort -u)" = "child hooks 1, threads 1, main True" ]
		rm -rf "$BATS_TEST_TMPDIR/out"
	done
	# -v names the thread setup() left running.
	run --separate-stderr cowrun -v -j 2 -o "$BATS_TEST_TMPDIR/out" python "$FORKSTATE" 2
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"cowrun: python: 1 thread besides the main one alive at fork: "* ]]
}

@test "python: numexpr's threads alive at every fork, pandas and numpy in every task: 10 runs at -j 2, no hang, one output" {
	/usr/bin/python3 -c 'import numexpr, pandas' 2>/dev/null ||
		{ echo "numexpr or pandas missing: make deps installs them" >&2; return 1; }
	local i first=
	for i in $(seq 10); do
		run --separate-stderr timeout 60 "$REAPER" "$COWRUN" -j 2 python "$FRAMES"
		[ "$status" -eq 0 ] || { echo "run $i: exit $status: $stderr" >&2; return 1; }
		assert_no_leftovers
		[ "$(wc -l <<<"$output")" -eq 6 ]
		[ -z "$first" ] && first=$output
		[ "$output" = "$first" ]
	done
	# numexpr's pool was alive at the fork: -v says so.
	run --separate-stderr cowrun -v -j 2 python "$FRAMES"
	[ "$status" -eq 0 ]
	[[ "$stderr" =~ [0-9]+\ threads?\ besides\ the\ main\ one\ alive\ at\ fork ]]
	[ "$output" = "$first" ]
	run --separate-stderr cowrun --mode serial python "$FRAMES"
	[ "$output" = "$first" ]
}
