#!/usr/bin/env bats
# Report commands die with the run, always (issue 39 item 3): each runs
# under bin/cowrun-supervise, which takes the command's process group
# down when its worker (or cowrun) dies, even by SIGKILL.  And what a
# command says is tagged with its task's name (item 6).

load helpers

setup() {
	OUT="$BATS_TEST_TMPDIR/out"
	SPOOL="$BATS_TEST_TMPDIR/spool"
	mkdir -p "$SPOOL"
	bg=
}

teardown() {
	stop_background_run
}

# joblog_rows LOG: the rows under its header.
joblog_rows() {
	local n
	n=$(grep -c . "$1" 2>/dev/null) || true
	echo $(( ${n:-0} > 0 ? n - 1 : 0 ))
}
joblog_rows_at_least() { [ "$(joblog_rows "$1")" -ge "$2" ]; }
# started N...: each of those tasks' printers has started ($SPOOL/started.N).
started() {
	local k
	for k in "$@"; do [ -s "$SPOOL/started.$k" ] || return 1; done
}

# kill -9 of cowrun while printers hang ({#} 3 and 4 print only after a
# `sleep 30 | cat` pipeline): within 3 s no process of the run is left
# (the reaper, which waits for every leftover, has exited; the printers'
# shells and their pipelines are gone), so no sink file can appear later;
# then --resume prints exactly the tasks the joblog did not have.
kill_mid_print() {
	local mode=$1 hang=$2
	local sink="sh -c '[ {#} -le 2 ] || { echo \$\$ > $SPOOL/started.{#}; sleep 30 | cat; }; cat > $SPOOL/sink-{#}'"
	REAPER_TIMEOUT=60 "$REAPER" "$COWRUN" --mode "$mode" -j 2 -o "$OUT" --joblog "$BATS_TEST_TMPDIR/log" \
		--report-to "$sink" selftest --tasks 6 --report-bytes 300 >/dev/null 2>"$BATS_TEST_TMPDIR/err" &
	bg=$!
	wait_for 30 "the printers of $hang to hang" started $hang
	wait_for 30 "two joblog rows" joblog_rows_at_least "$BATS_TEST_TMPDIR/log" 2
	local logged shells=()
	logged=$(awk -F'\t' 'NR > 1 { sub(/.*task-0*/, "", $9); print $9 + 1 }' "$BATS_TEST_TMPDIR/log")
	for k in $hang; do shells+=("$(cat "$SPOOL/started.$k")"); done
	kill -KILL "$(cowrun_of "$bg")"
	wait_for 3 "every process of the run to end" all_dead "$bg" "${shells[@]}"
	wait "$bg" || true
	bg=
	for k in $hang; do
		[ ! -e "$SPOOL/sink-$k" ] || { echo "sink-$k printed after the kill" >&2; return 1; }
	done
	for k in $logged; do [ -s "$SPOOL/sink-$k" ]; done
	# The resume prints the others, once each, and none of the logged ones.
	run --separate-stderr cowrun --mode "$mode" -j 2 -o "$OUT" --joblog "$BATS_TEST_TMPDIR/log" --resume \
		--report-to "sh -c 'cat > $SPOOL/again-{#}'" selftest --tasks 6 --report-bytes 300
	[ "$status" -eq 0 ] || { echo "resume: $stderr" >&2; return 1; }
	assert_no_leftovers
	for k in $logged; do
		[ ! -e "$SPOOL/again-$k" ] || { echo "task $k reprinted" >&2; return 1; }
	done
	for k in 1 2 3 4 5 6; do
		[[ " $(echo $logged) " == *" $k "* ]] || [ -s "$SPOOL/again-$k" ] || { echo "task $k never printed" >&2; return 1; }
	done
}

@test "kill -9 of cowrun mid-print (fork mode): its printers and their pipelines die within 3 s, print nothing later, --resume reprints nothing logged" {
	kill_mid_print fork "3 4"
}

@test "kill -9 of cowrun mid-print (serial mode): the same, the supervisor's parent being cowrun itself" {
	kill_mid_print serial 3
}

@test "a sink's stdout and a filter's stderr reach cowrun's stderr tagged with the task's name, each command's lines together" {
	run --separate-stderr cowrun -j 2 -o "$OUT" \
		--report-filter "sh -c 'echo filtering {#} >&2; cat'" \
		--report-to "sh -c 'cat > /dev/null; for i in 1 2 3; do echo job {#}-\$i; echo note {#}-\$i >&2; sleep 0.01; done'" \
		selftest --tasks 4 --report-bytes 100
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	for k in 0 1 2 3; do
		name=$(printf 'task-%06d' "$k") n=$((k + 1))
		block=""
		for i in 1 2 3; do block+="$name: job $n-$i"$'\n'"$name: note $n-$i"$'\n'; done
		# One write per command: its six lines in a row, in order.
		[[ "$stderr"$'\n' == *"$block"* ]] || { echo "task $n's lines are not together: $stderr" >&2; return 1; }
		grep -qx "$name: filtering $n" <<<"$stderr"
	done
	# Every line a command wrote is tagged.
	[ "$(grep -c . <<<"$stderr")" -eq 28 ]
	[ "$(grep -c '^task-00000[0-3]: ' <<<"$stderr")" -eq 28 ]
}
