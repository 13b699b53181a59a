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
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define EXIT_LEFTOVERS 99

/* Reap every remaining descendant, waiting briefly for ones still
 * running (a worker killed by PR_SET_PDEATHSIG takes a moment to die). */
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
		if (errno == EINTR)
			continue;
		return count; /* ECHILD: nothing left */
	}
}

int main(int argc, char **argv)
{
	int status;

	if (argc < 2) {
		fprintf(stderr, "usage: reaper COMMAND [ARGS...]\n");
		return 2;
	}
	/* A leftover that never dies must not hang the test suite. */
	alarm(60);
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
	while (waitpid(child, &status, 0) < 0)
		if (errno != EINTR) {
			perror("reaper: waitpid");
			return 2;
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
