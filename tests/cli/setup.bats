#!/usr/bin/env bats
# Issue 10, sales' setup on the setup threads: the generated data set (and
# so stdout and every report) is the same at every thread count and in every
# mode; the parent still forks with one thread; --merge builds its state
# from the saved context without generating or reading any row.

load helpers

ARGS=(sales --rows 300000 --stores 12)

setup() {
	T="$BATS_TEST_TMPDIR"
}

# digest DIR STDOUT-FILE: one hash of the summary and every report.
digest() {
	{ cat "$2"; (cd "$1" && for f in *; do printf '%s\n' "$f"; cat "$f"; done); } | sha256sum
}

@test "setup: the same stdout and reports in serial, fork -j 1,2,3,7, omp -j 2 and 3 merged shards" {
	cowrun --mode serial -o "$T/serial" "${ARGS[@]}" >"$T/serial.txt"
	want=$(digest "$T/serial" "$T/serial.txt")
	[ "$(ls "$T/serial" | wc -l)" -eq 12 ]
	for j in 1 2 3 7; do
		cowrun -j "$j" -o "$T/f$j" "${ARGS[@]}" >"$T/f$j.txt"
		[ "$(digest "$T/f$j" "$T/f$j.txt")" = "$want" ]
	done
	cowrun --mode omp -j 2 -o "$T/omp" "${ARGS[@]}" >"$T/omp.txt"
	[ "$(digest "$T/omp" "$T/omp.txt")" = "$want" ]
	mkdir "$T/res"
	for k in 0 1 2; do
		cowrun -j 2 --shard "$k/3" -o "$T/shards" --save-results "$T/res/$k.res" \
			"${ARGS[@]}" >/dev/null
	done
	cowrun --merge "$T/res" -o "$T/merged" "${ARGS[@]}" >"$T/merged.txt"
	[ "$(digest "$T/shards" "$T/merged.txt")" = "$want" ]
}

@test "setup: another seed gives other data; stores differ in size" {
	cowrun -j 2 -o "$T/a" "${ARGS[@]}" >"$T/a.txt"
	cowrun -j 2 -o "$T/b" "${ARGS[@]}" --seed 2 >"$T/b.txt"
	! cmp -s "$T/a.txt" "$T/b.txt" || { echo "--seed 2 gave the same output" >&2; return 1; }
	# Flagships and late openers: the biggest store sells at least twice
	# what the smallest does.
	counts=$(for f in "$T"/a/store-*.txt; do
		awk '/^  Transactions / { gsub(",", "", $2); print $2; exit }' "$f"
	done | sort -n)
	[ "$(wc -l <<<"$counts")" -eq 12 ]
	max=$(tail -1 <<<"$counts")
	min=$(head -1 <<<"$counts")
	[ "$max" -ge $((2 * min)) ]
}

@test "setup: the parent forks with one thread after a threaded setup" {
	run --separate-stderr cowrun -v -j 2 -o "$T/o" sales --rows 200000
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"setup threads"* || "$(nproc)" -lt 2 ]]
	[[ "$stderr" == *", threads at fork 1"* ]]
}

@test "setup: --merge rebuilds the state from the saved context, without the input" {
	# If --merge ran setup it would read the CSV, which is gone by then.
	{
		echo 'date,store,product,quantity,unit_price'
		echo '2025-03-01,7,101,2,3.49'
		echo '2025-03-02,3,apples,5,1.10'
		echo '2025-04-15,12,202,1,10'
		echo '2025-04-30,7,202,4,9.5'
	} >"$T/in.csv"
	cowrun -j 2 -o "$T/direct" sales --input "$T/in.csv" >"$T/direct.txt"
	mkdir "$T/res"
	for k in 0 1; do
		cowrun --shard "$k/2" -o "$T/s" --save-results "$T/res/$k.res" \
			sales --input "$T/in.csv" >/dev/null
	done
	rm "$T/in.csv"
	run --separate-stderr cowrun -v --merge "$T/res" -o "$T/m" sales --input "$T/in.csv"
	[ "$status" -eq 0 ]
	[ "$output" = "$(cat "$T/direct.txt")" ]
	[[ "$stderr" == *"setup arena: 0 KiB used"* ]]   # no setup ran: a time would be load-dependent
}

@test "setup: --merge of generated data takes no generation, and refuses other arguments" {
	mkdir "$T/res"
	for k in 0 1; do
		cowrun --shard "$k/2" -o "$T/s" --save-results "$T/res/$k.res" "${ARGS[@]}" >/dev/null
	done
	run --separate-stderr cowrun -v --merge "$T/res" -o "$T/m" "${ARGS[@]}"
	[ "$status" -eq 0 ]
	[[ "$stderr" == *"setup arena: 0 KiB used"* ]]   # no setup ran: a time would be load-dependent
	run --separate-stderr cowrun --merge "$T/res" -o "$T/m" sales --rows 300000 --stores 13
	[ "$status" -eq 255 ]
	[[ "$stderr" == *"was saved by 'sales --rows 300000 --stores 12"* ]]
}
