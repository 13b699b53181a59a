/*
 * standby.c - a worker forked before its batch exists (pool.h).
 *
 * A served batch's spare leader forks it while no client waits; it
 * sleeps on a socket pair until the spare, now a leader, runs its batch:
 * pool_run() then hands it slot 0 of the pool in one message (the brief
 * below, with the result pipe, the pool's shared map as a memfd, standard
 * output and error, and the output directory), and it becomes the worker
 * a fork at that moment would have made: the same setup (it was forked
 * from the same, frozen, arena), the batch's task list and options, its
 * parent's user and groups.  What a worker reads of its parent's memory
 * that did not exist when the standby was forked is all in the brief or
 * in the shared map: worker.c's struct pool and struct batch are rebuilt
 * from them here.
 */
#define _GNU_SOURCE
#include "pool_internal.h"
#include "task.h"
#include "os/fdpass.h"
#include "os/util.h"
#include "os/process.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define BRIEF_MAGIC 0x79627363u     /* "csby" */
#define GROUPS_MAX 256              /* as many as a served client may have */

/* Everything of the batch a worker reads that the standby's copy of its
 * parent cannot know.  Descriptors travel beside it, in this order:
 * result pipe, shared map, standard output, standard error, and the
 * output directory if has_outdir. */
struct brief {
	uint32_t magic;
	uint32_t slot, nworkers, retries;
	uint64_t ntasks, nselected, selected_off; /* selected_off 0: every task */
	uint64_t shared_size, slots_off, requeue_off;
	uint64_t handed_ns;
	uint64_t tasks_per_worker;  /* --tasks-per-worker */
	int parent_commits;         /* hand reports over to the parent (commits.h) */
	uint64_t seed;                  /* the batch's run seed (--seed) */
	int32_t send_timing, catch_frozen_writes, measure_memory, has_outdir, has_label;
	uint32_t uid, gid, ngroups;
	gid_t groups[GROUPS_MAX];
	char temp_tag[17];
	char comm[17];
	char outdir_label[PATH_MAX];
};

enum { FD_RESULT, FD_SHARED, FD_STDOUT, FD_STDERR, FD_OUTDIR, NFDS };

/* This process's standby, if it has one. */
static struct {
	pid_t pid;               /* 0: none */
	int chan;
	uid_t uid;               /* its user when forked */
	uint64_t fork_ns;
	const struct cowrun_workload *workload;
	void *state;
} standby = { 0, -1, 0, 0, NULL, NULL };

/* ---- the standby's side ---- */

/* Take the parent's user and groups, as its leader took the client's
 * (the change clears the parent-death signal: set again, and the parent
 * checked).  Returns 0 or -1. */
static int take_identity(const struct brief *br, pid_t parent)
{
	if (br->uid == getuid() && br->gid == getgid())
		return 0;
	if (br->ngroups > GROUPS_MAX || setgroups(br->ngroups, br->groups) != 0 ||
	    setgid(br->gid) != 0 || setuid(br->uid) != 0)
		return -1;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		return -1;
	return 0;
}

/* The pool and batch as worker.c reads them, from the brief and the
 * shared map.  Returns 0 or -1. */
static int rebuild(const struct brief *br, const int *fds, struct pool *p, struct batch *b)
{
	void *map = mmap(NULL, br->shared_size, PROT_READ | PROT_WRITE, MAP_SHARED,
			 fds[FD_SHARED], 0);

	if (map == MAP_FAILED)
		return -1;
	close(fds[FD_SHARED]);
	memset(b, 0, sizeof *b);
	b->workload = standby.workload;
	b->state = standby.state;
	b->ntasks = br->ntasks;
	b->retries = br->retries;
	if (br->selected_off) {
		b->selected = (const size_t *)((const char *)map + br->selected_off);
		b->nselected = br->nselected;
	}
	if (br->has_outdir) {
		b->outdir_fd = fds[FD_OUTDIR];
		b->outdir_open = 1;
	}
	b->outdir = br->has_label ? br->outdir_label : NULL;
	b->outdir_by_fd = !br->has_label;
	memset(p, 0, sizeof *p);
	p->batch = b;
	p->nworkers = br->nworkers;
	p->shared_map = map;
	p->shared_size = br->shared_size;
	p->shared = map;
	p->shared_slots = (struct shared_slot *)((char *)map + br->slots_off);
	p->requeue = (_Atomic uint64_t *)((char *)map + br->requeue_off);
	p->parent_pid = getppid();
	p->send_timing = br->send_timing;
	p->catch_frozen_writes = br->catch_frozen_writes;
	p->measure_memory = br->measure_memory;
	p->fork_started_ns = br->handed_ns;
	p->tasks_per_worker = br->tasks_per_worker;
	p->parent_commits = br->parent_commits;
	return 0;
}

/* Wait for the brief; then be the worker.  The pair closed (the standby
 * dropped, its spare gone) or anything amiss: leave quietly. */
static void __attribute__((noreturn)) standby_main(int chan, pid_t parent)
{
	static struct brief br;
	static struct pool p;
	static struct batch b;
	struct pollfd pfd = { chan, POLLIN, 0 };
	int fds[NFDS];
	size_t nfds = 0;

	prefault_private_pages(PREFAULT_STACK_KB, PREFAULT_HEAP_KB, PREFAULT_SMALL_KB);
	while (poll(&pfd, 1, -1) < 0 && errno == EINTR)
		;
	long n = fdpass_recv(chan, &br, sizeof br, fds, NFDS, &nfds);
	if (n != (long)sizeof br || br.magic != BRIEF_MAGIC ||
	    nfds != (size_t)(br.has_outdir ? NFDS : NFDS - 1))
		_exit(0);
	close(chan);
	prctl(PR_SET_NAME, br.comm);
	task_set_temp_tag(br.temp_tag);
	task_set_seed(br.seed);
	if (dup2(fds[FD_STDOUT], STDOUT_FILENO) < 0 || dup2(fds[FD_STDERR], STDERR_FILENO) < 0 ||
	    take_identity(&br, parent) != 0 || rebuild(&br, fds, &p, &b) != 0)
		_exit(WORKER_EXIT_STANDBY);
	close(fds[FD_STDOUT]);
	close(fds[FD_STDERR]);
	worker_main(&p, br.slot, fds[FD_RESULT]);
}

int pool_standby_fork(const struct cowrun_workload *w, void *state, const int *drop,
		      size_t ndrop)
{
	int sv[2];

	if (standby.pid != 0)
		return 0;
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return -1;
	fflush(NULL);
	pid_t parent = getpid();
	uint64_t t0 = now_ns();
	pid_t pid = fork();
	if (pid < 0) {
		int saved = errno;
		close(sv[0]);
		close(sv[1]);
		return errno = saved, -1;
	}
	if (pid == 0) {
		prctl(PR_SET_NAME, "cowrun-standby");   /* first: ps tells it from a worker */
		close(sv[0]);
		for (size_t i = 0; i < ndrop; i++)
			close(drop[i]);
		standby.workload = w;
		standby.state = state;
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
			_exit(0);
		setpgid(0, 0);
		standby_main(sv[1], parent);
	}
	standby.fork_ns = now_ns() - t0;
	close(sv[1]);
	setpgid(pid, pid);
	standby.pid = pid;
	standby.chan = sv[0];
	standby.uid = getuid();
	standby.workload = w;
	standby.state = state;
	return 0;
}

/* No longer ours to hand: close the pair (a standby still waiting reads
 * its end and leaves). */
static void forget_standby(void)
{
	close(standby.chan);
	standby.chan = -1;
	standby.pid = 0;
}

void pool_standby_drop(void)
{
	pid_t pid = standby.pid;

	if (pid == 0)
		return;
	forget_standby();
	kill(pid, SIGKILL);
	reap_child(pid, NULL);
}

/* ---- the parent's side ---- */

int standby_fits(const struct batch *b)
{
	/* Root can give it any user; anyone else only their own.  A batch
	 * whose reports go through commands forks: the brief carries no
	 * route. */
	const struct report_route *r = &b->route;
	if (r->filter || r->sink || (r->suffix && r->suffix[0]))
		return 0;
	return standby.pid != 0 && b->workload == standby.workload && b->state == standby.state &&
	       (standby.uid == 0 || standby.uid == getuid()) && getgroups(0, NULL) <= GROUPS_MAX;
}

/* The brief for slot i of p. */
static void fill_brief(struct brief *br, const struct pool *p, size_t i)
{
	const struct batch *b = p->batch;
	int ngroups = getgroups(GROUPS_MAX, br->groups);

	br->magic = BRIEF_MAGIC;
	br->slot = (uint32_t)i;
	br->nworkers = (uint32_t)p->nworkers;
	br->retries = b->retries;
	br->ntasks = b->ntasks;
	br->nselected = b->selected ? b->nselected : 0;
	br->selected_off = b->selected ? p->selected_off : 0;
	br->shared_size = p->shared_size;
	br->slots_off = (uint64_t)((char *)p->shared_slots - (char *)p->shared_map);
	br->requeue_off = (uint64_t)((char *)p->requeue - (char *)p->shared_map);
	br->send_timing = p->send_timing;
	br->tasks_per_worker = p->tasks_per_worker;
	br->parent_commits = p->parent_commits;
	br->catch_frozen_writes = p->catch_frozen_writes;
	br->measure_memory = p->measure_memory;
	br->has_outdir = batch_outdir_fd(b) >= 0;
	br->has_label = batch_outdir_label(b) != NULL;
	if (br->has_label)
		snprintf(br->outdir_label, sizeof br->outdir_label, "%s", batch_outdir_label(b));
	br->uid = getuid();
	br->gid = getgid();
	br->ngroups = ngroups > 0 ? (uint32_t)ngroups : 0;
	snprintf(br->temp_tag, sizeof br->temp_tag, "%s", task_temp_tag());
	br->seed = cowrun_run_seed();
	prctl(PR_GET_NAME, br->comm);
	br->handed_ns = now_ns();
}

pid_t standby_hand(struct pool *p, size_t i, int result_fd, uint64_t *fork_ns)
{
	static struct brief br;
	const int fds[NFDS] = { result_fd, p->shared_fd, STDOUT_FILENO, STDERR_FILENO,
				batch_outdir_fd(p->batch) };
	pid_t pid = standby.pid;

	memset(&br, 0, sizeof br);
	fill_brief(&br, p, i);
	int rc = fdpass_send(standby.chan, &br, sizeof br, fds,
			     br.has_outdir ? NFDS : NFDS - 1);
	*fork_ns = standby.fork_ns;
	if (rc == 0) {
		forget_standby();
		return pid;
	}
	pool_standby_drop();   /* gone, or wedged: forked instead */
	return -1;
}
