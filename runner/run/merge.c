/*
 * merge.c - --merge: saved-results files and directories into the batch.
 * See merge.h.
 */
#define _GNU_SOURCE
#include "merge.h"
#include "files/results.h"
#include "os/util.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int has_suffix(const char *name, const char *suffix)
{
	size_t n = strlen(name), s = strlen(suffix);

	return n >= s && strcmp(name + n - s, suffix) == 0;
}

static int compare_names(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int select_results_files(const struct dirent *d)
{
	return d->d_name[0] != '.' && has_suffix(d->d_name, ".res");
}

/* The file being loaded, for take_saved(). */
struct loader {
	struct batch *b;
	const char *path;
};

/* A saved task frame into the batch: a RESULT as batch_result(), a FAILED
 * as batch_failed() with "(saved in 'PATH')" added.  Refuses (-1 after a
 * message) a task this run does not have, or one already resolved (loaded
 * from an earlier file). */
static int take_saved(void *ctx, const struct wire_frame *f)
{
	const struct loader *l = ctx;
	char why[700];

	if (f->task >= l->b->ntasks) {
		warnx_("merge: '%s' holds task %llu, but this run has %zu tasks", l->path,
		       (unsigned long long)f->task, l->b->ntasks);
		return -1;
	}
	if (!batch_pending(l->b, (size_t)f->task)) {
		warnx_("merge: task %llu in '%s' was already loaded from an earlier file",
		       (unsigned long long)f->task, l->path);
		return -1;
	}
	if (f->type == WIRE_RESULT)
		return batch_result(l->b, (size_t)f->task, f->payload, f->length);
	snprintf(why, sizeof why, "%.*s (saved in '%s')",
		 (int)(f->length < 512 ? f->length : 512), (const char *)f->payload, l->path);
	batch_failed(l->b, (size_t)f->task, why);
	return 0;
}

int merge_load_file(struct batch *b, const char *path, const char *identity)
{
	struct loader loader = { b, path };

	return results_load(path, identity, take_saved, &loader);
}

/* The *.res files of a directory, in name order: their count, or -1 after
 * a message (none, or the directory cannot be read). */
static int list_directory(const char *dir, struct dirent ***names)
{
	int n = scandir(dir, names, select_results_files, compare_names);

	if (n < 0)
		warnx_("merge: cannot read directory '%s': %s", dir, strerror(errno));
	else if (n == 0) {
		warnx_("merge: directory '%s' holds no .res files", dir);
		free(*names);
		n = -1;
	}
	return n;
}

/* Load every *.res file of a directory, in name order. */
static int load_directory(struct batch *b, const char *dir, const char *identity)
{
	struct dirent **names;
	int n = list_directory(dir, &names);
	int rc = 0;

	if (n < 0)
		return -1;
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
		if (rc == 0 && merge_load_file(b, path, identity) != 0)
			rc = -1;
		free(names[i]);
	}
	free(names);
	return rc;
}

/* Say which tasks no file held (the first few), and fail. */
static int check_nothing_missing(const struct batch *b)
{
	char list[256] = "";
	size_t missing = 0, used = 0;

	for (size_t k = 0; k < b->ntasks; k++) {
		if (!batch_pending(b, k))
			continue;
		if (missing++ < 10 && used < sizeof list - 24)
			used += (size_t)snprintf(list + used, sizeof list - used, "%s%zu",
						 used ? "," : "", k);
	}
	if (missing == 0)
		return 0;
	warnx_("merge: %zu of %zu tasks are in no results file (%s%s)", missing, b->ntasks,
	       list, missing > 10 ? ",..." : "");
	return -1;
}

static int first_results_file(const char *path, char *buf, size_t size);

static int is_directory(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int merge_first_file(const char *const *paths, size_t npaths, char *buf, size_t size)
{
	return npaths > 0 ? first_results_file(paths[0], buf, size) : -1;
}

/* The file whose context the merge starts from: `path`, or the first
 * *.res file in directory `path`.  Returns 0, or -1 if there is none. */
static int first_results_file(const char *path, char *buf, size_t size)
{
	struct dirent **names;
	int n;

	if (!is_directory(path)) {
		snprintf(buf, size, "%s", path);
		return 0;
	}
	n = scandir(path, &names, select_results_files, compare_names);
	if (n > 0)
		snprintf(buf, size, "%s/%s", path, names[0]->d_name);
	for (int i = 0; i < n; i++)
		free(names[i]);
	if (n >= 0)
		free(names);
	return n > 0 ? 0 : -1;
}

int merge_setup_state(const struct cowrun_workload *w, const char *const *paths, size_t npaths,
		      int argc, char **argv, void **state)
{
	char first[PATH_MAX];
	struct results_context context = { NULL, 0 };

	*state = NULL;
	if (npaths == 0 || first_results_file(paths[0], first, sizeof first) != 0 ||
	    results_read_context(first, &context) != 0)
		return 0;
	*state = w->merge_setup(argc, argv, context.bytes, context.len);
	free((void *)context.bytes);
	return *state ? 1 : -1;
}

int merge_load(struct batch *b, const char *const *paths, size_t npaths, const char *identity)
{
	for (size_t i = 0; i < npaths; i++) {
		const char *path = paths[i];
		int rc = is_directory(path)
			? load_directory(b, path, identity)
			: merge_load_file(b, path, identity);
		if (rc != 0)
			return -1;
	}
	return check_nothing_missing(b);
}
