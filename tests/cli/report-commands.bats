#!/usr/bin/env bats
# Reports that go through a command (--report-filter), to one
# (--report-to) or through a workload's own (cowrun_command()), with the
# runner's guarantees: the task fails when its command does, no report is
# left under its final name after a failure, a sink never sees a task that
# failed, the commands die with their task, and every run leaves no process
# behind (each runs under the reaper).

load helpers

SELF="selftest --tasks 6 --report-bytes 300"

setup() {
	OUT="$BATS_TEST_TMPDIR/out"
	SPOOL="$BATS_TEST_TMPDIR/spool"
	mkdir -p "$SPOOL"
}

# The reports of a plain run of ARGS, for comparison: $BATS_TEST_TMPDIR/plain.
plain_reports() {
	run --separate-stderr cowrun -j 2 -o "$BATS_TEST_TMPDIR/plain" "$@"
	[ "$status" -eq 0 ] || { echo "plain run failed: $stderr" >&2; return 1; }
}

@test "--report-filter gzip with --report-suffix .gz: gzip -d gives back a plain run's bytes, in every mode" {
	plain_reports $SELF
	for m in fork serial omp; do
		run --separate-stderr cowrun --mode "$m" -j 2 -o "$OUT.$m" \
			--report-filter 'gzip -n' --report-suffix .gz $SELF
		[ "$status" -eq 0 ] || { echo "$m: $stderr" >&2; return 1; }
		assert_no_leftovers
		for k in 0 1 2 3 4 5; do
			f=$(printf 'task-%06d' "$k")
			[ ! -e "$OUT.$m/$f" ]
			gzip -d < "$OUT.$m/$f.gz" | cmp - "$BATS_TEST_TMPDIR/plain/$f"
		done
		# The manifest lists the suffixed names.
		grep -q ' task-000005\.gz$' "$OUT.$m/.cowrun-manifest.selftest"
		assert_no_temporary "$OUT.$m"
	done
}

@test "a filter that fails: the task fails naming the command, its status and its last stderr line; no report" {
	run --separate-stderr cowrun -j 2 -o "$OUT" \
		--report-filter 'sh -c "if [ {#} = 3 ]; then echo first >&2; echo the printer is on fire >&2; exit 3; fi; cat"' $SELF
	[ "$status" -eq 1 ]
	assert_no_leftovers
	[[ "$output" == "tasks 5 of 6 merged,"* ]]
	line=$(printf '%s\n' "$stderr" | grep 'task 2 (task-000002) failed')
	# The last line of its stderr, not the first.
	[[ "$line" == *"exited with status 3: the printer is on fire" ]] || { echo "$line" >&2; return 1; }
	[ ! -e "$OUT/task-000002" ]
	[ -s "$OUT/task-000001" ]
	assert_no_temporary "$OUT"
}

@test "a filter killed by a signal fails its task; one that writes nothing leaves an empty report" {
	printf '#!/bin/sh\nkill -9 $$\n' > "$BATS_TEST_TMPDIR/suicide"
	chmod +x "$BATS_TEST_TMPDIR/suicide"
	run --separate-stderr cowrun -j 2 -o "$OUT" --report-filter "$BATS_TEST_TMPDIR/suicide" $SELF
	[ "$status" -eq 6 ]
	assert_no_leftovers
	[[ "$stderr" == *"task 0 (task-000000) failed: "*"killed by signal 9"* ]] || { echo "$stderr" >&2; return 1; }
	[ -z "$(ls "$OUT")" ]
	run --separate-stderr cowrun -j 2 -o "$OUT" --report-filter true $SELF
	[ "$status" -eq 0 ]
	for k in 0 5; do
		f=$(printf '%s/task-%06d' "$OUT" "$k")
		[ -f "$f" ] && [ ! -s "$f" ]
	done
}

@test "--retries runs a failed filter again; --resume-failed after a filter failure completes the reports" {
	plain_reports $SELF
	# Fails the first time for task 4 (number 5), then passes it through.
	run --separate-stderr cowrun -j 2 -o "$OUT" --retries 1 \
		--report-filter "sh -c 'if [ {#} = 5 ] && mkdir $SPOOL/once 2>/dev/null; then exit 1; fi; cat'" $SELF
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	diff -r -x '.cowrun-manifest.*' "$BATS_TEST_TMPDIR/plain" "$OUT"
	rm -rf "$OUT"
	run --separate-stderr cowrun -j 2 -o "$OUT" --joblog "$BATS_TEST_TMPDIR/log" \
		--report-filter "sh -c '[ {#} != 2 ] || exit 4; cat'" $SELF
	[ "$status" -eq 1 ]
	[ ! -e "$OUT/task-000001" ]
	run --separate-stderr cowrun -j 2 -o "$OUT" --joblog "$BATS_TEST_TMPDIR/log" --resume-failed \
		--report-filter cat $SELF
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	[ "$(grep -c . "$BATS_TEST_TMPDIR/log")" -eq 8 ]   # header, 6, and the one rerun
	diff -r -x '.cowrun-manifest.*' "$BATS_TEST_TMPDIR/plain" "$OUT"
}

@test "a filter that outlives its task's --timeout is killed with it: no report, nothing left running" {
	run --separate-stderr cowrun -j 2 -o "$OUT" --timeout 1 \
		--report-filter "sh -c 'if [ {#} = 2 ]; then exec sleep 300; fi; cat'" $SELF
	[ "$status" -eq 1 ]
	assert_no_leftovers
	[[ "$stderr" == *"task 1 (task-000001) failed: timed out after"* ]] || { echo "$stderr" >&2; return 1; }
	[ ! -e "$OUT/task-000001" ]
	[ -s "$OUT/task-000002" ]
	assert_no_temporary "$OUT"
}

@test "--halt now takes running filters down with their workers" {
	run --separate-stderr cowrun -j 2 -o "$OUT" --halt now,fail=1 \
		--report-filter "sh -c 'if [ {#} != 1 ]; then exec sleep 300; fi; exit 1'" $SELF
	[ "$status" -ne 0 ]
	assert_no_leftovers
	assert_no_temporary "$OUT"
}

@test "--report-to: whole reports reach the sink only after run() succeeded, none is kept, a task that fails never reaches it" {
	plain_reports $SELF
	run --separate-stderr cowrun -j 2 -o "$OUT" --report-to "sh -c 'cat > $SPOOL/{/}'" $SELF --fail 3
	[ "$status" -eq 1 ]
	assert_no_leftovers
	[ ! -e "$SPOOL/task-000003" ]
	for k in 0 1 2 4 5; do
		f=$(printf 'task-%06d' "$k")
		cmp "$SPOOL/$f" "$BATS_TEST_TMPDIR/plain/$f"
	done
	# No file kept, no manifest either: nothing in the directory.
	[ -z "$(ls -A "$OUT")" ]
}

@test "a sink that fails fails its task, naming it" {
	run --separate-stderr cowrun -j 2 -o "$OUT" --report-to "sh -c 'cat >/dev/null; [ {#} != 4 ] || { echo no paper >&2; exit 5; }'" $SELF
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"task 3 (task-000003) failed: "*"exited with status 5: no paper"* ]] || { echo "$stderr" >&2; return 1; }
	[ -z "$(ls -A "$OUT")" ]
}

@test "a report is renamed only after its filter finished" {
	# The filter finds neither its report's final name nor anything but
	# its own input while it runs.
	run --separate-stderr cowrun -j 2 -o "$OUT" \
		--report-filter "sh -c '[ ! -e $OUT/{/} ] || exit 7; cat'" $SELF
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	[ -s "$OUT/task-000004" ]
}

@test "{%} is the worker's slot, 1 to -j: never two commands at once on a slot, through a crash's replacement and a retry" {
	# A printer per slot: a lock (mkdir) held while it prints; two at
	# once on one slot would fail the second.
	printer="sh -c 'mkdir $SPOOL/busy.{%} || exit 9; cat >> $SPOOL/slot.{%}; echo {#} >> $SPOOL/jobs.{%}; rmdir $SPOOL/busy.{%}'"
	run --separate-stderr cowrun -j 2 -o "$OUT" --retries 1 --report-to "$printer" \
		selftest --tasks 12 --report-bytes 640 --crash 5 --sleep-ms 20
	[ "$status" -eq 1 ]   # task 5 crashes on every attempt
	assert_no_leftovers
	ls "$SPOOL" | grep -v '^\(slot\|jobs\)\.[12]$' && return 1
	# 11 whole reports of 10 lines each, over both printers, every task once.
	[ "$(cat "$SPOOL"/slot.* | wc -l)" -eq 110 ]
	[ "$(cat "$SPOOL"/jobs.* | sort -n | tr '\n' ' ')" = "1 2 3 4 5 7 8 9 10 11 12 " ]
	# Each printed report is whole: its 10 lines are one task's, in order.
	for f in "$SPOOL"/slot.*; do
		awk 'NR % 10 == 1 { t = $2; if ($4 != 0) exit 1 } $2 != t { exit 1 }' "$f"
	done
	# Serial mode is slot 1, omp the thread number plus 1.
	rm -f "$SPOOL"/*
	run --separate-stderr cowrun --mode serial -o "$OUT" --report-to "sh -c 'echo {%} >> $SPOOL/s'" $SELF
	[ "$(sort -u "$SPOOL/s")" = 1 ]
	run --separate-stderr cowrun --mode omp -j 2 -o "$OUT" --report-to "sh -c 'echo {%} >> $SPOOL/o'" \
		selftest --tasks 20 --report-bytes 10 --sleep-ms 10
	[ "$(sort -u "$SPOOL/o" | tr '\n' ' ')" = "1 2 " ]
}

@test "replacement strings: a report name with a space and a quote reaches a direct command and a shell one intact" {
	suffix=" it's \$(touch PWNED) \"x\""
	run --separate-stderr cowrun -j 2 -o "$OUT" --report-suffix "$suffix" \
		--report-to "cp /dev/stdin $SPOOL/direct.{/}" $SELF
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	[ -s "$SPOOL/direct.task-000003$suffix" ]
	run --separate-stderr cowrun -j 2 -o "$OUT" --report-suffix "$suffix" \
		--report-to "cat > $SPOOL/shell.{/}; echo {#}:{%} >> $SPOOL/numbers" $SELF
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	[ -s "$SPOOL/shell.task-000005$suffix" ]
	[ ! -e PWNED ] && [ ! -e "$OUT/PWNED" ] && [ ! -e "$SPOOL/PWNED" ]
	[ "$(cut -d: -f1 "$SPOOL/numbers" | sort -n | tr '\n' ' ')" = "1 2 3 4 5 6 " ]
	# -v says which way each runs.
	run --separate-stderr cowrun -v -j 2 -o "$OUT" --report-filter 'gzip -n' --report-to 'cat > /dev/null; true' $SELF
	[[ "$stderr" == *"--report-filter: no shell syntax: split into words and run directly"* ]]
	[[ "$stderr" == *"--report-to: shell syntax: runs under /bin/sh -c, each value shell-quoted"* ]]
}

@test "a command naming a missing program: one clear line per task, the task failed, nothing kept" {
	# Refused before the setup (report-checks.bats) unless the check is
	# left to where it runs: then, or for a program gone since, each task.
	export COWRUN_CHECK_COMMANDS=0
	run --separate-stderr cowrun -j 2 -o "$OUT" --report-filter 'no-such-filter -9' selftest --tasks 2 --report-bytes 10
	[ "$status" -eq 2 ]
	assert_no_leftovers
	[ "$(printf '%s\n' "$stderr" | grep -c "failed: cannot run 'no-such-filter': No such file or directory$")" -eq 2 ]
	[ -z "$(ls "$OUT")" ]
}

@test "bad options: an empty command, a suffix with a slash, a workload that writes no reports; the dry run shows the route" {
	run --separate-stderr cowrun --report-filter '  ' selftest --tasks 2
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --report-filter: empty command"
	run --separate-stderr cowrun --report-suffix a/b selftest --tasks 2
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --report-suffix: bad value 'a/b'*"
	run --separate-stderr cowrun --report-to cat average
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: average writes no reports:*"
	run --separate-stderr cowrun --dry-run -o "$OUT" --report-filter 'gzip -n' --report-suffix .gz $SELF
	[ "$status" -eq 0 ]
	[[ "$output" == *"create   $OUT/task-000005.gz  (through --report-filter)"* ]]
	[[ "$output" == *"filter     gzip -n  (run directly"* ]]
	[ ! -e "$OUT" ]
}

@test "commands start with default signals and an empty mask, in a process group of their own under cowrun-supervise" {
	# A worker ignores SIGINT; the filter must not.  grep writes its own
	# status lines as the report.
	run --separate-stderr cowrun -j 2 -o "$OUT" --report-filter 'grep -e SigIgn -e SigBlk -e NSpgid -e PPid /proc/self/status' \
		selftest --tasks 2 --report-bytes 10
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	grep -q '^SigIgn:[[:space:]]*0*$' "$OUT/task-000000"
	grep -q '^SigBlk:[[:space:]]*0*$' "$OUT/task-000000"
	# It leads its own process group (its supervisor signals that group);
	# its parent is the supervisor (its name in the report, as grep saw it).
	pgid=$(awk '/^NSpgid:/ { print $2 }' "$OUT/task-000000")
	ppid=$(awk '/^PPid:/ { print $2 }' "$OUT/task-000000")
	[ "$pgid" != "$ppid" ]
	printf '#!/bin/sh\ncat /proc/$PPID/comm\nps -o pid=,pgid= -p $$\n' > "$BATS_TEST_TMPDIR/who"
	chmod +x "$BATS_TEST_TMPDIR/who"
	run --separate-stderr cowrun -o "$OUT.2" --report-filter "$BATS_TEST_TMPDIR/who" selftest --tasks 1 --report-bytes 10
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	[ "$(head -n 1 "$OUT.2/task-000000")" = cowrun-supervis ]
	read -r pid pgid < <(tail -n 1 "$OUT.2/task-000000")
	[ "$pid" = "$pgid" ]
}

@test "commands are spawned sharing the worker's memory (vfork-like), never by fork()" {
	command -v strace >/dev/null
	# (Under make check-asan, without LeakSanitizer, which cannot work under ptrace.)
	run --separate-stderr env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		"$REAPER" strace -f -qq -e trace=clone,clone3,fork,vfork -o "$BATS_TEST_TMPDIR/trace" \
		"$COWRUN" -j 2 -o "$OUT" --report-filter cat selftest --tasks 4 --report-bytes 10 --command cat
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	# The parent forks 2 workers; every other process creation is a spawn.
	spawns=$(grep -c 'CLONE_VM' "$BATS_TEST_TMPDIR/trace" || true)
	[ "$spawns" -ge 8 ] || { cat "$BATS_TEST_TMPDIR/trace" >&2; return 1; }
	copies=$(grep -E 'clone3?\(|fork\(' "$BATS_TEST_TMPDIR/trace" | grep -vc 'CLONE_VM' || true)
	[ "$copies" -eq 2 ] || { cat "$BATS_TEST_TMPDIR/trace" >&2; return 1; }
}

@test "cowrun_command(): a workload's own filter writes its report; its failure fails the task; early exit is EPIPE, not a killed run" {
	plain_reports $SELF
	run --separate-stderr cowrun -j 2 -o "$OUT" --report-suffix .gz $SELF --command 'gzip -n'
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	gzip -d < "$OUT/task-000004.gz" | cmp - "$BATS_TEST_TMPDIR/plain/task-000004"
	run --separate-stderr cowrun -j 2 -o "$OUT.2" $SELF --command "sh -c '[ {#} != 2 ] || exit 6; cat'"
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"task 1 (task-000001) failed: "*"exited with status 6"* ]] || { echo "$stderr" >&2; return 1; }
	[ ! -e "$OUT.2/task-000001" ]
	# A command that stops reading: the write fails, the task fails,
	# and in serial mode the run goes on (SIGPIPE never kills it).
	for m in serial fork; do
		run --separate-stderr cowrun --mode "$m" -o "$OUT.$m" selftest --tasks 3 --report-bytes 4000000 --command 'head -c 10'
		[ "$status" -eq 3 ] || { echo "$m: status $status: $stderr" >&2; return 1; }
		[[ "$stderr" == *"task 0 (task-000000) failed: cannot write to 'head': Broken pipe"* ]] || { echo "$stderr" >&2; return 1; }
		assert_no_leftovers
	done
	# A program that is not there: each task fails with one line naming
	# it; no worker (nor, in serial mode, the run) dies of it.
	for m in serial fork; do
		run --separate-stderr cowrun --mode "$m" -o "$OUT.missing-$m" selftest --tasks 3 --report-bytes 10 --command 'no-such-printer-driver {/}'
		[ "$status" -eq 3 ] || { echo "$m: status $status: $stderr" >&2; return 1; }
		[ "$(grep -c "failed: cannot run 'no-such-printer-driver': No such file or directory$" <<<"$stderr")" -eq 3 ] ||
			{ echo "$m: $stderr" >&2; return 1; }
		[ -z "$(ls "$OUT.missing-$m")" ]
		assert_no_leftovers
	done
}

@test "a Python workload's reports go through the filter and to the sink like a C workload's" {
	script="$ROOT/tests/fixtures/python-cluster/squares.py"
	run --separate-stderr cowrun -j 2 -o "$BATS_TEST_TMPDIR/plain" python "$script"
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	run --separate-stderr cowrun -j 2 -o "$OUT" --report-filter 'gzip -n' --report-suffix .gz python "$script"
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	for f in "$BATS_TEST_TMPDIR"/plain/*.txt; do
		gzip -d < "$OUT/${f##*/}.gz" | cmp - "$f"
	done
	run --separate-stderr cowrun -j 2 -o "$OUT.to" --report-to "sh -c 'cat > $SPOOL/{/}'" python "$script"
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	diff -r -x '.cowrun-manifest.*' "$BATS_TEST_TMPDIR/plain" "$SPOOL"
}

@test "--timeout reaches a sink too: SIGTERM from its supervisor, and the grace period to cancel its job" {
	# The sink traps SIGTERM and takes a moment to cancel (0.3 s, well
	# inside the 2 s grace a task gets); SIGKILL alone would give it none.
	# The sink runs in a group of its own under cowrun-supervise, which
	# passes the worker's end on (tests/cli/robust.bats has a task's own
	# child, in the worker's group, that the parent signals).
	sink="sh -c 'trap \"sleep 0.3; echo cancelled > $SPOOL/term.{#}; exit 1\" TERM; cat > /dev/null; [ {#} != 2 ] || { sleep 300 & wait; }'"
	# (4 s: the sink must have set its trap by then, even on a loaded machine.)
	run --separate-stderr cowrun -j 2 -o "$OUT" --timeout 4 --report-to "$sink" $SELF
	[ "$status" -ge 1 ]
	assert_no_leftovers
	[[ "$stderr" == *"task 1 (task-000001) failed: timed out after"* ]] || { echo "$stderr" >&2; return 1; }
	[ "$(cat "$SPOOL/term.2")" = cancelled ]
}

@test "a worker that crashes while its command runs: the command is killed and reaped, not waited for" {
	# The command outlives its input by far; the crash must take it down.
	REAPER_TIMEOUT=120 run --separate-stderr cowrun -j 2 -o "$OUT" \
		selftest --tasks 4 --report-bytes 10 --crash 1 --command "sh -c 'cat; [ {#} != 2 ] || exec sleep 3600'"
	[ "$status" -eq 1 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[[ "$stderr" == *"task 1 (task-000001) failed: worker "*"killed by SIGSEGV"* ]] || { echo "$stderr" >&2; return 1; }
}

@test "{} is this run's whole report in a private directory, {/} its name: inside an older run's output directory the sink copies this run's reports" {
	# An older run's same-named reports, 64 bytes each, where the run starts.
	run --separate-stderr cowrun -j 2 -o "$BATS_TEST_TMPDIR/old" selftest --tasks 6 --report-bytes 64
	[ "$status" -eq 0 ]
	plain_reports $SELF
	mkdir "$BATS_TEST_TMPDIR/printed"
	cd "$BATS_TEST_TMPDIR/old"
	for m in fork serial omp; do
		rm -f ../printed/*
		run --separate-stderr cowrun --mode "$m" -j 2 -o "$OUT.$m" --report-to 'cp {} ../printed/{/}' $SELF
		[ "$status" -eq 0 ] || { echo "$m: $stderr" >&2; return 1; }
		assert_no_leftovers
		for k in 0 1 2 3 4 5; do
			f=$(printf 'task-%06d' "$k")
			cmp "../printed/$f" "$BATS_TEST_TMPDIR/plain/$f"
		done
		# Nothing kept, no private directory left.
		[ -z "$(ls -A "$OUT.$m")" ] || { ls -A "$OUT.$m" >&2; return 1; }
	done
	# Where {} stands: an absolute path, {/} its name, in a 0700
	# directory of the output directory; under the filter the report as
	# run() wrote it, under the sink the filter's output (.gz).
	cat > "$BATS_TEST_TMPDIR/check" <<-'SH'
	#!/bin/sh
	case $1 in /*) ;; *) echo "not absolute: $1" >&2; exit 11 ;; esac
	[ "${1##*/}" = "$2" ] || { echo "${1##*/} is not $2" >&2; exit 12; }
	[ "$(stat -c %a "${1%/*}")" = 700 ] || { echo "${1%/*} not 0700" >&2; exit 13; }
	d=${1%/*}
	[ "${d%/*}" = "$3" ] || { echo "$d is not in $3" >&2; exit 14; }
	exec gzip -n -c "$1"
	SH
	chmod +x "$BATS_TEST_TMPDIR/check"
	mkdir "$OUT.gz"
	out=$(realpath "$OUT.gz")
	rm -f ../printed/*
	run --separate-stderr cowrun -j 2 -o "$OUT.gz" --report-suffix .gz \
		--report-filter "$BATS_TEST_TMPDIR/check {} {/} $out" --report-to 'cp {} ../printed/{/}' $SELF
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	for k in 0 1 2 3 4 5; do
		f=$(printf 'task-%06d' "$k")
		gzip -d < "../printed/$f.gz" | cmp - "$BATS_TEST_TMPDIR/plain/$f"
	done
	[ -z "$(ls -A "$OUT.gz")" ]
}

@test "{}'s private directory is gone after a failing command and after a worker killed while its command runs" {
	run --separate-stderr cowrun -j 2 -o "$OUT" --report-filter "sh -c 'cat {}; [ {#} != 3 ] || exit 4'" $SELF
	[ "$status" -eq 1 ]
	assert_no_leftovers
	[[ "$stderr" == *"task 2 (task-000002) failed: "*"exited with status 4"* ]] || { echo "$stderr" >&2; return 1; }
	assert_no_temporary "$OUT"
	[ "$(ls "$OUT" | wc -l)" -eq 5 ]
	# The worker of task 1 is killed while its sink holds {}: the
	# directory's name holds the worker's pid.
	cowrun -j 2 -o "$OUT.k" --report-to "sh -c 'touch $SPOOL/ready.{#}; [ {#} != 2 ] || exec sleep 300; cat {} >/dev/null'" \
		$SELF >"$BATS_TEST_TMPDIR/k.out" 2>&1 &
	bg=$!
	wait_for 30 "task 1's sink" test -e "$SPOOL/ready.2"
	dir=$(ls -d "$OUT.k"/.cowrun-task-000001.*.tmp)
	[ -e "$dir/task-000001" ]
	pid=${dir%.*.tmp}
	pid=${pid##*.}
	kill -9 "$pid"
	local rc=0
	wait "$bg" || rc=$?
	bg=
	[ "$rc" -eq 1 ] || { echo "status $rc: $(cat "$BATS_TEST_TMPDIR/k.out")" >&2; return 1; }
	grep -q "task 1 (task-000001) failed: worker .*killed by SIGKILL" "$BATS_TEST_TMPDIR/k.out" ||
		{ cat "$BATS_TEST_TMPDIR/k.out" >&2; return 1; }
	assert_no_temporary "$OUT.k"
	[ -z "$(ls -A "$OUT.k")" ]
}

@test "{.}, {/.} and {//} are refused in one line; in cowrun_command() {} is refused (the command writes the report) and {/} is the name" {
	for s in '{.}' '{/.}' '{//}'; do
		run --separate-stderr cowrun -o "$OUT" --report-to "lp -t $s" $SELF
		[ "$status" -eq 255 ] || { echo "$s: $status $stderr" >&2; return 1; }
		assert_one_line_error "*--report-to: $s is not filled in: cowrun knows {} (the complete report's path), {/} (its name)*"
		run --separate-stderr cowrun -o "$OUT" --report-filter "sh -c 'cat > x$s'" $SELF
		[ "$status" -eq 255 ]
		assert_one_line_error "*--report-filter: $s is not filled in*"
	done
	[ ! -e "$OUT" ]
	run --separate-stderr cowrun -j 2 -o "$OUT" selftest --tasks 3 --report-bytes 10 --command 'cp /dev/stdin {}'
	[ "$status" -eq 3 ]
	assert_no_leftovers
	[ "$(grep -c "failed: cowrun_command(): {} is the complete report's path, and this command writes the report: use {/}, its name$" <<<"$stderr")" -eq 3 ] ||
		{ echo "$stderr" >&2; return 1; }
	[ -z "$(ls -A "$OUT")" ]
	run --separate-stderr cowrun -j 2 -o "$OUT.name" selftest --tasks 3 --report-bytes 10 --command "sh -c 'cat; echo; echo {/}'"
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	[ "$(tail -n 1 "$OUT.name/task-000002")" = task-000002 ]
}

@test "a '|' pipeline is refused in one line that says why and points to a script; || and a quoted or substituted '|' are not pipelines" {
	for cmd in 'sort | gzip -n' '{ head -c 1000; exit 3; } | cat' '(sort | gzip)'; do
		for opt in --report-filter --report-to; do
			run --separate-stderr cowrun -o "$OUT" "$opt" "$cmd" $SELF
			[ "$status" -eq 255 ] || { echo "$opt $cmd: $status $stderr" >&2; return 1; }
			assert_one_line_error "*$opt: a '|' pipeline hides a failing stage (/bin/sh has no pipefail; its status is the last stage's): write the stages in a script that checks each*"
		done
	done
	[ ! -e "$OUT" ]
	run --separate-stderr cowrun -j 2 -o "$OUT" selftest --tasks 3 --report-bytes 10 --command 'tr a b | cat'
	[ "$status" -eq 3 ]
	[ "$(grep -c "failed: cowrun_command(): a '|' pipeline hides a failing stage" <<<"$stderr")" -eq 3 ] || { echo "$stderr" >&2; return 1; }
	# The script the refusal points to: a failing first stage fails the
	# task and no report is committed.
	printf '#!/bin/bash\nset -o pipefail\n{ head -c 100; [ "$1" != 2 ] || exit 3; } | cat\n' > "$BATS_TEST_TMPDIR/stages"
	chmod +x "$BATS_TEST_TMPDIR/stages"
	run --separate-stderr cowrun -j 2 -o "$OUT" --report-filter "$BATS_TEST_TMPDIR/stages {#}" $SELF
	[ "$status" -eq 1 ]
	assert_no_leftovers
	[[ "$stderr" == *"task 1 (task-000001) failed: "*"exited with status 3"* ]] || { echo "$stderr" >&2; return 1; }
	[ ! -e "$OUT/task-000001" ] && [ "$(wc -c < "$OUT/task-000002")" -eq 100 ]
	assert_no_temporary "$OUT"
	# Not pipelines.
	run --separate-stderr cowrun -j 2 -o "$OUT.ok" --report-filter "cat || exit 1" \
		--report-to "sh -c 'cat > $SPOOL/\$(echo {/} | tr a-z A-Z)'" $SELF
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	[ -s "$SPOOL/TASK-000005" ]
}
