#!/usr/bin/env bats
# No name cowrun picks itself follows a symbolic link or truncates a file
# that is there: a hostile user who can write in the output directory or
# beside a side file plants links under every name cowrun could pick, and
# the file they point to (the victim) stays intact.  The names' random
# part is made predictable (fixed-random.so: getrandom() gives zeros) and
# the pids small (a pid namespace: the reaper is 1, cowrun 2, its
# children 3, 4, ...), so the links stand exactly where cowrun writes.

load helpers

ZERO_TAG=0000000000000000

setup() {
	[ "$(id -u)" = 0 ] || skip "needs root for a pid namespace (unshare -p)"
	unshare -pf --mount-proc true 2>/dev/null || skip "unshare -p is not allowed here"
	D=$BATS_TEST_TMPDIR
	HOST=$(printf '%s' "$(uname -n)" | tr -c 'A-Za-z0-9_-' '_')
	echo "the victim's contents" > "$D/victim"
	cp "$D/victim" "$D/victim.orig"
}

# predictable ARGS...: cowrun ARGS in a new pid namespace with zeroed
# random parts, under the reaper (ASan, under check-asan, told to accept
# the shim loaded before it).
predictable() {
	unshare -pf --mount-proc env LD_PRELOAD="$ROOT/build/tests/fixed-random.so" \
		ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
		"$REAPER" "$COWRUN" "$@"
}

predictable_run() {
	run --separate-stderr predictable "$@"
}

victim_intact() {
	cmp "$D/victim" "$D/victim.orig" || { echo "the victim was written" >&2; return 1; }
	[ ! -L "$D/victim" ]
}

# plant DIR NAME...: a link to the victim under each name in DIR.
plant() {
	local dir=$1 name
	shift
	for name; do ln -sf "$D/victim" "$dir/$name"; done
}

@test "symlinks: links under every temporary report name: the tasks fail on them, the victim is intact" {
	# Serial and omp run the tasks in the watched child, pid 3, alive when
	# the run clears dead pids' temporary files: the links stay, and the
	# tasks meet them.
	for mode in "--mode serial" "--mode omp -j 2"; do
		rm -rf "$D/out"
		mkdir "$D/out"
		for k in 0 1 2; do
			plant "$D/out" ".task-00000$k.$HOST.3.$ZERO_TAG.tmp"
		done
		predictable_run $mode -o "$D/out" selftest --tasks 3 --report-bytes 100
		[ "$status" -eq 3 ] || { echo "$mode: status $status: $stderr" >&2; return 1; }
		[[ "$stderr" == *"cannot create '$D/out/.task-000000.$HOST.3.$ZERO_TAG.tmp': File exists"* ]]
		victim_intact
	done
	# Fork mode's workers are born after that clearing, which removes
	# the links (never their target) as a dead run's leftovers.
	rm -rf "$D/out"
	mkdir "$D/out"
	for pid in $(seq 3 20); do plant "$D/out" ".task-000000.$HOST.$pid.$ZERO_TAG.tmp"; done
	predictable_run -v -j 2 -o "$D/out" selftest --tasks 3 --report-bytes 100
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"removed 18 stale temporary files of dead runs"* ]]
	victim_intact
	[ "$(ls -A "$D/out" | grep -vc '^\.cowrun-manifest\.')" -eq 3 ]
}

@test "symlinks: links under the final report names are replaced by the reports, not followed" {
	mkdir "$D/out"
	plant "$D/out" task-000000 task-000001 task-000002
	predictable_run -j 2 -o "$D/out" selftest --tasks 3 --report-bytes 100
	[ "$status" -eq 0 ]
	victim_intact
	for k in 0 1 2; do
		[ -f "$D/out/task-00000$k" ] && [ ! -L "$D/out/task-00000$k" ]
		[ "$(stat -c %s "$D/out/task-00000$k")" -eq 100 ]
	done
}

@test "symlinks: links under the side files' temporary names and the probe: refused, the victim intact" {
	mkdir "$D/out"
	plant "$D" "s.res.$HOST.2.$ZERO_TAG.tmp"
	predictable_run --save-results "$D/s.res" selftest --tasks 3
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: cannot create '$D/s.res.$HOST.2.$ZERO_TAG.tmp': File exists"
	[ ! -e "$D/s.res" ]
	victim_intact
	plant "$D" "t.csv.$HOST.2.$ZERO_TAG.tmp"
	predictable_run --timeline "$D/t.csv" selftest --tasks 3
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: cannot create '$D/t.csv.$HOST.2.$ZERO_TAG.tmp': File exists"
	victim_intact
	plant "$D/out" ".cowrun-probe.2.$ZERO_TAG"
	predictable_run -o "$D/out" selftest --tasks 3 --report-bytes 10
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: cannot write in output directory '$D/out': File exists"
	victim_intact
	[ -z "$(ls "$D/out")" ]
}

@test "symlinks: a link as the joblog's results journal (FILE.res) is refused, never written through" {
	plant "$D" j.log.res
	predictable_run --joblog "$D/j.log" selftest --tasks 3
	[ "$status" -ne 0 ]
	[[ "$stderr" == *"j.log.res"* ]]
	victim_intact
}

@test "symlinks: an output directory that is a link is refused; nothing is written where it points" {
	mkdir "$D/elsewhere"
	ln -s "$D/elsewhere" "$D/out"
	run --separate-stderr cowrun -o "$D/out" selftest --tasks 3 --report-bytes 10
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: output directory '$D/out' is a symbolic link or not a directory: give the directory itself"
	[ -z "$(ls -A "$D/elsewhere")" ]
}

@test "symlinks: run as root, an output directory another user owns is refused" {
	mkdir "$D/theirs"
	chown nobody "$D/theirs"
	run --separate-stderr cowrun -o "$D/theirs" selftest --tasks 3 --report-bytes 10
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: output directory '$D/theirs' belongs to uid $(id -u nobody): refusing to write there as root (run as its owner, or give a directory root owns)"
	[ -z "$(ls -A "$D/theirs")" ]
	# A workload that writes no report never opens one.
	run --separate-stderr cowrun -o "$D/theirs" average
	[ "$status" -eq 0 ]
}

# Whatever happened, no server outlives its test (the pid file test's).
teardown() {
	if [ -n "${SERVE_DIR:-}" ]; then
		pkill -KILL -f "serve --socket $SERVE_DIR/s" || true
		wait || true
		rm -rf "$SERVE_DIR"
	fi
}

@test "symlinks: a link under the server's pid file's temporary name: not written through" {
	local s
	s=$(mktemp -d /tmp/cwl.XXXXXX)   # short: sun_path holds 108 bytes
	SERVE_DIR=$s
	plant "$s" "pid.$HOST.2.$ZERO_TAG.tmp"
	# The master is pid 2 in the namespace; it is stopped by SIGTERM once
	# its log says it listens.
	predictable serve --socket "$s/s" --pidfile "$s/pid" selftest --tasks 2 2>"$s/log" &
	local srv=$!
	for _ in $(seq 400); do grep -q 'is ready' "$s/log" && break; sleep 0.05; done
	grep -q "cannot write the pid file '$s/pid': File exists" "$s/log" || { cat "$s/log" >&2; false; }
	pkill -TERM -f "serve --socket $s/s" || true
	wait "$srv" || true
	victim_intact
	[ ! -e "$s/pid" ]
}
