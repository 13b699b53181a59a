#!/usr/bin/env bats
# compare/bench-r, the comparison of cowrun r with R's own tools
# (compare/r-peers: lapply, mclapply, parLapply, future_lapply) on the R
# example: its quick mode makes the table, every row's output identical to
# lapply's, and leaves nothing behind.  Not a measurement: 2,000 rows.

load helpers

@test "bench-r --quick: a row for cowrun (fork, serial, served) and each R tool, every output identical to lapply's, nothing left behind" {
	[ -e "$ROOT/build/workloads/r.so" ] || skip "no build/workloads/r.so (cowrun r is not built: R missing?)"
	"$ROOT/tests/helpers/make-sales-csv" 2000 12 5 >"$BATS_TEST_TMPDIR/sales.csv"
	mkdir "$BATS_TEST_TMPDIR/tmp"
	# 12 stores: the rows are what the bench prints, not what it measures.
	# The faults kill at a sixth of the tasks: with 12 short ones a kill
	# may come after the end, so they are left out here.
	TMPDIR=$BATS_TEST_TMPDIR/tmp run --separate-stderr "$REAPER" "$ROOT/compare/bench-r" --quick \
		--skip-faults --seed 1 --csv "$BATS_TEST_TMPDIR/sales.csv" --out-dir "$BATS_TEST_TMPDIR/res"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	assert_no_leftovers
	local label rows=0
	for label in "cowrun r, fork" "cowrun r, --mode serial" "cowrun serve r + submit" \
		"lapply (serial)" "parallel::mclapply" "parallel::parLapply, PSOCK" \
		"future_lapply, multicore"; do
		# A row: the label, -j, a wall time ... ending in "| yes |" (identical).
		grep -F "| $label | " <<<"$output" | grep -qE '^\| [^|]+ \| [-0-9]+ \| [0-9.]+ .*\| yes \|$' ||
			{ echo "no row with identical output for '$label' in: $output" >&2; return 1; }
		rows=$((rows + 1))
	done
	[ "$(grep -c '^| ' <<<"$output")" -ge $((rows + 2)) ]
	[[ "$output" == *"| cowrun's summed PSS at or below mclapply's | 2 |"* ]]
	# What it printed is what it wrote; every run left no process behind
	# (bench-r counts and kills them: the CSV's left_behind).
	[ "$output" = "$(cat "$BATS_TEST_TMPDIR/res/r-peers.md")" ]
	python3 - "$BATS_TEST_TMPDIR/res/r.csv" <<-'EOF'
		import csv, sys
		rows = list(csv.DictReader(open(sys.argv[1])))
		assert len(rows) == 7, len(rows)
		assert all(r["left_behind"] == "0" and r["identical"] == "yes" for r in rows), rows
	EOF
	# Its temporary directory is gone (R's own Rtmp* directories are cowrun
	# r's and R's business, tested where they are made).
	[ -z "$(find "$BATS_TEST_TMPDIR/tmp" -maxdepth 1 -name 'bench-r.*')" ]
}
