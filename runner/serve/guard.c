/*
 * guard.c - a leader's writes to its client's standard output and error,
 * which never block for good.  See guard.h.
 */
#define _GNU_SOURCE
#include "guard.h"
#include "os/signals.h"
#include "os/util.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#define WAIT_MS 100   /* how long one wait or one write may take */

struct guarded {
	int fd;
	int is_stdout;
};

static struct guarded out = { STDOUT_FILENO, 1 }, err = { STDERR_FILENO, 0 };
static int conn = -1;
static int client_gone, plain;
static void (*on_stall)(void);   /* guard_streams()'s stalled */

/* Only there to cut a blocked write short (no SA_RESTART). */
static void on_alarm(int sig)
{
	(void)sig;
}

/* In a process the leader forks (a worker): plain writes, as before. */
static void in_child(void)
{
	plain = 1;
	conn = -1;
	on_stall = NULL;
	signal(SIGALRM, SIG_DFL);
}

/* The client is gone: the batch is cancelled, as the pool would find. */
static void note_client_gone(void)
{
	client_gone = 1;
	if (signals_watched_fd() >= 0)
		signals_watched_gone();
}

/* Standard output waits on a client that does not read: tell the
 * leader (each time: it acts once). */
static void note_stall(const struct guarded *g)
{
	if (g->is_stdout && on_stall != NULL)
		on_stall();
}

/* Wait for room on g->fd.  Returns 1 to write (room, or an error the
 * write will report), 0 to look again, -1 to give up (errno set): the
 * client is gone or the batch is being killed, and there is no room. */
static int wait_room(const struct guarded *g)
{
	int hopeless = client_gone || signals_count() >= 2;
	struct pollfd p[2] = { { g->fd, POLLOUT, 0 }, { client_gone ? -1 : conn, POLLIN, 0 } };
	int n = poll(p, 2, hopeless ? 0 : WAIT_MS);

	if (n < 0 && errno != EINTR)
		return -1;
	if (n > 0 && p[0].revents)
		return 1;
	if (n > 0 && p[1].revents) {
		note_client_gone();
		return 0;
	}
	if (hopeless) {
		errno = client_gone ? EPIPE : ECANCELED;
		return -1;
	}
	note_stall(g);
	return 0;
}

/* One write of at most PIPE_BUF bytes, cut short after WAIT_MS. */
static ssize_t write_chunk(int fd, const char *buf, size_t len)
{
	struct itimerval limit = { { 0, 0 }, { 0, WAIT_MS * 1000 } }, off = { { 0, 0 }, { 0, 0 } };

	setitimer(ITIMER_REAL, &limit, NULL);
	ssize_t n = write(fd, buf, len < PIPE_BUF ? len : PIPE_BUF);
	int saved = errno;
	setitimer(ITIMER_REAL, &off, NULL);
	errno = saved;
	return n;
}

/* The streams' write: all of buf, or fewer bytes on failure (the stream
 * then has its error flag). */
static ssize_t guarded_write(void *cookie, const char *buf, size_t size)
{
	const struct guarded *g = cookie;
	size_t done = 0;

	if (plain)
		return write_all(g->fd, buf, size) == 0 ? (ssize_t)size : 0;
	while (done < size) {
		int rc = wait_room(g);
		if (rc < 0)
			break;
		if (rc == 0)
			continue;
		ssize_t n = write_chunk(g->fd, buf + done, size - done);
		if (n < 0 && errno != EINTR && errno != EAGAIN)
			break;
		if (n > 0)
			done += (size_t)n;
	}
	return (ssize_t)done;
}

int guard_streams(int conn_fd, void (*stalled)(void))
{
	static const cookie_io_functions_t io = { NULL, guarded_write, NULL, NULL };
	struct sigaction sa;
	FILE *o = fopencookie(&out, "w", io), *e = fopencookie(&err, "w", io);
	int rc = -1;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sigemptyset(&sa.sa_mask);
	if (o == NULL || e == NULL || sigaction(SIGALRM, &sa, NULL) != 0)
		goto out;
	if ((errno = pthread_atfork(NULL, NULL, in_child)) != 0)
		goto out;
	setvbuf(o, NULL, isatty(STDOUT_FILENO) ? _IOLBF : _IOFBF, BUFSIZ);
	setvbuf(e, NULL, _IONBF, 0);
	fflush(stdout);
	fflush(stderr);
	stdout = o;
	stderr = e;
	conn = conn_fd;
	on_stall = stalled;
	o = e = NULL;
	rc = 0;
out:
	if (o)
		fclose(o);
	if (e)
		fclose(e);
	return rc;
}
