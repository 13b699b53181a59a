#!/usr/bin/env bats
# CLI tests of the sales CSV loader (workloads/sales/csv_*.c), which reads a
# file in fixed parts on the setup threads: the same stdout and reports at
# every -j and in every mode, whatever the part size, from a file or a
# pipe; and the first bad line in file order, with the same message and
# line number, wherever it lies.  COWRUN_SALES_CSV_PART (bytes, for tests
# only) cuts a small file into many parts.

load helpers

HEADER='date,store,product,quantity,unit_price'
MAKE_CSV="$ROOT/tests/helpers/make-sales-csv"

setup() {
	T="$BATS_TEST_TMPDIR"
	"$MAKE_CSV" 3000 9 5 >"$T/s.csv" # about 78 KB: 20 parts of 4 KiB
}

# Run sales on $T/s.csv with the given runner options; stdout to $T/NAME.out,
# reports under $T/NAME.
run_csv() { # NAME OPTIONS...
	local name=$1
	shift
	cowrun -o "$T/$name" "$@" sales --input "$T/s.csv" >"$T/$name.out"
}

@test "sales csv: a file in many parts gives the same output at every -j and in every mode" {
	COWRUN_SALES_CSV_PART=4096 run_csv j1 -j 1
	grep -q 'Stores reported *9 of 9' "$T/j1.out"
	for opts in "-j 2" "-j 3" "--mode serial" "--mode omp -j 2"; do
		name=$(echo "$opts" | tr -d ' -')
		COWRUN_SALES_CSV_PART=4096 run_csv "$name" $opts
		cmp "$T/j1.out" "$T/$name.out"
		diff -r -x '.cowrun-manifest.*' "$T/j1" "$T/$name"
	done
	# the part size changes nothing either: one part, parts of 1 byte
	run_csv whole -j 2
	COWRUN_SALES_CSV_PART=1 run_csv tiny -j 2
	for name in whole tiny; do
		cmp "$T/j1.out" "$T/$name.out"
		diff -r -x '.cowrun-manifest.*' "$T/j1" "$T/$name"
	done
}

@test "sales csv: a pipe gives the output of the file, in many parts too" {
	run_csv file -j 2
	COWRUN_SALES_CSV_PART=4096 cowrun -o "$T/pipe" -j 2 sales --input /dev/stdin \
		<"$T/s.csv" >"$T/pipe.out"
	sed -i "s|/dev/stdin|$T/s.csv|" "$T/pipe.out" "$T"/pipe/*
	cmp "$T/file.out" "$T/pipe.out"
	diff -r -x '.cowrun-manifest.*' "$T/file" "$T/pipe"
}

@test "sales csv: CRLF, a byte order mark and blank lines across parts" {
	run_csv lf -j 2
	{ printf '\xef\xbb\xbf'; awk '{ printf "%s\r\n", $0 } NR == 1000 { printf "\r\n\n" }' "$T/s.csv"; echo; } >"$T/crlf.csv"
	mv "$T/crlf.csv" "$T/s.csv"
	for j in 1 3; do
		COWRUN_SALES_CSV_PART=4096 run_csv "crlf$j" -j $j
		cmp "$T/lf.out" "$T/crlf$j.out"
		diff -r -x '.cowrun-manifest.*' "$T/lf" "$T/crlf$j"
	done
}

# Put LINE (printf %b escapes: \\0 for a NUL) as line number N of $T/s.csv.
insert_line() { # N LINE
	{ head -n $(($1 - 1)) "$T/s.csv"; printf '%b\n' "$2"; tail -n +"$1" "$T/s.csv"; } >"$T/x.csv"
	mv "$T/x.csv" "$T/s.csv"
}

# The run fails at every -j with one line matching PATTERN, no report.
# PART: the part size (default 4096; empty: the real one).
expect_first_error() { # PATTERN
	for j in 1 2 3; do
		COWRUN_SALES_CSV_PART=${PART-4096} run --separate-stderr cowrun -o "$T/out" -j $j \
			sales --input "$T/s.csv"
		[ "$status" -eq 255 ]
		assert_one_line_error "$1"
		[ ! -e "$T/out" ]
	done
}

@test "sales csv: a bad line in the first part, a middle part, or last, is named by its line number" {
	cp "$T/s.csv" "$T/good.csv"
	insert_line 3 '2025-13-01,1,1,1,1.00'
	expect_first_error "cowrun: sales: $T/s.csv:3: bad date '2025-13-01' (expected a real date YYYY-MM-DD)"
	cp "$T/good.csv" "$T/s.csv"
	insert_line 1501 '2025-01-01,1,1,1,1.001'
	expect_first_error "cowrun: sales: $T/s.csv:1501: bad unit price '1.001' *"
	cp "$T/good.csv" "$T/s.csv"
	printf '2025-01-01,1,1,1' >>"$T/s.csv" # the last line, without its newline
	expect_first_error "cowrun: sales: $T/s.csv:3002: expected 5 fields ($HEADER), found 4"
}

@test "sales csv: of bad lines in several parts, the first in the file is named" {
	insert_line 2900 'x'
	insert_line 2000 '2025-01-01,1,Bad\001Name,1,1'
	insert_line 1200 '2025-01-01,1,1,1,1\0'
	expect_first_error "cowrun: sales: $T/s.csv:1200: NUL byte in line"
}

@test "sales csv: the total-revenue limit names the same line whatever the parts" {
	{
		echo "$HEADER"
		for i in $(seq 120); do echo "2025-01-0$((i % 9 + 1)),$((i % 7 + 1)),$i,1000000,1000000.00"; done
	} >"$T/s.csv"
	# 9.22e15 cents / 1e14 a row: the 93rd row, line 94, passes it
	for part in 64 4096 ""; do
		PART=$part expect_first_error "cowrun: sales: $T/s.csv:94: total revenue too large"
	done
	# a bad line after the overflowing one changes nothing; one before it wins
	insert_line 100 'x'
	expect_first_error "cowrun: sales: $T/s.csv:94: total revenue too large"
	insert_line 50 'x'
	expect_first_error "cowrun: sales: $T/s.csv:50: expected 5 fields ($HEADER), found 1"
}

@test "sales csv: a header longer than a part, and a data line spanning many parts" {
	printf '%s\n' "$HEADER$(printf 'x%.0s' $(seq 300))" 2025-01-01,1,1,1,1 >"$T/s.csv"
	PART=16 expect_first_error "cowrun: sales: $T/s.csv:1: bad header '${HEADER}xxxxxxxxxxxxxxxxxxxxxx' (expected '$HEADER')"
	printf '%s\n' "$HEADER" 2025-01-01,1,1,1,1 "2025-01-01,1,1,1,1$(printf '0%.0s' $(seq 300))" >"$T/s.csv"
	for part in 16 4096; do
		PART=$part expect_first_error "cowrun: sales: $T/s.csv:3: bad unit price '$(printf '1%039d' 0)' *"
	done
}

# A file that changes between the two passes: a preloaded pread() that
# alters the first part's bytes on their second read (skipped without cc).
@test "sales csv: a file changed between the passes is one clear error" {
	command -v cc >/dev/null || skip "no C compiler for the pread shim"
	cat >"$T/shim.c" <<'SHIM'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
/* SHIM_MODE=flip: change a byte; =short: end the file early. */
ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	static int reads;
	ssize_t (*real)(int, void *, size_t, off_t) =
		(ssize_t (*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread");
	char link[64], path[4096];
	ssize_t len;
	const char *mode = getenv("SHIM_MODE");

	snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
	len = readlink(link, path, sizeof path - 1);
	path[len > 0 ? len : 0] = '\0';
	if (off != 0 || len < 5 || strcmp(path + len - 5, "s.csv") != 0 ||
	    __atomic_add_fetch(&reads, 1, __ATOMIC_SEQ_CST) != 2)
		return real(fd, buf, n, off);
	if (strcmp(mode, "short") == 0)
		return 0;
	ssize_t r = real(fd, buf, n, off);
	if (r > 100)
		((char *)buf)[100] ^= 1;
	return r;
}
SHIM
	cc -shared -fPIC -o "$T/shim.so" "$T/shim.c" -ldl
	for mode in flip short; do
		for j in 1 2; do
			# (Under make check-asan the shim comes before ASan's
			# runtime in the library list, which ASan must be told.)
			SHIM_MODE=$mode LD_PRELOAD="$T/shim.so" COWRUN_SALES_CSV_PART=4096 \
				ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0" \
				run --separate-stderr cowrun -o "$T/out" -j $j sales --input "$T/s.csv"
			[ "$status" -eq 255 ]
			assert_one_line_error "cowrun: sales: cannot read '$T/s.csv': the file changed while it was read"
			[ ! -e "$T/out" ]
		done
	done
	# without the shim, the same file loads
	run_csv ok -j 2
}
