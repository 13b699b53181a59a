/*
 * commits.c - the reports fork workers hand over, committed by the pool's
 * parent (commits.h).  Each one in flight is a held result and the open
 * temporary file whose fsync runs on a thread (os/fsyncahead.h: its tag
 * there is its place in the table).
 */
#define _GNU_SOURCE
#include "commits.h"
#include "taskreport.h"
#include "os/fileops.h"
#include "os/fsyncahead.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COMMITS_MAX 256   /* in flight at once; past that, one is waited for */

struct held_commit {
	int fd;                  /* the temporary report, open; -1: a free entry */
	struct attempt attempt;  /* its task, worker, pid, times */
	unsigned char *record;
	size_t len;
};

struct commits {
	struct batch *batch;
	commit_done_fn *done;
	void *ctx;
	struct fsync_ahead *fsyncs;
	size_t in_flight;
	struct held_commit held[COMMITS_MAX];
};

struct commits *commits_open(struct batch *b, unsigned threads, commit_done_fn *done,
			     void *ctx)
{
	struct commits *c = calloc(1, sizeof *c);

	if (c == NULL)
		return NULL;
	if ((c->fsyncs = fsync_ahead_open(threads, COMMITS_MAX)) == NULL) {
		free(c);
		return NULL;   /* no threads: each worker fsyncs its own */
	}
	c->batch = b;
	c->done = done;
	c->ctx = ctx;
	for (size_t i = 0; i < COMMITS_MAX; i++)
		c->held[i].fd = -1;
	return c;
}

/* The task's name; its report's temporary and final names in the batch's
 * directory (each buffer PATH_MAX bytes). */
static void report_paths(const struct commits *c, const struct attempt *a, char *name,
			 char *temp, char *final)
{
	const struct batch *b = c->batch;

	b->workload->task_name(b->state, a->task, name, COWRUN_NAME_MAX);
	task_report_paths(temp, final, PATH_MAX, name, a->pid);
}

/* The fsync of one report has ended (err: 0 or its errno; the temporary
 * closed): the rename, then `done`.  A failed task keeps no report, not
 * even an earlier run's. */
static int settle(struct commits *c, const struct attempt *a, const void *record, size_t len,
		  int err)
{
	int dirfd = batch_outdir_fd(c->batch);
	const char *dir = batch_outdir_label(c->batch);
	char name[COWRUN_NAME_MAX], temp[PATH_MAX], final[PATH_MAX], why[PATH_MAX + 80];

	report_paths(c, a, name, temp, final);
	if (err == 0 && commit_rename_at(dirfd, temp, final) != 0)
		err = errno;
	if (err == 0)
		return c->done(c->ctx, a, record, len, NULL);
	task_remove_report(dirfd, name, a->pid);
	snprintf(why, sizeof why, "cannot write '%s%s%s': %s", dir ? dir : "", dir ? "/" : "",
		 final, strerror(err));
	return c->done(c->ctx, a, record, len, why);
}

/* The temporary report a worker handed over, opened to fsync it.
 * Returns the descriptor, or -1 with errno. */
static int open_handed_over(const struct commits *c, const struct attempt *a)
{
	char name[COWRUN_NAME_MAX], temp[PATH_MAX], final[PATH_MAX];
	struct stat st;

	report_paths(c, a, name, temp, final);
	int fd = openat(batch_outdir_fd(c->batch), temp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	int err = fstat(fd, &st) != 0 ? errno : S_ISREG(st.st_mode) ? 0 : EINVAL;
	if (err != 0) {
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

/* A free entry of the table, after waiting for a commit to end if all are
 * taken.  Returns its index, or -1 on a fatal error. */
static long free_entry(struct commits *c)
{
	while (c->in_flight == COMMITS_MAX)
		if (commits_finish(c, 1) != 0)
			return -1;
	for (size_t i = 0; i < COMMITS_MAX; i++)
		if (c->held[i].fd < 0)
			return (long)i;
	return -1;
}

int commits_take(struct commits *c, const struct attempt *a, const void *record, size_t len)
{
	int fd = open_handed_over(c, a);

	if (fd < 0)
		return settle(c, a, record, len, errno) != 0 ? -1 : 0;
	long i = free_entry(c);
	unsigned char *copy = i >= 0 ? malloc(len ? len : 1) : NULL;
	if (copy == NULL || fsync_ahead_start(c->fsyncs, fd, (uint64_t)i) != 1) {
		/* Here and now, as the worker would have. */
		int err = fsync(fd) != 0 ? errno : 0;
		free(copy);
		close(fd);
		return i < 0 || settle(c, a, record, len, err) != 0 ? -1 : 0;
	}
	memcpy(copy, record, len);
	c->held[i] = (struct held_commit){ fd, *a, copy, len };
	c->in_flight++;
	return 1;
}

int commits_poll_fd(const struct commits *c)
{
	return c && c->in_flight ? fsync_ahead_fd(c->fsyncs) : -1;
}

unsigned commits_threads(const struct commits *c)
{
	return c ? fsync_ahead_threads(c->fsyncs) : 0;
}

size_t commits_in_flight(const struct commits *c)
{
	return c ? c->in_flight : 0;
}

int commits_finish(struct commits *c, int wait)
{
	uint64_t tags[16];
	int errs[16], rc = 0;

	if (c == NULL || c->in_flight == 0)
		return 0;
	unsigned n = fsync_ahead_ended(c->fsyncs, tags, errs, 16, wait);
	for (unsigned j = 0; j < n; j++) {
		struct held_commit h = c->held[tags[j]];
		close(h.fd);
		c->held[tags[j]].fd = -1;
		c->in_flight--;
		if (settle(c, &h.attempt, h.record, h.len, errs[j]) != 0)
			rc = -1;
		free(h.record);
	}
	return rc;
}

void commits_close(struct commits *c)
{
	if (c == NULL)
		return;
	while (c->in_flight > 0 && commits_finish(c, 1) == 0)
		;
	for (size_t i = 0; i < COMMITS_MAX; i++)   /* after a failure: let go */
		if (c->held[i].fd >= 0) {
			close(c->held[i].fd);
			free(c->held[i].record);
		}
	fsync_ahead_close(c->fsyncs);
	free(c);
}
