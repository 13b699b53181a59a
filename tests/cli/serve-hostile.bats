#!/usr/bin/env bats
# cowrun serve against clients that misbehave and a world that fails
# (issue 23): a refused uid's flood costs nothing; a client that stops
# reading stalls only itself; --max-workers holds across reloads; every
# reply reaches its client; a lost generation is retried, and a server
# that cannot serve says so in its exit status; systemd's socket
# activation and the example units.  Every server runs under the reaper
# and is stopped by pid in teardown, whatever happened.

load serve-helpers

setup() {
	serve_setup
	bg=()
}

# The test's background processes and the FIFO it holds (fd 7) go too.
teardown() {
	exec 7>&- 2>/dev/null || true
	teardown_background
}

answers_status() {
	submit --status >/dev/null 2>&1
}

leader_pid() {
	submit --status | sed -n 's/^  batch leader pid \([0-9]*\),.*/\1/p' | head -1
}

proc_state() {
	sed 's/.*) \(.\).*/\1/' "/proc/$1/stat" 2>/dev/null
}

# fill_fifo PATH: a FIFO that someone holds open (fd 7, read and write,
# never read) and whose buffer is full: a writer to it blocks for good.
fill_fifo() {
	mkfifo "$1"
	exec 7<>"$1"
	python3 - "$1" <<'PY'
import os, sys
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_NONBLOCK)
try:
    while True:
        os.write(fd, b"x" * 4096)
except BlockingIOError:
    pass
PY
}

# A leader with no worker left, asleep, three looks in a row: it waits to
# write to its client.
leader_waits() {
	local i
	for i in 1 2 3; do
		[ "$(proc_state "$1")" = S ] || return 1
		[ -z "$(ps --ppid "$1" -o pid=)" ] || return 1
		sleep 0.1
	done
}

# stuck_client OUT: a submit into OUT whose stdout is the full FIFO $D/f,
# in the background ($c), once its batch's leader ($leader) waits to
# write to it.
stuck_client() {
	"$COWRUN" submit --socket "$S" -o "$1" >"$D/f" 2>/dev/null &
	c=$!
	bg+=("$c")
	wait_for 30 "a leader" eval '[ -n "$(leader_pid)" ]'
	leader=$(leader_pid)
	wait_for 30 "the leader to wait on the full pipe" leader_waits "$leader"
}

gone() {
	! kill -0 "$1" 2>/dev/null
}

# ms_until_gone PID: how long PID takes to end, in ms (at most ~10 s).
ms_until_gone() {
	local t0 i
	t0=$(date +%s%N)
	for i in $(seq 1000); do
		gone "$1" && break
		sleep 0.01
	done
	echo $((($(date +%s%N) - t0) / 1000000))
}

@test "a refused uid's flood costs nothing: every request of the server's user is answered, the log stays small" {
	chmod 711 "$D"
	start_server --socket-mode 0666 selftest --tasks 2
	log_before=$(wc -c <"$D/log")
	# Four processes of uid nobody connect as fast as they can for 10 s,
	# each keeping 60 connections open (half with a request sent), never
	# reading; a sample of them reads its reply first.
	# (The system's python: a user's own, under /root, is not nobody's to run.)
	setpriv --reuid=nobody --regid=nogroup --clear-groups /usr/bin/python3 -c '
import os, socket, sys, time
path, secs = sys.argv[1], float(sys.argv[2])
req = bytes.fromhex("435752510100020000000000")   # a status request
def flood():
    end, held, made, told = time.time() + secs, [], 0, 0
    while time.time() < end:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.settimeout(1)
        try:
            s.connect(path)
            made += 1
            if made % 2:
                s.send(req)
            if made % 50 == 0 and b"permission denied" in s.recv(8192):
                told += 1
        except OSError:
            pass
        held.append(s)
        if len(held) > 60:
            held.pop(0).close()
    print(made, told, flush=True)
kids = []
for _ in range(3):
    pid = os.fork()
    if pid == 0:
        flood()
        os._exit(0)
    kids.append(pid)
flood()
for pid in kids:
    os.waitpid(pid, 0)
' "$S" 10 >"$D/flood.out" 2>&1 &
	flood=$!
	bg+=("$flood")
	answered=0 failed=0 end=$((SECONDS + 10))
	while [ "$SECONDS" -lt "$end" ]; do
		if timeout 20 "$COWRUN" submit --socket "$S" --tasks 0 >/dev/null 2>>"$D/failures"; then
			answered=$((answered + 1))
		else
			failed=$((failed + 1))
		fi
	done
	wait "$flood"
	echo "# answered $answered, failed $failed; flood (connections, replies read): $(tr '\n' ' ' <"$D/flood.out")" >&3
	[ "$failed" -eq 0 ] || { head -5 "$D/failures" >&2; false; }
	[ "$answered" -ge 5 ]
	# The flood was one: thousands of connections, and those that read
	# heard why they were refused.
	made=$(awk '{ n += $1 } END { print n }' "$D/flood.out")
	told=$(awk '{ n += $2 } END { print n }' "$D/flood.out")
	[ "$made" -ge 1000 ] && [ "$told" -ge 1 ]
	# The log: a line for the first refusal, then a count per 10 s.
	grep -q "refused a connection from uid 65534" "$D/log"
	growth=$(($(wc -c <"$D/log") - log_before))
	echo "# log grew by $growth bytes" >&3
	[ "$growth" -le 1024 ] || { tail -5 "$D/log" >&2; false; }
	stop_server
	[ "$status" -eq 0 ]
}

@test "errors are replies, never a reset connection: a full server says it is busy to a client whose request already waits" {
	start_server --read-timeout 60000 selftest --tasks 2
	run -0 python3 - "$S" "$(cat "$D/pid")" <<'PY'
import os, signal, socket, struct, sys
path, master = sys.argv[1], int(sys.argv[2])
def conn():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    s.connect(path)
    return s
def reply(s):
    try:
        r = s.recv(8192)
    except ConnectionResetError:
        return "reset"
    return r[16:].decode() if r else "closed"
held = [conn() for _ in range(64)]      # every waiting slot, no request
print("65th:", reply(conn()))           # accepted after them: busy
os.kill(master, signal.SIGSTOP)         # the next request arrives first
s = conn()
s.send(bytes.fromhex("435752510100020000000000"))
os.kill(master, signal.SIGCONT)
print("66th:", reply(s))
PY
	[[ "$output" == *"65th: server busy"* ]]
	[[ "$output" == *"66th: server busy: too many connections waiting"* ]]
	wait_for 30 "the held connections to go" answers_status
	stop_server
	[ "$status" -eq 0 ]
}

@test "a failed reload's reply always carries the setup's messages, even when the master hears of its end first" {
	mkdir "$D/mk"
	echo one >"$D/in"
	start_server selftest --tasks 2 --input "$D/in" --mark-start "$D/mk/m"
	# The new setup blocks reading its input (a FIFO) ...
	rm "$D/in"
	mkfifo "$D/in"
	submit --reload >"$D/reload.out" 2>"$D/reload.err" &
	r=$!
	bg+=("$r")
	wait_for 30 "the new generation to set up" status_has "loading"
	gen=$(gen_pid loading)
	master=$(cat "$D/pid")
	# ... and fails (its marks' directory is a file now) while the master
	# is stopped: its exit and its message wait together.
	kill -STOP "$master"
	rm -r "$D/mk"
	touch "$D/mk"
	echo one >"$D/in"
	wait_for 30 "the generation to end" eval '[ "$(proc_state "$gen")" = Z ]'
	kill -CONT "$master"
	status=0
	wait "$r" || status=$?
	[ "$status" -eq 255 ]
	[[ "$(cat "$D/reload.err")" == *"reload failed: generation 2's setup failed: "*"mk"*"the previous generation still serves"* ]]
	rm "$D/mk"
	mkdir -p "$D/mk/m"
	run -0 submit --tasks 0
	stop_server
	[ "$status" -eq 0 ]
}

@test "a client whose stdout is closed gets 254 and the message a direct run gives; its reports are written" {
	start_server -j 2 selftest --tasks 4 --report-bytes 10
	run --separate-stderr bash -c '"$@" >&-' _ "$COWRUN" submit --socket "$S" -o "$D/out"
	[ "$status" -eq 254 ]
	assert_one_line_error "cowrun: cannot write the summary to standard output: Bad file descriptor"
	[ "$(ls "$D/out" | wc -l)" -eq 4 ]
	run --separate-stderr bash -c '"$@" >&-' _ "$COWRUN" -j 2 -o "$D/direct" selftest --tasks 4 --report-bytes 10
	[ "$status" -eq 254 ]
	assert_one_line_error "cowrun: cannot write the summary to standard output: Bad file descriptor"
	stop_server
	[ "$status" -eq 0 ]
}

@test "descriptors the server inherits are closed in the master, its generations and leaders" {
	exec 7>"$D/inherited"
	LISTEN_PID=1 LISTEN_FDS=1 start_server -j 1 selftest --tasks 2 --slow 0:30000 --report-bytes 10 --mark-start "$D/m"
	exec 7>&-
	"$COWRUN" submit --socket "$S" >/dev/null 2>&1 &
	c=$!
	bg+=("$c")
	wait_for 30 "the batch to start" started_at_least "$D/m" 1
	master=$(cat "$D/pid")
	for p in "$master" "$(gen_pid ready)" "$(leader_pid)" "$(first_started_pid "$D/m")"; do
		[ -d "/proc/$p" ]
		if ls -l "/proc/$p/fd" | grep -q inherited; then
			echo "process $p holds the inherited descriptor" >&2
			false
		fi
	done
	kill -KILL "$c"
	wait_for 30 "the batch to be cancelled" status_has "ready, 0 batches running"
	# LISTEN_PID was not its own: unset, so no program the server starts
	# sees it.  (Not /proc/PID/environ: it shows what the process was
	# exec'ed with, which unsetenv() leaves as it was.)
	run -0 submit -o "$D/o" --tasks 1 --report-to "sh -c 'env >$D/env'"
	[ -s "$D/env" ]
	! grep -q '^LISTEN_' "$D/env" || { echo "a --report-to command sees LISTEN_*" >&2; return 1; }
	stop_server
	[ "$status" -eq 0 ]
}

@test "a request whose client goes away while it waits for workers gets no leader" {
	start_server --max-workers 1 -j 1 selftest --tasks 4 --sleep-ms 30000 --mark-start "$D/m"
	"$COWRUN" submit --socket "$S" --tasks 0 >/dev/null 2>&1 &
	a=$!
	bg+=("$a")
	wait_for 30 "the first batch to start" started_at_least "$D/m" 1
	"$COWRUN" submit --socket "$S" --tasks 1 >/dev/null 2>&1 &
	b=$!
	bg+=("$b")
	wait_for 30 "the second batch to wait" status_has "batches waiting 1"
	kill -KILL "$b"
	wait_for 30 "its request to be dropped" status_has "batches waiting 0"
	grep -q "client pid $b went away while its batch waited for workers" "$D/log"
	kill -KILL "$a"
	wait_for 30 "the first batch to end" status_has "workers in use 0,"
	run -0 submit --status
	[[ "$output" == *"batches started 1,"* ]]
	[ "$(started_count "$D/m")" -eq 1 ]
	stop_server
	[ "$status" -eq 0 ]
}

@test "a client that stops reading and is killed: its batch is cancelled within a second, its leader gone" {
	fill_fifo "$D/f"
	start_server -j 2 selftest --tasks 4 --report-bytes 10
	stuck_client "$D/out"
	kill -KILL "$c"
	ms=$(ms_until_gone "$leader")
	echo "# leader gone ${ms} ms after its client" >&3
	gone "$leader"
	[ "$ms" -lt 1000 ]
	wait_for 30 "no batch running" status_has "ready, 0 batches running"
	stop_server
	[ "$status" -eq 0 ]
}

@test "a client that stops reading stalls only itself: others are served beside it, two SIGTERMs stop the server" {
	fill_fifo "$D/f"
	start_server --max-workers 2 -j 2 selftest --tasks 6 --sleep-ms 50 --mark-start "$D/m"
	"$COWRUN" submit --socket "$S" -o "$D/o1" >"$D/f" 2>"$D/stuck.err" &
	c=$!
	bg+=("$c")
	wait_for 30 "the first batch's tasks" started_at_least "$D/m" 6
	leader=$(leader_pid)
	wait_for 30 "the leader to wait on the full pipe" leader_waits "$leader"
	# Its workers are back under the cap: a batch of -j 2 runs now.
	run -0 timeout 20 "$COWRUN" submit --socket "$S" -o "$D/o2"
	cowrun -j 2 selftest --tasks 6 --sleep-ms 50 >"$D/direct.out"
	[ "$output" = "$(cat "$D/direct.out")" ]
	# The first SIGTERM lets the stuck batch be; the second ends it.
	master=$(cat "$D/pid")
	kill -TERM "$master"
	wait_for 30 "the server to stop listening" eval '[ ! -e "$S" ]'
	kill -0 "$leader"
	kill -TERM "$master"
	ms=$(ms_until_gone "$master")
	echo "# server gone ${ms} ms after the second SIGTERM" >&3
	gone "$master"
	server_status
	[ "$status" -eq 0 ]
	wait "$c" || true
}

@test "a client that stops reading stalls only itself when its batch went to a lent spare the generation heard of late" {
	fill_fifo "$D/f"
	start_server --max-workers 2 -j 2 selftest --tasks 6 --report-bytes 10
	wait_for 30 "two lent spares" status_has "ready, 0 batches running, 2 spare leaders lent"
	gen=$(gen_pid ready)
	# The generation stopped: the master hands the batch to a lent spare
	# and its TOOK waits; the batch's workers end, its client reads
	# nothing, so the leader gives its workers back before its generation
	# knows it as a leader.
	kill -STOP "$gen"
	stuck_client "$D/o1"
	kill -CONT "$gen"
	wait_for 30 "its workers back" status_has "workers in use 0"
	kill -0 "$leader"
	# a batch of -j 2 runs beside the stuck one
	run -0 timeout 20 "$COWRUN" submit --socket "$S" -o "$D/o2"
	cowrun -j 2 selftest --tasks 6 --report-bytes 10 >"$D/direct.out"
	[ "$output" = "$(cat "$D/direct.out")" ]
	kill -KILL "$c"
	wait_for 30 "no batch running" status_has "ready, 0 batches running"
	run -0 submit --status
	[[ "$output" == *"workers in use 0"* ]]
	stop_server
	[ "$status" -eq 0 ]
}

# max_workers_seen MASTER SECONDS: sample the processes three levels
# below MASTER (master, generation, leader, worker) every 10 ms; print
# the most seen alive at once, and the number of samples.  A spare
# leader's standby (named cowrun-standby until its batch takes it; for
# an instant after its fork still named as its spare, cowrun-spare) runs
# nothing: not a worker yet.
max_workers_seen() {
	python3 - "$1" "$2" <<'PY'
import os, sys, time
master, end = int(sys.argv[1]), time.time() + float(sys.argv[2])
most = samples = 0
while time.time() < end:
    parent, state = {}, {}
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    s = f.read()
            except OSError:
                continue
            if s[s.index("(") + 1:s.rindex(")")] in ("cowrun-standby", "cowrun-spare"):
                continue
            rest = s[s.rindex(")") + 2:].split()
            state[int(p)], parent[int(p)] = rest[0], int(rest[1])
    def depth(p):
        for d in range(4):
            if p == master:
                return d
            p = parent.get(p, 0)
        return -1
    live = sum(1 for p in parent if depth(p) == 3 and state[p] not in "ZX")
    most, samples = max(most, live), samples + 1
    time.sleep(0.01)
print(most, samples)
PY
}

@test "--max-workers is the whole server's: sampled while reloading, never more workers alive than the cap" {
	start_server --max-workers 2 -j 2 selftest --tasks 6 --sleep-ms 100
	master=$(cat "$D/pid")
	max_workers_seen "$master" 6 >"$D/seen" &
	sampler=$!
	bg+=("$sampler")
	for i in 1 2 3; do
		(end=$((SECONDS + 6)); while [ "$SECONDS" -lt "$end" ]; do submit >/dev/null || exit 1; done) &
		bg+=($!)
	done
	reloads=0 end=$((SECONDS + 6))
	while [ "$SECONDS" -lt "$end" ]; do
		submit --reload >/dev/null && reloads=$((reloads + 1))
		sleep 0.1
	done
	wait "$sampler"
	for p in "${bg[@]:1}"; do wait "$p"; done
	read -r most samples <"$D/seen"
	# Every batch's workers given back once its leader has ended (it
	# ends after its client has the reply).
	wait_for 10 "every worker given back" status_has "workers in use 0,"
	run -0 submit --status
	echo "# reloads $reloads, samples $samples, most workers alive at once $most; $(head -1 <<<"$output")" >&3
	[ "$most" -ge 1 ] && [ "$most" -le 2 ]
	[ "$reloads" -ge 5 ] && [ "$samples" -ge 20 ]
	stop_server
	[ "$status" -eq 0 ]
}

# spares GEN: the pids of GEN's spare leaders (forked in advance, waiting).
spares() {
	ps --ppid "$1" -o pid=,comm= | awk '$2 == "cowrun-spare" { print $1 }' | sort
}

@test "spare leaders: forked in advance, each takes one request; one killed while it waits is replaced; none outlives its generation" {
	start_server -j 1 selftest --tasks 3 --sleep-ms 300 --slow 1:3000   # task 1 outlives our look at its leader
	gen=$(gen_pid ready)
	wait_for 10 "two spares" eval '[ "$(spares "$gen" | wc -l)" -eq 2 ]'
	# Both lent to the master (under load their notes may still be on the way).
	wait_for 10 "two spares lent" status_has "ready, 0 batches running, 2 spare leaders lent"
	before=$(spares "$gen")
	# A request goes to a spare: its leader is one of them, renamed.
	submit --tasks 1 >"$D/a.out" 2>"$D/a.err" &
	a=$!
	bg+=("$a")
	wait_for 10 "the batch's leader" eval '[ -n "$(leader_pid)" ]'
	leader=$(leader_pid)
	grep -qx "$leader" <<<"$before" ||
		{ echo "leader $leader, spares before: $before" >&2; submit --status >&2; cat "$D/log" >&2; false; }
	wait_for 10 "the spare to take its leader's name" eval '[ "$(ps -o comm= -p "$leader")" = cowrun ]'
	wait "$a"
	"$COWRUN" -j 1 --tasks 1 selftest --tasks 3 --sleep-ms 300 --slow 1:3000 >"$D/direct.out"
	cmp "$D/a.out" "$D/direct.out"
	# A spare killed while it waits: reaped, replaced, requests still served.
	wait_for 10 "two spares again" eval '[ "$(spares "$gen" | wc -l)" -eq 2 ]'
	victim=$(spares "$gen" | head -1)
	kill -KILL "$victim"
	wait_for 10 "the killed spare reaped" eval '! ps -p "$victim" >/dev/null'
	wait_for 10 "a spare in its place" eval '[ "$(spares "$gen" | wc -l)" -eq 2 ]'
	submit --tasks 0 >"$D/b.out"
	grep -q "tasks 1 of 3 merged" "$D/b.out"
	# A reload: the old generation's spares end with it.
	old=$(spares "$gen")
	submit --reload >/dev/null
	wait_for 30 "the old generation gone" eval '! kill -0 "$gen" 2>/dev/null'
	for p in $old; do
		! kill -0 "$p" 2>/dev/null || { echo "spare $p of the old generation lives" >&2; return 1; }
	done
	# A generation killed: its spares die with it, reaped by the master.
	gen=$(gen_pid ready)
	wait_for 10 "two spares" eval '[ "$(spares "$gen" | wc -l)" -eq 2 ]'
	old=$(spares "$gen")
	kill -KILL "$gen"
	wait_for 30 "a new generation" status_has "generation 3 pid .* ready"
	for p in $old; do
		wait_for 10 "spare $p reaped" eval '! kill -0 "$p" 2>/dev/null'
	done
	stop_server
	[ "$status" -eq 0 ]
}

# standbys GEN: the pids of the standby workers of GEN's spares.
standbys() {
	local sp
	for sp in $(spares "$1"); do
		ps --ppid "$sp" -o pid=,comm= | awk '$2 == "cowrun-standby" { print $1 }'
	done | sort
}

# stats_pids FILE: the worker pids of a --stats file.
stats_pids() {
	grep -v '^#' "$1" | tail -n +2 | cut -d, -f2 | sort
}

@test "standby workers: one per spare, forked in advance, the batch's first worker, as the client; one killed while it waits leaves the batch to fork; none outlives its spare" {
	mkdir -m 777 "$D/o"
	start_server -j 2 selftest --tasks 6 --report-bytes 10
	gen=$(gen_pid ready)
	wait_for 10 "two standbys" eval '[ "$(standbys "$gen" | wc -l)" -eq 2 ]'
	before=$(standbys "$gen")
	# The batch's slot 0 is a standby that was waiting; the other forked.
	submit -o "$D/a" --stats "$D/a.csv" >"$D/a.out" 2>"$D/a.err"
	"$COWRUN" -j 2 -o "$D/direct" selftest --tasks 6 --report-bytes 10 >"$D/direct.out"
	cmp "$D/a.out" "$D/direct.out"
	[ ! -s "$D/a.err" ]
	diff -r "$D/a" "$D/direct"
	slot0=$(grep '^0,' "$D/a.csv" | cut -d, -f2)
	grep -qx "$slot0" <<<"$before"
	[ "$(stats_pids "$D/a.csv" | wc -l)" -eq 2 ]
	# As another user, the standby is that user: the reports it wrote are.
	nobody=$(id -u nobody)
	if [ "$(id -u)" -eq 0 ]; then
		wait_for 10 "two standbys" eval '[ "$(standbys "$gen" | wc -l)" -eq 2 ]'
		stop_server
		chmod 711 "$D"
		reachable_binaries
		start_server --allow-uid "$nobody" --socket-mode 0666 -j 1 selftest --tasks 6 --report-bytes 10
		gen=$(gen_pid ready)
		wait_for 10 "two standbys" eval '[ "$(standbys "$gen" | wc -l)" -eq 2 ]'
		setpriv --reuid "$nobody" --regid "$nobody" --clear-groups \
			"$COWRUN" submit --socket "$S" -o "$D/o/n" --tasks 2 >/dev/null
		[ "$(stat -c %u "$D/o/n/task-000002")" -eq "$nobody" ]
	fi
	# Standbys killed while they wait: the next batch forks its workers,
	# and says nothing of it.
	wait_for 10 "two standbys" eval '[ "$(standbys "$gen" | wc -l)" -eq 2 ]'
	victims=$(standbys "$gen")
	kill -KILL $victims
	for v in $victims; do wait_for 10 "standby $v gone" eval '! ps -p "$v" -o stat= | grep -qv Z'; done
	submit -o "$D/b" --stats "$D/b.csv" --tasks 0-5 >"$D/b.out" 2>"$D/b.err"
	[ ! -s "$D/b.err" ]
	grep -q "tasks 6 of 6 merged" "$D/b.out"
	for v in $victims; do
		! grep -qx "$v" <(stats_pids "$D/b.csv") || { echo "killed standby $v ran a task" >&2; return 1; }
	done
	# A reload: the old spares' standbys end with them.
	old=$(standbys "$gen")
	submit --reload >/dev/null
	wait_for 30 "the old generation gone" eval '! kill -0 "$gen" 2>/dev/null'
	for p in $old; do
		wait_for 10 "standby $p gone" eval '! kill -0 "$p" 2>/dev/null'
	done
	stop_server
	[ "$status" -eq 0 ]
}

@test "a lost generation is replaced, retried with a back-off while its setup fails; the server that gives up exits 254" {
	echo one >"$D/in"
	start_server selftest --tasks 2 --input "$D/in"
	kill -KILL "$(gen_pid ready)"
	wait_for 30 "a new generation" status_has "generation 2 pid .* ready"
	grep -q "generation 1 (pid [0-9]*) ended: killed by SIGKILL" "$D/log"
	# The setup fails for a while: tried again, after growing waits, and
	# a client waiting meanwhile is served once one succeeds.
	rm "$D/in"
	kill -KILL "$(gen_pid ready)"
	wait_for 30 "a second try" grep -q "try 2 of 5" "$D/log"
	submit --tasks 0 >"$D/waited.out" 2>"$D/waited.err" &
	w=$!
	bg+=("$w")
	echo one >"$D/in"
	wait "$w" || { cat "$D/waited.err" "$D/log" >&2; false; }
	grep -q "tasks 1 of 2 merged" "$D/waited.out"
	# It never comes back: the server stops, exit status 254, and says so
	# to the client that waits.
	rm "$D/in"
	kill -KILL "$(gen_pid ready)"
	wait_for 30 "a second try" eval '[ "$(grep -c "try 2 of 5" "$D/log")" -eq 2 ]'
	"$COWRUN" submit --socket "$S" --tasks 0 >/dev/null 2>"$D/late.err" &
	w=$!
	bg+=("$w")
	server_status
	[ "$status" -eq 254 ] || { cat "$D/log" >&2; false; }
	grep -q "the server stopped: no generation could be set up in 5 tries" "$D/log"
	[ ! -e "$S" ]
	status=0
	wait "$w" || status=$?
	[ "$status" -eq 254 ]
	grep -q "the server stopped: no generation could be set up" "$D/late.err"
}

@test "systemd socket activation: started on the first connection, serves the socket it was given, never removes it" {
	command -v systemd-socket-activate >/dev/null || skip "systemd is not installed (make deps installs it)"
	"$REAPER" systemd-socket-activate --seqpacket -l "$S" \
		"$COWRUN" serve --socket "$S" --pidfile "$D/pid" -j 2 selftest --tasks 5 --report-bytes 10 2>>"$D/log" 3>&- &
	srv=$!
	wait_for 30 "the socket" test -S "$S"
	# The first connection starts the server; it waits until served.
	run -0 submit --status
	[[ "$output" == *"generation 1 pid "*" ready"* ]]
	grep -q "serving the socket systemd passed" "$D/log"
	master=$(cat "$D/pid")
	# Descriptor 3 is the socket, non-blocking.
	[[ "$(readlink "/proc/$master/fd/3")" == socket:* ]]
	flags=$(awk '/^flags:/ { print $2 }' "/proc/$master/fdinfo/3")
	[ $((8#$flags & 8#4000)) -ne 0 ]
	# The variables are unset: no program the server starts sees them
	# (see the test of inherited descriptors for why not /proc/PID/environ).
	run -0 submit -o "$D/rt" --tasks 0 --report-to "sh -c 'env >$D/env'"
	[ -s "$D/env" ]
	! grep -q '^LISTEN_' "$D/env" || { echo "a --report-to command sees LISTEN_*" >&2; return 1; }
	run -0 submit -o "$D/out"
	cowrun -j 2 -o "$D/direct" selftest --tasks 5 --report-bytes 10 >"$D/direct.out"
	[ "$output" = "$(cat "$D/direct.out")" ]
	stop_server
	[ "$status" -eq 0 ]
	[ -S "$S" ]   # systemd's to remove
	# A socket of another kind, or bound elsewhere, is refused.
	rm "$S"
	run -255 timeout 20 bash -c '
		"$3" systemd-socket-activate -l "$1" "$2" serve --socket "$1" selftest & a=$!
		for _ in $(seq 200); do [ -S "$1" ] && break; sleep 0.05; done
		python3 -c "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])" "$1"
		wait $a' _ "$S" "$COWRUN" "$REAPER"
	[[ "$output" == *"not a listening Unix SOCK_SEQPACKET socket: the unit needs ListenSequentialPacket=$S"* ]]
}

@test "the example systemd units: make install puts them in unitdir, systemd-analyze verify passes them, make uninstall removes them" {
	command -v systemd-analyze >/dev/null || skip "systemd is not installed (make deps installs it)"
	d=$D/prefix
	make -s -C "$ROOT" install prefix="$d" >/dev/null
	units="cowrun-serve.socket cowrun-serve.service cowrun-nightly.service cowrun-nightly.timer"
	for u in $units; do
		[ -f "$d/lib/systemd/system/$u" ]
	done
	grep -q "^ExecStart=$d/bin/cowrun serve --socket /run/cowrun/serve.sock " "$d/lib/systemd/system/cowrun-serve.service"
	grep -q "^ListenSequentialPacket=/run/cowrun/serve.sock$" "$d/lib/systemd/system/cowrun-serve.socket"
	(cd "$d/lib/systemd/system" && MANPATH=$d/share/man systemd-analyze verify $units)
	make -s -C "$ROOT" uninstall prefix="$d" >/dev/null
	for u in $units; do
		[ ! -e "$d/lib/systemd/system/$u" ]
	done
	# Another unitdir.
	make -s -C "$ROOT" install prefix="$d" unitdir="$d/units" >/dev/null
	[ -f "$d/units/cowrun-nightly.timer" ]
	make -s -C "$ROOT" uninstall prefix="$d" unitdir="$d/units" >/dev/null
	[ -z "$(ls -A "$d/units")" ]
}
