#!/usr/bin/env bats
# The README and the manual (docs/): the README fits on a few screens;
# every example the suite can run runs as printed (tests/helpers/doc-examples;
# docs/README.md says how an example is marked); every option --help
# prints is documented; every link between them leads to a file.

load helpers

EXAMPLES="$ROOT/tests/helpers/doc-examples"

# example_dir: a fresh directory where the examples run as in a checkout
# with cowrun installed: bin/ and workloads/ are the checkout's, cowrun on
# PATH, pkg-config cowrun finding the checkout's cowrun.h, a HOME of its own.
example_dir() {
	X=$BATS_TEST_TMPDIR/x
	mkdir -p "$X/home" "$BATS_TEST_TMPDIR/pc"
	ln -s "$ROOT/bin" "$X/bin"
	ln -s "$ROOT/workloads" "$X/workloads"
	sed -e "s|@prefix@|$ROOT|" -e "s|@includedir@|$ROOT/include|" -e 's|@VERSION@|0|' \
		"$ROOT/build-aux/cowrun.pc.in" >"$BATS_TEST_TMPDIR/pc/cowrun.pc"
	export PKG_CONFIG_PATH=$BATS_TEST_TMPDIR/pc PATH=$ROOT/bin:$PATH HOME=$X/home
}

@test "docs: the README fits on a few screens (at most 250 lines)" {
	[ "$(wc -l <"$ROOT/README.md")" -le 250 ]
}

@test "docs: the README's examples run as printed" {
	example_dir
	run "$EXAMPLES" run "$ROOT/README.md" "$X"
	echo "$output"
	[ "$status" -eq 0 ]
	# The first batch, the workload example and its build are there.
	[[ "$output" == *"README.md: 3 examples run"* ]]
}

@test "docs: every example of docs/ runs as printed" {
	local f bad=0 total=0 n
	for f in "$ROOT"/docs/*.md; do
		example_dir
		run "$EXAMPLES" run "$f" "$X"
		echo "$output"
		[ "$status" -eq 0 ] || bad=1
		n=$(sed -n 's/.*: \([0-9]*\) examples run$/\1/p' <<<"$output")
		total=$((total + ${n:-0}))
		rm -rf "$X"
	done
	[ "$bad" -eq 0 ]
	[ "$total" -ge 3 ]    # running.md, serve.md, writing-workloads.md at least
}

@test "docs: every shell block runs or says why not; no command hides in an indented block" {
	local f bad=0
	for f in "$ROOT/README.md" "$ROOT"/docs/*.md; do
		"$EXAMPLES" unmarked "$f" || bad=1
	done
	[ "$bad" -eq 0 ]
}

@test "docs: a block left unmarked, or an example that prints otherwise, fails" {
	printf '# t\n\n```sh\ncowrun --list\n```\n\n    cowrun sales\n' >t.md
	run "$EXAMPLES" unmarked t.md
	[ "$status" -ne 0 ]
	[[ "$output" == *"t.md:3: a \`\`\`sh block"* ]]
	[[ "$output" == *"t.md:7: an indented command"* ]]
	mkdir x
	printf '```console\n$ echo one; false\none\n$ echo $?\n2\n$ printf "a\\nb\\nc\\n"\na\n...\n$ echo "pid 42 done"\npid ... done\n```\n' >t.md
	run "$EXAMPLES" run t.md x
	[ "$status" -eq 1 ]
	[[ "$output" == *'t.md:4: $ echo $?: output differs'* ]]
	[[ "$output" != *'t.md:2: $ echo one; false: exit status'* ]]   # shown by echo $?
	[[ "$output" != *'printf'* ]]
	[[ "$output" != *'pid 42'* ]]
}

@test "docs: every long option of cowrun's, serve's, submit's and cowrun-cluster's --help is in docs/" {
	local help o missing=()
	help=$( {
		"$COWRUN" --help; "$COWRUN" serve --help; "$COWRUN" submit --help
		"$ROOT/cluster/cowrun-cluster" --help; "$ROOT/cluster/cowrun-cluster" --slurm --help
	} 2>&1)
	# The options a help line begins with (not those of its examples, as
	# --sbatch-opt=--qos=low).
	for o in $(grep -E '^[[:space:]]*-' <<<"$help" | grep -oE '(^|[ ,])--[a-z][a-z-]*' | grep -o -- '--.*' | sort -u); do
		grep -qE -- "(^|[^a-z-])$o([^a-z-]|\$)" "$ROOT"/docs/*.md || missing+=("$o")
	done
	[ "${#missing[@]}" -eq 0 ] || { echo "not in docs/: ${missing[*]}" >&2; return 1; }
	[[ "$help" == *--resume-failed* && "$help" == *--max-workers* && "$help" == *--reload* ]]
}

@test "docs: every link between the README and docs/ leads to a heading of a file; every docs file is in the index" {
	local f link target bad=0
	for f in "$ROOT/README.md" "$ROOT"/docs/*.md; do
		while IFS= read -r link; do
			target=${link%%#*}
			[ -n "$target" ] || continue
			[ -e "${f%/*}/$target" ] || { echo "${f#$ROOT/}: no file for ($link)" >&2; bad=1; }
		done < <(grep -oE '\]\([^)#:]*\.md(#[^)]*)?\)' "$f" | sed 's/^](//; s/)$//')
	done
	# Each #anchor names a heading of its file, made as GitHub makes them:
	# lower case, only letters, digits, spaces, - and _, spaces made -.
	awk '
		FNR == 1 { dir = FILENAME; sub(/[^\/]*$/, "", dir) }
		/^```/ { code = !code }
		!code && /^#+ / {
			h = tolower($0); sub(/^#+ /, "", h); gsub(/[^a-z0-9 _-]/, "", h); gsub(/ /, "-", h)
			anchor[FILENAME "#" h] = 1
		}
		!code {
			line = $0
			while (match(line, /\]\([^):]*#[^)]*\)/)) {
				l = substr(line, RSTART + 2, RLENGTH - 3); line = substr(line, RSTART + RLENGTH)
				file = l; sub(/#.*/, "", file); a = l; sub(/^[^#]*#/, "", a)
				want[(file == "" ? FILENAME : dir file) "#" a] = FILENAME ": (" l ")"
			}
		}
		END {
			for (w in want) {
				k = w; while (k ~ /[^\/]+\/\.\.\//) sub(/[^\/]+\/\.\.\//, "", k)
				if (!(k in anchor)) { print want[w] ": no such heading" > "/dev/stderr"; bad = 1 }
			}
			exit bad
		}' "$ROOT/README.md" "$ROOT"/docs/*.md || bad=1
	for f in "$ROOT"/docs/*.md; do
		[ "$(basename "$f")" = README.md ] && continue
		grep -q "](docs/$(basename "$f"))" "$ROOT/README.md" || { echo "README does not name docs/$(basename "$f")" >&2; bad=1; }
		grep -q "]($(basename "$f"))" "$ROOT/docs/README.md" || { echo "docs/README.md does not name $(basename "$f")" >&2; bad=1; }
	done
	[ "$bad" -eq 0 ]
}
