/*
 * fuzz_csv.c - libFuzzer harness for the sales CSV reader
 * (workloads/sales/csv_*.c): cowrun_workload_sales.setup() with --input
 * naming a file that holds the fuzz input, then ntasks(), every task_name()
 * and teardown(), as the runner calls them before any task runs.
 *
 * The file is a memfd opened by its /proc/self/fd path.  Checks, besides
 * memory errors and undefined behaviour: setup either fails (after its one
 * line on stderr) or returns a state with 1 to (lines - 1) stores, whose
 * task names are distinct-looking report file names; and setup gives the
 * same outcome when the loader cuts the file into parts of 7 bytes.
 *
 * Build and run: make fuzz (see the Makefile); seeds in corpus/csv/.
 */
#define _GNU_SOURCE
#include "cowrun.h"
#include "engine/task.h"
#include "os/workmsg.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

extern const struct cowrun_workload cowrun_workload_sales;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	workmsg_set_workload("sales");
	return 0;
}

/* One setup of the file at argv[2]: 0 if it failed, else a hash of its
 * task names (never 0), after checking them. */
static uint64_t setup_once(char **argv, size_t lines)
{
	const struct cowrun_workload *w = &cowrun_workload_sales;
	char name[COWRUN_NAME_MAX], prev[COWRUN_NAME_MAX] = "";
	uint64_t h = 14695981039346656037ULL;
	void *state = w->setup(3, argv);

	if (state == NULL)
		return 0;
	size_t n = w->ntasks(state);
	if (n == 0 || n >= lines)
		abort(); /* a store without a row, or none at all */
	for (size_t k = 0; k < n; k++) {
		memset(name, 0, sizeof name);
		w->task_name(state, k, name, sizeof name);
		if (name[0] == '\0' || name[0] == '.' || strchr(name, '/') ||
		    strcmp(name, prev) == 0)
			abort();
		memcpy(prev, name, sizeof prev);
		for (const char *c = name; *c; c++)
			h = (h ^ (unsigned char)*c) * 1099511628211ULL;
	}
	w->teardown(state);
	return h | 1;
}

/* The loader reads a file in parts (csv_load.c): one part, and parts of 7
 * bytes (COWRUN_SALES_CSV_PART), must agree on the outcome. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64];
	char *argv[] = { "sales", "--input", path, NULL };
	size_t lines = 1;

	int fd = memfd_create("fuzz.csv", MFD_CLOEXEC);
	if (fd < 0 || (size > 0 && write(fd, data, size) != (ssize_t)size))
		abort();
	snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';

	unsetenv("COWRUN_SALES_CSV_PART");
	uint64_t whole = setup_once(argv, lines);
	setenv("COWRUN_SALES_CSV_PART", "7", 1);
	uint64_t parts = setup_once(argv, lines);
	unsetenv("COWRUN_SALES_CSV_PART");
	if (whole != parts)
		abort(); /* the cut changed the result */
	close(fd);
	return 0;
}
