/*
 * plugin.h - workloads in shared objects: loading one (--workload FILE.so,
 * or a bundled workload found by name) and finding the bundled ones.
 *
 * A workload with heavy dependencies (risk: LAPACK, OpenBLAS, gfortran)
 * is built as NAME.so beside a one-line NAME.summary, so the core binary
 * carries none of its libraries.  They are looked for, in this order, in:
 *
 *   1. every directory of $COWRUN_WORKLOAD_PATH (colon-separated);
 *   2. <directory of the running binary>/COWRUN_PLUGIN_RELDIR: the
 *      installed tree, $(libdir)/cowrun/workloads seen from $(bindir), so a
 *      staged `make install DESTDIR=...` copy finds its own;
 *   3. <directory of the running binary>/../build/workloads: a checkout.
 *
 * The first NAME.so found is the one loaded.  `cowrun --list` reads the
 * NAME.summary files and never loads a library (loading OpenBLAS starts
 * its threads).
 */
#ifndef COWRUN_PLUGIN_H
#define COWRUN_PLUGIN_H

#include "cowrun.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>

#define PLUGIN_PATH_ENV "COWRUN_WORKLOAD_PATH"
#define PLUGIN_MAX_DIRS 16

struct plugin_path {
	size_t n;
	char dir[PLUGIN_MAX_DIRS][PATH_MAX];
};

/* Fill `p` with the directories above, in search order (those that do
 * not exist included: they are skipped when searched). */
void plugin_search_path(struct plugin_path *p);

/*
 * Load the shared object at `path` and return its `cowrun_workload`.
 * Refuses, with one line "cowrun: CONTEXT: ..." naming the file and the
 * reason, a file that will not load (missing, not ELF, a library it needs
 * is missing), lacks the symbol, was built for another COWRUN_ABI_VERSION,
 * or leaves a required member NULL; returns NULL then.  The object stays
 * loaded for the life of the process.  Unless the user set
 * OPENBLAS_NUM_THREADS, it is set to 1 first: a BLAS the object links must
 * start no thread pool (the runner forks with one thread; workers are the
 * parallelism).
 */
const struct cowrun_workload *plugin_load(const char *path, const char *context);

/*
 * Look for NAME.so on the search path.  Returns 0 if there is none (nothing
 * printed), 1 if one was found: then *w is the workload, or NULL after a
 * message (it would not load, or holds a workload of another name).
 */
int plugin_find(const char *name, const struct cowrun_workload **w);

/*
 * Print "NAME       SUMMARY" for every NAME.so on the search path (the
 * first of each name), skipping names `listed` says were printed already.
 */
void plugin_list(FILE *out, int (*listed)(const char *name));

/* The search path as "dir1, dir2, ..." for messages.  Returns buf. */
char *plugin_describe_path(const struct plugin_path *p, char *buf, size_t size);

#endif
