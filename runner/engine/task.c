/*
 * task.c - running one task and the API a workload calls inside run():
 * cowrun_report(), cowrun_emit(), cowrun_task_error(), cowrun_error().
 */
#define _GNU_SOURCE
#include "task.h"
#include "os/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *current_workload = "cowrun";
/* cowrun_error()'s calls in this process: how the dry run tells a plan()
 * that refused its options from one that cannot name its tasks (both
 * return NULL, and the ABI 3 member has no other way to say which). */
static unsigned long errors_reported;

void task_set_current_workload(const char *name)
{
	current_workload = name;
}

static int verbosity;

void task_set_verbosity(int verbose)
{
	verbosity = verbose;
}

int cowrun_verbosity(void)
{
	return verbosity;
}

void cowrun_error(const char *fmt, ...)
{
	char *message = NULL;
	va_list ap;

	errors_reported++;
	va_start(ap, fmt);
	int n = vasprintf(&message, fmt, ap);
	va_end(ap);
	/* Whole, however long: warnx_() shortens the values it quotes. */
	warnx_("%s: %s", current_workload, n < 0 ? fmt : message);
	if (n >= 0)
		free(message);
}

unsigned long task_errors_reported(void)
{
	return errors_reported;
}

void cowrun_task_error(struct cowrun_task *task, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(task->error, sizeof task->error, fmt, ap);
	va_end(ap);
}

int cowrun_emit(struct cowrun_task *task, const void *bytes, size_t len)
{
	size_t need = task->record_len + len;

	if (need > task->record_cap) {
		size_t cap = task->record_cap ? task->record_cap : 64;
		while (cap < need)
			cap *= 2;
		unsigned char *bigger = realloc(task->record, cap);
		if (bigger == NULL) {
			cowrun_task_error(task, "out of memory for a %zu-byte result", need);
			return -1;
		}
		task->record = bigger;
		task->record_cap = cap;
	}
	memcpy(task->record + task->record_len, bytes, len);
	task->record_len = need;
	return 0;
}

/* The task's name, formatted on first use: most tasks of a batch of
 * small ones never need it. */
static const char *task_name_of(struct cowrun_task *t, const void *state)
{
	if (t->name[0] == '\0')
		t->workload->task_name(state, t->index, t->name, sizeof t->name);
	return t->name;
}

/* "OUTDIR/" before a report's name in a message, as two strings: the
 * directory's name and its slash, or nothing. */
#define in_dir(t) ((t)->outdir ? (t)->outdir : ""), ((t)->outdir ? "/" : "")

FILE *cowrun_report(struct cowrun_task *task)
{
	if (task->report != NULL)
		return task->report;
	task_name_of(task, task->state);
	if (!(task->workload->flags & COWRUN_WRITES_REPORTS)) {
		cowrun_task_error(task, "workload asked for a report but is not flagged COWRUN_WRITES_REPORTS");
		return NULL;
	}
	task_report_paths(task->temp_path, task->final_path, sizeof task->temp_path,
			  task->name, (long)getpid());
	int fd = create_new_at(task->dirfd, task->temp_path, O_WRONLY, 0666);
	if (fd < 0 || (task->report = fdopen(fd, "w")) == NULL) {
		cowrun_task_error(task, "cannot create '%s%s%s': %s", in_dir(task), task->temp_path,
				  strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	return task->report;
}

/* Flush, fsync and close the report, then rename it into place.  On any
 * error the temporary file is removed and t->error says why. */
static int commit_report(struct cowrun_task *t)
{
	FILE *f = t->report;
	int err = 0;

	t->report = NULL;
	if (fflush(f) != 0 || ferror(f))
		err = errno ? errno : EIO;
	else if (fsync(fileno(f)) != 0)
		err = errno;
	if (fclose(f) != 0 && err == 0)
		err = errno;
	if (err == 0 && renameat(t->dirfd, t->temp_path, t->dirfd, t->final_path) != 0)
		err = errno;
	if (err != 0) {
		cowrun_task_error(t, "cannot write '%s%s%s': %s", in_dir(t), t->final_path,
				  strerror(err));
		unlinkat(t->dirfd, t->temp_path, 0);
		return -1;
	}
	return 0;
}

/* The temporary report names' unpredictable part, one per batch. */
static char temp_tag[17] = "0000000000000000";

void task_new_temp_tag(void)
{
	random_tag(temp_tag);
}

const char *task_temp_tag(void)
{
	return temp_tag;
}

void task_set_temp_tag(const char *tag)
{
	snprintf(temp_tag, sizeof temp_tag, "%s", tag);
}

void task_report_paths(char *temp, char *final, size_t size, const char *name, long pid)
{
	snprintf(temp, size, ".%s.%s.%ld.%s.tmp", name, host_tag(), pid, temp_tag);
	snprintf(final, size, "%s", name);
}

void task_remove_report(int dirfd, const char *name, long pid)
{
	char temp[PATH_MAX], final[PATH_MAX];

	task_report_paths(temp, final, sizeof temp, name, pid);
	unlinkat(dirfd, temp, 0);
	/* A report left by an earlier run is not this run's: a failed task
	 * has no report. */
	unlinkat(dirfd, final, 0);
}

static void discard_report(struct cowrun_task *t)
{
	if (t->report == NULL)
		return;
	fclose(t->report);
	t->report = NULL;
	unlinkat(t->dirfd, t->temp_path, 0);
}

void task_init(struct cowrun_task *t, const struct cowrun_workload *w,
	       const char *outdir, int dirfd)
{
	memset(t, 0, sizeof *t);
	t->workload = w;
	t->outdir = outdir;
	t->dirfd = dirfd;
}

int task_execute(struct cowrun_task *t, const void *state, size_t k)
{
	t->index = k;
	t->state = state;
	t->record_len = 0;
	t->error[0] = '\0';
	t->name[0] = '\0';
	errno = 0;
	int rc = t->workload->run(state, k, t);
	if (rc != 0) {
		if (t->error[0] == '\0')
			snprintf(t->error, sizeof t->error, "run() returned %d without saying why", rc);
		discard_report(t);
		goto failed;
	}
	if (t->report != NULL && commit_report(t) != 0)
		goto failed;
	return 0;
failed:
	if (t->workload->flags & COWRUN_WRITES_REPORTS)
		task_remove_report(t->dirfd, task_name_of(t, state), (long)getpid());
	return -1;
}

void task_free(struct cowrun_task *t)
{
	discard_report(t);
	free(t->record);
	t->record = NULL;
	t->record_len = t->record_cap = 0;
}
