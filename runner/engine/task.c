/*
 * task.c - running one task and the API a workload calls inside run():
 * cowrun_emit(), cowrun_task_error(), cowrun_command(); the report itself
 * (cowrun_report(), its names, its commit) is taskreport.c; the workload's
 * messages (cowrun_error(), cowrun_verbosity()) are os/workmsg.c.
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
	       const char *outdir, int dirfd, const struct report_route *route)
{
	memset(t, 0, sizeof *t);
	t->workload = w;
	t->outdir = outdir;
	t->dirfd = dirfd;
	t->route = route;
	t->slot = 1;
}

/* What a failed task leaves is removed: no report under its name. */
static int task_failed(struct cowrun_task *t)
{
	if (t->workload->flags & COWRUN_WRITES_REPORTS)
		task_remove_report(t->dirfd, task_name_of(t, t->state), (long)getpid());
	return -1;
}

int task_run(struct cowrun_task *t, const void *state, size_t k)
{
	t->index = k;
	t->state = state;
	t->record_len = 0;
	t->error[0] = '\0';
	t->name[0] = '\0';
	t->handed_over = 0;
	errno = 0;
	int rc = t->workload->run(state, k, t);
	if (rc != 0) {
		if (t->error[0] == '\0')
			snprintf(t->error, sizeof t->error, "run() returned %d without saying why", rc);
		abandon_command(t);
		task_discard_report(t);
		return task_failed(t);
	}
	if (finish_command(t) != 0) {
		task_discard_report(t);
		return task_failed(t);
	}
	return 0;
}

int task_commit(struct cowrun_task *t, int hand_over)
{
	t->handed_over = 0;
	if (t->report == NULL)
		return 0;
	if ((hand_over ? task_hand_over_report(t) : task_commit_report(t)) != 0)
		return task_failed(t);
	return 0;
}

int task_execute(struct cowrun_task *t, const void *state, size_t k)
{
	return task_run(t, state, k) == 0 && task_commit(t, 0) == 0 ? 0 : -1;
}

void task_free(struct cowrun_task *t)
{
	abandon_command(t);
	task_discard_report(t);
	free(t->record);
	t->record = NULL;
	t->record_len = t->record_cap = 0;
}
