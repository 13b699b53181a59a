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
	local p
	for p in "${bg[@]}"; do
		kill -KILL "$p" 2>/dev/null || true
	done
	kill_server
	for p in "${bg[@]}"; do
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$D"
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
		submit >/dev/null 2>&1 &
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
	! grep -q "still waits" "$D/log"
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
