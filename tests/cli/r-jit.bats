#!/usr/bin/env bats
# cowrun r: R's JIT is off in a forked worker, as parallel's mcfork() turns
# it off in its children (workloads/r/rinterp.c, r_worker_start()): a
# worker does not byte-compile again what the parent never ran (the
# script's own functions are compiled once, in the parent, after setup()).
# The parent keeps it.

load helpers

@test "r: a worker runs with R's JIT off; the script's functions come compiled from the parent, which keeps the JIT" {
	[ -e "$ROOT/build/workloads/r.so" ] || skip "no build/workloads/r.so (cowrun r is not built: R missing?)"
	# helper() has a loop (the JIT's score for compiling a small top-level
	# function at once) and runs twice per task: compiled in the parent
	# after setup(), as every function of the script is.
	cat >jit.R <<-'EOF'
		setup <- function(args) list(w = character())
		tasks <- function(state) c("a.txt", "b.txt", "c.txt")
		helper <- function(x) { for (k in 1:3) x <- x + 1; x }
		run <- function(state, i, name) {
		  helper(i); helper(i)
		  cat(i, "\n", file = cowrun_report())
		  sprintf("%s: JIT %d, helper compiled %s", name, compiler::enableJIT(-1),
		          inherits(.Internal(bodyCode(helper)), "bytecode"))
		}
		merge <- function(state, i, name, result) { state$w <- c(state$w, result); state }
		finish <- function(state, out)
		  cat(state$w, sprintf("parent: JIT %d", compiler::enableJIT(-1)), sep = "\n", file = out)
	EOF
	R_ENABLE_JIT=3 run --separate-stderr cowrun -j 2 -o out r jit.R
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	[ "$output" = "a.txt: JIT 0, helper compiled TRUE
b.txt: JIT 0, helper compiled TRUE
c.txt: JIT 0, helper compiled TRUE
parent: JIT 3" ]
	[ "$(cat out/b.txt)" = "1 " ]
}
