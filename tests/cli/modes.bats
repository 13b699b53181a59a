#!/usr/bin/env bats
# OpenMP mode, task selection, saved results and merging, the timeline.

load helpers

SMALL_SALES="sales --rows 30000 --stores 9 --products 50 --days 60"

@test "omp mode: stdout and reports equal serial's at -j 1, 2, 3" {
	for j in 1 2 3; do
		run --separate-stderr cowrun --mode serial -o "$BATS_TEST_TMPDIR/s" $SMALL_SALES
		[ "$status" -eq 0 ]
		serial=$output
		run --separate-stderr cowrun --mode omp -j "$j" -o "$BATS_TEST_TMPDIR/o$j" $SMALL_SALES
		[ "$status" -eq 0 ]
		[ "$output" = "$serial" ]
		diff -r "$BATS_TEST_TMPDIR/s" "$BATS_TEST_TMPDIR/o$j"
	done
}

@test "omp mode: selftest and average merge identically to serial" {
	run --separate-stderr cowrun --mode serial selftest --tasks 2000 --result-bytes 40
	serial=$output
	run --separate-stderr cowrun --mode omp -j 2 selftest --tasks 2000 --result-bytes 40
	[ "$status" -eq 0 ]
	[ "$output" = "$serial" ]
	run --separate-stderr cowrun --mode omp -j 2 average --size 100000 --chunks 7
	[[ "$output" == *": ok"* ]]
}

@test "omp mode: a failing task is reported and counted like in fork mode" {
	run --separate-stderr cowrun --mode omp -j 2 selftest --tasks 20 --fail 3,9
	[ "$status" -eq 2 ]
	[[ "$stderr" == *"task 3 (task-000003) failed: failed on purpose"* ]]
	[[ "$output" == "tasks 18 of 20 merged"* ]]
}

@test "--tasks runs only the listed tasks" {
	run --separate-stderr cowrun -j 2 -o "$BATS_TEST_TMPDIR/out" --tasks 0-4,17 selftest --tasks 30 --report-bytes 10
	[ "$status" -eq 0 ]
	[[ "$output" == "tasks 6 of 30 merged"* ]]
	[ "$(ls "$BATS_TEST_TMPDIR/out" | tr '\n' ' ')" = "task-000000 task-000001 task-000002 task-000003 task-000004 task-000017 " ]
}

@test "--shard k/M splits the tasks round-robin, every task once" {
	total=0
	for k in 0 1 2; do
		run --separate-stderr cowrun -j 2 --shard "$k/3" selftest --tasks 31
		[ "$status" -eq 0 ]
		n=$(printf '%s' "$output" | sed -n 's/^tasks \([0-9]*\) of 31.*/\1/p')
		total=$((total + n))
	done
	[ "$total" -eq 31 ]
}

@test "bad --tasks and --shard values are one-line errors" {
	for bad in "" x 5-3 1,,2 3, -1 1-; do
		run --separate-stderr cowrun --tasks "$bad" selftest
		[ "$status" -eq 255 ]
		assert_one_line_error "cowrun: --tasks: bad list '$bad'*"
	done
	run --separate-stderr cowrun --tasks 0-200 selftest --tasks 10
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --tasks: task 200 does not exist (10 tasks: 0-9)"
	for bad in 3/3 1 a/2 1/0 -1/2; do
		run --separate-stderr cowrun --shard "$bad" selftest
		[ "$status" -eq 255 ]
		assert_one_line_error "cowrun: --shard: bad value '$bad'*"
	done
}

@test "--merge of --shard results equals a direct run, stdout and reports" {
	d=$BATS_TEST_TMPDIR
	run --separate-stderr cowrun -j 2 -o "$d/direct" $SMALL_SALES
	[ "$status" -eq 0 ]
	direct=$output
	mkdir "$d/res"
	for k in 0 1 2 3; do
		run --separate-stderr cowrun --mode serial --shard "$k/4" --save-results "$d/res/$k.res" -o "$d/sharded" $SMALL_SALES
		[ "$status" -eq 0 ]
		[ -z "$output" ]
	done
	run --separate-stderr cowrun --merge "$d/res" $SMALL_SALES
	[ "$status" -eq 0 ]
	[ "$output" = "$direct" ]
	diff -r -x '.cowrun-manifest.*' "$d/direct" "$d/sharded"
	# The same files named one by one.
	run --separate-stderr cowrun --merge "$d/res/2.res" --merge "$d/res/0.res" --merge "$d/res/3.res" --merge "$d/res/1.res" $SMALL_SALES
	[ "$output" = "$direct" ]
}

@test "--merge of per-task results (the parallel-task way) equals a direct run" {
	d=$BATS_TEST_TMPDIR
	run --separate-stderr cowrun --mode serial selftest --tasks 12 --result-bytes 300
	direct=$output
	mkdir "$d/res"
	for k in $(seq 0 11); do
		cowrun --mode serial --tasks "$k" --save-results "$d/res/$k.res" selftest --tasks 12 --result-bytes 300
	done
	run --separate-stderr cowrun --merge "$d/res" selftest --tasks 12 --result-bytes 300
	[ "$status" -eq 0 ]
	[ "$output" = "$direct" ]
}

@test "saved failures are reported again at merge time" {
	d=$BATS_TEST_TMPDIR
	run --separate-stderr cowrun -j 2 --save-results "$d/all.res" selftest --tasks 10 --fail 4
	[ "$status" -eq 1 ]
	run --separate-stderr cowrun --merge "$d/all.res" selftest --tasks 10 --fail 4
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"task 4 (task-000004) failed: failed on purpose (--fail 4) (saved in '$d/all.res')"* ]]
	[[ "$output" == "tasks 9 of 10 merged"* ]]
}

@test "a merge refuses foreign, corrupt, truncated, duplicate and missing results" {
	d=$BATS_TEST_TMPDIR
	cowrun --shard 0/2 --save-results "$d/a.res" selftest --tasks 10 --result-bytes 5000
	cowrun --shard 1/2 --save-results "$d/b.res" selftest --tasks 10 --result-bytes 5000
	run --separate-stderr cowrun --merge "$d/a.res" --merge "$d/b.res" selftest --tasks 10 --result-bytes 4000
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: merge: '$d/a.res' was saved by 'selftest --tasks 10 --result-bytes 5000 (10 tasks)', not by this run's 'selftest --tasks 10 --result-bytes 4000 (10 tasks)'"
	run --separate-stderr cowrun --merge "$d/a.res" average --size 100 --chunks 10
	[ "$status" -eq 255 ]
	[ -z "$output" ]
	head -c 9000 "$d/b.res" > "$d/trunc.res"
	run --separate-stderr cowrun --merge "$d/a.res" --merge "$d/trunc.res" selftest --tasks 10 --result-bytes 5000
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: merge: '$d/trunc.res' is truncated (no end marker)"
	printf 'date,store\n1,2\n' > "$d/text.res"
	run --separate-stderr cowrun --merge "$d/text.res" selftest --tasks 10 --result-bytes 5000
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: merge: '$d/text.res' is*not a cowrun results file"
	# A damaged frame header: the stream cannot be followed.
	idlen=$(od -An -t u8 -j 16 -N 8 "$d/b.res" | tr -d ' ')
	cp "$d/b.res" "$d/corrupt.res"
	printf 'XXXX' | dd of="$d/corrupt.res" bs=1 seek=$((32 + idlen + 4)) conv=notrunc 2>/dev/null
	run --separate-stderr cowrun --merge "$d/a.res" --merge "$d/corrupt.res" selftest --tasks 10 --result-bytes 5000
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: merge: '$d/corrupt.res' is corrupt or not a cowrun results file"
	# Damaged record bytes: the frame's checksum fails before any merge()
	# sees the record (integrity.bats flips every kind of byte).
	cp "$d/b.res" "$d/damaged.res"
	printf 'XXXX' | dd of="$d/damaged.res" bs=1 seek=$((32 + idlen + 32 + 100)) conv=notrunc 2>/dev/null
	run --separate-stderr cowrun --merge "$d/a.res" --merge "$d/damaged.res" selftest --tasks 10 --result-bytes 5000
	[ "$status" -eq 255 ]
	[ -z "$output" ]
	assert_one_line_error "cowrun: merge: '$d/damaged.res': frame of task 1 fails its checksum (the file is damaged)"
	run --separate-stderr cowrun --merge "$d/a.res" --merge "$d/a.res" selftest --tasks 10 --result-bytes 5000
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: merge: task 0 in '$d/a.res' was already loaded from an earlier file"
	run --separate-stderr cowrun --merge "$d/a.res" selftest --tasks 10 --result-bytes 5000
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: merge: 5 of 10 tasks are in no results file (1,3,5,7,9)"
	run --separate-stderr cowrun --merge "$d/nosuch.res" selftest --tasks 10
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: merge: cannot open '$d/nosuch.res': No such file or directory"
}

@test "--save-results is atomic: a failed save leaves no file" {
	d=$BATS_TEST_TMPDIR
	run --separate-stderr cowrun --save-results "$d/nodir/x.res" selftest --tasks 3
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: cannot create '$d/nodir/x.res.*.tmp': No such file or directory"
	run --separate-stderr bash -c "ulimit -f 8; exec '$COWRUN' -j 2 --save-results '$d/big.res' selftest --tasks 4 --result-bytes 100000"
	[ "$status" -eq 254 ]
	[[ "$stderr" == *"cannot write '$d/big.res."*".tmp': File too large"* ]]
	[ -z "$(ls -A "$d" | grep res)" ]
}

@test "--merge cannot be combined with options that run tasks" {
	run --separate-stderr cowrun --merge x.res --tasks 1 selftest
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --merge runs no task*"
}

@test "--timeline writes one well-formed row per task, in every mode" {
	for mode in serial fork omp; do
		f="$BATS_TEST_TMPDIR/$mode.csv"
		run --separate-stderr cowrun --mode "$mode" -j 2 --timeline "$f" selftest --tasks 25 --sleep-ms 2
		[ "$status" -eq 0 ]
		[ "$(head -1 "$f")" = "task,name,worker,pid,start_s,end_s,status,slot" ]
		[ "$(tail -n +2 "$f" | wc -l)" -eq 25 ]
		# Every task once; times non-negative and ordered; status ok.
		[ "$(tail -n +2 "$f" | cut -d, -f1 | sort -n | uniq | wc -l)" -eq 25 ]
		tail -n +2 "$f" | awk -F, '$5 < 0 || $6 < $5 || $7 != "ok" { exit 1 }'
	done
	# Two workers in fork mode: both appear.
	[ "$(tail -n +2 "$BATS_TEST_TMPDIR/fork.csv" | cut -d, -f3 | sort -u | wc -l)" -eq 2 ]
}
