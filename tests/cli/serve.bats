#!/usr/bin/env bats
# cowrun serve and cowrun submit (issue 18): the setup kept warm in a
# generation, one leader per request running today's fork-mode batch
# through the client's own descriptors; reload, status, signals; the
# peer's uid checked; malformed requests answered, never a crash; the
# report commands per batch (issue 34).  Every
# server runs under the reaper: it must leave no process behind.

load serve-helpers

@test "a served batch is byte-identical to a direct run: stdout, reports, exit status" {
	start_server -j 2 sales --rows 200000 --stores 8
	submit -o "$D/served" >"$D/served.out"
	cowrun -j 2 -o "$D/direct" sales --rows 200000 --stores 8 >"$D/direct.out"
	cmp "$D/served.out" "$D/direct.out"
	diff -r "$D/served" "$D/direct"
	[ "$(ls "$D/served" | wc -l)" -eq 8 ]
	# A relative -o is the client's: reports land under its cwd, through
	# the directory it opened, not under the server's cwd by name.
	mkdir "$D/c"
	(cd "$D/c" && submit -o rel --tasks 2 >/dev/null)
	[ -f "$D/c/rel/store-0003.txt" ] || { ls -R "$D/c" >&2; false; }
	[ ! -e rel ]
	submit -o "$D/served2" --tasks 1,5 -j 1 >"$D/served2.out"
	cowrun -j 1 -o "$D/direct2" --tasks 1,5 sales --rows 200000 --stores 8 >"$D/direct2.out"
	cmp "$D/served2.out" "$D/direct2.out"
	diff -r "$D/served2" "$D/direct2"
	stop_server
	[ "$status" -eq 0 ]

	start_server -j 2 selftest --tasks 20 --report-bytes 100 --result-bytes 16 --fail 3
	run -1 --separate-stderr submit -o "$D/s3"
	cowrun -o "$D/d3" selftest --tasks 20 --report-bytes 100 --result-bytes 16 --fail 3 >"$D/d3.out" || [ $? -eq 1 ]
	[ "$output" = "$(cat "$D/d3.out")" ]
	diff -r "$D/s3" "$D/d3"
	# A bad option is the batch's usage error, said as cowrun says it.
	run -255 --separate-stderr submit --tasks 99
	[[ "$stderr" == *"task 99"* ]]
	run -255 --separate-stderr submit -j x
	[[ "$stderr" == *"-j: bad value 'x'"* ]]
	stop_server
	[ "$status" -eq 0 ]
	[ ! -e "$S" ] && [ ! -e "$D/pid" ]
}

@test "submit --status lists the generations; submit's own usage errors exit 255" {
	start_server selftest --tasks 3
	run -0 submit --status
	[[ "$output" == *"generation 1 pid "*" ready, 0 batches running"* ]]
	run -255 "$COWRUN" submit --status
	run -255 submit --bogus
	run -255 submit selftest
	stop_server
	run -255 "$COWRUN" submit --socket "$S" --status
	[[ "$output" == *"cannot connect"* ]]
}

@test "two clients at once each get their own batch, the total capped by --max-workers" {
	start_server --max-workers 3 selftest --tasks 12 --sleep-ms 400 --mark-start "$D/m"
	submit -j 2 --tasks 0-5 >"$D/a.out" & a=$!
	submit -j 2 --tasks 6-11 >"$D/b.out" & b=$!
	# Both run at once, within the cap: 2 + 1 workers, in one status.
	both_running() {
		local out
		out=$(submit --status) &&
			[[ "$out" == *"2 batches running"* && "$out" == *" 2 workers"* && "$out" == *" 1 workers"* ]]
	}
	wait_for 30 "both batches running, 2 + 1 workers" both_running
	run -0 submit --status
	! grep -q " [3-9] workers" <<<"$output" || { echo "over the cap: $output" >&2; return 1; }
	wait "$a"; wait "$b"
	cowrun -j 2 --tasks 0-5 selftest --tasks 12 --sleep-ms 400 >"$D/a.direct"
	cowrun -j 2 --tasks 6-11 selftest --tasks 12 --sleep-ms 400 >"$D/b.direct"
	cmp "$D/a.out" "$D/a.direct"
	cmp "$D/b.out" "$D/b.direct"
	stop_server
	[ "$status" -eq 0 ]
}

@test "reload during a batch: it ends on the old generation, new requests go to the new; a failed reload keeps the old" {
	echo one >"$D/in"
	# Task 0 lasts 8 s, so the batch is still running when the status is
	# read after the reload, however slow the machine (under ASan the
	# reload alone took longer than a 400 ms task).
	start_server -j 2 selftest --tasks 4 --sleep-ms 400 --slow 0:8000 --input "$D/in" --mark-start "$D/m"
	submit >"$D/a.out" & a=$!
	wait_for compgen -G "$D/m/task-000000.*" >/dev/null
	run -0 submit --reload
	[[ "$output" == *"generation 2 "*"is ready"* ]]
	run -0 submit --status
	[[ "$output" == *"generation 1 pid "*"retiring, 1 batches running"* ]]
	[[ "$output" == *"generation 2 pid "*"ready, 0 batches running"* ]]
	wait "$a"
	cowrun -j 2 selftest --tasks 4 --sleep-ms 400 --input "$D/in" >"$D/a.direct"
	cmp "$D/a.out" "$D/a.direct"
	wait_for eval '! submit --status | grep -q "generation 1 "'
	# The setup fails (its input is gone): the old generation still serves.
	rm "$D/in"
	run -255 --separate-stderr submit --reload
	[[ "$stderr" == *"reload failed: generation 3's setup failed"*"the previous generation still serves"* ]]
	[[ "$stderr" == *"cannot"* ]]   # the setup's own message, passed on
	run -0 submit --tasks 0 --status
	[[ "$output" == *"generation 2 pid "*"ready"* ]]
	run -0 submit --tasks 1
	# SIGHUP reloads too.
	echo one >"$D/in"
	kill -HUP "$(cat "$D/pid")"
	wait_for eval 'submit --status | grep -q "generation 4 pid .* ready"'
	stop_server
	[ "$status" -eq 0 ]
}

@test "a client that goes away cancels its batch: workers killed, no report, partial or final" {
	start_server -j 2 selftest --tasks 6 --sleep-ms 30000 --report-bytes 100 --mark-start "$D/m"
	mkdir "$D/out"
	"$COWRUN" submit --socket "$S" -o "$D/out" & a=$!   # the client itself, not a subshell
	wait_for eval '[ "$(ls "$D/m" | wc -l)" -eq 2 ]'
	kill -KILL "$a"
	wait "$a" || true
	wait_for eval 'submit --status | grep -q "ready, 0 batches running"'
	# The workers are gone too: the task's pids in the mark files.
	for f in "$D"/m/task-*; do
		! kill -0 "${f##*.}" 2>/dev/null || { echo "worker ${f##*.} lives" >&2; return 1; }
	done
	[ -z "$(ls -A "$D/out")" ]
	grep -q "generation 1" "$D/log"
	stop_server
	[ "$status" -eq 0 ]
}

# send_raw HEX [FDS]: one SOCK_SEQPACKET message to the server; prints
# the reply's type, status and text, or "closed".
send_raw() {
	python3 - "$S" "$@" <<'PY'
import socket, struct, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
data = bytes.fromhex(sys.argv[2]) if sys.argv[2] != "none" else None
fds = [0] * int(sys.argv[3]) if len(sys.argv) > 3 else []
if data is not None:
    s.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i" * len(fds), *fds))] if fds else [])
r = s.recv(8192)
if not r:
    print("closed")
else:
    print(r[:4].decode(), struct.unpack("<H", r[6:8])[0], struct.unpack("<i", r[12:16])[0], r[16:].decode())
PY
}

@test "malformed requests get an error reply and the server goes on" {
	start_server --read-timeout 300 selftest --tasks 2
	run -0 send_raw 6e6f6e73656e7365
	[[ "$output" == "CWRP 2 255 bad request: "* ]]
	# A wrong version, a body length that lies, an unknown type, an
	# unknown field (tag 255: no count of fields reaches it), a field
	# past the end, a field given twice, a NUL.
	for msg in "4357525102000100""00000000" \
		   "435752510100010005000000" \
		   "435752510100090000000000" \
		   "435752510100010003000000""ff0000" \
		   "435752510100010005000000""0105003031" \
		   "435752510100010008000000""0101003101010032" \
		   "435752510100010004000000""01010000"; do
		run -0 send_raw "$msg"
		[[ "$output" == "CWRP 2 255 bad request: "* ]]
	done
	# A run request needs its three descriptors; a status request none.
	run -0 send_raw 435752510100010000000000
	[[ "$output" == *"3 descriptors"* ]]
	run -0 send_raw 435752510100020000000000 1
	[[ "$output" == *"descriptors with a request that takes none"* ]]
	# Longer than any request: refused, not cut.
	run -0 send_raw "$(head -c 5000 /dev/zero | od -An -v -tx1 | tr -d ' \n')"
	[[ "$output" == *"message too long"* ]]
	# Nothing within the deadline.
	run -0 send_raw none
	[[ "$output" == *"no request within the deadline"* ]]
	run -0 submit --status
	[[ "$output" == *"ready"* ]]
	stop_server
	[ "$status" -eq 0 ]
}

@test "another uid is refused by its credentials, even on a socket it may open" {
	chmod 711 "$D"
	reachable_binaries
	start_server --socket-mode 0666 selftest --tasks 2
	run -255 setpriv --reuid=nobody --regid=nogroup --clear-groups "$COWRUN" submit --socket "$S" --status
	[[ "$output" == *"permission denied"* ]]
	grep -q "refused a connection from uid 65534" "$D/log"
	stop_server
	start_server --socket-mode 0666 --allow-uid 65534 selftest --tasks 2
	run -0 setpriv --reuid=nobody --regid=nogroup --clear-groups "$COWRUN" submit --socket "$S" --status
	[[ "$output" == *"generation 1"* ]]
	stop_server
	[ "$status" -eq 0 ]
}

@test "the socket's place is checked: a world-writable directory, a live server, a long path" {
	run -255 cowrun serve --socket /tmp/cw-test-$$ selftest
	[[ "$output" == *"must be a directory of your own that others cannot write in"* ]]
	mkdir -m 1777 "$D/pub"
	run -255 cowrun serve --socket "$D/pub/s" selftest
	run -255 cowrun serve --socket "$D/$(printf 'x%.0s' $(seq 120))" selftest
	[[ "$output" == *"too long"* ]]
	run -255 cowrun serve selftest
	run -255 cowrun serve --socket "$D/s" --mode omp selftest
	start_server selftest --tasks 2
	run -255 cowrun serve --socket "$S" selftest
	[[ "$output" == *"another server is listening"* ]]
	[ "$(stat -c %a "$S")" = 600 ]
	stop_server
	[ "$status" -eq 0 ]
	# A first setup that fails: no server.
	run -255 cowrun serve --socket "$S" selftest --input "$D/missing"
	[[ "$output" == *"the first setup failed"* ]]
	[ ! -e "$S" ]
}

@test "SIGTERM lets the running batch finish and leaves nothing; a second one kills it" {
	start_server -j 2 selftest --tasks 4 --sleep-ms 300 --mark-start "$D/m"
	submit >"$D/a.out" & a=$!
	wait_for compgen -G "$D/m/task-*" >/dev/null
	kill -TERM "$(cat "$D/pid")"
	wait "$a"
	cowrun -j 2 selftest --tasks 4 --sleep-ms 300 >"$D/a.direct"
	cmp "$D/a.out" "$D/a.direct"
	server_status
	[ "$status" -eq 0 ]
	[ ! -e "$S" ] && [ ! -e "$D/pid" ]

	rm -rf "$D/m"
	start_server -j 2 selftest --tasks 4 --sleep-ms 30000 --mark-start "$D/m"
	submit 2>"$D/a.err" & a=$!
	wait_for eval '[ "$(ls "$D/m" | wc -l)" -eq 2 ]'
	term_twice
	status=0; wait "$a" || status=$?
	[ "$status" -eq 143 ]
	grep -q "interrupted" "$D/a.err"
	server_status
	[ "$status" -eq 0 ]
}

@test "a task's own child left running in a served batch dies with its worker, as in a direct run" {
	# Each task forks a sleep that outlives it (in its worker's process
	# group, no supervisor) and leaves its pid; the served workers exit
	# after their last frame, reaped after the reply (60 s: only a broken
	# server waits for them).
	printf '#!/bin/sh\nsleep 60 >/dev/null 2>&1 &\necho $! >"$0.$$"\n' >"$D/bg.sh"
	chmod +x "$D/bg.sh"
	start_server -j 2 selftest --tasks 2 --fork-exec "$D/bg.sh"
	run -0 submit -o "$D/out"
	[[ "$output" == "tasks 2 of 2 merged"* ]]
	[ "$(cat "$D"/bg.sh.* | wc -l)" -eq 2 ]
	wait_for 30 "the tasks' children to die" all_dead $(cat "$D"/bg.sh.*)
	stop_server
	[ "$status" -eq 0 ]
}

@test "a thousand quick requests: no zombie, the leaders all reaped" {
	# Under check-asan on a loaded 2-core machine the thousand requests
	# took longer than the reaper's default 600 s, which then killed the
	# server mid-test ("Connection refused" at request 813).
	REAPER_TIMEOUT=3600 start_server selftest --tasks 4
	gen=$(submit --status | sed -n 's/^generation 1 pid \([0-9]*\) .*/\1/p')
	for i in $(seq 1000); do
		submit --tasks 0 >/dev/null || { echo "request $i failed" >&2; false; }
	done
	# The last leader ends after its client has the reply.
	wait_for status_has "0 batches running"
	run -0 submit --status
	[[ "$output" == *"requests 1000"* && "$output" == *"0 batches running"* ]]
	# nothing under the generation but its spare leaders, waiting
	[ -z "$(ps --ppid "$gen" -o stat=,comm= | grep -v '^S *cowrun-spare$')" ]
	stop_server
	[ "$status" -eq 0 ]
}

@test "a batch granted at once goes to a spare the generation lent the master: served while the generation is stopped" {
	start_server -j 2 selftest --tasks 6 --report-bytes 10
	wait_for status_has "ready, 0 batches running, 2 spare leaders lent"
	gen=$(submit --status | sed -n 's/^generation 1 pid \([0-9]*\) ready.*/\1/p')
	kill -STOP "$gen"
	# into files: a request passed to the stopped generation would hold
	# a pipe's write end open (in flight) and run's read would wait on it
	status=0
	timeout 20 "$COWRUN" submit --socket "$S" -o "$D/served" --tasks 1-4 -j 2 \
		>"$D/served.out" 2>"$D/served.err" || status=$?
	kill -CONT "$gen"
	[ "$status" -eq 0 ]
	cowrun -o "$D/d" --tasks 1-4 -j 2 selftest --tasks 6 --report-bytes 10 >"$D/direct.out"
	cmp "$D/served.out" "$D/direct.out"
	[ ! -s "$D/served.err" ]
	diff -r "$D/served" "$D/d"
	# the generation, continued, takes it as its batch, ends it, gives its
	# workers back and lends new spares
	wait_for status_has "ready, 0 batches running, 2 spare leaders lent"
	run submit --status
	[[ "$output" == *"requests 1, batches started 1, workers in use 0"* ]]
	# a spare killed while lent: the next request is served all the same
	pkill -KILL -P "$gen" -x cowrun-spare
	run submit -o "$D/served2" --tasks 1-4 -j 2
	[ "$status" -eq 0 ]
	diff -r "$D/served2" "$D/d"
	stop_server
	[ "$status" -eq 0 ]
}

@test "a second SIGTERM stops the batches the master handed lent spares before their generation heard of them: each client gets its reply" {
	start_server --max-workers 2 -j 1 selftest --tasks 4 --sleep-ms 30000 --mark-start "$D/m"
	wait_for status_has "ready, 0 batches running, 2 spare leaders lent"
	gen=$(submit --status | sed -n 's/^generation 1 pid \([0-9]*\) ready.*/\1/p')
	# The generation stopped: two TOOKs wait in its channel, then the
	# master's RETIRE and its SIGTERM.  Continued, it reads one message a
	# step: the second spare is still a lent spare when it stops its batches.
	kill -STOP "$gen"
	submit --tasks 1 -o "$D/o1" 2>"$D/a.err" & a=$!
	wait_for eval '[ "$(ls "$D/m" | wc -l)" -eq 1 ]'
	submit --tasks 2 -o "$D/o2" 2>"$D/b.err" & b=$!
	wait_for eval '[ "$(ls "$D/m" | wc -l)" -eq 2 ]'
	term_twice
	wait_for grep -q "second signal" "$D/log"
	kill -CONT "$gen"
	status=0; wait "$a" || status=$?
	[ "$status" -eq 143 ]
	grep -q "interrupted" "$D/a.err"
	status=0; wait "$b" || status=$?
	[ "$status" -eq 143 ]
	grep -q "interrupted" "$D/b.err"
	server_status
	[ "$status" -eq 0 ]
}

@test "--joblog: the client's joblog and journal, as a direct run writes them; a direct --resume reads them" {
	COWRUN_LOCK_WAIT=0.2 start_server -j 2 selftest --tasks 6 --fail 2   # the leader waits
	cd "$D"
	run -1 --separate-stderr submit --joblog "$D/j.log" --retries 1
	served_out=$output served_err=$stderr
	run -1 --separate-stderr cowrun -j 2 --joblog "$D/k.log" --retries 1 selftest --tasks 6 --fail 2
	[ "$served_out" = "$output" ] && [ "$served_err" = "$stderr" ]
	diff <(cut -f1,2,5-9 "$D/j.log" | sort) <(cut -f1,2,5-9 "$D/k.log" | sort)
	[ "$(wc -l <"$D/j.log")" -eq 8 ]   # header, 6 tasks, one retry
	# The journal belongs to this batch: a direct --resume merges it all.
	run -1 --separate-stderr cowrun -j 2 --joblog "$D/j.log" --resume selftest --tasks 6 --fail 2
	[ "$output" = "$served_out" ]
	# One run at a time on a joblog: a served batch takes its lock too.
	exec 9>>"$D/j.log"
	flock 9
	run -255 --separate-stderr submit --joblog "$D/j.log"
	[[ "$stderr" == *"in use by another cowrun run"* ]]
	exec 9>&-
	stop_server
	[ "$status" -eq 0 ]
}

@test "while a new generation sets up, the master answers and the old one serves" {
	echo one >"$D/in"
	start_server -j 2 selftest --tasks 4 --input "$D/in"
	cowrun -j 2 selftest --tasks 4 --input "$D/in" >"$D/direct.out"
	# The new setup blocks reading its input (a FIFO) until we write it.
	rm "$D/in"
	mkfifo "$D/in"
	submit --reload >"$D/reload.out" & r=$!
	wait_for eval 'submit --status | grep -q "generation 2 pid .* loading"'
	run -0 submit --status
	[[ "$output" == *"generation 1 pid "*" ready"* ]]
	submit >"$D/during.out"
	cmp "$D/during.out" "$D/direct.out"
	echo one >"$D/in"
	wait "$r"
	grep -q "generation 2 .*is ready" "$D/reload.out"
	submit >"$D/after.out"
	cmp "$D/after.out" "$D/direct.out"
	stop_server
	[ "$status" -eq 0 ]
}

SELF="selftest --tasks 6 --report-bytes 300"

@test "served --report-filter 'gzip -n' --report-suffix .gz: gzip -d gives a direct run's reports; the same summary; the next batch is plain" {
	start_server -j 2 $SELF
	run -0 --separate-stderr submit -o "$D/served" --report-filter 'gzip -n' --report-suffix .gz
	[ -z "$stderr" ] || { echo "$stderr" >&2; false; }
	served_out=$output
	run -0 --separate-stderr cowrun -j 2 -o "$D/direct" $SELF
	[ "$served_out" = "$output" ]
	for k in 0 1 2 3 4 5; do
		f=$(printf 'task-%06d' "$k")
		[ ! -e "$D/served/$f" ]
		gzip -d <"$D/served/$f.gz" | cmp - "$D/direct/$f"
	done
	[ "$(ls "$D/served" | wc -l)" -eq 6 ]
	# What a direct run with the same options leaves, manifest included.
	run -0 cowrun -j 2 -o "$D/direct.gz" --report-filter 'gzip -n' --report-suffix .gz $SELF
	diff -r "$D/served" "$D/direct.gz"
	# The options were that batch's only: the server's next one is plain.
	run -0 submit -o "$D/plain"
	diff -r "$D/plain" "$D/direct"
	stop_server
	[ "$status" -eq 0 ]
}

@test "served --report-to: every report reaches the sink ({} a path the command opens, the output directory a descriptor), none is kept; a failing sink fails its task as in a direct run" {
	start_server -j 2 $SELF
	mkdir "$D/spool"
	run -0 --separate-stderr submit -o "$D/served" --report-to "cp {} $D/spool/{/}"
	served_out=$output
	run -0 --separate-stderr cowrun -j 2 -o "$D/direct" $SELF
	[ "$served_out" = "$output" ]
	diff -r -x '.cowrun-manifest.*' "$D/spool" "$D/direct"
	[ "$(ls "$D/spool" | wc -l)" -eq 6 ]
	[ -z "$(ls -A "$D/served")" ]   # no report, no manifest
	sink="sh -c 'cat >/dev/null; [ {#} != 4 ] || { echo no paper >&2; exit 5; }'"
	run -1 --separate-stderr submit -o "$D/served2" --report-to "$sink"
	served_out=$output served_err=$stderr
	run -1 --separate-stderr cowrun -j 2 -o "$D/direct2" --report-to "$sink" $SELF
	[ "$served_out" = "$output" ] && [ "$served_err" = "$stderr" ]
	[[ "$served_err" == *"task 3 (task-000003) failed: "*"exited with status 5: no paper"* ]]
	[[ "$served_out" == "tasks 5 of 6 merged,"* ]]
	[ -z "$(ls -A "$D/served2")" ]
	# The direct run's refusals, as the batch's usage error.
	run -255 --separate-stderr submit --report-suffix a/b
	assert_one_line_error "cowrun: --report-suffix: bad value 'a/b'*"
	stop_server
	[ "$status" -eq 0 ]
}

@test "submit refuses a command longer than a request's field, in one line naming the option and the limit" {
	start_server -j 2 selftest --tasks 2 --report-bytes 10
	# sh -c 'cat >/dev/null' xx...x: the x's are its $0, 1023 bytes in all.
	cmd="sh -c 'cat >/dev/null' "
	cmd+=$(head -c $((1023 - ${#cmd})) /dev/zero | tr '\0' x)
	run -255 --separate-stderr submit -o "$D/o" --report-filter="${cmd}x"
	assert_one_line_error "cowrun: submit: --report-filter: 1024 bytes, longer than a served batch takes (1023 bytes)"
	run -255 --separate-stderr submit -o "$D/o" --report-to "${cmd}x"
	assert_one_line_error "cowrun: submit: --report-to: 1024 bytes, longer than a served batch takes (1023 bytes)"
	# Each at the limit, together more than a request holds.
	run -255 --separate-stderr submit -o "$D/o" --report-filter "$cmd" --report-to "$cmd" \
		--tasks "$cmd" --halt "$cmd"
	assert_one_line_error "cowrun: submit: the request is too long: its options take more than the 4096 bytes a request holds"
	[ ! -e "$D/o" ]
	# At the limit it is served.
	run -0 --separate-stderr submit -o "$D/o" --report-to "$cmd"
	[[ "$output" == "tasks 2 of 2 merged,"* ]]
	[ -z "$(ls -A "$D/o")" ]
	stop_server
	[ "$status" -eq 0 ]
}

@test "a workload that writes no reports refuses the report options of a served batch as a direct run does" {
	start_server -j 2 average
	run -255 --separate-stderr submit -o "$D/o" --report-to cat
	served_err=$stderr
	run -255 --separate-stderr cowrun --report-to cat average
	[ "$served_err" = "$stderr" ]
	assert_one_line_error "cowrun: average writes no reports:*"
	[ ! -e "$D/o" ]
	stop_server
	[ "$status" -eq 0 ]
}
