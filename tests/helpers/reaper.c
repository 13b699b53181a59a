/*
 * reaper.c - run a command as a child subreaper and report what it left.
 *
 *   reaper COMMAND [ARGS...]
 *
 * Becomes a child subreaper (PR_SET_CHILD_SUBREAPER), so every process the
 * command forks that outlives it, or that it never reaped, is re-parented
 * here instead of to init.  After the command exits, reaps all of those,
 * prints "reaper: N leftover processes" on stderr if there were any and
 * exits 99; otherwise exits with the command's own status (128+signal if it
 * was killed).  The tests run cowrun under it to prove no zombies and no
 * orphans.
 *
 * A command still running after REAPER_TIMEOUT seconds (default 600: a
 * limit for a hung test, not a speed check, so a loaded machine never hits
 * it) is killed with its process group; the reaper then says so and exits
 * 98.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_LEFTOVERS 99
#define EXIT_TIMED_OUT 98
#define DEFAULT_TIMEOUT_S 600

static volatile sig_atomic_t timed_out;

static void on_alarm(int sig)
{
	(void)sig;
	timed_out = 1;
}

/* REAPER_TIMEOUT, or the default for an unset or bad value. */
static unsigned timeout_seconds(void)
{
	const char *text = getenv("REAPER_TIMEOUT");
	char *end;
	unsigned long v = text ? strtoul(text, &end, 10) : 0;

	return text && *text && *end == '\0' && v > 0 && v < 86400 ? (unsigned)v : DEFAULT_TIMEOUT_S;
}

/* Reap every remaining descendant, waiting for ones still running (a
 * worker killed by PR_SET_PDEATHSIG takes a moment to die); one that
 * outlives the timeout is reaped no longer. */
static int reap_leftovers(void)
{
	int count = 0, status;
	pid_t pid;

	for (;;) {
		pid = waitpid(-1, &status, __WALL);
		if (pid > 0) {
			count++;
			continue;
		}
		if (errno == EINTR && !timed_out)
			continue;
		return count; /* ECHILD: nothing left, or timed out */
	}
}

int main(int argc, char **argv)
{
	int status;

	if (argc < 2) {
		fprintf(stderr, "usage: reaper COMMAND [ARGS...]\n");
		return 2;
	}
	/* A command or leftover that never ends must not hang the suite. */
	unsigned limit = timeout_seconds();
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm; /* no SA_RESTART: waitpid() returns EINTR */
	sigaction(SIGALRM, &sa, NULL);
	alarm(limit);
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
		perror("reaper: PR_SET_CHILD_SUBREAPER");
		return 2;
	}
	pid_t child = fork();
	if (child < 0) {
		perror("reaper: fork");
		return 2;
	}
	if (child == 0) {
		execvp(argv[1], argv + 1);
		fprintf(stderr, "reaper: cannot run '%s': %s\n", argv[1], strerror(errno));
		_exit(127);
	}
	while (waitpid(child, &status, 0) < 0) {
		if (errno != EINTR) {
			perror("reaper: waitpid");
			return 2;
		}
		if (timed_out) {
			fprintf(stderr, "reaper: '%s' still running after %u s (REAPER_TIMEOUT): killed\n",
				argv[1], limit);
			kill(-child, SIGKILL);
			kill(child, SIGKILL);
			timed_out = 0;
			alarm(10); /* for its leftovers to die */
			waitpid(child, &status, 0);
			reap_leftovers();
			return EXIT_TIMED_OUT;
		}
	}
	/* Leftovers of a well-behaved command are already gone; any that
	 * remain (zombies or still running) are ours now. */
	int left = reap_leftovers();
	if (left > 0) {
		fprintf(stderr, "reaper: %d leftover processes\n", left);
		return EXIT_LEFTOVERS;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
