#!/usr/bin/env bats
# Retries that do not feed a broken printer (issue 39, item 7):
# --retry-delay SECS holds a failed task's retry in the parent for SECS,
# doubling per attempt, at most ten times SECS, and the end-of-batch sweep
# waits for it; a requeued task is not claimed by the slot ({%}) that
# failed it while another live slot has not.  The --timeline CSV's last
# column is that slot.

load serve-helpers

# gaps TIMELINE TASK: for each retry of TASK, the seconds from the end of
# the attempt before to its start, one a line, in order.
gaps() {
	awk -F, -v k="$2" 'NR > 1 && $1 == k { print $5, $6 }' "$1" | sort -g |
		awk 'NR > 1 { printf "%.6f\n", $1 - end } { end = $2 }'
}

# at_least A B: A >= B, as numbers.
at_least() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a >= b) }'; }

@test "retry-delay: a retry waits SECS, doubling per attempt, capped at ten times SECS" {
	local tl=$BATS_TEST_TMPDIR/tl.csv
	run --separate-stderr cowrun -j 1 --retries 7 --retry-delay 0.03 --timeline "$tl" \
		selftest --tasks 1 --fail 0
	[ "$status" -eq 1 ]
	assert_no_leftovers
	[ "$(head -1 "$tl")" = "task,name,worker,pid,start_s,end_s,status,slot" ]
	[ "$(tail -n +2 "$tl" | wc -l)" -eq 8 ]
	mapfile -t g < <(gaps "$tl" 0)
	[ "${#g[@]}" -eq 7 ]
	# Lower bounds only (a loaded machine only makes gaps longer):
	# 0.03, 0.06, 0.12, 0.24, then the cap 0.3.
	local want=(0.03 0.06 0.12 0.24 0.3 0.3 0.3) i
	for i in "${!want[@]}"; do
		at_least "${g[$i]}" "${want[$i]}" ||
			{ echo "retry $((i + 1)) after ${g[$i]} s, wanted ${want[$i]}: ${g[*]}" >&2; return 1; }
	done
	# The cap: doubling on would make the last wait 1.92 s.
	at_least 1.0 "${g[6]}" || { echo "not capped: ${g[*]}" >&2; return 1; }
}

@test "retry-delay: the end-of-batch sweep waits for a held retry instead of running or abandoning it" {
	local tl=$BATS_TEST_TMPDIR/tl.csv
	# Task 2 ({#} 2) fails its first report only: every other task is done
	# and every worker gone long before its retry is due.
	run --separate-stderr cowrun -j 2 --retries 1 --retry-delay 0.4 --timeline "$tl" \
		-o "$BATS_TEST_TMPDIR/out" \
		--report-to "test {#} != 2 || test -e $BATS_TEST_TMPDIR/seen || { touch $BATS_TEST_TMPDIR/seen; exit 1; }; cat > /dev/null" \
		selftest --tasks 3 --report-bytes 10
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[[ "$stderr" != *"not run"* ]]
	[ "$(awk -F, '$1 == 1 { print $7 }' "$tl" | tr '\n' ' ')" = "failed ok " ]
	local g
	g=$(gaps "$tl" 1)
	at_least "$g" 0.4 || { echo "retried after $g s" >&2; return 1; }
}

@test "retry slot: one broken queue of three: no retry runs again on the slot that failed it" {
	local tl=$BATS_TEST_TMPDIR/tl.csv
	# The printer on slot 3 fails every report at once; the others take
	# 0.2 s to print, so slot 3's replacement is the idle one when a retry
	# is queued (a FIFO would hand it the retry it just failed).
	run --separate-stderr cowrun -j 3 --retries 3 --timeline "$tl" -o "$BATS_TEST_TMPDIR/out" \
		--report-to 'test {%} != 3 && sleep 0.2 && cat > /dev/null' \
		selftest --tasks 6 --report-bytes 10
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; cat "$tl" >&2; return 1; }
	assert_no_leftovers
	[ "$(awk -F, 'NR > 1 && $7 == "ok"' "$tl" | wc -l)" -eq 6 ]
	# The slot column is {%}: the failures are all on slot 3, worker 2.
	[ "$(awk -F, 'NR > 1 && $7 == "failed" && ($8 != 3 || $3 != 2)' "$tl" | wc -l)" -eq 0 ]
	# No task ran on slot 3 after slot 3 had failed it (slots 1 and 2 live
	# all along: they never fail).
	local again
	again=$(tail -n +2 "$tl" | sort -t, -k5,5g | awk -F, '
		$8 == 3 && seen[$1] { print "task " $1 " again on slot 3 at " $5 }
		$8 == 3 && $7 == "failed" { seen[$1] = 1 }')
	[ -z "$again" ] || { echo "$again" >&2; cat "$tl" >&2; return 1; }
}

@test "retry-delay: serial and omp wait in place before a retry, doubling" {
	local mode tl
	for mode in serial omp; do
		tl=$BATS_TEST_TMPDIR/$mode.csv
		run --separate-stderr cowrun --mode "$mode" -j 2 --retries 2 --retry-delay 0.05 \
			--timeline "$tl" selftest --tasks 2 --fail 1
		[ "$status" -eq 1 ] || { echo "$mode: exit $status: $stderr" >&2; return 1; }
		assert_no_leftovers
		mapfile -t g < <(gaps "$tl" 1)
		[ "${#g[@]}" -eq 2 ]
		at_least "${g[0]}" 0.05 && at_least "${g[1]}" 0.1 ||
			{ echo "$mode: retries after ${g[*]} s" >&2; return 1; }
		# The slot column: 1 in serial mode, the thread + 1 in omp.
		[ "$(awk -F, 'NR > 1 && $8 != $3 + 1' "$tl" | wc -l)" -eq 0 ]
	done
}

@test "retry-delay: bad values refused in one line" {
	local v
	for v in 0 -1 abc 1e9 ''; do
		run --separate-stderr cowrun --retry-delay "$v" selftest --tasks 1
		[ "$status" -eq 255 ]
		assert_one_line_error "cowrun: --retry-delay: bad value '$v': expected seconds, 0.001 to 86400"
	done
}

@test "retry-delay: a served batch takes it (cowrun submit --retry-delay)" {
	start_server selftest --tasks 2 --fail 1
	run --separate-stderr submit -j 2 --retries 2 --retry-delay 0.05 --timeline "$D/tl.csv" -o "$D/out"
	[ "$status" -eq 1 ] || { echo "exit $status: $stderr" >&2; return 1; }
	mapfile -t g < <(gaps "$D/tl.csv" 1)
	[ "${#g[@]}" -eq 2 ]
	at_least "${g[0]}" 0.05 && at_least "${g[1]}" 0.1 || { echo "retries after ${g[*]} s" >&2; return 1; }
	run --separate-stderr submit --retry-delay 0 -o "$D/out"
	[ "$status" -eq 255 ]
	[[ "$stderr" == *"--retry-delay: bad value '0'"* ]]
	stop_server
}
