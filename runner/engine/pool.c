/*
 * pool.c - fork mode, the parent's side.
 *
 * The parent forks a fixed table of workers after setup (worker.c is the
 * child's side).  It poll()s their result pipes and the signal pipe, hands
 * each outcome to the batch (which merges in task order), reaps a worker by
 * its exact pid when its pipe reaches end of file, and settles what the
 * worker left: the task it died in fails (or is retried), claimed tasks it
 * never reported go back to the queue, and a replacement is forked from
 * this pristine parent.  It also enforces --timeout (SIGTERM, then SIGKILL
 * after a grace period), --halt and the first/second SIGINT.
 */
#define _GNU_SOURCE
#include "pool_internal.h"
#include "task.h"
#include "os/command_run.h"
#include "os/memavail.h"
#include "os/signals.h"
#include "os/util.h"
#include "os/process.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define PIPE_BUFFER_BYTES (64 * 1024)
#define MAX_WORKERS 4096
/* SIGTERM, then SIGKILL this much later (a command's supervisor waits as long) */
#define KILL_GRACE_NS ((uint64_t)COMMAND_KILL_GRACE_MS * 1000000u)
#define BAR_REFRESH_MS 200
#define MEMORY_LOOK_MS 100          /* --memfree: how often the parent looks */

/* Bytes as whole MiB, for messages. */
static char *format_mib(char *buf, size_t size, size_t bytes)
{
	snprintf(buf, size, "%.0f", (double)bytes / 1048576.0);
	return buf;
}

size_t pool_max_workers(void)
{
	struct rlimit rl;
	size_t max = MAX_WORKERS;

	/* One descriptor per worker, two while forking, plus a margin. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < max + 32)
		max = rl.rlim_cur > 64 ? (size_t)rl.rlim_cur - 32 : 32;
	return max;
}

/* ---- setting up ---- */

/* The area shared with the workers: anonymous, or a memfd when a standby
 * may join (it was forked before the area existed), with a copy of the
 * task list after the requeue list (the standby's copy of the parent
 * never saw it).  Returns 0 or -1 with errno. */
static int map_shared_area(struct pool *p)
{
	const struct batch *b = p->batch;
	int fd = -1;

	p->shared_fd = -1;
	if (standby_fits(b)) {
		if (b->selected) {
			p->selected_off = p->shared_size;
			p->shared_size += b->nselected * sizeof *b->selected;
		}
		fd = memfd_create("cowrun-pool", MFD_CLOEXEC);
		if (fd >= 0 && ftruncate(fd, (off_t)p->shared_size) != 0) {
			close(fd);
			fd = -1;
		}
		if (fd < 0)
			return -1;
	}
	p->shared_map = mmap(NULL, p->shared_size, PROT_READ | PROT_WRITE,
			     fd >= 0 ? MAP_SHARED : MAP_SHARED | MAP_ANONYMOUS, fd, 0);
	if (p->shared_map == MAP_FAILED) {
		p->shared_map = NULL;
		if (fd >= 0)
			close(fd);
		return -1;
	}
	p->shared_fd = fd;
	if (p->selected_off)
		memcpy((char *)p->shared_map + p->selected_off, b->selected,
		       b->nselected * sizeof *b->selected);
	return 0;
}

static commit_done_fn commit_done;

static int pool_init(struct pool *p, struct batch *b, size_t workers,
		     const struct pool_options *opt, struct pool_stats *stats)
{
	memset(p, 0, sizeof *p);
	p->batch = b;
	p->nworkers = workers;
	p->stats = stats;
	p->parent_pid = getpid();
	p->timeout_ns = opt->timeout_ns;
	p->tasks_per_worker = opt->tasks_per_worker;
	p->catch_frozen_writes = opt->catch_frozen_writes;
	p->measure_memory = opt->measure_memory;
	p->memfree = opt->memfree;
	p->send_timing = b->joblog != NULL || b->timeline != NULL;
	/* Each task is requeued at most once per attempt. */
	p->requeue_cap = batch_count(b) * ((size_t)b->retries + 1) + workers;
	p->slots = calloc(workers, sizeof *p->slots);
	p->pollfds = calloc(workers + 3, sizeof *p->pollfds);
	p->poll_slot = calloc(workers + 1, sizeof *p->poll_slot);
	p->retry_queued = calloc(b->ntasks + 1, 1);
	p->held = calloc(b->ntasks + 1, sizeof *p->held);
	size_t slots_off = sizeof(struct shared_area);
	size_t requeue_off = slots_off + workers * sizeof(struct shared_slot);
	size_t failed_off = requeue_off + p->requeue_cap * sizeof(uint64_t);
	p->shared_size = failed_off + (b->ntasks + 1) * sizeof(uint64_t);
	p->reap_later = opt->reap_later;
	if (map_shared_area(p) != 0)
		return -1;
	p->shared = p->shared_map;
	p->shared->failed_off = failed_off;
	p->shared_slots = (struct shared_slot *)((char *)p->shared_map + slots_off);
	p->requeue = (_Atomic uint64_t *)((char *)p->shared_map + requeue_off);
	/* The signal handler sets it: nothing is claimed after a Ctrl-C. */
	signals_stop_flag(&p->shared->stop);
	if (!p->slots || !p->pollfds || !p->poll_slot || !p->retry_queued || !p->held)
		return -1;
	for (size_t i = 0; i < workers; i++)
		if (wire_reader_init(&p->slots[i].reader, PIPE_BUFFER_BYTES) != 0)
			return -1;
	/* Without it, each worker commits its own reports. */
	p->commits = commits_open(b, workers < 4 ? (unsigned)workers : 4, commit_done, p);
	p->parent_commits = p->commits != NULL;
	return 0;
}

static void pool_free(struct pool *p)
{
	commits_close(p->commits);
	for (size_t i = 0; p->slots && i < p->nworkers; i++)
		wire_reader_free(&p->slots[i].reader);
	free(p->slots);
	free(p->pollfds);
	free(p->poll_slot);
	free(p->retry_queued);
	free(p->held);
	signals_stop_flag(NULL);
	if (p->shared_map)
		munmap(p->shared_map, p->shared_size);
	if (p->shared_fd >= 0)
		close(p->shared_fd);
}

/* Tasks not yet claimed by any worker. */
static uint64_t tasks_unclaimed(const struct pool *p)
{
	uint64_t next = atomic_load(&p->shared->next_task);
	uint64_t count = batch_count(p->batch);
	uint64_t requeued = atomic_load(&p->shared->requeue_count) -
			    atomic_load(&p->shared->requeue_claimed);

	return (next < count ? count - next : 0) + requeued;
}

/* A worker for slot i on its result pipe `fds`: the standby if one fits
 * (its fork paid before the batch), else a fork.  Returns its pid, or -1
 * with errno; *took is the fork's duration. */
static pid_t start_worker(struct pool *p, size_t i, const int fds[2], uint64_t *took)
{
	if (p->shared_fd >= 0 && standby_fits(p->batch)) {
		pid_t pid = standby_hand(p, i, fds[1], took);
		if (pid > 0) {
			p->stats->standby++;
			return pid;
		}
	}
	fflush(NULL); /* else buffered output would be written twice */
	/* The parent's own fsync threads (commits.h) aside. */
	size_t threads = procstat_threads() - commits_threads(p->commits);
	if (threads > p->stats->threads_at_fork)
		p->stats->threads_at_fork = threads;
	uint64_t t0 = now_ns();
	p->fork_started_ns = t0;
	pid_t pid = fork();
	*took = now_ns() - t0;
	if (pid == 0) {
		close(fds[0]);
		worker_main(p, i, fds[1]);
	}
	if (pid > 0) {
		p->stats->forks++;
		p->stats->fork_ns_total += *took;
		if (*took > p->stats->fork_ns_max)
			p->stats->fork_ns_max = *took;
	}
	return pid;
}

/* A signal for worker `pid` goes to its process group (it leads one):
 * what its task forked on its own (system(), a subprocess) gets it too;
 * a report command has its supervisor (os/command_run.h).  A worker that
 * has not yet made its group gets it alone. */
static void signal_worker(pid_t pid, int sig)
{
	if (kill(-pid, sig) != 0 && errno == ESRCH)
		kill(pid, sig);
}

/* Start the worker for table slot i.  Returns 0 or -1 with errno. */
static int spawn_worker(struct pool *p, size_t i)
{
	struct worker_slot *s = &p->slots[i];
	uint64_t took = 0;
	int fds[2];

	if (pipe2(fds, O_CLOEXEC) != 0)
		return -1;
	atomic_store(&p->shared_slots[i].current, NO_TASK);
	atomic_store(&p->shared_slots[i].chunk_start, 0);
	atomic_store(&p->shared_slots[i].chunk_end, 0);
	atomic_store(&p->shared_slots[i].claimed, 0);
	atomic_store(&p->shared_slots[i].live, 1);
	pid_t pid = start_worker(p, i, fds, &took);
	if (pid < 0) {
		int saved = errno;
		atomic_store(&p->shared_slots[i].live, 0);
		close(fds[0]);
		close(fds[1]);
		errno = saved;
		return -1;
	}
	/* Also here, so the group exists whichever process runs first. */
	setpgid(pid, pid);
	close(fds[1]);
	s->state = SLOT_BUSY;
	s->pid = pid;
	s->fd = fds[0];
	s->corrupt = s->has_timing = s->stopped_by_us = s->said_goodbye = 0;
	s->timed_out_task = NO_TASK;
	s->kill_at_ns = 0;
	s->fork_ns = took;
	s->reader.start = s->reader.end = 0;
	p->live++;
	return 0;
}

/* Fork the whole table (workers <= tasks, so each has work to find).  A
 * fork failure after the first only shrinks the pool. */
static int start_workers(struct pool *p)
{
	for (size_t i = 0; i < p->nworkers; i++) {
		if (spawn_worker(p, i) == 0)
			continue;
		warnx_("cannot fork worker %zu of %zu: %s", i + 1, p->nworkers, strerror(errno));
		return p->live > 0 ? 0 : -1;
	}
	return 0;
}

/* Fail every unresolved task: the pool cannot run them. */
static void abandon_pending(struct pool *p, const char *why)
{
	for (size_t i = 0; i < batch_count(p->batch); i++)
		if (batch_pending(p->batch, batch_task(p->batch, i)))
			batch_failed(p->batch, batch_task(p->batch, i), why);
}

/* Live workers that can still claim a task: all of them, less those
 * that have used their --tasks-per-worker quota and are about to leave. */
static size_t workers_with_quota(const struct pool *p)
{
	size_t n = 0;

	if (p->tasks_per_worker == 0)
		return p->live;
	for (size_t i = 0; i < p->nworkers; i++)
		if (p->slots[i].state == SLOT_BUSY &&
		    atomic_load(&p->shared_slots[i].claimed) < p->tasks_per_worker)
			n++;
	return n;
}

/* After deaths, or workers leaving at their --tasks-per-worker quota:
 * fork replacements while the table has room and there is unclaimed work
 * for them.  A fork failure with workers still alive only shrinks the
 * pool. */
static int top_up(struct pool *p)
{
	if (batch_stopping(p->batch))
		return 0;
	if (p->deaths_since_progress > p->nworkers + 2) {
		abandon_pending(p, "not run: workers keep dying before finishing any task");
		return 0;
	}
	for (size_t i = 0; i < p->nworkers; i++) {
		if (p->slots[i].state == SLOT_BUSY)
			continue;
		if (workers_with_quota(p) >= tasks_unclaimed(p))
			break;
		if (spawn_worker(p, i) != 0) {
			warnx_("cannot fork a worker: %s", strerror(errno));
			if (p->live == 0)
				return -1;
			break;
		}
	}
	return 0;
}

/* ---- settling tasks ---- */

/* Queue task k to run again.  Full only after many deaths; what does not
 * fit stays pending and the sweep picks it up once the pool is idle. */
static void requeue_task(struct pool *p, uint64_t k)
{
	uint64_t count = atomic_load(&p->shared->requeue_count);

	if (count >= p->requeue_cap)
		return;
	atomic_store_explicit(&p->requeue[count], k, memory_order_relaxed);
	p->retry_queued[k] = RETRY_QUEUED;
	atomic_store_explicit(&p->shared->requeue_count, count + 1, memory_order_release);
}

/* Task k's retry: queued now, or with --retry-delay held by this parent
 * until it is due (a printer that fails fast is given time to recover,
 * and no worker waits meanwhile). */
static void queue_retry(struct pool *p, size_t k)
{
	uint64_t delay = batch_retry_delay_ns(p->batch, k);

	if (delay == 0) {
		requeue_task(p, k);
		return;
	}
	p->held[p->nheld++] = (struct held_retry){ k, now_ns() + delay };
	p->retry_queued[k] = RETRY_HELD;
}

/* Queue the held retries that are due. */
static void release_due_retries(struct pool *p)
{
	uint64_t now = now_ns();
	size_t kept = 0;

	for (size_t i = 0; i < p->nheld; i++) {
		if (p->held[i].due_ns <= now)
			requeue_task(p, p->held[i].task);
		else
			p->held[kept++] = p->held[i];
	}
	p->nheld = kept;
}

/* Milliseconds until the next held retry is due (rounded up), or -1 if
 * none is held. */
static int ms_until_retry(const struct pool *p)
{
	uint64_t now = now_ns(), next = UINT64_MAX;

	for (size_t i = 0; i < p->nheld; i++)
		if (p->held[i].due_ns < next)
			next = p->held[i].due_ns;
	if (next == UINT64_MAX)
		return -1;
	return next <= now ? 0 : (int)((next - now + 999999) / 1000000);
}

/* An attempt at task k failed in slot a->worker; queue a retry if it has
 * attempts left.  The slot is marked as one that failed the task, so a
 * worker there leaves the retry to another slot (worker.c). */
static void attempt_failed(struct pool *p, const struct attempt *a, const char *why)
{
	p->retry_queued[a->task] = 0;
	atomic_fetch_or(&failed_slots(p->shared_map)[a->task], slot_bit(a->worker));
	if (batch_attempt_failed(p->batch, a, why))
		queue_retry(p, a->task);
}

/* The attempt a dead worker was in: its times, and how it ended. */
static void dead_attempt(const struct pool *p, size_t i, uint64_t k, int status,
			 struct attempt *a)
{
	const struct worker_slot *s = &p->slots[i];

	memset(a, 0, sizeof *a);
	a->task = (size_t)k;
	a->worker = (unsigned)i;
	a->pid = (long)s->pid;
	a->start_ns = atomic_load(&p->shared_slots[i].current_start);
	a->end_ns = now_ns();
	if (WIFSIGNALED(status))
		a->signal = WTERMSIG(status);
	/* A worker that exited mid-task failed, even with status 0. */
	a->exitval = WIFEXITED(status) && WEXITSTATUS(status) ? WEXITSTATUS(status)
							      : !WIFSIGNALED(status);
	if (s->timed_out_task == k)
		a->exitval = -1; /* GNU Parallel's mark for a timeout */
}

/* The task a dead worker was running: failed, timed out, or (if we killed
 * the worker for another reason) simply not finished. */
static void settle_current_task(struct pool *p, size_t i, uint64_t k, int status)
{
	struct worker_slot *s = &p->slots[i];
	struct batch *b = p->batch;
	char how[160], why[256];
	struct attempt a;

	if (!batch_pending(b, (size_t)k))
		return;
	if (b->workload->flags & COWRUN_WRITES_REPORTS) {
		char name[COWRUN_NAME_MAX];
		b->workload->task_name(b->state, (size_t)k, name, sizeof name);
		task_remove_report(batch_outdir_fd(b), name, (long)s->pid);
	}
	if (s->stopped_by_us) {
		b->killed++; /* --halt now or a second signal: not finished, not failed */
		return;
	}
	if (s->memfree_killed) {
		char left[32];
		dead_attempt(p, i, k, status, &a);
		snprintf(why, sizeof why, "was killed by --memfree (%s MiB available)",
			 format_mib(left, sizeof left, mem_available_bytes()));
		batch_attempt_requeued(b, &a, why);
		requeue_task(p, k);
		return;
	}
	if (s->timed_out_task != NO_TASK && s->timed_out_task != k) {
		requeue_task(p, k); /* caught by a kill meant for the task before */
		return;
	}
	dead_attempt(p, i, k, status, &a);
	if (WIFEXITED(status) && WEXITSTATUS(status) == WORKER_EXIT_FROZEN)
		snprintf(why, sizeof why, "%s", p->shared_slots[i].fault);
	else if (a.exitval == -1)
		snprintf(why, sizeof why, "timed out after %.3f s (--timeout)", p->timeout_ns / 1e9);
	else
		snprintf(why, sizeof why, "worker %ld %s%s", (long)s->pid,
			 describe_wait_status(status, how, sizeof how),
			 WIFEXITED(status) ? " before finishing the task" : "");
	attempt_failed(p, &a, why);
}

/* A worker has been reaped: settle its current task and its chunk. */
static void worker_ended(struct pool *p, size_t i, int status)
{
	struct worker_slot *s = &p->slots[i];
	struct shared_slot *sh = &p->shared_slots[i];
	uint64_t current = atomic_load(&sh->current);
	uint64_t start = atomic_load(&sh->chunk_start), end = atomic_load(&sh->chunk_end);
	int clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;

	if (!clean || current != NO_TASK)
		p->stats->worker_deaths++;
	if (current != NO_TASK) {
		settle_current_task(p, i, current, status);
	} else if (!clean && !s->stopped_by_us) {
		char how[160];
		warnx_("worker %ld %s between tasks", (long)s->pid,
		       describe_wait_status(status, how, sizeof how));
		p->deaths_since_progress++;
	}
	/* Claimed, never reported: run again (unless the run is stopping). */
	for (uint64_t pos = start; pos < end && !batch_stopping(p->batch); pos++) {
		size_t k = batch_task(p->batch, (size_t)pos);
		if (k != current && batch_pending(p->batch, k) && !p->retry_queued[k])
			requeue_task(p, k);
	}
	if (s->memfree_killed)
		p->memfree_killing = 0;
	s->state = SLOT_DONE;
	atomic_store(&sh->live, 0);
	p->live--;
}

/* Workers settled at their last frame and still exiting (reap_later). */
static struct {
	pid_t *pids;
	size_t n, cap;
} leaving;

/* Worker i sent its last frame, and nothing can follow but its exit:
 * settle it as a clean exit now, and leave the wait for that exit (its
 * page tables' teardown: a third of a millisecond for a 1 GiB setup) to
 * pool_reap_later().  A worker killed after its last frame had done all
 * its work: nothing is lost by not looking. */
static void worker_left(struct pool *p, size_t i)
{
	struct worker_slot *s = &p->slots[i];

	if (leaving.n == leaving.cap) {
		size_t cap = leaving.cap ? 2 * leaving.cap : 16;
		pid_t *more = realloc(leaving.pids, cap * sizeof *more);
		if (more == NULL)
			return;   /* reaped at end of file, as without reap_later */
		leaving.pids = more;
		leaving.cap = cap;
	}
	leaving.pids[leaving.n++] = s->pid;
	close(s->fd);
	s->fd = -1;
	worker_ended(p, i, 0);
}

/* Wait, until `deadline` at most, for the members left of group `pgid`
 * (ours: the pool is a subreaper) to end.  Returns 1 if some are still
 * running then, 0 if none is left. */
static int wait_group_until(pid_t pgid, uint64_t deadline)
{
	for (;;) {
		pid_t got = waitpid(-pgid, NULL, WNOHANG);
		if (got > 0 || (got < 0 && errno == EINTR))
			continue;
		if (got < 0)
			return 0;   /* ECHILD: no member left */
		if (now_ns() >= deadline)
			return 1;
		poll(NULL, 0, 10);
	}
}

/*
 * Reap worker `pid` and what it left in its process group, so no process
 * a task forked outlives the worker, and a replacement in the slot (its
 * {%}) never runs beside the previous command.  Returns what
 * reap_child() does.
 *
 * A worker we sent SIGTERM (`grace_until` in the future) sent it to its
 * group too: the commands get the rest of the grace period to end, as
 * the task had (the pool waits, only here).  Reaping the worker first is
 * safe then: while a member of its group lives, its id is not handed to
 * a new process.  Any other end: the group is killed while the worker is
 * still unreaped (waitid WNOWAIT), so its id cannot have been taken.
 */
static pid_t reap_worker_group(pid_t pid, int *status, uint64_t grace_until)
{
	siginfo_t info;
	pid_t got;

	if (grace_until > now_ns()) {
		got = reap_child(pid, status);
		if (wait_group_until(pid, grace_until))
			kill(-pid, SIGKILL);
	} else {
		while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) != 0 && errno == EINTR)
			;
		kill(-pid, SIGKILL);   /* its id held by the unreaped worker */
		got = reap_child(pid, status);
	}
	while (waitpid(-pid, NULL, 0) > 0 || errno == EINTR)
		;
	return got;
}

/* A leaving worker's group goes as a reaped one's does: what a task of
 * its forked and left running (a served batch's) ends with it. */
void pool_reap_later(void)
{
	for (size_t i = 0; i < leaving.n; i++)
		reap_worker_group(leaving.pids[i], NULL, 0);
	free(leaving.pids);
	leaving.pids = NULL;
	leaving.n = leaving.cap = 0;
}

/*
 * The supervisor of the command worker i was running when it died: in a
 * group of its own (os/command_run.h), so not reaped with the worker's, and
 * ours now (the pool is a subreaper).  It takes its command's group down
 * (SIGTERM, the grace period, SIGKILL) and exits: wait for it, so no
 * command outlives the run and a replacement never runs beside it.  A pid
 * that is a live worker's is a stale value (the worker reaped its
 * supervisor and died before clearing it, and the pid was reused): left
 * alone.  One still there well after its grace period is killed.
 */
static void wait_supervisor(struct pool *p, size_t i)
{
	pid_t sup = atomic_exchange(&p->shared_slots[i].supervisor, 0);
	uint64_t deadline = now_ns() + KILL_GRACE_NS + 1000000000u;

	if (sup <= 0)
		return;
	for (size_t j = 0; j < p->nworkers; j++)
		if (j != i && p->slots[j].state == SLOT_BUSY && p->slots[j].pid == sup)
			return;
	for (;;) {
		pid_t got = waitpid(sup, NULL, WNOHANG);
		if (got != 0 && !(got < 0 && errno == EINTR))
			return;   /* reaped, or not ours (ECHILD) */
		if (now_ns() >= deadline) {
			kill(sup, SIGKILL);
			reap_child(sup, NULL);
			return;
		}
		poll(NULL, 0, 10);
	}
}

static void reap_worker(struct pool *p, size_t i)
{
	struct worker_slot *s = &p->slots[i];
	int status;

	if (wire_reader_pending(&s->reader) > 0 && !s->corrupt)
		warnx_("worker %ld: %zu bytes of an unfinished record discarded",
		       (long)s->pid, wire_reader_pending(&s->reader));
	close(s->fd);
	s->fd = -1;
	uint64_t grace = s->kill_at_ns != UINT64_MAX ? s->kill_at_ns : 0;

	if (reap_worker_group(s->pid, &status, grace) < 0) {
		/* Not our child any more: nothing to reap. */
		warnx_("waitpid(%ld): %s", (long)s->pid, strerror(errno));
		status = 0;
	}
	wait_supervisor(p, i);
	worker_ended(p, i, status);
}

/* ---- reading results ---- */

/* The attempt a RESULT or FAILED frame ends, from the TIMING frame sent
 * just before it (if timing is on). */
static void reported_attempt(const struct pool *p, size_t i, const struct wire_frame *f,
			     struct attempt *a)
{
	const struct worker_slot *s = &p->slots[i];

	memset(a, 0, sizeof *a);
	a->task = (size_t)f->task;
	a->worker = (unsigned)i;
	a->pid = (long)s->pid;
	if (s->has_timing) {
		a->start_ns = s->timing.start_ns;
		a->end_ns = s->timing.end_ns;
	}
	if (f->type == WIRE_RESULT || f->type == WIRE_RESULT_TO_COMMIT)
		a->received = f->length;
	else
		a->exitval = 1;
}

/* Keep a worker's WIRE_STATS report, with the parent's side added. */
static int keep_stats(struct pool *p, size_t i, const struct wire_frame *f)
{
	struct pool_stats *st = p->stats;
	struct worker_stats ws;

	if (f->length != sizeof ws)
		return 1;
	p->slots[i].said_goodbye = 1;   /* its last frame: it only exits now */
	memcpy(&ws, f->payload, sizeof ws);
	ws.fork_ns = p->slots[i].fork_ns;
	ws.slot = i;
	ws.pid = (uint64_t)p->slots[i].pid;
	struct worker_stats *more = realloc(st->per_worker, (st->nper_worker + 1) * sizeof ws);
	if (more == NULL)
		return 0; /* statistics are not worth failing the run for */
	st->per_worker = more;
	st->per_worker[st->nper_worker++] = ws;
	return 0;
}

/* A commit of a handed-over report has ended (commits.h): its result
 * counted, or its task failed. */
static int commit_done(void *ctx, const struct attempt *a, const void *record, size_t len,
		       const char *why)
{
	struct pool *p = ctx;

	p->retry_queued[a->task] = 0;
	if (why == NULL)
		return batch_attempt_ok(p->batch, a, record, len);
	struct attempt failed = *a;
	failed.exitval = 1;
	failed.received = 0;
	attempt_failed(p, &failed, why);
	return 0;
}

/* A WIRE_RESULT_TO_COMMIT frame: its report committed here, its result
 * held meanwhile; its task is not run again if its worker dies.  Returns
 * 0, 1 if no worker of ours could have sent it, or -1. */
static int take_to_commit(struct pool *p, const struct wire_frame *f, const struct attempt *a)
{
	if (p->commits == NULL)
		return 1;
	int rc = commits_take(p->commits, a, f->payload, f->length);
	if (rc == 1)
		p->retry_queued[a->task] = COMMIT_IN_FLIGHT;
	return rc < 0 ? -1 : 0;
}

/* Hand one frame to the batch.  Returns 0, 1 if the stream is corrupt, or
 * -1 on a fatal error. */
static int take_frame(struct pool *p, size_t i, const struct wire_frame *f)
{
	struct worker_slot *s = &p->slots[i];
	struct attempt a;
	char why[600];

	if (f->type == WIRE_STATS)
		return keep_stats(p, i, f);
	if (f->task >= p->batch->ntasks)
		return 1;
	if (f->type == WIRE_TIMING && f->length == sizeof s->timing) {
		memcpy(&s->timing, f->payload, sizeof s->timing);
		s->has_timing = 1;
		return 0;
	}
	if (f->type != WIRE_RESULT && f->type != WIRE_FAILED && f->type != WIRE_RESULT_TO_COMMIT)
		return 1;
	p->deaths_since_progress = 0;
	reported_attempt(p, i, f, &a);
	s->has_timing = 0;
	if (f->type == WIRE_RESULT_TO_COMMIT)
		return take_to_commit(p, f, &a);
	if (f->type == WIRE_RESULT) {
		p->retry_queued[a.task] = 0;
		return batch_attempt_ok(p->batch, &a, f->payload, f->length);
	}
	snprintf(why, sizeof why, "%.*s", (int)(f->length < 512 ? f->length : 512),
		 (const char *)f->payload);
	attempt_failed(p, &a, why);
	return 0;
}

/* Read what worker i sent; reap it at end of file. */
static int service_worker(struct pool *p, size_t i)
{
	struct worker_slot *s = &p->slots[i];
	struct wire_frame f;
	int rc;

	long n = wire_reader_fill(&s->reader, s->fd);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		if (n < 0)
			warnx_("reading from worker %ld: %s", (long)s->pid, strerror(errno));
		reap_worker(p, i);
		return 0;
	}
	if (s->corrupt) {
		s->reader.start = s->reader.end = 0;
		return 0;
	}
	while ((rc = wire_reader_next(&s->reader, &f)) == 1) {
		rc = take_frame(p, i, &f);
		if (rc < 0)
			return -1;
		if (rc > 0)
			break;
	}
	if (rc != 0) {
		warnx_("worker %ld sent a corrupt result stream: stopping it", (long)s->pid);
		s->corrupt = 1;
		signal_worker(s->pid, SIGKILL);
	} else if (s->said_goodbye && p->reap_later && wire_reader_pending(&s->reader) == 0 &&
		   tasks_unclaimed(p) == 0 && p->nheld == 0) {
		/* (With work left, a held retry included, a replacement would
		 * be forked beside a worker still exiting: then its exit is
		 * waited for.) */
		worker_left(p, i);
	}
	return 0;
}

/* ---- time limits and stopping ---- */

/* SIGTERM a worker now, SIGKILL it after the grace period. */
static void terminate_worker(struct worker_slot *s, uint64_t now)
{
	if (s->kill_at_ns != 0)
		return;
	signal_worker(s->pid, SIGTERM);
	s->kill_at_ns = now + KILL_GRACE_NS;
}

/* Enforce --timeout and the grace periods.  Returns the milliseconds
 * until the next deadline, or -1 if there is none. */
static int enforce_deadlines(struct pool *p)
{
	uint64_t now = now_ns(), next = UINT64_MAX;

	for (size_t i = 0; i < p->nworkers; i++) {
		struct worker_slot *s = &p->slots[i];
		if (s->state != SLOT_BUSY)
			continue;
		if (s->kill_at_ns && now >= s->kill_at_ns) {
			signal_worker(s->pid, SIGKILL);
			s->kill_at_ns = UINT64_MAX; /* sent; no more deadlines */
		} else if (s->kill_at_ns && s->kill_at_ns < next) {
			next = s->kill_at_ns;
		}
		uint64_t k = atomic_load_explicit(&p->shared_slots[i].current, memory_order_acquire);
		if (p->timeout_ns == 0 || k == NO_TASK || s->timed_out_task != NO_TASK)
			continue;
		uint64_t due = atomic_load(&p->shared_slots[i].current_start) + p->timeout_ns;
		if (now >= due) {
			s->timed_out_task = k;
			terminate_worker(s, now);
		} else if (due < next) {
			next = due;
		}
	}
	/* A task that starts after this look has a deadline we cannot see
	 * yet: look again within a twentieth of the limit (at most 100 ms). */
	if (p->timeout_ns) {
		uint64_t soon = now + (p->timeout_ns / 20 < 100000000u ? p->timeout_ns / 20 : 100000000u);
		if (soon < next)
			next = soon;
	}
	return next == UINT64_MAX ? -1 : (int)((next - now) / 1000000 + 1);
}

/* --halt or a signal: stop claiming; on "now" or a second signal, take
 * the running workers down too. */
static void apply_stopping(struct pool *p)
{
	if (!batch_stopping(p->batch))
		return;
	atomic_store(&p->shared->stop, 1);
	if (!batch_killing(p->batch))
		return;
	for (size_t i = 0; i < p->nworkers; i++) {
		struct worker_slot *s = &p->slots[i];
		if (s->state == SLOT_BUSY && !s->stopped_by_us) {
			s->stopped_by_us = 1;
			terminate_worker(s, now_ns());
		}
	}
}

/* ---- --memfree ---- */

/* The worker that started its current task last, if more than one runs
 * a task (the last one never goes); -1 if none. */
static long youngest_running(const struct pool *p)
{
	long youngest = -1;
	size_t running = 0;
	uint64_t latest = 0;

	for (size_t i = 0; i < p->nworkers; i++) {
		const struct worker_slot *s = &p->slots[i];
		if (s->state != SLOT_BUSY || s->kill_at_ns ||
		    atomic_load(&p->shared_slots[i].current) == NO_TASK)
			continue;
		running++;
		uint64_t start = atomic_load(&p->shared_slots[i].current_start);
		if (youngest < 0 || start >= latest) {
			youngest = (long)i;
			latest = start;
		}
	}
	return running > 1 ? youngest : -1;
}

/* Below --memfree, hold the hand-out (the workers wait before claiming);
 * below half of it, kill the youngest running task's worker, one at a
 * time.  At most every MEMORY_LOOK_MS. */
static void watch_memory(struct pool *p)
{
	uint64_t now = now_ns();

	if (p->memfree == 0 || now - p->memory_seen_ns < MEMORY_LOOK_MS * 1000000ull)
		return;
	p->memory_seen_ns = now;
	size_t avail = mem_available_bytes();
	int hold = avail < p->memfree;
	if (hold != atomic_load(&p->shared->hold)) {
		char have[32], want[32];
		atomic_store(&p->shared->hold, hold);
		warnx_(hold ? "--memfree: %s MiB available, below %s MiB: no new task for now"
			    : "--memfree: %s MiB available again (%s MiB wanted): tasks handed out",
		       format_mib(have, sizeof have, avail), format_mib(want, sizeof want, p->memfree));
	}
	long young = avail < p->memfree / 2 && !p->memfree_killing ? youngest_running(p) : -1;
	if (young < 0)
		return;
	p->slots[young].memfree_killed = 1;
	p->slots[young].kill_at_ns = UINT64_MAX;   /* no other deadline applies */
	p->memfree_killing = 1;
	signal_worker(p->slots[young].pid, SIGKILL);
}

/* ---- the loop ---- */

/* Wait until a worker has something to say, a signal arrives or a deadline
 * passes, and deal with it. */
static int wait_for_output(struct pool *p)
{
	size_t n = 0;
	int timeout = enforce_deadlines(p);

	if (p->batch->progress.enabled && (timeout < 0 || timeout > BAR_REFRESH_MS))
		timeout = BAR_REFRESH_MS;
	if (p->memfree && (timeout < 0 || timeout > MEMORY_LOOK_MS))
		timeout = MEMORY_LOOK_MS;
	int retry = ms_until_retry(p);
	if (retry >= 0 && (timeout < 0 || timeout > retry))
		timeout = retry;
	for (size_t i = 0; i < p->nworkers; i++) {
		if (p->slots[i].state != SLOT_BUSY)
			continue;
		p->pollfds[n] = (struct pollfd){ .fd = p->slots[i].fd, .events = POLLIN };
		p->poll_slot[n++] = i;
	}
	p->pollfds[n] = (struct pollfd){ .fd = signals_fd(), .events = POLLIN };
	/* A served batch's client: gone (or talking) means cancelled. */
	p->pollfds[n + 1] = (struct pollfd){ .fd = signals_watched_fd(), .events = POLLIN };
	/* A report's fsync has ended (commits.h). */
	p->pollfds[n + 2] = (struct pollfd){ .fd = commits_poll_fd(p->commits), .events = POLLIN };
	if (poll(p->pollfds, n + 3, timeout) < 0)
		return errno == EINTR ? 0 : -1;
	if (p->pollfds[n].revents)
		signals_drain();
	if (p->pollfds[n + 1].revents)
		signals_watched_gone();
	if (p->pollfds[n + 2].revents && commits_finish(p->commits, 0) != 0)
		return -1;
	for (size_t j = 0; j < n; j++)
		if (p->pollfds[j].revents && service_worker(p, p->poll_slot[j]) != 0)
			return -1;
	progress_update(&p->batch->progress, p->batch->succeeded + p->batch->failed,
			p->batch->failed, 0);
	watch_memory(p);
	apply_stopping(p);
	return 0;
}

/* When every worker has exited but tasks are unresolved (a claim whose
 * worker died before publishing it, or a full requeue list): requeue them
 * all.  Never while a retry is held for --retry-delay: run_loop waits for
 * it first.  Returns how many. */
static size_t sweep_unresolved(struct pool *p)
{
	uint64_t next = atomic_load(&p->shared->next_task);
	size_t found = 0;

	atomic_store(&p->shared->requeue_count, 0);
	atomic_store(&p->shared->requeue_taken, 0);
	atomic_store(&p->shared->requeue_claimed, 0);
	for (uint64_t pos = 0; pos < next && pos < batch_count(p->batch); pos++) {
		size_t k = batch_task(p->batch, (size_t)pos);
		if (batch_pending(p->batch, k)) {
			requeue_task(p, k);
			found++;
		}
	}
	return found;
}

/* Something went wrong in the runner itself: take every worker down. */
static void kill_all(struct pool *p)
{
	for (size_t i = 0; i < p->nworkers; i++) {
		struct worker_slot *s = &p->slots[i];
		if (s->state != SLOT_BUSY)
			continue;
		signal_worker(s->pid, SIGKILL);
		close(s->fd);
		reap_worker_group(s->pid, NULL, 0);
		wait_supervisor(p, i);
		s->state = SLOT_DONE;
	}
	p->live = 0;
}

/* Until every task is resolved, or the run stops and its workers are gone. */
static int run_loop(struct pool *p)
{
	struct batch *b = p->batch;

	while (!batch_complete(b)) {
		release_due_retries(p);
		if (top_up(p) != 0)
			return -1;
		if (p->live == 0 && commits_in_flight(p->commits) > 0) {
			/* Their tasks are not unresolved: their reports are on their way. */
			if (commits_finish(p->commits, 1) != 0)
				return -1;
			continue;
		}
		if (p->live == 0) {
			if (batch_stopping(b))
				return 0; /* the rest was never started */
			if (p->nheld > 0) {
				/* Only retries held for --retry-delay are left:
				 * sleep until the next is due (or a signal). */
				if (wait_for_output(p) != 0)
					return -1;
				continue;
			}
			if (sweep_unresolved(p) == 0) {
				abandon_pending(p, "not run: no worker claimed it");
				return 0;
			}
			continue;
		}
		if (wait_for_output(p) != 0)
			return -1;
	}
	/* Everything is merged; let the workers notice and exit. */
	while (p->live > 0)
		if (wait_for_output(p) != 0)
			return -1;
	return 0;
}

int pool_run(struct batch *b, size_t workers, const struct pool_options *opt,
	     struct pool_stats *stats)
{
	struct pool p;
	int rc = -1, was_subreaper = 0;

	/* What a task spawned and left behind becomes ours when its worker
	 * ends, to be killed and reaped before the slot is used again. */
	prctl(PR_GET_CHILD_SUBREAPER, &was_subreaper);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	memset(stats, 0, sizeof *stats);
	stats->workers = workers;
	if (pool_init(&p, b, workers, opt, stats) != 0) {
		warnx_("cannot set up %zu workers: %s", workers, strerror(errno));
	} else {
		watch_memory(&p);   /* --memfree holds the hand-out from the start */
		if (start_workers(&p) == 0)
			rc = run_loop(&p);
	}
	if (rc != 0 && p.slots)
		kill_all(&p);
	pool_free(&p);
	prctl(PR_SET_CHILD_SUBREAPER, was_subreaper);
	return rc;
}
