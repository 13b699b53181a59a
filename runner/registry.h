/*
 * registry.h - the built-in workloads.
 */
#ifndef COWRUN_REGISTRY_H
#define COWRUN_REGISTRY_H

#include "cowrun.h"

/* The built-in workload called `name`, or NULL. */
const struct cowrun_workload *registry_find(const char *name);

/* The built-ins, NULL-terminated, in the order --list shows them. */
extern const struct cowrun_workload *const registry_workloads[];

#endif
