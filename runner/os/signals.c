/*
 * signals.c - SIGINT and SIGTERM handling for the parent.  See signals.h.
 */
#define _GNU_SOURCE
#include "signals.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t received, last_signal;
static int wake_pipe[2] = { -1, -1 };
static int watched_fd = -1;

static void on_signal(int sig)
{
	int saved = errno;

	received++;
	last_signal = sig;
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
