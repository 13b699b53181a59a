#!/usr/bin/env bats
# cowrun --dry-run: the plan without the setup, nothing written; the files
# it names are the files the real run then writes, one for one; it refuses
# what the run would refuse before its setup, with the run's status.

load helpers

setup() {
	D=$BATS_TEST_TMPDIR/w   # bats keeps files of its own in BATS_TEST_TMPDIR
	mkdir "$D"
	cd "$D"
}

# files_now: every file under $D but the test's own, sorted.
files_now() {
	find "$D" -mindepth 1 \( -type f -o -type l \) ! -name 'plan.*' -printf '%P\n' | sort
}

# plan_names ARGS...: the task names the dry run of ARGS lists, one a
# line.  The tests keep to at most 6 tasks: the plan shows them all.
plan_names() {
	run --separate-stderr cowrun --dry-run "$@"
	[ "$status" -eq 0 ] || { echo "dry run: status $status: $stderr" >&2; return 1; }
	[[ "$output" != *"tasks "*" ... "* ]] || { echo "too many tasks to list: $output" >&2; return 1; }
	printf '%s\n' "$output" | sed -n 's/^tasks      [0-9]* of [0-9]*: //p' | tr ' ' '\n'
}

# names_alike REPORTS ARGS...: the dry run of ARGS writes nothing and names
# the tasks the run of ARGS then runs, in task order (its --timeline), and
# with REPORTS=reports, the report files it writes.
names_alike() {
	local reports=$1; shift
	plan_names "$@" > plan.names || return 1
	[ -s plan.names ] || { echo "the dry run named no task: $output" >&2; return 1; }
	[ -z "$(files_now)" ] || { echo "the dry run wrote: $(files_now)" >&2; return 1; }
	run --separate-stderr cowrun --timeline t.csv "$@"
	[ "$status" -eq 0 ] || { echo "the run: status $status: $stderr" >&2; return 1; }
	awk -F, 'NR > 1 { print $1 "," $2 }' t.csv | sort -t, -k1,1n | cut -d, -f2 > plan.run
	diff plan.names plan.run || return 1
	if [ "$reports" = reports ]; then
		ls out > plan.reports
		sort plan.names | diff - plan.reports || return 1
	fi
}

# refused_alike PATTERN ARGS...: the dry run of ARGS refuses them with one
# line on stderr matching PATTERN and status 255, writing nothing; the run
# of ARGS refuses them with the same line and status.
refused_alike() {
	local pattern=$1 dry; shift
	run --separate-stderr cowrun --dry-run "$@"
	[ "$status" -eq 255 ] || { echo "dry run: status $status: $output" >&2; return 1; }
	[[ "$output" == *$'\n'"would      refuse"* ]] || { echo "no refusal: $output" >&2; return 1; }
	assert_one_line_error "$pattern" || return 1
	[ -z "$(files_now)" ] || { echo "the dry run wrote: $(files_now)" >&2; return 1; }
	dry=$stderr
	run --separate-stderr cowrun "$@"
	[ "$status" -eq 255 ] || { echo "the run: status $status: $stderr" >&2; return 1; }
	[ "$stderr" = "$dry" ] || { echo "the run said '$stderr', the dry run '$dry'" >&2; return 1; }
}

@test "dry run: the plan names exactly the files the run then writes" {
	args=(-j 3 --joblog j.log --save-results s.res --timeline t.csv --tasks 2-12 -o out
	      selftest --tasks 20 --report-bytes 5)
	run --separate-stderr cowrun --dry-run "${args[@]}"
	[ "$status" -eq 0 ]
	printf '%s\n' "$output" > plan.txt
	[ -z "$(files_now)" ] || { files_now >&2; false; }   # nothing written
	[[ "$output" == *"tasks      11 of 20: task-000002 task-000003 task-000004 ... task-000010 task-000011 task-000012"* ]]
	[[ "$output" == *"workers    3 forked workers on "* ]]
	[[ "$output" == *$'\n'"would      start" ]]
	awk '$1 == "create" && $2 != "out" { print $2 }' plan.txt | sort > plan.files
	run --separate-stderr cowrun "${args[@]}"
	[ "$status" -eq 0 ]
	files_now > plan.real
	diff plan.files plan.real
	# The run again: the same files, now replaced (the joblog appended to
	# only with --resume or +FILE).
	run --separate-stderr cowrun --dry-run "${args[@]}"
	[ "$status" -eq 0 ]
	[ "$(printf '%s\n' "$output" | awk '$1 == "create"' | wc -l)" -eq 0 ]
	[ "$(printf '%s\n' "$output" | awk '$1 == "replace"' | wc -l)" -eq "$(wc -l < plan.files)" ]
}

@test "dry run: a workload that names its tasks in its setup says so, and runs no setup" {
	printf 'not a csv\n' > in.csv
	run --separate-stderr cowrun --dry-run -v sales --input in.csv
	[ "$status" -eq 0 ]
	[[ "$output" == *"tasks      known after the setup"* ]]
	[[ "$output" == *"create   out/...  (reports named after the setup)"* ]]
	[ "$stderr" = "" ]                                   # no setup: the bad CSV unread
	[ ! -e out ]
}

@test "dry run: what the run would refuse before its setup, with its status; nothing written" {
	run --separate-stderr cowrun --dry-run --save-results x --joblog x selftest --tasks 3
	[ "$status" -eq 255 ]
	[[ "$output" == *"would      refuse"* ]]
	[[ "$stderr" == *"name the same file"* ]]
	mkdir elsewhere && ln -s elsewhere out
	run --separate-stderr cowrun --dry-run selftest --tasks 3 --report-bytes 1
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: output directory 'out' is a symbolic link or not a directory: give the directory itself"
	run --separate-stderr cowrun --dry-run selftest --tasks 3 --bogus
	[ "$status" -eq 255 ]
	[ -z "$(ls -A elsewhere)" ]
}

@test "dry run: --resume with a changed input is refused before the setup, as the run is" {
	echo one > in.txt
	run --separate-stderr cowrun --joblog j.log selftest --tasks 4 --input in.txt
	[ "$status" -eq 0 ]
	echo two plus > in.txt
	run --separate-stderr cowrun --dry-run --joblog j.log --resume selftest --tasks 4 --input in.txt
	[ "$status" -eq 255 ]
	[[ "$stderr" == *"in.txt"*"changed"* ]]
	real_err=$stderr
	run --separate-stderr cowrun --joblog j.log --resume selftest --tasks 4 --input in.txt
	[ "$status" -eq 255 ]
	[ "$stderr" = "$real_err" ]
}

# ---- every workload whose tasks follow from its options names them (issue 32)

@test "dry run names the tasks the run runs: sales on generated data (its stores)" {
	names_alike reports sales --rows 3000 --stores 5 --days 40 --products 50
}

@test "dry run names the tasks the run runs: printer (its regions)" {
	names_alike reports printer --regions 6 --sales 600 --largest 3 --lpm 60000000
}

@test "dry run names the tasks the run runs: legacy (its branches)" {
	names_alike reports legacy --branches 4 --entries 200
}

@test "dry run names the tasks the run runs: average (its slices; no reports, the --timeline)" {
	names_alike none average --size 1000 --chunks 6
	[ ! -e out ]
}

@test "dry run names the tasks the run runs: risk without --holdings (its portfolios)" {
	names_alike reports risk --assets 8 --days 40 --portfolios 5 --positions 3 --scenarios 200
}

@test "dry run names the tasks the run runs: selftest" {
	names_alike reports selftest --tasks 6 --report-bytes 10
}

@test "dry run: with --tasks, the plan's names are the selected tasks the run runs" {
	names_alike reports --tasks 3,17-19 sales --rows 2000 --stores 30 --days 20 --products 40
	[ "$(cat plan.names)" = "$(printf 'store-%04d.txt\n' 4 18 19 20)" ]
}

@test "dry run: risk with --holdings and sales with --input still say their tasks are known after the setup" {
	printf 'portfolio,asset,value\nP1,A0001,100\n' > h.csv
	run --separate-stderr cowrun --dry-run risk --assets 8 --portfolios 5 --holdings h.csv
	[ "$status" -eq 0 ]
	[[ "$output" == *"tasks      known after the setup"* ]]
	[ "$stderr" = "" ]
	printf '%s\n' "date,store,product,quantity,unit_price" "2025-01-01,7,1,1,1.00" > in.csv
	run --separate-stderr cowrun --dry-run sales --input in.csv --stores 3
	[ "$status" -eq 0 ]
	[[ "$output" == *"tasks      known after the setup"* ]]
}

@test "dry run: each workload's bad options are refused as its run refuses them, in the same line" {
	refused_alike "cowrun: sales: bad --start-date '2025-02-30' *" \
		sales --rows 100 --stores 3 --start-date 2025-02-30
	refused_alike "cowrun: sales: bad --start-date '9999-06-01' *" \
		sales --rows 100 --stores 3 --days 400 --start-date 9999-06-01
	refused_alike "cowrun: average: --chunks 9 is more than --size 4: a slice would be empty" \
		average --size 4 --chunks 9
	refused_alike "cowrun: selftest: --crash: task 7 does not exist (--tasks 3)" \
		selftest --tasks 3 --crash 7
	refused_alike "cowrun: selftest: --slow: 'x' is not a number of milliseconds *" \
		selftest --tasks 3 --slow 1:x
	refused_alike "cowrun: printer: --regions: '0' is out of range *" printer --regions 0
	refused_alike "cowrun: legacy: --entries: 'many' *" legacy --entries many
	refused_alike "cowrun: risk: --portfolios: '0' is out of range *" risk --portfolios 0
}
