#!/usr/bin/env bats
# The benchmark harness (compare/compare) and the plots (plots/plot): a tiny
# real comparison, its CSV and verification, option errors, and images drawn
# from the fixtures in tests/fixtures/.

load helpers

COMPARE="$ROOT/compare/compare"
PLOT="$ROOT/plots/plot"
FIXTURES="$ROOT/tests/fixtures"
HEADER="seq,mode,jobs,rep,wall_s,user_s,sys_s,max_rss_kb,exit_status,setup_s,checksum,verified,peak_pss_kb,task_s,merge_s,load_before,load_after,others_pct,busy,worker_private_kb"
# The header before task_s (issue 10): old CSVs must still summarize and plot.
OLD_HEADER="seq,mode,jobs,rep,wall_s,user_s,sys_s,max_rss_kb,exit_status,setup_s,checksum,verified,peak_pss_kb"

# compare ARGS...: compare/compare under the reaper, so that GNU Parallel and
# every cowrun it starts are proved to leave nothing behind.
compare() {
	"$REAPER" "$COMPARE" "$@"
}

# rows FILE: the data rows of a results CSV (no comments, no header).
rows() {
	grep -v '^#' "$1" | tail -n +2
}

@test "compare --help describes the options, the modes and the exit status" {
	run --separate-stderr "$COMPARE" --help
	[ "$status" -eq 0 ]
	[[ "$output" == "Usage: compare/compare [OPTIONS] --workload W"* ]]
	for word in --jobs --reps --modes --warmup --out --timeline --timeline-jobs --bound --seed \
		--mem-budget serial fork omp parallel-task parallel-shard "Exit status" shuffled busy \
		W-advice.txt; do
		[[ "$output" == *"$word"* ]] || { echo "--help lacks '$word'" >&2; return 1; }
	done
}

@test "a tiny compare of every mode writes a well-formed CSV where every run is verified" {
	csv=$BATS_TEST_TMPDIR/r.csv
	run --separate-stderr compare --jobs 2,1 --reps 2 --warmup 0 --workload selftest \
		--out "$csv" --timeline "$BATS_TEST_TMPDIR/r-timeline.csv" \
		-- --tasks 6 --report-bytes 64 --result-bytes 16 --sleep-ms 30
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	# (30 ms tasks: every run lasts long enough for psswatch to sample it,
	# even on a loaded machine.)
	# metadata for the reader and the plots, then the documented header
	for key in workload args tasks cpu cores kernel date commit; do
		grep -q "^# $key: " "$csv" || { echo "no '# $key:' line" >&2; return 1; }
	done
	grep -q '^# workload: selftest$' "$csv"
	grep -q '^# tasks: 6$' "$csv"
	grep -q '^# bound: cpu$' "$csv"
	grep -q '^#   max_rss_kb ' "$csv"
	grep -q '^#   task_s ' "$csv"
	for col in merge_s load_before load_after others_pct busy worker_private_kb; do
		grep -q "^#   $col " "$csv" || { echo "column $col undocumented" >&2; return 1; }
	done
	grep -q '^# busy_threshold_pct: 10 ' "$csv"
	grep -Eq '^# busy_runs: [0-9]+ of 18$' "$csv"
	grep -Eq '^# seed: [0-9]+ ' "$csv"
	grep -Eq '^# mem_budget_kb: [0-9]+$' "$csv"
	[ "$(grep -v '^#' "$csv" | head -n 1)" = "$HEADER" ]
	# 2 reps x (serial once + 2 jobs x 4 other modes)
	[ "$(rows "$csv" | wc -l)" -eq 18 ]
	rows "$csv" | awk -F, -v OFS=, '
		NF != 20 { print "bad field count: " $0; bad = 1 }
		$16 !~ /^[0-9]+\.[0-9]+$/ || $17 !~ /^[0-9]+\.[0-9]+$/ { print "bad load: " $0; bad = 1 }
		$18 !~ /^[0-9]+\.[0-9]$/ || $19 !~ /^(yes|no)$/ { print "bad busy: " $0; bad = 1 }
		($19 == "yes") != ($18 > 10) { print "busy disagrees with others_pct: " $0; bad = 1 }
		$2 == "fork" && ($20 !~ /^[0-9]+$/ || $20 == 0) { print "no worker_private_kb: " $0; bad = 1 }
		$2 != "fork" && $20 != "" { print "worker_private_kb for " $2 ": " $0; bad = 1 }
		$2 ~ /^(serial|fork|omp)$/ && $15 !~ /^[0-9]+\.[0-9]+$/ { print "no merge_s: " $0; bad = 1 }
		$2 ~ /^parallel-/ && $15 != "" { print "merge_s for a parallel mode: " $0; bad = 1 }
		$13 !~ /^[0-9]+$/ || $13 == 0 { print "no peak PSS: " $0; bad = 1 }
		$2 !~ /^(serial|fork|omp|parallel-task|parallel-shard)$/ { print "bad mode: " $0; bad = 1 }
		$1 !~ /^[0-9]+$/ || $3 !~ /^[0-9]+$/ || $4 !~ /^[0-9]+$/ || $8 !~ /^[0-9]+$/ || $9 !~ /^[0-9]+$/ {
			print "not an integer: " $0; bad = 1 }
		$5 !~ /^[0-9]+\.[0-9]+$/ || $6 !~ /^[0-9.]+$/ || $7 !~ /^[0-9.]+$/ || $10 !~ /^[0-9.]+$/ {
			print "not a number: " $0; bad = 1 }
		length($11) != 64 || $11 ~ /[^0-9a-f]/ { print "bad checksum: " $0; bad = 1 }
		$9 != 0 || $12 != "yes" { print "not verified: " $0; bad = 1 }
		# the task phase: a positive time where one process ran it all,
		# empty where GNU Parallel ran overlapping jobs
		$2 ~ /^(serial|fork|omp)$/ && ($14 !~ /^[0-9]+\.[0-9]+$/ || $14 + 0 <= 0) {
			print "no positive task_s: " $0; bad = 1 }
		$2 ~ /^parallel-/ && $14 != "" { print "task_s for a parallel mode: " $0; bad = 1 }
		$2 == "serial" && $3 != 1 { print "serial at jobs != 1: " $0; bad = 1 }
		$1 != NR { print "seq out of order: " $0; bad = 1 }
		$4 < rep { print "not rep-major: " $0; bad = 1 }
		{ rep = $4 }
		END { exit bad }' >&2
	# one checksum for all: identical output in every mode
	[ "$(rows "$csv" | cut -d, -f11 | sort -u | wc -l)" -eq 1 ]
	# progress on stderr, the table on stdout
	[[ "$stderr" == *"[18/18] "*" rep 2: "*" s ok"* ]]
	for mode in serial fork omp parallel-task parallel-shard; do
		[[ "$output" == *$'\n'"$mode "*yes* ]] || { echo "table lacks $mode" >&2; return 1; }
	done
	[[ "$output" == *"setup s   task s   task x  verified"* ]]
	# the advice: on stdout, and in full beside the CSV
	[[ "$output" == *$'\n'"Run selftest with -j "*" on this machine"* ]]
	grep -Eq '^recommended_jobs: [0-9]+$' "$BATS_TEST_TMPDIR/r-advice.txt"
	# the timeline: at -j = the cores by default, its phases in "#" lines
	tl=$BATS_TEST_TMPDIR/r-timeline.csv
	grep -v '^#' "$tl" | head -n 1 | grep -q '^task,name,worker,pid,start_s,end_s,status,slot$'
	grep -qx "# jobs: $(nproc)" "$tl"
	grep -Eq '^# setup_s: [0-9]+\.[0-9]+$' "$tl"
	grep -Eq '^# merge_s: [0-9]+\.[0-9]+$' "$tl"
	[ "$(grep -v '^#' "$tl" | tail -n +2 | cut -d, -f3 | sort -u | wc -l)" -eq "$(( $(nproc) < 6 ? $(nproc) : 6 ))" ]
}

@test "compare shuffles each repetition's runs, the same way for the same --seed" {
	order() {
		run --separate-stderr compare --modes fork,omp --jobs 1,2,3 --reps 2 --warmup 0 \
			--seed "$1" --workload selftest --out "$BATS_TEST_TMPDIR/o$1.csv" -- --tasks 2
		[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
		grep -qx "# seed: $1 (order: every repetition's runs shuffled with this seed; compare --seed $1 repeats it)" \
			"$BATS_TEST_TMPDIR/o$1.csv"
		rows "$BATS_TEST_TMPDIR/o$1.csv" | cut -d, -f2-4 | tr '\n' ' '
	}
	a=$(order 7) && b=$(order 7) && c=$(order 8)
	[ "$a" = "$b" ]
	[ "$a" != "$c" ]
	# every repetition has every run once, serial included, in two orders
	for o in "$a" "$c"; do
		[ "$(tr ' ' '\n' <<<"$o" | grep -c ',1$')" -eq 7 ]
		[ "$(tr ' ' '\n' <<<"$o" | grep . | sort -u | wc -l)" -eq 14 ]
	done
	r1=$(tr ' ' '\n' <<<"$a" | grep ',1$' | tr '\n' ' ')
	r2=$(tr ' ' '\n' <<<"$a" | grep ',2$' | sed 's/,2$/,1/' | tr '\n' ' ')
	[ "$r1" != "$r2" ]
	[[ $(sort <<<"$(tr ' ' '\n' <<<"$r1")") == $(sort <<<"$(tr ' ' '\n' <<<"$r2")") ]]
	# not compare's old fixed order (serial, then each -j's modes)
	[[ "$a" != "serial,1,1 fork,1,1 omp,1,1 fork,2,1 omp,2,1 fork,3,1 omp,3,1 "* ]]
}

@test "a run whose output differs from serial is not verified and compare exits 1" {
	# A cowrun that adds a line to stdout in fork mode only.
	fake=$BATS_TEST_TMPDIR/fake-cowrun
	cat >"$fake" <<-EOF
	#!/usr/bin/env bash
	"$COWRUN" "\$@" || exit
	case " \$* " in *" --mode fork "*) echo "one line too many" ;; esac
	EOF
	chmod +x "$fake"
	csv=$BATS_TEST_TMPDIR/d.csv
	run --separate-stderr compare --cowrun "$fake" --modes fork --jobs 2 --reps 1 \
		--workload selftest --out "$csv" -- --tasks 4
	[ "$status" -eq 1 ]
	[[ "$stderr" == *"fork -j 2 rep 1: "*"DIFFERS from serial"* ]]
	[[ "$output" == *$'\n'"fork "*"NO (0 of 1)"* ]]
	[ "$(rows "$csv" | cut -d, -f2,12 | grep -cx 'fork,no')" -eq 1 ]
	[ "$(rows "$csv" | cut -d, -f2,12 | grep -cx 'serial,yes')" -eq 1 ]
}

@test "compare of an R script (cowrun r): omp left out in one line, the others verified, the advice and the plots" {
	[ -e "$ROOT/build/workloads/r.so" ] || skip "no build/workloads/r.so (cowrun r is not built: R missing?)"
	local d=$BATS_TEST_TMPDIR csv=$BATS_TEST_TMPDIR/r.csv
	run --separate-stderr compare --modes fork,omp --jobs 1,2 --reps 1 --warmup 0 --workload r \
		--out "$csv" -- "$FIXTURES/r/squares.R" 5
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	# cowrun refuses --mode omp for r: asked once, not run, not a failure
	[ "$(grep -c 'omp left out' <<<"$stderr")" -eq 1 ]
	! grep -q 'omp -j [0-9]* rep' <<<"$stderr" || { echo "omp was run: $stderr" >&2; return 1; }
	[[ "$stderr" == *"compare: omp left out: r runs no task on a thread: --mode omp is refused"* ]]
	[ ! -e "$d/r-failures.log" ]
	grep -qx '# modes: serial fork' "$csv"
	[ "$(rows "$csv" | cut -d, -f2,3,12 | sort | tr '\n' ' ')" = "fork,1,yes fork,2,yes serial,1,yes " ]
	grep -qx 'workload: r' "$d/r-advice.txt"
	grep -Eqx 'recommended_jobs: [12]' "$d/r-advice.txt"
	[[ "$output" == *"Run r with -j "[12]" on this machine"* ]]
	run --separate-stderr "$PLOT" --no-text --out "$d/plots" "$csv"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	for name in speedup wall memory; do
		[ -s "$d/plots/r-$name.svg" ] || { echo "no r-$name.svg" >&2; return 1; }
	done
	grep -qF '<title>fork</title>' "$d/plots/r-speedup.svg"
	! grep -qF '<title>omp' "$d/plots/r-speedup.svg" || { echo "omp in the speedup plot" >&2; return 1; }
}

@test "a failing serial reference run stops compare with one line, exit 1" {
	run --separate-stderr compare --modes fork --jobs 2 --reps 1 --workload selftest \
		--out "$BATS_TEST_TMPDIR/f.csv" -- --tasks 4 --fail 1
	[ "$status" -eq 1 ]
	# (a busy machine adds a warning about the load average)
	stderr=$(grep -v '^compare: warning: load average' <<<"$stderr")
	assert_one_line_error "compare: the serial reference run failed (exit 1): *--fail 1*"
}

@test "bad compare options are one-line errors, exit 2" {
	check() {
		local pattern=$1; shift
		run --separate-stderr "$COMPARE" "$@"
		[ "$status" -eq 2 ] || { echo "compare $* gave $status" >&2; return 1; }
		assert_one_line_error "$pattern"
	}
	check "compare: no workload given*" --jobs 1
	check "compare: unknown option '--frobnicate'*" --frobnicate --workload selftest
	check "compare: option '--reps' needs a value" --workload selftest --reps
	check "compare: --jobs: bad value '0'*" --jobs 1,0 --workload selftest
	check "compare: --jobs: bad value 'x'*" --jobs x --workload selftest
	check "compare: --jobs: bad value ''*" --jobs 1,,2 --workload selftest
	check "compare: --reps: bad value '0'*" --reps 0 --workload selftest
	check "compare: --warmup: bad value '-1'*" --warmup -1 --workload selftest
	check "compare: --modes: unknown mode 'threads'*" --modes fork,threads --workload selftest
	check "compare: --modes: 'fork' given twice" --modes fork,fork --workload selftest
	check "compare: no cowrun at '/nonexistent'*" --cowrun /nonexistent --workload selftest
	check "compare: --bound: bad value 'disk'*" --bound disk --workload selftest
	check "compare: --seed: bad value 'x'*" --seed x --workload selftest
	check "compare: --timeline-jobs: bad value '0'*" --timeline-jobs 0 --workload selftest
	check "compare: --mem-budget: bad size 'lots'*" --mem-budget lots --workload selftest
}

@test "summarize.awk: medians, speedup, efficiency and the fork/omp ratio" {
	csv=$BATS_TEST_TMPDIR/s.csv
	cat >"$csv" <<-EOF
	# workload: made-up
	$HEADER
	1,serial,1,1,4.0,0,0,0,0,1.0,x,yes,0,3.0
	2,fork,2,1,2.2,0,0,0,0,0.9,x,yes,0,1.0
	3,omp,2,1,2.0,0,0,0,0,0.9,x,yes,0,1.6
	4,serial,1,2,2.0,0,0,0,0,0.5,x,yes,0,1.6
	5,fork,2,2,1.9,0,0,0,0,0.9,x,yes,0,1.1
	6,omp,2,2,2.2,0,0,0,0,0.9,x,yes,0,1.6
	7,serial,1,3,3.0,0,0,0,0,1.0,x,yes,0,2.0
	8,fork,2,3,1.5,0,0,0,0,0.9,x,no,0,0.8
	9,omp,2,3,2.5,0,0,0,0,0.9,x,yes,0,1.6
	10,parallel-shard,2,1,3.0,0,0,0,0,1.8,x,yes,0,
	EOF
	run --separate-stderr awk -f "$ROOT/compare/lib/summarize.awk" "$csv"
	[ "$status" -eq 0 ]
	# serial median 3.0; fork median 1.9 (speedup 1.58, efficiency 0.79);
	# omp median 2.2; fork/omp = 1.9 / 2.2 = 0.864.  Task phase: serial's
	# median 2.0 s, fork's 1.0 s (2.00x), omp's 1.6 s (1.25x); none for
	# parallel-shard (an empty task_s).
	[[ "$output" == *"serial "*" 1 "*" 3 "*" 3.000 "*" 2.000 "*" 4.000 "*" 1.00 "*" 1.00 "*" - "*" 1.000 "*" 2.000 "*" 1.00  yes"* ]]
	[[ "$output" == *"fork "*" 2 "*" 3 "*" 1.900 "*" 1.58 "*" 0.79 "*" 0.864 "*" 0.900 "*" 1.000 "*" 2.00  NO (2 of 3)"* ]]
	[[ "$output" == *"omp "*" 2 "*" 2.200 "*" 1.36 "*" 0.68 "*" 0.864 "*" 1.600 "*" 1.25  yes"* ]]
	[[ "$output" == *"parallel-shard "*" 2 "*" 3.000 "*" 1.800 "*" - "*" -  yes"* ]]
	# gnuplot's blocks: setup, task median, task speedup and its range
	# (serial median / slowest and fastest run) in columns 14-18
	run --separate-stderr awk -v format=data -f "$ROOT/compare/lib/summarize.awk" "$csv"
	[ "$status" -eq 0 ]
	[[ "$output" == *$'\n'"fork 2 3 1.900000 "*" 0.900000 1.000000 2.000000 1.818182 2.500000"$'\n'* ]]
	[[ "$output" == *$'\n'"parallel-shard 2 1 3.000000 "*" 1.800000 NaN NaN NaN NaN"* ]]
	# a CSV from before task_s: no task figures, the rest as before
	grep -v '^#' "$csv" | sed "1s/.*/$OLD_HEADER/; s/,[0-9.]*\$//" >"$BATS_TEST_TMPDIR/old.csv"
	run --separate-stderr awk -f "$ROOT/compare/lib/summarize.awk" "$BATS_TEST_TMPDIR/old.csv"
	[ "$status" -eq 0 ]
	[[ "$output" == *"fork "*" 2 "*" 3 "*" 1.900 "*" 1.58 "*" 0.79 "*" 0.864 "*" 0.900 "*" - "*" -  NO (2 of 3)"* ]]
	run --separate-stderr awk -f "$ROOT/compare/lib/summarize.awk" "$FIXTURES/compare-sales-timeline.csv"
	[ "$status" -eq 1 ]
	[[ "$stderr" == "summarize: no 'mode' column"* ]]
}

@test "plots/plot draws speedup, phases, wall, efficiency, cost and timeline as PNG and SVG" {
	out=$BATS_TEST_TMPDIR/plots
	run --separate-stderr "$PLOT" --out "$out" "$FIXTURES/compare-sales.csv" \
		"$FIXTURES/compare-sales-timeline.csv"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	for name in speedup wall efficiency cost timeline; do
		png=$out/compare-sales-$name.png svg=$out/compare-sales-$name.svg
		[ -s "$png" ] && [ -s "$svg" ] || { echo "missing $name images" >&2; return 1; }
		[ "$(head -c 8 "$png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ]
		grep -q '<svg' "$svg"
		[[ "$output" == *"plot: wrote $png"* ]]
	done
	# the key names every mode, the advice, that 2 cores allow no fit, and
	# the ideal it drew (a CPU-bound workload on 2 cores); the title the
	# machine; two repetitions: min..max bars
	for text in fork omp parallel-task parallel-shard "advice: -j 2 (measured, not fitted" \
		"no fit: " "2 cores" "ideal: min(workers, 2 cores)" "bars: min..max over repetitions"; do
		grep -qF "$text" "$out/compare-sales-speedup.svg" || { echo "no '$text' in the SVG" >&2; return 1; }
	done
	! grep -qiF "serial fraction" "$out/compare-sales-speedup.svg" || return 1
	grep -qF "ideal: min(workers, 2 cores) / workers" "$out/compare-sales-efficiency.svg"
	# the speedup plot as text on the terminal; this CSV is from before
	# task_s: one panel, the whole run
	[[ "$output" == *"speedup over serial"*"workers (processes or threads, -j)"* ]]
	[[ "$output" == *"ideal: min(workers, 2 cores)"* ]]
	[[ "$output" != *"task phase only"* ]]
	# the advice and the fit (here none: two counts up to 2 cores) for
	# scripts, and on stdout
	txt=$out/compare-sales-speedup.txt
	[[ "$output" == *"plot: wrote $txt"* ]]
	grep -qx "recommended_jobs: 2" "$txt"
	grep -qx "basis: measured" "$txt"
	grep -qx "fit: none" "$txt"
	grep -qx "amdahl_f: none" "$txt"
	grep -qx "ideal: min(workers, 2 cores)" "$txt"
	grep -qx "task_panel: no (the CSV has no task_s)" "$txt"
	[[ "$output" == *"plot: compare-sales: sales with -j 2 on this machine (2 cores; CPU-bound"* ]]
	[[ "$output" == *"plot: compare-sales: fit: measured, not fitted: 2 distinct worker counts up to the 2 cores (1, 2)"*"oversubscription"* ]]
	# the timeline of a bare cowrun --timeline file: tasks only, and says so
	grep -qF "no setup or merge times in this file" "$out/compare-sales-timeline.svg"
	grep -qF "workers busy" "$out/compare-sales-timeline.svg"
	grep -qF "not CPU use" "$out/compare-sales-timeline.svg"
	# one repetition: no bars promised, in any plot
	awk -F, '/^#/ || !h { if (!/^#/) h = 1; print; next } $4 == 1' "$FIXTURES/compare-sales.csv" \
		>"$BATS_TEST_TMPDIR/one.csv"
	run --separate-stderr "$PLOT" --no-text --out "$out" "$BATS_TEST_TMPDIR/one.csv"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	grep -qF "one run each: no spread shown" "$out/one-speedup.svg"
	for name in speedup wall cost; do
		! grep -qF "bars: min..max" "$out/one-$name.svg" || { echo "$name promises bars" >&2; return 1; }
	done
}

@test "plots/plot draws the task phase's speedup as a second panel when the CSV has task_s" {
	out=$BATS_TEST_TMPDIR/plots
	run --separate-stderr "$PLOT" --out "$out" "$FIXTURES/compare-selftest-tasks.csv"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	svg=$out/compare-selftest-tasks-speedup.svg
	for text in "whole run, setup and merge included" "task phase only" "fork (task phase)" \
		"omp (task phase)" "no fit: " "ideal: min(workers, 2 cores)" "bars: min..max over repetitions"; do
		grep -qF "$text" "$svg" || { echo "no '$text' in the SVG" >&2; return 1; }
	done
	# both panels in the text plot, each with the ideal in its key: the
	# whole run above (every mode), the task phase below (fork and omp)
	[[ "$output" == *"whole run, setup and merge included"*"parallel-shard"*"task phase only"*"fork (task phase)"* ]]
	[ "$(grep -c "ideal: min(workers, 2 cores)" <<<"$output")" -ge 2 ]
	[[ "$output" != *"parallel-shard (task phase)"* ]]
	grep -qx "task_panel: yes" "$out/compare-selftest-tasks-speedup.txt"
	grep -qx "bound: cpu" "$out/compare-selftest-tasks-speedup.txt"
	grep -qx "bound_from: csv" "$out/compare-selftest-tasks-speedup.txt"
}

@test "plots/plot: the ideal is speedup = workers for I/O-bound printer, from the bound line or the workload" {
	out=$BATS_TEST_TMPDIR/plots
	# An old printer CSV (no "# bound:" line): printer's default, io.
	sed 's/^# workload: sales$/# workload: printer/' "$FIXTURES/compare-sales.csv" >"$BATS_TEST_TMPDIR/printer.csv"
	# A CSV that says io itself.
	sed 's/^# bound: cpu$/# bound: io/' "$FIXTURES/compare-selftest-tasks.csv" >"$BATS_TEST_TMPDIR/io.csv"
	run --separate-stderr "$PLOT" --out "$out" "$BATS_TEST_TMPDIR/printer.csv" "$BATS_TEST_TMPDIR/io.csv"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	for name in printer io; do
		grep -qF "ideal: speedup = workers (I/O-bound)" "$out/$name-speedup.svg"
		[ "$(grep -cF "min(workers" "$out/$name-speedup.svg")" -eq 0 ]
		grep -qF "ideal: efficiency 1 (I/O-bound: speedup = workers)" "$out/$name-efficiency.svg"
		grep -qx "ideal: speedup = workers (I/O-bound)" "$out/$name-speedup.txt"
		grep -qx "bound: io" "$out/$name-speedup.txt"
	done
	grep -qx "bound_from: default for printer (the CSV has no '# bound:' line)" "$out/printer-speedup.txt"
	grep -qx "bound_from: csv" "$out/io-speedup.txt"
	[[ "$output" != *"min(workers"* ]]
	# A bad bound line is a one-line error.
	sed 's/^# bound: cpu$/# bound: disk/' "$FIXTURES/compare-selftest-tasks.csv" >"$BATS_TEST_TMPDIR/bad.csv"
	run --separate-stderr "$PLOT" --out "$out" "$BATS_TEST_TMPDIR/bad.csv"
	[ "$status" -eq 2 ]
	assert_one_line_error "plot: cannot plot *: bad '# bound: disk' line: cpu or io expected"
}

@test "compare writes '# bound: io' for printer, cpu for the others, and --bound overrides it" {
	args=(--modes fork --jobs 2 --reps 1 --warmup 0)
	run --separate-stderr compare "${args[@]}" --workload printer --out "$BATS_TEST_TMPDIR/p.csv" \
		-- --regions 4 --sales 2000 --page-lines 10 --largest 3 --lpm 600000
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	grep -qx '# bound: io' "$BATS_TEST_TMPDIR/p.csv"
	run --separate-stderr compare "${args[@]}" --bound io --workload selftest \
		--out "$BATS_TEST_TMPDIR/s.csv" -- --tasks 4
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	grep -qx '# bound: io' "$BATS_TEST_TMPDIR/s.csv"
	run --separate-stderr compare "${args[@]}" --bound=cpu --workload printer \
		--out "$BATS_TEST_TMPDIR/c.csv" -- --regions 2 --sales 1000 --page-lines 10 --largest 3 --lpm 600000
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	grep -qx '# bound: cpu' "$BATS_TEST_TMPDIR/c.csv"
	assert_no_leftovers
}

@test "plots/plot --no-text draws no text plot; bad input is a one-line error" {
	run --separate-stderr "$PLOT" --no-text --out "$BATS_TEST_TMPDIR/p" "$FIXTURES/compare-sales.csv"
	[ "$status" -eq 0 ]
	[[ "$output" != *"speedup over serial"* ]]
	run --separate-stderr "$PLOT" --help
	[ "$status" -eq 0 ]
	[[ "$output" == "Usage: plots/plot"* ]]
	run --separate-stderr "$PLOT"
	[ "$status" -eq 2 ]
	assert_one_line_error "plot: no CSV file given*"
	run --separate-stderr "$PLOT" --frobnicate x.csv
	[ "$status" -eq 2 ]
	assert_one_line_error "plot: unknown option '--frobnicate'*"
	run --separate-stderr "$PLOT" "$BATS_TEST_TMPDIR/nonexistent.csv"
	[ "$status" -eq 2 ]
	assert_one_line_error "plot: cannot read *"
	grep -v ',serial,' "$FIXTURES/compare-sales.csv" >"$BATS_TEST_TMPDIR/noserial.csv"
	run --separate-stderr "$PLOT" --out "$BATS_TEST_TMPDIR/p" "$BATS_TEST_TMPDIR/noserial.csv"
	[ "$status" -eq 2 ]
	assert_one_line_error "plot: cannot plot *: no serial rows: speedups need the serial baseline"
	printf 'a,b\n1,2\n' >"$BATS_TEST_TMPDIR/other.csv"
	run --separate-stderr "$PLOT" --out "$BATS_TEST_TMPDIR/p" "$BATS_TEST_TMPDIR/other.csv"
	[ "$status" -eq 2 ]
	assert_one_line_error "plot: *is neither a compare/compare results CSV nor a cowrun --timeline CSV"
}

@test "plots/plot draws memory vs workers from a CSV with peak PSS, and only then" {
	out=$BATS_TEST_TMPDIR/plots
	run --separate-stderr "$PLOT" --no-text --out "$out" "$FIXTURES/compare-selftest-pss.csv"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	[ -s "$out/compare-selftest-pss-memory.png" ]
	grep -q '<svg' "$out/compare-selftest-pss-memory.svg"
	# The older fixture has no peak_pss_kb column: no memory plot from it.
	run --separate-stderr "$PLOT" --no-text --out "$out" "$FIXTURES/compare-sales.csv"
	[ "$status" -eq 0 ]
	[ ! -e "$out/compare-sales-memory.png" ]
}
