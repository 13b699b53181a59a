#!/usr/bin/env bats
# The report-file promises: a report appears under its final name complete
# or not at all (written to a hidden temporary name, fsync'd, renamed), and
# a task that fails leaves no report, not even yesterday's.

load helpers

# trace_run ARGS...: cowrun ARGS under the reaper, its file operations
# (openat, fsync, rename or renameat) and its threads' births traced in
# every process and thread, one file each ($BATS_TEST_TMPDIR/trace/t.TID),
# each call with its start time and duration.  (Under make check-asan,
# without LeakSanitizer, which cannot work under ptrace.)
trace_run() {
	rm -rf "$BATS_TEST_TMPDIR/trace"
	mkdir "$BATS_TEST_TMPDIR/trace"
	run --separate-stderr env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		"$REAPER" strace -ff -qq -ttt -T -e trace=openat,fsync,rename,renameat,renameat2,clone,clone3 \
		-o "$BATS_TEST_TMPDIR/trace/t" "$COWRUN" "$@"
}

# merged_trace: every traced call of every thread, in the order they
# happened (an fsync or an open where it ended), each line "PROCESS CALL": the
# process is the thread group's first thread (a thread's birth in its
# parent's trace: clone with CLONE_THREAD).
merged_trace() {
	local dir=$BATS_TEST_TMPDIR/trace
	awk '
	FNR == 1 { tid = FILENAME; sub(/.*\./, "", tid) }
	/clone3?\(.*CLONE_THREAD/ && match($0, /= [0-9]+ </) { print "T", substr($0, RSTART + 2, RLENGTH - 4) + 0, tid; next }
	$1 ~ /^[0-9]+\.[0-9]+$/ {
		at = $1; line = $0; sub(/^[^ ]+ /, "", line)
		# An fsync counts where it ended, an open where its descriptor
		# came (another thread may have closed that number meanwhile).
		if (line ~ /^(fsync|openat)\(/ && match(line, /<[0-9.]+>$/)) at += substr(line, RSTART + 1, RLENGTH - 2)
		sub(/ <[0-9.]+>$/, "", line)
		printf "C %.6f %s %s\n", at, tid, line
	}' "$dir"/t.* | sort -k1,1r -k2,2n |
	awk '$1 == "T" { group[$2] = $3; next }
	{ t = $3; while (t in group) t = group[t]; $1 = ""; $2 = ""; $3 = t; sub(/^  /, ""); print }'
}

# check_report_trace OUTDIR N: in the trace, OUTDIR was opened once as a
# directory, its last component not followed (O_DIRECTORY|O_NOFOLLOW);
# each of the N reports was created relative to it under a hidden
# temporary name as a new file (O_CREAT|O_EXCL|O_NOFOLLOW: never an
# existing file or a link), then fsync'd (the fsync ended) and renamed to
# its final name, in that order, by one process: the one that wrote it,
# or (fork mode) the pool's parent, which opened it read-only, never
# following a link, and fsync'd it on a thread of its own; no final name
# was ever opened for writing.  The run's manifest (.cowrun-manifest.*) is
# created the same way.  Sets $renamers: the pids of the processes that
# renamed reports.
check_report_trace() {
	local outdir=$1 n=$2
	renamers=$(merged_trace | awk -v dir="$outdir" -v n="$n" '
	function fail(msg) { print "report trace: " msg > "/dev/stderr"; bad = 1; exit 1 }
	# The file name in a traced call: the first quoted string.
	function path(line) { split(line, q, "\""); return q[2] }
	{ proc = $1; sub(/^[0-9]+ /, "") }
	/^openat\(AT_FDCWD, / && path($0) == dir && /O_DIRECTORY/ {
		if ($0 !~ /O_NOFOLLOW/) fail("output directory opened following a link: " $0)
		diropen++
	}
	# A final report name opened for writing: never.
	/^openat\(/ && /O_WRONLY|O_RDWR/ {
		p = path($0)
		if (index(p, "task-") == 1 || index(p, dir "/task-") == 1) fail("final name opened: " $0)
		# The run'"'"'s manifest: a new file under a temporary name too.
		if (index(p, ".cowrun-manifest.") == 1 && match($0, /= [0-9]+$/)) {
			if ($0 !~ /O_EXCL/ || $0 !~ /O_NOFOLLOW/ || $0 ~ /O_TRUNC/)
				fail("manifest not created as a new file: " $0)
			manifest_temp[p] = 1
		}
		if (index(p, ".task-") == 1 && match($0, /= [0-9]+$/)) {
			if ($0 !~ /O_EXCL/ || $0 !~ /O_NOFOLLOW/ || $0 ~ /O_TRUNC/)
				fail("temporary report not created as a new file: " $0)
			if ($0 ~ /openat\(AT_FDCWD/) fail("temporary report opened by name, not in the directory: " $0)
			on_fd[proc, substr($0, RSTART + 2)] = p; wrote[p] = 1
		}
	}
	# A temporary report opened to be fsync'"'"'d by another process.
	/^openat\(/ && /O_RDONLY/ && index(path($0), ".task-") == 1 && match($0, /= [0-9]+$/) {
		if ($0 !~ /O_NOFOLLOW/) fail("temporary report opened following a link: " $0)
		if ($0 ~ /openat\(AT_FDCWD/) fail("temporary report opened by name, not in the directory: " $0)
		if (!(path($0) in wrote)) fail("opened a temporary report nobody wrote: " $0)
		on_fd[proc, substr($0, RSTART + 2)] = path($0)
	}
	/^fsync\(.*= 0$/ { split($0, a, /[()]/); if ((proc, a[2]) in on_fd) synced[proc, on_fd[proc, a[2]]] = 1 }
	/^rename(at2?)?\(/ {
		split($0, q, "\""); from = q[2]; to = q[4]
		if (index(from, ".cowrun-manifest.") == 1) {
			if (!(from in manifest_temp)) fail("manifest renamed from a file it did not write: " $0)
			next
		}
		if (!(from in wrote)) fail("renamed from a file nobody wrote: " $0)
		if (!((proc, from) in synced)) fail("renamed before fsync: " $0)
		if (index(to, "task-") != 1) fail("renamed elsewhere: " $0)
		renamed++; by[proc] = 1
		delete synced[proc, from]
	}
	END {
		if (bad) exit 1
		if (diropen != 1) { print "report trace: output directory opened " diropen + 0 " times, expected once" > "/dev/stderr"; exit 1 }
		if (renamed != n) { print "report trace: " renamed + 0 " renames, expected " n > "/dev/stderr"; exit 1 }
		for (pid in by) print pid
	}
	')
}

@test "a report is written under a hidden temporary name, fsync'd, then renamed: fork, serial, omp" {
	command -v strace >/dev/null || skip "strace is not installed (make deps installs it)"
	tags=()
	for mode in "-j 2" "--mode serial" "--mode omp -j 2"; do
		rm -rf "$BATS_TEST_TMPDIR/rep"
		trace_run $mode -o "$BATS_TEST_TMPDIR/rep" selftest --tasks 5 --report-bytes 100
		[ "$status" -eq 0 ]
		[ "$(ls "$BATS_TEST_TMPDIR/rep" | wc -l)" -eq 5 ]
		[ -z "$(ls -A "$BATS_TEST_TMPDIR/rep" | grep '^\.' | grep -v '^\.cowrun-manifest\.')" ]
		check_report_trace "$BATS_TEST_TMPDIR/rep" 5
		# The temporary names' last part is random, one per batch.
		tags+=($(grep -ho '"\.task-[^"]*\.tmp"' "$BATS_TEST_TMPDIR"/trace/t.* |
			sed 's/.*\.\([0-9a-f]\{16\}\)\.tmp"$/\1/' | sort -u))
	done
	[ "${#tags[@]}" -eq 3 ] || { echo "tags: ${tags[*]}" >&2; return 1; }
	[ "$(printf '%s\n' "${tags[@]}" | sort -u | grep -cv '^0*$')" -eq 3 ]
}

# yesterday OUTDIR: reports of an earlier run in OUTDIR, each saying so.
yesterday() {
	mkdir -p "$1"
	for k in 0 1 2 3 4 5; do echo "yesterday" >"$1/task-00000$k"; done
	[ "$(cat "$1"/task-* | wc -l)" -eq 6 ]
}

@test "a failed task leaves no report, not even yesterday's: error, crash, _exit; fork and serial" {
	for mode in "-j 2" "--mode serial"; do
		d="$BATS_TEST_TMPDIR/rep-${mode// /}"
		yesterday "$d"
		run --separate-stderr cowrun $mode -o "$d" selftest --tasks 6 --report-bytes 20 --fail 1,4
		[ "$status" -eq 2 ]
		[ ! -e "$d/task-000001" ]
		[ ! -e "$d/task-000004" ]
		for k in 0 2 3 5; do
			[ "$(wc -c <"$d/task-00000$k")" -eq 20 ]
		done
		[ -z "$(ls -A "$d" | grep '^\.' | grep -v '^\.cowrun-manifest\.')" ]
	done
	# A worker that dies mid-task: the parent removes the report.
	d="$BATS_TEST_TMPDIR/rep-crash"
	yesterday "$d"
	run --separate-stderr cowrun -j 2 -o "$d" selftest --tasks 6 --report-bytes 20 --crash 2 --exit 3
	[ "$status" -eq 2 ]
	[ ! -e "$d/task-000002" ]
	[ ! -e "$d/task-000003" ]
	[ "$(cat "$d"/task-00000[0145] | wc -c)" -eq 80 ]
	[ -z "$(ls -A "$d" | grep '^\.' | grep -v '^\.cowrun-manifest\.')" ]
}

@test "fork mode: a worker hands its report over and goes on; the parent fsyncs it on a thread, renames it, and then counts its result; a worker killed after handing one over loses nothing" {
	command -v strace >/dev/null || skip "strace is not installed (make deps installs it)"
	d=$BATS_TEST_TMPDIR
	trace_run -j 2 -o "$d/rep" selftest --tasks 6 --report-bytes 100
	[ "$status" -eq 0 ] || { echo "status $status: $stderr" >&2; return 1; }
	check_report_trace "$d/rep" 6
	# One process renamed them all and wrote none of them: the parent; its
	# fsyncs ran on another thread.  The workers neither synced nor renamed.
	[ "$(printf '%s\n' "$renamers" | wc -l)" -eq 1 ]
	! grep -q '"\.task-[^"]*", O_RDWR|O_CREAT' "$d/trace/t.$renamers" || return 1
	# The main thread's only fsync: the run's manifest.
	[ "$(grep -c ' fsync(' "$d/trace/t.$renamers")" -le 1 ]
	[ "$(merged_trace | awk -v p="$renamers" '$1 == p && $2 ~ /^fsync\(/' | wc -l)" -ge 6 ]
	writers=$(grep -l '"\.task-[^"]*", O_RDWR|O_CREAT' "$d"/trace/t.*)
	[ "$(printf '%s\n' "$writers" | wc -l)" -ge 1 ]
	for w in $writers; do
		! grep -qE ' (fsync|renameat?2?)\(.*task-' "$w" || { echo "a worker committed: $w" >&2; return 1; }
	done
	# Task 2 kills its worker, whose task 1 was handed over just before:
	# its report is in place and its result counted; task 1 ran once.
	mkdir "$d/marks"
	run --separate-stderr cowrun -v -j 1 --joblog "$d/log" -o "$d/out" selftest --tasks 4 --report-bytes 100 --crash 2:SIGKILL --mark-start "$d/marks"
	[ "$status" -eq 1 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[[ "$stderr" == *"task 2 "*"killed by SIGKILL"* ]]
	# The replacement was forked beside the parent's fsync threads, which
	# hold nothing a worker needs: a fork of one thread still.
	[[ "$stderr" == *", 2 forks, "*", threads at fork 1"* ]] || { echo "$stderr" >&2; return 1; }
	[ "$(ls "$d/marks" | grep -c '^task-000001\.')" -eq 1 ]
	for k in 0 1 3; do
		[ "$(wc -c <"$d/out/task-00000$k")" -eq 100 ] || { echo "task $k: no report" >&2; return 1; }
	done
	[ ! -e "$d/out/task-000002" ]
	[ -z "$(ls -A "$d/out" | grep '^\.' | grep -v '^\.cowrun-manifest\.')" ]
	[ "$(awk -F'\t' 'NR > 1 && $7 == 0 && $8 == 0 { n++ } END { print n }' "$d/log")" -eq 3 ]
}

@test "fork mode: a handed-over report the parent cannot commit fails its task, naming the file, and leaves no report, not even yesterday's" {
	d=$BATS_TEST_TMPDIR
	# run() of item-1 removes its own report's temporary file once written,
	# as a disk that lost it would: the parent finds nothing to fsync.
	cat >"$d/lose.py" <<'PY'
import glob, os
import cowrun

def setup(argv):
    return argv[0]

def tasks(state):
    return ["item-0", "item-1", "item-2"]

def run(state, i, name):
    with cowrun.report() as f:
        f.write(name + "\n")
        f.flush()
        if name == "item-1":
            for temp in glob.glob(os.path.join(state, ".item-1.*.tmp")):
                os.unlink(temp)
    return i
PY
	mkdir "$d/out" && echo yesterday >"$d/out/item-1"
	run --separate-stderr cowrun -j 2 -o "$d/out" python "$d/lose.py" "$d/out"
	[ "$status" -eq 1 ] || { echo "status $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[[ "$stderr" == *"task 1 (item-1) failed: cannot write '$d/out/item-1': No such file or directory"* ]] ||
		{ echo "$stderr" >&2; return 1; }
	[ ! -e "$d/out/item-1" ]
	[ "$(cat "$d/out/item-0" "$d/out/item-2")" = "item-0"$'\n'"item-2" ]
	[ -z "$(ls -A "$d/out" | grep '^\.' | grep -v '^\.cowrun-manifest\.')" ]
}
