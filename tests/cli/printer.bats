#!/usr/bin/env bats
# The printer story (issue 34, part 7): --report-to with {%}, N workers
# driving N printers.  The printer is a real program, bin/cowrun-lineprinter
# (tools/lineprinter.c): it holds a lock on its printer while a job prints,
# refuses a second job at once (exit 75, "busy"), and records what it
# printed (DIR/printer-N.paper) and when (DIR/printer-N.log).  These tests
# read those records: each slot printed whole reports, one at a time, each
# report once, and a crashed task's report never.

load helpers

LP="$ROOT/bin/cowrun-lineprinter"
BUSY="cowrun-lineprinter: printer 3 is busy: another job is printing"
USAGE="usage: cowrun-lineprinter --spool DIR --printer N [--job NAME] [--lpm LINES_PER_MINUTE]"
# 16 statements of 86 lines: at 30000 lines a minute (2 ms a line) about
# 2.8 s of printing, 0.7 s on 4 printers.
STATEMENTS=(printer --regions 16 --lpm 0)
LPM=30000

setup() {
	SPOOL="$BATS_TEST_TMPDIR/spool"
	OUT="$BATS_TEST_TMPDIR/out"
	mkdir -p "$SPOOL"
}

# A job a test started in the background is stopped, even if the test failed.
teardown() {
	if [ -n "${slow:-}" ]; then
		kill "$slow" 2>/dev/null || true
		wait "$slow" 2>/dev/null || true
	fi
}

# The --report-to command: printer {%}, job {/}, at $LPM.
printers() {
	echo "$LP --spool $SPOOL --printer {%} --job {/} --lpm $LPM"
}

# The reports of a plain run of ARGS (no --report-to): $BATS_TEST_TMPDIR/plain.
plain_reports() {
	run --separate-stderr cowrun -j 2 -o "$BATS_TEST_TMPDIR/plain" "$@"
	[ "$status" -eq 0 ] || { echo "plain run failed: $stderr" >&2; return 1; }
}

# assert_printers N: the spool holds printers 1 to N, each with its lock,
# paper and log, and nothing else.
assert_printers() {
	local expected="" n
	for n in $(seq "$1"); do
		expected+="printer-$n.lock printer-$n.log printer-$n.paper "
	done
	[ "$(ls "$SPOOL" | sort -V | tr '\n' ' ')" = "$expected" ] ||
		{ echo "spool: $(ls "$SPOOL" | tr '\n' ' '), expected $expected" >&2; return 1; }
}

# printed NAMES...: the jobs in all logs, and the banners on all papers,
# are exactly NAMES, each once.
printed() {
	local expected logged banners
	expected=$(printf '%s\n' "$@" | sort)
	logged=$(cat "$SPOOL"/printer-*.log | awk '{ print $1 }' | sort)
	banners=$(cat "$SPOOL"/printer-*.paper | sed -n 's/^==== job \(.*\) ====$/\1/p' | sort)
	[ "$logged" = "$expected" ] || { echo "logged: $logged" >&2; return 1; }
	[ "$banners" = "$expected" ] || { echo "on paper: $banners" >&2; return 1; }
}

# no_overlap N: printer N's log shows no two jobs printing at once: sorted
# by start, every job starts after the one before it ended.  And each took
# at least its lines' print cycles at $LPM: the printer kept its rate.
no_overlap() {
	local start end lines name prev_end=0 prev=none
	local cycle_ns=$((60000000000 / LPM))
	while read -r start end lines name; do
		if [ "$start" -lt "$prev_end" ]; then
			echo "printer $1: $name started at $start, before $prev ended at $prev_end" >&2
			return 1
		fi
		if [ $((end - start)) -lt $((lines * cycle_ns)) ]; then
			echo "printer $1: $name printed $lines lines in $((end - start)) ns" >&2
			return 1
		fi
		prev_end=$end prev=$name
	done < <(awk '{ s = $5; e = $6; sub(/\./, "", s); sub(/\./, "", e); print s, e, $2, $1 }' \
		"$SPOOL/printer-$1.log" | sort -n)
}

# job_bytes N NAME FILE: job NAME as printer N's paper holds it, between its
# banner and its trailer, into FILE.  Fails unless the banner is there once
# and the trailer, with the log's counts, follows the job's bytes (after
# the line feed the printer adds to a last line without one).
job_bytes() {
	local paper="$SPOOL/printer-$1.paper" name=$2 banner="==== job $2 ====" at lines bytes
	local from after trailer last
	at=$(grep -a -b -x -F -- "$banner" "$paper" | cut -d: -f1)
	[[ $at =~ ^[0-9]+$ ]] || { echo "printer $1: banner of $name: '$at'" >&2; return 1; }
	read -r lines bytes < <(awk -v n="$name" '$1 == n { print $2, $3 }' "$SPOOL/printer-$1.log")
	from=$((at + ${#banner} + 2))   # tail -c + counts from 1
	tail -c +"$from" "$paper" | head -c "$bytes" >"$3"
	[ "$(stat -c %s "$3")" -eq "$bytes" ]
	trailer="==== end of $name: $lines lines, $bytes bytes ===="$'\n\f\n'
	last=$(tail -c 1 "$3"; echo .)
	[ "$bytes" -eq 0 ] || [ "$last" = $'\n.' ] || trailer=$'\n'"$trailer"
	after=$(tail -c +$((from + bytes)) "$paper" | head -c 400; echo .)
	[[ $after == "$trailer"* ]] || { echo "printer $1: after $name: $after" >&2; return 1; }
}

# same_as_plain N NAMES...: printer N's jobs NAMES are the plain run's reports.
same_as_plain() {
	local n=$1 name
	shift
	for name in "$@"; do
		job_bytes "$n" "$name" "$BATS_TEST_TMPDIR/job" || return 1
		cmp "$BATS_TEST_TMPDIR/job" "$BATS_TEST_TMPDIR/plain/$name" || return 1
	done
}

# The jobs printer N logged, in the order they started.
jobs_of() {
	sort -k5,5 "$SPOOL/printer-$1.log" | awk '{ print $1 }'
}

@test "printer --lpm 0: the statements a worker's own printer writes, byte for byte, at once" {
	run --separate-stderr cowrun -j 2 -o "$BATS_TEST_TMPDIR/paced" printer --regions 16 --lpm 6000000
	[ "$status" -eq 0 ]
	paced=$output
	run --separate-stderr cowrun -j 2 -o "$OUT" "${STATEMENTS[@]}"
	[ "$status" -eq 0 ]
	assert_no_leftovers
	diff -r -x '.cowrun-manifest.*' "$BATS_TEST_TMPDIR/paced" "$OUT"
	[[ "$output" == *"Printing time                none in the workers (--lpm 0: written at once)"* ]]
	# Only that line of the summary differs.
	[ "$(diff <(echo "$paced") <(echo "$output") | grep -c '^[<>]')" -eq 2 ]
}

@test "-j 4 --report-to 'cowrun-lineprinter --printer {%}': 4 printers, each report printed whole and once, never two at once on a printer" {
	plain_reports "${STATEMENTS[@]}"
	run --separate-stderr cowrun -j 4 -o "$OUT" --report-to "$(printers)" "${STATEMENTS[@]}"
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	assert_no_leftovers
	[[ "$stderr" != *busy* ]]
	[[ "$output" == *"Statements printed           16 of 16"* ]]
	# No file kept: the printers have them.
	[ -z "$(ls -A "$OUT")" ]
	assert_printers 4
	printed $(ls "$BATS_TEST_TMPDIR/plain")
	for n in 1 2 3 4; do
		no_overlap "$n"
		same_as_plain "$n" $(jobs_of "$n")
	done
}

@test "a worker crashes: its replacement prints on the same printer, never beside a job of the slot; the crashed task's report is never printed" {
	local self=(selftest --tasks 12 --report-bytes 640 --sleep-ms 20)
	plain_reports "${self[@]}"
	marks="$BATS_TEST_TMPDIR/marks"
	# Task 5 writes its report, then crashes, on each of its 2 attempts.
	run --separate-stderr cowrun -j 2 -o "$OUT" --retries 1 --report-to "$(printers)" \
		"${self[@]}" --crash 5 --mark-start "$marks"
	[ "$status" -eq 1 ]
	assert_no_leftovers
	[[ "$stderr" == *"task 5 (task-000005) failed: worker "*" killed by SIGSEGV"* ]] || { echo "$stderr" >&2; return 1; }
	[[ "$stderr" != *busy* ]]
	assert_printers 2
	printed $(ls "$BATS_TEST_TMPDIR/plain" | grep -v '^task-000005$')
	# Which worker (pid, from the marks) printed each job on each printer.
	local n name pid crashed slot_of=() pids=() last
	crashed=$(ls "$marks" | sed -n 's/^task-000005\.//p')
	[ -n "$crashed" ]
	for n in 1 2; do
		no_overlap "$n"
		same_as_plain "$n" $(jobs_of "$n")
		# A slot's workers follow one another: once one is gone, it never prints there again.
		last=
		for name in $(jobs_of "$n"); do
			pid=$(ls "$marks" | sed -n "s/^$name\.//p")
			[[ $pid =~ ^[0-9]+$ ]]
			if [ "$pid" != "$last" ]; then
				[[ " ${pids[*]} " != *" $pid "* ]] || { echo "worker $pid printed again on $n after another" >&2; return 1; }
				pids+=("$pid")
				slot_of[$pid]=$n
				last=$pid
			fi
		done
	done
	# More workers printed than there are printers: a replacement took
	# the slot of the worker it replaced, whose last job had ended.
	[ "${#pids[@]}" -gt 2 ] || { echo "printed by ${pids[*]}" >&2; return 1; }
	# A worker that crashed after printing: its slot went on printing after
	# it, under another worker (tasks take about 40 ms: the one that first ran
	# task 5 has printed one before it).
	local seen=0
	for pid in $crashed; do
		[ -n "${slot_of[$pid]:-}" ] || continue
		seen=$((seen + 1))
		n=${slot_of[$pid]}
		last=$(jobs_of "$n" | tail -1)
		[ "$(ls "$marks" | sed -n "s/^$last\.//p")" != "$pid" ] ||
			{ echo "nothing printed on $n after worker $pid crashed" >&2; return 1; }
	done
	[ "$seen" -ge 1 ] || { echo "no crashed worker ($crashed) had printed" >&2; return 1; }
}

@test "negative control: a second job on a busy printer exits 75 saying so and prints nothing; the first one's death frees the printer" {
	printf 'line 1\nline 2\n' >"$BATS_TEST_TMPDIR/job"
	# One line a minute: the first line is due in 60 s, the job holds printer 3 till then.
	"$LP" --spool "$SPOOL" --printer 3 --job slow --lpm 1 <"$BATS_TEST_TMPDIR/job" \
		>"$BATS_TEST_TMPDIR/slow.out" 2>&1 3>&- &
	slow=$!
	# The banner is on the paper only once the printer is taken.
	wait_for 30 "the slow job's banner" grep -q -x -F '==== job slow ====' "$SPOOL/printer-3.paper"
	# util-linux's flock sees the lock held.
	run flock -n "$SPOOL/printer-3.lock" true
	[ "$status" -eq 1 ]
	run --separate-stderr "$LP" --spool "$SPOOL" --printer 3 --job second <<<"x"
	[ "$status" -eq 75 ]
	assert_one_line_error "$BUSY"
	! grep -q second "$SPOOL/printer-3.paper" || { echo "the refused job printed" >&2; return 1; }
	[ ! -e "$SPOOL/printer-3.log" ]
	# Through cowrun, the same refusal fails the task, naming the printer.
	run --separate-stderr cowrun -j 1 -o "$OUT" --report-to "$LP --spool $SPOOL --printer 3 --job {/}" \
		selftest --tasks 1 --report-bytes 100
	[ "$status" -eq 1 ]
	assert_no_leftovers
	[[ "$stderr" == *"task 0 (task-000000) failed: "*"exited with status 75: $BUSY"* ]] || { echo "$stderr" >&2; return 1; }
	# Another printer is free meanwhile.
	run "$LP" --spool "$SPOOL" --printer 4 --job other <<<"x"
	[ "$status" -eq 0 ]
	# It ignores no signal: SIGTERM ends it, and with it the lock.
	kill "$slow"
	local rc=0
	wait "$slow" || rc=$?
	slow=
	[ "$rc" -eq 143 ]
	[ ! -s "$BATS_TEST_TMPDIR/slow.out" ]
	run "$LP" --spool "$SPOOL" --printer 3 --job third <<<"x"
	[ "$status" -eq 0 ]
	[ "$(awk '{ print $1 }' "$SPOOL/printer-3.log")" = third ]
}

@test "cowrun-lineprinter: the paper and the log of a job, its FNV-1a hash, its rate; a last line without a newline" {
	printf 'a' | "$LP" --spool "$SPOOL" --printer 1 --job one
	"$LP" --spool "$SPOOL" --printer 1 --job empty </dev/null
	printf '%s\n' {1..20} | "$LP" --spool "$SPOOL" --printer 1 --job paced --lpm 6000
	# "a" and a line feed the printer adds, so that the trailer starts a line.
	cmp <(printf '==== job one ====\na\n==== end of one: 1 lines, 1 bytes ====\n\f\n'
		printf '==== job empty ====\n==== end of empty: 0 lines, 0 bytes ====\n\f\n'
		printf '==== job paced ====\n'; printf '%s\n' {1..20}
		printf '==== end of paced: 20 lines, 51 bytes ====\n\f\n') "$SPOOL/printer-1.paper"
	# FNV-1a 64 of "a" and of nothing: the published test values.
	awk '$1 == "one" && $2 == 1 && $3 == 1 && $4 == "af63dc4c8601ec8c" { ok = 1 } END { exit !ok }' "$SPOOL/printer-1.log"
	awk '$1 == "empty" && $2 == 0 && $3 == 0 && $4 == "cbf29ce484222325" { ok = 1 } END { exit !ok }' "$SPOOL/printer-1.log"
	# 20 lines at 6000 a minute: at least 200 ms from start to end.
	awk '$1 == "paced" { s = $5; e = $6; sub(/\./, "", s); sub(/\./, "", e); print s, e }' \
		"$SPOOL/printer-1.log" | { read -r start end; [ $((end - start)) -ge 200000000 ]; }
	job_bytes 1 one "$BATS_TEST_TMPDIR/one"
	[ "$(cat "$BATS_TEST_TMPDIR/one")" = a ]
}

@test "cowrun-lineprinter: bad options exit 2 with one line and the usage; a spool it cannot use, one line and 1" {
	bad() {
		local why=$1
		shift
		run --separate-stderr "$LP" "$@" </dev/null
		[ "$status" -eq 2 ] || { echo "status $status for $*" >&2; return 1; }
		[ -z "$output" ]
		# The usage's brackets would be a pattern to assert_one_line_error.
		[ "$stderr" = "cowrun-lineprinter: $why; $USAGE" ] || { echo "$stderr" >&2; return 1; }
	}
	bad "--printer N is required"
	bad "--printer N is required" --spool "$SPOOL"
	bad "--spool DIR is required" --printer 1
	bad "--printer: bad value '0' (a number from 1 to 9999)" --spool "$SPOOL" --printer 0
	bad "--printer: bad value '-1' (a number from 1 to 9999)" --spool "$SPOOL" --printer -1
	bad "--printer: bad value '1x' (a number from 1 to 9999)" --spool "$SPOOL" --printer 1x
	bad "--lpm: bad value '0.5' (lines a minute: 0, or 1 to 60000000)" --spool "$SPOOL" --printer 1 --lpm 0.5
	bad "--lpm: bad value 'fast' (lines a minute: 0, or 1 to 60000000)" --spool "$SPOOL" --printer 1 --lpm fast
	bad "--job: bad name (1 to 255 bytes, no control characters)" --spool "$SPOOL" --printer 1 --job $'a\nb'
	bad "--job: bad name (1 to 255 bytes, no control characters)" --spool "$SPOOL" --printer 1 --job ''
	bad "unknown option '--copies'" --spool "$SPOOL" --printer 1 --copies 2
	bad "unknown option '-x'" --spool "$SPOOL" --printer 1 -x
	bad "option '--lpm' needs a value" --spool "$SPOOL" --printer 1 --lpm
	bad "unexpected argument 'file.txt'" --spool "$SPOOL" --printer 1 file.txt
	[ -z "$(ls -A "$SPOOL")" ]
	run --separate-stderr "$LP" --help
	[ "$status" -eq 0 ]
	[ "${lines[0]}" = "$USAGE" ]
	[[ "$output" == *"Exit status: 0 printed, 1 an error, 2 bad options, 75 the printer is busy."* ]]
	# A spool that is no directory; a planted link where the paper goes.
	run --separate-stderr "$LP" --spool "$SPOOL/none" --printer 1 <<<"x"
	[ "$status" -eq 1 ]
	assert_one_line_error "cowrun-lineprinter: cannot open the spool directory '$SPOOL/none': No such file or directory"
	ln -s "$BATS_TEST_TMPDIR/elsewhere" "$SPOOL/printer-2.paper"
	run --separate-stderr "$LP" --spool "$SPOOL" --printer 2 <<<"x"
	[ "$status" -eq 1 ]
	assert_one_line_error "cowrun-lineprinter: cannot open '$SPOOL/printer-2.paper': Too many levels of symbolic links"
	[ ! -e "$BATS_TEST_TMPDIR/elsewhere" ]
	[ ! -e "$SPOOL/printer-2.log" ]
}
