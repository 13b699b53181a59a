#!/usr/bin/env bats
# Out-of-tree workloads: make install, the template built against the
# installed header with pkg-config, and plugins that must be refused.

load helpers

# plugin CASE: build tests/fixtures/plugins/bad_plugins.c for CASE into $BATS_TEST_TMPDIR/CASE.so
plugin() {
	cc -std=gnu11 -fPIC -shared -I"$ROOT/runner" -D"CASE_$1" -o "$BATS_TEST_TMPDIR/$1.so" \
		"$ROOT/tests/fixtures/plugins/bad_plugins.c"
}

@test "make install DESTDIR=...: binary, header, pkg-config file, man page" {
	d="$BATS_TEST_TMPDIR/inst"
	make -s -C "$ROOT" install DESTDIR="$d" PREFIX=/opt/cowrun >/dev/null
	[ -x "$d/opt/cowrun/bin/cowrun" ]
	[ -f "$d/opt/cowrun/include/cowrun.h" ]
	[ -f "$d/opt/cowrun/share/man/man1/cowrun.1" ]
	grep -q '^prefix=/opt/cowrun$' "$d/opt/cowrun/lib/pkgconfig/cowrun.pc"
	[ "$(PKG_CONFIG_PATH="$d/opt/cowrun/lib/pkgconfig" pkg-config --modversion cowrun)" = "$("$COWRUN" --version | cut -d' ' -f2)" ]
}

@test "the template builds against an installed cowrun and runs in every mode" {
	d="$BATS_TEST_TMPDIR/inst"
	make -s -C "$ROOT" install DESTDIR="$d" PREFIX=/opt/cowrun >/dev/null
	cp -r "$ROOT/workloads/template" "$BATS_TEST_TMPDIR/mine"
	PKG_CONFIG_PATH="$d/opt/cowrun/lib/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$d" \
		make -s -C "$BATS_TEST_TMPDIR/mine" >/dev/null
	installed="$d/opt/cowrun/bin/cowrun"
	so="$BATS_TEST_TMPDIR/mine/libprimes.so"
	run --separate-stderr "$REAPER" "$installed" --mode serial -o "$BATS_TEST_TMPDIR/s" --workload "$so" --limit 1000000 --ranges 7
	[ "$status" -eq 0 ]
	[ "$output" = "primes below 1000000: 78498" ]
	for mode in "-j 2" "-j 7" "--mode omp -j 2"; do
		run --separate-stderr "$REAPER" "$installed" $mode -o "$BATS_TEST_TMPDIR/f" --workload "$so" --limit 1000000 --ranges 7
		[ "$status" -eq 0 ]
		[ "$output" = "primes below 1000000: 78498" ]
		diff -r "$BATS_TEST_TMPDIR/s" "$BATS_TEST_TMPDIR/f"
	done
	run --separate-stderr "$installed" --workload "$so" --help
	[[ "$output" == *"Usage: cowrun [RUNNER OPTIONS] primes [OPTIONS]"*"--limit N"*"(default 10000000)"* ]]
	run --separate-stderr "$installed" --workload "$so" --limit 5
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: primes: --limit: '5' is out of range*"
}

@test "a plugin built for another ABI version is refused" {
	plugin WRONG_ABI
	run --separate-stderr cowrun --workload "$BATS_TEST_TMPDIR/WRONG_ABI.so"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --workload: '$BATS_TEST_TMPDIR/WRONG_ABI.so' was built for workload ABI 42, this cowrun has ABI 1: rebuild it against this cowrun.h"
}

@test "a plugin without the cowrun_workload symbol is refused" {
	plugin OTHER_SYMBOL
	run --separate-stderr cowrun --workload "$BATS_TEST_TMPDIR/OTHER_SYMBOL.so"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --workload: '$BATS_TEST_TMPDIR/OTHER_SYMBOL.so' exports no 'cowrun_workload' symbol: not a cowrun workload"
}

@test "a plugin missing a required member is refused" {
	plugin NO_RUN
	run --separate-stderr cowrun --workload "$BATS_TEST_TMPDIR/NO_RUN.so"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --workload: '$BATS_TEST_TMPDIR/NO_RUN.so' defines no run()"
}

@test "a file that is not a shared object, or none at all, is refused" {
	printf 'not an ELF file\n' > "$BATS_TEST_TMPDIR/text.so"
	run --separate-stderr cowrun --workload "$BATS_TEST_TMPDIR/text.so"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --workload: cannot load '$BATS_TEST_TMPDIR/text.so': *"
	run --separate-stderr cowrun --workload "$BATS_TEST_TMPDIR/none.so"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --workload: cannot load '$BATS_TEST_TMPDIR/none.so': No such file or directory"
}

@test "a good minimal plugin runs" {
	plugin GOOD
	run --separate-stderr cowrun -j 2 --workload "$BATS_TEST_TMPDIR/GOOD.so"
	[ "$status" -eq 0 ]
	[ "$output" = "done" ]
}
