#!/usr/bin/env bats
# The data.table example (workloads/r/examples/sales_report.R): a real
# 120-store nightly report in R, whose summary and reports are the C sales
# workload's, byte for byte, on the same CSV.  Each run starts R: the
# checks share runs where they can.

load helpers

EXAMPLE="$ROOT/workloads/r/examples/sales_report.R"

setup() {
	[ -e "$ROOT/build/workloads/r.so" ] || skip "no build/workloads/r.so (R is not installed: make deps, then make)"
	CSV=$BATS_TEST_TMPDIR/sales.csv
}

@test "r example: its company totals, summary and 24 reports equal cowrun sales --input on the same CSV, at -j 2, 1 and serial" {
	example_equals_sales r "$EXAMPLE"
}

@test "r example: a product name, a BOM, CRLF, a blank line, id 007 and a one-day store print what cowrun sales prints" {
	# The cases a pandas-style reader gets wrong: fread with quoting and
	# white-space stripping off, "007" the product 7, ids before names.
	printf '\357\273\277date,store,product,quantity,unit_price\r\n%s\r\n\r\n%s\r\n%s\r\n%s\r\n%s\r\n' \
		"2024-02-03,3,007,2,3.4" "2024-02-04,3,7,2,3.5" "2024-02-04,12,Café Crème,1,0005.50" \
		"2024-02-05,3,Zed x,3,5" "2024-02-05,3,Apple,3,5.01" >"$CSV"
	run --separate-stderr cowrun -o "$BATS_TEST_TMPDIR/c" sales --input "$CSV"
	[ "$status" -eq 0 ]
	local reference=$output
	run --separate-stderr cowrun -j 2 -o "$BATS_TEST_TMPDIR/r" r "$EXAMPLE" --input "$CSV"
	[ "$status" -eq 0 ] || { echo "exit $status: $stderr" >&2; return 1; }
	[ "$output" = "$reference" ]
	diff -r -x '.cowrun-manifest.*' "$BATS_TEST_TMPDIR/c" "$BATS_TEST_TMPDIR/r"
	grep -q '^     1 .*  Café Crème$' "$BATS_TEST_TMPDIR/r/store-0012.txt"
}

@test "r example: a bad date and a misspelt --input are one line each, exit 255, nothing written; --dry-run names the file's stores" {
	printf 'date,store,product,quantity,unit_price\n2024-01-02,1,1,1,1\n2024-02-30,2,1,1,1\n' >"$CSV"
	run --separate-stderr cowrun -o "$BATS_TEST_TMPDIR/r" r "$EXAMPLE" --input "$CSV"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: r: $EXAMPLE:*: in setup(): $CSV: column date has a value that is not a date YYYY-MM-DD (fread read it as string)"
	[ -z "$output" ]
	[ ! -e "$BATS_TEST_TMPDIR/r/store-0001.txt" ]
	run --separate-stderr cowrun -o "$BATS_TEST_TMPDIR/r" r "$EXAMPLE" --inptu "$CSV"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: r: $EXAMPLE:*: in setup(): unknown argument '--inptu'; usage: sales_report.R --input FILE *"
	"$ROOT/tests/helpers/make-sales-csv" 300 4 5 >"$CSV"
	run --separate-stderr cowrun --dry-run -o "$BATS_TEST_TMPDIR/r" r "$EXAMPLE" --input "$CSV"
	[ "$status" -eq 0 ]
	[[ "$output" == *"tasks      4 of 4: store-0001.txt store-0002.txt store-0003.txt store-0004.txt"* ]]
}
