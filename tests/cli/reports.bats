#!/usr/bin/env bats
# The report-file promises: a report appears under its final name complete
# or not at all (written to a hidden temporary name, fsync'd, renamed), and
# a task that fails leaves no report, not even yesterday's.

load helpers

# trace_run ARGS...: cowrun ARGS under the reaper, its file operations
# (openat, fsync, rename or renameat) traced in every process and thread, one file
# each: $BATS_TEST_TMPDIR/trace/t.PID.  (Under make check-asan, without
# LeakSanitizer, which cannot work under ptrace.)
trace_run() {
	rm -rf "$BATS_TEST_TMPDIR/trace"
	mkdir "$BATS_TEST_TMPDIR/trace"
	run --separate-stderr env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
		"$REAPER" strace -ff -qq -e trace=openat,fsync,rename,renameat,renameat2 \
		-o "$BATS_TEST_TMPDIR/trace/t" "$COWRUN" "$@"
}

# check_report_trace OUTDIR N: in the trace, OUTDIR was opened once as a
# directory, its last component not followed (O_DIRECTORY|O_NOFOLLOW);
# each of the N reports was created relative to it under a hidden
# temporary name as a new file (O_CREAT|O_EXCL|O_NOFOLLOW: never an
# existing file or a link), fsync'd and renamed to its final name by the
# same process or thread, in that order; no final name was ever opened for
# writing.  The run's manifest (.cowrun-manifest.*) is created the same way.
check_report_trace() {
	local outdir=$1 n=$2
	awk -v dir="$outdir" -v n="$n" '
	function fail(msg) { print "report trace: " msg > "/dev/stderr"; bad = 1; exit 1 }
	# The file name in a traced call: the first quoted string.
	function path(line) { split(line, q, "\""); return q[2] }
	/openat\(AT_FDCWD, / && path($0) == dir && /O_DIRECTORY/ {
		if ($0 !~ /O_NOFOLLOW/) fail("output directory opened following a link: " $0)
		diropen++
	}
	# A final report name opened for writing: never.
	/openat\(/ && /O_WRONLY|O_RDWR/ {
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
			fd[FILENAME] = substr($0, RSTART + 2); temp[FILENAME] = p; synced[FILENAME] = 0
		}
	}
	/fsync\(/ { split($0, a, /[()]/); if (FILENAME in fd && a[2] == fd[FILENAME]) synced[FILENAME] = 1 }
	/rename(at2?)?\(/ {
		split($0, q, "\""); from = q[2]; to = q[4]
		if (index(from, ".cowrun-manifest.") == 1) {
			if (!(from in manifest_temp)) fail("manifest renamed from a file it did not write: " $0)
			next
		}
		if (!(FILENAME in temp) || from != temp[FILENAME]) fail("renamed from a file it did not write: " $0)
		if (!synced[FILENAME]) fail("renamed before fsync: " $0)
		if (index(to, "task-") != 1) fail("renamed elsewhere: " $0)
		renamed++; delete temp[FILENAME]
	}
	END {
		if (bad) exit 1
		if (diropen != 1) { print "report trace: output directory opened " diropen + 0 " times, expected once" > "/dev/stderr"; exit 1 }
		if (renamed != n) { print "report trace: " renamed + 0 " renames, expected " n > "/dev/stderr"; exit 1 }
	}
	' "$BATS_TEST_TMPDIR"/trace/t.*
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
