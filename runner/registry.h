/*
 * registry.h - the built-in workloads.
 */
#ifndef COWRUN_REGISTRY_H
#define COWRUN_REGISTRY_H

#include "cowrun.h"

/* The built-in workload called `name`, or NULL. */
const struct cowrun_workload *registry_find(const char *name);

/*
 * Load an out-of-tree workload: a shared object exporting
 * `const struct cowrun_workload cowrun_workload`.  Refuses, with one line
 * naming the file and the reason, a file that will not load, lacks the
 * symbol, was built for another COWRUN_ABI_VERSION, or leaves a required
 * member NULL.  The object stays loaded for the life of the process.
 */
const struct cowrun_workload *registry_load_plugin(const char *path);

/* The built-ins, NULL-terminated, in the order --list shows them. */
extern const struct cowrun_workload *const registry_workloads[];

#endif
