/*
 * pool.c - fork mode.
 *
 * The parent forks a fixed table of workers after setup.  Tasks are handed
 * out through a counter in a small MAP_SHARED area (counting positions in
 * the batch's list of selected tasks): a worker claims a chunk
 * of consecutive tasks with one atomic add, sized from how long its last
 * chunk took (one task at a time for slow tasks, up to CHUNK_MAX for
 * trivial ones), so dispatch costs a few nanoseconds and a slow task never
 * holds others hostage.  Each worker publishes the chunk it claimed and the
 * task it is running, so when it dies the parent knows which task killed it
 * and which claimed tasks never reported; those go to a requeue list in the
 * same shared area and a replacement is forked from the pristine parent.
 *
 * Results come back through one pipe per worker as wire frames, buffered
 * by the worker and flushed before every claim, so everything a worker has
 * not flushed lies in its current chunk.  The parent poll()s the pipes,
 * merges in task order (batch.c), and reaps a worker by its exact pid when
 * its pipe reaches end of file.
 */
#define _GNU_SOURCE
#include "pool.h"
#include "task.h"
#include "util.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#define PIPE_BUFFER_BYTES (64 * 1024)
#define CHUNK_TARGET_NS 200000u  /* a chunk of quick tasks lasts about this */
#define CHUNK_MAX 4096
#define NO_TASK UINT64_MAX
#define MAX_WORKERS 4096

/* Worker exit codes for the runner's own failures (a workload's task
 * failure is a WIRE_FAILED frame, not an exit code). */
enum { WORKER_EXIT_PIPE = 120, WORKER_EXIT_NOMEM = 121, WORKER_EXIT_ORPHAN = 122 };

/* ---- memory shared with the workers ---- */

/* What one worker is doing.  Written by the worker, read by the parent
 * after reaping it.  One cache line each, so workers never contend. */
struct shared_slot {
	_Atomic uint64_t current;     /* position being run, NO_TASK between */
	_Atomic uint64_t chunk_start; /* claimed tasks whose results may */
	_Atomic uint64_t chunk_end;   /* still be unsent */
} __attribute__((aligned(64)));

struct shared_area {
	_Atomic uint64_t next_task __attribute__((aligned(64)));
	_Atomic uint64_t requeue_taken __attribute__((aligned(64)));
	_Atomic uint64_t requeue_count; /* written by the parent only */
};

/* ---- the parent's table ---- */

enum slot_state { SLOT_FREE, SLOT_BUSY, SLOT_DONE };

struct worker_slot {
	enum slot_state state;
	pid_t pid;
	int fd;                   /* read end of the worker's result pipe */
	int corrupt;              /* stream unreadable: ignore until EOF */
	struct wire_reader reader;
};

struct pool {
	struct batch *batch;
	size_t nworkers, live;
	struct worker_slot *slots;
	struct pollfd *pollfds;
	size_t *poll_slot;        /* pollfds[j] belongs to slots[poll_slot[j]] */
	void *shared_map;
	size_t shared_size;
	struct shared_area *shared;
	struct shared_slot *shared_slots;
	uint64_t *requeue;        /* positions, in the shared map */
	size_t requeue_cap;
	pid_t parent_pid;
	size_t deaths_since_progress;
	struct pool_stats *stats;
};

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

/* ===================== worker side ===================== */

/* How many tasks to claim next: double while tasks are quick, down to one
 * when they are slow, and never more than a fair share of what is left so
 * the tail stays balanced. */
static size_t next_chunk_size(size_t last_size, uint64_t last_ns,
			      uint64_t remaining, size_t workers)
{
	if (last_size == 0)
		return 1;
	uint64_t per_task = last_ns / last_size + 1;
	uint64_t fit = CHUNK_TARGET_NS / per_task;
	uint64_t want = 2 * (uint64_t)last_size;
	uint64_t fair = remaining / (2 * workers);

	if (want > fit)
		want = fit;
	if (want > fair)
		want = fair;
	if (want > CHUNK_MAX)
		want = CHUNK_MAX;
	return want ? (size_t)want : 1;
}

static void publish_claim(struct shared_slot *me, uint64_t first, uint64_t end)
{
	atomic_store_explicit(&me->chunk_start, first, memory_order_relaxed);
	atomic_store_explicit(&me->chunk_end, end, memory_order_relaxed);
}

/* Claim a requeued task if there is one.  Returns 1 with *task, or 0. */
static int claim_requeued(struct pool *p, uint64_t *task)
{
	struct shared_area *sh = p->shared;
	uint64_t taken = atomic_load(&sh->requeue_taken);

	while (taken < atomic_load_explicit(&sh->requeue_count, memory_order_acquire)) {
		if (atomic_compare_exchange_weak(&sh->requeue_taken, &taken, taken + 1)) {
			*task = p->requeue[taken];
			return 1;
		}
	}
	return 0;
}

/* Claim up to `want` tasks: a requeued one first, else a chunk of the
 * counter.  Publishes the claim.  Returns how many (0: nothing left). */
static size_t claim(struct pool *p, struct shared_slot *me, size_t want, uint64_t *first)
{
	uint64_t ntasks = batch_count(p->batch);

	if (claim_requeued(p, first)) {
		publish_claim(me, *first, *first + 1);
		return 1;
	}
	uint64_t start = atomic_fetch_add(&p->shared->next_task, want);
	if (start >= ntasks)
		return 0;
	uint64_t end = start + want < ntasks ? start + want : ntasks;
	publish_claim(me, start, end);
	*first = start;
	return (size_t)(end - start);
}

/* For --timeline: when and where the task ran. */
static int send_timing(struct wire_writer *out, size_t k, size_t worker,
		       uint64_t start, int ok)
{
	struct wire_timing t = { start, now_ns(), (uint32_t)worker, ok };

	return wire_put(out, WIRE_TIMING, k, &t, sizeof t);
}

/* Run the task at position pos and queue its frame.  Returns 0, or -1 if
 * the pipe failed. */
static int run_and_send(struct pool *p, size_t worker, struct cowrun_task *task,
			struct wire_writer *out, uint64_t pos)
{
	struct shared_slot *me = &p->shared_slots[worker];
	size_t k = batch_task(p->batch, (size_t)pos);
	uint64_t start = now_ns();
	int rc;

	atomic_store_explicit(&me->current, pos, memory_order_relaxed);
	int ok = task_execute(task, p->batch->state, k) == 0;
	if (ok)
		rc = wire_put(out, WIRE_RESULT, k, task->record, task->record_len);
	else
		rc = wire_put(out, WIRE_FAILED, k, task->error, strlen(task->error));
	if (rc == 0 && p->batch->timeline)
		rc = send_timing(out, k, worker, start, ok);
	atomic_store_explicit(&me->current, NO_TASK, memory_order_relaxed);
	return rc;
}

/* Close the parent's descriptors this child inherited: the read ends of
 * the other workers' pipes. */
static void close_inherited(struct pool *p)
{
	for (size_t i = 0; i < p->nworkers; i++)
		if (p->slots[i].state == SLOT_BUSY)
			close(p->slots[i].fd);
}

static void __attribute__((noreturn)) worker_main(struct pool *p, size_t i, int fd)
{
	struct shared_slot *me = &p->shared_slots[i];
	struct wire_writer out;
	struct cowrun_task task;
	size_t last_size = 0;
	uint64_t last_ns = 0, first;

	/* Die with the parent, even if it died before prctl took effect. */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != p->parent_pid)
		_exit(WORKER_EXIT_ORPHAN);
	close_inherited(p);
	if (wire_writer_init(&out, fd, PIPE_BUFFER_BYTES) != 0)
		_exit(WORKER_EXIT_NOMEM);
	task_init(&task, p->batch->workload, p->batch->outdir);
	for (;;) {
		/* Flush before claiming: unsent results stay in one chunk. */
		if (wire_flush(&out) != 0)
			_exit(WORKER_EXIT_PIPE);
		uint64_t count = batch_count(p->batch);
		uint64_t left = count - atomic_load_explicit(
			&p->shared->next_task, memory_order_relaxed);
		size_t want = next_chunk_size(last_size, last_ns,
			left > count ? 0 : left, p->nworkers);
		size_t n = claim(p, me, want, &first);
		if (n == 0)
			break;
		uint64_t start = now_ns();
		for (uint64_t pos = first; pos < first + n; pos++)
			if (run_and_send(p, i, &task, &out, pos) != 0)
				_exit(WORKER_EXIT_PIPE);
		last_size = n;
		last_ns = now_ns() - start;
	}
	_exit(wire_flush(&out) == 0 ? 0 : WORKER_EXIT_PIPE);
}

/* ===================== parent side ===================== */

static int pool_init(struct pool *p, struct batch *b, size_t workers,
		     struct pool_stats *stats)
{
	memset(p, 0, sizeof *p);
	p->batch = b;
	p->nworkers = workers;
	p->stats = stats;
	p->parent_pid = getpid();
	p->requeue_cap = batch_count(b);
	p->slots = calloc(workers, sizeof *p->slots);
	p->pollfds = calloc(workers, sizeof *p->pollfds);
	p->poll_slot = calloc(workers, sizeof *p->poll_slot);
	size_t slots_off = sizeof(struct shared_area);
	size_t requeue_off = slots_off + workers * sizeof(struct shared_slot);
	p->shared_size = requeue_off + p->requeue_cap * sizeof(uint64_t);
	p->shared_map = mmap(NULL, p->shared_size, PROT_READ | PROT_WRITE,
			     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (p->shared_map == MAP_FAILED) {
		p->shared_map = NULL;
		return -1;
	}
	p->shared = p->shared_map;
	p->shared_slots = (struct shared_slot *)((char *)p->shared_map + slots_off);
	p->requeue = (uint64_t *)((char *)p->shared_map + requeue_off);
	return p->slots && p->pollfds && p->poll_slot ? 0 : -1;
}

static void pool_free(struct pool *p)
{
	for (size_t i = 0; p->slots && i < p->nworkers; i++)
		wire_reader_free(&p->slots[i].reader);
	free(p->slots);
	free(p->pollfds);
	free(p->poll_slot);
	if (p->shared_map)
		munmap(p->shared_map, p->shared_size);
}

/* Tasks not yet claimed by any worker. */
static uint64_t tasks_unclaimed(const struct pool *p)
{
	uint64_t next = atomic_load(&p->shared->next_task);
	uint64_t count = batch_count(p->batch);
	uint64_t requeued = atomic_load(&p->shared->requeue_count) -
			    atomic_load(&p->shared->requeue_taken);

	return (next < count ? count - next : 0) + requeued;
}

/* Fork the worker for table slot i.  Returns 0 or -1 with errno. */
static int spawn_worker(struct pool *p, size_t i)
{
	struct worker_slot *s = &p->slots[i];
	int fds[2];

	if (pipe2(fds, O_CLOEXEC) != 0)
		return -1;
	atomic_store(&p->shared_slots[i].current, NO_TASK);
	publish_claim(&p->shared_slots[i], 0, 0);
	fflush(NULL); /* else buffered output would be written twice */
	uint64_t t0 = now_ns();
	pid_t pid = fork();
	uint64_t took = now_ns() - t0;
	if (pid < 0) {
		int saved = errno;
		close(fds[0]);
		close(fds[1]);
		errno = saved;
		return -1;
	}
	if (pid == 0) {
		close(fds[0]);
		worker_main(p, i, fds[1]);
	}
	close(fds[1]);
	s->state = SLOT_BUSY;
	s->pid = pid;
	s->fd = fds[0];
	s->corrupt = 0;
	s->reader.start = s->reader.end = 0;
	p->live++;
	p->stats->forks++;
	p->stats->fork_ns_total += took;
	if (took > p->stats->fork_ns_max)
		p->stats->fork_ns_max = took;
	return 0;
}

/* Fail every unresolved task: the pool cannot run them. */
static void abandon_pending(struct pool *p, const char *why)
{
	for (size_t k = 0; k < p->batch->ntasks; k++)
		if (batch_pending(p->batch, k))
			batch_failed(p->batch, k, why);
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

/* After deaths: fork replacements while the table has room and there is
 * unclaimed work for them.  A fork failure with workers still alive only
 * shrinks the pool. */
static int top_up(struct pool *p)
{
	if (p->deaths_since_progress > p->nworkers + 2) {
		abandon_pending(p, "not run: workers keep dying before finishing any task");
		return 0;
	}
	for (size_t i = 0; i < p->nworkers; i++) {
		if (p->slots[i].state == SLOT_BUSY)
			continue;
		if (p->live >= tasks_unclaimed(p))
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

static void requeue_position(struct pool *p, uint64_t pos)
{
	uint64_t count = atomic_load(&p->shared->requeue_count);

	/* Full only after many deaths; what does not fit stays pending and
	 * the sweep in pool_run picks it up once the pool is idle. */
	if (count >= p->requeue_cap)
		return;
	p->requeue[count] = pos;
	atomic_store_explicit(&p->shared->requeue_count, count + 1, memory_order_release);
}

/* The task a dead worker was running failed: say how, and remove the
 * temporary report it left. */
static void fail_current_task(struct pool *p, struct worker_slot *s,
			      size_t k, int status)
{
	char how[160], why[256], name[COWRUN_NAME_MAX];
	struct batch *b = p->batch;

	describe_wait_status(status, how, sizeof how);
	snprintf(why, sizeof why, "worker %ld %s%s", (long)s->pid, how,
		 WIFEXITED(status) ? " before finishing the task" : "");
	if (b->workload->flags & COWRUN_WRITES_REPORTS) {
		b->workload->task_name(b->state, k, name, sizeof name);
		task_remove_report(b->outdir, name, (long)s->pid);
	}
	batch_failed(b, k, why);
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
		/* Dying mid-task settles that task: progress, of a kind. */
		size_t k = batch_task(p->batch, (size_t)current);
		if (batch_pending(p->batch, k))
			fail_current_task(p, s, k, status);
	} else if (!clean) {
		char how[160];
		warnx_("worker %ld %s between tasks", (long)s->pid,
		       describe_wait_status(status, how, sizeof how));
		p->deaths_since_progress++;
	}
	for (uint64_t pos = start; pos < end && pos < batch_count(p->batch); pos++)
		if (pos != current && batch_pending(p->batch, batch_task(p->batch, (size_t)pos)))
			requeue_position(p, pos);
	s->state = SLOT_DONE;
	p->live--;
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
	while (waitpid(s->pid, &status, 0) < 0) {
		if (errno != EINTR) {
			/* Not our child any more: nothing to reap. */
			warnx_("waitpid(%ld): %s", (long)s->pid, strerror(errno));
			status = 0;
			break;
		}
	}
	worker_ended(p, i, status);
}

/* Hand one frame to the batch.  Returns 0, or -1 on a fatal error. */
static int take_frame(struct pool *p, struct worker_slot *s, const struct wire_frame *f)
{
	if (f->task >= p->batch->ntasks) {
		warnx_("worker %ld sent a record for task %llu of %zu", (long)s->pid,
		       (unsigned long long)f->task, p->batch->ntasks);
		return 1;
	}
	if (f->type == WIRE_TIMING && f->length == sizeof(struct wire_timing)) {
		struct wire_timing t;
		memcpy(&t, f->payload, sizeof t);
		batch_timeline(p->batch, (size_t)f->task, t.worker, (long)s->pid,
			       t.start_ns, t.end_ns, t.ok);
		return 0;
	}
	if (f->type != WIRE_RESULT && f->type != WIRE_FAILED)
		return 1;
	p->deaths_since_progress = 0;
	if (f->type == WIRE_RESULT)
		return batch_result(p->batch, (size_t)f->task, f->payload, f->length);
	char why[600];
	snprintf(why, sizeof why, "%.*s", (int)(f->length < 512 ? f->length : 512),
		 (const char *)f->payload);
	batch_failed(p->batch, (size_t)f->task, why);
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
		rc = take_frame(p, s, &f);
		if (rc < 0)
			return -1;
		if (rc > 0)
			break;
	}
	if (rc != 0) {
		warnx_("worker %ld sent a corrupt result stream: stopping it", (long)s->pid);
		s->corrupt = 1;
		kill(s->pid, SIGKILL);
	}
	return 0;
}

/* Wait until some worker has something to say, and deal with it. */
static int wait_for_output(struct pool *p)
{
	size_t n = 0;

	for (size_t i = 0; i < p->nworkers; i++) {
		if (p->slots[i].state != SLOT_BUSY)
			continue;
		p->pollfds[n] = (struct pollfd){ .fd = p->slots[i].fd, .events = POLLIN };
		p->poll_slot[n++] = i;
	}
	if (poll(p->pollfds, n, -1) < 0)
		return errno == EINTR ? 0 : -1;
	for (size_t j = 0; j < n; j++)
		if (p->pollfds[j].revents && service_worker(p, p->poll_slot[j]) != 0)
			return -1;
	return 0;
}

/* When every worker has exited but tasks are unresolved (a claim whose
 * worker died before publishing it, or a full requeue list): requeue them
 * all.  Returns how many. */
static size_t sweep_unresolved(struct pool *p)
{
	uint64_t next = atomic_load(&p->shared->next_task);
	size_t found = 0;

	atomic_store(&p->shared->requeue_count, 0);
	atomic_store(&p->shared->requeue_taken, 0);
	for (uint64_t pos = 0; pos < next && pos < batch_count(p->batch); pos++)
		if (batch_pending(p->batch, batch_task(p->batch, (size_t)pos))) {
			requeue_position(p, pos);
			found++;
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
		kill(s->pid, SIGKILL);
		close(s->fd);
		while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR)
			;
		s->state = SLOT_DONE;
	}
	p->live = 0;
}

int pool_run(struct batch *b, size_t workers, struct pool_stats *stats)
{
	struct pool p;
	int rc = -1;

	memset(stats, 0, sizeof *stats);
	stats->workers = workers;
	if (pool_init(&p, b, workers, stats) != 0) {
		warnx_("cannot set up %zu workers: %s", workers, strerror(errno));
		goto out;
	}
	for (size_t i = 0; i < workers; i++)
		if (wire_reader_init(&p.slots[i].reader, PIPE_BUFFER_BYTES) != 0)
			goto out;
	if (start_workers(&p) != 0)
		goto out;
	while (!batch_complete(b)) {
		if (top_up(&p) != 0)
			goto out;
		if (p.live == 0 && !batch_complete(b) && sweep_unresolved(&p) == 0) {
			abandon_pending(&p, "not run: no worker claimed it");
			break;
		}
		if (p.live > 0 && wait_for_output(&p) != 0)
			goto out;
	}
	/* Everything is merged; let the workers notice and exit. */
	while (p.live > 0)
		if (wait_for_output(&p) != 0)
			goto out;
	rc = 0;
out:
	if (rc != 0 && p.slots)
		kill_all(&p);
	pool_free(&p);
	return rc;
}
