#!/usr/bin/env bats
# --memfree SIZE, GNU Parallel's meaning for a fork pool, tested in a
# memory cgroup of the test's own (a 1 GiB limit) with a process that
# really takes memory (a "hog", sized from what the cgroup holds already,
# so that a sanitizer's heavier cowrun changes nothing): below SIZE no task is handed out; below
# half of it the worker that started its task last is killed and its task
# requeued (no retry spent, never the last worker), as the joblog shows.

load helpers

LIMIT_MB=1024

setup() {
	[ "$(id -u)" = 0 ] || skip "needs root for a memory cgroup"
	D=$BATS_TEST_TMPDIR
	CG=
	local rel
	rel=$(sed -n 's/^[0-9]*:memory:\(.*\)$/\1/p' /proc/self/cgroup)
	if [ -n "$rel" ] && [ -d "/sys/fs/cgroup/memory$rel" ]; then   # v1
		CG="/sys/fs/cgroup/memory$rel/cowrun-test-$$-$BATS_TEST_NUMBER"
		mkdir "$CG" && echo $((LIMIT_MB << 20)) > "$CG/memory.limit_in_bytes" || CG=
	fi
	[ -n "$CG" ] || skip "cannot make a memory cgroup here (cgroup v1 memory controller)"
	hog=
}

teardown() {
	[ -n "$hog" ] && kill "$hog" 2>/dev/null && wait "$hog" 2>/dev/null
	[ -n "$CG" ] && [ -d "$CG" ] && { for _ in $(seq 100); do rmdir "$CG" 2>/dev/null && break; sleep 0.05; done; }
	true
}

# in_cgroup CMD...: CMD inside the test's cgroup.
in_cgroup() {
	sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG" "$@"
}

# start_hog MB: a process in the cgroup holding MB MiB, touched; waits
# until it holds them.
start_hog() {
	rm -f "$D/hog-ready"
	# Not through in_cgroup(): $! must be the process that holds them.
	# MAP_POPULATE: the kernel faults the pages in one call, 5x faster than
	# touching them from Python where each fault is dear (a nested VM).
	sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG" /usr/bin/python3 -c 'import mmap, sys, time
b = mmap.mmap(-1, int(sys.argv[1]) << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | mmap.MAP_POPULATE)
open(sys.argv[2], "w").close()
time.sleep(600)' "$1" "$D/hog-ready" &
	hog=$!
	wait_until [ -e "$D/hog-ready" ]
}

# hog_leaving MB: the hog's size that leaves about MB MiB available in the
# cgroup (its limit less what it holds now, less the interpreter's own).
hog_leaving() {
	local used
	used=$(( $(cat "$CG/memory.usage_in_bytes") >> 20 ))
	echo $(( LIMIT_MB - used - $1 - 12 ))
}

stop_hog() {
	kill "$hog"
	wait "$hog" 2>/dev/null || true
	hog=
}

# wait_until CMD...: until it succeeds (20 s at most).
wait_until() {
	for _ in $(seq 2000); do
		"$@" 2>/dev/null && return 0
		sleep 0.02
	done
	echo "timed out waiting for: $*" >&2
	return 1
}

@test "memfree: below SIZE no task is handed out until memory comes back" {
	start_hog "$(hog_leaving 150)"
	in_cgroup "$REAPER" "$COWRUN" --memfree 200M -j 2 --joblog "$D/j" -o "$D/out" \
		selftest --tasks 4 >"$D/stdout" 2>"$D/stderr" &
	run_pid=$!
	wait_until grep -q -- "--memfree: .* MiB available, below 200 MiB: no new task for now" "$D/stderr"
	# Held: the workers are there, no task has started or ended.
	sleep 0.3   # (a task would take a millisecond: this is no wait for a state)
	[ "$(tail -n +2 "$D/j" | wc -l)" -eq 0 ]
	stop_hog
	wait "$run_pid"
	grep -q -- "--memfree: .* MiB available again (200 MiB wanted): tasks handed out" "$D/stderr"
	[ "$(tail -n +2 "$D/j" | wc -l)" -eq 4 ]
	grep -q "tasks 4 of 4 merged" "$D/stdout"
}

# one_finished: the joblog has a successful attempt.
one_finished() {
	awk -F'\t' 'NR > 1 && $7 == 0 && $8 == 0 { found = 1 } END { exit !found }' "$D/j"
}

# marks N: N tasks have started (selftest --mark-start).
marks() {
	[ "$(ls "$D/m" | wc -l)" -eq "$1" ]
}

@test "memfree: below half of SIZE the youngest task's worker is killed and its task requeued" {
	mkdir "$D/m"
	in_cgroup "$REAPER" "$COWRUN" --memfree 200M -j 2 --joblog "$D/j" \
		selftest --tasks 2 --sleep-ms 20000 --mark-start "$D/m" >"$D/stdout" 2>"$D/stderr" &
	run_pid=$!
	wait_until marks 2
	# (20 s tasks: taking the memory can take seconds on a loaded machine,
	# 5-10 s where page faults are slow, as under nested virtualisation.
	# The hog's interpreter holds more than the hog is told: told to leave
	# 90, it leaves less, below half of 200, without squeezing the cgroup
	# to its limit, where every process in it stalls.)
	start_hog "$(hog_leaving 90)"
	wait_until grep -q "was killed by --memfree" "$D/stderr" ||
		{ cat "$D/stderr" >&2; grep -E '^total_(inactive_file|cache|rss) ' "$CG/memory.stat" >&2; false; }
	# The other task is the last one running: it finishes under the hog.
	wait_until one_finished
	stop_hog
	wait "$run_pid"
	grep -q "tasks 2 of 2 merged" "$D/stdout"
	# The joblog: three attempts; the killed one with signal 9 and its
	# task again after it; the other task once.
	[ "$(tail -n +2 "$D/j" | wc -l)" -eq 3 ]
	killed=$(awk -F'\t' 'NR > 1 && $8 == 9 { print $9 }' "$D/j")
	[ -n "$killed" ]
	[ "$(awk -F'\t' -v c="$killed" 'NR > 1 && $9 == c' "$D/j" | wc -l)" -eq 2 ]
	[ "$(awk -F'\t' -v c="$killed" 'NR > 1 && $9 == c && $8 == 0 && $7 == 0' "$D/j" | wc -l)" -eq 1 ]
	[ "$(awk -F'\t' 'NR > 1 && $8 == 0 && $7 == 0' "$D/j" | wc -l)" -eq 2 ]
	# Only one was killed: never the last worker running a task.
	[ "$(grep -c "was killed by --memfree" "$D/stderr")" -eq 1 ]
}

@test "memfree: bad sizes and modes are refused" {
	run --separate-stderr cowrun --memfree 1x selftest
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --memfree: bad size '1x': expected a number with K, M, G or T (1024s) or k, m, g, t (1000s)"
	run --separate-stderr cowrun --memfree 1G --mode omp selftest
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --memfree needs --mode fork: only a worker process can be held back or killed"
}
