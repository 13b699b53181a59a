#!/usr/bin/env bats
# Checked before the setup (issue 39, 8): the program of --report-to and
# --report-filter is looked up on PATH before any setup runs, in a direct
# run, --dry-run and --check-args, and in a served batch in the server's
# environment; a missing one is refused in one line, exit 255, nothing
# set up or written.

load serve-helpers

SELF="selftest --tasks 3 --report-bytes 100"

# refused_before_setup OPTION TEXT PROGRAM: a direct run, --dry-run and
# --check-args each refuse it in one line, 255, no setup (selftest's
# --mark-start directory is made by its setup), no output directory.
refused_before_setup() {
	local opt=$1 text=$2 prog=$3 mode
	for mode in run --dry-run --check-args; do
		local extra=()
		[ "$mode" = run ] || extra=("$mode")
		run --separate-stderr cowrun "${extra[@]}" -o "$D/out" "$opt" "$text" \
			$SELF --mark-start "$D/marks"
		[ "$status" -eq 255 ] || { echo "$mode: status $status: $stderr" >&2; return 1; }
		assert_no_leftovers
		assert_one_line_error "cowrun: $opt: cannot run '$prog': not found on PATH"
		[ ! -e "$D/marks" ] && [ ! -e "$D/out" ] || { echo "$mode: set up or wrote" >&2; return 1; }
	done
}

@test "--report-to 'lpx -d x': refused before the setup in a run, --dry-run and --check-args" {
	refused_before_setup --report-to 'lpx -d x' lpx
}

@test "a shell command whose first word is plain is looked up; --report-filter as --report-to" {
	refused_before_setup --report-to 'lpx -d x > /dev/null' lpx
	refused_before_setup --report-filter 'lpx < {}' lpx
}

@test "a program there passes; a shell command starting with a builtin, a keyword or a variable is not looked up" {
	for text in 'cat > /dev/null' 'exec cat > /dev/null' '{ cat; } > /dev/null' \
		'$CAT > /dev/null' 'CAT=x cat > /dev/null' 'if true; then cat > /dev/null; fi'; do
		run --separate-stderr env CAT=cat "$COWRUN" --check-args --report-to "$text" $SELF
		[ "$status" -eq 0 ] || { echo "$text: $stderr" >&2; return 1; }
	done
	run --separate-stderr cowrun -o "$D/out" --report-to 'cat' $SELF --mark-start "$D/marks"
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	assert_no_leftovers
	[ -d "$D/marks" ]
	# A program on PATH but not executable is refused too.
	mkdir "$D/p" && printf '#!/bin/sh\n' > "$D/p/lpy" && chmod 644 "$D/p/lpy"
	run --separate-stderr env PATH="$D/p:$PATH" "$COWRUN" --check-args --report-to 'lpy' $SELF
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --report-to: cannot run 'lpy': not executable where it is on PATH"
	# COWRUN_CHECK_COMMANDS=0 (cowrun-cluster-slurm's check here): left to the hosts.
	run --separate-stderr env COWRUN_CHECK_COMMANDS=0 "$COWRUN" --check-args --report-to 'lpx -d x' $SELF
	[ "$status" -eq 0 ]
}

@test "a served batch looks the program up in the server's environment: refused with 255" {
	mkdir "$D/p" && printf '#!/bin/sh\ncat > /dev/null\n' > "$D/p/srvonly" && chmod 755 "$D/p/srvonly"
	PATH="$D/p:$PATH" start_server -j 2 $SELF
	run --separate-stderr submit -o "$D/served" --report-to 'lpx -d x'
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --report-to: cannot run 'lpx': not found on PATH"
	[ -z "$(ls -A "$D/served" 2>/dev/null)" ]
	# Only the server has it: its environment is the one that counts.
	run --separate-stderr submit -o "$D/served2" --report-to 'srvonly'
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	stop_server
	[ "$status" -eq 0 ]
}

# The sink of the routed tests: each report into $D/spool/NUMBER.
sink() { printf "sh -c 'cat > %s/spool/{#}'" "$D"; }

@test "a successful --report-to run removes the earlier run's same-named reports, and its manifest says routed" {
	mkdir "$D/spool"
	# Four tasks first: task-000003 is then no task's of the batch, stale.
	run -0 --separate-stderr cowrun -o "$D/out" selftest --tasks 4 --report-bytes 100
	echo changed >> "$D/out/task-000001"       # not as the manifest recorded it: kept
	echo other > "$D/out/task-000009"          # named by no manifest: kept
	echo other > "$D/out/notes.txt"
	run -0 --separate-stderr cowrun --dry-run -o "$D/out" --report-to "$(sink)" $SELF
	[[ "$output" == *"replace  $D/out/.cowrun-manifest.selftest  (the run's manifest, routed: the earlier reports it names of the tasks sent are removed)"* ]] || { echo "$output" >&2; return 1; }
	[ -e "$D/out/task-000000" ]
	run --separate-stderr cowrun -j 2 -o "$D/out" --report-to "$(sink)" $SELF
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	assert_no_leftovers
	[ "$(ls "$D/spool" | wc -l)" -eq 3 ]
	[ ! -e "$D/out/task-000000" ] && [ ! -e "$D/out/task-000002" ]
	[ -e "$D/out/task-000001" ] && [ -e "$D/out/task-000009" ] && [ -e "$D/out/notes.txt" ]
	# task-000003 is carried as stale, said only by a --clean that removes it.
	assert_one_line_error "cowrun: selftest: removed 2 earlier reports from '$D/out' (this run's went to --report-to): task-000000, task-000002"
	[ -e "$D/out/task-000003" ]
	m="$D/out/.cowrun-manifest.selftest"
	grep -Eq '^routed [0-9a-f]{16} 3$' "$m"
	! grep -q '^report ' "$m" || { echo "a report line in $m" >&2; return 1; }
	grep -q '^earlier .* task-000003$' "$m"
	[ "$(tail -1 "$m")" = "end 1" ]
	assert_no_temporary "$D/out"
	run --separate-stderr cowrun -o "$D/out" --clean --report-to "$(sink)" $SELF
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	assert_one_line_error "cowrun: selftest: removed 1 stale report from '$D/out' *: task-000003"
	[ ! -e "$D/out/task-000003" ] && [ -e "$D/out/task-000001" ] && [ -e "$D/out/task-000009" ]
}

@test "into a directory with no manifest of its own, a --report-to run writes nothing" {
	mkdir "$D/spool" "$D/out"
	run -0 --separate-stderr cowrun -o "$D/out" --report-to "$(sink)" $SELF
	[ -z "$(ls -A "$D/out")" ]
}

@test "--clean and --resume after a --report-to run: nothing called missing or stale, nothing sent twice" {
	mkdir "$D/spool"
	run -0 --separate-stderr cowrun -o "$D/out" $SELF
	run -0 --separate-stderr cowrun -o "$D/out" --joblog "$D/log" --report-to "$(sink)" $SELF
	rm "$D/spool"/*
	run --separate-stderr cowrun -o "$D/out" --joblog "$D/log" --resume --report-to "$(sink)" $SELF
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	assert_no_leftovers
	[ -z "$stderr" ] || { echo "resume said: $stderr" >&2; return 1; }
	[ -z "$(ls -A "$D/spool")" ]
	grep -Eq '^routed [0-9a-f]{16} 3$' "$D/out/.cowrun-manifest.selftest"
	run --separate-stderr cowrun -o "$D/out" --clean --report-to "$(sink)" $SELF
	[ "$status" -eq 0 ] && [ -z "$stderr" ] || { echo "$status: $stderr" >&2; return 1; }
	# A plain run after it writes its reports and a manifest naming them.
	run --separate-stderr cowrun -o "$D/out" --clean $SELF
	[ "$status" -eq 0 ] && [ -z "$stderr" ] || { echo "$status: $stderr" >&2; return 1; }
	[ "$(grep -c '^report ' "$D/out/.cowrun-manifest.selftest")" -eq 3 ]
	! grep -q '^routed ' "$D/out/.cowrun-manifest.selftest"
}
