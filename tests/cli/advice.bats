#!/usr/bin/env bats
# compare/advice, the -j to use and the memory it takes, and what plots/plot
# draws from it: on synthetic compare CSVs whose walls follow the Universal
# Scalability Law with a known sigma and kappa (and a fixed, unbalanced
# noise), so that every figure it prints can be checked; and one tiny real
# compare run for the budget it records.

load helpers

ADVICE="$ROOT/compare/advice"
PLOT="$ROOT/plots/plot"
HEADER="seq,mode,jobs,rep,wall_s,user_s,sys_s,max_rss_kb,exit_status,setup_s,checksum,verified,peak_pss_kb,task_s,merge_s,load_before,load_after,others_pct,busy,worker_private_kb"

# synth OUT CORES BOUND SIGMA KAPPA "COUNTS" REPS [NOISE]: a compare CSV of
# serial and fork runs of 100 tasks, fork's wall 10 (1 + SIGMA (n-1) +
# KAPPA n (n-1)) / n at every count, times ceil(100 / n) n / 100 (the last
# round's idle workers), serial's 10, each times 1 + NOISE x a pseudo-random number
# in -1..1, roughly bell-shaped (the mean of three uniform ones from a seeded
# generator: the same numbers every time; default NOISE 0.02).  Environment: SYNTH_PRIVATE_KB and
# SYNTH_SHARED_KB (memory: peak PSS = shared + n private), SYNTH_BUDGET_KB
# (the recorded budget, default 100 GiB), SYNTH_BUSY (the first N runs are
# busy), SYNTH_WORKLOAD (the "# workload:" line).
synth() {
	local out=$1 cores=$2 bound=$3 sigma=$4 kappa=$5 counts=$6 reps=$7 noise=${8:-0.02}
	{
		echo "# workload: ${SYNTH_WORKLOAD:-synthetic}"
		echo "# tasks: 100"
		echo "# bound: $bound"
		echo "# cores: $cores"
		echo "# busy_threshold_pct: 10 (test)"
		echo "# busy_runs: ${SYNTH_BUSY:-0} of many"
		echo "# mem_budget_kb: ${SYNTH_BUDGET_KB:-104857600}"
		echo "# mem_budget_from: the test's budget"
		echo "$HEADER"
		awk -v counts="$counts" -v reps="$reps" -v s="$sigma" -v k="$kappa" -v amp="$noise" \
			-v priv="${SYNTH_PRIVATE_KB:-10240}" -v shared="${SYNTH_SHARED_KB:-102400}" \
			-v busy="${SYNTH_BUSY:-0}" '
			BEGIN {
				nc = split(counts, c, " ")
				x = 12345
				for (r = 1; r <= reps; r++) {
					row("serial", 1, r, 10 * (1 + amp * noise()))
					for (i = 1; i <= nc; i++) {
						n = c[i]
						t = 10 * (1 + s * (n - 1) + k * n * (n - 1)) / n
						t *= int((100 + n - 1) / n) * n / 100
						row("fork", n, r, t * (1 + amp * noise()))
					}
				}
			}
			function uniform() { x = (x * 1103515245 + 12345) % 2147483648; return x / 2147483648 }
			function noise() { return (uniform() + uniform() + uniform()) * 2 / 3 - 1 }
			function row(mode, n, r, wall) {
				seq++
				printf "%d,%s,%d,%d,%.6f,%.2f,0.10,0,0,0.100,x,yes,%d,%.6f,0.010,0.50,0.50,%.1f,%s,%s\n",
					seq, mode, n, r, wall, 9, shared + (mode == "fork" ? n : 1) * priv, wall - 0.2,
					(seq <= busy ? 50 : 0), (seq <= busy ? "yes" : "no"), (mode == "fork" ? priv : "")
			}'
	} >"$out"
}

# key FILE NAME: the value of a "NAME: value" line of an advice file.
key() {
	sed -n "s/^$2: //p" "$1"
}

# within LO X HI: LO <= X <= HI (decimal numbers).
within() {
	awk -v lo="$1" -v x="$2" -v hi="$3" 'BEGIN { exit !(lo <= x && x <= hi) }'
}

@test "the USL fit recovers a known sigma and kappa within its 95% intervals, and they are narrow" {
	check() {  # check SIGMA KAPPA "COUNTS" CORES
		csv=$BATS_TEST_TMPDIR/u.csv adv=$BATS_TEST_TMPDIR/u.txt
		synth "$csv" "$4" cpu "$1" "$2" "$3" 3
		run --separate-stderr "$ADVICE" --out "$adv" "$csv"
		[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
		[ "$(key "$adv" basis)" = "fitted (Universal Scalability Law)" ]
		read -r word sword s slo shi kword k klo khi _ <<<"$(key "$adv" fit)"
		[ "$word $sword $kword" = "usl sigma kappa" ] || { echo "fit line: $(key "$adv" fit)" >&2; return 1; }
		within "$slo" "$1" "$shi" || { echo "sigma $1 not in $slo..$shi" >&2; return 1; }
		within "$klo" "$2" "$khi" || { echo "kappa $2 not in $klo..$khi" >&2; return 1; }
		within "$slo" "$s" "$shi" && within "$klo" "$k" "$khi"
		# an interval that says something: narrower than the whole range
		awk -v a="$slo" -v b="$shi" 'BEGIN { exit !(b - a < 0.1) }' ||
			{ echo "sigma interval $slo..$shi is vacuous" >&2; return 1; }
		[[ "$output" == *"Fit: Universal Scalability Law on "*" runs at -j "*"sigma (contention) "*"(95%: "* ]]
	}
	check 0.05 0.002 "1 2 4 8 16" 16
	check 0.20 0 "1 2 3 4" 4
	check 0 0.01 "1 2 4 6 8" 8
	check 0.02 0 "1 2 4 8 16 32 64" 64
}

@test "no fit from two worker counts up to the cores, nor from counts above them, nor without repetitions" {
	csv=$BATS_TEST_TMPDIR/two.csv adv=$BATS_TEST_TMPDIR/two.txt
	synth "$csv" 2 cpu 0.05 0 "1 2 4 8" 3
	run --separate-stderr "$ADVICE" --out "$adv" "$csv"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	[ "$(key "$adv" basis)" = measured ]
	[ "$(key "$adv" fit)" = none ]
	[ "$(key "$adv" amdahl_f)" = none ]
	[[ "$output" == *"Fit: measured, not fitted: 2 distinct worker counts up to the 2 cores (1, 2)"*"need at least 3"* ]]
	[[ "$output" == *"the counts above the cores (4, 8) measure oversubscription"*"not contention"* ]]
	[[ "$output" == *"on 2 cores three counts up to the cores never exist"* ]]
	[[ "$output" == *"Reach: the cores stop the measurement"* ]]
	# three counts but one run each: as many parameters as runs
	synth "$csv" 4 cpu 0.05 0 "1 2 4" 1
	run --separate-stderr "$ADVICE" --out "$adv" "$csv"
	[ "$status" -eq 0 ]
	[ "$(key "$adv" fit)" = none ]
	[[ "$output" == *"3 runs for 3 parameters: no degree of freedom left"* ]]
	# and the same counts with repetitions fit
	synth "$csv" 4 cpu 0.05 0 "1 2 4" 2
	run --separate-stderr "$ADVICE" --out "$adv" "$csv"
	[ "$(key "$adv" basis)" = "fitted (Universal Scalability Law)" ]
}

@test "the advice is the smallest -j within 5% of the best, above the cores of a CPU-bound workload only when every run there beat those at the cores; the memory budget caps it" {
	csv=$BATS_TEST_TMPDIR/m.csv adv=$BATS_TEST_TMPDIR/m.txt
	# I/O-bound on 2 cores, still scaling at 20: the best is the largest
	SYNTH_SHARED_KB=$((1000 * 1024)) SYNTH_PRIVATE_KB=$((100 * 1024)) \
		synth "$csv" 2 io 0.01 0 "1 2 5 10 20" 3 0.01
	run --separate-stderr "$ADVICE" --out "$adv" "$csv"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	[ "$(key "$adv" recommended_jobs)" = 20 ]
	[ "$(key "$adv" memory_per_worker_mib)" = 100.00 ]
	[ "$(key "$adv" memory_shared_mib)" = 1000.0 ]
	[ "$(key "$adv" memory_at_recommended_mib)" = 3000.0 ]
	[[ "$output" == *"I/O-bound: -j may exceed the cores"* ]]
	[[ "$output" == *"the best is the largest count measured (-j 20): more workers may be faster still"* ]]
	# the same up to 16: 100 tasks take 7 rounds on 15 workers as on 16
	synth "$csv" 2 io 0.01 0 "1 2 4 8 16" 3 0.01
	run --separate-stderr "$ADVICE" --out "$adv" "$csv"
	[ "$(key "$adv" recommended_jobs)" = 15 ]
	[[ "$output" == *"the last round's idle workers (100 tasks on n workers take ceil(100 / n) rounds)"* ]]
	SYNTH_SHARED_KB=$((1000 * 1024)) SYNTH_PRIVATE_KB=$((100 * 1024)) \
		synth "$csv" 2 io 0.01 0 "1 2 5 10 20" 3 0.01
	# 1500 MiB: the setup's 1000 and five workers of 100
	run --separate-stderr "$ADVICE" --mem-budget 1500M --out "$adv" "$csv"
	[ "$status" -eq 0 ]
	[ "$(key "$adv" memory_cap_jobs)" = 5 ]
	[ "$(key "$adv" recommended_jobs)" = 5 ]
	[[ "$output" == *"but memory caps it at -j 5"* ]]
	# 0.5 GiB: not even one worker
	run --separate-stderr "$ADVICE" --mem-budget 0.5G --out "$adv" "$csv"
	[ "$(key "$adv" recommended_jobs)" = 1 ]
	[[ "$output" == *"-j 1 already exceeds it"* ]]
	# a flat curve: -j 2 is within 5% of -j 4's best, and is chosen
	synth "$csv" 8 cpu 0.9 0 "1 2 4" 3 0
	run --separate-stderr "$ADVICE" --out "$adv" "$csv"
	[ "$(key "$adv" best_jobs)" = 4 ]
	[ "$(key "$adv" recommended_jobs)" = 2 ]
	# CPU-bound on 2 cores, -j 4's median best: advised only when each of
	# its runs beat each at -j 2, else set aside for the counts up to the cores
	synth "$csv" 2 cpu 0.6 0 "1 2 4" 3 0.4
	run --separate-stderr "$ADVICE" --out "$adv" "$csv"
	[ "$(key "$adv" best_jobs)" = 4 ]
	[ "$(key "$adv" recommended_jobs)" = 2 ]
	[ "$(key "$adv" set_aside_above_cores)" = 4 ]
	[[ "$output" == *"Why: -j 4 had the best median"*"its runs ("*") overlap those at -j 2 ("*"not a gain these runs establish"* ]]
	synth "$csv" 2 cpu 0.6 0 "1 2 4" 3 0.1
	run --separate-stderr "$ADVICE" --out "$adv" "$csv"
	[ "$(key "$adv" recommended_jobs)" = 4 ]
	[ "$(key "$adv" set_aside_above_cores)" = none ]
	[[ "$output" == *"Caution: -j 4 is above the 2 cores"*"each of its runs beat each at -j 2"* ]]
	# bad sizes are one-line errors
	run --separate-stderr "$ADVICE" --mem-budget lots "$csv"
	[ "$status" -eq 2 ]
	assert_one_line_error "advice: --mem-budget: bad size 'lots'*"
}

@test "busy runs are set aside where a count has quiet ones" {
	csv=$BATS_TEST_TMPDIR/b.csv adv=$BATS_TEST_TMPDIR/b.txt
	# -j 2 and -j 4 equally fast (0.55 of -j 1) on 2 cores: -j 2 advised
	synth "$csv" 2 cpu -0.2 0.15 "1 2 4" 3 0.01
	run --separate-stderr "$ADVICE" --out "$adv" "$csv"
	[ "$(key "$adv" recommended_jobs)" = 2 ]
	# two of -j 2's three runs twice as slow, competing with other work
	awk -F, -v OFS=, '$2 == "fork" && $3 == 2 && $4 <= 2 { $5 *= 2; $18 = 60.0; $19 = "yes" } 1' \
		"$csv" >"$csv.busy"
	run --separate-stderr "$ADVICE" --out "$adv" "$csv.busy"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	[ "$(key "$adv" recommended_jobs)" = 2 ]
	[[ "$output" == *"the advice and the fit set aside 2 busy fork runs, using each count's quiet runs"* ]]
	# all three busy: nothing to set aside, and the advice says so
	awk -F, -v OFS=, '$2 == "fork" && $3 == 2 { $5 *= 2; $18 = 60.0; $19 = "yes" } 1' \
		"$csv" >"$csv.busy"
	run --separate-stderr "$ADVICE" --out "$adv" "$csv.busy"
	[ "$(key "$adv" recommended_jobs)" = 4 ]
	[[ "$output" == *"every run at -j 2 was busy, so it may look slower than it is"* ]]
}

@test "no negative or interval-less fraction; points above the ideal are noise, labelled, not fitted" {
	csv=$BATS_TEST_TMPDIR/n.csv adv=$BATS_TEST_TMPDIR/n.txt
	# sigma < 0: every count faster than the ideal (superlinear: noise)
	synth "$csv" 16 cpu -0.05 0 "1 2 4 8 16" 3 0.01
	run --separate-stderr "$ADVICE" --out "$adv" "$csv"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	[[ "$(key "$adv" noise_jobs)" == *"2 4 8 16" ]]
	[ "$(key "$adv" fit)" = none ]
	[ "$(key "$adv" amdahl_f)" = none ]
	[[ "$output" == *"Noise: -j 2's median speedup 2.11x is 5."*"% above the ideal 2x: noise, not a finding (its runs 2.1"*"x..2.1"*"x); not fitted."* ]]
	# the plot labels them with their spread
	run --separate-stderr "$PLOT" --no-text --out "$BATS_TEST_TMPDIR/p" "$csv"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	grep -qF "above the ideal: noise (runs min..max)" "$BATS_TEST_TMPDIR/p/n-speedup.svg"
	grep -Eq 'noise: [0-9.]+\.\.[0-9.]+x' "$BATS_TEST_TMPDIR/p/n-speedup.svg"
	# Amdahl's f, wherever printed, is three numbers, 0 <= lo <= f <= hi,
	# even where the noise pulls the points towards the ideal
	printed=0
	for sigma in 0 0.001 0.01 0.05 0.1 0.3; do
		synth "$csv" 8 cpu "$sigma" 0 "1 2 4 8" 3 0.03
		run --separate-stderr "$ADVICE" --out "$adv" "$csv"
		[ "$status" -eq 0 ]
		[ "$(key "$adv" amdahl_f)" != none ] || continue
		read -r f lo hi rest <<<"$(key "$adv" amdahl_f)"
		[ -z "$rest" ] && within 0 "$lo" "$f" && within "$lo" "$f" "$hi" ||
			{ echo "amdahl_f: $(key "$adv" amdahl_f)" >&2; return 1; }
		[[ "$output" == *"serial fraction f "*" (95%: "*".."*")"* ]]
		printed=$((printed + 1))
	done
	[ "$printed" -ge 3 ]
}

@test "plots/plot: the advice, the fit and its intervals on the speedup plot; titles name the workload; busy runs said" {
	csv=$BATS_TEST_TMPDIR/libmine.csv
	SYNTH_WORKLOAD=/some/where/build/libmine.so SYNTH_BUSY=3 synth "$csv" 16 cpu 0.05 0.002 "1 2 4 8 16" 3
	run --separate-stderr "$PLOT" --out "$BATS_TEST_TMPDIR/p" "$csv"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	svg=$BATS_TEST_TMPDIR/p/libmine-speedup.svg
	grep -qF "advice: -j " "$svg"
	grep -qF "(fitted; the smallest within 5% of the best)" "$svg"
	grep -Eq "USL fit to fork \(13 runs\): sigma [0-9.e-]+ \(95%: [0-9.e-]+\.\.[0-9.e-]+\), kappa" "$svg"
	grep -qF "Amdahl (kappa = 0): serial fraction f" "$svg"
	# the title: the workload's name, not its path; the busy runs
	for p in speedup wall efficiency cost phases memory; do
		grep -qF "mine: 16 cores" "$BATS_TEST_TMPDIR/p/libmine-$p.svg" || { echo "$p: no name" >&2; return 1; }
		! grep -qF "libmine.so" "$BATS_TEST_TMPDIR/p/libmine-$p.svg" || return 1
		grep -qF "BUSY MACHINE: 3 of many runs had other processes using > 10% of the CPUs" \
			"$BATS_TEST_TMPDIR/p/libmine-$p.svg" || { echo "$p: no busy line" >&2; return 1; }
	done
	[[ "$output" == *"plot: libmine: mine with -j "*" on this machine (16 cores; CPU-bound"* ]]
	[[ "$output" == *"plot: libmine: fit: Universal Scalability Law on 13 runs"* ]]
	grep -qx "basis: fitted (Universal Scalability Law)" "$BATS_TEST_TMPDIR/p/libmine-speedup.txt"
	# the memory plot: per added worker, and fork's model
	grep -qF "memory one more worker adds" "$BATS_TEST_TMPDIR/p/libmine-memory.svg"
	grep -qF "fork model: 100.0 MiB shared + 10.0 MiB per worker" "$BATS_TEST_TMPDIR/p/libmine-memory.svg"
	grep -qF "CPU seconds per task" "$BATS_TEST_TMPDIR/p/libmine-cost.svg"
	grep -qF "setup (on -j threads)" "$BATS_TEST_TMPDIR/p/libmine-phases.svg"
}

@test "the timeline puts the setup and the merge on the parent's row, from the start of the run" {
	tl=$BATS_TEST_TMPDIR/w-timeline.csv
	cat >"$tl" <<-'EOF'
	# cowrun --timeline of one fork run by compare/compare, with its phases from -v
	# workload: sales
	# workload_name: sales
	# jobs: 2
	# cores: 2
	# setup_s: 0.500
	# task_s: 2.000
	# merge_s: 0.200
	# wall_s: 2.750
	task,name,worker,pid,start_s,end_s,status
	0,a,0,11,0.001,1.000,ok
	1,b,1,12,0.001,1.500,ok
	2,c,0,11,1.000,1.999,ok
	EOF
	run --separate-stderr "$PLOT" --out "$BATS_TEST_TMPDIR/p" "$tl"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	svg=$BATS_TEST_TMPDIR/p/w-timeline.svg
	for text in ">parent<" " setup 0.500 s" "merge and summary 0.200 s" "time since the run began" \
		"task timeline at -j 2 (2 cores): 3 tasks on 2 workers" \
		"the run: 2.700 s = setup 0.500 s + task phase 2.000 s + merge and summary 0.200 s" \
		"workers busy 88% of the task phase: the share of worker-seconds spent inside a task"; do
		grep -qF "$text" "$svg" || { echo "no '$text' in the timeline" >&2; return 1; }
	done
	# the same tasks without the phases: no parent row, and it says why
	grep -v '^#' "$tl" >"$BATS_TEST_TMPDIR/bare-timeline.csv"
	run --separate-stderr "$PLOT" --out "$BATS_TEST_TMPDIR/p" "$BATS_TEST_TMPDIR/bare-timeline.csv"
	[ "$status" -eq 0 ]
	! grep -qF ">parent<" "$BATS_TEST_TMPDIR/p/bare-timeline.svg" || return 1
	grep -qF "no setup or merge times in this file" "$BATS_TEST_TMPDIR/p/bare-timeline.svg"
}

@test "compare records its memory budget and the advice caps -j by it" {
	csv=$BATS_TEST_TMPDIR/b.csv
	run --separate-stderr "$REAPER" "$ROOT/compare/compare" --modes fork --jobs 1,2 --reps 1 \
		--warmup 0 --mem-budget 1K --workload selftest --out "$csv" -- --tasks 2
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	grep -qx '# mem_budget_kb: 1' "$csv"
	grep -qx '# mem_budget_from: --mem-budget 1K' "$csv"
	grep -qx 'recommended_jobs: 1' "$BATS_TEST_TMPDIR/b-advice.txt"
	[[ "$output" == *"Budget 0.0 MiB, --mem-budget 1K: -j 1 already exceeds it."* ]]
	# advice reads the budget back from the CSV; --mem-budget overrides it
	run --separate-stderr "$ADVICE" --mem-budget 100% "$csv"
	[[ "$output" == *"100% of the memory available ("* ]]
}

@test "compare/bench-advice checks the advice on fresh runs: advised -j, its neighbours, the loss" {
	# no run counted busy, whatever else this machine runs (a quiet one;
	# on short runs the share measured can pass 100%: clock ticks)
	COMPARE_BUSY_PCT=999 run --separate-stderr "$REAPER" "$ROOT/compare/bench-advice" \
		--workload selftest --jobs 1,2 --reps 1 --out "$BATS_TEST_TMPDIR" -- --tasks 4 --sleep-ms 20
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	adv=$(sed -n 's/^recommended_jobs: //p' "$BATS_TEST_TMPDIR/bench-advice-selftest-advice.txt")
	[[ $adv =~ ^[12]$ ]]
	# the check ran the advised count and its neighbours, fresh
	check=$BATS_TEST_TMPDIR/bench-advice-selftest-check.csv
	grep -qx "# jobs: $(printf '%s\n' 1 2 "$adv" $((adv + 1)) | sort -n -u | paste -s -d' ' -)" "$check"
	[[ "$output" == *$'\n'"$(printf '%6d' "$adv") "*"<- advised"* ]]
	[[ "$output" == *"following the advice (-j $adv) lost "*"% against the best count of the check (-j "* ]]
	[[ "$output" =~ (under 5%: the advice holds|5% or more: the advice did NOT hold) ]]
	[[ "$output" == *"busy runs (other processes used > 999% of the CPUs): 0"* ]]
}
