/*
 * registry.h - the workloads cowrun knows by name: built in, or bundled
 * as shared objects (plugin.h).
 */
#ifndef COWRUN_REGISTRY_H
#define COWRUN_REGISTRY_H

#include "cowrun.h"

#include <stdio.h>

/*
 * The workload called `name`: a built-in, else a bundled NAME.so on the
 * plugin search path.  NULL after a one-line message: an unknown name, a
 * bundled workload whose library is not installed, or one that would not
 * load (its own libraries missing, another ABI).
 */
const struct cowrun_workload *registry_find(const char *name);

/* --workload FILE.so: load an out-of-tree workload (plugin_load()). */
const struct cowrun_workload *registry_load_plugin(const char *path);

/* --list: every built-in, then every shared object on the search path,
 * "NAME       SUMMARY" a line, without loading any of them. */
void registry_list(FILE *out);

/* The built-ins, NULL-terminated, in the order --list shows them. */
extern const struct cowrun_workload *const registry_workloads[];

#endif
