/*
 * psswatch.c - run a command and report the peak of its process tree's
 * total PSS (proportional set size): memory shared by N processes counts
 * 1/N in each, so the sum is what the whole run really occupied.  Peak RSS
 * of one process cannot say that: it counts shared pages in full, and a
 * process-per-job run has many processes.
 *
 *   psswatch [-s] [-i MS] [-o FILE] -- COMMAND [ARGS...]
 *
 * Samples every MS milliseconds (default 50; the first ones sooner) by
 * walking /proc for the command's descendants and summing their
 * /proc/PID/smaps_rollup Pss.  With -s, psswatch is a child subreaper
 * (PR_SET_CHILD_SUBREAPER): a process the command starts in the background
 * and leaves (R's makePSOCKcluster starts its workers through `sh -c
 * 'CMD &'`) is reparented to psswatch instead of init, so it stays in the
 * tree sampled (every descendant of psswatch but psswatch itself), and
 * psswatch reaps it when it ends.
 * Writes "peak_pss_kb N samples M" to FILE (default stderr) and exits with
 * the command's status (128+signal if it was killed).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "os/procstat.h"

#define MAX_PROCS 65536

/* The parent pid of `pid` from /proc/PID/stat (after the command name,
 * which may hold spaces and parentheses), or -1. */
static pid_t parent_of(pid_t pid)
{
	char path[64], text[512];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	if (procstat_read_text(path, text, sizeof text) < 0)
		return -1;
	char *close_paren = strrchr(text, ')');
	int ppid;
	if (close_paren == NULL || sscanf(close_paren + 1, " %*c %d", &ppid) != 1)
		return -1;
	return ppid;
}

static unsigned long pss_kb(pid_t pid)
{
	char path[64], text[4096];
	snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
	if (procstat_read_text(path, text, sizeof text) < 0)
		return 0;
	char *at = strstr(text, "\nPss:");
	return at ? strtoul(at + 5, NULL, 10) : 0;
}

/* Total PSS of `root` and all its descendants now; `root` itself left
 * out when `without_root`. */
static unsigned long tree_pss_kb(pid_t root, int without_root)
{
	static pid_t pids[MAX_PROCS], parents[MAX_PROCS];
	static char in_tree[MAX_PROCS];
	size_t n = 0;
	DIR *proc = opendir("/proc");
	struct dirent *d;

	if (proc == NULL)
		return 0;
	while ((d = readdir(proc)) != NULL && n < MAX_PROCS) {
		pid_t pid = (pid_t)atoi(d->d_name);
		if (pid > 0) {
			pids[n] = pid;
			parents[n++] = parent_of(pid);
		}
	}
	closedir(proc);
	/* Mark descendants: repeat until no new process joins the tree. */
	memset(in_tree, 0, n);
	for (int changed = 1; changed;) {
		changed = 0;
		for (size_t i = 0; i < n; i++) {
			if (in_tree[i])
				continue;
			int join = pids[i] == root;
			for (size_t j = 0; !join && j < n; j++)
				join = in_tree[j] && pids[j] == parents[i];
			if (join)
				in_tree[i] = changed = 1;
		}
	}
	unsigned long total = 0;
	for (size_t i = 0; i < n; i++)
		if (in_tree[i] && !(without_root && pids[i] == root))
			total += pss_kb(pids[i]);
	return total;
}

/* Whether the command has ended (its wait status in *status); a
 * subreaper also reaps, without blocking, the orphans that have ended. */
static int child_ended(pid_t child, int subreaper, int *status)
{
	int ended = 0, st;
	pid_t pid;

	while ((pid = waitpid(subreaper ? -1 : child, &st, WNOHANG)) > 0) {
		if (pid == child) {
			*status = st;
			ended = 1;
		}
		if (!subreaper)
			break;
	}
	return ended;
}

int main(int argc, char **argv)
{
	long interval_ms = 50;
	const char *out_path = NULL;
	int opt, subreaper = 0;

	while ((opt = getopt(argc, argv, "+si:o:")) != -1) {
		if (opt == 's')
			subreaper = 1;
		else if (opt == 'i')
			interval_ms = atol(optarg);
		else if (opt == 'o')
			out_path = optarg;
		else
			return 2;
	}
	if (optind < argc && strcmp(argv[optind], "--") == 0)
		optind++;
	if (optind >= argc || interval_ms <= 0) {
		fprintf(stderr, "usage: psswatch [-s] [-i MS] [-o FILE] -- COMMAND [ARGS...]\n");
		return 2;
	}
	if (subreaper && prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) {
		perror("psswatch: prctl(PR_SET_CHILD_SUBREAPER)");
		return 2;
	}
	pid_t child = fork();
	if (child < 0) {
		perror("psswatch: fork");
		return 2;
	}
	if (child == 0) {
		execvp(argv[optind], argv + optind);
		fprintf(stderr, "psswatch: cannot run '%s': %s\n", argv[optind], strerror(errno));
		_exit(127);
	}
	unsigned long peak = 0, samples = 0;
	int status;
	/* The first samples come fast, doubling up to the interval: a short
	 * run (or a first sample taken mid-exec, which reads nothing) still
	 * gets measured while it runs. */
	long pause_ms = 1;
	while (!child_ended(child, subreaper, &status)) {
		unsigned long now = subreaper ? tree_pss_kb(getpid(), 1) : tree_pss_kb(child, 0);
		if (now > peak)
			peak = now;
		samples++;
		struct timespec pause = { pause_ms / 1000, (pause_ms % 1000) * 1000000L };
		nanosleep(&pause, NULL);
		pause_ms = pause_ms * 2 < interval_ms ? pause_ms * 2 : interval_ms;
	}
	FILE *out = out_path ? fopen(out_path, "w") : stderr;
	if (out) {
		fprintf(out, "peak_pss_kb %lu samples %lu\n", peak, samples);
		if (out != stderr)
			fclose(out);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
