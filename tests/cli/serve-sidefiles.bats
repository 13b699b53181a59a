#!/usr/bin/env bats
# cowrun submit's side files (issue 23, item 8): --save-results, --timeline,
# --stats created by the client as temporary files (unnamed, O_TMPFILE;
# named beside the final name where the file system has no O_TMPFILE) and
# given their final names by it once the batch completed, else dropped,
# even when submit is killed by SIGKILL; one where a task's report goes
# refused as a direct run refuses it; --resume and --resume-failed through
# the joblog and journal the client passed, the inputs checked as a direct
# run checks them.  Every server runs under the reaper and is stopped by
# its pid.  A refused request leaves no file submit made for it.

load serve-helpers


# temps: the named temporary side files in $D (NAME.HOST.PID.TAG.tmp)
temps() {
	ls -A "$D" | grep -c '\.tmp$' || true
}

# client_cmd: submit's command line in $cmd: with $no_tmpfile set, on a
# file system without O_TMPFILE as no-tmpfile.so makes it (ASan, under
# check-asan, told to accept the shim loaded before it).  One process
# (env execs it), so a background one's $! is submit's pid.
client_cmd() {
	cmd=("$COWRUN" submit --socket "$S")
	[ -z "${no_tmpfile:-}" ] || cmd=(env LD_PRELOAD="$ROOT/build/tests/no-tmpfile.so"
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" "${cmd[@]}")
}

client() {
	client_cmd
	"${cmd[@]}" "$@"
}

# old_files NAME...: each still holds "old".
old_files() {
	local f
	for f; do
		[ "$(cat "$f")" = old ] || { echo "$f was replaced" >&2; return 1; }
	done
}

# side_files_settle NAMED: in $D, with the server of the SIGKILL test:
# a halted batch keeps the old saved results and replaces the old
# timeline and stats, as a direct run does; a submit killed by SIGKILL
# mid-batch creates no final file and leaves NAMED temporary files (0
# unnamed, 3 named: the signal no handler sees), a complete batch replaces
# the old files.
side_files_settle() {
	local named=$1 old=(k.res k.csv k.st) new=(--save-results x.res --timeline x.csv --stats x.st)
	local sides=(--save-results k.res --timeline k.csv --stats k.st)
	for f in "${old[@]}"; do echo old >"$f"; done
	run -1 client --tasks 3 --halt now,fail=1 "${sides[@]}"
	old_files k.res
	[ "$(head -1 k.csv)" = "task,name,worker,pid,start_s,end_s,status,slot" ]
	[ "$(head -1 k.st)" != old ]
	[ "$(temps)" -eq 0 ]
	for f in "${old[@]}"; do echo old >"$f"; done
	rm -f "$D"/m/*
	client_cmd
	"${cmd[@]}" --tasks 2 "${new[@]}" & a=$!
	wait_for eval '[ -n "$(ls "$D/m")" ]'
	[ "$(temps)" -eq "$named" ]
	kill -KILL "$a"
	status=0; wait "$a" || status=$?
	[ "$status" -eq 137 ]
	wait_for eval 'submit --status | grep -q "ready, 0 batches running"'
	[ ! -e x.res ]
	[ ! -e x.csv ]
	[ ! -e x.st ]
	[ "$(temps)" -eq "$named" ]
	rm -f "$D"/x.*.tmp
	run client --tasks 0-1 "${sides[@]}"
	[ "$status" -eq 0 ]
	[ "$(head -1 k.csv)" = "task,name,worker,pid,start_s,end_s,status,slot" ]
	[ "$(wc -l <k.csv)" -eq 3 ]
	[ "$(head -c 4 k.res)" != old ]
	[ "$(head -1 k.st)" != old ]
	[ "$(temps)" -eq 0 ]
}

@test "--save-results, --timeline, --stats: the client's files, as a direct run writes them" {
	start_server -j 2 selftest --tasks 8 --fail 3
	cd "$D"
	run -1 --separate-stderr submit -o "$D/o1" --save-results s.res --timeline s.csv --stats s.st
	served_err=$stderr
	[ -z "$output" ]   # with --save-results, the summary is the merge's
	run -1 --separate-stderr cowrun -j 2 -o "$D/o2" --save-results d.res --timeline d.csv \
		--stats d.st selftest --tasks 8 --fail 3
	[ "$served_err" = "${stderr//d.res/s.res}" ]
	run -1 --separate-stderr cowrun --merge s.res selftest --tasks 8 --fail 3
	served=$output
	run -1 --separate-stderr cowrun --merge d.res selftest --tasks 8 --fail 3
	[ "$served" = "$output" ]
	# the direct run's columns, a row per task
	[ "$(head -1 s.csv)" = "$(head -1 d.csv)" ]
	diff <(cut -d, -f1,2,7 s.csv | sort) <(cut -d, -f1,2,7 d.csv | sort)
	diff <(head -3 s.st) <(head -3 d.st)
	[ "$(wc -l <s.st)" -eq "$(wc -l <d.st)" ]
	[ "$(temps)" -eq 0 ]
	# A relative name is the client's, beside its cwd; the server's own
	# command line takes no side file: they are per batch.
	mkdir c
	(cd c && submit -o o --tasks 0-1 --save-results r.res >/dev/null)
	[ -s c/r.res ]
	[ ! -e r.res ]
	run -255 cowrun serve --socket "$D/t" --save-results x selftest
	[[ "$output" == *"--save-results cannot be given to a server"*"give it to cowrun submit"* ]]
	stop_server
	[ "$status" -eq 0 ]
}

@test "a refused or interrupted served batch leaves no side file, a halted one what a direct run keeps, no temporary" {
	start_server -j 2 selftest --tasks 6 --slow 1,2,3,4,5:30000 --fail 0 --mark-start "$D/m"
	cd "$D"
	# refused by the server: an error reply, and the disk as it was (a
	# joblog and journal, an output directory and its parents submit
	# made are taken back; what was there stays)
	echo kept >k.log
	mkdir p
	run -255 submit --tasks 99 --save-results a.res --timeline a.csv --stats a.st \
		--joblog a.log -o p/q/r
	[ ! -e a.res ]
	[ ! -e a.csv ]
	[ ! -e a.st ]
	[ ! -e a.log ]
	[ ! -e a.log.res ]
	[ -z "$(ls -A p)" ]
	[ "$(temps)" -eq 0 ]
	run -255 submit --tasks 99 --joblog k.log -o p/q
	[ "$(cat k.log)" = kept ]
	[ ! -e k.log.res ]
	[ -z "$(ls -A p)" ]
	[ ! -e out ]
	# halted: an exit status of 0..101, no complete saved results, but
	# the timeline and stats of the tasks that ran, as a direct run keeps
	run cowrun --halt now,fail=1 --save-results h0.res --timeline h0.csv --stats h0.st -o o \
		selftest --tasks 1 --fail 0
	[ "$status" -eq 1 ]
	[ ! -e h0.res ]
	run -1 submit --tasks 0 --halt now,fail=1 --save-results h.res --timeline h.csv --stats h.st
	[ ! -e h.res ]
	[ "$(head -1 h.csv)" = "$(head -1 h0.csv)" ]
	[ "$(cut -d, -f1,2,7 h.csv)" = "$(cut -d, -f1,2,7 h0.csv)" ]
	[ "$(head -3 h.st)" = "$(head -3 h0.st)" ]
	[ "$(temps)" -eq 0 ]
	# interrupted: the client killed mid-batch (SIGTERM); its batch is cancelled
	rm -f "$D"/m/*
	"$COWRUN" submit --socket "$S" --tasks 1-4 --save-results i.res --timeline i.csv \
		--stats i.st & a=$!
	wait_for eval '[ "$(ls "$D/m" | wc -l)" -eq 2 ]'
	[ "$(temps)" -eq 0 ]   # unnamed while the batch runs
	kill -TERM "$a"
	status=0; wait "$a" || status=$?
	[ "$status" -eq 143 ]
	[ ! -e i.res ]
	[ ! -e i.csv ]
	[ ! -e i.st ]
	[ "$(temps)" -eq 0 ]
	wait_for eval 'submit --status | grep -q "ready, 0 batches running"'
	# the server gone: the second SIGTERM kills the running batch
	rm -f "$D"/m/*
	"$COWRUN" submit --socket "$S" --tasks 1-4 --save-results g.res --stats g.st & a=$!
	wait_for eval '[ "$(ls "$D/m" | wc -l)" -eq 2 ]'
	term_twice
	status=0; wait "$a" || status=$?
	[ "$status" -eq 143 ]
	[ ! -e g.res ]
	[ ! -e g.st ]
	[ "$(temps)" -eq 0 ]
	server_status
	[ "$status" -eq 0 ]
}

@test "a refused submit takes back no joblog another run holds, though it created it" {
	COWRUN_LOCK_WAIT=0.2 start_server --max-workers 1 -j 1 selftest --tasks 6 --slow 1:30000 \
		--mark-start "$D/m"
	cd "$D"
	# one batch holds the only worker; the next waits for it, its joblog
	# created by its submit
	"$COWRUN" submit --socket "$S" --tasks 1 -o o1 2>/dev/null & h=$!
	wait_for eval '[ "$(ls "$D/m" | wc -l)" -eq 1 ]'
	"$COWRUN" submit --socket "$S" --tasks 2 --joblog n.log -o o2 2>"$D/a.err" & a=$!
	wait_for eval '[ -e n.log ] && submit --status | grep -q "requests 2"'
	# another run takes the joblog's lock meanwhile: the waiting batch,
	# once it has its worker, finds it in use and is refused
	exec 9>>n.log
	flock 9
	kill -TERM "$h"
	wait "$h" || true
	status=0; wait "$a" || status=$?
	[ "$status" -eq 255 ]
	grep -q "in use by another cowrun run" "$D/a.err"
	# the holder's file stays, though the refused submit created it
	[ -e n.log ]
	exec 9>&-
	stop_server
	[ "$status" -eq 0 ]
}

@test "submit killed by SIGKILL leaves no side file; a complete batch replaces old ones, a halted one not" {
	start_server -j 2 selftest --tasks 4 --fail 3 --slow 2 --mark-start "$D/m"
	cd "$D"
	side_files_settle 0
	# Where the file system has no O_TMPFILE: named temporaries beside
	# the final names, which SIGKILL leaves (the other signals do not).
	no_tmpfile=1 side_files_settle 3
	rm -f "$D"/m/*
	no_tmpfile=1 client_cmd
	"${cmd[@]}" --tasks 2 --save-results y.res --stats y.st & a=$!
	wait_for eval '[ -n "$(ls "$D/m")" ]'
	[ "$(temps)" -eq 2 ]
	kill -TERM "$a"
	status=0; wait "$a" || status=$?
	[ "$status" -eq 143 ]
	[ "$(temps)" -eq 0 ]
	[ ! -e y.res ]
	[ ! -e y.st ]
	stop_server
	[ "$status" -eq 0 ]
}

@test "a served side file where a task's report goes is refused as a direct run refuses it" {
	w=(selftest --tasks 3 --report-bytes 10)
	# the server's own -o is no client's: messages name the client's
	start_server -j 2 -o "$D/server-out" "${w[@]}"
	cd "$D"
	run -255 --separate-stderr submit -o rep --stats rep/task-000001
	served=$stderr
	[ "$served" = "cowrun: --stats: 'rep/task-000001' is the report file of task 'task-000001' in output directory 'rep'" ]
	[ ! -e rep ]   # no report, no temporary file, not even the directory
	run -255 --separate-stderr cowrun -o rep --stats rep/task-000001 "${w[@]}"
	[ "$stderr" = "$served" ]
	[ ! -e rep ]
	# another spelling, through a link; the joblog stays as it was
	mkdir rep
	echo old >rep/task-000002
	ln -s rep lrep
	run -255 --separate-stderr submit -o rep/ --joblog ./lrep/task-000002
	served=$stderr
	[[ "$served" == "cowrun: --joblog: './lrep/task-000002' is the report file of task 'task-000002' in output directory 'rep/'" ]]
	run -255 --separate-stderr cowrun -o rep/ --joblog ./lrep/task-000002 "${w[@]}"
	[ "$stderr" = "$served" ]
	old_files rep/task-000002
	[ ! -e rep/task-000000 ]
	# the default output directory, out
	run -255 --separate-stderr submit --save-results out/task-000000 --timeline t.csv
	served=$stderr
	run -255 --separate-stderr cowrun --save-results out/task-000000 --timeline t.csv "${w[@]}"
	[ "$stderr" = "$served" ]
	[ "$(echo "$served" | wc -l)" -eq 1 ]
	[ ! -e out ]
	[ ! -e t.csv ]
	[ "$(temps)" -eq 0 ]
	# in -o under a name no task has: written
	run submit -o rep --stats rep/summary --save-results lrep/s.res
	[ "$status" -eq 0 ]
	[ -s rep/summary ]
	[ -s rep/s.res ]
	[ -s rep/task-000000 ]
	[ ! -e "$D/server-out" ]
	stop_server
	[ "$status" -eq 0 ]
}

@test "--resume after an interrupted served batch equals a clean run" {
	w=(selftest --tasks 8 --fail 2 --slow 5:1500 --mark-start "$D/m")
	start_server -j 2 "${w[@]}"
	cd "$D"
	"$COWRUN" submit --socket "$S" --joblog j.log --save-results r1.res & a=$!
	wait_for eval '[ -n "$(ls "$D/m" | grep task-000005)" ]'
	kill -TERM "$a"
	wait "$a" || true
	[ ! -e r1.res ]
	[ "$(temps)" -eq 0 ]
	wait_for eval 'submit --status | grep -q "ready, 0 batches running"'
	[ "$(grep -c selftest j.log)" -ge 1 ]   # some tasks were kept
	rm -f "$D"/m/*
	run -1 submit --resume --joblog j.log --save-results r2.res
	[ "$(ls "$D/m" | wc -l)" -lt 8 ]         # only the rest ran
	run -1 --separate-stderr cowrun -j 2 -o "$D/oc" --save-results c.res "${w[@]}"
	run -1 --separate-stderr cowrun --merge r2.res "${w[@]}"
	resumed=$output
	run -1 --separate-stderr cowrun --merge c.res "${w[@]}"
	[ "$resumed" = "$output" ]
	# the summary on stdout, and --resume-failed reruns only the failed task
	run -1 --separate-stderr cowrun -j 2 -o "$D/oc" "${w[@]}"
	clean=$output
	run -1 --separate-stderr submit --resume --joblog j.log
	[ "$output" = "$clean" ]
	rm -f "$D"/m/*
	run -1 --separate-stderr submit --resume-failed --joblog j.log
	[ "$output" = "$clean" ]
	[ "$(ls "$D/m")" = "$(ls "$D/m" | grep task-000002)" ]
	[ -n "$(ls "$D/m")" ]
	stop_server
	[ "$status" -eq 0 ]
}

@test "a served --resume after a reload onto a rewritten input is refused, naming the file" {
	echo one >"$D/in"
	start_server -j 2 selftest --tasks 4 --fail 1 --input "$D/in"
	cd "$D"
	run -1 submit --joblog j.log
	echo rewritten >"$D/in"
	submit --reload >/dev/null
	run -255 --separate-stderr submit --resume --joblog j.log --save-results r.res
	served=$stderr
	[[ "$served" == *"--resume: input '$D/in' (--input) changed since the run being resumed"* ]]
	[ "$(echo "$served" | wc -l)" -eq 1 ]
	[ ! -e r.res ]
	[ "$(temps)" -eq 0 ]
	# the direct run's one line
	echo one >"$D/in2"
	run -1 cowrun -j 2 --joblog k.log selftest --tasks 4 --fail 1 --input "$D/in2"
	echo rewritten >"$D/in2"
	run -255 --separate-stderr cowrun -j 2 --joblog k.log --resume selftest --tasks 4 --fail 1 \
		--input "$D/in2"
	[ "${stderr//in2/in}" = "$served" ]
	stop_server
	[ "$status" -eq 0 ]
}
