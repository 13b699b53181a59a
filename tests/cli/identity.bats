#!/usr/bin/env bats
# Same input or a clear refusal (issue 24): --resume and --merge know the
# input files of every workload, whatever their spelling; options that
# change no result may change; a run's outputs are its own (manifests,
# stale reports, --clean); the -v lines say what happened.  With the
# template's tally.c built out of tree, a plugin built for ABI 2 that
# declares nothing, and sales.

load helpers

setup() {
	T=$BATS_TEST_TMPDIR
	cd "$T"
}

# tally: workloads/template/tally.c built as an out-of-tree plugin.
tally_so() {
	[ -f "$T/libtally.so" ] ||
		cc -std=gnu11 -Wall -Wextra -Werror -fPIC -shared -I"$ROOT/include" \
			-o "$T/libtally.so" "$ROOT/workloads/template/tally.c"
}

# day FILE SEED: a day of transactions, customer,amount lines.
day() {
	awk -v seed="$2" 'BEGIN { x = seed; for (i = 0; i < 2000; i++) {
		x = (x * 16807) % 2147483647; c = x % 999983 + 1
		x = (x * 16807) % 2147483647; printf "%d,%d\n", c, x % 100000 - 30000 } }' >"$1"
}

# rewrite_same_size FILE: the same number of bytes, one of them changed,
# written in place (the same inode).
rewrite_same_size() {
	python3 - "$1" <<'PY'
import sys
p = sys.argv[1]
b = bytearray(open(p, 'rb').read())
i = b.index(b',') + 1          # the first amount's first digit or sign
b[i] = ord('7') if b[i] != ord('7') else ord('8')
with open(p, 'r+b') as f:
    f.write(bytes(b))
PY
}

@test "identity: tally (the template) declares its input: a resume after it is rewritten in place is refused, naming it" {
	tally_so
	day in.csv 1
	run --separate-stderr cowrun -j 2 -o out --joblog log --workload ./libtally.so --input in.csv --ranges 4
	[ "$status" -eq 0 ]
	direct=$output
	# Unchanged: the resume runs nothing and merges the journal.
	run --separate-stderr cowrun -v -j 2 -o out --joblog log --resume --workload ./libtally.so --input in.csv --ranges 4
	[ "$status" -eq 0 ]
	[ "$output" = "$direct" ]
	[[ "$stderr" == *"cowrun: fork: no task to run: the journal settles every selected task"* ]]
	[[ "$stderr" != *"serial: 0 tasks"* ]]
	[[ "$stderr" == *"tally: setup "*", 4 tasks, 1 setup thread (it never called cowrun_parallel; "*" available)"* ]]
	[[ "$stderr" == *"tally: 1 input, "*" bytes: 0 hashed by the setup's own read, 1 ("*" bytes) hashed here in "* ]]
	# Rewritten in place, the same size: refused (it was modified).
	cp -p in.csv before.csv
	rewrite_same_size in.csv
	[ "$(stat -c %s in.csv)" -eq "$(stat -c %s before.csv)" ]
	run --separate-stderr cowrun -j 2 -o out --joblog log --resume --workload ./libtally.so --input in.csv --ranges 4
	[ "$status" -eq 255 ]
	assert_no_leftovers
	assert_one_line_error "cowrun: --resume: input '$T/in.csv' (--input) changed since the run being resumed: it was modified (modification time * then, * now): run again without --resume"
	# ... and with its modification time put back: its content says so.
	touch -r before.csv in.csv
	run --separate-stderr cowrun -j 2 -o out --joblog log --resume --workload ./libtally.so --input in.csv --ranges 4
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --resume: input '$T/in.csv' (--input) changed since the run being resumed: its content changed (same size, hash [0-9a-f]* then, [0-9a-f]* now): run again without --resume"
	# Another size: refused before the setup, which would fail on it.
	echo "not,a,transaction" >>in.csv
	run --separate-stderr cowrun -j 2 -o out --joblog log --resume --workload ./libtally.so --input in.csv --ranges 4
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --resume: input '$T/in.csv' (--input) changed since the run being resumed: its size changed from $(stat -c %s before.csv) to $(stat -c %s in.csv) bytes: run again without --resume"
	# Replaced by another file (regenerated, renamed over it), the same bytes.
	cp before.csv new.csv
	mv new.csv in.csv
	run --separate-stderr cowrun -j 2 -o out --joblog log --resume --workload ./libtally.so --input in.csv --ranges 4
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --resume: input '$T/in.csv' (--input) changed since the run being resumed: it was replaced by another file *: run again without --resume"
}

@test "identity: the same input by another spelling resumes and merges; an option that changes no result may change" {
	tally_so
	day in.csv 2
	mkdir sub
	ln -s ../in.csv sub/link.csv
	run --separate-stderr cowrun -j 2 -o out --joblog log --workload ./libtally.so --input in.csv --ranges 5 --read-kb 8
	[ "$status" -eq 0 ]
	direct=$output
	for spelling in "$T/in.csv" ./sub/../in.csv sub/link.csv "$T/sub/link.csv"; do
		run --separate-stderr cowrun -j 2 -o out --joblog log --resume --workload ./libtally.so --input "$spelling" --ranges 5 --read-kb 64
		[ "$status" -eq 0 ] || { echo "$spelling: $stderr" >&2; return 1; }
		[ "$output" = "$direct" ]
	done
	# Shards saved under two spellings and two read sizes merge.
	mkdir r
	cowrun --shard 0/2 --save-results r/0.res -o s --workload ./libtally.so --input in.csv --ranges 5 >/dev/null
	cowrun --shard 1/2 --save-results r/1.res -o s --workload ./libtally.so --input "$T/sub/link.csv" --ranges 5 --read-kb 4 >/dev/null
	run --separate-stderr cowrun --merge r --workload ./libtally.so --input sub/link.csv --ranges 5 --read-kb 1024
	[ "$status" -eq 0 ]
	[ "$output" = "$direct" ]
	# An option that changes results still must match.
	run --separate-stderr cowrun --merge r --workload ./libtally.so --input in.csv --ranges 6
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: merge: 'r/0.res' was saved by 'tally --input $T/in.csv --ranges 5 (5 tasks)', not by this run's 'tally --input (an input) --ranges 6 (6 tasks)'"
}

@test "identity: merge of shards saved before and after the input was rewritten is refused; a merge needs no input file" {
	tally_so
	day in.csv 3
	run --separate-stderr cowrun -o d --workload ./libtally.so --input in.csv --ranges 4
	direct=$output
	mkdir r
	cowrun --shard 0/2 --save-results r/0.res -o s --workload ./libtally.so --input in.csv --ranges 4 >/dev/null
	cp -p in.csv before.csv
	rewrite_same_size in.csv
	touch -r before.csv in.csv
	cowrun --shard 1/2 --save-results r/1.res -o s --workload ./libtally.so --input in.csv --ranges 4 >/dev/null
	run --separate-stderr cowrun --merge r --workload ./libtally.so --input in.csv --ranges 4
	[ "$status" -eq 255 ]
	[ -z "$output" ]
	assert_one_line_error "cowrun: merge: 'r/1.res' was saved from another input than 'r/0.res': --input '$T/in.csv' was $(stat -c %s in.csv) bytes with hash * there and $(stat -c %s in.csv) bytes with hash * in 'r/0.res'"
	# Saved again from the first input, on "another host": the file is
	# gone here, and a merge without setup does not need it.
	cp -p before.csv in.csv
	cowrun --shard 1/2 --save-results r/1.res -o s --workload ./libtally.so --input in.csv --ranges 4 >/dev/null
	rm in.csv
	run --separate-stderr cowrun -v --merge r --workload ./libtally.so --input in.csv --ranges 4
	[ "$status" -eq 0 ]
	[ "$output" = "$direct" ]
	[[ "$stderr" == *"setup arena: 0 KiB used"* ]]   # no setup ran: a time would be load-dependent
}

@test "identity: a plugin built for ABI 2 declares nothing: its string option naming a file is guessed an input; --not-input says otherwise" {
	cc -std=gnu11 -fPIC -shared -I"$ROOT/include" -o "$T/guess.so" "$ROOT/tests/fixtures/plugins/guess_abi2.c"
	head -c 256 /dev/zero | tr '\0' a >data    # never the x or y written below
	run --separate-stderr cowrun -j 2 --joblog log --workload ./guess.so --data data
	[ "$status" -eq 0 ]
	direct=$output
	run --separate-stderr cowrun -j 2 --joblog log --resume --workload ./guess.so --data "$T/data"
	[ "$status" -eq 0 ]
	[ "$output" = "$direct" ]
	cp -p data before
	printf 'x' | dd of=data bs=1 seek=7 conv=notrunc status=none
	touch -r before data
	run --separate-stderr cowrun -j 2 --joblog log --resume --workload ./guess.so --data data
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --resume: input '$T/data' (--data) changed since the run being resumed: its content changed (same size, *): run again without --resume"
	# A merge runs its setup (no merge context): the shards are compared
	# with the input as it is now.
	cp -p before data
	cowrun --shard 0/2 --save-results 0.res --workload ./guess.so --data data >/dev/null
	printf 'y' | dd of=data bs=1 seek=9 conv=notrunc status=none
	cowrun --shard 1/2 --save-results 1.res --workload ./guess.so --data data >/dev/null
	run --separate-stderr cowrun --merge 0.res --merge 1.res --workload ./guess.so --data data
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: merge: '0.res' was saved from another input than this run: --data '$T/data' was 256 bytes with hash * there and 256 bytes with hash * in this run"
	# --out names the file finish() writes: after the first run it exists,
	# and is guessed an input; the refusal says what to do.
	run --separate-stderr cowrun --joblog log2 --workload ./guess.so --data data --out sum.txt
	[ "$status" -eq 0 ]
	[ -s sum.txt ]
	run --separate-stderr cowrun --joblog log2 --resume --workload ./guess.so --data data --out sum.txt
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --resume: 'log2.res' was saved by 'guess --data $T/data --out sum.txt (4 tasks)', not by this run's 'guess --data $T/data --out $T/sum.txt (4 tasks)' (--out names an existing file in one run only, so it was taken for an input there: if it names none, give --not-input out)"
	rm sum.txt
	run --separate-stderr cowrun --not-input out --joblog log3 --workload ./guess.so --data data --out sum.txt
	[ "$status" -eq 0 ]
	run --separate-stderr cowrun --not-input --out --joblog log3 --resume --workload ./guess.so --data data --out sum.txt
	[ "$status" -eq 0 ]
	[ "$output" = "sum $(od -An -tu1 -v data | tr -s ' ' '\n' | grep . | paste -sd+ | bc)" ]
	# A name that is no option of the workload is refused, before anything.
	run --separate-stderr cowrun --not-input nosuch --workload ./guess.so --data data
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --not-input: 'nosuch' is no option of guess that names a file (see guess --help)"
}

@test "identity: sales hands over the hash of its own read, the one cowrun computes itself" {
	"$ROOT/tests/helpers/make-sales-csv" 200000 20 >s.csv
	[ "$(stat -c %s s.csv)" -gt 5000000 ]   # two blocks of 4 MiB
	cc -std=gnu11 -fPIC -shared -I"$ROOT/include" -o "$T/guess.so" "$ROOT/tests/fixtures/plugins/guess_abi2.c"
	run --separate-stderr cowrun -v -j 2 --save-results sales.res -o o sales --input s.csv
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"sales: 1 input, "*" bytes: 1 hashed by the setup's own read, 0 (0 bytes) hashed here"* ]]
	run --separate-stderr cowrun -v -j 2 --save-results guess.res --workload ./guess.so --data s.csv
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"guess: 1 input, "*" bytes: 0 hashed by the setup's own read, 1 ("*" bytes) hashed here"* ]]
	ours=$(grep -a -o 'input 1 --input file [0-9]* [0-9a-f]*' sales.res | cut -d' ' -f5-)
	theirs=$(grep -a -o 'input 1 --data file [0-9]* [0-9a-f]*' guess.res | cut -d' ' -f5-)
	[ -n "$ours" ]
	[ "$ours" = "$theirs" ]
}

@test "identity: results of an older format are refused naming the upgrade" {
	{ "$ROOT/build/tests/mkframe" 4 0 "$(printf 'cowrun results 3\nworkload selftest\ntasks 2')"
	  "$ROOT/build/tests/mkframe" 5 0 ''; } >old.res
	run --separate-stderr cowrun --merge old.res selftest --tasks 2
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: merge: 'old.res' is in results format 3, of an older cowrun; this one reads format 5 (the run's seed and its task names): save the results again"
	# A journal of before the upgrade is not resumed either.
	cowrun --joblog log selftest --tasks 2 >/dev/null
	cp old.res log.res
	run --separate-stderr cowrun --joblog log --resume selftest --tasks 2
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --resume: 'log.res' is in results format 3, of an older cowrun; this one reads format 5 (the run's seed and its task names): run again without --resume"
	# Format 4 (cowrun 0.5.1): no seed, no task names.
	{ "$ROOT/build/tests/mkframe" 4 0 "$(printf 'cowrun results 4\ncowrun 0.5.1\nworkload selftest\nabi 4\ntasks 2\narg --tasks\narg 2')"
	  "$ROOT/build/tests/mkframe" 5 0 ''; } >four.res
	run --separate-stderr cowrun --merge four.res selftest --tasks 2
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: merge: 'four.res' is in results format 4, of an older cowrun; this one reads format 5 (the run's seed and its task names): save the results again"
	cp four.res log.res
	run --separate-stderr cowrun --joblog log --resume selftest --tasks 2
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --resume: 'log.res' is in results format 4, of an older cowrun; this one reads format 5 (the run's seed and its task names): run again without --resume"
}

# ---- a run's outputs are its own --------------------------------------

@test "manifests: a rerun with fewer tasks names the stale reports; --clean removes them and nothing else" {
	run --separate-stderr cowrun -o out selftest --tasks 8 --report-bytes 10
	[ "$status" -eq 0 ]
	grep -q '^report 10 [0-9a-f]* task-000007$' out/.cowrun-manifest.selftest
	grep -q '^identity arg --tasks$' out/.cowrun-manifest.selftest
	echo mine >out/notes.txt                 # no manifest names it
	echo "by hand" >out/task-000009         # nor this one
	echo "changed" >out/task-000006         # named, but changed since
	run --separate-stderr cowrun -o out selftest --tasks 4 --report-bytes 10
	[ "$status" -eq 0 ]
	assert_one_line_error "cowrun: selftest: 3 stale reports in 'out' (an earlier run's: no task of this batch writes them): task-000004, task-000005, task-000007; --clean removes them"
	[ -e out/task-000004 ] && [ -e out/task-000007 ]
	# They stay known to later runs until cleaned.
	run --separate-stderr cowrun -o out selftest --tasks 5 --report-bytes 10
	assert_one_line_error "cowrun: selftest: 2 stale reports in 'out' *: task-000005, task-000007; --clean removes them"
	run --separate-stderr cowrun -o out --clean selftest --tasks 4 --report-bytes 10
	[ "$status" -eq 0 ]
	assert_one_line_error "cowrun: selftest: removed 3 stale reports from 'out' (an earlier run's: no task of this batch writes them): task-000004, task-000005, task-000007"
	[ ! -e out/task-000004 ] && [ ! -e out/task-000005 ] && [ ! -e out/task-000007 ]
	[ "$(cat out/notes.txt)" = mine ]
	[ "$(cat out/task-000009)" = "by hand" ]
	[ "$(cat out/task-000006)" = changed ]
	[ -e out/task-000003 ]
	run --separate-stderr cowrun -o out --clean selftest --tasks 4 --report-bytes 10
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	# Another workload's manifest is not this one's business.
	run --separate-stderr cowrun -o out --clean selftest --tasks 1 --report-bytes 10
	run --separate-stderr cowrun -o out --clean legacy --branches 1
	[ "$status" -eq 0 ]
	[ -e out/task-000000 ]
}

@test "manifests: shards of one batch never see each other's reports as stale, with --clean too" {
	for k in 0 1 2; do
		run --separate-stderr cowrun --shard $k/3 -o out --save-results $k.res selftest --tasks 9 --report-bytes 10
		[ "$status" -eq 0 ]
		[ -z "$stderr" ]
	done
	[ -f out/.cowrun-manifest.selftest.shard-0-of-3 ] && [ -f out/.cowrun-manifest.selftest.shard-2-of-3 ]
	run --separate-stderr cowrun --shard 1/3 --clean -o out --save-results 1.res selftest --tasks 9 --report-bytes 10
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ "$(ls out | wc -l)" -eq 9 ]
	# The batch shrinks: each shard's run names what no task writes now.
	run --separate-stderr cowrun --shard 0/3 --clean -o out --save-results 0.res selftest --tasks 6 --report-bytes 10
	assert_one_line_error "cowrun: selftest: removed 3 stale reports from 'out' *: task-000006, task-000007, task-000008"
	[ "$(ls out | wc -l)" -eq 6 ]
	# --tasks runs have manifests of their own.
	run --separate-stderr cowrun --tasks 0-1 -o out selftest --tasks 6 --report-bytes 10
	[ -z "$stderr" ]
	[ -n "$(ls -A out | grep '^\.cowrun-manifest\.selftest\.tasks-[0-9a-f]*$')" ]
}

@test "manifests: --resume keeps what the interrupted run wrote; its manifest then names every report" {
	args="selftest --tasks 12 --sleep-ms 300 --report-bytes 10"
	"$REAPER" "$COWRUN" -j 2 -o out --joblog log $args --mark-start started >first 2>err &
	bg=$!
	wait_for 30 "three tasks to start" started_at_least started 3
	kill -INT "$(pgrep -P "$bg" -x cowrun)"
	status=0
	wait "$bg" || status=$?
	[ "$status" -eq 130 ] || { echo "status $status: $(cat err)" >&2; return 1; }
	kept=$(ls out)
	[ -n "$kept" ]
	[ "$(grep -c '^report ' out/.cowrun-manifest.selftest)" -eq "$(ls out | wc -l)" ]
	first=$(ls out | head -1)
	inode=$(stat -c %i "out/$first")
	run --separate-stderr cowrun -j 2 -o out --joblog log --resume --clean $args --mark-start started
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[ "$(ls out | wc -l)" -eq 12 ]
	[ "$(stat -c %i "out/$first")" = "$inode" ]    # kept, not written again
	[ "$(grep -c '^report ' out/.cowrun-manifest.selftest)" -eq 12 ]
}

@test "the README's workload example builds as an out-of-tree plugin, as printed" {
	awk '/^## Writing a workload/ { on = 1 } on && /^```c$/ { code = 1; next } code && /^```$/ { exit } code' \
		"$ROOT/README.md" >example.c
	[ -s example.c ]
	cc -std=gnu11 -Wall -Wextra -Werror -fPIC -shared -I"$ROOT/include" -o example.so example.c
	printf '3\n4\n12\n' >n.txt
	run --separate-stderr cowrun -j 2 -o out --workload ./example.so --input n.txt
	[ "$status" -eq 0 ]
	[ "$output" = "sum of squares 169" ]
	[ "$(cat out/number-2.txt)" = "12 squared is 144" ]
}
