# Shared by the cowrun serve suites (serve.bats, serve-sidefiles.bats): a
# server of the test's own on a short socket path, started under the
# reaper, stopped by its pid whatever happens; submit; waiting on a state.

load helpers

setup() {
	D=$(mktemp -d /tmp/cws.XXXXXX)   # short: sun_path holds 108 bytes
	S=$D/s
	srv=
}

# Whatever happened, no server outlives its test: the master by its pid
# file, and anything else the reaper still runs (a master that never wrote
# the file, a generation left behind) by its pid.
teardown() {
	if [ -n "$srv" ] && kill -0 "$srv" 2>/dev/null; then
		[ ! -s "$D/pid" ] || kill -KILL "$(cat "$D/pid")" 2>/dev/null || true
		pkill -KILL -P "$srv" 2>/dev/null || true
		wait "$srv" || true
	fi
	rm -rf "$D"
}

submit() {
	"$COWRUN" submit --socket "$S" "$@"
}

# start_server [SERVE OPTIONS] [RUNNER OPTIONS] WORKLOAD ARGS: in the
# background under the reaper; returns once it answers a status request.
start_server() {
	"$REAPER" "$COWRUN" serve --socket "$S" --pidfile "$D/pid" "$@" 2>>"$D/log" &
	srv=$!
	for _ in $(seq 400); do
		submit --status >/dev/null 2>&1 && return 0
		kill -0 "$srv" 2>/dev/null || break
		sleep 0.05
	done
	cat "$D/log" >&2
	return 1
}

# stop_server: SIGTERM to the master; the reaper's status is in $status.
stop_server() {
	kill -TERM "$(cat "$D/pid")"
	status=0
	wait "$srv" || status=$?
	srv=
	if [ "$status" -eq 99 ]; then cat "$D/log" >&2; return 1; fi
}

# wait_for CMD...: until it succeeds (30 s at most: only a broken server
# takes that long, however loaded the machine).
wait_for() {
	for _ in $(seq 600); do
		"$@" && return 0
		sleep 0.05
	done
	echo "timed out waiting for: $*" >&2
	return 1
}
