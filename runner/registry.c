/*
 * registry.c - the table of built-in workloads.  Adding a workload: write
 * workloads/NAME.c exporting cowrun_workload_NAME and list it here.
 */
#include "registry.h"
#include "util.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

extern const struct cowrun_workload cowrun_workload_average;
extern const struct cowrun_workload cowrun_workload_sales;
extern const struct cowrun_workload cowrun_workload_selftest;
extern const struct cowrun_workload cowrun_workload_risk;
extern const struct cowrun_workload cowrun_workload_printer;
extern const struct cowrun_workload cowrun_workload_legacy;

const struct cowrun_workload *const registry_workloads[] = {
	&cowrun_workload_sales,
	&cowrun_workload_average,
	&cowrun_workload_selftest,
	&cowrun_workload_risk,
	&cowrun_workload_printer,
	&cowrun_workload_legacy,
	NULL,
};

const struct cowrun_workload *registry_find(const char *name)
{
	for (size_t i = 0; registry_workloads[i] != NULL; i++)
		if (strcmp(registry_workloads[i]->name, name) == 0)
			return registry_workloads[i];
	return NULL;
}

/* The first required member a workload leaves NULL, or NULL if none. */
static const char *missing_member(const struct cowrun_workload *w)
{
	if (w->name == NULL || w->name[0] == '\0')
		return "name";
	if (w->setup == NULL)
		return "setup()";
	if (w->ntasks == NULL)
		return "ntasks()";
	if (w->task_name == NULL)
		return "task_name()";
	if (w->run == NULL)
		return "run()";
	if (w->merge == NULL)
		return "merge()";
	return w->finish == NULL ? "finish()" : NULL;
}

const struct cowrun_workload *registry_load_plugin(const char *path)
{
	char resolved[PATH_MAX];

	/* A path, not a library name for the dynamic linker to search. */
	if (realpath(path, resolved) == NULL) {
		warnx_("--workload: cannot load '%s': %s", path, strerror(errno));
		return NULL;
	}
	void *handle = dlopen(resolved, RTLD_NOW | RTLD_LOCAL);
	if (handle == NULL) {
		warnx_("--workload: cannot load '%s': %s", path, dlerror());
		return NULL;
	}
	const struct cowrun_workload *w = dlsym(handle, "cowrun_workload");
	const char *missing;
	if (w == NULL)
		warnx_("--workload: '%s' exports no 'cowrun_workload' symbol: not a cowrun workload", path);
	else if (w->abi_version != COWRUN_ABI_VERSION)
		warnx_("--workload: '%s' was built for workload ABI %d, this cowrun has ABI %d: rebuild it against this cowrun.h",
		       path, w->abi_version, COWRUN_ABI_VERSION);
	else if ((missing = missing_member(w)) != NULL)
		warnx_("--workload: '%s' defines no %s", path, missing);
	else
		return w;
	dlclose(handle);
	return NULL;
}
