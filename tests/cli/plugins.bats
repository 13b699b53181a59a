#!/usr/bin/env bats
# Out-of-tree workloads: make install, the template built against the
# installed header with pkg-config, and plugins that must be refused.

load helpers

# One staged install (make install DESTDIR=...) for the tests that run
# what it installed; each copies it, as some remove files from theirs.
# The install and uninstall test makes its own.
setup_file() {
	make -s -C "$ROOT" install DESTDIR="$BATS_FILE_TMPDIR/inst" prefix=/opt/cowrun >/dev/null
}

# staged_install: that install, copied into $BATS_TEST_TMPDIR/inst ($d).
staged_install() {
	d="$BATS_TEST_TMPDIR/inst"
	cp -a "$BATS_FILE_TMPDIR/inst" "$d"
}

# plugin CASE: build tests/fixtures/plugins/bad_plugins.c for CASE into $BATS_TEST_TMPDIR/CASE.so
plugin() {
	cc -std=gnu11 -fPIC -shared -I"$ROOT/include" -D"CASE_$1" -o "$BATS_TEST_TMPDIR/$1.so" \
		"$ROOT/tests/fixtures/plugins/bad_plugins.c"
}

@test "make install DESTDIR=...: binaries (cowrun-lineprinter too), header, pkg-config file, man page; make uninstall removes them" {
	d="$BATS_TEST_TMPDIR/inst"
	make -s -C "$ROOT" install DESTDIR="$d" PREFIX=/opt/cowrun >/dev/null
	[ -x "$d/opt/cowrun/bin/cowrun" ]
	[ -x "$d/opt/cowrun/bin/cowrun-cluster" ]
	[ -x "$d/opt/cowrun/bin/cowrun-lineprinter" ]
	[ -x "$d/opt/cowrun/libexec/cowrun/cowrun-supervise" ]
	[ -f "$d/opt/cowrun/lib/cowrun/workloads/risk.summary" ]
	[ -f "$d/opt/cowrun/include/cowrun.h" ]
	[ -f "$d/opt/cowrun/share/man/man1/cowrun.1" ]
	grep -q '^prefix=/opt/cowrun$' "$d/opt/cowrun/lib/pkgconfig/cowrun.pc"
	[ "$(PKG_CONFIG_PATH="$d/opt/cowrun/lib/pkgconfig" pkg-config --modversion cowrun)" = "$(cowrun --version | cut -d' ' -f2)" ]
	make -s -C "$ROOT" uninstall DESTDIR="$d" PREFIX=/opt/cowrun >/dev/null
	[ -z "$(find "$d" -type f)" ]
}

@test "the template builds against an installed cowrun and runs in every mode" {
	staged_install
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
	run --separate-stderr "$REAPER" "$installed" --workload "$so" --help
	[[ "$output" == *"Usage: cowrun [RUNNER OPTIONS] primes [OPTIONS]"*"--limit N"*"(default 10000000)"* ]]
	run --separate-stderr "$REAPER" "$installed" --workload "$so" --limit 5
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: primes: --limit: '5' is out of range*"
}

@test "a plugin built for another ABI version is refused" {
	plugin WRONG_ABI
	run --separate-stderr cowrun --workload "$BATS_TEST_TMPDIR/WRONG_ABI.so"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --workload: '$BATS_TEST_TMPDIR/WRONG_ABI.so' was built for workload ABI 42, this cowrun has ABI 4 (and reads 1 to 3): rebuild it against this cowrun.h"
}

@test "a plugin built for ABI 1 still runs, saves and merges; nothing past its struct is read" {
	plugin ABI1
	run --separate-stderr cowrun -o "$BATS_TEST_TMPDIR/out" --workload "$BATS_TEST_TMPDIR/ABI1.so"
	[ "$status" -eq 0 ]
	[ "$output" = "done" ]
	cowrun --save-results "$BATS_TEST_TMPDIR/old.res" --workload "$BATS_TEST_TMPDIR/ABI1.so"
	run --separate-stderr cowrun --merge "$BATS_TEST_TMPDIR/old.res" --workload "$BATS_TEST_TMPDIR/ABI1.so"
	[ "$status" -eq 0 ]
	[ "$output" = "done" ]
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

@test "report names that collide or are no file name are refused before any task; nothing written" {
	plugin SAME_NAMES
	run --separate-stderr cowrun -o "$BATS_TEST_TMPDIR/out" --workload "$BATS_TEST_TMPDIR/SAME_NAMES.so"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: names: two tasks are both named 'report-0'"
	[ ! -e "$BATS_TEST_TMPDIR/out" ]
	plugin SLASH_NAME
	run --separate-stderr cowrun -o "$BATS_TEST_TMPDIR/out" --workload "$BATS_TEST_TMPDIR/SLASH_NAME.so"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: names: task 2 has name 'sub/escape', which cannot be a report file name"
	[ ! -e "$BATS_TEST_TMPDIR/out" ]
	[ ! -e "$BATS_TEST_TMPDIR/sub" ]
}

@test "a good minimal plugin runs" {
	plugin GOOD
	run --separate-stderr cowrun -j 2 --workload "$BATS_TEST_TMPDIR/GOOD.so"
	[ "$status" -eq 0 ]
	[ "$output" = "done" ]
}

# ---- bundled workloads: shared objects found by name -------------------------

RISK_SMALL=(risk --assets 20 --days 60 --portfolios 5 --positions 8 --scenarios 500 --seed 3)

@test "bin/cowrun links no BLAS, LAPACK or Fortran library: risk.so does" {
	run ldd "$COWRUN"
	[ "$status" -eq 0 ]
	[[ "$output" == *libc.so* ]]
	if grep -Ei 'blas|lapack|gfortran|quadmath' <<<"$output"; then
		echo "bin/cowrun links a workload's library" >&2
		return 1
	fi
	run ldd "$ROOT/build/workloads/risk.so"
	[ "$status" -eq 0 ]
	[[ "$output" == *liblapacke* ]]
	[[ "$output" == *libopenblas* ]]
}

@test "make install: risk runs from the staged tree, from its own lib/cowrun/workloads, and --list names it" {
	staged_install
	installed="$d/opt/cowrun/bin/cowrun"
	[ -f "$d/opt/cowrun/lib/cowrun/workloads/risk.so" ]
	run --separate-stderr "$REAPER" "$installed" -j 2 -o "$BATS_TEST_TMPDIR/staged" "${RISK_SMALL[@]}"
	[ "$status" -eq 0 ]
	[[ "$output" == *"VaR"* ]]
	staged=$output
	run --separate-stderr cowrun -j 2 -o "$BATS_TEST_TMPDIR/checkout" "${RISK_SMALL[@]}"
	[ "$status" -eq 0 ]
	[ "$output" = "$staged" ]
	diff -r "$BATS_TEST_TMPDIR/checkout" "$BATS_TEST_TMPDIR/staged"
	# Its report commands run under its own libexec/cowrun/cowrun-supervise;
	# without it, each task fails in one line saying where it looked.
	run --separate-stderr "$REAPER" "$installed" -o "$BATS_TEST_TMPDIR/sup" --report-filter cat selftest --tasks 2 --report-bytes 10
	[ "$status" -eq 0 ] || { echo "$stderr" >&2; return 1; }
	rm "$d/opt/cowrun/libexec/cowrun/cowrun-supervise"
	run --separate-stderr "$REAPER" "$installed" -o "$BATS_TEST_TMPDIR/nosup" --report-filter cat selftest --tasks 2 --report-bytes 10
	[ "$status" -eq 2 ]
	[ "$(grep -c "failed: cannot run 'cat': no cowrun-supervise in $d/opt/cowrun/bin or .*/libexec/cowrun/cowrun-supervise (make, or make install)$" <<<"$stderr")" -eq 2 ] ||
		{ echo "$stderr" >&2; return 1; }
	run --separate-stderr "$REAPER" "$installed" --list
	[ "$status" -eq 0 ]
	[[ "$output" == *$'\nrisk       nightly portfolio risk: Monte Carlo VaR and ES per portfolio (LAPACK)'* ]]
	# Without its library: one line saying which and where it looked.
	rm "$d/opt/cowrun/lib/cowrun/workloads/risk.so"
	run --separate-stderr "$REAPER" "$installed" -o "$BATS_TEST_TMPDIR/none" "${RISK_SMALL[@]}"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: risk: its library risk.so is not installed: looked in $d/opt/cowrun/bin/../lib/cowrun/workloads, *"
	[ ! -e "$BATS_TEST_TMPDIR/none" ]
}

@test "make install with a custom libdir and bindir: the installed cowrun finds risk.so there, and only there" {
	# Built in a copy: another libdir recompiles plugin.o, and this
	# checkout's bin/cowrun is what every other test runs.  The copy
	# takes the checkout's build/ and bin/ along (tar keeps their times),
	# so make recompiles only what the new directories change (plugin.o
	# and registry.o, through build/plugin-config) and relinks: the rest
	# is the checkout's own build of these very sources.  Not where that
	# build has flags of its own (build/.cflags: check-asan's copy), which
	# this make, with the default flags, could not link with: there the
	# copy is built from scratch.
	src="$BATS_TEST_TMPDIR/src" d="$BATS_TEST_TMPDIR/inst"
	local built=(--exclude=./build --exclude=./bin)
	[ -e "$ROOT/build/.cflags" ] || built=(--exclude=./build/tests)
	mkdir "$src"
	# (Not by git ls-files: check-asan's copy of the tree has no .git.)
	tar -C "$ROOT" --exclude=./.git "${built[@]}" --exclude=./build-asan --exclude=./build-valgrind \
		--exclude=./build-fuzz --exclude=./build-mutants \
		--exclude=./results --exclude=./out -cf - . | tar -xf - -C "$src"
	make -s -C "$src" -j2 install DESTDIR="$d" prefix=/opt/cw libdir=/opt/cw/lib64/x86_64 \
		bindir=/opt/cw/sbin >/dev/null
	installed="$d/opt/cw/sbin/cowrun"
	[ -f "$d/opt/cw/lib64/x86_64/cowrun/workloads/risk.so" ]
	[ ! -e "$d/opt/cw/lib/cowrun" ]
	# Not beside a checkout's build/: only the installed path can serve.
	rm -rf "$src/build/workloads"
	run --separate-stderr "$REAPER" "$installed" -j 2 -o "$BATS_TEST_TMPDIR/custom" "${RISK_SMALL[@]}"
	[ "$status" -eq 0 ]
	[[ "$output" == *"VaR"* ]]
	rm "$d/opt/cw/lib64/x86_64/cowrun/workloads/risk.so"
	run --separate-stderr "$REAPER" "$installed" -o "$BATS_TEST_TMPDIR/none" "${RISK_SMALL[@]}"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: risk: its library risk.so is not installed: looked in $d/opt/cw/sbin/../lib64/x86_64/cowrun/workloads, *"
}

@test "COWRUN_WORKLOAD_PATH: a workload found by name; --list reads its summary file and loads nothing" {
	plugin LOUD
	mkdir "$BATS_TEST_TMPDIR/wl"
	mv "$BATS_TEST_TMPDIR/LOUD.so" "$BATS_TEST_TMPDIR/wl/tiny.so"
	echo "one task, from its summary file" > "$BATS_TEST_TMPDIR/wl/tiny.summary"
	cp "$BATS_TEST_TMPDIR/wl/tiny.so" "$BATS_TEST_TMPDIR/wl/nosummary.so"
	export COWRUN_WORKLOAD_PATH="$BATS_TEST_TMPDIR/nonexistent:$BATS_TEST_TMPDIR/wl"
	run --separate-stderr cowrun --list
	[ "$status" -eq 0 ]
	[ -z "$stderr" ]
	[[ "$output" == *$'\ntiny       one task, from its summary file'* ]]
	[[ "$output" == *$'\nnosummary  (no summary: nosummary.summary is missing)'* ]]
	run --separate-stderr cowrun -j 2 -o "$BATS_TEST_TMPDIR/out" tiny
	[ "$status" -eq 0 ]
	[ "$output" = "done" ]
	[[ "$stderr" == *"tiny: loaded"* ]]
	# A file whose workload has another name is refused (after the
	# constructor's line: it was loaded to find out).
	run --separate-stderr cowrun nosummary
	[ "$status" -eq 255 ]
	[ "$stderr" = "tiny: loaded"$'\n'"cowrun: nosummary: '$BATS_TEST_TMPDIR/wl/nosummary.so' holds the workload 'tiny', not 'nosummary'" ]
}

@test "a workload whose own library is missing is refused with the loader's reason" {
	mkdir "$BATS_TEST_TMPDIR/wl"
	echo 'int cowrun_gone(void) { return 1; }' > "$BATS_TEST_TMPDIR/gone.c"
	cc -shared -fPIC -o "$BATS_TEST_TMPDIR/libcowrungone.so" "$BATS_TEST_TMPDIR/gone.c"
	cc -std=gnu11 -fPIC -shared -I"$ROOT/include" -o "$BATS_TEST_TMPDIR/wl/tiny.so" \
		"$ROOT/tests/fixtures/plugins/bad_plugins.c" -Wl,--no-as-needed -L"$BATS_TEST_TMPDIR" -lcowrungone
	rm "$BATS_TEST_TMPDIR/libcowrungone.so"
	COWRUN_WORKLOAD_PATH="$BATS_TEST_TMPDIR/wl" run --separate-stderr cowrun tiny
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: tiny: cannot load '$BATS_TEST_TMPDIR/wl/tiny.so': libcowrungone.so: cannot open shared object file: No such file or directory"
}

@test "one thread in the parent at fork and in serial mode, risk (OpenBLAS) included" {
	for w in "selftest --tasks 4" "${RISK_SMALL[*]}"; do
		run --separate-stderr env -u OPENBLAS_NUM_THREADS "$REAPER" "$COWRUN" -v -j 2 -o "$BATS_TEST_TMPDIR/f" $w
		[ "$status" -eq 0 ]
		[[ "$stderr" == *", threads at fork 1"* ]]
		run --separate-stderr env -u OPENBLAS_NUM_THREADS "$REAPER" "$COWRUN" -v --mode serial -o "$BATS_TEST_TMPDIR/s" $w
		[ "$status" -eq 0 ]
		[[ "$stderr" == *"tasks in this process, threads 1"* ]]
	done
	# The count is real: a BLAS pool the user asks for shows.
	[ "$(nproc)" -ge 2 ] || skip "needs 2 CPUs for a second OpenBLAS thread"
	run --separate-stderr env OPENBLAS_NUM_THREADS=2 "$REAPER" "$COWRUN" -v -j 2 -o "$BATS_TEST_TMPDIR/f" "${RISK_SMALL[@]}"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *", threads at fork 2"* ]]
}
