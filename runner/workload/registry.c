/*
 * registry.c - the workloads cowrun knows by name: the built-ins compiled
 * into the binary, then the bundled ones, shared objects found on the
 * plugin search path (plugin.h).  Adding a light workload: write
 * workloads/NAME.c exporting cowrun_workload_NAME, list it here and in the
 * Makefile's BUILTIN_WORKLOADS.  A workload with heavy dependencies goes
 * in the Makefile's BUNDLED_WORKLOADS instead, exporting cowrun_workload.
 */
#include "registry.h"
#include "plugin.h"
#include "os/util.h"

#include <stdio.h>
#include <string.h>

/* The bundled workloads' names, space-separated (from the Makefile): a
 * missing one is a broken install, not an unknown name. */
#ifndef COWRUN_BUNDLED
#error "COWRUN_BUNDLED: the Makefile passes it (a renamed object no longer gets it)"
#endif

extern const struct cowrun_workload cowrun_workload_average;
extern const struct cowrun_workload cowrun_workload_sales;
extern const struct cowrun_workload cowrun_workload_selftest;
extern const struct cowrun_workload cowrun_workload_printer;
extern const struct cowrun_workload cowrun_workload_legacy;

const struct cowrun_workload *const registry_workloads[] = {
	&cowrun_workload_sales,
	&cowrun_workload_average,
	&cowrun_workload_selftest,
	&cowrun_workload_printer,
	&cowrun_workload_legacy,
	NULL,
};

static const struct cowrun_workload *builtin(const char *name)
{
	for (size_t i = 0; registry_workloads[i] != NULL; i++)
		if (strcmp(registry_workloads[i]->name, name) == 0)
			return registry_workloads[i];
	return NULL;
}

static int is_builtin(const char *name)
{
	return builtin(name) != NULL;
}

/* Is `name` one of COWRUN_BUNDLED's words? */
static int is_bundled(const char *name)
{
	size_t len = strlen(name);

	for (const char *w = COWRUN_BUNDLED; *w; w += strspn(w, " ")) {
		size_t n = strcspn(w, " ");
		if (n == len && strncmp(w, name, n) == 0)
			return 1;
		w += n;
	}
	return 0;
}

const struct cowrun_workload *registry_find(const char *name)
{
	const struct cowrun_workload *w = builtin(name);
	struct plugin_path p;
	char dirs[1024];

	if (w != NULL || plugin_find(name, &w))
		return w;
	if (!is_bundled(name)) {
		warnx_("unknown workload '%s' (see cowrun --list)", name);
		return NULL;
	}
	plugin_search_path(&p);
	warnx_("%s: its library %s.so is not installed: looked in %s (reinstall cowrun, or set "
	       "%s; in a checkout, make skips it while its libraries are missing: make deps, then "
	       "make)",
	       name, name, plugin_describe_path(&p, dirs, sizeof dirs), PLUGIN_PATH_ENV);
	return NULL;
}

const struct cowrun_workload *registry_load_plugin(const char *path)
{
	return plugin_load(path, "--workload");
}

void registry_list(FILE *out)
{
	for (size_t i = 0; registry_workloads[i] != NULL; i++)
		fprintf(out, "%-10s %s\n", registry_workloads[i]->name, registry_workloads[i]->summary);
	plugin_list(out, is_builtin);
}
