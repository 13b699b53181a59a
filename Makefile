# cowrun - fork-after-setup batch runner.
#   make            build bin/cowrun
#   make deps       install missing Debian packages (as root; else print the command)
#   make test       unit tests (cmocka) and CLI tests (bats), one summary line
#   make demo       the nightly sales batch on built-in synthetic data
#   make install    PREFIX=/usr/local DESTDIR=

PREFIX ?= /usr/local
DESTDIR ?=
CC ?= gcc
CFLAGS ?= -O2 -g
WARNINGS = -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
ALL_CFLAGS = -std=gnu11 $(WARNINGS) -fopenmp -Irunner $(CFLAGS)
LDLIBS = -lm

# Debian packages the project needs: to build and test, and to benchmark.
DEB_PACKAGES = gcc make libcmocka-dev bats pkg-config hyperfine time

# The unit tests link the runner's modules without main and the registry
# (which pulls in every workload).
RUNNER_SRC = $(filter-out runner/main.c runner/registry.c,$(wildcard runner/*.c))
WORKLOAD_SRC = $(wildcard workloads/*.c)
RUNNER_OBJ = $(RUNNER_SRC:%.c=build/%.o)
WORKLOAD_OBJ = $(WORKLOAD_SRC:%.c=build/%.o)
UNIT_SRC = $(wildcard tests/unit/test_*.c)
UNIT_BIN = $(UNIT_SRC:tests/unit/%.c=build/tests/%)

.PHONY: all deps test unit demo clean install check-deps
all: bin/cowrun

bin/cowrun: build/runner/main.o build/runner/registry.o $(RUNNER_OBJ) $(WORKLOAD_OBJ)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS)

build/%.o: %.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c -o $@ $<

build/tests/%: tests/unit/%.c $(RUNNER_OBJ)
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $^ $(LDLIBS) -lcmocka

-include $(shell find build -name '*.d' 2>/dev/null)

deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || echo $$p; done); \
	if [ -z "$$missing" ]; then echo "deps: all installed"; \
	elif [ "$$(id -u)" = 0 ]; then \
		echo "deps: installing $$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	else echo "deps: missing packages; run as root:"; \
		echo "  apt-get install -y $$missing"; exit 1; fi

unit: $(UNIT_BIN) build/tests/reaper

test: deps all unit
	@tests/run-all

demo: deps all
	bin/cowrun --verbose sales
	@echo "reports: $$(ls out | wc -l) files in out/ (e.g. out/$$(ls out | head -1))"

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/include
	install -m 755 bin/cowrun $(DESTDIR)$(PREFIX)/bin/cowrun
	install -m 644 runner/cowrun.h $(DESTDIR)$(PREFIX)/include/cowrun.h

clean:
	rm -rf build bin out

build/tests/reaper: tests/helpers/reaper.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -o $@ $<
