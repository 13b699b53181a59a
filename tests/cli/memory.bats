#!/usr/bin/env bats
# Copy-on-write made visible: the setup arena, its freeze, per-worker
# accounting, and the fallback without huge pages.

load helpers

# Column of a --stats CSV by header name, one value per worker.
stats_column() {
	awk -F, -v want="$2" '/^#/ { next } !h { for (i = 1; i <= NF; i++) if ($i == want) c = i; h = 1; next } { print $c }' "$1"
}

@test "freeze: a task writing to shared setup memory fails, naming the task and the offset" {
	run --separate-stderr cowrun -j 2 selftest --tasks 10 --setup-mb 8 --write-shared 3
	[ "$status" -eq 1 ]
	assert_no_leftovers
	[[ "$stderr" == *"task 3 (task-000003) failed: wrote to shared setup memory at offset "*" of the setup arena, which is read-only after setup"* ]]
	[[ "$output" == "tasks 9 of 10 merged"* ]]
}

@test "--no-freeze: the same write goes through (and is silently copied)" {
	run --separate-stderr cowrun -j 2 --no-freeze selftest --tasks 10 --setup-mb 8 --write-shared 3
	[ "$status" -eq 0 ]
	[[ "$output" == "tasks 10 of 10 merged"* ]]
}

@test "a crash that is not a write to the arena is still reported as the signal" {
	run --separate-stderr cowrun -j 2 selftest --tasks 5 --setup-mb 8 --crash 2
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"task 2 (task-000002) failed: worker "*" killed by SIGSEGV"* ]]
}

@test "--stats: each worker's Pss stays well below a 256 MiB setup it shares" {
	f="$BATS_TEST_TMPDIR/stats.csv"
	run --separate-stderr cowrun -j 2 --stats "$f" selftest --tasks 8 --setup-mb 256 --read-setup
	[ "$status" -eq 0 ]
	[ "$(stats_column "$f" pid | wc -l)" -eq 2 ]
	for pss in $(stats_column "$f" pss_kb); do
		[ "$pss" -gt 0 ]
		[ "$pss" -lt $((200 * 1024)) ]
	done
	for shared in $(stats_column "$f" shared_kb); do
		[ "$shared" -gt $((200 * 1024)) ]
	done
	for dirty in $(stats_column "$f" private_dirty_kb); do
		[ "$dirty" -lt $((8 * 1024)) ]
	done
	for fork_ms in $(stats_column "$f" fork_ms); do
		awk -v v="$fork_ms" 'BEGIN { exit !(v > 0) }'
	done
}

@test "--stats: a worker that writes shared memory shows Private_Dirty grow" {
	f="$BATS_TEST_TMPDIR/stats.csv"
	run --separate-stderr cowrun -j 2 --no-freeze --stats "$f" selftest --tasks 4 --setup-mb 128 --dirty-mb 32
	[ "$status" -eq 0 ]
	for dirty in $(stats_column "$f" private_dirty_kb); do
		[ "$dirty" -ge $((32 * 1024)) ]
	done
}

@test "--verbose: the arena, its huge pages and the copied memory are reported" {
	run --separate-stderr cowrun -v -j 2 selftest --tasks 4 --setup-mb 64
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"setup arena: 64.0 MiB used; huge pages: "*", frozen"* ]]
	[[ "$stderr" == *"memory: setup 64.0 MiB shared by 2 workers; each copied or allocated "*" MiB"*"fork "*" ms avg"* ]]
	# Where THP allows it, the arena really is in huge pages (some of it:
	# fragmentation decides how much).
	thp=$(sed -n 's/.*\[\(.*\)\].*/\1/p' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || true)
	if [ "$thp" = always ] || [ "$thp" = madvise ]; then
		huge=$(sed -n "s/.*huge pages: requested, THP $thp, \([0-9.]*\) MiB of .* resident is huge.*/\1/p" <<<"$stderr")
		[ -n "$huge" ] || { echo "no huge-page figure in: $stderr" >&2; return 1; }
		awk -v h="$huge" 'BEGIN { exit !(h > 0) }' || { echo "no huge pages: $stderr" >&2; return 1; }
	fi
}

@test "--no-huge-pages: 4 KiB pages, the same output" {
	run --separate-stderr cowrun -v -j 2 --no-huge-pages average --size 3000000 --chunks 9
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"huge pages: off"*"4 KiB pages"* ]]
	small=$output
	run --separate-stderr cowrun -j 2 average --size 3000000 --chunks 9
	[ "$output" = "$small" ]
}

@test "the arena holds sales' shared state; outputs identical with and without huge pages" {
	args="sales --rows 40000 --stores 6 --products 40 --days 30"
	run --separate-stderr cowrun -v -j 2 -o "$BATS_TEST_TMPDIR/a" $args
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"setup arena: "*" used; huge pages"* ]]
	a=$output
	run --separate-stderr cowrun -j 2 --no-huge-pages --no-freeze -o "$BATS_TEST_TMPDIR/b" $args
	[ "$output" = "$a" ]
	diff -r "$BATS_TEST_TMPDIR/a" "$BATS_TEST_TMPDIR/b"
}

@test "--stats in a missing directory is refused before any task" {
	run --separate-stderr cowrun -j 2 --stats "$BATS_TEST_TMPDIR/no/such/dir.csv" selftest --tasks 2
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --stats: cannot create '$BATS_TEST_TMPDIR/no/such/dir.csv': No such file or directory"
}
