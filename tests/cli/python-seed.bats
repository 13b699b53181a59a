#!/usr/bin/env bats
# Random draws that repeat (issue 38, items 2 and 3): before each run()
# cowrun seeds `random` and numpy's global generator from --seed and the
# task's index, so a script that seeds them in setup() and draws in run()
# gets the same numbers at every -j, serial or fork, across runs, shards,
# retries and resumes; the hash seed follows --seed too.  The seed and the
# task names are part of the batch's identity: --resume and --merge refuse
# another.  The script is tests/fixtures/python/draws.py, switched by
# DRAW_* environment variables (see its docstring).

load serve-helpers

FIX="$ROOT/tests/fixtures/python"
DRAWS="$FIX/draws.py"
PY=/usr/bin/python3   # Debian's, the one cowrun embeds (numpy)

# Once for the file: an interpreter that imports numpy is no light start.
setup_file() {
	"$PY" -c 'import numpy' 2>/dev/null ||
		{ echo "Debian's python3 has no numpy: make deps installs it" >&2; return 1; }
}

setup() {
	serve_setup
	cd "$D"
}

# draws NAME [RUNNER OPTIONS]: a run of draws.py, reports into $D/NAME;
# its stdout in $output (and $D/NAME.out), checked to be a whole run.
draws() {
	local name=$1
	shift
	python_ok "$name" "$DRAWS" "$@"
	printf '%s\n' "$output" >"$D/$name.out"
}

# The distinct pids the tasks ran in (DRAW_MARKS=$D/marks).
pids() {
	cat "$D"/marks/pid-* | sort -u | grep -c .
}

@test "python seed: seeded in setup(), drawn in run(): the same per-task draws serial, -j 1, -j 2 and in a second run" {
	draws serial --mode serial
	reference=$output
	tasks_of() { printf '%s\n' "$1" | grep '^t'; }
	# Six tasks, one line each; each task draws its own numbers.
	[ "$(tasks_of "$output" | grep -c '^t[0-5] ')" -eq 6 ]
	[ "$(tasks_of "$output" | cut -d' ' -f2 | sort -u | grep -c .)" -eq 6 ]
	[ "$(tasks_of "$output" | cut -d' ' -f3 | sort -u | grep -c .)" -eq 6 ]
	draws j1 -j 1
	[ "$(tasks_of "$output")" = "$(tasks_of "$reference")" ]
	# Slow tasks at -j 2: they spread over both workers.
	mkdir marks
	DRAW_MARKS=$D/marks DRAW_SLEEP=0.2 draws j2 -j 2
	[ "$(pids)" -eq 2 ]
	[ "$(tasks_of "$output")" = "$(tasks_of "$reference")" ]
	# A second run, another process: the same numbers.
	draws again -j 2
	[ "$(tasks_of "$output")" = "$(tasks_of "$reference")" ]
	# The finish's draws: those of the setup's seed (42), in the parent
	# (fork) as in the watchdog's child (serial), whatever run() drew.
	[ "$(printf '%s\n' "$reference" | tail -1)" = "finish 0.374540 0.639427" ]
	[ "$output" = "$reference" ]
	# random alone, numpy never imported: the same in every mode too.
	DRAW_NO_NUMPY=1 draws plain-serial --mode serial
	plain=$output
	DRAW_NO_NUMPY=1 DRAW_SLEEP=0.1 draws plain-j2 -j 2
	[ "$output" = "$plain" ]
	[ "$(printf '%s\n' "$plain" | cut -d' ' -f3)" = "$(printf '%s\n' "$reference" | cut -d' ' -f3)" ]
}

@test "python seed: --seed 7 draws other numbers, --seed 0 the default's; cowrun.seed() is the task's seed" {
	draws default -j 2
	reference=$output
	draws zero -j 2 --seed 0
	[ "$output" = "$reference" ]
	draws seven -j 2 --seed 7
	[ "$output" != "$reference" ]
	# Another seed changes every task's draws, not the setup's (finish).
	[ "$(printf '%s\n' "$output" | tail -1)" = "finish 0.374540 0.639427" ]
	paste -d' ' "$D/default.out" "$D/seven.out" | grep '^t' |
		awk '$2 == $6 || $3 == $7 || $4 == $8 { bad = 1 } END { exit bad }'
	# cowrun.seed() is the task's seed: in setup() and finish() the run's.
	cat >seeds.py <<'PY'
import cowrun
def setup(argv): return cowrun.seed()
def tasks(state): return ["a", "b"]
def run(state, i, name): return cowrun.seed()
def merge(state, i, name, seed): print(name, seed)
def finish(state, out): print("run", state, cowrun.seed(), file=out)
PY
	run --separate-stderr cowrun --seed 18446744073709551615 -j 2 -o o python seeds.py
	[ "$status" -eq 0 ]
	[ "$output" = "run 18446744073709551615 18446744073709551615" ]
	[[ "$stderr" == *"a "[0-9]*$'\n'"b "[0-9]* ]]
	run --separate-stderr cowrun --seed 12x python seeds.py
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --seed: bad value '12x': expected a number 0-18446744073709551615"
}

@test "python seed: two shards merged give the whole run's draws; shards of another --seed are refused naming both seeds" {
	draws whole -j 2
	reference=$output
	run --separate-stderr cowrun -j 2 --shard 0/2 --save-results a.res -o sh python "$DRAWS"
	[ "$status" -eq 0 ]
	run --separate-stderr cowrun -j 1 --shard 1/2 --save-results b.res -o sh python "$DRAWS"
	[ "$status" -eq 0 ]
	run --separate-stderr cowrun --merge a.res --merge b.res python "$DRAWS"
	[ "$status" -eq 0 ]
	[ "$output" = "$reference" ]
	run --separate-stderr cowrun --seed 7 --shard 1/2 --save-results c.res -o sh python "$DRAWS"
	[ "$status" -eq 0 ]
	run --separate-stderr cowrun --merge a.res --merge c.res python "$DRAWS"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: merge: 'c.res' was saved with --seed 7, not this run's --seed 0: its tasks drew other numbers: merge with --seed 7, or save it again"
}

@test "python seed: a retry and a resume draw the same numbers" {
	draws whole -j 2
	reference=$output
	# Task 2 fails once after its draws; its retry draws them again.
	mkdir marks
	DRAW_MARKS=$D/marks DRAW_FAIL_ONCE=2 draws retried -j 2 --retries 1
	[ "$output" = "$reference" ]
	[ -e marks/failed-t2 ]
	# Failed without a retry, then --resume-failed: the same numbers.
	rm -rf marks && mkdir marks
	run --separate-stderr env DRAW_MARKS="$D/marks" DRAW_FAIL_ONCE=3 "$REAPER" "$COWRUN" -j 2 \
		--joblog log -o res python "$DRAWS"
	[ "$status" -eq 1 ]
	draws resumed -j 2 --joblog log --resume-failed
	[ "$output" = "$reference" ]
}

@test "python seed: tasks() that returns list(set(names)) gives one order in every run, whatever PYTHONHASHSEED says" {
	run --separate-stderr env DRAW_SET=1 PYTHONHASHSEED=1 "$REAPER" "$COWRUN" -o a python "$DRAWS"
	[ "$status" -eq 0 ]
	first=$output
	[ "$(printf '%s\n' "$first" | grep -c '^name-')" -eq 20 ]
	run --separate-stderr env DRAW_SET=1 PYTHONHASHSEED=2 "$REAPER" "$COWRUN" -o b python "$DRAWS"
	[ "$status" -eq 0 ]
	[ "$output" = "$first" ]
	run --separate-stderr env -u PYTHONHASHSEED DRAW_SET=1 "$REAPER" "$COWRUN" --mode serial -o c python "$DRAWS"
	[ "$status" -eq 0 ]
	[ "$output" = "$first" ]
}

@test "python seed: --resume with another --seed is refused before the setup, naming both seeds; -v names the seed" {
	run --separate-stderr cowrun -v -j 2 --joblog log -o out python "$DRAWS"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"cowrun: seed 0 (the default; --seed N changes it): each task's seed derives from it and the task's number"* ]]
	run --separate-stderr cowrun -v --seed 7 -j 2 --joblog log --resume -o out python "$DRAWS"
	[ "$status" -eq 255 ]
	[[ "$stderr" != *"setup "* ]]
	[ "$(printf '%s\n' "$stderr" | grep -vc '^cowrun: python: Python ')" -eq 1 ]
	[[ "$stderr" == *"cowrun: --resume: 'log.res' was saved with --seed 0, not this run's --seed 7: resume with --seed 0, or run again without --resume" ]]
	run --separate-stderr cowrun -v --seed 0 -j 2 --joblog log --resume -o out python "$DRAWS"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"cowrun: seed 0: each task's"* ]]
}

@test "python seed: a served batch draws as a direct run of its --seed (submit --seed)" {
	draws direct -j 2
	direct=$output
	draws direct7 -j 2 --seed 7
	direct7=$output
	start_server -j 2 python "$DRAWS"
	run --separate-stderr submit -o "$D/served"
	[ "$status" -eq 0 ]
	[ "$output" = "$direct" ]
	run --separate-stderr submit -o "$D/served7" --seed 7
	[ "$status" -eq 0 ]
	[ "$output" = "$direct7" ]
	run --separate-stderr submit -o "$D/bad" --seed x
	[ "$status" -eq 255 ]
	[[ "$stderr" == *"--seed: bad value 'x'"* ]]
	stop_server
}

# ---- the task names are part of the identity ------------------------------

@test "python identity: results and journals of other task names are refused, naming the task names" {
	run --separate-stderr env DRAW_NAMES=a,b,c,d "$REAPER" "$COWRUN" -j 2 --save-results abcd.res \
		-o out python "$DRAWS"
	[ "$status" -eq 0 ]
	run --separate-stderr env DRAW_NAMES=a,b,c,d "$REAPER" "$COWRUN" -j 2 --joblog log \
		-o out python "$DRAWS"
	[ "$status" -eq 0 ]
	# The same script and inputs, as many tasks, other names: refused.
	run --separate-stderr env DRAW_NAMES=a,b,x,d "$REAPER" "$COWRUN" --merge abcd.res python "$DRAWS"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: merge: 'abcd.res' was saved for other task names than this run's (4 tasks; names hash "[0-9a-f]*" there, "[0-9a-f]*" here: the names depend on more than the inputs and arguments): save the results again"
	run --separate-stderr env DRAW_NAMES=a,b,x,d "$REAPER" "$COWRUN" -j 2 --joblog log --resume \
		-o out python "$DRAWS"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --resume: 'log.res' was saved for other task names than this run's (4 tasks; names hash "[0-9a-f]*" there, "[0-9a-f]*" here: the names depend on more than the inputs and arguments): run again without --resume"
	# The same names in another order are other names.
	run --separate-stderr env DRAW_NAMES=b,a,c,d "$REAPER" "$COWRUN" --merge abcd.res python "$DRAWS"
	[ "$status" -eq 255 ]
	[[ "$stderr" == *"was saved for other task names than this run's (4 tasks;"* ]]
	# Fewer tasks: refused, with both counts.
	run --separate-stderr env DRAW_NAMES=a,b,c "$REAPER" "$COWRUN" --merge abcd.res python "$DRAWS"
	[ "$status" -eq 255 ]
	[[ "$stderr" == *"'abcd.res' was saved by 'python "*" (4 tasks)', not by this run's 'python "*" (3 tasks)'"* ]]
	# The same names: merged, resumed.
	run --separate-stderr env DRAW_NAMES=a,b,c,d "$REAPER" "$COWRUN" --merge abcd.res python "$DRAWS"
	[ "$status" -eq 0 ]
	run --separate-stderr env DRAW_NAMES=a,b,c,d "$REAPER" "$COWRUN" --joblog log --resume -o out python "$DRAWS"
	[ "$status" -eq 0 ]
}
