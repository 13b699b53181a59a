/*
 * supervise.c - cowrun-supervise, what the runner spawns instead of a
 * report's command (runner/os/command_run.c), so the command dies with the
 * run even when cowrun and its workers are SIGKILLed.
 *
 *   cowrun-supervise FD PPID GRACE_MS PROGRAM [ARGS...]
 *
 * Not for people: the runner starts it.  It asks for SIGTERM when its
 * parent (the worker, or cowrun in serial and omp mode) dies, and checks
 * getppid() against PPID right after, since the parent may have died
 * before the request took effect: then it starts nothing.  It starts
 * PROGRAM (looked up on PATH) in a process group of its own, with every
 * signal at its default action and none blocked, and stays its parent.
 * On FD, a close-on-exec pipe, it writes the start's errno when PROGRAM
 * cannot run, else closes it: the runner reports a missing program in one
 * line, synchronously, as it did when it spawned the command itself.
 *
 * On SIGTERM (its parent died, or the runner gave up on the command), or
 * when the command ended and left members of its group behind, it sends
 * SIGTERM to the command's process group, waits GRACE_MS for the group to
 * empty (the runner's own grace period), then sends SIGKILL to the group.
 * It is a child subreaper, so the group's members orphaned on the way
 * (a `sleep | cat` pipeline's stages) are its children and reaped here.
 *
 * It exits as the command did: its exit status, or killed by the same
 * signal (without a core file of its own), so the runner's messages
 * ("exited with status 3", "was killed by signal 9") read as before.
 *
 * What escapes: a process that leaves the command's group (setsid,
 * setpgid: a daemon) and a setuid program (it may refuse our signals).
 * No runner code: statically linked where the C library allows, so its
 * start costs an exec and no dynamic loading.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "os/spawnattr.h"   /* header-only: no runner code is linked */

extern char **environ;

static long parse_number(const char *s)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	return errno || end == s || *end || v < 0 ? -1 : v;
}

/* The command, in its own group, with 0, 1 and 2 only.  Returns 0 or an
 * error number. */
static int start(char **argv, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	int err = spawnattr_own_group_default_signals(&attr);

	if (err)
		return err;
	err = posix_spawn_file_actions_init(&fa);
	if (err == 0) {
		err = posix_spawn_file_actions_addclosefrom_np(&fa, 3);
		if (err == 0)
			err = posix_spawnp(pid, argv[0], &fa, &attr, argv, environ);
		posix_spawn_file_actions_destroy(&fa);
	}
	posix_spawnattr_destroy(&attr);
	return err;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Exit as the command did. */
static void exit_as(int status)
{
	if (WIFSIGNALED(status)) {
		int sig = WTERMSIG(status);
		struct rlimit none = { 0, 0 };
		sigset_t set;
		setrlimit(RLIMIT_CORE, &none);   /* its core, if any, is the command's */
		signal(sig, SIG_DFL);
		sigemptyset(&set);
		sigaddset(&set, sig);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(sig);
		/* (A signal that does not end it: as a shell would say it.) */
		// cppcheck-suppress unreachableCode
		_exit(128 + sig);
	}
	_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

struct watch {
	pid_t pid;             /* the command, its group's id */
	int status;
	int ended;             /* its status is in */
	long long kill_at;     /* terminating: SIGKILL then; 0: not yet */
	int killed;
	long grace_ms;
};

/* Reap what has ended: the command, and orphans of its group. */
static void reap(struct watch *w)
{
	int status;
	pid_t got;

	while ((got = waitpid(-1, &status, WNOHANG)) > 0)
		if (got == w->pid) {
			w->status = status;
			w->ended = 1;
		}
}

static void terminate(struct watch *w)
{
	if (w->kill_at)
		return;
	kill(-w->pid, SIGTERM);
	kill(-w->pid, SIGCONT);   /* a stopped member would never see it */
	w->kill_at = now_ms() + w->grace_ms;
}

static void supervise(struct watch *w, const sigset_t *set)
{
	for (;;) {
		reap(w);
		if (w->ended && kill(-w->pid, 0) != 0 && errno == ESRCH)
			return;   /* the command and all of its group are gone */
		if (w->ended)
			terminate(w);   /* it left members behind */
		struct timespec wait = { 3600, 0 };
		if (w->kill_at && !w->killed) {
			long long left = w->kill_at - now_ms();
			if (left <= 0) {
				kill(-w->pid, SIGKILL);
				w->killed = 1;
				continue;
			}
			wait.tv_sec = left / 1000;
			wait.tv_nsec = (left % 1000) * 1000000;
		}
		int sig = sigtimedwait(set, NULL, &wait);
		if (sig == SIGTERM || sig == SIGHUP || sig == SIGINT)
			terminate(w);
	}
}

int main(int argc, char **argv)
{
	sigset_t set;
	long fd, ppid, grace;

	if (argc < 5 || (fd = parse_number(argv[1])) < 3 || (ppid = parse_number(argv[2])) <= 0 ||
	    (grace = parse_number(argv[3])) < 0) {
		fprintf(stderr, "cowrun-supervise: started by cowrun, not by hand "
			"(usage: cowrun-supervise FD PPID GRACE_MS PROGRAM [ARGS...])\n");
		return 2;
	}
	/* Its signals come as events, read by sigtimedwait() below. */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, NULL);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != (pid_t)ppid)
		return 0;   /* the runner is gone already: start nothing */
	prctl(PR_SET_CHILD_SUBREAPER, 1);

	struct watch w = { .grace_ms = grace };
	int err = start(argv + 4, &w.pid);
	if (err) {
		ssize_t n = write((int)fd, &err, sizeof err);
		(void)n;   /* the runner reads EOF: a start that failed silently */
		return 127;
	}
	close((int)fd);   /* EOF: started */
	/* Neither end of the command's input or output stays open here: a
	 * command that stops reading must break its writer's pipe. */
	close(0);
	close(1);
	supervise(&w, &set);
	exit_as(w.status);
}
