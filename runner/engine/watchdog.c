/*
 * watchdog.c - serial and omp modes' task phase in a child process, so a
 * task that ends its process (exit, _exit, a signal, a write to the frozen
 * setup) is reported with its name instead of ending the run silently.
 * See watchdog.h.  The code after "the child" runs only in the child.
 */
#define _GNU_SOURCE
#include "watchdog.h"
#include "os/setup_arena.h"
#include "os/signals.h"
#include "task.h"
#include "os/util.h"
#include "os/fileops.h"
#include "os/process.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#define WATCH_NONE UINT64_MAX
#define WATCH_TEMPS 2
#define EXIT_RUNNER_ERROR 254
#define CHILD_EXIT_FROZEN 123  /* a task wrote to the frozen setup arena */
#define CHILD_EXIT_ORPHAN 122  /* the parent died before the child began */

/* One thread's current task; a cache line each. */
struct watch_slot {
	_Atomic uint64_t current;       /* WATCH_NONE between tasks */
} __attribute__((aligned(64)));

/* The MAP_SHARED page: written by the child, read by the parent after it
 * ended. */
struct watch_area {
	_Atomic int exit_called;        /* exit() ran before watchdog_done() */
	_Atomic uint64_t culprit;       /* task known to have ended the run */
	char fault[256];                /* a frozen write, in words */
	char temps[WATCH_TEMPS][PATH_MAX]; /* temporary side files */
	size_t nslots;
	struct watch_slot slots[];
};

static struct watch_area *area;   /* NULL: not watched */
static size_t area_size;
static int token_fd = -1;         /* child: the write end */
static volatile sig_atomic_t finished; /* child: watchdog_done() ran */
static __thread uint64_t my_task = WATCH_NONE; /* this thread's task */

static int map_area(size_t nslots)
{
	area_size = sizeof *area + nslots * sizeof area->slots[0];
	void *m = mmap(NULL, area_size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return -1;
	area = m; /* zero-filled */
	area->nslots = nslots;
	atomic_store(&area->culprit, WATCH_NONE);
	for (size_t i = 0; i < nslots; i++)
		atomic_store(&area->slots[i].current, WATCH_NONE);
	return 0;
}

/* ---- the parent: wait, then say how the child ended ---- */

/* Wait for the token or EOF, forwarding SIGINT/SIGTERM that reached this
 * process (not those sent to the whole group: the child has them). Returns
 * 1 if the token came. */
static int wait_for_token(pid_t child, int fd)
{
	struct pollfd pfd[2] = { { fd, POLLIN, 0 }, { signals_fd(), POLLIN, 0 } };
	int forwarded = 0;
	char c;

	for (;;) {
		if (poll(pfd, 2, -1) < 0 && errno != EINTR)
			return 0;
		if (pfd[1].revents)
			signals_drain();
		for (; forwarded < signals_count(); forwarded++)
			kill(child, signals_last());
		if (pfd[0].revents) {
			ssize_t n = read(fd, &c, 1);
			if (n >= 0 || errno != EINTR)
				return n > 0;
		}
	}
}

/* "task K (NAME)" for every running task but `skip`, ", "-separated. */
static void list_running(const struct batch *b, uint64_t skip, char *buf, size_t size)
{
	char name[COWRUN_NAME_MAX];
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < area->nslots && used < size; i++) {
		uint64_t k = atomic_load(&area->slots[i].current);
		if (k == WATCH_NONE || k == skip)
			continue;
		b->workload->task_name(b->state, (size_t)k, name, sizeof name);
		int n = snprintf(buf + used, size - used, "%stask %llu (%s)", used ? ", " : "",
				 (unsigned long long)k, name);
		used += n > 0 ? (size_t)n : 0;
	}
}

/* How the child ended, in words; `in_task`: a task was running. */
static void describe_end(int status, int in_task, char *why, size_t size)
{
	const char *where = in_task ? " inside the task" : "";
	char how[160];

	if (area->fault[0])
		snprintf(why, size, "killed by SIGSEGV: %s", area->fault);
	else if (atomic_load(&area->exit_called) && WIFEXITED(status))
		snprintf(why, size, "exit(%d) called%s", WEXITSTATUS(status), where);
	else if (atomic_load(&area->exit_called))
		snprintf(why, size, "exit() called%s, then %s", where,
			 describe_wait_status(status, how, sizeof how));
	else if (WIFEXITED(status))
		snprintf(why, size, "_exit(%d) called%s: the process ended before the run "
			 "finished", WEXITSTATUS(status), where);
	else
		snprintf(why, size, "%s", describe_wait_status(status, how, sizeof how));
}

/* One line: the task that ended the run where it is known, else every
 * task that was running, and why. */
static void report_end(const struct batch *b, int status)
{
	char why[512], culprit[COWRUN_NAME_MAX + 32] = "", others[1024];
	uint64_t k = atomic_load(&area->culprit);
	const char *w = b->workload->name;

	list_running(b, k, others, sizeof others);
	describe_end(status, k != WATCH_NONE || others[0], why, sizeof why);
	if (k != WATCH_NONE) {
		char name[COWRUN_NAME_MAX];
		b->workload->task_name(b->state, (size_t)k, name, sizeof name);
		snprintf(culprit, sizeof culprit, "task %llu (%s)", (unsigned long long)k, name);
	}
	if (culprit[0] && others[0])
		warnx_("%s: %s ended the run: %s; also running: %s; no summary", w, culprit, why, others);
	else if (culprit[0] || (others[0] && !strchr(others, ',')))
		warnx_("%s: %s ended the run: %s; no summary", w, culprit[0] ? culprit : others, why);
	else if (others[0])
		warnx_("%s: the run ended while %s were running: %s; no summary", w, others, why);
	else
		warnx_("%s: the run ended outside any task: %s; no summary", w, why);
}

/* What the child left half-done: running tasks' reports, side files
 * under temporary names. */
static void remove_leftovers(const struct batch *b, pid_t child)
{
	char name[COWRUN_NAME_MAX];
	/* The child opened the output directory after the fork; a served
	 * batch's was open before it. */
	const char *at = b->outdir_at ? b->outdir_at : b->outdir;
	int dirfd = b->outdir_open ? b->outdir_fd : open_dir_nofollow(at);

	for (size_t i = 0; dirfd >= 0 && i < area->nslots; i++) {
		uint64_t k = atomic_load(&area->slots[i].current);
		if (k == WATCH_NONE || !(b->workload->flags & COWRUN_WRITES_REPORTS))
			continue;
		b->workload->task_name(b->state, (size_t)k, name, sizeof name);
		task_remove_report(dirfd, name, (long)child);
	}
	if (dirfd >= 0 && !b->outdir_open)
		close(dirfd);
	for (size_t i = 0; i < WATCH_TEMPS; i++)
		if (area->temps[i][0])
			unlink(area->temps[i]);
}

/* Whether the last watched child finished its run. */
static int child_finished;
/* Whether this process forked a child to run its task phase. */
static int watching;

int watchdog_child_finished(void)
{
	return child_finished;
}

int watchdog_watching(void)
{
	return watching;
}

/* The parent's whole part.  Returns the exit status. */
static int watch(const struct batch *b, pid_t child, int fd)
{
	int got_token = wait_for_token(child, fd);
	int status = 0;

	reap_child(child, &status);

	child_finished = got_token && WIFEXITED(status);
	close(fd);
	if (got_token && WIFEXITED(status))
		return WEXITSTATUS(status);
	if (got_token)
		warnx_("%s: the run finished, then its process was %s", b->workload->name,
		       describe_wait_status(status, (char[160]){ 0 }, 160));
	else {
		report_end(b, status);
		remove_leftovers(b, child);
	}
	return EXIT_RUNNER_ERROR;
}

/* ---- the child ---- */

/* atexit: exit() before the run finished is a task's (or merge's) doing. */
static void on_exit_called(void)
{
	if (finished || area == NULL)
		return;
	atomic_store(&area->exit_called, 1);
	atomic_store(&area->culprit, my_task);
}

/* A write to the frozen arena (setup_arena_catch_frozen_writes()): this
 * thread's task ended the run. */
static void record_culprit(void)
{
	atomic_store(&area->culprit, my_task);
}

static void become_watched(pid_t parent, int catch_frozen)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(CHILD_EXIT_ORPHAN);
	atexit(on_exit_called);
	if (catch_frozen)   /* said in fork mode's words */
		setup_arena_catch_frozen_writes(area->fault, sizeof area->fault, CHILD_EXIT_FROZEN,
						record_culprit);
}

int watchdog_start(const struct batch *b, size_t nslots, int catch_frozen, int *status)
{
	int fds[2];
	pid_t parent = getpid();

	*status = EXIT_RUNNER_ERROR;
	if (map_area(nslots ? nslots : 1) != 0 || pipe2(fds, O_CLOEXEC) != 0) {
		warnx_("cannot start the task phase's watchdog: %s", strerror(errno));
		return 1;
	}
	fflush(NULL); /* nothing buffered is written twice */
	pid_t child = fork();
	if (child < 0) {
		warnx_("cannot fork the task phase: %s", strerror(errno));
		close(fds[0]);
		close(fds[1]);
		return 1;
	}
	if (child == 0) {
		close(fds[0]);
		token_fd = fds[1];
		become_watched(parent, catch_frozen);
		return 0;
	}
	close(fds[1]);
	watching = 1;
	*status = watch(b, child, fds[0]);
	munmap(area, area_size);
	area = NULL;
	return 1;
}

void watchdog_enter(size_t slot, size_t k)
{
	my_task = k;
	if (area && slot < area->nslots)
		atomic_store(&area->slots[slot].current, (uint64_t)k);
}

void watchdog_leave(size_t slot)
{
	my_task = WATCH_NONE;
	if (area && slot < area->nslots)
		atomic_store(&area->slots[slot].current, WATCH_NONE);
}

void watchdog_note_temp(const char *path)
{
	for (size_t i = 0; area && i < WATCH_TEMPS; i++)
		if (area->temps[i][0] == '\0') {
			snprintf(area->temps[i], sizeof area->temps[i], "%s", path);
			return;
		}
}

void watchdog_done(void)
{
	/* A thread's exit() is ending the process: it did not finish. */
	if (token_fd < 0 || atomic_load(&area->exit_called))
		return;
	finished = 1;
	if (write(token_fd, "", 1) < 0) {
	}
	close(token_fd);
	token_fd = -1;
}
