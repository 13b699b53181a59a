/*
 * task.c - running one task and the API a workload calls inside run():
 * cowrun_report(), cowrun_emit(), cowrun_task_error(), cowrun_error().
 */
#define _GNU_SOURCE
#include "task.h"
#include "os/util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

static uint64_t tasks_per_worker;

void task_set_tasks_per_worker(uint64_t quota)
{
	tasks_per_worker = quota;
}

unsigned long long cowrun_tasks_per_worker(void)
{
	return tasks_per_worker;
}

/* The run seed (--seed), the same in every process of the run: set
 * before the setup, and by a standby worker from its brief. */
static uint64_t run_seed;

void task_set_seed(uint64_t seed)
{
	run_seed = seed;
}

uint64_t cowrun_run_seed(void)
{
	return run_seed;
}

uint64_t cowrun_seed_mix(uint64_t seed, uint64_t n)
{
	/* SplitMix64's output n + 1 from state `seed`: a bijection of its
	 * counter, so no two tasks of a run share a seed, and neighbouring
	 * indices or run seeds give unrelated ones. */
	uint64_t z = seed + 0x9e3779b97f4a7c15ull * (n + 1);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t cowrun_task_seed(const struct cowrun_task *task)
{
	return cowrun_seed_mix(run_seed, task->index);
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
	/* Read and write: a report command reads it back from the start. */
	int fd = create_new_at(task->dirfd, task->temp_path, O_RDWR, 0666);
	if (fd < 0 || (task->report = fdopen(fd, "w")) == NULL) {
		cowrun_task_error(task, "cannot create '%s%s%s': %s", in_dir(task), task->temp_path,
				  strerror(errno));
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	return task->report;
}

/* The batch's route for reports (task.h). */
static struct report_route route = { NULL, NULL, "" };

void task_set_report_route(const struct report_route *r)
{
	route = *r;
	if (route.suffix == NULL)
		route.suffix = "";
}

const struct report_route *task_report_route(void)
{
	return &route;
}

int task_report_file(const char *task_name, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s%s", task_name, route.suffix ? route.suffix : "");

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
		cowrun_task_error(t, "cannot create '%s%s%s': %s", in_dir(t), dir, strerror(errno));
		return -1;
	}
	int len = snprintf(inside, sizeof inside, "%s/%s", dir, t->final_path);
	if (len < 0 || (size_t)len >= sizeof inside) {
		cowrun_task_error(t, "cannot show the report in '%s': %s", dir, strerror(ENAMETOOLONG));
		remove_flat_dir_at(t->dirfd, dir);
		return -1;
	}
	if (renameat(t->dirfd, t->temp_path, t->dirfd, inside) != 0 ||
	    absolute_path_of(t->dirfd, dir, path, size) != 0) {
		cowrun_task_error(t, "cannot show the report as '%s%s%s': %s", in_dir(t), inside,
				  strerror(errno));
		renameat(t->dirfd, inside, t->dirfd, t->temp_path);
		remove_flat_dir_at(t->dirfd, dir);
		return -1;
	}
	size_t used = strlen(path);
	len = snprintf(path + used, size - used, "/%s", t->final_path);
	if (len < 0 || (size_t)len >= size - used) {
		cowrun_task_error(t, "cannot show the report in '%s': %s", dir, strerror(ENAMETOOLONG));
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
		cowrun_task_error(t, "cannot read back the report: %s", strerror(errno));
		return -1;
	}
	if (shown && show_report(t, dir, path, sizeof path) != 0)
		return -1;
	if (command_start(c, &v, in, out, &run, why, sizeof why) != 0 ||
	    command_finish(&run, why, sizeof why) != 0) {
		cowrun_task_error(t, "%s", why);
		rc = -1;
	}
	if (shown)
		unshow_report(t, dir);
	return rc;
}

/* fsync and close `fd`, then rename `temp` to the report's final name.
 * Returns 0 or an errno value; the descriptor is closed either way. */
static int keep_as_final(struct cowrun_task *t, int fd, const char *temp)
{
	int err = fsync(fd) != 0 ? errno : 0;

	if (close(fd) != 0 && err == 0)
		err = errno;
	if (err == 0 && renameat(t->dirfd, temp, t->dirfd, t->final_path) != 0)
		err = errno;
	return err;
}

/* The report is written and flushed (descriptor `fd`, under temp_path):
 * pass it through the batch's filter, then keep it or hand it to the
 * sink.  The final name appears only once every command has succeeded.
 * Returns 0, or -1 with t->error; no temporary file is left either way. */
static int route_report(struct cowrun_task *t, int fd)
{
	char filtered[PATH_MAX];
	int rc = 0;

	task_filtered_path(filtered, sizeof filtered, t->name, (long)getpid());
	if (route.filter) {
		int out = create_new_at(t->dirfd, filtered, O_RDWR, 0666);
		if (out < 0) {
			cowrun_task_error(t, "cannot create '%s%s%s': %s", in_dir(t), filtered,
					  strerror(errno));
			return -1;
		}
		rc = run_report_command(t, route.filter, fd, out);
		close(fd);
		unlinkat(t->dirfd, t->temp_path, 0);
		fd = out;
		snprintf(t->temp_path, sizeof t->temp_path, "%s", filtered);
	}
	if (rc == 0 && route.sink) {
		/* Delivered, not kept: the file goes once the sink has read it.
		 * What it says (a printer's job id) is captured, and tagged. */
		rc = run_report_command(t, route.sink, fd, COMMAND_OUT_CAPTURE);
	} else if (rc == 0) {
		int err = keep_as_final(t, fd, t->temp_path);
		fd = -1;
		if (err != 0) {
			cowrun_task_error(t, "cannot write '%s%s%s': %s", in_dir(t), t->final_path,
					  strerror(err));
			rc = -1;
		}
	}
	if (fd >= 0)
		close(fd);
	unlinkat(t->dirfd, t->temp_path, 0);
	return rc;
}

/* Flush the report, then fsync it and rename it into place, or route it
 * through the batch's commands.  On any error the temporary files are
 * removed and t->error says why. */
static int commit_report(struct cowrun_task *t)
{
	FILE *f = t->report;
	int err = 0;

	t->report = NULL;
	if (fflush(f) != 0 || ferror(f))
		err = errno ? errno : EIO;
	if (err == 0 && (route.filter || route.sink)) {
		/* The commands read the file through its own descriptor. */
		int fd = fcntl(fileno(f), F_DUPFD_CLOEXEC, 3);
		fclose(f);
		if (fd < 0) {
			cowrun_task_error(t, "cannot read back the report: %s", strerror(errno));
			unlinkat(t->dirfd, t->temp_path, 0);
			return -1;
		}
		return route_report(t, fd);
	}
	if (err == 0 && fsync(fileno(f)) != 0)
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
	snprintf(temp, size, ".%s%s.%s.%ld.%s.tmp", name, route.suffix, host_tag(), pid, temp_tag);
	task_report_file(name, final, size);
}

void task_filtered_path(char *buf, size_t size, const char *name, long pid)
{
	snprintf(buf, size, ".%s%s.filtered.%s.%ld.%s.tmp", name, route.suffix, host_tag(), pid,
		 temp_tag);
}

void task_private_dir(char *buf, size_t size, const char *name, long pid)
{
	snprintf(buf, size, ".cowrun-%s%s.%s.%ld.%s.tmp", name, route.suffix, host_tag(), pid,
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

static void discard_report(struct cowrun_task *t)
{
	if (t->report == NULL)
		return;
	fclose(t->report);
	t->report = NULL;
	unlinkat(t->dirfd, t->temp_path, 0);
}

/* ---- cowrun_command(): a command the workload feeds ---- */

/* SIGPIPE is held blocked on the feeding thread while its command runs:
 * a command that stops reading early makes the writes fail with EPIPE
 * (the task fails, naming the command) instead of killing the worker, or
 * in serial mode the whole run.  A SIGPIPE left pending is taken before
 * the mask is put back. */
static int hold_sigpipe(struct cowrun_task *t, int hold)
{
	sigset_t pipe_only;
	int pending = 0;

	sigemptyset(&pipe_only);
	sigaddset(&pipe_only, SIGPIPE);
	if (hold) {
		pthread_sigmask(SIG_BLOCK, &pipe_only, &t->mask_before);
		return 0;
	}
	const struct timespec now = { 0, 0 };
	while (sigtimedwait(&pipe_only, NULL, &now) == SIGPIPE)
		pending = 1;
	pthread_sigmask(SIG_SETMASK, &t->mask_before, NULL);
	return pending;
}

FILE *cowrun_command(struct cowrun_task *task, const char *cmd, int how)
{
	char why[sizeof task->error];
	int fds[2] = { -1, -1 }, out = -1;

	task_name_of(task, task->state);
	if (task->started.pid != 0 || (how != COWRUN_TO_REPORT && how != COWRUN_TO_STDERR)) {
		cowrun_task_error(task, "cowrun_command(): %s", task->started.pid ? "one command per task"
				  : "how must be COWRUN_TO_REPORT or COWRUN_TO_STDERR");
		return NULL;
	}
	struct command *c = command_parse("cowrun_command()", cmd ? cmd : "", why, sizeof why);
	if (c == NULL) {
		cowrun_task_error(task, "%s", why);
		return NULL;
	}
	/* The command writes the report: no complete file exists for {}. */
	if (command_uses_path(c)) {
		snprintf(why, sizeof why, "cowrun_command(): {} is the complete report's path, "
			 "and this command writes the report: use {/}, its name");
		goto fail;
	}
	if (how == COWRUN_TO_REPORT) {
		FILE *report = cowrun_report(task);
		if (report == NULL)
			goto fail_quietly;   /* cowrun_report() said why */
		if (fflush(report) != 0) {
			snprintf(why, sizeof why, "cannot write the report: %s", strerror(errno));
			goto fail;
		}
		out = fileno(report);
	} else {
		task_report_file(task->name, task->final_path, sizeof task->final_path);
	}
	const struct command_values v = { task->final_path, (unsigned long long)task->index + 1,
					  task->slot, NULL, task->name };
	if (pipe2(fds, O_CLOEXEC) != 0) {
		snprintf(why, sizeof why, "cowrun_command(): pipe: %s", strerror(errno));
		goto fail;
	}
	if (command_start(c, &v, fds[0], out, &task->started, why, sizeof why) != 0)
		goto fail;
	close(fds[0]);
	command_free(c);
	if ((task->feed = fdopen(fds[1], "w")) == NULL) {
		close(fds[1]);
		command_abandon(&task->started);
		task->started.pid = 0;
		cowrun_task_error(task, "cowrun_command(): %s", strerror(errno));
		return NULL;
	}
	hold_sigpipe(task, 1);
	return task->feed;
fail:
	cowrun_task_error(task, "%s", why);
fail_quietly:
	task->started.pid = 0;   /* a failed start leaves -1: no command to end */
	if (fds[0] >= 0) {
		close(fds[0]);
		close(fds[1]);
	}
	command_free(c);
	return NULL;
}

/* run() returned 0: end the command's input, wait for it.  Returns 0, or
 * -1 with t->error (its input could not be written, or it failed). */
static int finish_command(struct cowrun_task *t)
{
	char why[sizeof t->error];

	if (t->started.pid == 0)
		return 0;
	int write_failed = ferror(t->feed);
	int err = fclose(t->feed) != 0 ? errno : 0;
	t->feed = NULL;
	int rc = command_finish(&t->started, why, sizeof why);
	t->started.pid = 0;
	/* A write that failed while SIGPIPE was held: the pipe broke. */
	if (hold_sigpipe(t, 0))
		err = EPIPE;
	if (rc != 0) {
		cowrun_task_error(t, "%s", why);
		return -1;
	}
	if (err != 0 || write_failed) {
		cowrun_task_error(t, "cannot write to '%s': %s", t->started.label,
				  strerror(err ? err : EIO));
		return -1;
	}
	return 0;
}

/* run() failed, or the task context goes: the command is killed. */
static void abandon_command(struct cowrun_task *t)
{
	if (t->started.pid == 0)
		return;
	fclose(t->feed);
	t->feed = NULL;
	command_abandon(&t->started);
	t->started.pid = 0;
	hold_sigpipe(t, 0);
}

void task_init(struct cowrun_task *t, const struct cowrun_workload *w,
	       const char *outdir, int dirfd)
{
	memset(t, 0, sizeof *t);
	t->workload = w;
	t->outdir = outdir;
	t->dirfd = dirfd;
	t->slot = 1;
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
		abandon_command(t);
		discard_report(t);
		goto failed;
	}
	if (finish_command(t) != 0) {
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
	abandon_command(t);
	discard_report(t);
	free(t->record);
	t->record = NULL;
	t->record_len = t->record_cap = 0;
}
