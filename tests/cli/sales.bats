#!/usr/bin/env bats
# CLI tests of the sales workload: identical output in every mode and at
# every -j, exact totals from a handmade CSV, and one clear line for each
# kind of bad input, with no report written.

load helpers

HEADER='date,store,product,quantity,unit_price'
SMALL=(sales --rows 20000 --stores 6 --products 60 --days 45 --seed 7)

setup() {
	T="$BATS_TEST_TMPDIR"
}

# The handmade data set: sparse store ids, numeric and named products, a
# price without decimals and one with a single decimal.
write_sample() { # FILE [LINE-END]
	local eol="${2:-\n}"
	printf "$HEADER$eol" >"$1"
	printf "2025-03-01,7,101,2,3.49$eol" >>"$1"
	printf "2025-03-01,7,apples,1,0.99$eol" >>"$1"
	printf "2025-03-02,3,101,5,3.49$eol" >>"$1"
	printf "2025-04-15,7,202,1,10$eol" >>"$1"
	printf "2025-04-15,3,apples,3,1.1$eol" >>"$1"
	printf "2025-04-30,12,202,4,9.5$eol" >>"$1"
}

# Run sales on a CSV holding HEADER plus the given lines, and expect it to
# fail with exactly one stderr line matching PATTERN and no report file.
expect_bad_csv() { # NAME PATTERN [LINE...]
	local name="$1" pattern="$2"
	shift 2
	{ echo "$HEADER"; printf '%s\n' "$@"; } >"$T/$name.csv"
	expect_bad_input "$pattern" sales --input "$T/$name.csv"
}

expect_bad_input() { # PATTERN ARGS...
	local pattern="$1"
	shift
	run --separate-stderr cowrun -o "$T/out" "$@"
	[ "$status" -eq 255 ]
	[ -z "$output" ]
	echo "stderr: $stderr"
	[ "${#stderr_lines[@]}" -eq 1 ]
	[[ "$stderr" =~ $pattern ]]
	[ -z "$(ls -A "$T/out" 2>/dev/null)" ]
}

@test "sales: serial and fork at -j 1, 2, 7 and 0 give byte-identical output" {
	cowrun --mode serial -o "$T/serial" "${SMALL[@]}" >"$T/serial.txt"
	[ "$(ls "$T/serial" | wc -l)" -eq 6 ]
	[ -f "$T/serial/store-0001.txt" ]
	[ -f "$T/serial/store-0006.txt" ]
	for j in 1 2 7 0; do
		cowrun --mode fork -j "$j" -o "$T/j$j" "${SMALL[@]}" >"$T/j$j.txt"
		cmp "$T/serial.txt" "$T/j$j.txt"
		diff -r "$T/serial" "$T/j$j"
	done
}

@test "sales: the same seed gives the same data, another seed other data" {
	cowrun --mode serial -o "$T/a" "${SMALL[@]}" >"$T/a.txt"
	cowrun --mode serial -o "$T/b" "${SMALL[@]}" >"$T/b.txt"
	cowrun --mode serial -o "$T/c" "${SMALL[@]}" --seed 8 >"$T/c.txt"
	cmp "$T/a.txt" "$T/b.txt"
	diff -r "$T/a" "$T/b"
	run ! cmp -s "$T/a.txt" "$T/c.txt"
}

@test "sales: a handmade CSV gives the hand-computed totals" {
	write_sample "$T/sample.csv"
	run --separate-stderr cowrun -j 2 -o "$T/out" sales --input "$T/sample.csv"
	echo "$output"
	[ "$status" -eq 0 ]
	# 6.98 + 0.99 + 17.45 + 10.00 + 3.30 + 38.00 = 76.72 over 6 sales
	grep -Eq '^  Period +2025-03-01 to 2025-04-30 \(61 days\)$' <<<"$output"
	grep -Eq '^  Stores reported +3 of 3$' <<<"$output"
	grep -Eq '^  Transactions +6$' <<<"$output"
	grep -Eq '^  Units sold +16$' <<<"$output"
	grep -Eq '^  Revenue +\$76\.72$' <<<"$output"
	grep -Eq '^  Average per store +\$25\.57$' <<<"$output"
	grep -Eq '^  Average transaction +\$12\.79$' <<<"$output"
	# apples: list 1.10 (highest seen), one sold at 0.99; 202: 4 at 9.50 < 10.00
	grep -Eq '^  Discount given +\$2\.11$' <<<"$output"
	grep -Eq '^ +1 +0012 +\$38\.00 +49\.5% +1 +2025-04-30 \$38\.00$' <<<"$output"
	grep -Eq '^ +2 +0003 +\$20\.75 +27\.0% +2 +2025-03-02 \$17\.45$' <<<"$output"
	grep -Eq '^ +3 +0007 +\$17\.97 +23\.4% +3 +2025-04-15 \$10\.00$' <<<"$output"
	[ "$(ls "$T/out")" = "$(printf 'store-0003.txt\nstore-0007.txt\nstore-0012.txt')" ]
	grep -Eq '^  Revenue +\$17\.97$' "$T/out/store-0007.txt"
	grep -Eq '^  Trading days +2 of 61 \(first sale 2025-03-01, last sale 2025-04-15\)$' \
		"$T/out/store-0007.txt"
	grep -Eq '^ +1 +1 +\$10\.00 +\$10\.00 +\$10\.00  202$' "$T/out/store-0007.txt"
}

@test "sales: CRLF, a missing last newline, a BOM and blank lines read the same" {
	write_sample "$T/lf.csv"
	write_sample "$T/crlf.csv" '\r\n'
	head -c -1 "$T/lf.csv" >"$T/nonl.csv"
	{ printf '\xef\xbb\xbf'; cat "$T/lf.csv"; printf '\n\n'; } >"$T/bom.csv"
	cowrun -o "$T/lf" sales --input "$T/lf.csv" >"$T/lf.out"
	sed 1,2d "$T/lf.out" >"$T/lf.txt"
	for f in crlf nonl bom; do
		cowrun -o "$T/$f" sales --input "$T/$f.csv" >"$T/$f.out"
		sed 1,2d "$T/$f.out" >"$T/$f.txt"
		cmp "$T/lf.txt" "$T/$f.txt"
		diff -r -x '.cowrun-manifest.*' -I '^Source:' "$T/lf" "$T/$f"
	done
}

@test "sales: a missing file is one line naming it and the reason" {
	expect_bad_input "^cowrun: sales: cannot read '$T/nope.csv': No such file or directory$" \
		sales --input "$T/nope.csv"
}

@test "sales: an empty file is refused" {
	: >"$T/empty.csv"
	expect_bad_input "empty.csv: empty file \(expected the header '$HEADER'\)$" \
		sales --input "$T/empty.csv"
}

@test "sales: a header alone is refused: no data rows" {
	expect_bad_csv header-only "header-only.csv: no data rows$"
}

@test "sales: a header in another column order is refused, naming the expected one" {
	printf 'date,product,store,quantity,unit_price\n2025-01-01,1,1,1,1.00\n' >"$T/order.csv"
	expect_bad_input "order.csv:1: bad header 'date,product,store,quantity,unit_price' \(expected '$HEADER'\)$" \
		sales --input "$T/order.csv"
}

@test "sales: a bad date names the line" {
	expect_bad_csv date "date.csv:3: bad date '2025-02-30' \(expected a real date YYYY-MM-DD\)$" \
		2025-02-28,1,1,1,1.00 2025-02-30,1,1,1,1.00
	expect_bad_csv date2 "date2.csv:2: bad date '25-1-1'" 25-1-1,1,1,1,1.00
}

@test "sales: a negative or zero quantity names the line" {
	expect_bad_csv neg "neg.csv:2: bad quantity '-3' \(expected an integer from 1 to 1000000\)$" \
		2025-01-01,1,1,-3,1.00
	expect_bad_csv zero "zero.csv:3: bad quantity '0'" 2025-01-01,1,1,1,1.00 2025-01-02,1,1,0,1.00
}

@test "sales: a bad price names the line: not a number, three decimals" {
	expect_bad_csv abc "abc.csv:2: bad unit price 'abc' \(expected a price like 3\.49: at most 2 decimals" \
		2025-01-01,1,1,1,abc
	expect_bad_csv dec3 "dec3.csv:2: bad unit price '1\.234' \(expected a price like 3\.49" \
		2025-01-01,1,1,1,1.234
	expect_bad_csv negp "negp.csv:2: bad unit price '-1\.00'" 2025-01-01,1,1,1,-1.00
}

@test "sales: a wrong column count names the line and the count" {
	expect_bad_csv four "four.csv:2: expected 5 fields \($HEADER\), found 4$" 2025-01-01,1,1,1
	expect_bad_csv six "six.csv:3: expected 5 fields \($HEADER\), found 6$" \
		2025-01-01,1,1,1,1.00 2025-01-01,1,1,1,1.00,9
}

@test "sales: store id 0 is refused" {
	expect_bad_csv store0 "store0.csv:2: bad store '0' \(expected a positive integer id\)$" \
		2025-01-01,0,1,1,1.00
}

@test "sales: bad options are one line each" {
	expect_bad_input "^cowrun: sales: --rows: 'abc' is not a number$" sales --rows abc
	expect_bad_input "^cowrun: sales: --stores: '0' is out of range" sales --stores 0
	expect_bad_input "^cowrun: sales: bad --start-date '2025-13-01'" sales --start-date 2025-13-01 --rows 10
}

@test "sales: --help lists the options with their defaults" {
	run cowrun sales --help
	[ "$status" -eq 0 ]
	for o in input rows stores products days seed start-date; do
		grep -q -- "--$o" <<<"$output"
	done
	grep -q 'default 2025-01-01' <<<"$output"
}
