#!/usr/bin/env bats
# Nothing silently wrong (issue 12): every frame of a saved results file
# and of a resume journal carries a checksum, so a damaged or cut file is
# refused (or, for a journal's tail, dropped and the tasks run again) and
# never gives a summary that differs from the undamaged run's.

load helpers

SALES=(sales --rows 20000 --stores 6 --seed 7)
DAMAGE="$ROOT/tests/helpers/damage"

# The undamaged run's summary, once for the file: every test compares with it.
setup_file() {
	REF=$(cowrun --mode serial "${SALES[@]}") || { echo "the reference run failed" >&2; return 1; }
	export REF
}

setup() {
	D=$BATS_TEST_TMPDIR
}

# frame_at FILE N: "OFFSET TYPE TASK LENGTH" of frame N (0: the identity).
frame_at() {
	perl -e 'open F, "<:raw", $ARGV[0] or die; local $/; my $d = <F>; my $at = 0;
		for (1 .. $ARGV[1]) { $at += 32 + unpack("Q<", substr($d, $at + 16, 8)) }
		my ($t, $m, $k, $n) = unpack("VVQ<Q<", substr($d, $at, 24));
		print "$at $t $k $n\n"' "$@"
}

# judge WHAT FILE: after `run`, the outcome is the reference summary
# (exit 0) or a refusal (exit 255, one line naming FILE, nothing on
# stdout).  Counts into ok/refused; anything else is a failure, said.
judge() {
	if [ "$status" -eq 0 ] && [ "$output" = "$REF" ]; then
		ok=$((ok + 1))
	elif [ "$status" -eq 255 ] && [ -z "$output" ] && [[ "$stderr" == *"'$2'"* ]] &&
		[ "$(printf '%s\n' "$stderr" | grep -c .)" -eq 1 ]; then
		refused=$((refused + 1))
	else
		echo "$1: status $status, stderr: $stderr" >&2
		[ "$status" -ne 0 ] || [ "$output" = "$REF" ] || echo "$1: A DIFFERENT SUMMARY" >&2
		bad=$((bad + 1))
	fi
}

@test "integrity: 200 byte flips and 50 cuts of saved results: refused or identical, never different" {
	for k in 0 1 2; do
		cowrun --shard "$k/3" --save-results "$D/s$k.res" "${SALES[@]}"
	done
	run --separate-stderr cowrun --merge "$D/s0.res" --merge "$D/s1.res" --merge "$D/s2.res" "${SALES[@]}"
	[ "$status" -eq 0 ]
	[ "$output" = "$REF" ]
	mkdir "$D/bad"
	"$DAMAGE" 12 200 50 "$D/bad" "$D/s0.res" "$D/s1.res" "$D/s2.res" >"$D/list"
	ok=0 refused=0 bad=0
	while read -r name k at; do
		files=("$D/s0.res" "$D/s1.res" "$D/s2.res")
		files[k]="$D/bad/$name"
		run --separate-stderr cowrun --merge "${files[0]}" --merge "${files[1]}" \
			--merge "${files[2]}" "${SALES[@]}"
		judge "$name (of s$k.res, at $at)" "$D/bad/$name"
	done <"$D/list"
	echo "results: $ok identical, $refused refused, $bad wrong" >&3
	[ "$bad" -eq 0 ]
	[ $((ok + refused)) -eq 250 ]
	# A damaged frame is named by its task and "checksum" (frame 0 is the
	# identity, 1 the merge context, 2 the first task's).
	read -r at type task len < <(frame_at "$D/s1.res" 2)
	[ "$type" -eq 1 ]
	cp "$D/s1.res" "$D/one.res"
	perl -e 'open F, "+<:raw", $ARGV[0]; seek F, $ARGV[1], 0; read F, my $c, 1;
		seek F, $ARGV[1], 0; print F chr(ord($c) ^ 1)' "$D/one.res" $((at + 32 + len / 2))
	run --separate-stderr cowrun --merge "$D/s0.res" --merge "$D/one.res" --merge "$D/s2.res" "${SALES[@]}"
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: merge: '$D/one.res': frame of task $task fails its checksum (the file is damaged)"
}

@test "integrity: 200 byte flips and 50 cuts of a resume journal: refused or identical, never different" {
	cowrun -j 2 --joblog "$D/log" "${SALES[@]}" >/dev/null
	mkdir "$D/bad"
	"$DAMAGE" 34 200 50 "$D/bad" "$D/log.res" >"$D/list"
	ok=0 refused=0 bad=0
	while read -r name k at; do
		rm -rf "$D/try" && mkdir "$D/try"
		cp "$D/log" "$D/try/log"
		cp "$D/bad/$name" "$D/try/log.res"
		run --separate-stderr cowrun -j 2 --joblog "$D/try/log" --resume "${SALES[@]}"
		judge "$name (at $at)" "$D/try/log.res"
	done <"$D/list"
	echo "journal: $ok identical, $refused refused, $bad wrong" >&3
	[ "$bad" -eq 0 ]
	[ $((ok + refused)) -eq 250 ]
}

@test "integrity: results and journals of format 1 are refused as such" {
	# Format 1: 24-byte headers without a checksum, "cowrun results 1".
	perl -e 'sub f { my ($t, $k, $p) = @_; pack("VVQ<Q<", $t, 0x636f7752, $k, length $p) . $p }
		print f(4, 3, "cowrun results 1\nworkload selftest\ntasks 3\narg --tasks\narg 3\n"),
			f(5, 0, "")' >"$D/old.res"
	run --separate-stderr cowrun --merge "$D/old.res" selftest --tasks 3
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: merge: '$D/old.res' is in results format 1, of an older cowrun; this one reads format 5 (the run's seed and its task names): save the results again"
	cowrun --joblog "$D/log" selftest --tasks 3 >/dev/null
	cp "$D/old.res" "$D/log.res"
	run --separate-stderr cowrun --joblog "$D/log" --resume selftest --tasks 3
	[ "$status" -eq 255 ]
	assert_one_line_error "cowrun: --resume: '$D/log.res' is in results format 1*"
}

@test "integrity: a journal with a torn tail resumes and says what it kept" {
	cowrun --joblog "$D/log" "${SALES[@]}" >/dev/null
	size=$(stat -c %s "$D/log.res")
	read -r at type task len < <(frame_at "$D/log.res" 6)
	[ $((at + 32 + len)) -eq "$size" ] # six task records
	truncate -s $((size - 10)) "$D/log.res"
	run --separate-stderr cowrun --joblog "$D/log" --resume "${SALES[@]}"
	[ "$status" -eq 0 ]
	[ "$output" = "$REF" ]
	assert_one_line_error "cowrun: --resume: '$D/log.res': kept 5 records, dropped a torn or damaged tail of $((size - at - 10)) bytes"
	# The journal is whole again: the next resume runs nothing and says nothing.
	[ "$(stat -c %s "$D/log.res")" -eq "$size" ]
	run --separate-stderr cowrun --joblog "$D/log" --resume "${SALES[@]}"
	[ "$status" -eq 0 ]
	[ "$output" = "$REF" ]
	[ -z "$stderr" ]
	# A damaged last record is a damaged tail too.
	perl -e 'open F, "+<:raw", $ARGV[0]; seek F, $ARGV[1], 0; print F "X"' "$D/log.res" $((size - 3))
	run --separate-stderr cowrun --joblog "$D/log" --resume "${SALES[@]}"
	[ "$status" -eq 0 ]
	[ "$output" = "$REF" ]
	assert_one_line_error "cowrun: --resume: '$D/log.res': kept 5 records, dropped a torn or damaged tail of $((size - at)) bytes"
}

@test "integrity: a damaged record in the middle of a journal is refused naming its task; --resume-failed reruns it" {
	cowrun --joblog "$D/log" "${SALES[@]}" >/dev/null
	read -r at type task len < <(frame_at "$D/log.res" 3)
	perl -e 'open F, "+<:raw", $ARGV[0]; seek F, $ARGV[1], 0; read F, my $c, 1;
		seek F, $ARGV[1], 0; print F chr(ord($c) ^ 0x40)' "$D/log.res" $((at + 32 + len - 1))
	cp "$D/log.res" "$D/damaged.res"
	before=$(wc -l <"$D/log")
	run --separate-stderr cowrun --joblog "$D/log" --resume "${SALES[@]}"
	[ "$status" -eq 255 ]
	[ -z "$output" ]
	assert_one_line_error "cowrun: --resume: '$D/log.res': the record of task $task (byte $at) fails its checksum, and good records follow it (the journal is damaged); --resume-failed drops it and runs its task again"
	cmp "$D/log.res" "$D/damaged.res" # a refused resume changes nothing
	run --separate-stderr cowrun --joblog "$D/log" --resume-failed "${SALES[@]}"
	[ "$status" -eq 0 ]
	[ "$output" = "$REF" ]
	assert_one_line_error "cowrun: --resume-failed: '$D/log.res': the record of task $task (byte $at) fails its checksum: dropped ($((32 + len)) bytes), its task runs again"
	# Only that task ran again, and the repaired journal now resumes cleanly.
	[ "$(wc -l <"$D/log")" -eq $((before + 1)) ]
	run --separate-stderr cowrun --joblog "$D/log" --resume "${SALES[@]}"
	[ "$status" -eq 0 ]
	[ "$output" = "$REF" ]
	[ -z "$stderr" ]
}
