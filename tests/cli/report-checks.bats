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
	refused_before_setup --report-to 'lpx -d x | cat' lpx
	refused_before_setup --report-filter 'lpx < {} | cat' lpx
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
