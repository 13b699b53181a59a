#!/usr/bin/env bats
# The house in folders: build-aux/include-graph finds no include going up
# the layers, none into another folder's private header, no circle; the
# layout table of docs/how-it-works.md is the tree's; and the checker itself catches each
# kind of violation, planted in a copy of the tree.

load helpers

GRAPH="$ROOT/build-aux/include-graph"

# copy_tree: the checker and what it reads into $BATS_TEST_TMPDIR/t.
copy_tree() {
	T="$BATS_TEST_TMPDIR/t"
	mkdir -p "$T/build-aux"
	cp "$GRAPH" "$ROOT/build-aux/README" "$T/build-aux/"
	cp -r "$ROOT/runner" "$ROOT/include" "$ROOT/workloads" "$ROOT/docs" "$T/"
}

@test "tree: no include goes up, none into a private header, no circle" {
	run "$GRAPH" --check
	[ "$status" -eq 0 ]
	[[ "$output" == *"check: no include goes up, none reaches a private header, no circle"* ]]
	# Every layer is listed with its size.
	for d in cli serve run engine files workload os include; do
		[[ "$output" == *$'\n'"$d "* ]]
	done
}

@test "tree: every runner file lives in a folder with a README; no source is left at the top" {
	[ -z "$(find "$ROOT/runner" -maxdepth 1 -type f -name '*.[ch]')" ]
	for d in "$ROOT"/runner/*/ "$ROOT/include/"; do
		[ -s "$d/README" ]
	done
}

@test "tree: the manual's layout table (docs/how-it-works.md) is the one the tree gives" {
	expected=$("$GRAPH" --layout)
	actual=$(sed -n '/^<!-- layout: /,/^<!-- end of layout -->/p' "$ROOT/docs/how-it-works.md" | sed '1d;$d')
	[ -n "$actual" ]
	[ "$actual" = "$expected" ] || { echo "stale: run build-aux/readme-tables" >&2; return 1; }
}

@test "tree: an include going up the layers is caught, naming both ends" {
	copy_tree
	sed -i 's|#include "os/util.h"|#include "os/util.h"\n#include "run/run.h"|' "$T/runner/engine/batch.c"
	run "$T/build-aux/include-graph" --check
	[ "$status" -eq 1 ]
	[[ "$output" == *"up: engine/batch includes run/run (run is above engine in the layers)"* ]]
}

@test "tree: another folder's private header and a circle between modules are caught" {
	copy_tree
	echo '#include "engine/pool_internal.h"' >> "$T/runner/run/merge.c"
	echo '#include "run.h"' >> "$T/runner/run/config.c"
	run "$T/build-aux/include-graph" --check
	[ "$status" -eq 1 ]
	[[ "$output" == *"private: run/merge includes engine/pool:internal, private to engine/"* ]]
	[[ "$output" == *"circle in runner include: "*"run/config"* ]]
	[[ "$output" == *"check: 2 violation(s)"* ]]
}

@test "tree: a circle in a workload's folder is caught" {
	copy_tree
	echo '#include "report.h"' >> "$T/workloads/sales/index.c"
	printf '#include "index.h"\n' >> "$T/workloads/sales/report.c"
	[ -f "$T/workloads/sales/report.h" ] || echo '/* x */' > "$T/workloads/sales/report.h"
	[ -f "$T/workloads/sales/index.h" ] || echo '/* x */' > "$T/workloads/sales/index.h"
	run "$T/build-aux/include-graph" --check
	[ "$status" -eq 1 ]
	[[ "$output" == *"circle in workloads: "* ]]
}

@test "tree: a call going up the layers and a circle of calls are caught from the objects" {
	copy_tree
	# Two small modules, built: engine/zz calls into run/zz2, which calls back.
	echo 'void run_zz(void); void engine_zz(void); void engine_zz(void) { run_zz(); }' > "$T/runner/engine/zz.c"
	echo 'void engine_zz(void); void run_zz(void); void run_zz(void) { engine_zz(); }' > "$T/runner/run/zz2.c"
	mkdir -p "$T/build/runner/engine" "$T/build/runner/run"
	cc -c -o "$T/build/runner/engine/zz.o" "$T/runner/engine/zz.c"
	cc -c -o "$T/build/runner/run/zz2.o" "$T/runner/run/zz2.c"
	run "$T/build-aux/include-graph" --check
	[ "$status" -eq 1 ]
	[[ "$output" == *"calls between modules: from the objects in build/"* ]]
	[[ "$output" == *"up: engine/zz calls into run/zz2 (run is above engine in the layers)"* ]]
	[[ "$output" == *"circle of calls: "*"engine/zz"* ]]
}

@test "tree: the manual's dependency table (docs/install.md) is the Makefile's" {
	expected=$(make -s -C "$ROOT" print-deps)
	actual=$(sed -n '/^<!-- deps: /,/^<!-- end of deps -->/p' "$ROOT/docs/install.md" | sed '1d;$d')
	[ -n "$actual" ]
	[ "$actual" = "$expected" ] ||
		{ diff <(echo "$expected") <(echo "$actual") >&2; echo "stale: run build-aux/readme-tables" >&2; return 1; }
}

# clean_copy DIR: the source tree as a fresh clone has it (nothing built).
clean_copy() {
	mkdir -p "$1"
	tar -C "$ROOT" --exclude=./.git --exclude=./build --exclude=./bin --exclude=./build-asan \
		--exclude=./build-fuzz --exclude=./build-valgrind --exclude=./build-mutants \
		--exclude=./out --exclude=./results --exclude=./plots/out -cf - . | tar -C "$1" -xf -
}

# A newcomer, and any packaging script, types `make` first: it must build.
# A bundled workload whose libraries are missing is skipped with one line.
# CFLAGS=-O0 comes from the environment, as a packaging script's
# (dpkg-buildflags) does: what this test checks is the clean tree's make
# (no goal named, its folders made, the default goal, the skip), not the
# optimizer, whose -O2 compile of these very sources the checkout's own
# build has done; -O0 halves the test's CPU.
@test "tree: a bare make on a clean tree builds bin/cowrun and the bundled workloads; one whose libraries are missing is skipped" {
	local T="$BATS_TEST_TMPDIR/clean"
	clean_copy "$T"
	[ ! -e "$T/bin" ] && [ ! -e "$T/build" ]
	# No goal named; -j2 for the suite's time only (the parent's jobserver dropped).
	CFLAGS=-O0 MAKEFLAGS=-j2 run make -C "$T" --no-print-directory
	[ "$status" -eq 0 ]
	[ -x "$T/bin/cowrun" ]
	[ -f "$T/build/workloads/risk.so" ] && [ -f "$T/build/workloads/risk.summary" ]
	run "$T/bin/cowrun" --version
	[ "$status" -eq 0 ]
	# risk's header made unfindable, as on a machine without liblapacke-dev.
	rm "$T"/build/workloads/risk.*
	CFLAGS=-O0 MAKEFLAGS=-j2 run make -C "$T" --no-print-directory risk_HEADER=no-such-lapacke.h
	[ "$status" -eq 0 ]
	[ ! -e "$T/build/workloads/risk.so" ]
	[ "$(grep -c skipping <<<"$output")" -eq 1 ]
	[[ "$output" == *"make: skipping the bundled workload risk: its libraries are missing (Debian: liblapacke-dev libopenblas-dev); run make deps, then make"* ]]
	# Asked for, it says how to get it.
	run "$T/bin/cowrun" risk
	[ "$status" -eq 255 ]
	[[ "$output" == *"risk: its library risk.so is not installed"*"make deps, then make"* ]]
}
