#!/usr/bin/env bats
# cowrun serve under reloads and churn (issue 32): reloads as fast as the
# server accepts them, beside two busy loops, while clients keep
# submitting short batches and some are SIGKILLed mid-batch.  Once every
# client has gone, every retired generation must end within its bound,
# and one SIGTERM must end the server within 10 s.  STRESS_SECONDS sets
# how long the churn lasts (default 8; run it longer by hand).

load serve-helpers

# Once a retired generation has nothing left to wait for, it ends within
# this (the master names one that does not in its log: RETIRE_BOUND_MS in
# master.c is 5 s; the test allows for a loaded machine).
BOUND=10

setup() {
	serve_setup
	bg=()
}

teardown() {
	teardown_background
}

busy_loop() {
	exec 3>&-
	while :; do :; done
}

# client_loop UNTIL: short batches one after another until SECONDS
# reaches UNTIL; a refusal (server busy, a generation lost) is fine, a
# hang is not (the caller waits for the loop with a deadline).
client_loop() {
	exec 3>&-
	while [ "$SECONDS" -lt "$1" ]; do
		submit >/dev/null 2>&1 || true
	done
}

# killer_loop UNTIL COUNTFILE: batches whose client is SIGKILLed after
# 10-80 ms, mid-batch (each batch takes about 100 ms); one line each.
killer_loop() {
	exec 3>&-
	local c
	while [ "$SECONDS" -lt "$1" ]; do
		"$COWRUN" submit --socket "$S" >/dev/null 2>&1 &   # not the function: $! is the client
		c=$!
		sleep "0.0$((RANDOM % 8 + 1))"
		kill -KILL "$c" 2>/dev/null && echo killed >>"$2"
		wait "$c" 2>/dev/null || true
	done
}

# reload_loop UNTIL OUTFILE: reloads paced to what the server accepts (a
# reload waits for its setup; a refused one, made while another loads or
# with 8 generations alive, is counted and tried again after 20 ms).
reload_loop() {
	exec 3>&-
	local ok=0 refused=0
	while [ "$SECONDS" -lt "$1" ]; do
		if submit --reload >/dev/null 2>&1; then
			ok=$((ok + 1))
		else
			refused=$((refused + 1))
			sleep 0.02
		fi
	done
	echo "$ok $refused" >"$2"
}

# all_gone PID...: none of them runs any more (zombies reaped by wait).
all_gone() {
	local p
	for p in "$@"; do
		! kill -0 "$p" 2>/dev/null || return 1
	done
}

# only_one_generation: the server's status lists a single generation, ready.
only_one_generation() {
	local out
	out=$(submit --status 2>/dev/null) || return 1
	[ "$(grep -c '^generation ' <<<"$out")" -eq 1 ] && grep -q '^generation .* ready,' <<<"$out"
}

# zombies_under PID: zombie processes among PID's descendants.
zombies_under() {
	python3 - "$1" <<'PY'
import os, sys
root = int(sys.argv[1])
parent, state = {}, {}
for p in os.listdir("/proc"):
    if p.isdigit():
        try:
            s = open(f"/proc/{p}/stat").read()
        except OSError:
            continue
        rest = s[s.rindex(")") + 2:].split()
        state[int(p)], parent[int(p)] = rest[0], int(rest[1])
def under(p):
    for _ in range(8):
        p = parent.get(p, 0)
        if p == root:
            return True
    return False
print(sum(1 for p in parent if under(p) and state[p] == "Z"))
PY
}

@test "serve under reloads, churn and two busy loops: every retired generation ends within its bound, one SIGTERM ends the server" {
	start_server --max-workers 2 -j 2 selftest --tasks 4 --sleep-ms 40
	master=$(cat "$D/pid")
	busy_loop &
	bg+=($!)
	busy_loop &
	bg+=($!)
	local until=$((SECONDS + ${STRESS_SECONDS:-8})) clients=()
	for i in 1 2 3; do
		client_loop "$until" &
		clients+=($!)
	done
	killer_loop "$until" "$D/killed" &
	clients+=($!)
	reload_loop "$until" "$D/reloads" &
	clients+=($!)
	bg+=("${clients[@]}")
	wait_for $((${STRESS_SECONDS:-8} + 60)) "every client to finish" all_gone "${clients[@]}"
	for p in "${clients[@]}"; do wait "$p" || true; done
	read -r reloads refused <"$D/reloads"
	killed=$(wc -l <"$D/killed")
	status_before=$(submit --status)
	if ! wait_for "$BOUND" "every retired generation to end" only_one_generation; then
		submit --status >&2
		cat "$D/log" >&2
		false
	fi
	echo "# reloads $reloads accepted, $refused refused; $killed clients SIGKILLed mid-batch" >&3
	[ "$reloads" -ge 3 ] && [ "$killed" -ge 3 ]
	# Nothing left behind in the live generation either.
	wait_for 10 "no zombie under the server" eval '[ "$(zombies_under "$master")" -eq 0 ]'
	status_has "workers in use 0, batches waiting 0"
	! grep -q "still waits" "$D/log" || { cat "$D/log" >&2; return 1; }
	# One SIGTERM ends the server within 10 s.
	kill -TERM "$master"
	if ! wait_for 10 "the server to end after one SIGTERM" server_ended; then
		cat "$D/log" >&2
		false
	fi
	status=0
	wait "$srv" || status=$?
	srv=
	[ "$status" -eq 0 ]
}

# flood_until_refused DIR: run requests (task 0) until the master says the
# generation is not keeping up (its channel is full); their clients' pids
# are appended to $D/flood.pids.
flood_until_refused() {
	local i=0 k dir=$1
	mkdir -p "$dir"
	while [ "$i" -lt 1000 ]; do
		for k in $(seq 25); do
			i=$((i + 1))
			"$COWRUN" submit --socket "$S" --tasks 0 -o "$dir/$i" >/dev/null 2>"$dir/$i.err" 3>&- &
			echo $! >>"$D/flood.pids"
		done
		if wait_for 2 "a refusal" eval 'grep -qs "not keeping up" "$dir"/*.err'; then
			return 0
		fi
	done
	return 1
}

@test "a grant and a retire sent while a generation's channel is full are delivered once it drains: its queued batch runs, it ends" {
	start_server --max-workers 1 -j 1 selftest --tasks 2 --slow 1:60000 --mark-start "$D/m"
	# A holds the only worker in generation 1; a reload retires generation 1.
	"$COWRUN" submit --socket "$S" --tasks 1 -o "$D/a" >/dev/null 2>&1 3>&- &
	a=$!
	bg+=("$a")
	wait_for 30 "A's task to start" eval 'compgen -G "$D/m/task-000001.*" >/dev/null'
	submit --reload >/dev/null
	gen2=$(gen_pid ready)
	# B waits for that worker in generation 2.
	submit --tasks 0 -o "$D/b" >"$D/b.out" 2>"$D/b.err" 3>&- &
	b=$!
	bg+=("$b")
	wait_for 30 "B to wait for its worker" status_has "batches waiting 1"
	# Generation 2 stops reading: its channel fills up.
	kill -STOP "$gen2"
	flood_until_refused "$D/flood"
	# Now the worker comes free (A's client gone: its batch cancelled) and
	# is granted to B, and a reload retires generation 2: both messages
	# meet a full channel.
	kill -KILL "$a"
	wait_for 30 "generation 1 to end with A's batch" eval '! status_has "^generation 1 "'
	submit --reload >/dev/null
	kill -CONT "$gen2"
	# B's batch runs, every flooded client gets its answer, and the
	# retired generation 2 ends.
	wait_for 60 "B's batch" all_gone "$b"
	status=0
	wait "$b" || status=$?
	[ "$status" -eq 0 ]
	grep -q "tasks 1 of 2 merged" "$D/b.out"
	wait_for 60 "every flooded client's answer" all_gone $(cat "$D/flood.pids")
	wait_for "$BOUND" "generation 2 to end" all_gone "$gen2"
	! grep -q "cannot pass on a grant" "$D/log" || { cat "$D/log" >&2; return 1; }
	stop_server
	[ "$status" -eq 0 ]
}

@test "a retired generation that outlives its bound is named in the master's log; --status says what a retiring one waits for" {
	start_server -j 1 selftest --tasks 2 --slow 1:60000 --mark-start "$D/m"
	# A batch keeps generation 1 busy after its retirement: --status says so.
	"$COWRUN" submit --socket "$S" --tasks 1 >/dev/null 2>&1 3>&- &
	a=$!
	bg+=("$a")
	wait_for 30 "the batch to start" eval 'compgen -G "$D/m/task-000001.*" >/dev/null'
	gen1=$(gen_pid ready)
	submit --reload >/dev/null
	wait_for 30 "generation 1 to say what it waits for" \
		status_has "^generation 1 pid $gen1 retiring, 1 batches running, .*waits for 1 leaders, 0 queued requests, 0 lent spares"
	kill -KILL "$a"
	wait_for "$BOUND" "generation 1 to end" all_gone "$gen1"
	# A generation that cannot end (stopped here) is named once it has
	# had nothing to wait for past its bound (5 s).
	gen2=$(gen_pid ready)
	kill -STOP "$gen2"
	submit --reload >/dev/null
	# Its two lent spares, given back, still count until it says they ended.
	status_has "^generation 2 pid $gen2 retiring, 0 batches running, 2 spare leaders lent; .*has not said what it waits for"
	wait_for 30 "the log to name generation 2" \
		grep -q "generation 2 (pid $gen2) retired .* has not ended, past its bound of 5 s: .* 2 lent spares given back" "$D/log"
	kill -CONT "$gen2"
	wait_for "$BOUND" "generation 2 to end" all_gone "$gen2"
	stop_server
	[ "$status" -eq 0 ]
}
