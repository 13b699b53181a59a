/*
 * cgroup.c - walking this process's cgroups.  See cgroup.h.
 */
#include "cgroup.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* An environment variable's value, or `fallback` if it is unset or empty. */
static const char *env_or(const char *name, const char *fallback)
{
	const char *value = getenv(name);

	return value != NULL && value[0] != '\0' ? value : fallback;
}

/* Does a v1 hierarchy's controller list ("cpu,cpuacct") hold `name`? */
static int names_controller(const char *controllers, const char *name)
{
	size_t len = strlen(name), n;

	for (const char *c = controllers; *c; c += n + (c[n] == ',')) {
		n = strcspn(c, ",");
		if (n == len && strncmp(c, name, len) == 0)
			return 1;
	}
	return 0;
}

/* Visit the hierarchy at `root` + `sub` ("", "/unified", "/cpu,cpuacct"):
 * its cgroup `dir` ("/a/b", or "" for the root), then each parent up to
 * the hierarchy's root itself. */
static void walk_up(const char *root, const char *sub, const char *dir, int v1,
		    cgroup_visit_fn *visit, void *ctx)
{
	char at[PATH_MAX];
	int n = snprintf(at, sizeof at, "%s%s%s", root, sub, dir);
	size_t top = strlen(root) + strlen(sub);

	if (n < 0 || (size_t)n >= sizeof at)
		return;
	for (;;) {
		visit(at, v1, ctx);
		char *slash = strrchr(at + top, '/');
		if (slash == NULL)
			return;
		*slash = '\0'; /* the parent; at[top] == '\0' is the root itself */
	}
}

int cgroup_walk(const char *controller, cgroup_visit_fn *visit, void *ctx)
{
	const char *root = env_or("COWRUN_CGROUP_ROOT", "/sys/fs/cgroup");
	FILE *f = fopen(env_or("COWRUN_CGROUP_SELF", "/proc/self/cgroup"), "re");
	char line[PATH_MAX + 64], sub[sizeof line + 1];

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL) {
		/* "ID:CONTROLLERS:PATH"; v2's line has no controllers. */
		char *controllers = strchr(line, ':'), *dir;
		if (controllers == NULL || (dir = strchr(++controllers, ':')) == NULL)
			continue;
		*dir++ = '\0';
		dir[strcspn(dir, "\n")] = '\0';
		if (strcmp(dir, "/") == 0)
			dir[0] = '\0';
		if (controllers[0] == '\0') {
			walk_up(root, "", dir, 0, visit, ctx);
			walk_up(root, "/unified", dir, 0, visit, ctx);
		} else if (names_controller(controllers, controller)) {
			snprintf(sub, sizeof sub, "/%s", controllers);
			walk_up(root, sub, dir, 1, visit, ctx);
		}
	}
	fclose(f);
	return 0;
}
