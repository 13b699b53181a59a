#!/usr/bin/env bats
# cowrun serve r: a warm R session holding the setup (issue 42).  A served
# batch equals a direct run, and the generation that owns R ends it when
# it retires: R's session directory (tempdir(), shared by the generation,
# its leaders and their workers) is removed then, not left in TMPDIR once
# per generation.

load serve-helpers

BATCH="$ROOT/tests/fixtures/r/batch.R"

setup() {
	serve_setup
	[ -e "$ROOT/build/workloads/r.so" ] || skip "no build/workloads/r.so (cowrun r is not built: R missing?)"
	mkdir "$D/tmp-served" "$D/tmp-direct"
}

@test "r serve: a served batch equals a direct run; the retired generation removes R's tempdir" {
	TMPDIR=$D/tmp-served start_server -j 2 r "$BATCH" 4
	[ -n "$(ls "$D/tmp-served")" ]   # the generation's R session is alive
	submit -j 2 -o "$D/served" >"$D/served.out"
	TMPDIR=$D/tmp-direct cowrun -j 2 -o "$D/direct" r "$BATCH" 4 >"$D/direct.out"
	cmp "$D/served.out" "$D/direct.out"
	diff -r "$D/served" "$D/direct"
	stop_server
	[ "$status" -eq 0 ]
	[ -z "$(ls "$D/tmp-served")" ] || { ls -la "$D/tmp-served" >&2; return 1; }
	[ -z "$(ls "$D/tmp-direct")" ]
	assert_no_leftovers
}
