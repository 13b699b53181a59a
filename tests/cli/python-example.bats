#!/usr/bin/env bats
# The pandas example (workloads/python/examples/sales_report.py): a real
# 120-store nightly report in Python, whose summary and reports are the C
# sales workload's, byte for byte, on the same CSV.

load helpers

EXAMPLE="$ROOT/workloads/python/examples/sales_report.py"

setup() {
	CSV=$BATS_TEST_TMPDIR/sales.csv
}

@test "python example: its company totals, summary and 24 reports equal cowrun sales --input on the same CSV, at -j 1, 2 and serial" {
	example_equals_sales python "$EXAMPLE"
}

@test "python example: a changed CSV is refused on --resume, naming it" {
	# 12 stores, not 120: the refusal is the same whatever the size, and
	# the run it resumes costs a fifth (the 120 stores are the test above's).
	"$ROOT/tests/helpers/make-sales-csv" 2000 12 5 >"$CSV"
	run --separate-stderr cowrun -j 2 --joblog "$BATS_TEST_TMPDIR/j.log" --halt now,fail=1 \
		-o "$BATS_TEST_TMPDIR/py" python "$EXAMPLE" --input "$CSV"
	[ "$status" -eq 0 ]
	echo "2025-01-01,1,1,1,1.00" >>"$CSV"
	run --separate-stderr cowrun -j 2 --joblog "$BATS_TEST_TMPDIR/j.log" --resume \
		-o "$BATS_TEST_TMPDIR/py" python "$EXAMPLE" --input "$CSV"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --resume: input '$CSV' (argv?2?) changed since the run being resumed: its size changed from * to * bytes: run again without --resume"
}
