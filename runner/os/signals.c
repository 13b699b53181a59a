/*
 * signals.c - SIGINT, SIGTERM and SIGHUP handling for the parent.  See
 * signals.h.
 */
#define _GNU_SOURCE
#include "signals.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t received, last_signal;
static int wake_pipe[2] = { -1, -1 };
static int watched_fd = -1;

/* The workers' stop flag (the pool's shared page), set by the handler
 * itself: no worker claims a task once the first signal has arrived,
 * whatever the parent's loop is doing. */
static _Atomic int *volatile stop_flag;

/* During the setup: the handler ends the run itself (the setup is the
 * workload's code, which never looks at the self-pipe), removing first
 * the files noted here.  Fixed arrays: the handler may not allocate. */
#define SETUP_FILES 4
static volatile sig_atomic_t in_setup, nsetup_files;
static char setup_files[SETUP_FILES][PATH_MAX];
static const char *setup_who = "cowrun";

/* SIGHUP was ignored when cowrun started (nohup): it stays ignored. */
static int hup_ignored_at_start = -1;

/* `text` appended at `at` in buf (of `size`), async-signal-safe; returns
 * the new length. */
static size_t append(char *buf, size_t at, size_t size, const char *text)
{
	while (*text && at + 1 < size)
		buf[at++] = *text++;
	return at;
}

static const char *signal_name(int sig)
{
	switch (sig) {
	case SIGINT: return "SIGINT";
	case SIGTERM: return "SIGTERM";
	case SIGHUP: return "SIGHUP";
	default: return "a signal";
	}
}

/* A signal during the setup: remove the noted files, say so in one line,
 * and end with 128 + sig, as the shell reports a process the signal
 * killed.  Only async-signal-safe calls. */
static void __attribute__((noreturn)) end_in_setup(int sig)
{
	char line[256];
	size_t n = 0;

	for (sig_atomic_t i = 0; i < nsetup_files; i++)
		if (setup_files[i][0])
			unlink(setup_files[i]);
	n = append(line, n, sizeof line, setup_who);
	n = append(line, n, sizeof line, ": interrupted (");
	n = append(line, n, sizeof line, signal_name(sig));
	n = append(line, n, sizeof line, ") during the setup: no task was started\n");
	if (write(STDERR_FILENO, line, n) < 0) {
	}
	_exit(128 + sig);
}

static void on_signal(int sig)
{
	int saved = errno;

	received++;
	last_signal = sig;
	if (stop_flag)
		atomic_store_explicit(stop_flag, 1, memory_order_relaxed);
	if (in_setup)
		end_in_setup(sig);
	/* Non-blocking: a full pipe already means "wake up". */
	if (write(wake_pipe[1], "", 1) < 0) {
	}
	errno = saved;
}

int signals_route(int wake[2], void (*handler)(int), const int *sigs, size_t nsigs)
{
	struct sigaction sa;

	if (pipe2(wake, O_CLOEXEC | O_NONBLOCK) != 0)
		return -1;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	for (size_t i = 0; i < nsigs; i++)
		if (sigaction(sigs[i], &sa, NULL) != 0)
			return -1;
	return 0;
}

void signals_close_pipe(int wake[2])
{
	if (wake[0] >= 0) {
		close(wake[0]);
		close(wake[1]);
	}
	wake[0] = wake[1] = -1;
}

int signals_install(void)
{
	static const int sigs[] = { SIGINT, SIGTERM };

	return signals_route(wake_pipe, on_signal, sigs, sizeof sigs / sizeof sigs[0]);
}

int signals_install_hangup(void)
{
	struct sigaction sa, old;

	if (sigaction(SIGHUP, NULL, &old) != 0)
		return -1;
	hup_ignored_at_start = old.sa_handler == SIG_IGN;
	if (hup_ignored_at_start)
		return 0;   /* nohup: the user asked for it to be ignored */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	return sigaction(SIGHUP, &sa, NULL);
}

void signals_setup_begin(const char *who)
{
	setup_who = who;
	in_setup = 1;
	/* One that came before (waiting for the joblog's lock): no setup. */
	if (received > 0)
		end_in_setup(last_signal);
}

void signals_setup_note_file(const char *path)
{
	char cwd[PATH_MAX], *slot;

	if (nsetup_files >= SETUP_FILES)
		return;
	slot = setup_files[nsetup_files];
	/* Absolute: the setup may change the directory (os.chdir()). */
	if (path[0] != '/' && getcwd(cwd, sizeof cwd) != NULL) {
		if (snprintf(slot, PATH_MAX, "%s/%s", cwd, path) >= PATH_MAX)
			return;
	} else if (path[0] != '/' || snprintf(slot, PATH_MAX, "%s", path) >= PATH_MAX) {
		return;
	}
	/* Written before it is counted: the handler never sees half a name. */
	nsetup_files++;
}

void signals_setup_end(void)
{
	in_setup = 0;
	nsetup_files = 0;
}

void signals_stop_flag(_Atomic int *flag)
{
	stop_flag = flag;
	/* A signal that came before the flag was known. */
	if (flag && received > 0)
		atomic_store(flag, 1);
}

int signals_restart(void)
{
	signals_close_pipe(wake_pipe);
	received = last_signal = 0;
	watched_fd = -1;
	return signals_install();
}

void signals_watch(int fd)
{
	watched_fd = fd;
}

int signals_watched_fd(void)
{
	return watched_fd;
}

void signals_watched_gone(void)
{
	/* As a second signal: stop, and kill what runs. */
	received += 2;
	last_signal = SIGPIPE;
	watched_fd = -1;
}

int signals_count(void)
{
	return received;
}

int signals_last(void)
{
	return last_signal;
}

int signals_fd(void)
{
	return wake_pipe[0];
}

void signals_drain(void)
{
	char buf[64];

	while (wake_pipe[0] >= 0 && read(wake_pipe[0], buf, sizeof buf) > 0)
		;
}

void signals_reset_in_worker(void)
{
	signal(SIGINT, SIG_IGN);
	signal(SIGTERM, SIG_DFL);
	/* SIGHUP as SIGTERM, or still ignored (nohup). */
	if (hup_ignored_at_start == 0)
		signal(SIGHUP, SIG_DFL);
	stop_flag = NULL;
	in_setup = 0;
	if (wake_pipe[0] >= 0) {
		close(wake_pipe[0]);
		close(wake_pipe[1]);
		wake_pipe[0] = wake_pipe[1] = -1;
	}
	if (watched_fd >= 0) {
		close(watched_fd);
		watched_fd = -1;
	}
}
