#!/usr/bin/env bats
# cowrun-cluster --slurm (cluster/cowrun-cluster-slurm) against a real Slurm:
# tests/helpers/slurm-loopback starts munged, slurmctld and slurmd of this
# file's own (one node, this machine) and stops them by pid afterwards.
# Every batch is compared with the same batch run here by cowrun directly.
# Where Slurm cannot run (not root, packages missing), the tests say why and
# are skipped.

load helpers

# The tests share this file's Slurm (setup_file): one at a time, even under
# bats --jobs (other files still run beside them).
BATS_NO_PARALLELIZE_WITHIN_FILE=true

CLUSTER="$ROOT/cluster/cowrun-cluster"
LOOPBACK="$ROOT/tests/helpers/slurm-loopback"
SELF=(selftest --tasks 40 --sleep-ms 40)

setup_file() {
	export SLURM_DIR="$BATS_FILE_TMPDIR/slurm" SLURM_SKIP=''
	local out rc=0
	out=$("$LOOPBACK" start "$SLURM_DIR" 2>&1) || rc=$?
	if [ $rc -eq 2 ]; then
		SLURM_SKIP=${out#slurm-loopback: }
		return 0
	fi
	[ $rc -eq 0 ] || { echo "slurm-loopback failed: $out" >&2; return 1; }
	export SLURM_CONF=${out##*$'\n'}
}

teardown_file() {
	"$LOOPBACK" stop "$SLURM_DIR"
}

need_slurm() {
	[ -z "$SLURM_SKIP" ] || skip "$SLURM_SKIP"
}

# reference WORKLOAD ARGS...: the batch here, into ref_out / ref_status
# (one worker per task: the tasks mostly sleep, and -j changes no byte).
reference() {
	run --separate-stderr cowrun -j 0 -o "$BATS_TEST_TMPDIR/ref" "$@"
	ref_out=$output ref_status=$status
}

# like_here SHARDS WORKLOAD ARGS...: the batch here (reference), then in
# SHARDS elements through --slurm into $BATS_TEST_TMPDIR/b: the same exit
# status, stdout and reports ($output and $status are the cluster's).
like_here() {
	local shards=$1
	shift
	reference "$@"
	run --separate-stderr "$CLUSTER" --slurm --dir "$BATS_TEST_TMPDIR/b" --shards "$shards" --wait "$@"
	echo "$stderr"
	[ "$status" -eq "$ref_status" ]
	[ "$output" = "$ref_out" ]
	diff -r -x '.cowrun-manifest.*' "$BATS_TEST_TMPDIR/ref" "$BATS_TEST_TMPDIR/b/out"   # a run's manifest is its own
}

# cowruns_in DIR: processes whose command line names DIR (a batch's cowrun).
cowruns_in() {
	ps -eo pid=,args= | grep -F -- "$1" | grep -v -e grep -e ' ps ' || true
}

@test "slurm: an sbatch that refuses the batch is cowrun-cluster's one line, exit 255, no wait for an empty job id (no Slurm needed)" {
	local d=$BATS_TEST_TMPDIR c
	mkdir "$d/bin"
	printf '#!/bin/sh\necho "sbatch: error: Batch job submission failed: Invalid partition name specified" >&2\nexit 1\n' >"$d/bin/sbatch"
	for c in squeue scancel sacct scontrol; do printf '#!/bin/sh\nexit 0\n' >"$d/bin/$c"; done
	chmod +x "$d"/bin/*
	PATH=$d/bin:$PATH run --separate-stderr timeout 30 "$CLUSTER" --slurm --dir "$d/run" --shards 2 --wait "${SELF[@]}"
	[ "$status" -eq 255 ] || { echo "status $status (124: it waited): $stderr" >&2; return 1; }
	[[ "$stderr" == *"Invalid partition name specified"* ]]
	[ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
	[ -z "$output" ]
}

@test "slurm: --resume with --save-results saves the interrupted run's results too (no Slurm needed)" {
	local d=$BATS_TEST_TMPDIR args=(selftest --tasks 20 --sleep-ms 500)
	reference "${args[@]}"
	"$COWRUN" -j 2 --shard 1/2 --save-results "$d/1.res" --joblog "$d/1.log" -o "$d/o" "${args[@]}" &
	local pid=$!
	wait_for 30 "two tasks of shard 1 to finish" eval "[ \$(cat '$d/1.log' 2>/dev/null | grep -c task-) -ge 2 ]"
	kill -KILL "$pid"
	wait "$pid" || true
	local before
	before=$(grep -c task- "$d/1.log")
	run cowrun -j 2 --shard 1/2 --save-results "$d/1.res" --joblog "$d/1.log" --resume -o "$d/o" "${args[@]}"
	[ "$status" -eq 0 ]
	run cowrun --shard 0/2 --save-results "$d/0.res" -o "$d/o" "${args[@]}"
	[ "$status" -eq 0 ]
	run --separate-stderr cowrun --merge "$d/0.res" --merge "$d/1.res" "${args[@]}"
	[ "$status" -eq 0 ]
	[ "$output" = "$ref_out" ]
	# each task of shard 1 once in its joblog: none redone
	[ "$(grep -c task- "$d/1.log")" -eq 10 ]
	[ "$before" -ge 2 ]
}

@test "slurm: 4 shards give the stdout, exit status and reports of a run here" {
	need_slurm
	like_here 4 selftest --tasks 40 --sleep-ms 20 --report-bytes 100
	[ "$(cat "$BATS_TEST_TMPDIR/b/summary.txt")" = "$ref_out" ]
	# the merged joblog: every task once, Host = the node
	[ "$(grep -c task- "$BATS_TEST_TMPDIR/b/joblog")" -eq 40 ]
	[ "$(awk -F'\t' 'NR > 1 { print $2 }' "$BATS_TEST_TMPDIR/b/joblog" | sort -u)" = "$(hostname -s)" ]
	run "$CLUSTER" --slurm --status "$BATS_TEST_TMPDIR/b"
	[ "$(grep -c ': done (exit 0) on ' <<<"$output")" -eq 4 ]
	[[ $output == *"merge: done (exit 0)"* ]]
}

@test "slurm: an element requeued, and one whose cowrun is killed, finish without redoing finished tasks" {
	need_slurm
	local b=$BATS_TEST_TMPDIR/b args=(selftest --tasks 40 --sleep-ms 600)
	reference "${args[@]}"
	"$CLUSTER" --slurm --dir "$b" --shards 2 --retries 1 --wait "${args[@]}" >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" &
	local front=$!
	# Each shard is cut short once 3 of its 20 tasks are done (6 s of
	# work at -j 2: long enough to act on where processes start slowly): shard 0 requeued by Slurm, shard 1's cowrun killed
	# (SIGKILL).  Each is acted on as soon as it gets there: the kill does
	# not wait for the requeue's round trips, and the elements need not
	# start together (slurmctld starts jobs on its once-a-second pass).
	local job0='' killed='' late=''
	cut_short() {
		if [ -z "$job0" ] && [ "$(tasks_in "$b/0.log")" -ge 3 ]; then
			job0=$(field_job "$b/0.status")
			scontrol requeue "$job0" || late="scontrol requeue $job0 failed"
		fi
		if [ -z "$killed" ] && [ "$(tasks_in "$b/1.log")" -ge 3 ]; then
			killed=1
			pkill -KILL -f -- "--joblog $b/1.log" ||
				late+="shard 1 ended before its cowrun could be killed: $(cat "$b/1.status")"
		fi
		[ -n "$job0" ] && [ -n "$killed" ]
	}
	wait_for 30 "both shards to finish 3 tasks" cut_short
	[ -z "$late" ] || { echo "$late" >&2; return 1; }
	# Slurm holds a requeued job back (its begin time, about 2 minutes): now
	wait_for 30 "the requeue" eval "squeue -h -j '$job0' -t PD -o %i | grep -q ."
	scontrol update JobId="$job0" StartTime=now
	wait "$front" && status=0 || status=$?
	cat "$BATS_TEST_TMPDIR/err"
	[ "$status" -eq "$ref_status" ]
	[ "$(cat "$BATS_TEST_TMPDIR/out")" = "$ref_out" ]
	# every task once in the joblogs: the finished ones were not redone
	# each task succeeded once: none finished before the kill ran again
	# (the joblogs also hold the attempts the kill cut short)
	local k
	for k in 0 1; do
		[ "$(awk -F'\t' 'NR > 1 && $7 == 0 && $8 == 0' "$b/$k.log" | wc -l)" -eq 20 ]
		[ -z "$(awk -F'\t' 'NR > 1 && $7 == 0 && $8 == 0 { print $9 }' "$b/$k.log" | sort | uniq -d)" ]
	done
	cat "$b"/*.status "$b/jobs"
	[ "$(field attempt "$b/0.status")" -ge 2 ]
	[ "$(field attempt "$b/1.status")" -ge 2 ]
	# Shard 1 failed and was resubmitted.  Slurm starts the requeued
	# element 0 again at its next pass; when that falls in the same second
	# as the requeue's kill, slurmd refuses it ("Job credential revoked":
	# revocations are kept to the second) and it ends FAILED without
	# running; --wait then resubmits it too (not while Slurm still holds
	# it: never a shard twice).
	grep -Eq 'shards (0,)?1 failed: resubmitted' "$BATS_TEST_TMPDIR/err"
}

# tasks_in JOBLOG: the lines of tasks in a cowrun joblog (0 before it exists).
tasks_in() {
	local n
	n=$(grep -c task- "$1" 2>/dev/null) || true
	echo "${n:-0}"
}

# field KEY FILE: KEY's value in a status line.
field() { tr ' ' '\n' <"$2" | sed -n "s/^$1=//p"; }
# field_job STATUSFILE: the element's Slurm job id (ARRAY_K).
field_job() { field job "$1"; }

@test "slurm: a failed shard stops the merge, naming it; --resume finishes the batch" {
	need_slurm
	local b=$BATS_TEST_TMPDIR/b fake=$BATS_TEST_TMPDIR/cowrun
	# a cowrun whose shard 2/4 dies the first time
	cat >"$fake" <<-EOF
	#!/bin/sh
	case "\$*" in *"--shard 2/4"*) [ -e "$BATS_TEST_TMPDIR/died" ] || { : >"$BATS_TEST_TMPDIR/died"; kill -KILL \$\$; } ;; esac
	exec "$COWRUN" "\$@"
	EOF
	chmod +x "$fake"
	reference "${SELF[@]}"
	run --separate-stderr "$CLUSTER" --slurm --dir "$b" --shards 4 --retries 0 --cowrun "$fake" --wait "${SELF[@]}"
	echo "$stderr"
	[ "$status" -eq 254 ]
	[ -z "$output" ]
	[[ $stderr == *"shards did not finish (2:failed): no summary; finish the batch with: cowrun-cluster --slurm --resume $b"* ]]
	run --separate-stderr "$CLUSTER" --slurm --resume "$b" --wait
	echo "$stderr"
	[ "$status" -eq "$ref_status" ]
	[ "$output" = "$ref_out" ]
	grep -q '^.* array [0-9]* 2$' "$b/jobs"
}

@test "slurm: a bad workload argument fails before anything is submitted" {
	need_slurm
	local before
	before=$(squeue -h -t all -o %i | wc -l)
	run --separate-stderr "$CLUSTER" --slurm --dir "$BATS_TEST_TMPDIR/b" --shards 2 selftest --tasks x
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: *"
	[ "$(squeue -h -t all -o %i | wc -l)" -eq "$before" ]
	[ ! -e "$BATS_TEST_TMPDIR/b/jobs" ]
}

@test "slurm: scancel of the submission leaves no cowrun running and a status per shard" {
	need_slurm
	local b=$BATS_TEST_TMPDIR/b
	run --separate-stderr "$CLUSTER" --slurm --dir "$b" --shards 4 selftest --tasks 40 --sleep-ms 2000
	[ "$status" -eq 0 ]
	local cancel
	cancel=$(sed -n 's/.*to cancel: //p' <<<"$output")
	[[ $cancel == "scancel "* ]]
	wait_for 30 "two elements to start" eval "[ \$(ls '$b'/*.status 2>/dev/null | wc -l) -ge 2 ]"
	wait_for 30 "a cowrun to run" eval "[ -n \"\$(cowruns_in '$b')\" ]"
	$cancel
	wait_for 30 "every cowrun of the batch to end" eval "[ -z \"\$(cowruns_in '$b')\" ]"
	wait_for 90 "Slurm to end the jobs" eval "[ -z \"\$(squeue -h -o %i)\" ]"
	run "$CLUSTER" --slurm --status "$b"
	echo "$output"
	[ "$status" -eq 0 ]
	[ "$(grep -c '^shard ./4: cancelled' <<<"$output")" -eq 4 ]
}

@test "slurm: Ctrl-C of --wait stops waiting, not the batch: job ids and the scancel line, 130" {
	need_slurm
	local b=$BATS_TEST_TMPDIR/b args=(selftest --tasks 16 --sleep-ms 150)
	reference "${args[@]}"
	# (A background job of a script ignores SIGINT: start it with the
	# default disposition, as a terminal's Ctrl-C would find it.)
	perl -MPOSIX -e '$SIG{INT} = "DEFAULT"; sigprocmask(SIG_UNBLOCK, POSIX::SigSet->new(SIGINT)); exec @ARGV or die' \
		"$CLUSTER" --slurm --dir "$b" --shards 2 --wait "${args[@]}" >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" &
	local front=$!
	# (The front end's own command line names $b: wait for an element.)
	wait_for 30 "an element to run" eval "grep -qs 'state=running' '$b'/*.status"
	kill -INT "$front"
	wait "$front" && status=0 || status=$?
	cat "$BATS_TEST_TMPDIR/err"
	[ "$status" -eq 130 ]
	[ ! -s "$BATS_TEST_TMPDIR/out" ]
	grep -q "stopped waiting; the batch goes on: .*--slurm --status $b" "$BATS_TEST_TMPDIR/err"
	grep -q "to cancel it: scancel [0-9]" "$BATS_TEST_TMPDIR/err"
	# The batch goes on to its merge and summary without the front end.
	wait_for 60 "the merge to end" eval "[ -e '$b/merge.status' ]"
	[ "$(cat "$b/summary.txt")" = "$ref_out" ]
}

@test "slurm: --max-running, --time and any sbatch option reach the jobs" {
	need_slurm
	local b=$BATS_TEST_TMPDIR/b
	run --separate-stderr "$CLUSTER" --slurm --dir "$b" --shards 3 --max-running 1 --time 5 \
		--sbatch-opt=--comment=cowrun-test selftest --tasks 6 --sleep-ms 100
	[ "$status" -eq 0 ]
	local array
	array=$(awk '$2 == "array" { print $3 }' "$b/jobs")
	run scontrol show job -o "$array"
	[[ "$output" == *"TimeLimit=00:05:00"* ]]
	[[ "$output" == *"Comment=cowrun-test"* ]]
	[[ "$output" == *"ArrayTaskThrottle=1"* ]]
	wait_for 60 "the merge to end" eval "[ -e '$b/merge.status' ]"
	[ "$("$CLUSTER" --slurm --status "$b" | grep -c '^shard ./3: done')" -eq 3 ]
}

@test "slurm: a Python script (cowrun python) in 3 shards gives a local run's output" {
	need_slurm
	like_here 3 python "$ROOT/tests/fixtures/python-cluster/squares.py" --n 7
	[ "$ref_status" -eq 0 ]
	[ "$output" = "squares: 7, total 91" ]
}

@test "slurm: an R script (cowrun r) and the file it source()s in 2 shards give a local run's output" {
	need_slurm
	[ -e "$ROOT/build/workloads/r.so" ] || skip "no build/workloads/r.so (cowrun r is not built: R missing?)"
	local d=$BATS_TEST_TMPDIR b=$BATS_TEST_TMPDIR/b
	printf 'four\n' >"$d/in.txt"
	like_here 2 r "$ROOT/tests/fixtures/r/squares.R" 7 "$d/in.txt"
	[ "$ref_status" -eq 0 ]
	[ "$output" = "squares: 7, total 126" ]
	# the elements' workers ran the helper the script source()s beside it
	[ "$(cat "$b/out/square-0006.txt")" = "square-0006.txt: 41 (squares-label.R)" ]
	[ "$(grep -c square- "$b/joblog")" -eq 7 ]
	# a script not there: cowrun's line here, nothing submitted
	run --separate-stderr "$CLUSTER" --slurm --dir "$d/none" r "$d/missing.R" 7
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: r: cannot read the script '$d/missing.R': No such file or directory"
	[ ! -e "$d/none" ]
}

@test "slurm: an out-of-tree workload by path gives a local run's output; --status says how long each shard ran" {
	need_slurm
	local d=$BATS_TEST_TMPDIR b=$BATS_TEST_TMPDIR/b
	cc -std=gnu11 -fPIC -shared -I"$ROOT/include" -o "$d/primes.so" "$ROOT/workloads/template/primes.c"
	like_here 2 --workload "$d/primes.so" --limit 200000 --ranges 6
	# Every node ran the copy in the batch's directory.
	cmp "$d/primes.so" "$b/plugin/primes.so"
	run "$CLUSTER" --slurm --status "$b"
	[ "$status" -eq 0 ]
	[[ "$output" =~ shard\ 0/2:\ done\ \(exit\ 0\)\ on\ [^,]*,\ attempt\ 1,\ job\ [0-9_]*,\ [0-9]+\.[0-9]\ s ]]
	[[ "$output" == *"merge: done (exit 0)"* ]]
	# The submission names --dir once.
	[ "$(grep -o -- '--dir' "$b/submission" | wc -l)" -eq 1 ]
	# A plugin that cannot be read: nothing submitted.
	run --separate-stderr "$CLUSTER" --slurm --dir "$d/c" --workload "$d/none.so"
	[ "$status" -eq 255 ]
	[[ "$stderr" == *"--workload: cannot read '$d/none.so'"* ]]
	[ ! -e "$d/c" ]
}
