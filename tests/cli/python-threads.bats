#!/usr/bin/env bats
# cowrun python and the threads a script leaves running: refused when
# setup() returns with any (a lock one holds would stay held in every
# worker: the run would hang), a warning with cowrun.allow_threads_at_fork(),
# and a thread that never ends named, not waited for, at the interpreter's
# end.  Every run is bounded by `timeout`: the old code hung here.

load helpers

THREADS="$ROOT/tests/fixtures/python-exit/threads.py"

# bounded ARGS...: cowrun ARGS under the reaper, SIGKILLed after 60 s (a
# SIGTERM would let it wait for its hung tasks; its workers die with it).
bounded() {
	"$REAPER" timeout -s KILL 60 "$COWRUN" "$@"
}

# refused WHAT THREAD: PYT_THREADS=WHAT is refused before any task, exit
# 255, in one line naming the thread as THREAD, in fork and serial mode.
refused() {
	local mode
	for mode in "-j 2" "--mode serial"; do
		# shellcheck disable=SC2086
		PYT_THREADS=$1 run --separate-stderr bounded $mode -o "$BATS_TEST_TMPDIR/out" \
			--joblog "$BATS_TEST_TMPDIR/log" python "$THREADS"
		[ "$status" -eq 255 ] || { echo "$1, $mode: exit $status: $stderr" >&2; return 1; }
		assert_no_leftovers
		assert_one_line_error "cowrun: python: $THREADS: 1 thread alive when setup() returned: $2: a lock it holds would stay held in every worker (a fork copies only the main thread); end it before setup() returns (thread.join(), executor.shutdown(), listener.stop()), or call cowrun.allow_threads_at_fork() in setup() if it holds no lock; no task ran"
		[ -z "$output" ]
		[ ! -e "$BATS_TEST_TMPDIR/out" ] || { echo "reports written: $(ls "$BATS_TEST_TMPDIR/out")" >&2; return 1; }
	done
}

@test "python threads: a thread holding a lock when setup() returns: refused in one line naming it, 255, no hang, no report" {
	refused lock "'lock-holder'"
}

@test "python threads: a ThreadPoolExecutor used in setup() and left alive: refused, naming its thread" {
	refused executor "'loader_0' (not a daemon)"
}

@test "python threads: a logging QueueListener left running: refused, naming its thread" {
	refused listener "'Thread-1 (_monitor)'"
}

@test "python threads: cowrun.allow_threads_at_fork() in setup(): the run goes on, one warning naming the thread" {
	local mode
	for mode in "-j 2" "--mode serial"; do
		# shellcheck disable=SC2086
		PYT_THREADS=idle run --separate-stderr bounded $mode -o "$BATS_TEST_TMPDIR/out" python "$THREADS"
		[ "$status" -eq 0 ] || { echo "$mode: exit $status: $stderr" >&2; return 1; }
		assert_no_leftovers
		assert_one_line_error "cowrun: python: $THREADS: 1 thread alive at the fork, allowed by cowrun.allow_threads_at_fork(): 'idle-helper' (no worker has it; a lock it holds stays held there)"
		[ "$output" = "done" ]
		[ "$(ls "$BATS_TEST_TMPDIR/out")" = "t-0"$'\n'"t-1"$'\n'"t-2" ]
		rm -rf "$BATS_TEST_TMPDIR/out"
	done
	# Anywhere but in setup() it is refused, as cowrun.input() is.
	cat >"$BATS_TEST_TMPDIR/late.py" <<'PY'
import cowrun
def setup(argv): return None
def tasks(state): return ["a"]
def run(state, i, name): cowrun.allow_threads_at_fork()
PY
	run --separate-stderr bounded -o "$BATS_TEST_TMPDIR/out" python "$BATS_TEST_TMPDIR/late.py"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"RuntimeError: cowrun.allow_threads_at_fork() is only for setup()"* ]]
}

@test "python threads: a thread that is no daemon and never ends, started in finish(): named at the end, then left; no hang" {
	local mode
	for mode in "-j 2" "--mode serial"; do
		# shellcheck disable=SC2086
		PYT_THREADS=finish COWRUN_PYTHON_THREADS_WAIT_S=0.5 run --separate-stderr \
			bounded $mode -o "$BATS_TEST_TMPDIR/out" python "$THREADS"
		[ "$status" -eq 0 ] || { echo "$mode: exit $status: $stderr" >&2; return 1; }
		assert_no_leftovers
		[ "$output" = "done" ]
		assert_one_line_error "cowrun: python: $THREADS: at the interpreter's end, thread 'never-ends' had not ended after 0.5 s: left running (it ends with the process; what it had still to do is lost): end it, or join it, before finish() returns"
		rm -rf "$BATS_TEST_TMPDIR/out"
	done
}

@test "python threads: threads alive at the end that end (or are daemons) cost no wait: an ended worker thread and a daemon, the bound 60 s, the run ends at once" {
	local mode
	cat > "$BATS_TEST_TMPDIR/ends.py" <<'PY'
import threading, time
def setup(argv): return None
def tasks(state): return ["a", "b"]
def run(state, i, name): return None
def finish(state, out):
    threading.Thread(target=time.sleep, args=(600,), daemon=True).start()
    threading.Thread(target=time.sleep, args=(0.1,)).start()
    print("done", file=out)
PY
	for mode in "-j 2" "--mode serial"; do
		# The old helper thread called threading._shutdown(), which waits
		# for the main thread's own lock: the whole bound, every time.
		# Under a 60 s bound, a run that waits is killed at 20 s.
		# shellcheck disable=SC2086
		COWRUN_PYTHON_THREADS_WAIT_S=60 run --separate-stderr "$REAPER" timeout -s KILL 20 \
			"$COWRUN" $mode -o "$BATS_TEST_TMPDIR/out" python "$BATS_TEST_TMPDIR/ends.py"
		[ "$status" -eq 0 ] || { echo "$mode: exit $status: $stderr" >&2; return 1; }
		assert_no_leftovers
		[ "$output" = "done" ]
		[ -z "$stderr" ]
		rm -rf "$BATS_TEST_TMPDIR/out"
	done
}
