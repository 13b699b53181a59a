/*
 * workload-summary.c - a build tool: print the one-line summary of a
 * workload shared object, for the NAME.summary file `cowrun --list` reads
 * (so listing never loads a workload's libraries).
 *
 * Usage: workload-summary FILE.so NAME   (exit 1 unless FILE.so holds the
 * workload NAME, with a summary, for this cowrun.h's ABI)
 *
 * RTLD_LAZY: the object's calls into the runner (cowrun_alloc() and
 * friends) stay unresolved, which is fine as none is made.
 */
#include "cowrun.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: workload-summary FILE.so NAME\n");
		return 2;
	}
	setenv("OPENBLAS_NUM_THREADS", "1", 0);
	void *handle = dlopen(argv[1], RTLD_LAZY | RTLD_LOCAL);
	if (handle == NULL) {
		fprintf(stderr, "workload-summary: %s\n", dlerror());
		return 1;
	}
	const struct cowrun_workload *w = dlsym(handle, "cowrun_workload");
	if (w == NULL || w->abi_version != COWRUN_ABI_VERSION || w->name == NULL ||
	    strcmp(w->name, argv[2]) != 0 || w->summary == NULL || strchr(w->summary, '\n')) {
		fprintf(stderr, "workload-summary: %s: no workload '%s' with a one-line summary for ABI %d\n",
			argv[1], argv[2], COWRUN_ABI_VERSION);
		return 1;
	}
	printf("%s\n", w->summary);
	return fflush(stdout) == 0 ? 0 : 1;
}
