/*
 * resume.c - --resume and --resume-failed.  See resume.h.
 */
#include "resume.h"
#include "files/joblog.h"
#include "files/results.h"
#include "os/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char *resume_journal_path(const char *joblog, char *buf, size_t size)
{
	snprintf(buf, size, "%s.res", joblog[0] == '+' ? joblog + 1 : joblog);
	return buf;
}

/* journal_load's callback: keep the latest outcome of each task. */
static int take_outcome(void *ctx, const struct wire_frame *f)
{
	struct resume_state *r = ctx;
	size_t k = (size_t)f->task;

	if (f->task >= r->ntasks)
		return 0;
	void *copy = malloc(f->length ? f->length : 1);
	if (copy == NULL)
		return 0; /* the task simply runs again */
	memcpy(copy, f->payload, f->length);
	free(r->bytes[k]);
	r->bytes[k] = copy;
	r->length[k] = f->length;
	r->outcome[k] = (unsigned char)f->type;
	return 0;
}

/* Is there a journal to resume from?  1 yes, 0 no (a first run), -1
 * refused after a message (a joblog with lines but no journal). */
static int journal_there(const char *log, const char *path, const int fds[2])
{
	struct stat st;
	int there = fds ? fstat(fds[1], &st) == 0 && st.st_size > 0 : access(path, F_OK) == 0;

	if (there)
		return 1;
	if (fds ? joblog_is_empty_fd(fds[0]) : joblog_is_empty(log))
		return 0; /* a first run: nothing to resume */
	warnx_("--resume: '%s' exists but its results journal '%s' does not", log, path);
	return -1;
}

int resume_load(struct resume_state *r, const char *joblog, const char *workload,
		const char *identity, size_t ntasks, int rerun_failed, const int fds[2])
{
	char path[4096];
	const char *log = joblog[0] == '+' ? joblog + 1 : joblog;

	memset(r, 0, sizeof *r);
	r->ntasks = ntasks;
	r->outcome = calloc(ntasks + 1, 1);
	r->bytes = calloc(ntasks + 1, sizeof *r->bytes);
	r->length = calloc(ntasks + 1, sizeof *r->length);
	if (!r->outcome || !r->bytes || !r->length) {
		warnx_("out of memory for %zu tasks", ntasks);
		return -1;
	}
	(void)workload; /* the joblog was checked when it was locked: sidefiles_lock() */
	resume_journal_path(joblog, path, sizeof path);
	int there = journal_there(log, path, fds);
	if (there <= 0)
		return there;
	r->journal_found = 1;
	if (fds)
		return journal_load_fd(fds[1], path, identity, rerun_failed, take_outcome, r,
				       &r->keep);
	return journal_load(path, identity, rerun_failed, take_outcome, r, &r->keep);
}

/* Does the journal settle task k (so it is not run again)? */
static int settled(const struct resume_state *r, int rerun_failed, size_t k)
{
	return r->outcome[k] == WIRE_RESULT || (r->outcome[k] == WIRE_FAILED && !rerun_failed);
}

void resume_filter(const struct resume_state *r, int rerun_failed, size_t *tasks,
		   size_t *count)
{
	size_t kept = 0;

	for (size_t i = 0; i < *count; i++)
		if (!settled(r, rerun_failed, tasks[i]))
			tasks[kept++] = tasks[i];
	*count = kept;
}

int resume_apply(const struct resume_state *r, int rerun_failed, struct batch *b)
{
	/* Take every settled task back in first: feeding one drains the
	 * merge order past excluded tasks, which must not include these. */
	for (size_t k = 0; k < r->ntasks; k++)
		if (settled(r, rerun_failed, k))
			reorder_include(&b->reorder, k);
	for (size_t k = 0; k < r->ntasks; k++) {
		if (!settled(r, rerun_failed, k))
			continue;
		if (r->outcome[k] == WIRE_FAILED) {
			char why[600];
			snprintf(why, sizeof why, "%.*s (in an earlier run)",
				 (int)(r->length[k] < 512 ? r->length[k] : 512), (char *)r->bytes[k]);
			batch_failed(b, k, why);
		} else if (batch_result(b, k, r->bytes[k], r->length[k]) != 0) {
			return -1;
		}
	}
	return 0;
}

void resume_free(struct resume_state *r)
{
	for (size_t k = 0; r->bytes && k < r->ntasks; k++)
		free(r->bytes[k]);
	free(r->bytes);
	free(r->outcome);
	free(r->length);
	memset(r, 0, sizeof *r);
}
