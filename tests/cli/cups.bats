#!/usr/bin/env bats
# cowrun-lp (tools/cowrun-lp.c) against a real cupsd: tests/helpers/cupsd-loopback
# starts a cupsd of this file's own (every path its own, a unix socket in
# its own directory, no port) with three raw queues room1..room3 on a test
# backend that keeps each job as a file, and stops it by pid afterwards.
# Every job is proved to have gone there by that cupsd's own access_log.
# Nothing is skipped: make deps installs cups-daemon and cups-client, and
# the tests run as root (cupsd runs its 0700 backend as root only then).

load helpers

# The tests share this file's cupsd (setup_file): one at a time.
BATS_NO_PARALLELIZE_WITHIN_FILE=true

LOOPBACK="$ROOT/tests/helpers/cupsd-loopback"
LP="$ROOT/bin/cowrun-lp"

setup_file() {
	export CUPS_DIR="$BATS_FILE_TMPDIR/cupsd"
	local out
	out=$("$LOOPBACK" start "$CUPS_DIR" room1 room2 room3 2>&1) ||
		{ echo "cupsd-loopback failed: $out" >&2; return 1; }
	export CUPS_SERVER=${out##*$'\n'}
	export CUPS_RUN=${CUPS_SERVER%/cupsd.sock}
}

teardown_file() {
	"$LOOPBACK" stop "$CUPS_DIR"
}

setup() {
	[ -x "$LP" ] || { echo "no $LP: make (with libcups2-dev) builds it" >&2; return 1; }
	PATH="$ROOT/bin:$PATH"
}

# jobs_titled PREFIX: the backend's files of the jobs titled PREFIX*, one a
# line, QUEUE/ID-TITLE.
jobs_titled() {
	(cd "$CUPS_RUN/jobs" && find . -type f -name "[0-9]*-$1*" | sed 's|^\./||' | sort)
}

# creates: how many Create-Job requests this cupsd's access_log holds.
creates() {
	grep -c ' Create-Job successful-ok$' "$CUPS_RUN/log/access_log" || true
}

# The print-room story of docs/reports.md ("Printing through CUPS"), as printed there.
@test "cups: 12 reports on 3 queues, each printed once and whole, through the test's own cupsd" {
	local args=(sales --rows 200000 --stores 12) before plain i n
	run --separate-stderr cowrun -o "$BATS_TEST_TMPDIR/plain" "${args[@]}"
	[ "$status" -eq 0 ]
	plain=$output
	before=$(creates)
	run --separate-stderr cowrun -j 3 --report-to 'cowrun-lp -d room{%} -t statement-{#}' "${args[@]}"
	echo "$stderr"
	[ "$status" -eq 0 ]
	assert_no_leftovers
	[ "$output" = "$plain" ]
	# this cupsd took the 12 jobs (not a system cupsd)
	[ "$(creates)" -eq $((before + 12)) ]
	# each title once, on one of the three queues
	[ "$(jobs_titled statement- | wc -l)" -eq 12 ]
	for ((i = 1; i <= 12; i++)); do
		n=$(jobs_titled "statement-$i" | grep -cE "^room[123]/[0-9]+-statement-$i\$")
		[ "$n" -eq 1 ]
	done
	# the 12 jobs are the 12 reports of a plain run, byte for byte
	diff <(cd "$CUPS_RUN/jobs" && jobs_titled statement- | xargs md5sum | cut -d' ' -f1 | sort) \
		<(cd "$BATS_TEST_TMPDIR/plain" && md5sum store-*.txt | cut -d' ' -f1 | sort)
	# no job left waiting: every one completed
	[ -z "$(lpstat -o)" ]
}

@test "cups: an aborted job fails its task naming the job and CUPS's reason; --resume-failed reprints only it" {
	local d=$BATS_TEST_TMPDIR args=(selftest --tasks 4 --report-bytes 500) f
	run cowrun -o "$d/plain" "${args[@]}"
	echo abort3 >"$CUPS_RUN/abort"
	run --separate-stderr cowrun -j 2 --joblog "$d/log" \
		--report-to "cowrun-lp -d room{%} -t abort{#}" "${args[@]}"
	: >"$CUPS_RUN/abort"
	echo "$stderr"
	[ "$status" -eq 1 ]
	assert_no_leftovers
	[[ "$stderr" =~ task\ 2\ \(task-000002\)\ failed:.*cowrun-lp:\ room[123]-[0-9]+:\ aborted\ \(.*told\ to\ fail\ the\ job\ titled\ abort3 ]]
	[ "$(jobs_titled abort | wc -l)" -eq 3 ]
	[ -z "$(jobs_titled abort3)" ]
	run --separate-stderr cowrun -j 2 --joblog "$d/log" --resume-failed \
		--report-to "cowrun-lp -d room{%} -t abort{#}" "${args[@]}"
	echo "$stderr"
	[ "$status" -eq 0 ]
	[ "$(jobs_titled abort | wc -l)" -eq 4 ]
	for t in 1 2 3 4; do [ "$(jobs_titled "abort$t" | wc -l)" -eq 1 ]; done
	f=$(jobs_titled abort3)
	cmp "$CUPS_RUN/jobs/$f" "$d/plain/task-000002"
}

@test "cups: a held job fails after --wait-limit and is cancelled, never printed" {
	local id
	SECONDS=0
	run --separate-stderr "$LP" -d room1 -t held1 -o job-hold-until=indefinite --wait-limit 1 \
		<<<"held report"
	[ "$status" -eq 1 ]
	[ "$output" = "" ]
	assert_one_line_error "cowrun-lp: room1-*: not completed within 1 s: held (job-state-reasons job-hold-until-specified); job cancelled"
	[ "$SECONDS" -le 4 ]
	id=${stderr#cowrun-lp: }
	id=${id%%:*}
	# cupsd cancelled it (its own logs), it is no longer pending, and
	# releasing it prints nothing
	grep -q "\[Job ${id##*-}\] Canceled by \"root\"" "$CUPS_RUN/log/error_log"
	! lpstat -o room1 | grep -q "^$id " || { echo "$id still pending" >&2; return 1; }
	lpstat -W completed -o room1 | grep -q "^$id "
	run lp -i "$id" -H resume
	[ "$status" -ne 0 ]
	[ -z "$(jobs_titled held1)" ]
}

@test "cups: SIGTERM while waiting cancels the job" {
	local pid id
	"$LP" -d room2 -t term1 -o job-hold-until=indefinite <<<"report" 2>"$BATS_TEST_TMPDIR/err" &
	pid=$!
	wait_for 10 "the held job" eval "lpstat -o room2 | grep -q ."
	kill -TERM "$pid"
	local rc=0
	wait "$pid" || rc=$?
	[ "$rc" -eq 1 ]
	cat "$BATS_TEST_TMPDIR/err"
	[ "$(grep -c . "$BATS_TEST_TMPDIR/err")" -eq 1 ]
	# (held, or the signal came while the document was being sent)
	grep -Eq '^cowrun-lp: room2-[0-9]+: Terminated( while held .*)?; job cancelled$' "$BATS_TEST_TMPDIR/err"
	id=$(sed 's/^cowrun-lp: room2-\([0-9]*\):.*/\1/' "$BATS_TEST_TMPDIR/err")
	grep -q "\[Job $id\] Canceled by \"root\"" "$CUPS_RUN/log/error_log"
	[ -z "$(lpstat -o room2)" ]
	[ -z "$(jobs_titled term1)" ]
}

@test "cups: a queue stopped while its job waits fails at once and cancels the job" {
	local pid rc=0 id
	"$LP" -d room1 -t paused1 -o job-hold-until=indefinite --wait-limit 60 <<<"report" \
		2>"$BATS_TEST_TMPDIR/err" &
	pid=$!
	wait_for 10 "the held job" eval "lpstat -o room1 | grep -q ."
	id=$(lpstat -o room1 | awk '{ print $1 }')
	cupsdisable room1
	lp -i "$id" -H resume
	SECONDS=0
	wait "$pid" || rc=$?
	cupsenable room1
	cat "$BATS_TEST_TMPDIR/err"
	[ "$rc" -eq 1 ]
	[ "$SECONDS" -le 4 ]
	[ "$(grep -c . "$BATS_TEST_TMPDIR/err")" -eq 1 ]
	grep -Eq "^cowrun-lp: $id: the queue is stopped: pending \(.*printer-state-reasons paused.*\); job cancelled\$" \
		"$BATS_TEST_TMPDIR/err"
	grep -q "\[Job ${id##*-}\] Canceled by \"root\"" "$CUPS_RUN/log/error_log"
	[ -z "$(lpstat -o room1)" ]
	[ -z "$(jobs_titled paused1)" ]
}

# The reason for cowrun-lp, and a negative control of the backend: lp
# exits 0 for a job that is then aborted, and for one a disabled queue holds.
@test "cups: lp says 0 for a job the backend aborts and for one a disabled queue holds (spooled, not printed)" {
	echo lpabort1 >"$CUPS_RUN/abort"
	run lp -d room2 -t lpabort1 <<<"x"
	[ "$status" -eq 0 ]
	wait_for 10 "the job to end" eval "[ -z \"\$(lpstat -o room2)\" ]"
	: >"$CUPS_RUN/abort"
	[ -z "$(jobs_titled lpabort1)" ]
	grep -q 'told to fail the job titled lpabort1' "$CUPS_RUN/log/error_log"
	cupsdisable room2
	run lp -d room2 -t lpheld1 <<<"x"
	[ "$status" -eq 0 ]
	[ -n "$(lpstat -o room2)" ]
	cancel -a room2
	cupsenable room2
	[ -z "$(jobs_titled lpheld1)" ]
}

@test "cups: a completed job says QUEUE-ID completed on stdout; a file argument is printed" {
	printf 'from a file\n' >"$BATS_TEST_TMPDIR/r.txt"
	run --separate-stderr "$LP" -d room3 -t file1 "$BATS_TEST_TMPDIR/r.txt"
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^room3-[0-9]+\ completed$ ]]
	[ -z "$stderr" ]
	cmp "$CUPS_RUN/jobs/$(jobs_titled file1)" "$BATS_TEST_TMPDIR/r.txt"
}

@test "cups: a stopped or rejecting queue fails at once, in one line, and no job is left" {
	cupsdisable room3
	run --separate-stderr timeout 5 "$LP" -d room3 -t stopped1 <<<"x"
	cupsenable room3
	[ "$status" -eq 1 ]
	assert_one_line_error "cowrun-lp: room3: the queue is stopped (printer-state-reasons paused; *)"
	cupsreject room3
	run --separate-stderr timeout 5 "$LP" -d room3 -t stopped2 <<<"x"
	cupsaccept room3
	[ "$status" -eq 1 ]
	assert_one_line_error "cowrun-lp: room3: the queue is rejecting jobs *"
	[ -z "$(lpstat -o room3)" ]
	[ -z "$(jobs_titled stopped)" ]
}

@test "cups: a stopped cupsd fails the task at once, in one line" {
	local dir=$BATS_TEST_TMPDIR/other sock
	sock=$("$LOOPBACK" start "$dir" room1)
	"$LOOPBACK" stop "$dir"
	run --separate-stderr env CUPS_SERVER="$sock" timeout 5 "$LP" -d room1 <<<"x"
	[ "$status" -eq 1 ]
	assert_one_line_error "cowrun-lp: room1: cannot reach cupsd at $sock: *"
	run --separate-stderr env CUPS_SERVER="$sock" "$REAPER" "$COWRUN" -j 1 \
		--report-to 'cowrun-lp -d room{%}' selftest --tasks 2 --report-bytes 10
	[ "$status" -eq 2 ]
	assert_no_leftovers
	[[ "$stderr" == *"task 0 (task-000000) failed: 'cowrun-lp' exited with status 1: cowrun-lp: room1: cannot reach cupsd at $sock"* ]]
}

@test "cups: a destination URI, a missing queue and bad options are refused in one line" {
	run --separate-stderr "$LP" --wait-limit 0 <<<"x"
	[ "$status" -eq 2 ]
	assert_one_line_error "cowrun-lp: --wait-limit: bad value '0' *"
	run --separate-stderr "$LP" -o landscape <<<"x"
	[ "$status" -eq 2 ]
	assert_one_line_error "cowrun-lp: -o: bad option 'landscape' (NAME=VALUE); usage: *"
	run "$LP" --version
	[ "$status" -eq 0 ]
	[[ "$output" =~ ^cowrun-lp\ [0-9]+\.[0-9]+\.[0-9]+$ ]]
	run "$LP" --help
	[ "$status" -eq 0 ]
	[[ "$output" == *--wait-limit* ]]
	run --separate-stderr "$LP" -d ipp://elsewhere.example/printers/room1 <<<"x"
	[ "$status" -eq 2 ]
	assert_one_line_error "cowrun-lp: -d: 'ipp://elsewhere.example/printers/room1' is a URI: *"
	run --separate-stderr "$LP" -d nosuch <<<"x"
	[ "$status" -eq 1 ]
	assert_one_line_error "cowrun-lp: nosuch: no such queue on $CUPS_SERVER: *"
}

# ---- signals to a run that prints through cowrun-lp ----
# Every job of these runs is held (job-hold-until=indefinite, a wait limit
# far off): it prints only when the test releases it, so what is running,
# printed or cancelled at each signal is the test's choice, not a race.

HOLD='-o job-hold-until=indefinite --wait-limit 30'

teardown() {
	stop_background_run
	# a failed test's held jobs must not fail the next test too
	cancel -a 2>/dev/null || true
}

# pending: the ids of this cupsd's jobs not yet completed, one a line.
pending() {
	lpstat -o | awk '{ print $1 }'
}
pending_count() { [ "$(pending | grep -c .)" -eq "$1" ]; }
# release ID...: let those held jobs print.
release() {
	local id
	for id in "$@"; do lp -i "$id" -H resume >/dev/null; done
}
joblog_rows_at_least() { [ "$(($(grep -c . "$1" 2>/dev/null || echo 0) - 1))" -ge "$2" ]; }
# lps_of PID: the cowrun-lp processes under PID (this run's, not another
# test's elsewhere on the machine).
lps_of() {
	ps -e -o pid=,ppid=,comm= | awk -v top="$1" '
		{ parent[$1] = $2; name[$1] = $3 }
		END { for (p in name) if (name[p] == "cowrun-lp") {
			for (q = parent[p]; q > 1 && q != top; q = parent[q]) ;
			if (q == top) print p } }'
}
# cancelled ID...: this cupsd's error_log says each job was cancelled.
cancelled() {
	local id
	for id in "$@"; do grep -q "\[Job ${id##*-}\] Canceled by \"root\"" "$CUPS_RUN/log/error_log" || return 1; done
}

@test "cups: a first SIGTERM lets the running jobs print and starts no more; a second cancels the jobs not yet printed" {
	local d=$BATS_TEST_TMPDIR args=(selftest --tasks 6 --report-bytes 700) before ids first rest rc=0 f k
	run cowrun -o "$d/plain" "${args[@]}"
	[ "$status" -eq 0 ]
	before=$(creates)
	"$REAPER" "$COWRUN" -j 3 -o "$d/out" --joblog "$d/log" \
		--report-to "cowrun-lp -d room{%} -t sig-{#} $HOLD" "${args[@]}" --mark-start "$d/started" 2>"$d/err" &
	bg=$!
	wait_for 10 "three held jobs" pending_count 3
	ids=$(pending)
	kill -TERM "$(cowrun_of "$bg")"
	# the first signal: one running job prints, and its task ends well
	first=${ids%%$'\n'*}
	rest=$(sed 1d <<<"$ids")
	release "$first"
	wait_for 10 "the released job's task" joblog_rows_at_least "$d/log" 1
	# no task started after the signal, though a slot was free
	[ "$(creates)" -eq $((before + 3)) ]
	pending_count 2
	# the second signal: the jobs not yet printed are cancelled
	kill -TERM "$(cowrun_of "$bg")"
	wait "$bg" || rc=$?
	bg=
	cat "$d/err"
	[ "$rc" -eq 143 ]
	[[ "$(cat "$d/err")" != *"leftover processes"* ]]
	[ -z "$(pending)" ]
	cancelled $rest
	! cancelled "$first" || { echo "$first, the released one, was cancelled" >&2; return 1; }
	for id in $rest; do run lp -i "$id" -H resume; [ "$status" -ne 0 ]; done
	[ "$(creates)" -eq $((before + 3)) ]
	[ "$(ls "$d/started" | wc -l)" -eq 3 ]
	grep -q 'interrupted: 0 done, 1 running ended (0 failed), 3 not started, 2 killed while running' "$d/err"
	# printed: the released one, once, whole
	[ "$(jobs_titled sig- | wc -l)" -eq 1 ]
	f=$(jobs_titled sig-)
	[[ "$f" == room[123]/"${first##*-}"-sig-[123] ]]
	k=${f##*-}
	cmp "$CUPS_RUN/jobs/$f" "$d/plain/task-00000$((k - 1))"
}

@test "cups: kill -9 of a run mid-print cancels its held jobs within 3 s, leaves no process; --resume prints each unlogged report once" {
	local d=$BATS_TEST_TMPDIR args=(selftest --tasks 6 --report-bytes 700) before ids logged lps f k
	run cowrun -o "$d/plain" "${args[@]}"
	[ "$status" -eq 0 ]
	before=$(creates)
	REAPER_TIMEOUT=60 "$REAPER" "$COWRUN" -j 2 -o "$d/out" --joblog "$d/log" \
		--report-to "cowrun-lp -d room{%} -t kill-{#} $HOLD" "${args[@]}" >/dev/null 2>"$d/err" &
	bg=$!
	# two print, two more are held when the run is killed
	wait_for 10 "two held jobs" pending_count 2
	release $(pending)
	wait_for 10 "two joblog rows" joblog_rows_at_least "$d/log" 2
	wait_for 10 "the next two held jobs" pending_count 2
	ids=$(pending)
	lps=$(lps_of "$bg")
	[ "$(grep -c . <<<"$lps")" -eq 2 ]
	kill -KILL "$(cowrun_of "$bg")"
	wait_for 3 "every process of the run to end" all_dead "$bg" $lps
	wait "$bg" || true
	bg=
	# cowrun-lp cancelled both (none pending, so none prints later)
	[ -z "$(pending)" ]
	cancelled $ids
	logged=$(awk -F'\t' 'NR > 1 { sub(/.*task-0*/, "", $9); print $9 + 1 }' "$d/log")
	# what printed before the kill is what the joblog says
	diff <(jobs_titled kill- | sed 's/.*-//' | sort) <(sort <<<"$logged")
	run --separate-stderr cowrun -j 2 -o "$d/out" --joblog "$d/log" --resume \
		--report-to "cowrun-lp -d room{%} -t kill-{#}" "${args[@]}"
	echo "$stderr"
	[ "$status" -eq 0 ]
	assert_no_leftovers
	[ -z "$(pending)" ]
	# each of the six once, the logged ones from the first run, and all
	# byte-identical to a plain run's reports
	[ "$(jobs_titled kill- | wc -l)" -eq 6 ]
	for k in 1 2 3 4 5 6; do [ "$(jobs_titled "kill-$k" | wc -l)" -eq 1 ]; done
	[ "$(creates)" -eq $((before + 8)) ]
	diff <(cd "$CUPS_RUN/jobs" && jobs_titled kill- | xargs md5sum | cut -d' ' -f1 | sort) \
		<(cd "$d/plain" && md5sum task-* | cut -d' ' -f1 | sort)
}

# In --mode serial and omp the printers are children of the process that
# runs the tasks, which cowrun's second signal does not kill: that process
# must take them down itself, at once, not after their --wait-limit.
@test "cups: a second SIGTERM in --mode serial and omp cancels the running jobs at once, not after the wait limit" {
	local d=$BATS_TEST_TMPDIR mode n ids rc
	for mode in serial:1 omp:2; do
		n=${mode#*:} mode=${mode%:*} rc=0
		"$REAPER" "$COWRUN" --mode "$mode" -j "$n" -o "$d/$mode" \
			--report-to "cowrun-lp -d room{%} -t $mode-{#} $HOLD" \
			selftest --tasks 4 --report-bytes 700 2>"$d/err" &
		bg=$!
		wait_for 10 "$n held jobs" pending_count "$n"
		ids=$(pending)
		kill -TERM "$(cowrun_of "$bg")"
		pending_count "$n"
		kill -TERM "$(cowrun_of "$bg")"
		wait_for 5 "the run to end" all_dead "$bg"
		wait "$bg" || rc=$?
		bg=
		cat "$d/err"
		[ "$rc" -eq 143 ]
		[ -z "$(pending)" ]
		cancelled $ids
		[ -z "$(jobs_titled "$mode-")" ]
	done
}
