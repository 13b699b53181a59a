#!/usr/bin/env bats
# cowrun-cluster (cluster/cowrun-cluster) for real: a throwaway sshd on 127.0.0.1
# (tests/helpers/sshd-loopback, its keys and config in this file's temporary
# directory, ~/.ssh untouched) plays three hosts, each a key of its own with
# its own login directory, $TMPDIR and PATH.  Hosts 1 and 2 are healthy;
# host 3 passes the check but its cowrun (on its PATH) dies in every shard.
# Every cluster run is compared with the same batch run here by cowrun
# directly: stdout, exit status and report files must be identical.  If sshd
# cannot run here at all, the tests that need it say why and are skipped.

load helpers

# The tests share this file's sshd (setup_file): one at a time, even under
# bats --jobs (other files still run beside them).
BATS_NO_PARALLELIZE_WITHIN_FILE=true

CLUSTER="$ROOT/cluster/cowrun-cluster"
LOOPBACK="$ROOT/tests/helpers/sshd-loopback"
SALES=(sales --rows 200000 --stores 12 --seed 7)

setup_file() {
	export SSHD_DIR="$BATS_FILE_TMPDIR/sshd" SSHD_SKIP=''
	# GNU Parallel keeps its own files here, not in ~/.parallel.
	export PARALLEL_HOME="$BATS_FILE_TMPDIR/parallel-home"
	mkdir -p "$PARALLEL_HOME"
	local out rc=0
	out=$("$LOOPBACK" start "$SSHD_DIR" 3 2>&1) || rc=$?
	if [ $rc -eq 2 ]; then
		SSHD_SKIP=${out#sshd-loopback: }
		return 0
	fi
	[ $rc -eq 0 ] || { echo "sshd-loopback failed: $out" >&2; return 1; }
	local i
	for i in 1 2 3; do
		sed -n "${i}p" "$SSHD_DIR/sshloginfile" >"$SSHD_DIR/h$i"
	done
	cat "$SSHD_DIR/h1" "$SSHD_DIR/h2" >"$SSHD_DIR/two"
	# Host 3's cowrun answers the check (-v --version, WORKLOAD --help), then
	# dies in the shard.
	ln -s "$ROOT/bin/cowrun" "$SSHD_DIR/host1/bin/cowrun"
	ln -s "$ROOT/bin/cowrun" "$SSHD_DIR/host2/bin/cowrun"
	cat >"$SSHD_DIR/host3/bin/cowrun" <<-EOF
	#!/bin/sh
	case "\$*" in *--version|*" --help") exec "$ROOT/bin/cowrun" "\$@" ;; esac
	kill -KILL \$\$
	EOF
	chmod +x "$SSHD_DIR/host3/bin/cowrun"
}

teardown_file() {
	"$LOOPBACK" stop "$SSHD_DIR"
}

need_sshd() {
	[ -z "$SSHD_SKIP" ] || skip "$SSHD_SKIP"
}

# cluster ARGS...: cluster/cowrun-cluster under the reaper: GNU Parallel, ssh and
# the merge must leave nothing behind here.
cluster() {
	"$REAPER" "$CLUSTER" "$@"
}

# local_run OUTDIR WORKLOAD ARGS...: the reference, on this machine; sets
# ref_out and ref_status.
local_run() {
	local dir=$1
	shift
	run --separate-stderr cowrun -o "$dir" "$@"
	ref_out=$output ref_status=$status
}

# hosts_clean: nothing of any shard is left on the hosts: no file in their
# login or temporary directories, no process running from them.  A stopped
# run's hosts clean up on their own (GNU Parallel's wrapper there notices
# the ssh connection is gone, kills cowrun and the job removes its
# directory): up to 30 s are allowed for that (it takes well under 1 s).
hosts_clean() {
	local i
	for i in $(seq 300); do
		[ -z "$(left_on_hosts)" ] && return 0
		sleep 0.1
	done
	echo "left on the hosts: $(left_on_hosts)" >&2
	return 1
}

# Not counted: GNU Parallel's own remote wrapper script, tmp/par-job-SEQ_*,
# which removes itself once it runs; a wrapper killed in the instant
# between writing it and running it (the other shard failed, cowrun-cluster
# stops the batch) leaves it behind.  That window is GNU Parallel's
# (20221122), not cowrun's: seen once under check-asan's load.
left_on_hosts() {
	local i
	for i in 1 2 3; do
		(cd "$SSHD_DIR" && find "host$i" -mindepth 1 ! -path "host$i/tmp" ! -path "host$i/bin" \
			! -path "host$i/bin/*" ! -path "host$i/tmp/par-job-*")
	done
	pgrep -a -f "$SSHD_DIR/host[0-9]/tmp" || true
}

@test "cluster --help describes the options, what each host needs and the exit status" {
	run --separate-stderr "$CLUSTER" --help
	[ "$status" -eq 0 ]
	[[ "$output" == "Usage: cowrun-cluster --slf FILE [OPTIONS] WORKLOAD"* ]]
	for word in --slf -j --outdir --shards --retries --joblog --task-joblog --cowrun --check \
		--skip-bad-hosts --dry-run perl tar "same cowrun" "Exit status" 254 255; do
		[[ "$output" == *"$word"* ]] || { echo "--help lacks '$word'" >&2; return 1; }
	done
}

@test "cluster usage errors are one line and exit 255, before any ssh" {
	printf 'server1\n' >"$BATS_TEST_TMPDIR/slf"
	run --separate-stderr "$CLUSTER" sales
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun-cluster: no hosts: --slf FILE is required*"
	run --separate-stderr "$CLUSTER" --slf "$BATS_TEST_TMPDIR/slf"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun-cluster: no workload given*"
	run --separate-stderr "$CLUSTER" --slf "$BATS_TEST_TMPDIR/nope" sales
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun-cluster: cannot read sshloginfile '*nope'"
	run --separate-stderr "$CLUSTER" --slf "$BATS_TEST_TMPDIR/slf" -j lots sales
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun-cluster: -j: bad value 'lots'*"
	run --separate-stderr "$CLUSTER" --slf "$BATS_TEST_TMPDIR/slf" --cowrun-opt=--shard=1/2 sales
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun-cluster: --cowrun-opt: '--shard=1/2' cannot be passed*"
	printf '# nothing but a comment\n\n' >"$BATS_TEST_TMPDIR/empty"
	run --separate-stderr "$CLUSTER" --slf "$BATS_TEST_TMPDIR/empty" sales
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun-cluster: sshloginfile '*empty' lists no host"
}

@test "cluster: a script workload's missing script is cowrun's one-line error here, 255, before any host" {
	# ":" is this machine (no ssh): without the check here its shards would
	# start, fail and end the run with 254.
	local d=$BATS_TEST_TMPDIR
	printf ':\n' >"$d/slf"
	run --separate-stderr "$CLUSTER" --slf "$d/slf" -o "$d/out/reports" python "$d/missing.py" --n 3
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: python: cannot read the script '$d/missing.py': No such file or directory"
	[ ! -e "$d/out" ]
	run --separate-stderr "$CLUSTER" --no-check --slf "$d/slf" -o "$d/out/reports" python "$d/missing.py" --n 3
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: python: cannot read the script '$d/missing.py': No such file or directory"
	[ ! -e "$d/out" ]
}

@test "cluster --dry-run prints the hosts, each host's -j, the commands and the merge, and runs nothing" {
	printf '%s\n' '# comment' server1 '4/ops@server2' 'ssh -p 2222 server3' >"$BATS_TEST_TMPDIR/slf"
	run --separate-stderr "$CLUSTER" --dry-run --slf "$BATS_TEST_TMPDIR/slf" -o "$BATS_TEST_TMPDIR/out" \
		"${SALES[@]}"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	[ -z "$stderr" ]
	[[ "$output" == *"3 hosts, 3 shards"* ]]
	[[ "$output" == *"host 1: server1 (cowrun -j from its CPU count)"* ]]
	[[ "$output" == *"host 2: ops@server2 (cowrun -j 4)"* ]]
	[[ "$output" == *"host 3: ssh -p 2222 server3 (cowrun -j from its CPU count)"* ]]
	[[ "$output" == *"parallel --will-cite -j 1 --slf "*"--retries 2"* ]]
	[[ "$output" == *"--shard K/3 --save-results"*"sales --rows 200000 --stores 12 --seed 7"* ]]
	[[ "$output" == *"--merge STAGING/res sales --rows 200000"* ]]
	[ ! -e "$BATS_TEST_TMPDIR/out" ]
}

@test "cluster --cowrun-opt=--seed=N: the shards and the merge get the run seed (part of the results' identity)" {
	printf '%s\n' server1 server2 >"$BATS_TEST_TMPDIR/slf"
	run --separate-stderr "$CLUSTER" --dry-run --slf "$BATS_TEST_TMPDIR/slf" -o "$BATS_TEST_TMPDIR/out" \
		--cowrun-opt=--seed=5 "${SALES[@]}"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	[[ "$output" == *"--seed=5 --merge STAGING/res sales --rows 200000"* ]]
	[[ "$output" == *"parallel "*"--seed=5"* ]]
}

@test "cluster --check: every host logs in and has this cowrun" {
	need_sshd
	run --separate-stderr cluster --check --slf "$SSHD_DIR/two"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[ "$(grep -c '^ok   ssh -F .*: [0-9?]* CPUs, cowrun ' <<<"$output")" -eq 2 ]
}

@test "cluster --check WORKLOAD: every host must load it (a bundled one with its libraries)" {
	need_sshd
	run --separate-stderr cluster --check --slf "$SSHD_DIR/two" risk
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	[ "$(grep -c '^ok   ssh -F .*: [0-9?]* CPUs, cowrun ' <<<"$output")" -eq 2 ]
	run --separate-stderr cluster --check --slf "$SSHD_DIR/two" nosuch
	[ "$status" -eq 255 ]
	assert_no_leftovers
	[ "$(grep -c "^FAIL ssh -F .*: cowrun: unknown workload 'nosuch' (see cowrun --list)\$" <<<"$output")" -eq 2 ]
}

@test "cluster --check: a host whose cowrun writes another results format fails before anything runs" {
	need_sshd
	# The same path here and there (loopback); only over ssh does this
	# cowrun claim another results format.
	fake=$BATS_TEST_TMPDIR/cowrun-format3
	cat >"$fake" <<-EOF
	#!/bin/sh
	if [ -n "\${SSH_CONNECTION:-}" ] && [ "\$2" = --version ]; then
		"$ROOT/bin/cowrun" --version
		echo "results format 99, workload ABI 99"
		exit 0
	fi
	exec "$ROOT/bin/cowrun" "\$@"
	EOF
	chmod +x "$fake"
	run --separate-stderr cluster --check --slf "$SSHD_DIR/two" --cowrun "$fake"
	[ "$status" -eq 255 ]
	assert_no_leftovers
	[ "$(grep -c '^FAIL .*has cowrun [0-9.]* results format 99, workload ABI 99, this is cowrun [0-9.]* results format [0-9]*, workload ABI [0-9]*' <<<"$output")" -eq 2 ]
	run --separate-stderr cluster --slf "$SSHD_DIR/two" --cowrun "$fake" -o "$BATS_TEST_TMPDIR/out" selftest --tasks 4
	[ "$status" -eq 255 ]
	[ ! -e "$BATS_TEST_TMPDIR/out" ]
}

@test "two hosts: sales stdout and reports are byte-identical to a local run; the joblogs name the hosts" {
	need_sshd
	local_run "$BATS_TEST_TMPDIR/local" "${SALES[@]}"
	[ "$ref_status" -eq 0 ]
	run --separate-stderr cluster --slf "$SSHD_DIR/two" -o "$BATS_TEST_TMPDIR/cluster" \
		--joblog "$BATS_TEST_TMPDIR/shards.log" --task-joblog "$BATS_TEST_TMPDIR/tasks.log" "${SALES[@]}"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[ "$output" = "$ref_out" ]
	[ -z "$stderr" ]
	diff -r -x '.cowrun-manifest.*' "$BATS_TEST_TMPDIR/local" "$BATS_TEST_TMPDIR/cluster"
	[ "$(ls "$BATS_TEST_TMPDIR/cluster" | wc -l)" -eq 12 ]
	# no staging directory left beside the reports
	[ -z "$(find "$BATS_TEST_TMPDIR" -maxdepth 1 -name '.cowrun-cluster.*')" ]
	# GNU Parallel's joblog: each shard once, on one of the two hosts, exit 0
	awk -F'\t' 'NR > 1 { n++; if ($7 != 0 || $2 !~ /key[12] root@127\.0\.0\.1$/) bad = 1 }
		END { exit !(n == 2 && !bad) }' "$BATS_TEST_TMPDIR/shards.log"
	grep -q 'cowrun-cluster-shard 0/2$' "$BATS_TEST_TMPDIR/shards.log"
	grep -q 'cowrun-cluster-shard 1/2$' "$BATS_TEST_TMPDIR/shards.log"
	# the task joblog: every store once, each on the host that ran its shard
	[ "$(tail -n +2 "$BATS_TEST_TMPDIR/tasks.log" | cut -f1 | sort -n | tr '\n' ' ')" = \
		"1 2 3 4 5 6 7 8 9 10 11 12 " ]
	awk -F'\t' 'NR > 1 && $2 !~ /key[12] root@127\.0\.0\.1$/ { exit 1 }' "$BATS_TEST_TMPDIR/tasks.log"
	hosts_clean
}

@test "two hosts: a Python script (cowrun python) gives a local run's stdout and reports" {
	need_sshd
	local script=$ROOT/tests/fixtures/python-cluster/squares.py
	printf 'four\n' >"$BATS_TEST_TMPDIR/in.txt"
	local_run "$BATS_TEST_TMPDIR/local" python "$script" --n 9 --input "$BATS_TEST_TMPDIR/in.txt"
	[ "$ref_status" -eq 0 ]
	run --separate-stderr cluster --slf "$SSHD_DIR/two" -o "$BATS_TEST_TMPDIR/cluster" \
		python "$script" --n 9 --input "$BATS_TEST_TMPDIR/in.txt"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	[ "$output" = "$ref_out" ]
	[ "$output" = "squares: 9, total 249" ]
	diff -r -x '.cowrun-manifest.*' "$BATS_TEST_TMPDIR/local" "$BATS_TEST_TMPDIR/cluster"
	[ "$(ls "$BATS_TEST_TMPDIR/cluster" | wc -l)" -eq 9 ]
	hosts_clean
}

@test "two hosts: an R script (cowrun r) and the file it source()s give a local run's stdout and reports" {
	need_sshd
	[ -e "$ROOT/build/workloads/r.so" ] || skip "no build/workloads/r.so (cowrun r is not built: R missing?)"
	local d=$BATS_TEST_TMPDIR script=$ROOT/tests/fixtures/r/squares.R
	printf 'four\n' >"$d/in.txt"
	local_run "$d/local" r "$script" 9 "$d/in.txt"
	[ "$ref_status" -eq 0 ]
	run --separate-stderr cluster --slf "$SSHD_DIR/two" -o "$d/cluster" --task-joblog "$d/tasks.log" \
		r "$script" 9 "$d/in.txt"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	[ "$output" = "$ref_out" ]
	[ "$output" = "squares: 9, total 249" ]
	diff -r -x '.cowrun-manifest.*' "$d/local" "$d/cluster"
	[ "$(ls "$d/cluster" | wc -l)" -eq 9 ]
	# the workers on the hosts ran the helper the script source()s beside it
	[ "$(cat "$d/cluster/square-0003.txt")" = "square-0003.txt: 14 (squares-label.R)" ]
	# both hosts ran tasks
	[ "$(awk -F'\t' 'NR > 1 { print $2 }' "$d/tasks.log" | sort -u | wc -l)" -eq 2 ]
	hosts_clean
}

@test "two hosts: a workload without reports (average) gives the same summary and no report directory" {
	need_sshd
	local_run "$BATS_TEST_TMPDIR/local" average --size 100000 --chunks 7
	run --separate-stderr cluster --slf "$SSHD_DIR/two" -o "$BATS_TEST_TMPDIR/cluster" \
		average --size 100000 --chunks 7
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	[ "$output" = "$ref_out" ]
	[ ! -e "$BATS_TEST_TMPDIR/local" ]
	[ ! -e "$BATS_TEST_TMPDIR/cluster" ]
}

@test "two hosts: failed tasks give the local run's summary, exit status and reports; a stale report goes" {
	need_sshd
	local args=(selftest --tasks 9 --report-bytes 100 --fail 2,7)
	local_run "$BATS_TEST_TMPDIR/local" "${args[@]}"
	[ "$ref_status" -eq 2 ]
	mkdir "$BATS_TEST_TMPDIR/cluster"
	echo "yesterday's" >"$BATS_TEST_TMPDIR/cluster/task-000007"
	run --separate-stderr cluster --slf "$SSHD_DIR/two" -o "$BATS_TEST_TMPDIR/cluster" "${args[@]}"
	[ "$status" -eq 2 ] || { echo "exit $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[ "$output" = "$ref_out" ]
	diff -r -x '.cowrun-manifest.*' "$BATS_TEST_TMPDIR/local" "$BATS_TEST_TMPDIR/cluster"
	# the merge's lines, each failure naming its shard and host
	[[ "$stderr" == *"task 2 (task-000002) failed: failed on purpose (--fail 2) (shard 0/2 on 127.0.0.1)"* ]]
	[[ "$stderr" == *"task 7 (task-000007) failed: failed on purpose (--fail 7) (shard 1/2 on 127.0.0.1)"* ]]
	[[ "$stderr" == *"cowrun: selftest: 2 of 9 tasks failed; the summary covers the other 7" ]]
	hosts_clean
}

@test "a host that dies in its shard: the shard is retried on the other host; --retries 0 fails with 254" {
	need_sshd
	local args=(selftest --tasks 10 --report-bytes 10)
	local_run "$BATS_TEST_TMPDIR/local" "${args[@]}"
	cat "$SSHD_DIR/h3" "$SSHD_DIR/h1" >"$BATS_TEST_TMPDIR/slf"
	# --cowrun cowrun: looked up on PATH here and on each host
	PATH=$ROOT/bin:$PATH run --separate-stderr cluster --slf "$BATS_TEST_TMPDIR/slf" --cowrun cowrun \
		--joblog "$BATS_TEST_TMPDIR/shards.log" -o "$BATS_TEST_TMPDIR/cluster" "${args[@]}"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[ "$output" = "$ref_out" ]
	diff -r -x '.cowrun-manifest.*' "$BATS_TEST_TMPDIR/local" "$BATS_TEST_TMPDIR/cluster"
	# both shards ended on host 1 (GNU Parallel logs a shard's last try only)
	[ "$(awk -F'\t' 'NR > 1 && $7 == 0 && $2 ~ /key1 / { n++ } END { print n }' "$BATS_TEST_TMPDIR/shards.log")" -eq 2 ]

	PATH=$ROOT/bin:$PATH run --separate-stderr cluster --slf "$BATS_TEST_TMPDIR/slf" --cowrun cowrun \
		--retries 0 -o "$BATS_TEST_TMPDIR/cluster2" "${args[@]}"
	[ "$status" -eq 254 ]
	assert_no_leftovers
	[ -z "$output" ]
	[[ "$stderr" == *"cowrun-cluster: shard "[01]"/2: failed on 'ssh -F "*"key3 root@127.0.0.1' (exit 137)"* ]]
	[[ "$stderr" == *"cowrun-cluster: no summary: a shard's results are missing"* ]]
	hosts_clean
}

@test "a host that is down fails the check: nothing runs (255); --skip-bad-hosts runs on the others" {
	need_sshd
	local args=(selftest --tasks 6)
	local_run "$BATS_TEST_TMPDIR/local" "${args[@]}"
	{ cat "$SSHD_DIR/two"; echo "ssh -F $SSHD_DIR/ssh_config -p 1 root@127.0.0.1"; } >"$BATS_TEST_TMPDIR/slf"
	run --separate-stderr cluster --slf "$BATS_TEST_TMPDIR/slf" "${args[@]}"
	[ "$status" -eq 255 ]
	[ -z "$output" ]
	[ "$(wc -l <<<"$stderr")" -eq 2 ]
	[[ "$stderr" == "cowrun-cluster: host 'ssh -F "*" -p 1 root@127.0.0.1': cannot log in: ssh: connect to host 127.0.0.1 port 1: Connection refused"$'\n'* ]]
	[[ "$stderr" == *$'\n'"cowrun-cluster: 1 of 3 hosts failed the check: nothing ran (--skip-bad-hosts runs on the others)" ]]
	run --separate-stderr cluster --check --slf "$BATS_TEST_TMPDIR/slf"
	[ "$status" -eq 255 ]
	[ "$(grep -c '^ok ' <<<"$output")" -eq 2 ]
	[ "$(grep -c '^FAIL ssh -F .* -p 1 root@127.0.0.1: cannot log in' <<<"$output")" -eq 1 ]
	run --separate-stderr cluster --slf "$BATS_TEST_TMPDIR/slf" --skip-bad-hosts "${args[@]}"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	[ "$output" = "$ref_out" ]
	[[ "$stderr" == *"leaving out 1 of 3 hosts; running on 2" ]]
}

@test "a host's N/ prefix, else -j, sets the workers cowrun forks there" {
	need_sshd
	{ echo "3/$(cat "$SSHD_DIR/h1")"; cat "$SSHD_DIR/h2"; } >"$BATS_TEST_TMPDIR/slf"
	run --separate-stderr cluster -v -j 1 --slf "$BATS_TEST_TMPDIR/slf" selftest --tasks 10
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	[ "$(grep -c '^\[127.0.0.1 shard [01]/2\] cowrun: fork: 3 workers' <<<"$stderr")" -eq 1 ]
	[ "$(grep -c '^\[127.0.0.1 shard [01]/2\] cowrun: fork: 1 workers' <<<"$stderr")" -eq 1 ]
	[ "$(grep -c '^cowrun-cluster: shard [01]/2 on 127.0.0.1: .* s under GNU Parallel, cowrun .* s' <<<"$stderr")" -eq 2 ]
}

# interrupt_run SIGNAL TARGET: start a slow two-host run under the reaper, in
# a process group of its own with SIGINT at its default (as a command typed
# at a terminal is), wait until both shards run cowrun on their hosts, then
# send SIGNAL to TARGET: "group" (Ctrl-C: the script and GNU Parallel) or
# "script" (a scheduler's SIGTERM to the script alone).  Sets status.
interrupt_run() {
	"$REAPER" perl -e '$SIG{INT} = "DEFAULT"; setpgrp(0, 0); exec @ARGV' \
		"$CLUSTER" --slf "$SSHD_DIR/two" -o "$BATS_TEST_TMPDIR/cluster" \
		selftest --tasks 6 --sleep-ms 20000 >"$BATS_TEST_TMPDIR/out" 2>"$BATS_TEST_TMPDIR/err" 3>&- &
	local pid=$! i script running=0
	for i in $(seq 300); do
		running=$(pgrep -a -f "$SSHD_DIR/host[12]/tmp/cowrun-cluster\..*/shard.res" |
			grep -o 'host[12]/tmp' | sort -u | wc -l)
		[ "$running" -eq 2 ] && break
		sleep 0.1
	done
	script=$(pgrep -P "$pid")
	[ -n "$script" ] || { echo "no cowrun-cluster process under the reaper" >&2; return 1; }
	# Not a vacuous stop: both shards were running.
	if [ "$running" -ne 2 ]; then
		echo "shards running after 30 s: $running of 2" >&2
		kill -TERM -- "-$script"
		wait "$pid"
		return 1
	fi
	if [ "$2" = group ]; then kill "-$1" -- "-$script"; else kill "-$1" "$script"; fi
	status=0
	wait "$pid" || status=$?
	cat "$BATS_TEST_TMPDIR/err" >&2
}

@test "Ctrl-C (SIGINT) or SIGTERM stops every shard on every host: 130 or 143, nothing left here or there" {
	need_sshd
	interrupt_run INT group
	[ "$status" -eq 130 ]
	grep -q 'cowrun-cluster: interrupted: 0 of 2 shards had finished; no summary' "$BATS_TEST_TMPDIR/err"
	[ ! -s "$BATS_TEST_TMPDIR/out" ]
	[ ! -e "$BATS_TEST_TMPDIR/cluster" ]
	[ -z "$(find "$BATS_TEST_TMPDIR" -maxdepth 1 -name '.cowrun-cluster.*')" ]
	hosts_clean
	interrupt_run TERM script
	[ "$status" -eq 143 ]
	grep -q 'cowrun-cluster: interrupted: 0 of 2 shards had finished; no summary' "$BATS_TEST_TMPDIR/err"
	[ -z "$(find "$BATS_TEST_TMPDIR" -maxdepth 1 -name '.cowrun-cluster.*')" ]
	hosts_clean
}
