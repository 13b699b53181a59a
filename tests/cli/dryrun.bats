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
