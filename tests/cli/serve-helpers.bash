# Shared by the cowrun serve suites (serve.bats, serve-sidefiles.bats,
# serve-identity.bats, serve-hostile.bats): a server of the test's own on
# a short socket path, started under the reaper (as another user, too),
# stopped by its pid whatever happens; submit.  Waiting on a state is
# helpers.bash's wait_for.

load helpers

# serve_setup: the test's directory $D and socket path $S; no server yet.
# A suite that needs more in its setup calls this from its own.
serve_setup() {
	D=$(mktemp -d /tmp/cws.XXXXXX)   # short: sun_path holds 108 bytes
	S=$D/s
	srv=
}

setup() {
	serve_setup
}

# kill_server: whatever happened, no server outlives its test: the master
# by its pid file, and anything else the reaper still runs (a master that
# never wrote the file, a generation left behind) by its pid.
kill_server() {
	if [ -n "$srv" ] && kill -0 "$srv" 2>/dev/null; then
		[ ! -s "$D/pid" ] || kill -KILL "$(cat "$D/pid")" 2>/dev/null || true
		pkill -KILL -P "$srv" 2>/dev/null || true
		kill -KILL "$srv" 2>/dev/null || true   # the reaper itself: nothing may hang the suite
		wait "$srv" || true
	fi
}

teardown() {
	kill_server
	rm -rf "$D"
}

submit() {
	"$COWRUN" submit --socket "$S" "$@"
}

# reachable_binaries: cowrun and the reaper copied into $D/bin, which
# another user can reach once $D can be passed through (chmod 711): a
# checkout in a home of mode 0700 (Debian's for root and new users) is out
# of their reach.  COWRUN and REAPER name the copies for the rest of the
# test.  Built-in workloads only: the bundled ones stay in the checkout.
# cowrun-supervise goes beside cowrun, where cowrun looks for it.
reachable_binaries() {
	mkdir -m 755 "$D/bin"
	cp "$COWRUN" "$ROOT/bin/cowrun-supervise" "$REAPER" "$D/bin/"
	COWRUN=$D/bin/cowrun REAPER=$D/bin/reaper
}

# teardown_background: the teardown of a test that keeps its background
# processes' pids in the array bg: each killed, the server stopped, each
# reaped, the test's directory removed.
teardown_background() {
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

# as USER CMD...: CMD as USER, its own group only.
as() {
	local user=$1
	shift
	setpriv --reuid="$user" --regid="$(id -g "$user")" --clear-groups "$@"
}

# start_server [SERVE OPTIONS] [RUNNER OPTIONS] WORKLOAD ARGS: in the
# background under the reaper (bats's descriptor 3 closed: a server left
# running cannot hold the suite's output open); returns once it answers a
# status request, or fails with its log if it ends first or does not
# answer within 30 s.
start_server() {
	start_server_as "" "$@"
}

# start_server_as USER [SERVE OPTIONS] ...: the same, the server run by
# USER (as()), and asked for its status as USER; "": this test's user.
start_server_as() {
	local user=$1 run=() deadline=$((SECONDS + 30))
	shift
	[ -z "$user" ] || run=(as "$user")
	"${run[@]}" "$REAPER" "$COWRUN" serve --socket "$S" --pidfile "$D/pid" "$@" 2>>"$D/log" 3>&- &
	srv=$!
	until "${run[@]}" "$COWRUN" submit --socket "$S" --status >/dev/null 2>&1; do
		if ! kill -0 "$srv" 2>/dev/null || [ "$SECONDS" -ge "$deadline" ]; then
			cat "$D/log" >&2
			return 1
		fi
		sleep 0.05
	done
}

# server_ended: the server (its reaper, this shell's child) has exited:
# a zombie, or gone.
server_ended() {
	local state
	state=$(sed 's/.*) \(.\).*/\1/' "/proc/$srv/stat" 2>/dev/null) || return 0
	[ "$state" = Z ]
}

# server_status: wait for the server to end (at most 60 s: a server that
# does not stop fails the test with its log, killed, rather than hang the
# suite); the reaper's status is in $status.
server_status() {
	if ! wait_for 60 "the server to end" server_ended; then
		cat "$D/log" >&2
		kill_server
		srv=
		return 1
	fi
	status=0
	wait "$srv" || status=$?
	srv=
}

# stop_server: SIGTERM to the master; the reaper's status is in $status.
stop_server() {
	kill -TERM "$(cat "$D/pid")"
	server_status || return 1
	if [ "$status" -eq 99 ]; then cat "$D/log" >&2; return 1; fi
}

# status_has TEXT: the server's --status mentions it.
status_has() {
	submit --status 2>/dev/null | grep -q -- "$1"
}

# gen_pid STATE: the pid of the generation in that state (ready, loading,
# retiring).
gen_pid() {
	submit --status | sed -n "s/^generation [0-9]* pid \([0-9]*\) $1.*/\1/p" | head -1
}

# term_twice: SIGTERM to the master, and once it has taken that one (it
# stops listening and removes its socket: not merged with the second
# while still pending), a second SIGTERM, which kills running batches.
term_twice() {
	kill -TERM "$(cat "$D/pid")"
	wait_for eval '[ ! -e "$S" ]'
	kill -TERM "$(cat "$D/pid")"
}

# python_ok NAME SCRIPT [RUNNER OPTIONS]: cowrun OPTIONS -o $D/NAME python
# SCRIPT must exit 0 and leave no process behind; its stdout in $output.
python_ok() {
	local name=$1 script=$2
	shift 2
	run --separate-stderr cowrun "$@" -o "$D/$name" python "$script"
	[ "$status" -eq 0 ] || { echo "$name failed ($status): $stderr" >&2; return 1; }
	assert_no_leftovers
}
