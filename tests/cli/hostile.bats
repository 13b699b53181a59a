#!/usr/bin/env bats
# Hostile input: every bad option, value, output path, results file and
# CSV a tired operator (or a broken upstream job) can hand cowrun.  Each is
# refused before any task runs with exit 255 and exactly one line on stderr
# naming the problem, nothing on stdout, and no file left behind: no report,
# no output directory, no *.tmp, no results file under its final name.
# (The few exceptions say so: an existing directory that takes no file,
# repeated options, and CRLF and BOM input, which just work.)  The cases
# runner.bats, modes.bats and sales.bats already cover are not repeated.

load helpers

HEADER='date,store,product,quantity,unit_price'

setup() {
	W="$BATS_TEST_TMPDIR/w"
	mkdir -p "$W"
	cd "$W"
}

# What is in the work directory, hidden files and sizes included.
snapshot() {
	find . -printf '%p %s\n' | sort
}

# refused STATUS PATTERN ARGS...: `cowrun ARGS` run in $W exits STATUS with
# one stderr line matching the glob PATTERN, prints nothing on stdout,
# leaves no process behind and leaves $W exactly as it was.
refused() {
	local want=$1 pattern=$2 before after
	shift 2
	before=$(snapshot)
	run --separate-stderr cowrun "$@"
	echo "cowrun $*: status $status, stderr: $stderr" | head -c 2000
	[ "$status" -eq "$want" ]
	assert_no_leftovers
	[ -z "$output" ]
	assert_one_line_error "$pattern"
	# A one-line error stays readable, whatever the input was.
	[ "${#stderr}" -lt 400 ]
	after=$(snapshot)
	if [ "$before" != "$after" ]; then
		diff <(echo "$before") <(echo "$after") >&2
		return 1
	fi
}

# frame TYPE TASK PAYLOAD: one wire frame (runner/files/wire.h) on stdout, with
# its correct checksum (tests/helpers/mkframe), so each case tests the
# check it means to and not only the checksum.
frame() {
	"$ROOT/build/tests/mkframe" "$@"
}

# frame_header TYPE TASK LENGTH: a frame header alone, claiming LENGTH bytes.
frame_header() {
	"$ROOT/build/tests/mkframe" -l "$3" "$1" "$2"
}

# id.frame: this run's genuine identity frame, cut from a real results file
# of `selftest --tasks 3`, so the cases below differ from a good file only
# where they mean to.
make_identity() {
	cowrun -o "$BATS_TEST_TMPDIR/out" --save-results "$BATS_TEST_TMPDIR/good.res" \
		selftest --tasks 3 >/dev/null
	# The identity frame and the merge context frame after it (selftest
	# has one): the head every file of this run starts with.
	local idlen ctxlen
	idlen=$(od -An -t u8 -j 16 -N 8 "$BATS_TEST_TMPDIR/good.res" | tr -d ' ')
	ctxlen=$(od -An -t u8 -j $((32 + idlen + 16)) -N 8 "$BATS_TEST_TMPDIR/good.res" | tr -d ' ')
	head -c $((32 + idlen + 32 + ctxlen)) "$BATS_TEST_TMPDIR/good.res" >"$BATS_TEST_TMPDIR/id.frame"
}

# csv NAME LINE...: NAME.csv in $W holding the header and the given lines.
csv() {
	local name=$1
	shift
	{ echo "$HEADER"; printf '%s\n' "$@"; } >"$name.csv"
}

# ---- runner options ----------------------------------------------------

@test "hostile: more bad -j forms: spaces, hex, exponent, bare signs, overflow" {
	for bad in ' 2' '2 ' 0x10 1e3 + - % 50%% -99999999999 '１' -v; do
		refused 255 "cowrun: -j: bad value '$bad': *" -j "$bad" selftest --tasks 1
	done
}

@test "hostile: a repeated runner option: the last one wins, as in GNU Parallel" {
	# Decision: like getopt_long tools and GNU Parallel, a later -j, --mode
	# or workload option overrides an earlier one (a cron line can append
	# an override to a default set of options).
	run --separate-stderr cowrun -v -j 3 -j 1 selftest --tasks 5
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"fork: 1 workers"* ]]
	run --separate-stderr cowrun -v -m fork -m serial selftest --tasks 5
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"serial: 5 tasks in this process"* ]]
	run --separate-stderr cowrun selftest --tasks 3 --tasks 4
	[ "$status" -eq 0 ]
	[[ "$output" == "tasks 4 of 4 merged"* ]]
	# ...but every value is checked as it is read: a bad one is refused
	# even when a later one would override it.
	refused 255 "cowrun: -j: bad value 'x': *" -j x -j 2 selftest --tasks 1
	refused 255 "cowrun: --mode: unknown mode 'FORK'*" -m FORK -m fork selftest --tasks 1
}

@test "hostile: unknown options, abbreviations and missing values" {
	refused 255 "cowrun: unknown option '-x'*" -x selftest
	refused 255 "cowrun: unknown option '--list=foo'*" --list=foo
	# --m could be --mode or --merge: ambiguous, refused.
	refused 255 "cowrun: unknown option '--m'*" --m 2 selftest
	refused 255 "cowrun: option '--jobs' needs a value" --jobs
	refused 255 "cowrun: option '--outdir' needs a value" --outdir
	refused 255 "cowrun: option '--merge' needs a value" --merge
	refused 255 "cowrun: --mode: unknown mode ''*" --mode '' selftest
	refused 255 "cowrun: --outdir: empty file name" -o '' selftest --tasks 1
	refused 255 "cowrun: --save-results: empty file name" --save-results '' selftest --tasks 1
	refused 255 "cowrun: --timeline: empty file name" --timeline '' selftest --tasks 1
}

@test "hostile: unknown workloads: empty, wrong case, a path, after --" {
	refused 255 "cowrun: unknown workload ''*" ''
	refused 255 "cowrun: unknown workload 'SELFTEST'*" SELFTEST
	refused 255 "cowrun: unknown workload './libnope.so'*" ./libnope.so
	refused 255 "cowrun: no workload given*" -j 2 --
}

# ---- workload options ---------------------------------------------------

@test "hostile: bad workload arguments name the workload, the option and the value" {
	refused 255 "cowrun: average: unknown option '--bogus'*" average --bogus 1
	refused 255 "cowrun: selftest: unexpected argument 'extra'*" selftest extra
	refused 255 "cowrun: selftest: --tasks needs a value*" selftest --tasks 5 --tasks
	for bad in ' 5' '5 ' 0x10 1e2 +5 1.5; do
		refused 255 "cowrun: selftest: --tasks: '$bad' is not a number" selftest --tasks "$bad"
	done
	refused 255 "cowrun: average: --size: '99999999999999999999' is out of range*" \
		average --size 99999999999999999999
	refused 255 "cowrun: average: --size: '0' is out of range*" average --size 0
	refused 255 "cowrun: average: --chunks 100 is more than --size 10*" average --size 10 --chunks 100
	refused 255 "cowrun: selftest: --result-bytes: '99999999999999' is out of range*" \
		selftest --result-bytes 99999999999999
	refused 255 "cowrun: selftest: --sleep-ms: '-1' is out of range*" selftest --sleep-ms -1
}

@test "hostile: bad selftest task lists and signals" {
	refused 255 "cowrun: selftest: --crash: unknown signal 'BOGUS'" selftest --tasks 5 --crash 1:BOGUS
	refused 255 "cowrun: selftest: --crash: unknown signal '0'" selftest --tasks 5 --crash 1:0
	refused 255 "cowrun: selftest: --crash: unknown signal '99'" selftest --tasks 5 --crash 1:99
	refused 255 "cowrun: selftest: --crash: 'x' is not a task number list" selftest --tasks 5 --crash x
	refused 255 "cowrun: selftest: --crash: '1,' is not a task number list" selftest --tasks 5 --crash 1,
	refused 255 "cowrun: selftest: --fail: '1-3' is not a task number list" selftest --tasks 5 --fail 1-3
	refused 255 "cowrun: selftest: --exit: task 9 does not exist*" selftest --tasks 5 --exit 9
}

# ---- task selection -----------------------------------------------------

@test "hostile: --tasks lists that are malformed or overflow" {
	for bad in 99999999999999999999 0-99999999999999999999 ' 1' '1 ' +1 1-2-3 0x1 1,a ,1 1--2 '٣'; do
		refused 255 "cowrun: --tasks: bad list '$bad': *" --tasks "$bad" selftest --tasks 10
	done
}

@test "hostile: --tasks naming tasks that do not exist" {
	refused 255 "cowrun: --tasks: task 10 does not exist (10 tasks: 0-9)" --tasks 10 selftest --tasks 10
	refused 255 "cowrun: --tasks: task 10 does not exist (10 tasks: 0-9)" --tasks 0,5-10 selftest --tasks 10
	refused 255 "cowrun: --tasks: task 9223372036854775807 does not exist*" \
		--tasks 9223372036854775807 selftest --tasks 10
	refused 255 "cowrun: --tasks: task 0 does not exist (there are no tasks)" --tasks 0 selftest --tasks 0
	# The report directory is not made for a run that is refused.
	refused 255 "cowrun: --tasks: task 7 does not exist*" -o rep --tasks 7 selftest --tasks 3 --report-bytes 10
}

@test "hostile: --shard values: k past M, M too large, junk around" {
	for bad in 3/2 2/2 0/1000001 1/2/3 /2 0/ ' 0/2' 0/2x +0/2 0000000000000000000000000000000000000/2; do
		refused 255 "cowrun: --shard: bad value '$bad': *" --shard "$bad" selftest --tasks 5
	done
}

# ---- output paths ---------------------------------------------------------

@test "hostile: an output directory that is a file, a device or cannot be made" {
	echo precious >afile
	refused 255 "cowrun: cannot create output directory 'afile': Not a directory" \
		-o afile selftest --tasks 2 --report-bytes 10
	[ "$(cat afile)" = precious ]
	refused 255 "cowrun: cannot create output directory '/dev/null': Not a directory" \
		-o /dev/null selftest --tasks 2 --report-bytes 10
	refused 255 "cowrun: cannot create output directory '/proc/cowrun-nosuch/out': *" \
		-o /proc/cowrun-nosuch/out selftest --tasks 2 --report-bytes 10
	refused 255 "cowrun: cannot create output directory 'afile/a/b/c': Not a directory" \
		--mode serial -o afile/a/b/c sales --rows 100 --stores 2
}

@test "hostile: an output directory that exists but takes no file is refused before any task" {
	# Root may write anywhere a mode bit allows, so the unwritable directory
	# is one in sysfs, where no file can ever be created.
	[ -d /sys/kernel ] || skip "no /sys/kernel"
	refused 255 "cowrun: cannot write in output directory '/sys/kernel': Permission denied" \
		-j 2 -o /sys/kernel selftest --tasks 2 --report-bytes 10
	[ -z "$(ls -A /sys/kernel | grep -e task- -e cowrun)" ]
}

@test "hostile: side files in a missing directory are refused before any task" {
	# (Nor is the output directory made.)
	refused 255 "cowrun: cannot create 'nodir/t.csv.*.tmp': No such file or directory" \
		-o rep --timeline nodir/t.csv selftest --tasks 2 --report-bytes 10
	touch afile
	refused 255 "cowrun: cannot create 'afile/x.res.*.tmp': Not a directory" \
		-o rep --save-results afile/x.res selftest --tasks 2 --report-bytes 10
}

@test "hostile: --save-results or --timeline naming a directory: refused before any task" {
	mkdir sr
	refused 255 "cowrun: --save-results: 'sr' is a directory" -o rep --save-results sr selftest --tasks 3
	refused 255 "cowrun: --timeline: 'sr' is a directory" -o rep --timeline sr selftest --tasks 3
	# Renamed into place, it would replace a pipe or a device (as root,
	# /dev/null itself): a FIFO stands in for the device.
	mkfifo fifo
	refused 255 "cowrun: --save-results: 'fifo' is not a regular file: it would be replaced" \
		-o rep --save-results fifo selftest --tasks 3
	refused 255 "cowrun: --timeline: 'fifo' is not a regular file: it would be replaced" \
		-o rep --timeline fifo selftest --tasks 3
	[ -p fifo ]
}

@test "hostile: two side-file options naming one file: refused before the setup, the file untouched" {
	printf 'old\tstats\n' >x
	cp x "$BATS_TEST_TMPDIR/x.orig"
	# -v: had the setup run, it would have said so on a second line.
	refused 255 "cowrun: --joblog and --stats name the same file 'x'" \
		-v -o rep --joblog x --stats x selftest --tasks 3 --report-bytes 10
	cmp x "$BATS_TEST_TMPDIR/x.orig"
	refused 255 "cowrun: --joblog 'x' and --stats './x' name the same file" \
		-o rep --joblog x --stats ./x selftest --tasks 3 --report-bytes 10
	ln -s x lx
	refused 255 "cowrun: --timeline 'lx' and --stats 'x' name the same file" \
		-o rep --timeline lx --stats x selftest --tasks 3 --report-bytes 10
	cmp x "$BATS_TEST_TMPDIR/x.orig"
	# A file not there yet, spelled two ways: still not created.
	mkdir sub
	refused 255 "cowrun: --save-results 'n.res' and --timeline 'sub/../n.res' name the same file" \
		-o rep --save-results n.res --timeline sub/../n.res selftest --tasks 3 --report-bytes 10
}

@test "hostile: --save-results naming --joblog's journal is refused; joblog and journal untouched" {
	run cowrun -o rep --joblog j selftest --tasks 3 --fail 1
	[ "$status" -eq 1 ]
	rm -rf rep
	cp j "$BATS_TEST_TMPDIR/j.orig"
	cp j.res "$BATS_TEST_TMPDIR/j.res.orig"
	refused 255 "cowrun: --save-results and --joblog's journal name the same file 'j.res'" \
		-o rep --save-results j.res --joblog j selftest --tasks 3
	refused 255 "cowrun: --save-results and --joblog's journal name the same file 'j.res'" \
		-o rep --save-results j.res --joblog +j --resume-failed selftest --tasks 3
	cmp j "$BATS_TEST_TMPDIR/j.orig"
	cmp j.res "$BATS_TEST_TMPDIR/j.res.orig"
}

@test "hostile: --joblog or --stats naming a directory, or where a report goes: refused before any task" {
	mkdir d
	refused 255 "cowrun: --joblog: 'd' is a directory" -o rep --joblog d selftest --tasks 3
	refused 255 "cowrun: --stats: 'd' is a directory" -o rep --stats d selftest --tasks 3
	mkdir e.res
	refused 255 "cowrun: --joblog's journal: 'e.res' is a directory" -o rep --joblog +e selftest --tasks 3
	refused 255 "cowrun: --stats: 'rep/task-000001' is the report file of task 'task-000001' in output directory 'rep'" \
		-o rep --stats rep/task-000001 selftest --tasks 3 --report-bytes 10
	mkdir rep
	echo old >rep/task-000002
	refused 255 "cowrun: --joblog: './rep/task-000002' is the report file of task 'task-000002' in output directory 'rep/'" \
		-o rep/ --joblog ./rep/task-000002 selftest --tasks 3 --report-bytes 10
	[ "$(cat rep/task-000002)" = old ]
}

@test "hostile: a run refused at any stage leaves no results file, timeline or report" {
	side=(-o rep --save-results x.res --timeline t.csv)
	refused 255 "cowrun: -j: bad value 'x': *" "${side[@]}" -j x selftest --tasks 3 --report-bytes 10
	csv bad 2025-01-01,1,1,1,1.00 2025-01-01,1,1,1,1.001
	refused 255 "cowrun: sales: bad.csv:3: bad unit price '1.001' *" "${side[@]}" sales --input bad.csv
	refused 255 "cowrun: --tasks: task 3 does not exist*" "${side[@]}" --tasks 1-3 selftest --tasks 3 --report-bytes 10
	touch rep2
	refused 255 "cowrun: cannot create output directory 'rep2': Not a directory" \
		-o rep2 --save-results x.res --timeline t.csv selftest --tasks 3 --report-bytes 10
}

# ---- saved results for --merge --------------------------------------------

@test "hostile: --merge of empty and short files" {
	: >empty.res
	refused 255 "cowrun: merge: 'empty.res' is empty" --merge empty.res selftest --tasks 3
	refused 255 "cowrun: merge: '/dev/null' is empty" --merge /dev/null selftest --tasks 3
	make_identity
	head -c 10 "$BATS_TEST_TMPDIR/good.res" >short.res
	refused 255 "cowrun: merge: 'short.res' is truncated or not a cowrun results file" \
		--merge short.res selftest --tasks 3
	# Cut inside the identity frame: its header claims more than the file holds.
	head -c 40 "$BATS_TEST_TMPDIR/good.res" >inid.res
	refused 255 "cowrun: merge: 'inid.res' is corrupt or not a cowrun results file" \
		--merge inid.res selftest --tasks 3
	{ cat "$BATS_TEST_TMPDIR/good.res"; printf x; } >trail.res
	refused 255 "cowrun: merge: 'trail.res' is truncated (no end marker)" \
		--merge trail.res selftest --tasks 3
}

@test "hostile: --merge of a results file with a broken frame sequence" {
	make_identity
	id="$BATS_TEST_TMPDIR/id.frame"
	{ cat "$BATS_TEST_TMPDIR/good.res"; frame 1 0 12345678; } >after.res
	refused 255 "cowrun: merge: 'after.res' has data after its end marker" \
		--merge after.res selftest --tasks 3
	# (Task 1's record waits for task 0's, so it is never merged.)
	{ cat "$id"; frame 1 1 12345678; frame 5 7 ''; } >count.res
	refused 255 "cowrun: merge: 'count.res' ends after 1 tasks but says 7" \
		--merge count.res selftest --tasks 3
	{ cat "$id"; frame 7 0 'selftst1'; frame 5 0 ''; } >twoctx.res
	refused 255 "cowrun: merge: 'twoctx.res' holds a malformed merge context frame" \
		--merge twoctx.res selftest --tasks 3
	{ cat "$id" "$id"; frame 5 0 ''; } >twoid.res
	refused 255 "cowrun: merge: 'twoid.res' has a second identity frame" \
		--merge twoid.res selftest --tasks 3
	{ frame 1 0 12345678; frame 5 1 ''; } >noid.res
	refused 255 "cowrun: merge: 'noid.res' is not a cowrun results file" \
		--merge noid.res selftest --tasks 3
	{ cat "$id"; frame 1 5 12345678; frame 5 1 ''; } >range.res
	refused 255 "cowrun: merge: 'range.res' holds task 5, but this run has 3 tasks" \
		--merge range.res selftest --tasks 3
	{ cat "$id"; frame 1 18446744073709551615 12345678; frame 5 1 ''; } >range2.res
	refused 255 "cowrun: merge: 'range2.res' holds task 18446744073709551615, but this run has 3 tasks" \
		--merge range2.res selftest --tasks 3
	{ cat "$id"; frame 3 0 0123456789abcdef01234567; frame 5 1 ''; } >timing.res
	refused 255 "cowrun: merge: 'timing.res' holds an unexpected frame" \
		--merge timing.res selftest --tasks 3
	{ cat "$id"; frame 6 0 0123456789abcdef01234567; frame 5 1 ''; } >stats.res
	refused 255 "cowrun: merge: 'stats.res' holds an unexpected frame" \
		--merge stats.res selftest --tasks 3
	for type in 0 1000 4294967295; do
		{ cat "$id"; frame "$type" 0 12345678; frame 5 1 ''; } >type.res
		refused 255 "cowrun: merge: 'type.res' is corrupt or not a cowrun results file" \
			--merge type.res selftest --tasks 3
	done
}

@test "hostile: --merge of a frame claiming a huge length is one line, no crash" {
	make_identity
	# 512 GiB, then 1 TiB (the largest the format allows), then past it.
	for len in 549755813888 1099511627776 1099511627777; do
		{ cat "$BATS_TEST_TMPDIR/id.frame"; frame_header 1 0 "$len"; printf 'abc'; } >huge.res
		refused 255 "cowrun: merge: *'huge.res'*" --merge huge.res selftest --tasks 3
	done
}

@test "hostile: --merge of results saved by another workload names both" {
	cowrun --save-results "$BATS_TEST_TMPDIR/avg.res" average --size 100 --chunks 3 >/dev/null
	cp "$BATS_TEST_TMPDIR/avg.res" .
	refused 255 "cowrun: merge: 'avg.res' was saved by 'average --size 100 --chunks 3 (3 tasks)', not by this run's 'selftest --tasks 3 (3 tasks)'" \
		--merge avg.res selftest --tasks 3
	# A results file of a later format version is not read as this one.
	{ frame 4 3 "$(printf 'cowrun results 6\nworkload selftest\ntasks 3')"; frame 5 0 ''; } >v6.res
	refused 255 "cowrun: merge: 'v6.res' is not a cowrun results file" --merge v6.res selftest --tasks 3
	# One of the older format 2 is named as such.
	{ frame 4 0 "$(printf 'cowrun results 2\nworkload selftest\ntasks 3')"; frame 5 0 ''; } >v2.res
	refused 255 "cowrun: merge: 'v2.res' is in results format 2, of an older cowrun; this one reads format 5 (the run's seed and its task names): save the results again" \
		--merge v2.res selftest --tasks 3
	# Some other binary file.
	head -c 4096 "$COWRUN" >elf.res
	refused 255 "cowrun: merge: 'elf.res' is corrupt or not a cowrun results file" \
		--merge elf.res selftest --tasks 3
}

@test "hostile: --merge of directories without results, and of no file at all" {
	mkdir d
	touch d/notes.txt d/.hidden.res
	refused 255 "cowrun: merge: directory 'd' holds no .res files" --merge d selftest --tasks 3
	refused 255 "cowrun: merge: cannot open '': No such file or directory" --merge '' selftest --tasks 3
}

# ---- sales --input ----------------------------------------------------------

@test "hostile: sales CSV with a missing column in the header or the data" {
	printf 'date,store,product,quantity\n2025-01-01,1,1,1\n' >hdr4.csv
	refused 255 "cowrun: sales: hdr4.csv:1: bad header 'date,store,product,quantity' (expected '$HEADER')" \
		sales --input hdr4.csv
	csv empty-fields ,,,,
	refused 255 "cowrun: sales: empty-fields.csv:2: bad date '' *" sales --input empty-fields.csv
	csv noprice 2025-01-01,1,1,1,
	refused 255 "cowrun: sales: noprice.csv:2: bad unit price '' *" sales --input noprice.csv
}

@test "hostile: sales CSV with bad numbers" {
	csv q 2025-01-01,1,1,1.5,1.00
	refused 255 "cowrun: sales: q.csv:2: bad quantity '1.5' *" -o rep sales --input q.csv
	csv q 2025-01-01,1,1,1e3,1.00
	refused 255 "cowrun: sales: q.csv:2: bad quantity '1e3' *" -o rep sales --input q.csv
	csv q 2025-01-01,1,1,99999999999999999999,1.00
	refused 255 "cowrun: sales: q.csv:2: bad quantity '99999999999999999999' *" -o rep sales --input q.csv
	csv q 2025-01-01,1,1,1000001,1.00
	refused 255 "cowrun: sales: q.csv:2: bad quantity '1000001' *" -o rep sales --input q.csv
	for bad in 3. .5 1000000.01 ' 1.00' 1e2 '$1.00' 1,00; do
		csv p "2025-01-01,1,1,1,$bad"
		[ "$bad" = 1,00 ] && pattern="cowrun: sales: p.csv:2: expected 5 fields*found 6" ||
			pattern="cowrun: sales: p.csv:2: bad unit price '$bad' *"
		refused 255 "$pattern" -o rep sales --input p.csv
	done
	for bad in 99999999999 -1 abc ' 7'; do
		csv s "2025-01-01,$bad,1,1,1.00"
		refused 255 "cowrun: sales: s.csv:2: bad store '$bad' (expected a positive integer id)" \
			-o rep sales --input s.csv
	done
}

@test "hostile: sales CSV with bad product names" {
	csv p '2025-01-01,1,"apples",1,1.00'
	refused 255 "cowrun: sales: p.csv:2: bad product '\"apples\"' (quotes and control characters*" sales --input p.csv
	csv p "2025-01-01,1,$(printf 'a%.0s' {1..65}),1,1.00"
	refused 255 "cowrun: sales: p.csv:2: bad product 'aaaa*' (expected an id or a name of 1 to 64 characters)" \
		sales --input p.csv
	csv p "$(printf '2025-01-01,1,ap\tples,1,1.00')"
	refused 255 "cowrun: sales: p.csv:2: bad product 'ap?ples' (quotes and control characters*" sales --input p.csv
	csv p 2025-01-01,1,0,1,1.00
	refused 255 "cowrun: sales: p.csv:2: bad product '0' *" sales --input p.csv
}

@test "hostile: sales CSV with bad dates" {
	for bad in 2023-02-29 0999-12-31 2025-01-01T00:00 2025/01/01 2025-00-10 2025-1-01 ' 2025-01-01'; do
		csv d 2025-01-01,1,1,1,1.00 "$bad,1,1,1,1.00"
		refused 255 "cowrun: sales: d.csv:3: bad date '$bad' (expected a real date YYYY-MM-DD)" \
			-o rep sales --input d.csv
	done
	csv span 1900-01-01,1,1,1,1.00 2025-01-01,1,1,1,1.00
	refused 255 "cowrun: sales: span.csv: dates span more than 100 years" sales --input span.csv
}

@test "hostile: sales CSV whose revenue would overflow the report arithmetic" {
	{ echo "$HEADER"; for i in $(seq 1 100); do echo 2025-01-01,1,1,1000000,1000000.00; done; } >rev.csv
	refused 255 "cowrun: sales: rev.csv:94: total revenue too large" sales --input rev.csv
}

@test "hostile: sales input that is not a CSV file: directory, device, nothing, UTF-16" {
	mkdir dir.csv
	refused 255 "cowrun: sales: cannot read 'dir.csv': Is a directory" sales --input dir.csv
	refused 255 "cowrun: sales: /dev/null: empty file (expected the header '$HEADER')" sales --input /dev/null
	refused 255 "cowrun: sales: cannot read '': No such file or directory" sales --input ''
	# A spreadsheet's "Unicode text" export.
	{ printf '\xff\xfe'; printf '%s\n2025-01-01,1,1,1,1.00\n' "$HEADER" | iconv -f UTF-8 -t UTF-16LE; } >u16.csv
	refused 255 "cowrun: sales: u16.csv:1: NUL byte in line" sales --input u16.csv
}

@test "hostile: sales CSV of binary garbage" {
	# An executable: a NUL byte on line 1.
	head -c 65536 "$COWRUN" >elf.csv
	refused 255 "cowrun: sales: elf.csv:1: NUL byte in line" -o rep sales --input elf.csv
	# Bytes that are not text, but no NUL: a bad header, quoted short.
	perl -e 'srand(7); print map { chr(1 + int rand 255) } 1..4096' >noise.csv
	refused 255 "cowrun: sales: noise.csv:1: bad header *" -o rep sales --input noise.csv
	# Garbage after a good header and row.
	{ echo "$HEADER"; echo 2025-01-01,1,1,1,1.00; perl -e 'srand(9); print map { chr(int rand 256) } 1..4096'; } >tail.csv
	refused 255 "cowrun: sales: tail.csv:3: *" -o rep sales --input tail.csv
	# A NUL inside a data row.
	{ echo "$HEADER"; printf '2025-01-01,1,1,1,1.00\n2025-01-01,1,a\0b,1,1.00\n'; } >nul.csv
	refused 255 "cowrun: sales: nul.csv:3: NUL byte in line" -o rep sales --input nul.csv
}

@test "hostile: sales CSV with a 10 MB line: quoted short, refused fast" {
	big() { head -c 10485760 /dev/zero | tr '\0' "$1"; }
	{ big x; echo; } >h.csv
	refused 255 "cowrun: sales: h.csv:1: bad header 'xxxx*' (expected '$HEADER')" -o rep sales --input h.csv
	{ echo "$HEADER"; echo 2025-01-01,1,1,1,1.00; printf '2025-01-02,1,'; big x; echo ',1,1.00'; } >p.csv
	refused 255 "cowrun: sales: p.csv:3: bad product 'xxxx*' (expected an id or a name of 1 to 64 characters)" \
		-o rep sales --input p.csv
	{ echo "$HEADER"; big ,; echo; } >c.csv
	refused 255 "cowrun: sales: c.csv:2: expected 5 fields ($HEADER), found 10485761" -o rep sales --input c.csv
	{ echo "$HEADER"; printf '2025-01-02,1,1,1,'; big 9; echo; } >n.csv
	refused 255 "cowrun: sales: n.csv:2: bad unit price '9999*' *" -o rep sales --input n.csv
}

@test "hostile: sales CSV with old-Mac CR-only line endings is one bad header" {
	printf '%s\r%s\r' "$HEADER" 2025-01-01,1,1,1,1.00 >cr.csv
	refused 255 "cowrun: sales: cr.csv:1: bad header '$HEADER?2025-01-01*' (expected '$HEADER')" sales --input cr.csv
}

@test "hostile: a bad row in a CRLF file is named without the CR" {
	printf '%s\r\n%s\r\n%s\r\n' "$HEADER" 2025-01-01,1,1,1,1.00 2025-01-01,1,1,0,1.00 >crlf.csv
	refused 255 "cowrun: sales: crlf.csv:3: bad quantity '0' (expected an integer from 1 to 1000000)" \
		sales --input crlf.csv
}

@test "hostile: CRLF and a UTF-8 BOM together just work: output equals the LF file's" {
	lines=("$HEADER" 2025-03-01,7,101,2,3.49 2025-03-01,7,apples,1,0.99 2025-03-02,3,101,5,3.49
	       2025-04-15,7,202,1,10 2025-04-30,12,202,4,9.5)
	printf '%s\n' "${lines[@]}" >lf.csv
	{ printf '\xef\xbb\xbf'; printf '%s\r\n' "${lines[@]}"; } >win.csv
	# and a BOM, CRLF and no newline after the last line
	head -c -2 win.csv >win-nonl.csv
	run --separate-stderr cowrun -j 2 -o lf sales --input lf.csv
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	reference=$(grep -v '^  Source ' <<<"$output")
	for f in win win-nonl; do
		run --separate-stderr cowrun -j 2 -o "$f" sales --input "$f.csv"
		[ "$status" -eq 0 ]
		[ -z "$stderr" ]
		[ "$(grep -v '^  Source ' <<<"$output")" = "$reference" ]
		diff -r -x '.cowrun-manifest.*' -I '^Source:' lf "$f"
	done
	[ "$(ls lf | wc -l)" -eq 3 ]
}

@test "hostile: options that name what to run or where files go may not be repeated" {
	refused 255 "cowrun: --tasks given twice" --tasks 1 --tasks 2 selftest --tasks 3
	refused 255 "cowrun: --shard given twice" --shard 0/2 --shard 1/2 selftest --tasks 3
	refused 255 "cowrun: --save-results given twice" --save-results a.res --save-results b.res selftest --tasks 3
	refused 255 "cowrun: --joblog given twice" --joblog a --joblog b selftest --tasks 3
}

@test "hostile: a frame claiming more bytes than its file holds is corrupt, not a huge allocation" {
	cowrun -o out --save-results a.res selftest --tasks 4 >/dev/null
	rm -rf out
	# The identity frame's length field, claiming about 1 TiB.
	perl -e 'open F, "+<", "a.res"; seek F, 16, 0; print F pack("Q<", 0xed0000003d)'
	refused 255 "cowrun: merge: 'a.res' is corrupt or not a cowrun results file" --merge a.res selftest --tasks 4
}

@test "hostile: control characters from input never reach the terminal" {
	printf '\033[2J,store\n' > esc.csv
	run --separate-stderr cowrun sales --input esc.csv
	[ "$status" -eq 255 ]
	[[ "$stderr" != *$'\033'* ]]
	[ "$(printf '%s' "$stderr" | wc -l)" -le 1 ]
}
