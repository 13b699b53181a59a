/*
 * plugin.c - workloads in shared objects: load one, find the bundled ones
 * by name, list them from their summary files.  See plugin.h.
 */
#define _GNU_SOURCE
#include "plugin.h"
#include "os/util.h"

#include <dirent.h>
#include <stddef.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Where `make install` puts bundled workloads, relative to the binary's
 * directory; the Makefile passes the real one (from bindir and libdir). */
#ifndef COWRUN_PLUGIN_RELDIR
#error "COWRUN_PLUGIN_RELDIR: the Makefile passes it (a renamed object no longer gets it)"
#endif
#define CHECKOUT_RELDIR "../build/workloads"
#define SUMMARY_MAX 200

static void add_dir(struct plugin_path *p, const char *dir, size_t len)
{
	if (len == 0 || len >= PATH_MAX || p->n == PLUGIN_MAX_DIRS)
		return;
	memcpy(p->dir[p->n], dir, len);
	p->dir[p->n++][len] = '\0';
}

/* "<directory of the running binary>/REL". */
static void add_beside_binary(struct plugin_path *p, const char *exe_dir, const char *rel)
{
	char dir[PATH_MAX];
	int n = snprintf(dir, sizeof dir, "%s/%s", exe_dir, rel);

	if (n > 0 && (size_t)n < sizeof dir)
		add_dir(p, dir, (size_t)n);
}

void plugin_search_path(struct plugin_path *p)
{
	const char *env = getenv(PLUGIN_PATH_ENV);
	char exe[PATH_MAX];
	ssize_t n;

	p->n = 0;
	while (env && *env) {
		size_t len = strcspn(env, ":");
		add_dir(p, env, len);
		env += len + (env[len] == ':');
	}
	n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n <= 0)
		return;
	exe[n] = '\0';
	*strrchr(exe, '/') = '\0';
	add_beside_binary(p, exe, COWRUN_PLUGIN_RELDIR);
	add_beside_binary(p, exe, CHECKOUT_RELDIR);
}

char *plugin_describe_path(const struct plugin_path *p, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < p->n && used < size; i++)
		used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? ", " : "", p->dir[i]);
	return buf;
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
	if (w->finish == NULL)
		return "finish()";
	if ((w->merge_setup == NULL) != (w->merge_context == NULL))
		return w->merge_setup ? "merge_context() (merge_setup() needs it)"
				      : "merge_setup() (merge_context() needs it)";
	return NULL;
}

/* The members ABI 1 had: all of them up to teardown; ABI 2's: up to
 * merge_setup. */
#define ABI1_SIZE (offsetof(struct cowrun_workload, teardown) + sizeof(void (*)(void *)))
#define ABI2_SIZE (offsetof(struct cowrun_workload, merge_setup) + \
		   sizeof(void *(*)(int, char **, const void *, size_t)))

/* An older plugin's struct is a prefix of today's: copied into a whole
 * one whose later members are absent, never reading past its end.  One
 * plugin is loaded per run, and it lives as long as the process. */
static struct cowrun_workload widened;

/* The plugin's workload as this cowrun reads it: its own struct (this
 * ABI), the widened copy (ABI 1 or 2), or NULL after a message.  ABI 3's
 * plan() is optional: nothing to check. */
static const struct cowrun_workload *accept_abi(const struct cowrun_workload *w,
						const char *path, const char *context)
{
	/* ABI 4 only added flags and calls: ABI 3's struct is today's. */
	if (w->abi_version == COWRUN_ABI_VERSION || w->abi_version == 3)
		return w;
	if (w->abi_version == 1 || w->abi_version == 2) {
		memset(&widened, 0, sizeof widened);
		memcpy(&widened, w, w->abi_version == 1 ? ABI1_SIZE : ABI2_SIZE);
		return &widened;
	}
	warnx_("%s: '%s' was built for workload ABI %d, this cowrun has ABI %d (and reads 1 to 3): rebuild it against this cowrun.h",
	       context, path, w->abi_version, COWRUN_ABI_VERSION);
	return NULL;
}

const struct cowrun_workload *plugin_load(const char *path, const char *context)
{
	char resolved[PATH_MAX];

	/* A path, not a library name for the dynamic linker to search. */
	if (realpath(path, resolved) == NULL) {
		warnx_("%s: cannot load '%s': %s", context, path, strerror(errno));
		return NULL;
	}
	/* OpenBLAS reads this once, when it is loaded, and starts its pool. */
	setenv("OPENBLAS_NUM_THREADS", "1", 0);
	void *handle = dlopen(resolved, RTLD_NOW | RTLD_LOCAL);
	if (handle == NULL) {
		warnx_("%s: cannot load '%s': %s", context, path, dlerror());
		return NULL;
	}
	const struct cowrun_workload *w = dlsym(handle, "cowrun_workload");
	const char *missing;
	if (w == NULL)
		warnx_("%s: '%s' exports no 'cowrun_workload' symbol: not a cowrun workload", context, path);
	else if ((w = accept_abi(w, path, context)) == NULL)
		; /* said why */
	else if ((missing = missing_member(w)) != NULL)
		warnx_("%s: '%s' defines no %s", context, path, missing);
	else
		return w;
	dlclose(handle);
	return NULL;
}

/* A name that can only mean a file in a search directory. */
static int plain_name(const char *name)
{
	return name[0] != '\0' && name[0] != '.' && strchr(name, '/') == NULL &&
	       strlen(name) < NAME_MAX - 8;
}

/* DIR/NAME.SUFFIX into buf.  Returns 0, or -1 if it does not fit. */
static int file_in(char *buf, size_t size, const char *dir, const char *name, const char *suffix)
{
	int n = snprintf(buf, size, "%s/%s%s", dir, name, suffix);

	return n > 0 && (size_t)n < size ? 0 : -1;
}

int plugin_find(const char *name, const struct cowrun_workload **w)
{
	struct plugin_path p;
	char path[PATH_MAX];

	*w = NULL;
	if (!plain_name(name))
		return 0;
	plugin_search_path(&p);
	for (size_t i = 0; i < p.n; i++) {
		if (file_in(path, sizeof path, p.dir[i], name, ".so") != 0 || access(path, F_OK) != 0)
			continue;
		*w = plugin_load(path, name);
		if (*w && strcmp((*w)->name, name) != 0) {
			warnx_("%s: '%s' holds the workload '%s', not '%s'", name, path, (*w)->name, name);
			*w = NULL;
		}
		return 1;
	}
	return 0;
}

/* The first line of DIR/NAME.summary, printable characters only, or a
 * note that there is none. */
static void read_summary(const char *dir, const char *name, char *buf, size_t size)
{
	char path[PATH_MAX];
	FILE *f = file_in(path, sizeof path, dir, name, ".summary") == 0 ? fopen(path, "re") : NULL;

	snprintf(buf, size, "(no summary: %.64s.summary is missing)", name);
	if (f == NULL)
		return;
	if (fgets(buf, (int)size, f) == NULL)
		buf[0] = '\0';
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	for (char *c = buf; *c; c++)
		if ((unsigned char)*c < ' ' || *c == 0x7f)
			*c = '?';
}

static int is_shared_object(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return d->d_name[0] != '.' && n > 3 && strcmp(d->d_name + n - 3, ".so") == 0;
}

/* Has NAME.so been listed from an earlier directory? */
static int seen_earlier(const struct plugin_path *p, size_t upto, const char *file)
{
	char path[PATH_MAX];

	for (size_t i = 0; i < upto; i++)
		if (snprintf(path, sizeof path, "%s/%s", p->dir[i], file) < (int)sizeof path &&
		    access(path, F_OK) == 0)
			return 1;
	return 0;
}

static void list_dir(FILE *out, const struct plugin_path *p, size_t i,
		     int (*listed)(const char *name))
{
	struct dirent **files;
	int n = scandir(p->dir[i], &files, is_shared_object, alphasort);

	for (int f = 0; f < n; f++) {
		char name[NAME_MAX + 1];
		snprintf(name, sizeof name, "%.*s", (int)strlen(files[f]->d_name) - 3, files[f]->d_name);
		if (!listed(name) && !seen_earlier(p, i, files[f]->d_name)) {
			char summary[SUMMARY_MAX];
			read_summary(p->dir[i], name, summary, sizeof summary);
			fprintf(out, "%-10s %s\n", name, summary);
		}
		free(files[f]);
	}
	if (n >= 0)
		free(files);
}

void plugin_list(FILE *out, int (*listed)(const char *name))
{
	struct plugin_path p;

	plugin_search_path(&p);
	for (size_t i = 0; i < p.n; i++)
		list_dir(out, &p, i, listed);
}
