#!/usr/bin/env bats
# Nothing silently wrong with the files a run leaves (issue 12): a joblog
# cut off by a full disk is repaired by --resume, any other bad joblog line
# is named; one run at a time on a joblog (its lock); stale temporary files
# of this host's dead runs are removed, nobody else's; messages keep their
# reason however long the value they quote; --help, --list and --version
# fail when standard output cannot be written.

load helpers

teardown() {
	stop_background_run
	if [ -n "${mnt:-}" ] && mountpoint -q "$mnt"; then
		umount "$mnt"
	fi
}

# Every line of joblog FILE has 9 tab-separated fields and the file ends in
# a newline.
well_formed_joblog() {
	[ "$(tail -c 1 "$1" | od -An -tx1 | tr -d ' ')" = 0a ] || { echo "$1: no final newline" >&2; return 1; }
	awk -F'\t' 'NF != 9 { print FILENAME ": line " NR " has " NF " fields"; bad = 1 } END { exit bad }' "$1" >&2
}

ARGS="selftest --tasks 6 --result-bytes 16"

@test "safety: --resume drops a last joblog line cut at any byte; its task runs again; the summary is a clean run's" {
	d=$BATS_TEST_TMPDIR
	run --separate-stderr cowrun -j 2 $ARGS
	[ "$status" -eq 0 ]
	clean=$output
	# A whole run's joblog gives task 6's line; a run of tasks 1-5 gives
	# the joblog and journal an interrupted run would have left.
	cowrun -j 2 --joblog "$d/whole" $ARGS >/dev/null
	line=$(awk -F'\t' '$1 == 6' "$d/whole")
	[ -n "$line" ]
	cowrun -j 2 --joblog "$d/five" --tasks 0-4 $ARGS >/dev/null
	cases=0
	for ((cut = 1; cut <= ${#line}; cut++)); do
		part=${line:0:cut}
		variants=("$part")
		# Cut at a tab or earlier, then a newline: too few fields.
		tabs=${part//[^$'\t']/}
		[ "${#tabs}" -ge 8 ] || variants+=("$part"$'\n')
		for v in "${variants[@]}"; do
			cp "$d/five" "$d/log"
			cp "$d/five.res" "$d/log.res"
			printf '%s' "$v" >>"$d/log"
			run --separate-stderr cowrun -j 2 --joblog "$d/log" --resume $ARGS
			[ "$status" -eq 0 ] || { echo "cut $cut: status $status: $stderr" >&2; return 1; }
			[ "$output" = "$clean" ]
			assert_one_line_error "cowrun: --resume: '$d/log': line 7 was cut off (*): dropped it; its task runs again*"
			well_formed_joblog "$d/log"
			# The cut line is gone; task 6 ran again: one line each.
			[ "$(tail -n +2 "$d/log" | cut -f1 | sort -n | tr '\n' ' ')" = "1 2 3 4 5 6 " ]
			cases=$((cases + 1))
		done
	done
	[ "$cases" -gt 60 ]
}

@test "safety: a joblog whose header alone is cut off is a first run's" {
	d=$BATS_TEST_TMPDIR
	run --separate-stderr cowrun $ARGS
	clean=$output
	printf 'Seq\tHost\tStart' >"$d/log"
	run --separate-stderr cowrun --joblog "$d/log" --resume $ARGS
	[ "$status" -eq 0 ]
	[ "$output" = "$clean" ]
	assert_one_line_error "cowrun: --resume: '$d/log': line 1 was cut off*"
	well_formed_joblog "$d/log"
	[ "$(wc -l <"$d/log")" -eq 7 ]
}

# refused_joblog LINE WHY: the joblog with its line LINE replaced by the
# text on stdin is refused naming LINE and WHY, and left as it was.
refused_joblog() {
	local d=$BATS_TEST_TMPDIR
	awk -v n="$1" -v text="$(cat)" 'NR == n { print text; next } { print }' "$d/good" >"$d/log"
	cp "$d/good.res" "$d/log.res"
	cp "$d/log" "$d/before"
	run --separate-stderr cowrun --joblog "$d/log" --resume $ARGS
	[ "$status" -eq 255 ] || { echo "status $status: $stderr" >&2; return 1; }
	[ -z "$output" ]
	assert_one_line_error "cowrun: --resume: '$d/log': line $1: $2"
	cmp "$d/log" "$d/before"
	cmp "$d/log.res" "$d/good.res"
}

@test "safety: every other malformed joblog line is refused with its line number and why; nothing changes" {
	d=$BATS_TEST_TMPDIR
	cowrun --joblog "$d/good" $ARGS >/dev/null
	printf '3\t:\t17\t0.1\n' | refused_joblog 3 "expected 9 tab-separated fields, found 4"
	printf '' | refused_joblog 4 "expected 9 tab-separated fields, found 1"
	printf '2\t:\t17.5\t0.1\t0\t16\tx\t0\tselftest task-000001\n' | refused_joblog 3 "Exitval is 'x', not a number"
	printf 'two\t:\t17.5\t0.1\t0\t16\t0\t0\tselftest task-000001\n' | refused_joblog 7 "Seq is 'two', not a number"
	printf '0\t:\t17.5\t0.1\t0\t16\t0\t0\tselftest task-000001\n' | refused_joblog 2 "Seq is 0*"
	printf '2\t:\t17.5\t  0.100\t0\t-16\t0\t0\tselftest task-000001\n' | refused_joblog 5 "Receive is '-16', not a number"
	printf 'Seq Host Starttime\n' | refused_joblog 1 "expected GNU Parallel's joblog header*"
	# Another workload's line keeps its own message.
	printf '2\t:\t17.5\t0.1\t0\t16\t0\t0\taverage chunk-1\n' >/dev/null
	awk 'NR == 4 { sub(/selftest/, "average") } { print }' "$d/good" >"$d/log"
	run --separate-stderr cowrun --joblog "$d/log" --resume $ARGS
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --joblog: '$d/log' line 4 is not a selftest task*"
}

@test "safety: --resume after a real full disk (a 64 KiB tmpfs) cut the joblog: repaired, the summary is a clean run's" {
	d=$BATS_TEST_TMPDIR
	mnt=$d/mnt
	mkdir "$mnt"
	mount -t tmpfs -o size=64k tmpfs "$mnt" 2>"$d/mount.err" ||
		skip "cannot mount a tmpfs here (needs root): $(cat "$d/mount.err")"
	args="selftest --tasks 300 --result-bytes 16"
	run --separate-stderr cowrun -j 2 $args
	[ "$status" -eq 0 ]
	clean=$output
	# The joblog lies on the small disk, its journal beside the link.
	ln -s "$mnt/log" "$d/log"
	# Leave the joblog one 4 KiB page: about 80 of the 300 lines.
	head -c $((60 * 1024)) /dev/zero >"$mnt/fill" || true
	run --separate-stderr cowrun -j 2 --joblog "$d/log" $args
	[ "$status" -eq 254 ] || { echo "status $status: $stderr" >&2; return 1; }
	[[ "$stderr" == *"--joblog: a write failed: the joblog is incomplete"* ]]
	size=$(stat -c %s "$mnt/log")
	[ "$size" -gt 1000 ] && [ "$size" -lt 8192 ]
	cut_off=1
	[ "$(tail -c 1 "$mnt/log" | od -An -tx1 | tr -d ' ')" != 0a ] || cut_off=0
	nlines=$(wc -l <"$mnt/log")
	rm "$mnt/fill"
	run --separate-stderr cowrun -j 2 --joblog "$d/log" --resume $args
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	[ "$output" = "$clean" ]
	if [ "$cut_off" -eq 1 ]; then
		assert_one_line_error "cowrun: --resume: '$d/log': line $((nlines + 1)) was cut off*"
	fi
	well_formed_joblog "$mnt/log"
	[ "$(wc -l <"$mnt/log")" -eq "$nlines" ]
}

@test "safety: a second run on a joblog in use is refused in one line naming the holder; the first's joblog is intact" {
	d=$BATS_TEST_TMPDIR
	"$REAPER" "$COWRUN" -j 2 --joblog "$d/log" selftest --tasks 4 --sleep-ms 5000 --mark-start "$d/started" >"$d/first" 2>"$d/err" &
	bg=$!
	wait_for 30 "a task to start" started_at_least "$d/started" 1
	pid=$(cowrun_of "$bg")
	for resume in "" --resume; do
		COWRUN_LOCK_WAIT=0.3 run --separate-stderr cowrun --joblog "$d/log" $resume --stats "$d/stats$resume" selftest --tasks 4
		[ "$status" -eq 255 ] || { echo "status $status: $stderr" >&2; return 1; }
		[ -z "$output" ]
		assert_one_line_error "cowrun: --joblog: '$d/log' is in use by another cowrun run (pid $pid): gave up after 0.3 s"
		[ ! -e "$d/stats$resume" ]
	done
	# +FILE appends, but not while another run writes.
	COWRUN_LOCK_WAIT=0 run --separate-stderr cowrun --joblog "+$d/log" selftest --tasks 4
	[ "$status" -eq 255 ]
	status=0
	wait "$bg" || status=$?
	[ "$status" -eq 0 ] || { echo "first run: $status: $(cat "$d/err")" >&2; return 1; }
	well_formed_joblog "$d/log"
	[ "$(tail -n +2 "$d/log" | cut -f1 | sort -n | tr '\n' ' ')" = "1 2 3 4 " ]
	[ "$(awk -F'\t' 'NR > 1 && $7 == 0' "$d/log" | wc -l)" -eq 4 ]
}

@test "safety: a second run waits for the joblog's lock a bounded time, and runs if it comes free" {
	d=$BATS_TEST_TMPDIR
	"$REAPER" "$COWRUN" -j 2 --joblog "$d/log" selftest --tasks 2 --sleep-ms 500 --mark-start "$d/started" >"$d/first" 2>"$d/err" &
	bg=$!
	wait_for 30 "a task to start" started_at_least "$d/started" 1
	COWRUN_LOCK_WAIT=60 run --separate-stderr cowrun --joblog "+$d/log" selftest --tasks 2
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	wait "$bg"
	# Both runs' lines, none torn: the second appended after the first.
	well_formed_joblog "$d/log"
	[ "$(wc -l <"$d/log")" -eq 5 ]
}

@test "safety: a joblog a refused run created is removed again; an existing one is untouched" {
	d=$BATS_TEST_TMPDIR
	run --separate-stderr cowrun --joblog "$d/log" selftest --tasks 3 --no-such-option
	[ "$status" -eq 255 ]
	[ ! -e "$d/log" ]
	cowrun --joblog "$d/log" selftest --tasks 3 >/dev/null
	cp "$d/log" "$d/before"
	run --separate-stderr cowrun --joblog "$d/log" selftest --tasks 3 --no-such-option
	[ "$status" -eq 255 ]
	cmp "$d/log" "$d/before"
}

# This host's tag in temporary names: its name with '.' and the like as '_'.
host_tag() {
	printf '%s' "$(uname -n)" | tr -c 'A-Za-z0-9_-' '_'
}

# A pid no process has here now.
dead_pid() {
	local pid
	pid=$(( $(cat /proc/sys/kernel/pid_max) - 1 ))
	while kill -0 "$pid" 2>/dev/null; do pid=$((pid - 1)); done
	echo "$pid"
}

@test "safety: a run removes this host's stale temporary files of dead pids, and nothing else" {
	d=$BATS_TEST_TMPDIR
	host=$(host_tag)
	dead=$(dead_pid)
	mkdir "$d/out"
	tag=0123456789abcdef
	stale=(".task-000001.$host.$dead.tmp" ".some.other.report.$host.$dead.tmp"
	       ".task-000007.$host.$dead.$tag.tmp")   # with the unpredictable part
	kept=(".task-000002.$host.$$.tmp"             # alive on this host
	      ".task-000002.$host.$$.$tag.tmp"
	      ".task-000008.$host.$dead.${tag}0.tmp"  # not a tag: 17 digits
	      ".task-000008.$host.$dead.${tag^^}.tmp" # nor upper case
	      ".task-000003.otherhost.$dead.tmp"      # another host's: alive there
	      ".task-000003.x$host.$dead.tmp"         # another host, ours as a suffix
	      ".task-000003.${host//?/q}.$dead.tmp"  # another host, as long as ours
	      ".$host.$dead.tmp"                      # no NAME
	      "task-000004.$host.$dead.tmp"           # not hidden: not ours
	      ".task-000005.$host.$dead.tmpx" ".task-000005.$host.${dead}x.tmp"
	      ".task-000005.$host..tmp" ".task-000006.$dead.tmp")
	for f in "${stale[@]}" "${kept[@]}"; do echo x >"$d/out/$f"; done
	# A dead run's private directory of a report ({}), with the report.
	private=".cowrun-task-000004.$host.$dead.$tag.tmp"
	mkdir -m 700 "$d/out/$private" && echo x > "$d/out/$private/task-000004"
	run --separate-stderr cowrun -v -o "$d/out" selftest --tasks 3 --report-bytes 10
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	[[ "$stderr" == *"cowrun: removed 4 stale temporary files of dead runs from '$d/out'"* ]]
	[ ! -e "$d/out/$private" ]
	for f in "${stale[@]}"; do [ ! -e "$d/out/$f" ] || { echo "not removed: $f" >&2; return 1; }; done
	for f in "${kept[@]}"; do [ -e "$d/out/$f" ] || { echo "removed: $f" >&2; return 1; }; done
	# Its own reports went through temporary names of the same pattern.
	[ -s "$d/out/task-000002" ]
	[ "$(ls -A "$d/out" | grep -vc '^\.cowrun-manifest\.')" -eq $(( ${#kept[@]} + 3 )) ]
}

@test "safety: a 100 KB value is shortened in its middle; the reason is always shown" {
	d=$BATS_TEST_TMPDIR
	long="$d/$(head -c 100000 /dev/zero | tr '\0' a)"
	for opt in -o --joblog --stats --save-results --timeline --workload; do
		run --separate-stderr cowrun $opt "$long/x.csv" selftest --tasks 2 --report-bytes 3
		[ "$status" -eq 255 ] || { echo "$opt: status $status" >&2; return 1; }
		[ -z "$output" ]
		assert_one_line_error "cowrun: *'$d/aaaa*aaa...aaa*aaaa/x.csv': File name too long"
		[ "${#stderr}" -le 1100 ] || { echo "$opt: ${#stderr} bytes" >&2; return 1; }
	done
	# A workload's own message (cowrun_error()) too.
	run --separate-stderr cowrun selftest --mark-start "$long/m"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: selftest: --mark-start: cannot create '$d/aaa*...*aaa/m': File name too long"
	[ "${#stderr}" -le 1100 ]
	# Two long values: each is shortened, the words between them kept.
	run --separate-stderr cowrun --joblog "$long" --stats "$long" selftest
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --joblog: cannot use '$d/aaa*...*aaa': File name too long"
}

@test "safety: --help, --list, --version and a workload's --help fail in one line when stdout cannot be written" {
	for args in --help --list --version "selftest --help"; do
		run --separate-stderr cowrun $args
		[ "$status" -eq 0 ]
		[ -n "$output" ]
		[ -z "$stderr" ]
		run --separate-stderr bash -c '"$@" >/dev/full' _ "$REAPER" "$COWRUN" $args
		[ "$status" -eq 255 ] || { echo "$args >/dev/full: status $status" >&2; return 1; }
		assert_one_line_error "cowrun: cannot write to standard output: No space left on device"
		run --separate-stderr bash -c '"$@" >&-' _ "$REAPER" "$COWRUN" $args
		[ "$status" -eq 255 ] || { echo "$args >&-: status $status" >&2; return 1; }
		assert_one_line_error "cowrun: cannot write to standard output: Bad file descriptor"
	done
}

@test "safety: a run with stdout closed fails at the summary (254); no file it opens takes stdout's place" {
	d=$BATS_TEST_TMPDIR
	run --separate-stderr bash -c '"$@" >&-' _ "$REAPER" "$COWRUN" -j 2 --joblog "$d/log" \
		--timeline "$d/t.csv" -o "$d/out" selftest --tasks 4 --report-bytes 10
	[ "$status" -eq 254 ]
	assert_one_line_error "cowrun: cannot write the summary to standard output: Bad file descriptor"
	# The joblog and the timeline hold only their own lines.
	[ "$(wc -l <"$d/log")" -eq 5 ]
	[ -z "$(grep -v -P '^(Seq|[0-9]+)\t' "$d/log")" ]
	[ "$(wc -l <"$d/t.csv")" -eq 5 ]
	[ "$(ls "$d/out" | wc -l)" -eq 4 ]
}
