#!/usr/bin/env bats
# The identity of a Python run's inputs and outputs (issue 38, items 6-8):
# paths taken once, before the setup, so os.chdir() in setup() changes
# neither the identity nor where reports go; an input the setup writes is
# refused naming --not-input; the script's own modules are inputs; and
# one manifest per script, keyed by its path.  The scripts are written
# here; their behaviour is switched by environment variables, never by
# arguments (which would be inputs of the run).

load helpers

setup() {
	T=$BATS_TEST_TMPDIR
	cd "$T"
}

# cd.py: setup() changes into sub/; every task writes its report.
write_cd_script() {
	mkdir -p sub
	cat >cd.py <<'PY'
import os, cowrun
def setup(argv):
    os.chdir("sub")
    return None
def tasks(state):
    return ["a", "b", "c"]
def run(state, i, name):
    with cowrun.report() as f:
        f.write("%s %d\n" % (name, i))
    return i
def merge(state, i, name, r):
    pass
def finish(state, out):
    print("done", file=out)
PY
}

# report.py NAME: a script whose tasks are NAME-0 .. NAME-(N-1), N from
# $TASKS (default 3); each writes its report.
write_report_script() {
	cat >"$1.py" <<PY
import os, cowrun
def setup(argv):
    return None
def tasks(state):
    return ["$1-%d" % i for i in range(int(os.environ.get("TASKS", "3")))]
def run(state, i, name):
    with cowrun.report() as f:
        f.write(name + "\n")
PY
}

# uses_helper.py beside helper.py: task b fails while $FAIL_B is set.
write_helper_scripts() {
	cat >uses_helper.py <<'PY'
import json
import helper
def setup(argv):
    return None
def tasks(state):
    return ["a", "b", "c"]
def run(state, i, name):
    helper.check(name)
    return helper.value(i)
def merge(state, i, name, r):
    state_sum.append(r)
state_sum = []
def finish(state, out):
    print("sum", sum(state_sum), file=out)
PY
	cat >helper.py <<'PY'
import os
def check(name):
    if name == "b" and os.environ.get("FAIL_B"):
        raise RuntimeError("b fails")
def value(i):
    return i * 10
PY
}

@test "python paths: os.chdir() in setup(): a relative script's identity holds and the reports go to -o as given, fork and serial" {
	write_cd_script
	for mode in "-j 2" "--mode serial"; do
		rm -rf out sub/out
		# shellcheck disable=SC2086  # the mode's words
		run --separate-stderr cowrun $mode python cd.py
		[ "$status" -eq 0 ] || { echo "$mode: $status: $stderr" >&2; return 1; }
		assert_no_leftovers
		[ "$output" = "done" ]
		[ "$(cat out/b)" = "b 1" ]
		[ ! -e sub/out ]
		assert_no_temporary out
	done
}

@test "python paths: os.chdir() in setup() with the script and -o given as absolute and relative paths: the reports where -o said" {
	write_cd_script
	run --separate-stderr cowrun -j 2 python "$T/cd.py"
	[ "$status" -eq 0 ] && assert_no_leftovers
	[ -f out/a ] && [ -f out/c ] && [ ! -e sub/out ]
	run --separate-stderr cowrun -j 2 -o rep python "$T/cd.py"
	[ "$status" -eq 0 ]
	[ -f rep/a ] && [ ! -e sub/rep ]
}

@test "python paths: os.chdir() in setup(): the side files stay where given, and --resume finds its journal and the same identity" {
	write_cd_script
	for mode in "-j 2" "--mode serial"; do
		rm -rf out jl jl.res r.res st tl m.prom sub/*
		# shellcheck disable=SC2086  # the mode's words
		run --separate-stderr cowrun $mode --joblog jl --save-results r.res --timeline tl \
			--stats st --metrics m.prom python cd.py
		[ "$status" -eq 0 ] || { echo "$mode: $status: $stderr" >&2; return 1; }
		assert_no_leftovers
		[ -s jl ] && [ -s jl.res ] && [ -s r.res ] && [ -s tl ] && [ -s m.prom ]
		[ "$mode" = "--mode serial" ] || [ -s st ]
		[ -z "$(ls -A sub)" ] || { echo "$mode: in sub: $(ls -A sub)" >&2; return 1; }
		assert_no_temporary .
		# The same identity after the chdir: every task settled.
		# shellcheck disable=SC2086
		run --separate-stderr cowrun $mode --joblog jl --resume python cd.py
		[ "$status" -eq 0 ] || { echo "$mode resume: $status: $stderr" >&2; return 1; }
		[ "$output" = "done" ] && [ -z "$(ls -A sub)" ]
		[ "$(grep -c . jl)" -eq 4 ]   # the header and the first run's 3 lines
	done
}

@test "python paths: a setup that writes an input it was given is refused in one line naming --not-input; with it the run passes" {
	cat >db.py <<'PY'
import sqlite3
def setup(argv):
    con = sqlite3.connect(argv[0])
    con.execute("create table if not exists t(x)")
    con.execute("insert into t values (1)")
    con.commit()
    return {"con": con}
def tasks(state):
    return ["a"]
def run(state, i, name):
    return i
PY
	python3 -c 'import sqlite3; c = sqlite3.connect("db.sqlite"); c.execute("create table t(x)"); c.commit()'
	run --separate-stderr cowrun python db.py db.sqlite
	[ "$status" -eq 255 ] && assert_no_leftovers
	assert_one_line_error "cowrun: input 'db.sqlite' (argv\[1\]) changed while the setup read it (this process holds it open for writing): if the setup writes to it, it is no input: give --not-input 'db.sqlite'; else run again"
	run --separate-stderr cowrun --not-input db.sqlite python db.py db.sqlite
	[ "$status" -eq 0 ] && assert_no_leftovers
}

@test "python paths: a module beside the script, edited between a run and its --resume, is refused naming it; unchanged, the resume runs" {
	write_helper_scripts
	FAIL_B=1 run --separate-stderr cowrun -j 2 --joblog jl python uses_helper.py
	[ "$status" -eq 1 ] && assert_no_leftovers
	# Unchanged: --resume-failed reruns b and gives the whole summary.
	run --separate-stderr cowrun -j 2 --joblog jl --resume-failed python uses_helper.py
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	[ "$output" = "sum 30" ]
	rm -f jl jl.res
	FAIL_B=1 run --separate-stderr cowrun -j 2 --joblog jl python uses_helper.py
	[ "$status" -eq 1 ]
	printf '    return i * 100\n' >>helper.py   # the same file, another size
	run --separate-stderr cowrun -j 2 --joblog jl --resume-failed python uses_helper.py
	[ "$status" -eq 255 ] && assert_no_leftovers
	assert_one_line_error "cowrun: --resume: input '$T/helper.py' (cowrun_input) changed since the run being resumed: its size changed from * to * bytes: run again without --resume"
}

@test "python paths: a module beside the script is an input and its shards' --merge refuses an edited one; a standard module is none" {
	write_helper_scripts
	run --separate-stderr cowrun -v python uses_helper.py
	[ "$status" -eq 0 ]
	# The script and helper.py: json (the interpreter's) is no input.
	[[ "$stderr" == *"python: 2 inputs, "* ]]
	# Nor numpy (Debian's dist-packages).
	printf 'import numpy\n' | cat - uses_helper.py >np.py
	run --separate-stderr cowrun -v python np.py
	[ "$status" -eq 0 ] && [[ "$stderr" == *"python: 2 inputs, "* ]]
	run --separate-stderr cowrun --shard 0/2 --save-results r0.res python uses_helper.py
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	run --separate-stderr cowrun --shard 1/2 --save-results r1.res python uses_helper.py
	[ "$status" -eq 0 ]
	run --separate-stderr cowrun --merge r0.res --merge r1.res python uses_helper.py
	[ "$status" -eq 0 ] && [ "$output" = "sum 30" ]
	printf '# edited\n' >>helper.py
	run --separate-stderr cowrun --shard 1/2 --save-results r1.res python uses_helper.py
	[ "$status" -eq 0 ]
	run --separate-stderr cowrun --merge r0.res --merge r1.res python uses_helper.py
	[ "$status" -eq 255 ] && assert_no_leftovers
	assert_one_line_error "cowrun: merge: 'r0.res' was saved from another input than this run: cowrun_input '$T/helper.py' was * bytes with hash * there and * bytes with hash * in this run"
}

@test "python paths: two scripts in one output directory: neither's reports are stale for the other, --clean removes neither's" {
	write_report_script one
	write_report_script two
	run --separate-stderr cowrun python one.py
	[ "$status" -eq 0 ] && [ -z "$stderr" ]
	run --separate-stderr cowrun python two.py
	[ "$status" -eq 0 ]
	[ -z "$stderr" ] || { echo "two saw stale reports: $stderr" >&2; return 1; }
	run --separate-stderr cowrun --clean python one.py
	[ "$status" -eq 0 ] && [ -z "$stderr" ]
	[ -f out/two-0 ] && [ -f out/two-2 ] && [ -f out/one-2 ]
	[ "$(ls -A out | grep -c '^\.cowrun-manifest\.python\.script-')" -eq 2 ]
}

@test "python paths: --dry-run names the manifest the run then writes, keyed by the script's path" {
	cat >planned.py <<'PY'
import cowrun
def plan(argv):
    return ["a"]
def setup(argv):
    return None
def tasks(state):
    return ["a"]
def run(state, i, name):
    with cowrun.report() as f:
        f.write(name)
PY
	run --separate-stderr cowrun --dry-run python planned.py
	[ "$status" -eq 0 ]
	local name
	name=$(printf '%s\n' "$output" | sed -n 's|.*out/\(\.cowrun-manifest\.python\.script-[0-9a-f]\{16\}\)  (the run.s manifest)$|\1|p')
	[ -n "$name" ] || { echo "no manifest line: $output" >&2; return 1; }
	run --separate-stderr cowrun python planned.py
	[ "$status" -eq 0 ]
	[ "$(ls -A out | grep '^\.cowrun-manifest')" = "$name" ]
}

@test "python paths: an edited script keeps its manifest: its own earlier reports are still found stale, and --clean removes only them" {
	write_report_script one
	write_report_script two
	run --separate-stderr cowrun python two.py
	run --separate-stderr cowrun python one.py
	[ "$status" -eq 0 ]
	printf '# edited\n' >>one.py
	TASKS=2 run --separate-stderr cowrun python one.py
	[ "$status" -eq 0 ]
	assert_one_line_error "cowrun: python: 1 stale report in 'out' *: one-2; --clean removes them"
	TASKS=2 run --separate-stderr cowrun --clean python one.py
	[ "$status" -eq 0 ]
	[ ! -e out/one-2 ] && [ -f out/one-1 ] && [ -f out/two-2 ]
}

# legacy_manifest NAME: out/.cowrun-manifest.python as cowrun 0.5.1 wrote it
# for NAME.py (the same lines, without the "script" line it did not have).
legacy_manifest() {
	local keyed
	keyed=$(ls -A out | grep '^\.cowrun-manifest\.python\.script-')
	sed '/^script /d' "out/$keyed" >out/.cowrun-manifest.python
	rm "out/$keyed"
}

@test "python paths: an old .cowrun-manifest.python of this script is read once and replaced; another script's is left alone" {
	write_report_script one
	write_report_script two
	run --separate-stderr cowrun python one.py
	legacy_manifest
	TASKS=2 run --separate-stderr cowrun python one.py
	[ "$status" -eq 0 ]
	assert_one_line_error "cowrun: python: 1 stale report in 'out' *: one-2; --clean removes them"
	[ ! -e out/.cowrun-manifest.python ]
	# Carried into the new manifest: still known.
	TASKS=2 run --separate-stderr cowrun --clean python one.py
	assert_one_line_error "cowrun: python: removed 1 stale report from 'out' *: one-2"
	# Another script's old manifest is not this one's: left, and read by it.
	rm -rf out
	run --separate-stderr cowrun python two.py
	legacy_manifest
	run --separate-stderr cowrun python one.py
	[ "$status" -eq 0 ] && [ -z "$stderr" ]
	[ -f out/.cowrun-manifest.python ]
	TASKS=1 run --separate-stderr cowrun python two.py
	assert_one_line_error "cowrun: python: 2 stale reports in 'out' *: two-1, two-2; --clean removes them"
	[ ! -e out/.cowrun-manifest.python ]
}

@test "python paths: past cowrun.input()'s 256 files the script's other modules are named in one line, and the run goes on" {
	mkdir lib
	python3 - <<'PY'
for i in range(300):
    open("lib/m%03d.py" % i, "w").write("X = %d\n" % i)
open("many.py", "w").write("""import importlib, sys
sys.path.append("lib")
for i in range(300):
    importlib.import_module("m%03d" % i)
def setup(argv):
    return None
def tasks(state):
    return ["a"]
def run(state, i, name):
    return 1
""")
PY
	run --separate-stderr cowrun python many.py
	[ "$status" -eq 0 ] && assert_no_leftovers
	[[ "$stderr" == *"cowrun: python: $T/many.py: 44 of the script's 300 own modules are not recorded as inputs: --resume and --merge cannot see them change"* ]]
	[ "$(printf '%s\n' "$stderr" | grep -c .)" -eq 2 ]   # and cowrun_input()'s own line
}
