#!/usr/bin/env bats
# The serial part (issue 10), runner side: the setup's threads
# (cowrun_parallel) are the runner's choice and gone before the fork, and
# --merge builds a workload's state from the saved merge context instead of
# running its setup, refusing results of another input.

load helpers

@test "setup threads: -j capped at the CPUs, one in serial mode; one thread in the parent at fork" {
	cpus=$(nproc)
	run --separate-stderr cowrun -v -j 2 -o "$BATS_TEST_TMPDIR/o" selftest --tasks 4 --setup-mb 64
	[ "$status" -eq 0 ]
	want=$((cpus < 2 ? cpus : 2))
	[[ "$stderr" == *"4 tasks, $want setup thread"* ]]
	[[ "$stderr" == *", threads at fork 1"* ]]
	run --separate-stderr cowrun -v -j 64 -o "$BATS_TEST_TMPDIR/o" selftest --tasks 4 --setup-mb 8
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"4 tasks, $cpus setup thread"* ]]
	run --separate-stderr cowrun -v -j 0 -o "$BATS_TEST_TMPDIR/o" selftest --tasks 4 --setup-mb 8
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"4 tasks, $cpus setup thread"* ]]
	run --separate-stderr cowrun -v -j 2 --mode serial -o "$BATS_TEST_TMPDIR/o" selftest --tasks 4 --setup-mb 8
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"4 tasks, 1 setup thread,"* || "$stderr" == *"4 tasks, 1 setup thread"$'\n'* ]]
	run --separate-stderr cowrun -v -j 1 -o "$BATS_TEST_TMPDIR/o" selftest --tasks 4 --setup-mb 8
	[[ "$stderr" == *"4 tasks, 1 setup thread"* ]]
}

@test "setup on several threads gives the same output as on one" {
	for j in 1 2 3; do
		cowrun -j "$j" -o "$BATS_TEST_TMPDIR/o$j" selftest --tasks 20 --setup-mb 16 --read-setup \
			--report-bytes 100 > "$BATS_TEST_TMPDIR/out$j"
	done
	cmp "$BATS_TEST_TMPDIR/out1" "$BATS_TEST_TMPDIR/out2"
	cmp "$BATS_TEST_TMPDIR/out1" "$BATS_TEST_TMPDIR/out3"
	diff -r "$BATS_TEST_TMPDIR/o1" "$BATS_TEST_TMPDIR/o3"
}

# save_shards DIR ARGS...: the two shards of a selftest run saved in DIR.
save_shards() {
	local dir=$1; shift
	mkdir -p "$dir"
	cowrun --shard 0/2 --save-results "$dir/0.res" selftest "$@"
	cowrun --shard 1/2 --save-results "$dir/1.res" selftest "$@"
}

@test "--merge builds the state from the saved context: no setup memory, the same summary" {
	echo "day one" > "$BATS_TEST_TMPDIR/in"
	args=(--tasks 10 --input "$BATS_TEST_TMPDIR/in" --setup-mb 256)
	save_shards "$BATS_TEST_TMPDIR/r" "${args[@]}"
	direct=$(cowrun -o "$BATS_TEST_TMPDIR/o" selftest "${args[@]}")
	# The direct run touches its 256 MiB setup; the merge must not.
	run --separate-stderr /usr/bin/time -f "peak %M" "$REAPER" "$COWRUN" --merge "$BATS_TEST_TMPDIR/r" selftest "${args[@]}"
	[ "$status" -eq 0 ]
	[ "$output" = "$direct" ]
	peak=$(sed -n 's/^peak //p' <<<"$stderr")
	[ "$peak" -lt 65536 ]
	run --separate-stderr /usr/bin/time -f "peak %M" "$REAPER" "$COWRUN" -o "$BATS_TEST_TMPDIR/o" selftest "${args[@]}"
	[ "$(sed -n 's/^peak //p' <<<"$stderr")" -gt 262144 ]
}

@test "--merge refuses shards of another input, naming the input's hash" {
	echo "day one" > "$BATS_TEST_TMPDIR/in"
	save_shards "$BATS_TEST_TMPDIR/r" --tasks 10 --input "$BATS_TEST_TMPDIR/in"
	echo "day two" > "$BATS_TEST_TMPDIR/in"
	cowrun --shard 1/2 --save-results "$BATS_TEST_TMPDIR/r/1.res" selftest --tasks 10 --input "$BATS_TEST_TMPDIR/in"
	run --separate-stderr cowrun --merge "$BATS_TEST_TMPDIR/r" selftest --tasks 10 --input "$BATS_TEST_TMPDIR/in"
	[ "$status" -eq 255 ]
	[ -z "$output" ]
	assert_one_line_error "cowrun: merge: '$BATS_TEST_TMPDIR/r/1.res' was saved from another input than '$BATS_TEST_TMPDIR/r/0.res': --input '$BATS_TEST_TMPDIR/in' was 8 bytes with hash [0-9a-f]* there and 8 bytes with hash [0-9a-f]* in '$BATS_TEST_TMPDIR/r/0.res'"
}

@test "--resume refuses a journal of another input" {
	echo "day one" > "$BATS_TEST_TMPDIR/in"
	args=(--tasks 6 --input "$BATS_TEST_TMPDIR/in" --fail 3)
	run cowrun -j 2 --joblog "$BATS_TEST_TMPDIR/log" -o "$BATS_TEST_TMPDIR/o" selftest "${args[@]}"
	[ "$status" -eq 1 ]
	echo "day two" > "$BATS_TEST_TMPDIR/in"
	cp "$BATS_TEST_TMPDIR/log" "$BATS_TEST_TMPDIR/log.before"
	run --separate-stderr cowrun -j 2 --joblog "$BATS_TEST_TMPDIR/log" --resume -o "$BATS_TEST_TMPDIR/o" selftest "${args[@]}"
	[ "$status" -eq 255 ]
	[[ "$stderr" == *"input "* ]]
	cmp "$BATS_TEST_TMPDIR/log" "$BATS_TEST_TMPDIR/log.before"
}

@test "--merge: a file with a damaged context, or of a workload without one, is refused: one line naming it" {
	save_shards "$BATS_TEST_TMPDIR/r" --tasks 4
	# The context frame is the second frame; damage a byte of its payload.
	size=$(stat -c %s "$BATS_TEST_TMPDIR/r/0.res")
	python3 - "$BATS_TEST_TMPDIR/r/0.res" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
i = b.index(b'selftst1')
b[i] ^= 0x20
open(p, 'wb').write(bytes(b))
PY
	[ "$(stat -c %s "$BATS_TEST_TMPDIR/r/0.res")" -eq "$size" ]
	run --separate-stderr cowrun --merge "$BATS_TEST_TMPDIR/r" selftest --tasks 4
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: merge: '$BATS_TEST_TMPDIR/r/0.res': its merge context fails its checksum (the file is damaged)"
	# A file of a workload without a context (legacy has none).
	cowrun --save-results "$BATS_TEST_TMPDIR/legacy.res" -o "$BATS_TEST_TMPDIR/o" legacy --branches 2
	run --separate-stderr cowrun --merge "$BATS_TEST_TMPDIR/legacy.res" selftest --tasks 4
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: merge: '$BATS_TEST_TMPDIR/legacy.res' was saved by 'legacy --branches 2 (2 tasks)', not by this run's 'selftest --tasks 4 (4 tasks)'"
}

@test "default -j: SLURM_CPUS_PER_TASK caps it (task/none sets no affinity), garbage is ignored" {
	run --separate-stderr env SLURM_CPUS_PER_TASK=1 "$REAPER" "$COWRUN" -v -o "$BATS_TEST_TMPDIR/o" selftest --tasks 4
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"4 tasks, 1 setup thread"* ]]
	[[ "$stderr" == *"fork: 1 workers on 1 CPUs"* ]]
	cpus=$(nproc)
	for value in 4096 abc 0 -2; do
		run --separate-stderr env SLURM_CPUS_PER_TASK=$value "$REAPER" "$COWRUN" -v -o "$BATS_TEST_TMPDIR/o" selftest --tasks 64
		[ "$status" -eq 0 ]
		[[ "$stderr" == *"fork: $cpus workers on $cpus CPUs"* ]]
	done
}

# fake_cgroup ROOT QUOTA PERIOD: a cgroup tree under ROOT where this
# process's own cgroup (as /proc/self/cgroup names it, v1 and v2 alike)
# has a CPU quota of QUOTA per PERIOD.
fake_cgroup() {
	local root=$1 quota=$2 period=$3 controllers dir
	while IFS=: read -r _ controllers dir; do
		if [ -z "$controllers" ]; then
			mkdir -p "$root$dir"
			echo "$quota $period" >"$root${dir%/}/cpu.max"
		elif [[ ",$controllers," == *,cpu,* ]]; then
			mkdir -p "$root/$controllers$dir"
			echo "$quota" >"$root/$controllers${dir%/}/cpu.cfs_quota_us"
			echo "$period" >"$root/$controllers${dir%/}/cpu.cfs_period_us"
		fi
	done </proc/self/cgroup
}

@test "default -j: a cgroup CPU quota caps it, rounded up (v1 and v2 files)" {
	[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs to see a cap of 1"
	fake_cgroup "$BATS_TEST_TMPDIR/cg1" 50000 100000
	run --separate-stderr env COWRUN_CGROUP_ROOT="$BATS_TEST_TMPDIR/cg1" "$REAPER" "$COWRUN" -v -o "$BATS_TEST_TMPDIR/o" selftest --tasks 4
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"fork: 1 workers on 1 CPUs"* ]]
	# 1.5 CPUs' worth is 2; "max" is no quota.
	fake_cgroup "$BATS_TEST_TMPDIR/cg2" 150000 100000
	run --separate-stderr env COWRUN_CGROUP_ROOT="$BATS_TEST_TMPDIR/cg2" "$REAPER" "$COWRUN" -v -o "$BATS_TEST_TMPDIR/o" selftest --tasks 4
	[[ "$stderr" == *"fork: 2 workers on 2 CPUs"* ]]
	fake_cgroup "$BATS_TEST_TMPDIR/cg3" max 100000
	run --separate-stderr env COWRUN_CGROUP_ROOT="$BATS_TEST_TMPDIR/cg3" "$REAPER" "$COWRUN" -v -o "$BATS_TEST_TMPDIR/o" selftest --tasks 64
	[[ "$stderr" == *"fork: $(nproc) workers on $(nproc) CPUs"* ]]
}

@test "--check-args: the workload's options parse, nothing else runs or is written" {
	cd "$BATS_TEST_TMPDIR"
	run --separate-stderr cowrun --check-args --joblog log --save-results s.res sales --rows 100 --input /nonexistent
	[ "$status" -eq 0 ]
	[ -z "$output" ] && [ -z "$stderr" ]
	[ ! -e log ] && [ ! -e s.res ] && [ ! -e out ]
	run --separate-stderr cowrun --check-args sales --rows 0
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: sales: --rows: '0' is out of range (1 to 100000000)"
	run --separate-stderr cowrun --check-args sales --nosuch
	[ "$status" -eq 255 ]
	[ "$(printf '%s\n' "$stderr" | grep -c .)" -eq 1 ]
	run --separate-stderr cowrun --check-args nosuch
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: unknown workload 'nosuch' (see cowrun --list)"
	run --separate-stderr cowrun --check-args risk --assets 0
	[ "$status" -eq 255 ]
	[[ "$stderr" == "cowrun: risk: --assets: "* ]]
}
