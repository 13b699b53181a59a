# cowrun - fork-after-setup batch runner.
#   make            build bin/cowrun and the bundled workloads
#   make deps       install missing Debian packages (as root; else print the command)
#   make test       unit tests (cmocka) and CLI tests (bats), one summary line
#   make demo       the nightly sales batch on built-in synthetic data, then compares of
#                   sales and printer, each with its advice (-j, memory), and plots
#   make bench      compare every mode on the built-in workloads (long), then plots;
#                   compare/bench-advice alone: does following the advice pay;
#                   compare/bench-setup alone: the serial part (setup, --merge)
#   make plots      plots/out/ from the latest results/*.csv
#   make mutants    plant known bugs one at a time; every one must fail a test
#   make install    prefix=/usr/local DESTDIR=  (GNU's bindir, libdir... too; unitdir for
#                   the systemd units); make uninstall

# A bare `make` builds (the rules below start with the dependency table).
.DEFAULT_GOAL := all

# GNU's installation directories (PREFIX, the older spelling, still works).
PREFIX ?= /usr/local
prefix ?= $(PREFIX)
exec_prefix ?= $(prefix)
bindir ?= $(exec_prefix)/bin
libdir ?= $(exec_prefix)/lib
libexecdir ?= $(exec_prefix)/libexec
includedir ?= $(prefix)/include
datarootdir ?= $(prefix)/share
mandir ?= $(datarootdir)/man
workloaddir = $(libdir)/cowrun/workloads
# cowrun python's contract and its example, for writing a script
pythondocdir = $(datarootdir)/cowrun/python
PYTHON_DOCS = workloads/python/contract.py workloads/python/examples/sales_report.py
# cowrun r's contract and its example (lowercase r: see r_LIBS below)
rdocdir = $(datarootdir)/cowrun/r
r_DOCS = workloads/r/contract.R workloads/r/examples/sales_report.R
# The example systemd units (systemd/): cowrun serve on a socket systemd
# opens, and a nightly batch on a timer.  $(prefix)/lib/systemd/system is
# where systemd looks for /usr and /usr/local; set unitdir for another.
unitdir ?= $(prefix)/lib/systemd/system
UNITS_IN = $(wildcard systemd/*.in)
UNITS = $(filter-out $(UNITS_IN),$(wildcard systemd/cowrun-*)) $(UNITS_IN:.in=)
DESTDIR ?=
CC ?= gcc
CFLAGS ?= -O2 -g
WARNINGS = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
ALL_CFLAGS = -std=gnu11 $(WARNINGS) -fopenmp -Iinclude -Irunner $(CFLAGS)
LDLIBS = -lm

# Debian packages, by what they are for.  make deps installs the missing
# ones without their recommendations: nothing else is used.
#   build: the compiler and C library headers; pkg-config for the template
#     workload (workloads/template) to find the installed cowrun.h;
#     xxHash's header (XXH3_64bits, compiled in: no library to load) for
#     the checksum of every frame of saved results, journals and pipes;
#     libcups's headers and cups-config for tools/cowrun-lp.c (skipped
#     in one line where cups-config is missing)
DEB_BUILD = gcc libc6-dev make pkg-config libxxhash-dev libcups2-dev
#   the bundled workloads: each one's packages (NAME_PACKAGES, below)
DEB_BUNDLED = $(foreach w,$(BUNDLED_WORKLOADS),$($(w)_PACKAGES))
#   tests: cmocka (unit), bats (CLI), a loopback sshd and ssh (cowrun-cluster),
#     strace (how report files are written); a one-node Slurm of the test's
#     own (tests/helpers/slurm-loopback: munged, slurmctld, slurmd and the
#     clients, for cowrun-cluster --slurm); systemd for systemd-socket-activate
#     (cowrun serve started on a socket systemd's way) and systemd-analyze
#     (the example units verified); the metrics file read back by a real
#     Prometheus text-format parser (python3-prometheus-client, for Debian's
#     python3); numexpr, a Recommends of pandas that starts threads, alive
#     when a python workload forks (tests/cli/python.bats); a cupsd of the
#     test's own and lpadmin/lpstat (tests/helpers/cupsd-loopback, for
#     cowrun-lp: on a systemd host installing cups-daemon also starts the
#     system's cupsd, which the tests never use)
DEB_TEST = libcmocka-dev bats openssh-server openssh-client strace \
	slurmctld slurmd slurm-client munge systemd python3-prometheus-client \
	python3-numexpr cups-daemon cups-client
#   the GNU Parallel modes (compare, cowrun-cluster); plots (gnuplot, and
#   the DejaVu font they name); benchmarks (hyperfine; GNU time for peak
#   RSS; python3, its standard library only, for compare/advice's fit;
#   joblib, for compare/python-pools: Python's own pools beside cowrun
#   python; future.apply, for compare/r-peers: R's own tools beside cowrun
#   r, its parallel package being R's own); the man page (help2man)
DEB_TOOLS = parallel gnuplot-nox fonts-dejavu-core hyperfine time python3 help2man \
	python3-joblib r-cran-future.apply
DEB_PACKAGES = $(DEB_BUILD) $(DEB_BUNDLED) $(DEB_TEST) $(DEB_TOOLS)
# make bench alone: Dask, the peer compare/bench-python measures the Python
# load against (python3-dask pulls in ~40 packages no test needs).
BENCH_PACKAGES = python3-dask

# The table of these lists in docs/install.md (tests/cli/tree.bats fails
# when the two differ; build-aux/readme-tables writes it): make print-deps.
.PHONY: print-deps
print-deps:
	@echo '| what for | Debian packages (make deps) |'
	@echo '|---|---|'
	@echo '| building cowrun | `$(DEB_BUILD)` |'
	@echo '| the bundled workloads ($(BUNDLED_WORKLOADS)) | `$(DEB_BUNDLED)` |'
	@echo '| make test | `$(strip $(DEB_TEST))` |'
	@echo '| comparisons, plots, benchmarks, the man page | `$(DEB_TOOLS)` |'
	@echo '| make check-valgrind | `$(VALGRIND_PACKAGES)` |'
	@echo '| make fuzz | `$(FUZZ_PACKAGES)` |'
	@echo '| make bench (Dask, for compare/bench-python) | `$(BENCH_PACKAGES)` |'

# Built-in workloads are compiled into bin/cowrun (runner/workload/registry.c lists
# them).  A bundled workload has heavy dependencies: it is built as
# build/workloads/NAME.so with its libraries (NAME_LIBS) and a one-line
# NAME.summary for --list, installed under $(workloaddir), and found by
# name at run time (runner/workload/plugin.h), so bin/cowrun links none of them.
BUILTIN_WORKLOADS = sales average selftest printer legacy
# Each names its libraries (NAME_LIBS), a header of theirs (NAME_HEADER)
# and the Debian packages that bring them (NAME_PACKAGES): one whose
# header or libraries cannot be found is skipped with a line saying so
# (the build goes on; make deps installs them).
# A workload may add compiler flags of its own (NAME_CFLAGS).
#   risk.so: LAPACK (Cholesky) and OpenBLAS
#   python.so: Debian's libpython (embedded: cowrun python SCRIPT.py), and
#     for the scripts, numpy and pandas.  Its flags are asked of pkg-config
#     when a recipe runs (=, not :=), so a make that first installs
#     python3-dev (make test runs make deps) finds it.  The interpreter
#     takes its prefix from Debian's python3.X, whatever cowrun's own.
#   r.so: Debian's libR (embedded: cowrun r SCRIPT.R), and data.table for
#     the scripts.  Its variables are spelled with a lowercase r (r_LIBS,
#     r_CFLAGS): R_LIBS is R's own library path, and make exports a
#     variable of the environment's name to every recipe.  R_HOME and
#     R_INCLUDE_DIR are pkg-config's; R_SHARE_DIR and R_DOC_DIR, which
#     Debian keeps outside R_HOME, are asked of Rscript (as Debian's
#     /usr/lib/R/bin/R sets them); each is the default of the environment
#     variable of its name, which overrides it at run time.
BUNDLED_WORKLOADS = risk python r
risk_LIBS = -llapacke -lopenblas
risk_HEADER = lapacke.h
risk_PACKAGES = liblapacke-dev libopenblas-dev
python_LIBS = $(shell pkg-config --libs python3-embed 2>/dev/null)
python_CFLAGS = $(shell pkg-config --cflags python3-embed 2>/dev/null) \
	-DCOWRUN_PYTHON_EXECUTABLE='"$(shell pkg-config --variable=exec_prefix python3-embed 2>/dev/null)/bin/python$(shell pkg-config --modversion python3-embed 2>/dev/null)"'
python_HEADER = Python.h
python_PACKAGES = python3-dev python3-numpy python3-pandas
r_LIBS = $(shell pkg-config --libs libR 2>/dev/null)
r_CFLAGS = $(shell pkg-config --cflags libR 2>/dev/null) \
	-DCOWRUN_R_HOME='"$(shell pkg-config --variable=rhome libR 2>/dev/null)"' \
	-DCOWRUN_R_INCLUDE_DIR='"$(shell pkg-config --variable=rincludedir libR 2>/dev/null)"' \
	-DCOWRUN_R_SHARE_DIR='"$(shell Rscript -e 'cat(R.home("share"))' 2>/dev/null)"' \
	-DCOWRUN_R_DOC_DIR='"$(shell Rscript -e 'cat(R.home("doc"))' 2>/dev/null)"'
r_HEADER = Rembedded.h
r_PACKAGES = r-base-core r-cran-data.table

# The unit tests link the runner's modules without main and the registry
# (which pulls in every built-in workload).
RUNNER_SRC = $(filter-out runner/cli/main.c runner/workload/registry.c,$(wildcard runner/*/*.c))
RUNNER_OBJ = $(RUNNER_SRC:%.c=build/%.o)
# A built-in workload, like a bundled one, is workloads/NAME.c or a folder
# of them, workloads/NAME/*.c.
WORKLOAD_OBJ = $(patsubst %.c,build/%.o,$(foreach w,$(BUILTIN_WORKLOADS),$(wildcard workloads/$(w).c workloads/$(w)/*.c)))
BUNDLED = $(BUNDLED_WORKLOADS:%=build/workloads/%.so) $(BUNDLED_WORKLOADS:%=build/workloads/%.summary)
UNIT_SRC = $(wildcard tests/unit/test_*.c)
UNIT_BIN = $(UNIT_SRC:tests/unit/%.c=build/tests/%)

.PHONY: all deps test unit demo bench plots clean install uninstall check-deps mutants FORCE
all: bin/cowrun bin/cowrun-supervise bin/cowrun-lineprinter cups-lp bundled build/forkcost build/psswatch

# The bundled workloads whose libraries are here, each built by a make of
# its own; the others skipped, one line each.
.PHONY: bundled
bundled:
	@$(foreach w,$(BUNDLED_WORKLOADS),\
	if printf '#include <%s>\nint main(void) { return 0; }\n' '$($(w)_HEADER)' | \
		$(CC) -x c - -o /dev/null $($(w)_CFLAGS) $($(w)_LIBS) 2>/dev/null; then \
		$(MAKE) --no-print-directory -q build/workloads/$(w).so build/workloads/$(w).summary \
			2>/dev/null || \
		$(MAKE) --no-print-directory build/workloads/$(w).so build/workloads/$(w).summary || \
			exit 1; \
	else echo "make: skipping the bundled workload $(w): its libraries are missing" \
		"(Debian: $($(w)_PACKAGES)); run make deps, then make"; fi;) true

# -rdynamic: a plugin (bundled, or --workload FILE.so) calls cowrun_emit()
# and friends from this binary.
bin/cowrun: build/runner/cli/main.o build/runner/workload/registry.o $(RUNNER_OBJ) $(WORKLOAD_OBJ)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -rdynamic -Wl,-z,now,-z,relro -o $@ $^ $(LDLIBS)

# cowrun-lineprinter (tools/lineprinter.c): the simulated line printer of
# the printer story, a program of its own that --report-to runs, one per
# worker slot (--printer {%}).  No runner code and no OpenMP: it is a
# device, not a part of cowrun.
bin/cowrun-lineprinter: tools/lineprinter.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(WARNINGS) $(CFLAGS) -o $@ $<

# cowrun-lp (tools/cowrun-lp.c): a printer command on libcups that waits
# until its job is completed.  libcups2-dev ships no cups.pc: its flags are
# cups-config's.  Where cups-config is missing it is skipped in one line.
CUPS_CONFIG = cups-config
.PHONY: cups-lp
cups-lp:
	@if command -v $(CUPS_CONFIG) >/dev/null; then \
		$(MAKE) --no-print-directory -q bin/cowrun-lp 2>/dev/null || \
		$(MAKE) --no-print-directory bin/cowrun-lp; \
	else echo "make: skipping cowrun-lp: no cups-config (Debian: libcups2-dev); run make deps, then make"; fi

bin/cowrun-lp: tools/cowrun-lp.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(WARNINGS) $(CFLAGS) $$($(CUPS_CONFIG) --cflags) -o $@ $< \
		$$($(CUPS_CONFIG) --libs) -lm

# cowrun-supervise (tools/supervise.c): what the runner spawns instead of a
# report's command, so the command dies with the run (runner/os/command_run.h).
# Static where the C library allows (no dynamic loading per report), else
# dynamic.  Never under the sanitizers, as build/tests/reaper: it is a
# subreaper, where LeakSanitizer's stop-the-world at exit once spun.  A
# checkout's bin/cowrun finds it beside itself; the installed one under
# $(libexecdir)/cowrun, by the path from $(bindir) compiled in.
bin/cowrun-supervise: tools/supervise.c runner/os/spawnattr.h
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(WARNINGS) -Irunner -O2 -g -static -o $@ $< 2>/dev/null || \
		$(CC) -std=gnu11 $(WARNINGS) -Irunner -O2 -g -o $@ $<
SUPERVISE_RELPATH := $(shell realpath -m --relative-to='$(bindir)' '$(libexecdir)/cowrun/cowrun-supervise')
build/runner/os/command_run.o: ALL_CFLAGS += -DCOWRUN_SUPERVISE_RELPATH='"$(SUPERVISE_RELPATH)"'
build/runner/os/command_run.o: build/supervise-config
build/supervise-config: FORCE
	@mkdir -p $(@D)
	@echo '$(SUPERVISE_RELPATH)' | cmp -s - $@ || echo '$(SUPERVISE_RELPATH)' > $@

# Where the installed binary finds the bundled workloads, relative to its
# own directory, and which names are bundled: compiled in, and recompiled
# when they change (build/plugin-config holds the last values).
PLUGIN_RELDIR := $(shell realpath -m --relative-to='$(bindir)' '$(workloaddir)')
PLUGIN_CONFIG = $(PLUGIN_RELDIR) $(BUNDLED_WORKLOADS)
# plugin.c and registry.c refuse to compile without them: a move that
# leaves these rules behind fails the build instead of installing a cowrun
# that cannot find its bundled workloads.
PLUGIN_DEFS = -DCOWRUN_PLUGIN_RELDIR='"$(PLUGIN_RELDIR)"' -DCOWRUN_BUNDLED='"$(BUNDLED_WORKLOADS)"'
build/runner/workload/plugin.o build/runner/workload/registry.o: ALL_CFLAGS += $(PLUGIN_DEFS)
build/runner/workload/plugin.o build/runner/workload/registry.o: build/plugin-config
build/plugin-config: FORCE
	@mkdir -p $(@D)
	@echo '$(PLUGIN_CONFIG)' | cmp -s - $@ || echo '$(PLUGIN_CONFIG)' > $@
FORCE:

# A bundled workload is one file, workloads/NAME.c, or a folder of them,
# workloads/NAME/*.c; compiled position-independent under build/pic/.
bundled_objects = $(patsubst %.c,build/pic/%.o,$(wildcard workloads/$(1).c workloads/$(1)/*.c))
.SECONDEXPANSION:
build/workloads/%.so: $$(call bundled_objects,$$*)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -shared -o $@ $(filter %.o,$^) $($*_LIBS) $(LDLIBS)

# Named, so make rebuilds a missing one (an intermediate file it would not).
BUNDLED_OBJ = $(foreach w,$(BUNDLED_WORKLOADS),$(call bundled_objects,$(w)))
$(BUNDLED_OBJ):
build/pic/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) $(bundled_cflags) -fPIC -MMD -MP -c -o $@ $<
# The NAME_CFLAGS of the workload a bundled object belongs to.
bundled_cflags = $(foreach w,$(BUNDLED_WORKLOADS),$(if $(filter build/pic/workloads/$(w).o build/pic/workloads/$(w)/%,$@),$($(w)_CFLAGS)))

build/workloads/%.summary: build/workloads/%.so build/workload-summary
	build/workload-summary $< $* > $@.tmp && mv $@.tmp $@

build/workload-summary: build-aux/workload-summary.c include/cowrun.h
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $<

# compare/forkcost's measuring program: fork cost against setup size.
# compare/compare's memory probe: peak total PSS of a run's process tree
# (its /proc files read as procstat.c reads them).
build/psswatch: compare/psswatch.c build/runner/os/procstat.o
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -o $@ $< build/runner/os/procstat.o

build/forkcost: compare/forkcost.c build/runner/os/arena.o build/runner/os/util.o
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -o $@ $< build/runner/os/arena.o build/runner/os/util.o $(LDLIBS)

build/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

# -MMD: a test is built again when a header it includes changes (the
# runner's, or tests/unit/scratch.h).
build/tests/%: tests/unit/%.c $(RUNNER_OBJ)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -o $@ $(filter %.c %.o,$^) $(LDLIBS) -lcmocka

-include $(shell find build -name '*.d' 2>/dev/null)

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -z "$$missing" ]; then echo "deps: all installed"; \
	elif [ "$$(id -u)" = 0 ]; then \
		echo "deps: installing $$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends $$missing; \
	else echo "deps: missing packages; run as root:"; \
		echo "  apt-get install -y --no-install-recommends $$missing"; exit 1; fi

unit: $(UNIT_BIN) build/tests/reaper build/tests/mkframe build/tests/fixed-random.so \
	build/tests/no-tmpfile.so

# The build on every CPU (a fresh clone's 130 compiles: 17 s on one
# core of two, 9 s on both), after deps has installed what it needs, never
# beside it.
BUILD_JOBS ?= $(shell nproc 2>/dev/null || echo 2)

test: deps
	@$(MAKE) --no-print-directory -j$(BUILD_JOBS) all unit
	@tests/run-all

# The demo's compares: three repetitions, shuffled, on small data, each
# ending with its advice (results/demo-W-advice.txt): about a minute on a
# 2-core machine.  sales runs fork, omp and GNU Parallel per shard (not per
# task: that redoes the setup for every one of the 24 tasks); printer, whose
# tasks wait on a simulated line printer (I/O-bound), shows a fitted advice
# above the cores.
DEMO_SALES = --jobs 1,2,4 --reps 3 --modes fork,omp,parallel-shard --workload sales \
	--out results/demo-sales.csv --timeline results/demo-sales-timeline.csv \
	-- --rows 4000000 --stores 24
DEMO_PRINTER = --jobs 1,2,4,8,16,32 --reps 3 --modes fork --workload printer \
	--out results/demo-printer.csv -- --regions 32 --lpm 120000

demo: deps
	@$(MAKE) --no-print-directory -j$(BUILD_JOBS) all
	bin/cowrun --verbose sales
	@echo "reports: $$(ls out | wc -l) files in out/ (e.g. out/$$(ls out | head -1))"
	@$(MAKE) --no-print-directory demo-python
	@$(MAKE) --no-print-directory demo-r
	compare/compare $(DEMO_SALES)
	compare/compare $(DEMO_PRINTER)
	plots/plot results/demo-sales.csv results/demo-sales-timeline.csv results/demo-printer.csv
	@echo "demo: open these plots (an .svg beside each):"; \
	for p in speedup phases wall efficiency memory cost timeline; do \
		echo "  plots/out/demo-sales-$$p.png"; done; \
	echo "  plots/out/demo-printer-speedup.png (I/O-bound: a fitted advice above the cores)"; \
	echo "  the advice in full: results/demo-sales-advice.txt, results/demo-printer-advice.txt"; \
	echo "  and the runs themselves: results/demo-sales.csv, results/demo-printer.csv"

# The same nightly report written in another language (pandas under cowrun
# python, data.table under cowrun r), on a CSV of the sales format, beside
# the C workload on that file: the same summary and reports, byte for byte.
# $(call demo_example,WORKLOAD,SCRIPT,DEBIAN PACKAGES,WHAT IT IS)
define demo_example
	@[ -e build/workloads/$(1).so ] || { echo "demo: no $(1).so ($(3)): make deps, then make"; exit 1; }
	@mkdir -p results
	tests/helpers/make-sales-csv 200000 24 > results/demo-$(1)-sales.csv.tmp && \
		mv results/demo-$(1)-sales.csv.tmp results/demo-$(1)-sales.csv
	bin/cowrun -v -j 2 -o out-$(1) $(1) $(2) --input results/demo-$(1)-sales.csv > results/demo-$(1)-summary.txt
	bin/cowrun -j 2 -o out-$(1)-c sales --input results/demo-$(1)-sales.csv > results/demo-$(1)-c-summary.txt
	cmp results/demo-$(1)-summary.txt results/demo-$(1)-c-summary.txt
	diff -r -x '.cowrun-manifest.*' out-$(1) out-$(1)-c
	@echo "$(1): $(4) ($(2)) printed" \
		"results/demo-$(1)-summary.txt and wrote $$(ls out-$(1) | wc -l) reports in out-$(1)/:" \
		"the same bytes as cowrun sales --input on that CSV"
endef
.PHONY: demo-python demo-r
demo-python: all
	$(call demo_example,python,workloads/python/examples/sales_report.py,python3-dev,the pandas report)
demo-r: all
	$(call demo_example,r,workloads/r/examples/sales_report.R,r-base-core r-cran-data.table,the data.table report)

# Every mode on every built-in workload, 3 repetitions at -j 1,2,4: about
# 50 minutes on 2 cores (parallel-task redoes sales' setup for each of 64 stores).
BENCH = compare/compare --jobs $(BENCH_JOBS) --reps $(BENCH_REPS)
BENCH_JOBS ?= 1,2,4
BENCH_REPS ?= 3
BENCH_SELFTEST_ARGS ?= --tasks 200 --work-us 20000

# legacy is not thread-safe: no omp mode for it.  printer is I/O-bound:
# it is where more workers than cores pays, so it goes up to -j 32.
bench: deps all
	@$(MAKE) --no-print-directory deps DEB_PACKAGES='$(BENCH_PACKAGES)'
	compare/bench-lean
	compare/bench-setup
	compare/bench-advice
	compare/bench-advice --workload printer --jobs 1,2,4,8,16,32 -- --regions 32 --lpm 120000
	$(BENCH) --workload sales --timeline results/sales-timeline.csv
	$(BENCH) --workload average
	$(BENCH) --workload selftest -- $(BENCH_SELFTEST_ARGS)
	$(BENCH) --workload risk
	compare/compare --jobs 1,2,4,8,16,32 --reps $(BENCH_REPS) --modes fork,omp --workload printer
	$(BENCH) --modes fork,parallel-task,parallel-shard --workload legacy
	compare/bench-python
	@if [ -e build/workloads/r.so ]; then echo compare/bench-r; compare/bench-r; \
	else echo 'bench: compare/bench-r skipped: no build/workloads/r.so (R is not installed)'; fi
	compare/bench-tasks-per-worker
	compare/bench-detector
	compare/bench-spawn
	plots/plot results/sales.csv results/sales-timeline.csv results/average.csv \
		results/selftest.csv results/risk.csv results/printer.csv results/legacy.csv

# Every compare/compare or --timeline CSV in results/ (found by its header).
plots:
	@files=$$(grep -l -E '^(seq,mode,jobs|task,name,worker),' results/*.csv 2>/dev/null); \
	[ -n "$$files" ] || { echo "plots: no compare results in results/: run make bench or make demo"; exit 1; }; \
	echo plots/plot $$files; plots/plot $$files

# The man page is cowrun --help, typeset (help2man); the pkg-config file
# lets an out-of-tree workload (workloads/template) find cowrun.h.
build/cowrun.1: bin/cowrun
	@mkdir -p $(@D)
	help2man --no-info --name="fork-after-setup batch runner" --output=$@ bin/cowrun
build/cowrun-lp.1: bin/cowrun-lp
	@mkdir -p $(@D)
	help2man --no-info --name="print through CUPS and wait until printed" --output=$@ bin/cowrun-lp

install: all build/cowrun.1
	install -d $(DESTDIR)$(bindir) $(DESTDIR)$(includedir) $(DESTDIR)$(libdir)/pkgconfig \
		$(DESTDIR)$(mandir)/man1 $(DESTDIR)$(workloaddir)
	install -m 755 bin/cowrun $(DESTDIR)$(bindir)/cowrun
	install -m 755 bin/cowrun-lineprinter $(DESTDIR)$(bindir)/cowrun-lineprinter
	install -d $(DESTDIR)$(libexecdir)/cowrun
	install -m 755 bin/cowrun-supervise $(DESTDIR)$(libexecdir)/cowrun/cowrun-supervise
	install -m 755 cluster/cowrun-cluster $(DESTDIR)$(bindir)/cowrun-cluster
	install -m 755 cluster/cowrun-cluster-slurm $(DESTDIR)$(bindir)/cowrun-cluster-slurm
	for f in $(BUNDLED); do [ ! -e $$f ] || install -m 644 $$f $(DESTDIR)$(workloaddir) || exit 1; done
	install -d $(DESTDIR)$(pythondocdir)
	install -m 644 $(PYTHON_DOCS) $(DESTDIR)$(pythondocdir)
	install -d $(DESTDIR)$(rdocdir)
	install -m 644 $(r_DOCS) $(DESTDIR)$(rdocdir)
	install -m 644 include/cowrun.h $(DESTDIR)$(includedir)/cowrun.h
	sed -e 's|@prefix@|$(prefix)|' -e 's|@includedir@|$(includedir)|' \
		-e "s|@VERSION@|$$(bin/cowrun --version | cut -d' ' -f2)|" \
		build-aux/cowrun.pc.in > $(DESTDIR)$(libdir)/pkgconfig/cowrun.pc
	install -m 644 build/cowrun.1 $(DESTDIR)$(mandir)/man1/cowrun.1
	if [ -e bin/cowrun-lp ]; then $(MAKE) --no-print-directory build/cowrun-lp.1 && \
		install -m 755 bin/cowrun-lp $(DESTDIR)$(bindir)/cowrun-lp && \
		install -m 644 build/cowrun-lp.1 $(DESTDIR)$(mandir)/man1/cowrun-lp.1; fi
	install -d $(DESTDIR)$(unitdir)
	for u in $(notdir $(UNITS)); do \
		if [ -f systemd/$$u.in ]; then sed -e 's|@bindir@|$(bindir)|g' systemd/$$u.in; \
		else cat systemd/$$u; fi > $(DESTDIR)$(unitdir)/$$u && \
		chmod 644 $(DESTDIR)$(unitdir)/$$u || exit 1; done

uninstall:
	rm -f $(DESTDIR)$(bindir)/cowrun $(DESTDIR)$(bindir)/cowrun-lineprinter \
		$(DESTDIR)$(bindir)/cowrun-lp $(DESTDIR)$(mandir)/man1/cowrun-lp.1 \
		$(DESTDIR)$(bindir)/cowrun-cluster \
		$(DESTDIR)$(bindir)/cowrun-cluster-slurm \
		$(DESTDIR)$(includedir)/cowrun.h $(DESTDIR)$(libdir)/pkgconfig/cowrun.pc \
		$(DESTDIR)$(mandir)/man1/cowrun.1 $(addprefix $(DESTDIR)$(workloaddir)/,$(notdir $(BUNDLED))) \
		$(DESTDIR)$(libexecdir)/cowrun/cowrun-supervise
	rm -f $(addprefix $(DESTDIR)$(unitdir)/,$(notdir $(UNITS)))
	rm -f $(addprefix $(DESTDIR)$(pythondocdir)/,$(notdir $(PYTHON_DOCS)))
	rm -f $(addprefix $(DESTDIR)$(rdocdir)/,$(notdir $(r_DOCS)))
	-rmdir $(DESTDIR)$(workloaddir) $(DESTDIR)$(libdir)/cowrun $(DESTDIR)$(pythondocdir) $(DESTDIR)$(rdocdir) \
		$(DESTDIR)$(libexecdir)/cowrun \
		$(DESTDIR)$(datarootdir)/cowrun 2>/dev/null

# mutants: plant each bug of tests/mutants/list in a scratch copy
# (build-mutants/), run the tests that defend against it, list survivors.
mutants: deps
	tests/mutants/run

clean:
	rm -rf build bin out

# Never under the sanitizers (check-asan passes them in CFLAGS): at exit,
# LeakSanitizer stops the world through a tracer child, and in this
# subreaper that once spun for good (23 min, seen in check-asan).
build/tests/reaper: tests/helpers/reaper.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(WARNINGS) -O2 -o $@ $<

# fixed-random.so: getrandom() returning zeros (LD_PRELOAD), so that a test
# can plant links under the names cowrun would pick (tests/cli/symlinks.bats).
build/tests/fixed-random.so: tests/helpers/fixed-random.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(WARNINGS) -O2 -fPIC -shared -o $@ $<

# no-tmpfile.so: open() refusing O_TMPFILE (LD_PRELOAD), as a file system
# without it does, for submit's named temporaries (tests/cli/serve-sidefiles.bats).
build/tests/no-tmpfile.so: tests/helpers/no-tmpfile.c
	@mkdir -p $(@D)
	$(CC) -std=gnu11 $(WARNINGS) -O2 -fPIC -shared -o $@ $<

# mkframe: one wire frame with a correct checksum (or a broken one on
# purpose), for the tests and seeds that craft results files by hand.
build/tests/mkframe: tests/helpers/mkframe.c build/runner/files/wire.o build/runner/os/util.o
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

# ---- sanitizers and fuzzing (make check-asan, check-valgrind, fuzz) --------
# check-asan: every test suite against an AddressSanitizer + UBSan build.
# It is built in a copy of the working tree (ASAN_DIR), so build/ and bin/
# stay as they are and the tests find the sanitized bin/cowrun where they
# always look.  Reports go to log files, so one from a forked worker is
# caught even in a test that expects the worker to fail; any report fails
# the target.  selftest --crash raises SIGSEGV and friends on purpose: the
# sanitizers must leave those signals alone.  Workers leave with _exit(),
# which skips LeakSanitizer: leaks are checked in the parent only.
ASAN_DIR = build-asan
ASAN_CFLAGS = -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer
ASAN_LOGS = $(CURDIR)/$(ASAN_DIR)/sanitizer-logs
# With allocator_may_return_null=1 a huge malloc() returns NULL as glibc's
# does (the code handles ENOMEM), after this warning, which is no report.
ASAN_TOO_BIG = WARNING: AddressSanitizer failed to allocate
# LeakSanitizer's warning when it could not stop a thread at exit (the
# threads numexpr starts in a python workload's setup): it still checks,
# and a leak it finds is a report of its own.
ASAN_NOT_REPORTS = $(ASAN_TOO_BIG)|Running thread [0-9]+ was not suspended. False leaks are possible.
ASAN_SIGNALS = handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0
# intercept_tls_get_addr=0: GCC 12's LeakSanitizer takes a dynamic TLS block
# whose address is 16 bytes past a page boundary for one with glibc 2.19's
# header, reads a length from before it, and its tracer dies scanning that
# (SIGSEGV, "LeakSanitizer has encountered a fatal error", exit 1; google/
# sanitizers#1322).  The parent of a Python batch met it at its exit in 6
# runs of 6 (tests/fixtures/python/batch.py at -j 2, once the interpreter
# is finalized); dynamic TLS is then not scanned for pointers.
# libtirpc first, where it is (libR's dependency): GCC 12's libasan
# intercepts xdrmem_create(), which glibc 2.32 moved to libtirpc, and its
# interceptor calls a NULL "real" function, so R died (SIGSEGV) reading its
# own base package in every cowrun r run.  Preloaded, libtirpc's own is the
# one found; verify_asan_link_order=0 lets libasan come second.
ASAN_XDR = $(shell ldconfig -p 2>/dev/null | grep -q 'libtirpc\.so\.3 ' && echo libtirpc.so.3)
ASAN_ENV = $(if $(ASAN_XDR),LD_PRELOAD=$(ASAN_XDR)) \
	ASAN_OPTIONS=$(ASAN_SIGNALS)$(if $(ASAN_XDR),:verify_asan_link_order=0):detect_leaks=1:allocator_may_return_null=1:intercept_tls_get_addr=0:log_path=$(ASAN_LOGS)/asan \
	UBSAN_OPTIONS=$(ASAN_SIGNALS):print_stacktrace=1:log_path=$(ASAN_LOGS)/ubsan \
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/sanitizers/lsan.supp:print_suppressions=0

# copy_tree DIR: the working tree's files (tracked and untracked, not
# ignored) into DIR, keeping DIR's build/ and bin/ so a rerun rebuilds only
# what changed (all of it if DIR/build/.cflags says other flags).
copy_tree = mkdir -p $(1) && \
	find $(1) -mindepth 1 -maxdepth 1 ! -name build ! -name bin -exec rm -rf {} + && \
	git ls-files -z -co --exclude-standard -- . ':!$(ASAN_DIR)' ':!$(FUZZ_DIR)' ':!$(VALGRIND_DIR)' | \
	tar --null -T - --ignore-failed-read --warning=no-failed-read -cf - | tar -xf - -C $(1) && \
	{ echo '$(2)' | cmp -s - $(1)/build/.cflags || rm -rf $(1)/build $(1)/bin; } && \
	mkdir -p $(1)/build && echo '$(2)' > $(1)/build/.cflags

.PHONY: check-asan check-valgrind fuzz fuzz-build
check-asan: deps
	@$(call copy_tree,$(ASAN_DIR),$(ASAN_CFLAGS))
	$(MAKE) --no-print-directory -C $(ASAN_DIR) CFLAGS='$(ASAN_CFLAGS)' all unit
	@rm -rf $(ASAN_LOGS) && mkdir -p $(ASAN_LOGS)
	@cd $(ASAN_DIR) && start=$$(date +%s) && $(ASAN_ENV) tests/run-all; rc=$$?; \
	echo "check-asan: $$(( $$(date +%s) - start )) s of tests"; \
	big=$$(cat $(ASAN_LOGS)/* 2>/dev/null | grep -c "$(ASAN_TOO_BIG)"); \
	[ "$$big" -eq 0 ] || echo "check-asan: $$big allocations refused as too large (ENOMEM, as with glibc)"; \
	reports=$$(grep -Elv "$(ASAN_NOT_REPORTS)" $(ASAN_LOGS)/* 2>/dev/null); \
	if [ -n "$$reports" ]; then \
		cat $$reports; echo "check-asan: sanitizer reports in $(ASAN_LOGS)"; exit 1; fi; \
	exit $$rc

# check-valgrind: the core CLI scenarios (tests/check-valgrind) under
# memcheck, every process traced; see that script for how leaks in forked
# workers are treated.
VALGRIND_DIR = build-valgrind
VALGRIND_PACKAGES = valgrind
check-valgrind: deps all unit
	@$(MAKE) --no-print-directory deps DEB_PACKAGES='$(VALGRIND_PACKAGES)'
	tests/check-valgrind $(VALGRIND_DIR)

# fuzz: libFuzzer harnesses (tests/fuzz/fuzz_*.c, clang) for the result
# record reader, saved results and journals, --tasks/--shard and the sales
# CSV reader; each runs FUZZ_SECONDS from its seeds (tests/fuzz/corpus/NAME)
# plus what earlier runs found (FUZZ_DIR/corpus/NAME).  A crash is saved
# as FUZZ_DIR/crashes/NAME-crash-* (-oom-, -leak-, -timeout-): rerun it
# with FUZZ_DIR/fuzz_NAME FILE.  Seeds: tests/fuzz/make-seeds.
FUZZ_DIR = build-fuzz
FUZZ_CC = clang
FUZZ_SECONDS = 60
FUZZ_PACKAGES = clang libclang-rt-dev libomp-dev
FUZZ_HARNESSES = wire results tasks csv proto
FUZZ_CFLAGS = -std=gnu11 $(WARNINGS) -fopenmp -Iinclude -Irunner -g -O1 -fno-omit-frame-pointer \
	-fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_BIN = $(FUZZ_HARNESSES:%=$(FUZZ_DIR)/fuzz_%)
FUZZ_OBJ = $(RUNNER_SRC:%.c=$(FUZZ_DIR)/%.o) $(FUZZ_DIR)/workloads/sales/sales.o
FUZZ_OPTIONS = -max_total_time=$(FUZZ_SECONDS) -close_fd_mask=2 -print_final_stats=1
FUZZ_ENV = OMP_NUM_THREADS=1 ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1

$(FUZZ_DIR)/runner/workload/plugin.o: FUZZ_CFLAGS += $(PLUGIN_DEFS)
$(FUZZ_DIR)/%.o: %.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c -o $@ $<

.SECONDARY: $(FUZZ_OBJ)
$(FUZZ_DIR)/fuzz_csv: $(patsubst %.c,$(FUZZ_DIR)/%.o,$(wildcard workloads/sales/*.c))
$(FUZZ_DIR)/fuzz_%: tests/fuzz/fuzz_%.c $(RUNNER_SRC:%.c=$(FUZZ_DIR)/%.o)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $^ -lm

-include $(shell find $(FUZZ_DIR) -name '*.d' 2>/dev/null)

fuzz-build: $(FUZZ_BIN)

fuzz:
	@$(MAKE) --no-print-directory deps DEB_PACKAGES='$(FUZZ_PACKAGES)'
	@$(MAKE) --no-print-directory fuzz-build
	@mkdir -p $(FUZZ_DIR)/crashes; failed=; \
	for h in $(FUZZ_HARNESSES); do \
		mkdir -p $(FUZZ_DIR)/corpus/$$h; \
		$(FUZZ_ENV) $(FUZZ_DIR)/fuzz_$$h $(FUZZ_OPTIONS) -artifact_prefix=$(FUZZ_DIR)/crashes/$$h- \
			$(FUZZ_DIR)/corpus/$$h tests/fuzz/corpus/$$h > $(FUZZ_DIR)/$$h.log 2>&1 || failed="$$failed $$h"; \
		echo "fuzz: $$h: $$(sed -n 's/^stat::number_of_executed_units: *//p' $(FUZZ_DIR)/$$h.log) runs in $(FUZZ_SECONDS) s, corpus $$(ls $(FUZZ_DIR)/corpus/$$h | wc -l) inputs"; \
	done; \
	if [ -n "$$failed" ]; then \
		for h in $$failed; do grep -A30 -m1 -E '^==[0-9]+==ERROR|^SUMMARY|deadly signal|out-of-memory|timeout' $(FUZZ_DIR)/$$h.log; done; \
		echo "fuzz: crashed:$$failed (inputs in $(FUZZ_DIR)/crashes/, logs in $(FUZZ_DIR)/NAME.log)"; exit 1; fi
