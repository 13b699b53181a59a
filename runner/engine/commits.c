/*
 * commits.c - the reports fork workers hand over, committed by the pool's
 * parent (commits.h).  Each one in flight is a held result and the open
 * temporary file whose fsync runs; its tag in os/fsyncahead.h is its place
 * in the table.
 */
#define _GNU_SOURCE
#include "commits.h"
#include "taskreport.h"
#include "os/fileops.h"
#include "os/fsyncahead.h"
#include "os/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define COMMITS_MAX 256   /* in flight at once; past it, one waits */

struct held_commit {
	int fd;                  /* the temporary report, open; -1: free entry */
	struct attempt attempt;  /* its task, worker, pid, times */
	unsigned char *record;
	size_t len;
};

struct commits {
	struct fsync_ahead aio;
	struct held_commit held[COMMITS_MAX];
	size_t in_flight;
};

int commits_open(struct pool *p)
{
	struct commits *c = calloc(1, sizeof *c);

	p->parent_commits = 0;
	p->commits = NULL;
	if (c == NULL)
		return 0;
	if (fsync_ahead_open(&c->aio, COMMITS_MAX) != 0) {
		free(c);
		return 0;   /* no AIO here: each worker fsyncs its own */
	}
	for (size_t i = 0; i < COMMITS_MAX; i++)
		c->held[i].fd = -1;
	p->commits = c;
	p->parent_commits = 1;
	return 0;
}

/* The report's temporary and final names, in the batch's directory. */
static void report_paths(const struct pool *p, const struct attempt *a, char *temp,
			 char *final, size_t size)
{
	const struct batch *b = p->batch;
	char name[COWRUN_NAME_MAX];

	b->workload->task_name(b->state, a->task, name, sizeof name);
	task_report_paths(temp, final, size, name, a->pid);
}

/* The commit of one report has ended (err: 0 or the fsync's errno, the
 * temporary closed): rename it, count the result or fail the task. */
static int settle(struct pool *p, const struct attempt *a, const void *record, size_t len,
		  int err)
{
	struct batch *b = p->batch;
	char temp[PATH_MAX], final[PATH_MAX], why[PATH_MAX + 80];
	const char *dir = batch_outdir_label(b);

	report_paths(p, a, temp, final, sizeof temp);
	if (err == 0 && commit_rename_at(batch_outdir_fd(b), temp, final) != 0)
		err = errno;   /* the temporary is removed */
	else if (err != 0)
		unlinkat(batch_outdir_fd(b), temp, 0);
	p->retry_queued[a->task] = 0;
	if (err == 0)
		return batch_attempt_ok(b, a, record, len);
	struct attempt failed = *a;
	failed.exitval = 1;
	failed.received = 0;
	snprintf(why, sizeof why, "cannot write '%s%s%s': %s", dir ? dir : "", dir ? "/" : "",
		 final, strerror(err));
	pool_attempt_failed(p, &failed, why);
	return 0;
}

/* The temporary report a worker handed over, opened to fsync it.
 * Returns the descriptor, or -1 with errno. */
static int open_handed_over(const struct pool *p, const struct attempt *a)
{
	char temp[PATH_MAX], final[PATH_MAX];
	struct stat st;

	report_paths(p, a, temp, final, sizeof temp);
	int fd = openat(batch_outdir_fd(p->batch), temp, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
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

/* A free entry of the table, waiting for a commit to end if all are
 * taken.  Returns its index, or -1 on a fatal error. */
static long free_entry(struct pool *p)
{
	struct commits *c = p->commits;

	while (c->in_flight == COMMITS_MAX)
		if (commits_finish(p, 1) != 0)
			return -1;
	for (size_t i = 0; i < COMMITS_MAX; i++)
		if (c->held[i].fd < 0)
			return (long)i;
	return -1;
}

int commits_take(struct pool *p, const struct wire_frame *f, const struct attempt *a)
{
	struct commits *c = p->commits;
	int fd = c ? open_handed_over(p, a) : -1;

	if (fd < 0)   /* never from a worker of ours: a stream gone wrong */
		return settle(p, a, NULL, 0, c ? errno : EINVAL);
	long i = free_entry(p);
	unsigned char *copy = i >= 0 ? malloc(f->length ? f->length : 1) : NULL;
	if (copy == NULL || fsync_ahead_start(&c->aio, fd, (uint64_t)i) != 1) {
		/* Here and now, as a worker would. */
		int err = fsync(fd) != 0 ? errno : 0;
		free(copy);
		close(fd);
		return i < 0 ? -1 : settle(p, a, f->payload, f->length, err);
	}
	memcpy(copy, f->payload, f->length);
	c->held[i] = (struct held_commit){ fd, *a, copy, f->length };
	c->in_flight++;
	p->retry_queued[a->task] = COMMIT_IN_FLIGHT;
	return 0;
}

int commits_poll_fd(const struct pool *p)
{
	return p->commits && p->commits->in_flight ? p->commits->aio.ended_fd : -1;
}

size_t commits_in_flight(const struct pool *p)
{
	return p->commits ? p->commits->in_flight : 0;
}

int commits_finish(struct pool *p, int wait)
{
	struct commits *c = p->commits;
	uint64_t tags[16];
	int errs[16], rc = 0;

	if (c == NULL || c->in_flight == 0)
		return 0;
	int n = fsync_ahead_ended(&c->aio, tags, errs, 16, wait);
	if (n < 0) {
		warnx_("waiting for reports to reach the disk: %s", strerror(errno));
		return -1;
	}
	for (int j = 0; j < n; j++) {
		struct held_commit *h = &c->held[tags[j]];
		close(h->fd);
		h->fd = -1;
		c->in_flight--;
		if (settle(p, &h->attempt, h->record, h->len, errs[j]) != 0)
			rc = -1;
		free(h->record);
		h->record = NULL;
	}
	return rc;
}

void commits_close(struct pool *p)
{
	struct commits *c = p->commits;

	if (c == NULL)
		return;
	while (c->in_flight > 0 && commits_finish(p, 1) == 0)
		;
	for (size_t i = 0; i < COMMITS_MAX; i++)   /* after a failure: let go */
		if (c->held[i].fd >= 0) {
			close(c->held[i].fd);
			free(c->held[i].record);
		}
	fsync_ahead_close(&c->aio);
	free(c);
	p->commits = NULL;
}
