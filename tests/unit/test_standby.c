/*
 * test_standby.c - unit tests for the standby worker (runner/engine/
 * standby.c) and reap_later (runner/engine/pool.c): a worker forked before
 * its batch runs exactly the batch's selected tasks, with the parent's
 * setup as it was at its fork and its batch's options; a standby that
 * fits nothing, or died, leaves the batch to fork its workers; a batch
 * with reap_later leaves its workers exiting and pool_reap_later() reaps
 * every one of them; no child is left behind.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "engine/batch.h"
#include "engine/pool.h"

#define NTASKS 40

/* The setup: a number each task reads, set before any fork.  The merge
 * adds up what the tasks send and notes which ran. */
struct state {
	uint64_t base;
	uint64_t sum;
	int merged[NTASKS];
	pid_t ran_in[NTASKS];
};

static size_t ntasks(const void *state)
{
	(void)state;
	return NTASKS;
}

static void task_name(const void *state, size_t k, char *buf, size_t size)
{
	(void)state;
	snprintf(buf, size, "t%zu", k);
}

/* How many times each task ran, in any process (MAP_SHARED, made before
 * any fork). */
static _Atomic int *runs;

/* Task k sends base + k and the pid it ran in. */
static int run(const void *state, size_t k, struct cowrun_task *task)
{
	const struct state *s = state;

	runs[k]++;
	uint64_t rec[2] = { s->base + k, (uint64_t)getpid() };

	return cowrun_emit(task, rec, sizeof rec);
}

static int merge(void *state, size_t k, const void *record, size_t len)
{
	struct state *s = state;
	uint64_t rec[2];

	if (len != sizeof rec)
		return -1;
	memcpy(rec, record, sizeof rec);
	s->sum += rec[0];
	s->merged[k]++;
	s->ran_in[k] = (pid_t)rec[1];
	return 0;
}

static int finish(void *state, FILE *out)
{
	(void)state;
	(void)out;
	return 0;
}

static const struct cowrun_workload workload = {
	.abi_version = COWRUN_ABI_VERSION, .name = "standby-test",
	.ntasks = ntasks, .task_name = task_name, .run = run, .merge = merge,
	.finish = finish,
};

static struct state st;

/* No child of this process is left, alive or a zombie. */
static void assert_no_child(void)
{
	errno = 0;
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

/* This process's child named cowrun-standby (from /proc), or -1. */
static pid_t find_standby(void)
{
	DIR *proc = opendir("/proc");
	struct dirent *d;
	pid_t found = -1;

	assert_non_null(proc);
	while (found < 0 && (d = readdir(proc)) != NULL) {
		char path[300], line[512], comm[64];
		int pid, ppid;
		snprintf(path, sizeof path, "/proc/%s/stat", d->d_name);
		FILE *f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(line, sizeof line, f) != NULL &&
		    sscanf(line, "%d (%63[^)]) %*c %d", &pid, comm, &ppid) == 3 &&
		    ppid == getpid() && strcmp(comm, "cowrun-standby") == 0)
			found = pid;
		fclose(f);
	}
	closedir(proc);
	return found;
}

/* The standby, once it has named itself (at most 10 s). */
static pid_t standby_pid(void)
{
	pid_t pid = -1;

	for (int i = 0; i < 10000 && (pid = find_standby()) < 0; i++)
		usleep(1000);
	return pid;
}

/* Run the batch (selected: NULL for all tasks) on `workers` workers. */
static void run_batch(const size_t *selected, size_t nselected, size_t workers,
		      int reap_later, struct pool_stats *stats)
{
	struct batch b = { 0 };
	struct pool_options opt = { .catch_frozen_writes = 0, .reap_later = reap_later };

	b.workload = &workload;
	b.state = &st;
	b.ntasks = NTASKS;
	b.selected = selected;
	b.nselected = nselected;
	assert_int_equal(batch_init(&b), 0);
	assert_int_equal(pool_run(&b, workers, &opt, stats), 0);
	assert_true(batch_complete(&b));
	assert_int_equal(b.failed, 0);
	batch_free(&b);
}

/* Every task on `workers` workers: `standby` of them the standby, `forks`
 * forked; the sum of every task's base + k merged. */
static void run_all(size_t workers, int reap_later, size_t standby, size_t forks,
		    struct pool_stats *stats)
{
	run_batch(NULL, 0, workers, reap_later, stats);
	assert_int_equal(stats->standby, standby);
	assert_int_equal(stats->forks, forks);
	assert_int_equal(st.sum, st.base * NTASKS + NTASKS * (NTASKS - 1) / 2);
}

static void reset(uint64_t base)
{
	memset(&st, 0, sizeof st);
	st.base = base;
	if (runs == NULL) {
		runs = mmap(NULL, NTASKS * sizeof *runs, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		assert_true(runs != MAP_FAILED);
	}
	for (size_t k = 0; k < NTASKS; k++)
		runs[k] = 0;
}

/* The standby runs the selected tasks, and only them, with the setup it
 * was forked with, as slot 0; the second worker is forked. */
static void test_standby_runs_the_selection(void **unused)
{
	static const size_t selected[] = { 3, 4, 5, 17, 39 };
	struct pool_stats stats;
	uint64_t want = 0;

	(void)unused;
	reset(1000);
	assert_int_equal(pool_standby_fork(&workload, &st, NULL, 0), 0);
	pid_t standby = standby_pid();
	assert_true(standby > 0);
	run_batch(selected, 5, 2, 0, &stats);
	assert_int_equal(stats.standby, 1);
	assert_int_equal(stats.forks, 1);
	/* It was a worker of the batch: its last frame is there. */
	int reported = 0;
	for (size_t i = 0; i < stats.nper_worker; i++)
		reported += stats.per_worker[i].pid == (uint64_t)standby &&
			    stats.per_worker[i].slot == 0;
	assert_int_equal(reported, 1);
	for (size_t i = 0; i < 5; i++)
		want += 1000 + selected[i];
	assert_int_equal(st.sum, want);
	for (size_t k = 0; k < NTASKS; k++) {
		int chosen = k == 3 || k == 4 || k == 5 || k == 17 || k == 39;
		assert_int_equal(st.merged[k], chosen);
		assert_int_equal(runs[k], chosen);   /* run once, and only if chosen */
	}
	free(stats.per_worker);
	assert_no_child();
}

/* A standby whose workload is not the batch's stays unused (and is
 * dropped); one killed while it waits leaves the batch to fork. */
static void test_standby_that_does_not_fit_or_died(void **unused)
{
	static const struct cowrun_workload other = { .abi_version = COWRUN_ABI_VERSION };
	struct pool_stats stats;

	(void)unused;
	reset(7);
	assert_int_equal(pool_standby_fork(&other, &st, NULL, 0), 0);
	run_all(1, 0, 0, 1, &stats);
	free(stats.per_worker);
	pool_standby_drop();
	assert_no_child();

	reset(9);
	assert_int_equal(pool_standby_fork(&workload, &st, NULL, 0), 0);
	pid_t standby = standby_pid();
	assert_true(standby > 0);
	assert_int_equal(kill(standby, SIGKILL), 0);
	siginfo_t si = { 0 };   /* dead (not reaped): its end of the pair closed */
	assert_int_equal(waitid(P_PID, (id_t)standby, &si, WEXITED | WNOWAIT), 0);
	run_all(2, 0, 0, 2, &stats);
	free(stats.per_worker);
	assert_no_child();
}

/* reap_later: pool_run() returns with workers still to reap; the pids
 * the tasks ran in are those; pool_reap_later() reaps them all. */
static void test_reap_later(void **unused)
{
	struct pool_stats stats;

	(void)unused;
	reset(0);
	assert_int_equal(pool_standby_fork(&workload, &st, NULL, 0), 0);
	run_all(2, 1, 1, 1, &stats);
	size_t unreaped = 0;
	for (size_t i = 0; i < stats.nper_worker; i++) {
		siginfo_t si = { 0 };
		if (waitid(P_PID, (id_t)stats.per_worker[i].pid, &si, WEXITED | WNOWAIT) == 0)
			unreaped++;
	}
	assert_int_equal(unreaped, stats.nper_worker);
	pool_reap_later();
	free(stats.per_worker);
	assert_no_child();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_standby_runs_the_selection),
		cmocka_unit_test(test_standby_that_does_not_fit_or_died),
		cmocka_unit_test(test_reap_later),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
