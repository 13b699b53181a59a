#!/usr/bin/env bats
# The runner's command line, modes, failures and process hygiene.

load helpers

@test "--help explains usage and exit statuses" {
	run --separate-stderr cowrun --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"Usage: cowrun [OPTIONS] WORKLOAD"* ]]
	[[ "$output" == *"--jobs"* ]]
	[[ "$output" == *"255"* ]]
}

@test "--version prints the version" {
	run --separate-stderr cowrun --version
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^cowrun\ [0-9]+\.[0-9]+\.[0-9]+$ ]]
	# With -v, what saved results must share to merge.
	run --separate-stderr cowrun -v --version
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^cowrun\ [0-9]+\.[0-9]+\.[0-9]+$'\n'"results format 5, workload ABI 4"$ ]]
}

@test "--list shows every built-in workload with a summary" {
	run --separate-stderr cowrun --list
	[ "$status" -eq 0 ]
	for w in sales average selftest; do
		[[ "$output" =~ (^|$'\n')$w\ +[A-Za-z] ]] || { echo "$w is not listed" >&2; return 1; }
	done
	# One line per workload: a name, spaces, a summary.
	other=$(printf '%s\n' "$output" | grep -v '^[a-z]*  *[^ ]' || true)
	[ -z "$other" ] || { echo "not a workload line: $other" >&2; return 1; }
}

@test "a workload's --help lists its options with defaults" {
	run --separate-stderr cowrun average --help
	[ "$status" -eq 0 ]
	[[ "$output" == *"--size N"*"(default 55256000)"* ]]
	[[ "$output" == *"--chunks N"*"(default 64)"* ]]
}

@test "no workload is a one-line usage error, exit 255" {
	run --separate-stderr cowrun -j 2
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: no workload given*"
}

@test "an unknown workload is named in a one-line error" {
	run --separate-stderr cowrun nosuch
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: unknown workload 'nosuch'*"
}

@test "bad -j values are refused with the value and the reason" {
	for bad in x 1.5 0% -- '' 2x +-1 99999999999; do
		run --separate-stderr cowrun -j "$bad" selftest --tasks 1
		[ "$status" -eq 255 ] || { echo "-j '$bad' gave $status" >&2; return 1; }
		assert_one_line_error "cowrun: -j: bad value '$bad'*"
	done
}

@test "an unknown mode, option or missing value is a one-line error" {
	run --separate-stderr cowrun --mode threads selftest
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --mode: unknown mode 'threads'*"
	run --separate-stderr cowrun --frobnicate selftest
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: unknown option '--frobnicate'*"
	run --separate-stderr cowrun selftest -j
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: selftest: unexpected argument '-j'*"
	run --separate-stderr cowrun -j
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: option '-j' needs a value"
}

@test "bad workload options are one-line errors naming the option" {
	run --separate-stderr cowrun selftest --tasks abc
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: selftest: --tasks: 'abc' is not a number"
	run --separate-stderr cowrun selftest --tasks -3
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: selftest: --tasks: '-3' is out of range*"
	run --separate-stderr cowrun average --size
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: average: --size needs a value*"
	run --separate-stderr cowrun selftest --crash 500 --tasks 10
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: selftest: --crash: task 500 does not exist*"
}

@test "selftest: serial and fork -j 1, 2, 7, 0 merge identical checksums" {
	same_output_all_modes "1 2 7 0" selftest --tasks 300 --result-bytes 100 --report-bytes 200
	[[ "$output" == "tasks 300 of 300 merged, 30000 result bytes, checksum "* ]]
	[ "$(ls "$BATS_TEST_TMPDIR/j7" | wc -l)" -eq 300 ]
}

@test "average: serial and fork -j 1, 2, 7, 0 agree with the closed form" {
	same_output_all_modes "1 2 7 0" average --size 1000003 --chunks 13
	[[ "$output" == *"count 1000003"* ]]
	[[ "$output" == *": ok"* ]]
}

@test "the default -j is the CPU count" {
	run --separate-stderr cowrun -v selftest --tasks 50
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"fork: $(nproc) workers on $(nproc) CPUs"* ]]
}

@test "-j forms resolve against the CPU count and the task count" {
	n=$(nproc)
	run --separate-stderr cowrun -v -j +2 selftest --tasks 50
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"fork: $((n + 2)) workers"* ]]
	run --separate-stderr cowrun -v -j 50% selftest --tasks 50
	[ "$status" -eq 0 ]
	half=$((n / 2))
	if [ "$half" -lt 1 ]; then half=1; fi
	[[ "$stderr" == *"fork: $half workers"* ]]
	run --separate-stderr cowrun -v -j -1 selftest --tasks 50
	[ "$status" -eq 0 ]
	less=$((n - 1))
	if [ "$less" -lt 1 ]; then less=1; fi
	[[ "$stderr" == *"fork: $less workers"* ]]
	run --separate-stderr cowrun -v -j 0 selftest --tasks 9
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"fork: 9 workers"* ]]
}

@test "more workers than tasks: only as many as tasks are forked" {
	run --separate-stderr cowrun -v -j 40 selftest --tasks 3 --sleep-ms 20
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"fork: 3 workers"*", 3 forks"* ]]
	[[ "$output" == "tasks 3 of 3 merged"* ]]
	assert_no_leftovers
}

@test "zero tasks: empty summary, exit 0" {
	run --separate-stderr cowrun -j 4 selftest --tasks 0
	[ "$status" -eq 0 ]
	[[ "$output" == "tasks 0 of 0 merged, 0 result bytes"* ]]
}

@test "a worker crashing at task K: the run completes, names task K and the signal, exits 1" {
	run --separate-stderr cowrun -j 2 -o "$BATS_TEST_TMPDIR/out" selftest --tasks 40 --crash 17 --report-bytes 5000 --sleep-ms 2
	[ "$status" -eq 1 ]
	assert_no_leftovers
	[[ "$stderr" == *"task 17 (task-000017) failed: worker "*" killed by SIGSEGV"* ]]
	[[ "$output" == "tasks 39 of 40 merged"* ]]
	# The crashed task has no report, not even a temporary one; the rest do.
	[ ! -e "$BATS_TEST_TMPDIR/out/task-000017" ]
	entries=$(ls -A "$BATS_TEST_TMPDIR/out" | grep -v '^\.cowrun-manifest\.')
	[ "$(printf '%s\n' "$entries" | grep -c '^task-[0-9]*$')" -eq 39 ]
	hidden=$(printf '%s\n' "$entries" | grep '^\.' || true)
	[ -z "$hidden" ] || { echo "left behind: $hidden" >&2; return 1; }
	[ "$(printf '%s\n' "$entries" | wc -l)" -eq 39 ]
}

@test "the merged result of a crashed run equals a serial run without that task's record" {
	run --separate-stderr cowrun -j 3 selftest --tasks 60 --crash 5
	[ "$status" -eq 1 ]
	crashed=$output
	[[ "$crashed" == "tasks 59 of 60 merged"* ]]
	run --separate-stderr cowrun -j 3 selftest --tasks 60 --crash 5
	[ "$status" -eq 1 ]
	[ "$output" = "$crashed" ]
	run --separate-stderr cowrun --mode serial selftest --tasks 60 --fail 5
	[ "$status" -eq 1 ]
	[ "$output" = "$crashed" ]
}

@test "a worker killed with SIGKILL mid-task fails that task only" {
	run --separate-stderr cowrun -j 2 selftest --tasks 30 --crash 3,20:KILL
	[ "$status" -eq 2 ]
	assert_no_leftovers
	[[ "$stderr" == *"task 3 (task-000003) failed: worker "*" killed by SIGKILL"* ]]
	[[ "$stderr" == *"task 20 (task-000020) failed: worker "*" killed by SIGKILL"* ]]
	[[ "$output" == "tasks 28 of 30 merged"* ]]
}

@test "a worker killed from outside: the task fails, a replacement finishes the rest" {
	d=$BATS_TEST_TMPDIR
	# Kill the worker of the first task to start, while it runs (500 ms).
	( wait_for 30 "a task to start" started_at_least "$d/started" 1
	  first=$(ls "$d/started")
	  first=${first%%$'\n'*}
	  kill -KILL "${first##*.}" ) &
	killer=$!
	run --separate-stderr cowrun -v -j 2 selftest --tasks 8 --sleep-ms 500 --mark-start "$d/started"
	wait "$killer"
	assert_no_leftovers
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"failed: worker "*" killed by SIGKILL"* ]]
	[[ "$stderr" == *"1 worker deaths"* ]]
	[[ "$output" == "tasks 7 of 8 merged"* ]]
}

@test "a task that calls _exit mid-task is failed, not lost" {
	run --separate-stderr cowrun -j 2 selftest --tasks 10 --exit 4
	[ "$status" -eq 1 ]
	assert_no_leftovers
	[[ "$stderr" == *"task 4 (task-000004) failed: worker "*" exited with status 0 before finishing the task"* ]]
	[[ "$output" == "tasks 9 of 10 merged"* ]]
}

@test "every task crashing: all reported, no hang, exit is the count" {
	run --separate-stderr cowrun -j 2 selftest --tasks 8 --crash 0,1,2,3,4,5,6,7
	[ "$status" -eq 8 ]
	assert_no_leftovers
	[ "$(printf '%s\n' "$stderr" | grep -c 'killed by SIGSEGV')" -eq 8 ]
}

@test "more than 100 failed tasks exit 101" {
	fails=$(seq -s, 0 119)
	run --separate-stderr cowrun -j 2 selftest --tasks 150 --fail "$fails"
	[ "$status" -eq 101 ]
	[[ "$output" == "tasks 30 of 150 merged"* ]]
}

@test "a 64 MiB result record crosses the pipe intact" {
	run --separate-stderr cowrun --mode serial selftest --tasks 3 --result-bytes 67108864
	[ "$status" -eq 0 ]
	reference=$output
	run --separate-stderr cowrun -j 2 selftest --tasks 3 --result-bytes 67108864
	[ "$status" -eq 0 ]
	assert_no_leftovers
	[ "$output" = "$reference" ]
	[[ "$output" == "tasks 3 of 3 merged, 201326592 result bytes"* ]]
}

@test "many small results: 20000 tasks merge in order at -j 2" {
	same_output_all_modes "2" selftest --tasks 20000 --result-bytes 24
	[[ "$output" == "tasks 20000 of 20000 merged"* ]]
}

@test "a report write error fails the task with the file and the reason" {
	run --separate-stderr bash -c "ulimit -f 4; exec '$REAPER' '$COWRUN' -j 2 -o '$BATS_TEST_TMPDIR/out' selftest --tasks 4 --report-bytes 100000"
	[ "$status" -eq 4 ]
	[[ "$stderr" == *"task 0 (task-000000) failed: cannot write '$BATS_TEST_TMPDIR/out/task-000000': File too large"* ]]
	[ -z "$(ls -A "$BATS_TEST_TMPDIR/out")" ]
}

@test "an output directory that cannot be made is refused before any task" {
	touch "$BATS_TEST_TMPDIR/file"
	run --separate-stderr cowrun -o "$BATS_TEST_TMPDIR/file/sub" selftest --tasks 2
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: cannot create output directory '$BATS_TEST_TMPDIR/file/sub': Not a directory"
}

@test "a summary that cannot be written is an error, exit 254" {
	run --separate-stderr bash -c "exec '$REAPER' '$COWRUN' selftest --tasks 3 > /dev/full"
	[ "$status" -eq 254 ]
	[[ "$stderr" == *"cannot write the summary to standard output: No space left on device"* ]]
}

@test "--verbose reports setup time, workers and fork time" {
	run --separate-stderr cowrun -v -j 2 selftest --tasks 10 --setup-mb 8
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"selftest: setup "*" s, 10 tasks"* ]]
	[[ "$stderr" == *"fork: 2 workers on"*"fork() avg "*" ms"* ]]
}
