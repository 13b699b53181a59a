#!/usr/bin/env bats
# cowrun submit's side files (issue 23, item 8): --save-results, --timeline,
# --stats created by the client under a temporary name and renamed into
# place by it once the batch completed, else removed; --resume and
# --resume-failed through the joblog and journal the client passed, the
# inputs checked as a direct run checks them.  Every server runs under the
# reaper and is stopped by its pid.

load serve-helpers


# temps: the temporary side files left in $D (named .NAME.HOST.PID...tmp)
temps() {
	ls -A "$D" | grep -c '\.tmp$' || true
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

@test "a failed, halted or interrupted served batch leaves no side file, final or temporary" {
	start_server -j 2 selftest --tasks 6 --sleep-ms 30000 --fail 0 --mark-start "$D/m"
	cd "$D"
	# refused by the server: an error reply
	run -255 submit --tasks 99 --save-results a.res --timeline a.csv --stats a.st
	[ ! -e a.res ]
	[ ! -e a.csv ]
	[ ! -e a.st ]
	[ "$(temps)" -eq 0 ]
	# halted: an exit status of 0..101, but no complete saved results
	run cowrun --halt now,fail=1 --save-results h0.res -o o selftest --tasks 1 --fail 0
	[ "$status" -eq 1 ]
	[ ! -e h0.res ]
	run -1 submit --tasks 0 --halt now,fail=1 --save-results h.res --timeline h.csv
	[ ! -e h.res ]
	[ ! -e h.csv ]
	[ "$(temps)" -eq 0 ]
	# interrupted: the client killed mid-batch (SIGTERM); its batch is cancelled
	rm -f "$D"/m/*
	"$COWRUN" submit --socket "$S" --tasks 1-4 --save-results i.res --timeline i.csv \
		--stats i.st & a=$!
	wait_for eval '[ "$(ls "$D/m" | wc -l)" -eq 2 ]'
	[ "$(temps)" -eq 3 ]
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
	kill -TERM "$(cat "$D/pid")"
	wait_for eval 'grep -q "no new requests" "$D/log" || ! [ -S "$S" ]'
	kill -TERM "$(cat "$D/pid")"
	status=0; wait "$a" || status=$?
	[ "$status" -eq 143 ]
	[ ! -e g.res ]
	[ ! -e g.st ]
	[ "$(temps)" -eq 0 ]
	status=0; wait "$srv" || status=$?
	srv=
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
