#!/usr/bin/env bats
# The map: every folder has a README naming its modules, workloads include
# only the contract and their own headers, compare/ and tools/ only the
# runner headers their README lists; build-aux/include-graph --check fails
# on each, here planted in a copy of the tree (the checkout is never
# touched).  Nothing is built in the copy, so its last line must say the
# calls were not checked.

load helpers

# copy_tree: what the checker reads, into $T (no build/: calls unchecked).
copy_tree() {
	T="$BATS_TEST_TMPDIR/t"
	mkdir -p "$T/build-aux"
	cp "$ROOT/build-aux/include-graph" "$ROOT/build-aux/README" "$T/build-aux/"
	cp -r "$ROOT/runner" "$ROOT/include" "$ROOT/workloads" "$ROOT/docs" \
		"$ROOT/compare" "$ROOT/tools" "$T/"
}

check_copy() {
	run "$T/build-aux/include-graph" --check
}

@test "map: a copy of the tree passes, and its last line says the calls were not checked" {
	copy_tree
	check_copy
	[ "$status" -eq 0 ]
	[[ "${lines[-1]}" == "check: no include goes up"*"every folder has a README naming its modules"*"calls: not checked (nothing built: make first)" ]]
}

@test "map: a workload including a runner header fails, quoted or bracketed, naming the file" {
	copy_tree
	sed -i 's|#include "cowrun.h"|#include "cowrun.h"\n#include "engine/task.h"|' "$T/workloads/average.c"
	echo '#include <os/util.h>' >> "$T/workloads/sales/index.c"
	echo '#include "../sales/sales.h"' >> "$T/workloads/risk/util.c"
	check_copy
	[ "$status" -eq 1 ]
	[[ "$output" == *"workload: workloads/average.c includes the runner's engine/task.h"* ]]
	[[ "$output" == *"workload: workloads/sales/index.c includes the runner's os/util.h"* ]]
	[[ "$output" == *"workload: workloads/risk/util.c includes ../sales/sales.h, outside its folder"* ]]
	[[ "${lines[-1]}" == "check: 3 violation(s); calls: not checked (nothing built: make first)" ]]
}

@test "map: a folder without a README fails, a top-level one or one holding sources" {
	copy_tree
	rm "$T/workloads/risk/README" "$T/tools/README"
	mkdir "$T/newtop"
	check_copy
	[ "$status" -eq 1 ]
	[[ "$output" == *"readme: workloads/risk/ has no README"* ]]
	[[ "$output" == *"readme: tools/ has no README"* ]]
	[[ "$output" == *"readme: newtop/ has no README"* ]]
	# tools/ without its README lists nothing it may include.
	[[ "$output" == *"tools: tools/supervise.c includes the runner's os/spawnattr.h"* ]]
	[[ "${lines[-1]}" == "check: 4 violation(s);"* ]]
}

@test "map: a module its folder's README does not name fails: a C module, a header alone, a program" {
	copy_tree
	echo 'int zz_mod(void); int zz_mod(void) { return 0; }' > "$T/runner/engine/zzmod.c"
	echo '/* x */' > "$T/workloads/sales/zzhdr.h"
	# Named as a word only: inside another name it does not count.
	echo 'old_zzhdr.h, zzhdr.hpp, zzhdr.h2: not it' >> "$T/workloads/sales/README"
	printf '#!/bin/sh\n' > "$T/compare/bench-zz" && chmod +x "$T/compare/bench-zz"
	# A private header belongs to its module: named with it, nothing more asked.
	echo '/* x */' > "$T/runner/run/run_internal.h"
	check_copy
	[ "$status" -eq 1 ]
	[[ "$output" == *"readme: runner/engine/README does not name the module zzmod (zzmod.c zzmod.h)"* ]]
	[[ "$output" == *"readme: workloads/sales/README does not name the module zzhdr"* ]]
	[[ "$output" == *"readme: compare/README does not name the module bench-zz"* ]]
	[[ "${lines[-1]}" == "check: 3 violation(s);"* ]]
	# Named, it passes.
	echo 'zzmod.c      a test' >> "$T/runner/engine/README"
	echo 'zzhdr.h      a test' >> "$T/workloads/sales/README"
	echo 'bench-zz     a test' >> "$T/compare/README"
	check_copy
	[ "$status" -eq 0 ]
}

@test "map: compare/ and tools/ include only the runner headers their README lists; tools/ only header-only ones" {
	copy_tree
	echo '#include "engine/task.h"' >> "$T/compare/psswatch.c"
	sed -i 's|^may include: os/spawnattr.h$|may include: os/spawnattr.h os/util.h|' "$T/tools/README"
	echo '#include "os/util.h"' >> "$T/tools/lineprinter.c"
	check_copy
	[ "$status" -eq 1 ]
	[[ "$output" == *"compare: compare/psswatch.c includes the runner's engine/task.h, which compare/README does not list after 'may include:'"* ]]
	[[ "$output" == *"tools: tools/lineprinter.c includes the runner's os/util.h, which has code (runner/os/util.c)"* ]]
	[[ "${lines[-1]}" == "check: 2 violation(s);"* ]]
	# The list is read from the README: listed, the probe passes.
	sed -i 's|^may include: \(.*\)$|may include: \1 engine/task.h|' "$T/compare/README"
	sed -i '$d' "$T/tools/lineprinter.c"
	check_copy
	[ "$status" -eq 0 ]
}
