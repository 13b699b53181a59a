#!/usr/bin/env bats
# --metrics FILE (the Prometheus text format, read back by the real parser)
# and --log-time (ISO 8601 time stamps and the run id on stderr): the
# figures equal the joblog's and -v's; written at the start, at intervals
# and at the end; the run id the same in both.

load helpers

READ="$ROOT/tests/helpers/read-metrics"

# Whether the parser is there, asked of one interpreter for the file
# (bats cannot skip from setup_file: each test skips in setup).
setup_file() {
	NO_PARSER=
	/usr/bin/python3 -c 'import prometheus_client' 2>/dev/null ||
		NO_PARSER="python3-prometheus-client is not installed (make deps installs it)"
	export NO_PARSER
}

setup() {
	[ -z "$NO_PARSER" ] || skip "$NO_PARSER"
	D=$BATS_TEST_TMPDIR
}

# metric NAME: its value in $D/m.txt (read-metrics' output).
metric() {
	awk -v n="$1" '$1 == n { print $2 }' "$D/m.txt"
}

@test "metrics: the figures of a run with a retry and a failure, as the joblog and -v say" {
	run --separate-stderr cowrun -v --log-time --metrics "$D/m.prom" --joblog "$D/j" -j 2 \
		--retries 1 selftest --tasks 20 --fail 3
	[ "$status" -eq 1 ]
	"$READ" "$D/m.prom" > "$D/m.txt"
	[ "$(metric cowrun_running)" = 0 ]
	[ "$(metric cowrun_exit_status)" = 1 ]
	[ "$(metric cowrun_tasks)" = 20 ]
	# The joblog: one line per attempt, 21; exit 0 for 19 tasks.
	[ "$(metric cowrun_tasks_succeeded)" = "$(awk -F'\t' 'NR > 1 && $7 == 0' "$D/j" | wc -l)" ]
	[ "$(metric cowrun_tasks_failed)" = 1 ]
	[ "$(metric cowrun_task_retries)" = $(( $(tail -n +2 "$D/j" | wc -l) - 20 )) ]
	[ "$(metric cowrun_workers)" = 2 ]
	# -v's setup time, to its millisecond.
	setup_v=$(printf '%s\n' "$stderr" | sed -n 's/.*selftest: setup \([0-9.]*\) s,.*/\1/p')
	[ "$(printf '%.3f' "$(metric cowrun_setup_seconds)")" = "$setup_v" ]
	[ "$(metric cowrun_setup_peak_rss_bytes)" -gt 1000000 ]
	[ "$(metric cowrun_worker_pss_max_bytes)" -gt 0 ]
	start=$(metric cowrun_start_time_seconds) end=$(metric cowrun_end_time_seconds)
	awk -v s="$start" -v e="$end" -v d="$(metric cowrun_duration_seconds)" -v now="$(date +%s)" \
		'BEGIN { exit !(s <= e && e <= now + 1 && now - s < 600 && (e - s - d)^2 < 1e-6) }'
	# The run id: one cowrun_run_info series, and on every stderr line.
	id=$(sed -n 's/^cowrun_run_info{.*run_id=\([^,}]*\).*} 1$/\1/p' "$D/m.txt")
	[[ "$id" =~ ^[0-9]{8}T[0-9]{6}Z-[0-9a-f]{8}$ ]]
	[ "$(grep -c "run_id=$id" "$D/m.txt")" -eq 1 ]
	printf '%s\n' "$stderr" | while IFS= read -r line; do
		[[ "$line" =~ ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z\ run=$id\ cowrun:\  ]] ||
			{ echo "not stamped: $line" >&2; return 1; }
	done
	# Never in the joblog's columns; in its journal's identity, which
	# a --resume does not compare.
	! grep -q "$id" "$D/j" || { echo "run id $id in the joblog" >&2; return 1; }
	grep -a -q "run-id $id" "$D/j.res"
}

@test "metrics: without --log-time, stderr lines are as they were" {
	run --separate-stderr cowrun -v selftest --tasks 2
	[ "$status" -eq 0 ]
	[[ "$stderr" == "cowrun: selftest: setup "* ]]
}

@test "metrics: a run whose process a task ended: exit 254, running 0, no counts it cannot know" {
	run --separate-stderr cowrun --metrics "$D/m.prom" --mode serial selftest --tasks 5 --crash 2
	[ "$status" -eq 254 ]
	"$READ" "$D/m.prom" > "$D/m.txt"
	[ "$(metric cowrun_exit_status)" = 254 ]
	[ "$(metric cowrun_running)" = 0 ]
	[ -z "$(metric cowrun_tasks_succeeded)" ]
}

@test "metrics: written at the start and at intervals while the run goes on" {
	COWRUN_METRICS_EVERY_S=0.1 cowrun --metrics "$D/m.prom" -j 2 selftest --tasks 40 \
		--sleep-ms 50 >/dev/null 2>&1 &
	pid=$!
	# Running, with some tasks done: a file written mid-run.  Polled for
	# as long as the run lives, however slowly a loaded machine starts it.
	while kill -0 "$pid" 2>/dev/null; do
		if [ -f "$D/m.prom" ]; then
			"$READ" "$D/m.prom" > "$D/m.txt"
			done_now=$(metric cowrun_tasks_succeeded)
			[ "$(metric cowrun_running)" = 1 ] || done_now=
			[ -n "$done_now" ] && [ "$done_now" -gt 0 ] && [ "$done_now" -lt 40 ] && break
		fi
		sleep 0.02
	done
	wait "$pid"
	[ -n "$done_now" ] && [ "$done_now" -gt 0 ] && [ "$done_now" -lt 40 ]
	"$READ" "$D/m.prom" > "$D/m.txt"
	[ "$(metric cowrun_running)" = 0 ]
	[ "$(metric cowrun_tasks_succeeded)" = 40 ]
	# Never a temporary file left beside it.
	[ "$(ls "$D" | grep -c 'm.prom')" -eq 1 ]
}

@test "metrics: a --metrics file that cannot be written is refused before the setup" {
	run --separate-stderr cowrun --metrics "$D/nodir/m.prom" selftest --tasks 2
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --metrics: cannot create '$D/nodir/m.prom': No such file or directory"
	run --separate-stderr cowrun --metrics "" selftest --tasks 2
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --metrics: empty file name"
}
