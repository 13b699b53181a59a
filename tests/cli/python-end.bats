#!/usr/bin/env bats
# cowrun python: the interpreter ends as Python's does, once, in the
# process that ran finish() (atexit handlers, logging's last flush, files
# left open), after the joblog is committed; and finish()'s out is a real
# text stream.  Threads at the end: python-threads.bats.

load helpers

ENDING="$ROOT/tests/fixtures/python-exit/ending.py"
SUMMARY="$ROOT/tests/fixtures/python-exit/summary.py"

@test "python end: atexit once, a MemoryHandler flushed, files left open written once, in fork, -j 1 and serial mode" {
	local mode d
	for mode in "-j 2" "-j 1" "--mode serial"; do
		d=$BATS_TEST_TMPDIR/run
		mkdir "$d"
		# shellcheck disable=SC2086
		PYE_DIR=$d PYE_JOBLOG=$d/joblog run --separate-stderr timeout -k 5 60 "$REAPER" "$COWRUN" \
			$mode -o "$d/out" --joblog "$d/joblog" python "$ENDING"
		[ "$status" -eq 0 ] || { echo "$mode: exit $status: $stderr" >&2; return 1; }
		assert_no_leftovers
		[ "$output" = "total 3" ]
		[ -z "$stderr" ]
		# Once, after the joblog's 3 rows were committed.
		[ "$(cat "$d/atexit")" = "atexit ran; joblog rows 3" ] ||
			{ echo "$mode: atexit: $(cat "$d/atexit" 2>&1)" >&2; return 1; }
		[ "$(cat "$d/log")" = "setup"$'\n'"finish: 3" ] ||
			{ echo "$mode: log: $(cat "$d/log")" >&2; return 1; }
		[ "$(cat "$d/module")" = "written in setup, never closed" ] ||
			{ echo "$mode: module: $(cat "$d/module")" >&2; return 1; }
		[ "$(cat "$d/state")" = "held by the state" ] ||
			{ echo "$mode: state: $(cat "$d/state")" >&2; return 1; }
		rm -rf "$d"
	done
}

@test "python end: shards and --merge end the interpreter too; an end that cannot flush sys.stdout is one line, 254" {
	d=$BATS_TEST_TMPDIR
	PYE_DIR=$d run --separate-stderr cowrun -o "$d/out" --shard 0/2 --save-results "$d/0.res" python "$ENDING"
	[ "$status" -eq 0 ]
	[ "$(cat "$d/atexit")" = "atexit ran; joblog rows 0" ]
	rm "$d/atexit" "$d/module" "$d/state" "$d/log"
	PYE_DIR=$d run --separate-stderr cowrun -o "$d/out" --shard 1/2 --save-results "$d/1.res" python "$ENDING"
	rm "$d/atexit" "$d/module" "$d/state" "$d/log"
	PYE_DIR=$d run --separate-stderr cowrun -o "$d/out" --merge "$d/0.res" --merge "$d/1.res" python "$ENDING"
	[ "$status" -eq 0 ]
	[ "$output" = "total 3" ]
	[ "$(cat "$d/atexit")" = "atexit ran; joblog rows 0" ]
	[ "$(cat "$d/module")" = "written in setup, never closed" ]
	# sys.stdout cannot be flushed when the interpreter ends: it fails.
	cat >"$d/full.py" <<'PY'
import sys
class Full:
    def write(self, text):
        return len(text)
    def flush(self):
        raise OSError(28, "No space left on device")
def setup(argv):
    sys.stdout = Full()
    return None
def tasks(state): return ["a", "b"]
def run(state, i, name): return i
PY
	local mode
	for mode in "-j 2" "--mode serial"; do
		# shellcheck disable=SC2086
		run --separate-stderr cowrun $mode -o "$d/full" python "$d/full.py"
		[ "$status" -eq 254 ] || { echo "$mode: exit $status: $stderr" >&2; return 1; }
		assert_no_leftovers
		[[ "$stderr" == *"cowrun: python: $d/full.py: the interpreter's end failed: a buffered write of sys.stdout or sys.stderr could not be flushed (see the lines above)" ]]
		[ "$(grep -c "^cowrun:" <<<"$stderr")" -eq 1 ]
		rm -rf "$d/full"
	done
}

@test "python end: finish()'s out is a text stream: writelines, encoding, buffer, a bare print in order; fileno() refused in one clear error" {
	local mode
	for mode in "-j 2" "--mode serial"; do
		# shellcheck disable=SC2086
		PYS_FILENO=1 PYS_KEEP=1 run --separate-stderr cowrun $mode -o "$BATS_TEST_TMPDIR/out" python "$SUMMARY"
		[ "$status" -eq 0 ] || { echo "$mode: exit $status: $stderr" >&2; return 1; }
		assert_no_leftovers
		[ "$output" = "encoding utf-8, writable True, isatty False"$'\n'"line one"$'\n'"line two"$'\n'"bytes é"$'\n'"a bare print"$'\n'"ünïcode" ] ||
			{ echo "$mode: $output" >&2; return 1; }
		# fileno() says why; a write after finish() returned never reaches stdout.
		[ "$stderr" = "fileno: UnsupportedOperation: fileno(): the summary has no file descriptor: cowrun buffers what finish() writes and prints it when finish() returns; write to out (print(..., file=out), out.write(), out.buffer.write())"$'\n'"late write refused: I/O operation on closed file." ] ||
			{ echo "$mode: $stderr" >&2; return 1; }
	done
	# finish() raises after writing: none of what it wrote, one line, 254.
	PYS_RAISE=1 run --separate-stderr cowrun -o "$BATS_TEST_TMPDIR/out" python "$SUMMARY"
	[ "$status" -eq 254 ]
	[ -z "$output" ]
	assert_one_line_error "cowrun: python: $SUMMARY:*: in finish(): RuntimeError: half a summary"
}
