/*
 * taskreport.c - a task's report: its file (cowrun_report()), its names
 * (the temporary tag, the route's suffix), and its commit: fsync and
 * rename into place, or routed through the batch's --report-filter and
 * --report-to commands.  Split out of task.c, which runs the task.
 */
#define _GNU_SOURCE
#include "taskreport.h"
#include "os/fileops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Why the task failed, into t->error: what report_error() (task.c)
							 * does, kept here so that the report calls nothing in task.c. */
static void report_error(struct cowrun_task *t, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void report_error(struct cowrun_task *t, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->error, sizeof t->error, fmt, ap);
	va_end(ap);
}

/* task_name_of(): taskreport.h. */
const char *task_name_of(struct cowrun_task *t, const void *state)
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
		report_error(task, "workload asked for a report but is not flagged COWRUN_WRITES_REPORTS");
		return NULL;
	}
	task_report_paths(task->temp_path, task->final_path, sizeof task->temp_path,
			  task->name, (long)getpid());
	/* Read and write: a report command reads it back from the start. */
	int fd = create_new_at(task->dirfd, task->temp_path, O_RDWR, 0666);
	if (fd < 0 || (task->report = fdopen(fd, "w")) == NULL) {
		report_error(task, "cannot create '%s%s%s': %s", in_dir(task), task->temp_path,
			     strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	return task->report;
}

/* The report names' suffix in this process (taskreport.h). */
static const char *suffix = "";

void task_set_report_suffix(const char *s)
{
	suffix = s ? s : "";
}

const char *task_report_suffix(void)
{
	return suffix;
}

int task_report_file(const char *task_name, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s%s", task_name, suffix);

	return n < 0 || (size_t)n >= size ? -1 : 0;
}

void task_report_file_of(const struct cowrun_workload *w, const void *state, size_t k,
			 char *buf, size_t size)
{
	char name[COWRUN_NAME_MAX] = "";

	w->task_name(state, k, name, sizeof name);
	task_report_file(name, buf, size);
}

/* ---- {}: the complete report as a file of its own ---- */

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino;
}

/*
 * The absolute path of `dir`, a directory in the output directory, in
 * buf.  The output directory's own path as the kernel knows it (a served
 * batch has only its descriptor), if it leads to the same directory;
 * else the path through /proc/PID/fd, which a command this process runs
 * as its own user can open.  Returns 0, or -1 with errno.
 */
static int absolute_path_of(int dirfd, const char *dir, char *buf, size_t size)
{
	char link[64], real[PATH_MAX];
	struct stat want, got;

	if (fstatat(dirfd, dir, &want, AT_SYMLINK_NOFOLLOW) != 0)
		return -1;
	snprintf(link, sizeof link, "/proc/self/fd/%d", dirfd);
	ssize_t n = readlink(link, real, sizeof real - 1);
	if (n > 0 && real[0] == '/') {
		real[n] = '\0';
		int len = snprintf(buf, size, "%s/%s", n == 1 ? "" : real, dir);
		if (len > 0 && (size_t)len < size && lstat(buf, &got) == 0 && same_file(&want, &got))
			return 0;
	}
	int len = snprintf(buf, size, "/proc/%ld/fd/%d/%s", (long)getpid(), dirfd, dir);
	if (len > 0 && (size_t)len < size && stat(buf, &got) == 0 && same_file(&want, &got))
		return 0;
	errno = ENOENT;
	return -1;
}

/* The command has ended: the report back under its temporary name (the
 * caller goes on with it or removes it), the directory gone with
 * whatever the command left in it. */
static void unshow_report(struct cowrun_task *t, const char *dir)
{
	char inside[PATH_MAX];

	int len = snprintf(inside, sizeof inside, "%s/%s", dir, t->final_path);
	if (len > 0 && (size_t)len < sizeof inside)
		renameat(t->dirfd, inside, t->dirfd, t->temp_path);
	remove_flat_dir_at(t->dirfd, dir);
}

/*
 * Show the report (t->temp_path) under its own name in a private
 * directory, mode 0700, for a command whose text holds {}: GNU Parallel's
 * {/} is basename({}), and an older run's same-named report in the
 * current directory must not be what the command reads.  The directory
 * has a temporary name (task_private_dir()), so a worker killed while
 * the command runs leaves nothing the runner does not remove.  Returns
 * 0 with the file's absolute path in `path`, or -1 with t->error.
 */
static int show_report(struct cowrun_task *t, char *dir, char *path, size_t size)
{
	char inside[PATH_MAX];

	task_private_dir(dir, PATH_MAX, t->name, (long)getpid());
	/* A directory of this pid and tag is a dead task's: this task's now. */
	int made = mkdirat(t->dirfd, dir, 0700);
	if (made != 0 && errno == EEXIST && remove_flat_dir_at(t->dirfd, dir) == 0)
		made = mkdirat(t->dirfd, dir, 0700);
	if (made != 0) {
		report_error(t, "cannot create '%s%s%s': %s", in_dir(t), dir, strerror(errno));
		return -1;
	}
	int len = snprintf(inside, sizeof inside, "%s/%s", dir, t->final_path);
	if (len < 0 || (size_t)len >= sizeof inside) {
		report_error(t, "cannot show the report in '%s': %s", dir, strerror(ENAMETOOLONG));
		remove_flat_dir_at(t->dirfd, dir);
		return -1;
	}
	if (renameat(t->dirfd, t->temp_path, t->dirfd, inside) != 0 ||
	    absolute_path_of(t->dirfd, dir, path, size) != 0) {
		report_error(t, "cannot show the report as '%s%s%s': %s", in_dir(t), inside,
			     strerror(errno));
		renameat(t->dirfd, inside, t->dirfd, t->temp_path);
		remove_flat_dir_at(t->dirfd, dir);
		return -1;
	}
	size_t used = strlen(path);
	len = snprintf(path + used, size - used, "/%s", t->final_path);
	if (len < 0 || (size_t)len >= size - used) {
		report_error(t, "cannot show the report in '%s': %s", dir, strerror(ENAMETOOLONG));
		unshow_report(t, dir);
		return -1;
	}
	return 0;
}

/* Run `c` on this task's report: standard input `in` read from its
 * start, standard output `out` (-1: the task's own, which is standard
 * error during the task phase).  Returns 0, or -1 with t->error naming
 * the command and why. */
static int run_report_command(struct cowrun_task *t, const struct command *c, int in, int out)
{
	char dir[PATH_MAX], path[PATH_MAX];
	int shown = command_uses_path(c);
	const struct command_values v = { t->final_path, (unsigned long long)t->index + 1, t->slot,
					  shown ? path : NULL, t->name };
	struct command_run run;
	char why[sizeof t->error];
	int rc = 0;

	if (lseek(in, 0, SEEK_SET) != 0) {
		report_error(t, "cannot read back the report: %s", strerror(errno));
		return -1;
	}
	if (shown && show_report(t, dir, path, sizeof path) != 0)
		return -1;
	if (command_start(c, &v, in, out, &run, why, sizeof why) != 0 ||
	    command_finish(&run, why, sizeof why) != 0) {
		report_error(t, "%s", why);
		rc = -1;
	}
	if (shown)
		unshow_report(t, dir);
	return rc;
}

/* The report is written and flushed (descriptor `fd`, under temp_path):
 * pass it through the batch's filter, then keep it or hand it to the
 * sink.  The final name appears only once every command has succeeded.
 * Returns 0, or -1 with t->error; no temporary file is left either way. */
static int route_report(struct cowrun_task *t, int fd)
{
	const struct report_route *route = t->route;
	char filtered[PATH_MAX];
	int rc = 0;

	task_filtered_path(filtered, sizeof filtered, t->name, (long)getpid());
	if (route->filter) {
		int out = create_new_at(t->dirfd, filtered, O_RDWR, 0666);
		if (out < 0) {
			report_error(t, "cannot create '%s%s%s': %s", in_dir(t), filtered,
				     strerror(errno));
			return -1;
		}
		rc = run_report_command(t, route->filter, fd, out);
		close(fd);
		unlinkat(t->dirfd, t->temp_path, 0);
		fd = out;
		snprintf(t->temp_path, sizeof t->temp_path, "%s", filtered);
	}
	if (rc == 0 && route->sink) {
		/* Delivered, not kept: the file goes once the sink has read it.
		 * What it says (a printer's job id) is captured, and tagged. */
		rc = run_report_command(t, route->sink, fd, COMMAND_OUT_CAPTURE);
	} else if (rc == 0) {
		int failed = commit_fd_at(t->dirfd, fd, t->temp_path, t->final_path, COMMIT_FSYNC);
		fd = -1;
		if (failed) {
			report_error(t, "cannot write '%s%s%s': %s", in_dir(t), t->final_path,
				     strerror(errno));
			rc = -1;
		}
	}
	if (fd >= 0) {   /* delivered, or a command failed: the file goes */
		close(fd);
		unlinkat(t->dirfd, t->temp_path, 0);
	}
	return rc;   /* committed: renamed, or removed by commit_fd_at() */
}

/* Flush the report, then fsync it and rename it into place, or route it
 * through the batch's commands.  On any error the temporary files are
 * removed and t->error says why. */
int task_commit_report(struct cowrun_task *t)
{
	FILE *f = t->report;
	int err = 0;

	t->report = NULL;
	if (fflush(f) != 0 || ferror(f))
		err = errno ? errno : EIO;
	if (err == 0 && t->route && (t->route->filter || t->route->sink)) {
		/* The commands read the file through its own descriptor. */
		int fd = fcntl(fileno(f), F_DUPFD_CLOEXEC, 3);
		fclose(f);
		if (fd < 0) {
			report_error(t, "cannot read back the report: %s", strerror(errno));
			unlinkat(t->dirfd, t->temp_path, 0);
			return -1;
		}
		return route_report(t, fd);
	}
	if (err != 0) {
		fclose(f);
		unlinkat(t->dirfd, t->temp_path, 0);
	} else if (commit_stream_at(t->dirfd, f, t->temp_path, t->final_path, COMMIT_FSYNC) != 0) {
		err = errno;   /* the temporary is removed */
	}
	if (err != 0) {
		report_error(t, "cannot write '%s%s%s': %s", in_dir(t), t->final_path,
			     strerror(err));
		return -1;
	}
	return 0;
}

int task_hand_over_report(struct cowrun_task *t)
{
	if (t->route && (t->route->filter || t->route->sink))
		return task_commit_report(t);   /* the commands end it */
	FILE *f = t->report;
	int err = fflush(f) != 0 || ferror(f) ? (errno ? errno : EIO) : 0;

	t->report = NULL;
	if (fclose(f) != 0 && err == 0)
		err = errno;
	if (err == 0) {
		t->handed_over = 1;
		return 0;
	}
	unlinkat(t->dirfd, t->temp_path, 0);
	report_error(t, "cannot write '%s%s%s': %s", in_dir(t), t->final_path, strerror(err));
	return -1;
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
	snprintf(temp, size, ".%s%s.%s.%ld.%s.tmp", name, suffix, host_tag(), pid, temp_tag);
	task_report_file(name, final, size);
}

void task_filtered_path(char *buf, size_t size, const char *name, long pid)
{
	snprintf(buf, size, ".%s%s.filtered.%s.%ld.%s.tmp", name, suffix, host_tag(), pid,
		 temp_tag);
}

void task_private_dir(char *buf, size_t size, const char *name, long pid)
{
	snprintf(buf, size, ".cowrun-%s%s.%s.%ld.%s.tmp", name, suffix, host_tag(), pid,
		 temp_tag);
}

void task_remove_report(int dirfd, const char *name, long pid)
{
	char temp[PATH_MAX], final[PATH_MAX];

	task_report_paths(temp, final, sizeof temp, name, pid);
	unlinkat(dirfd, temp, 0);
	task_filtered_path(temp, sizeof temp, name, pid);
	unlinkat(dirfd, temp, 0);
	task_private_dir(temp, sizeof temp, name, pid);
	remove_flat_dir_at(dirfd, temp);
	/* A report left by an earlier run is not this run's: a failed task
	 * has no report. */
	unlinkat(dirfd, final, 0);
}

void task_discard_report(struct cowrun_task *t)
{
	if (t->report == NULL)
		return;
	fclose(t->report);
	t->report = NULL;
	unlinkat(t->dirfd, t->temp_path, 0);
}

