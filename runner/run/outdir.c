/*
 * outdir.c - the output directory and the report files' names.  See
 * outdir.h.
 */
#include "outdir.h"
#include "engine/task.h"
#include "os/util.h"
#include "os/fileops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int compare_strings(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A name is used as a file name in OUTDIR: no '/', not hidden (temporary
 * files start with '.'), not empty. */
static int bad_task_name(const char *name)
{
	const char *suffix = task_report_suffix();

	return name[0] == '\0' || name[0] == '.' || strchr(name, '/') != NULL ||
	       strlen(name) >= COWRUN_NAME_MAX - 1 + strlen(suffix ? suffix : "");
}

static void free_names(char **names, size_t n)
{
	for (size_t k = 0; names && k < n; k++)
		free(names[k]);
	free(names);
}

/* Check every task name is a safe, distinct file name, so no two reports
 * overwrite each other.  Returns the names, sorted (the caller frees them
 * with free_names()), or NULL after a message. */
static char **check_task_names(const struct batch *b)
{
	char **names = calloc(b->ntasks ? b->ntasks : 1, sizeof *names);
	int rc = names ? 0 : -1;

	for (size_t k = 0; rc == 0 && k < b->ntasks; k++) {
		char name[REPORT_FILE_MAX] = "";
		task_report_file_of(b->workload, b->state, k, name, sizeof name);
		if (bad_task_name(name)) {
			cowrun_error("task %zu has name '%s', which cannot be a report file name", k, name);
			rc = -1;
		} else if ((names[k] = strdup(name)) == NULL)
			rc = -1;
	}
	if (rc == 0 && b->ntasks > 1) {
		qsort(names, b->ntasks, sizeof *names, compare_strings);
		for (size_t k = 1; k < b->ntasks && rc == 0; k++)
			if (strcmp(names[k - 1], names[k]) == 0) {
				cowrun_error("two tasks are both named '%s'", names[k]);
				rc = -1;
			}
	}
	if (rc == 0)
		return names;
	free_names(names, b->ntasks);
	return NULL;
}

/* The sorted task names, as sidefiles_check_reports() asks about them. */
struct name_list {
	char **names;
	size_t n;
};

static int is_task_name(void *ctx, const char *name)
{
	const struct name_list *l = ctx;

	return bsearch(&name, l->names, l->n, sizeof *l->names, compare_strings) != NULL;
}

int outdir_check_reports(const struct batch *b, const struct sidefiles *files)
{
	if (!(b->workload->flags & COWRUN_WRITES_REPORTS))
		return 0;
	struct name_list l = { check_task_names(b), b->ntasks };
	if (l.names == NULL)
		return -1;
	int rc = sidefiles_check_reports(files, b->outdir, is_task_name, &l);
	free_names(l.names, l.n);
	return rc;
}

/* A file can be created in the output directory: found now, not by every
 * task in turn.  Returns 0 or -1 with errno. */
static int probe_writable(int dirfd)
{
	char probe[64], tag[17];

	random_tag(tag);
	snprintf(probe, sizeof probe, ".cowrun-probe.%ld.%s", (long)getpid(), tag);
	int fd = create_new_at(dirfd, probe, O_WRONLY, 0600);
	if (fd < 0)
		return -1;
	close(fd);
	unlinkat(dirfd, probe, 0);
	return 0;
}

/* The run's two refusals of an output directory, with their messages:
 * one that is a link (or no directory), and, run as root, one another
 * user owns (that user could swap what it holds while root writes
 * there).  Each returns 1 after its message, else 0. */
static int refuse_not_a_directory(const char *dir)
{
	warnx_("output directory '%s' is a symbolic link or not a directory: "
	       "give the directory itself", dir);
	return 1;
}

static int refuse_foreign_owner(const char *dir, const struct stat *st)
{
	if (geteuid() != 0 || st->st_uid == 0)
		return 0;
	warnx_("output directory '%s' belongs to uid %ld: refusing to write there as root "
	       "(run as its owner, or give a directory root owns)", dir, (long)st->st_uid);
	return 1;
}

int outdir_check_existing(const char *dir)
{
	struct stat st;

	if (lstat(dir, &st) != 0)
		return 0;   /* it will be created, with its parents */
	if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode))
		return refuse_not_a_directory(dir) ? -1 : 0;
	return refuse_foreign_owner(dir, &st) ? -1 : 0;
}

/* A direct run's output directory: created by name (`at`, absolute; `dir`
 * as given, for messages), then opened once, its last component not
 * followed.  Returns the descriptor, or -1 after a
 * message. */
static int open_outdir(const char *at, const char *dir)
{
	struct stat st;
	int fd;

	if (make_dirs(at) != 0) {
		warnx_("cannot create output directory '%s': %s", dir, strerror(errno));
		return -1;
	}
	if ((fd = open_dir_nofollow(at)) < 0) {
		if (errno == ELOOP || errno == ENOTDIR)
			refuse_not_a_directory(dir);
		else
			warnx_("cannot open output directory '%s': %s", dir, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == 0 && refuse_foreign_owner(dir, &st)) {
		close(fd);
		return -1;
	}
	return fd;
}

int outdir_make(void *ctx)
{
	struct batch *b = ctx;

	if (!(b->workload->flags & COWRUN_WRITES_REPORTS))
		return 0;
	if (!b->outdir_open) {
		if ((b->outdir_fd = open_outdir(b->outdir_at ? b->outdir_at : b->outdir,
						b->outdir)) < 0)
			return -1;
		b->outdir_open = 1;
	}
	if (probe_writable(b->outdir_fd) != 0) {
		warnx_("cannot write in output directory '%s': %s", b->outdir, strerror(errno));
		return -1;
	}
	size_t removed = outdir_remove_stale_at(b->outdir_fd);
	if (removed > 0 && b->verbose)
		warnx_("removed %zu stale temporary files of dead runs from '%s'", removed,
		       b->outdir);
	return 0;
}

/* The PID of `name` if it is one of this host's temporary names,
 * ".NAME.HOST.PID.TAG.tmp" (TAG 16 hex digits) or ".NAME.HOST.PID.tmp"
 * (cowrun 0.3), NAME not empty; else 0. */
static long temp_pid(const char *name, const char *host)
{
	size_t len = strlen(name), hlen = strlen(host);

	if (name[0] != '.' || len < 4 || strcmp(name + len - 4, ".tmp") != 0)
		return 0;
	const char *end = name + len - 4, *digits;
	if (end - name > 17 && end[-17] == '.' && strspn(end - 16, "0123456789abcdef") >= 16)
		end -= 17;   /* the tag */
	digits = end;
	while (digits > name && digits[-1] >= '0' && digits[-1] <= '9')
		digits--;
	/* before the pid: ".HOST.", after at least ".N" */
	if (digits == end || end - digits > 9 || (size_t)(digits - name) < hlen + 4 ||
	    digits[-1] != '.' || memcmp(digits - 1 - hlen, host, hlen) != 0 ||
	    digits[-2 - (long)hlen] != '.')
		return 0;
	return strtol(digits, NULL, 10);
}

/* Does process `pid` live on this host (EPERM: it does, not ours)? */
static int alive(long pid)
{
	return kill((pid_t)pid, 0) == 0 || errno == EPERM;
}

/* The stale temporary files in an open directory stream. */
static size_t remove_stale_in(DIR *d)
{
	const char *host = host_tag();
	struct dirent *e;
	size_t removed = 0;

	while ((e = readdir(d)) != NULL) {
		long pid = temp_pid(e->d_name, host);
		if (pid <= 0 || alive(pid))
			continue;
		/* A report's private directory ({}) is a directory. */
		if (unlinkat(dirfd(d), e->d_name, 0) == 0 ||
		    (errno == EISDIR && remove_flat_dir_at(dirfd(d), e->d_name) == 0))
			removed++;
	}
	closedir(d);
	return removed;
}

size_t outdir_remove_stale_at(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (d == NULL && fd >= 0)
		close(fd);
	return d ? remove_stale_in(d) : 0;
}
