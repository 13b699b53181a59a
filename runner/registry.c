/*
 * registry.c - the table of built-in workloads.  Adding a workload: write
 * workloads/NAME.c exporting cowrun_workload_NAME and list it here.
 */
#include "registry.h"

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
