/*
 * leader.c - one served batch: the leader a generation forks per request.
 * It takes the client's standard output and error and its output
 * directory (descriptors passed with the request), its own signal state
 * (a fresh self-pipe, SIGCHLD back to default: the pool reaps its workers
 * by pid; SIGPIPE ignored), writes to the client only through guarded
 * streams (guard.h: a client that does not read stalls only itself), and
 * watches the connection: a client that goes away cancels the batch (its
 * workers killed, no report under a final name).  Then today's fork-mode
 * batch, and its exit status to the client.  A leader is forked either
 * when its request is granted, or in advance (a spare: it waits on a
 * socketpair for one request and its descriptors, the fork of a big
 * setup's page tables paid before any client waits).  See serve.h.
 */
#define _GNU_SOURCE
#include "serve_internal.h"
#include "guard.h"
#include "engine/pool.h"
#include "os/signals.h"
#include "os/process.h"
#include "run/sidefiles.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* The side files the request gives that are written under temporary
 * names (SIDEFILE_WHOLE_* bits). */
static unsigned given_side_files(const struct proto_request *rq)
{
	return ((rq->present >> PF_SAVE) & 1u) * SIDEFILE_WHOLE_SAVE |
	       ((rq->present >> PF_TIMELINE) & 1u) * SIDEFILE_WHOLE_TIMELINE |
	       ((rq->present >> PF_STATS) & 1u) * SIDEFILE_WHOLE_STATS;
}

/* The generation's pipe for the pids of leaders whose workers are gone. */
static int release_pipe = -1;

/* Give this batch's workers back to the server's cap, once, when none is
 * left: first a standby the batch did not take and workers that only exit
 * (not worth waiting on a client for), so the cap is not held until this
 * leader's own exit is torn down and reaped, nor by a client that does
 * not read (the guard's stalled()). */
static void give_back(void)
{
	static int given;
	siginfo_t si;

	pool_standby_drop();
	pool_reap_later();
	if (given || release_pipe < 0)
		return;
	memset(&si, 0, sizeof si);
	if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) == 0 || errno != ECHILD)
		return;   /* a worker is still there */
	pid_t pid = getpid();
	if (write(release_pipe, &pid, sizeof pid) == (ssize_t)sizeof pid)
		given = 1;
}

/* The client has its answer, or cannot have one: the workers go back to
 * the server's cap, then this process ends. */
static void __attribute__((noreturn)) leader_end(int status)
{
	give_back();
	_exit(status & 0xff);
}

static void __attribute__((noreturn))
leader_main(const struct serve_hooks *hooks, const struct proto_request *rq, size_t workers,
	    const int fds[LEADER_FDS], int release_fd)
{
	release_pipe = release_fd;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGCHLD, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	if (signals_restart() != 0 || dup2(fds[1], STDOUT_FILENO) < 0 ||
	    dup2(fds[2], STDERR_FILENO) < 0 || guard_streams(fds[0], give_back) != 0) {
		proto_reply(fds[0], PROTO_ERROR, 254, "the batch's leader could not start");
		leader_end(254);
	}
	close(fds[1]);
	close(fds[2]);
	char why[256];
	if (leader_take_client(fds[0], rq, fds + 3, why, sizeof why) != 0) {
		proto_reply(fds[0], PROTO_ERROR, 255, why);
		leader_end(255);
	}
	signals_watch(fds[0]);
	unsigned whole = 0;
	int rc = hooks->run(hooks->ctx, rq, workers, fds + 3, &whole);
	char text[64];
	fflush(NULL);
	proto_whole_text(whole, given_side_files(rq), text, sizeof text);
	proto_reply(fds[0], PROTO_EXIT, rc, text);
	leader_end(rc);
}

pid_t leader_start(const struct serve_hooks *hooks, const struct proto_request *rq,
		   size_t workers, const int fds[LEADER_FDS], int release_fd,
		   void (*close_in_child)(const void *), const void *ctx)
{
	fflush(NULL);
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	close_in_child(ctx);
	leader_main(hooks, rq, workers, fds, release_fd);
}

int leader_place_fds(const struct proto_request *rq, const int *got, size_t n,
		     int fds[LEADER_FDS])
{
	static const int optional[][2] = { { PF_SAVE, LFD_SAVE }, { PF_TIMELINE, LFD_TIMELINE },
					    { PF_STATS, LFD_STATS } };
	size_t at = LFD_JOBLOG;

	if (n != 1 + proto_run_fds(rq))
		return -1;
	for (int i = 0; i < LEADER_FDS; i++)
		fds[i] = i < LFD_JOBLOG ? got[i] : -1;
	if (rq->present & (1u << PF_JOBLOG)) {
		fds[LFD_JOBLOG] = got[at++];
		fds[LFD_JOURNAL] = got[at++];
	}
	for (size_t i = 0; i < sizeof optional / sizeof optional[0]; i++)
		if (rq->present & (1u << optional[i][0]))
			fds[optional[i][1]] = got[at++];
	return 0;
}

/* In a spare: wait for the one request (its granted workers, then the
 * encoded request, with its descriptors, as leader_place_fds() takes
 * them), from the generation or, lent, from the master.  Its pages are
 * made first (prefault_private_pages()).  The other end closed, or
 * anything else, ends the spare quietly.  Never returns. */
static void __attribute__((noreturn))
spare_main(const struct serve_hooks *hooks, int chan, int release_fd, const char *comm)
{
	unsigned char buf[sizeof(uint32_t) + PROTO_MSG_MAX];
	int got[PROTO_FDS_MAX], fds[LEADER_FDS];
	size_t nfds = 0;
	struct pollfd p = { chan, POLLIN, 0 };
	struct proto_request rq;
	const char *why;
	uint32_t workers;
	long n;

	prefault_private_pages(PREFAULT_STACK_KB, PREFAULT_HEAP_KB, PREFAULT_SMALL_KB);
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	n = proto_recv(chan, buf, sizeof buf, got, &nfds);
	close(chan);
	if (n <= (long)sizeof workers ||
	    proto_decode_request(buf + sizeof workers, (size_t)n - sizeof workers, &rq, &why) != 0 ||
	    leader_place_fds(&rq, got, nfds, fds) != 0) {
		pool_standby_drop();
		_exit(0);
	}
	memcpy(&workers, buf, sizeof workers);
	prctl(PR_SET_NAME, comm);
	leader_main(hooks, &rq, workers, fds, release_fd);
}

pid_t leader_spare_start(const struct serve_hooks *hooks, int release_fd, int *chan,
			 void (*close_in_child)(const void *), const void *ctx)
{
	int sv[2];

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return -1;
	fflush(NULL);
	pid_t parent = getpid(), pid = fork();

	if (pid != 0) {
		close(sv[1]);
		if (pid < 0)
			close(sv[0]);
		else
			*chan = sv[0];
		return pid;
	}
	char comm[17] = "";
	close(sv[0]);
	close_in_child(ctx);
	prctl(PR_GET_NAME, comm);
	signal(SIGTERM, SIG_DFL);   /* a spare holds nothing of anyone's */
	signal(SIGINT, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	prctl(PR_SET_NAME, "cowrun-spare");
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		_exit(0);
	/* The signals as a leader sets them, before its standby worker
	 * inherits them (it would from the leader). */
	signal(SIGCHLD, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	const int drop[] = { sv[1], release_fd };
	(void)hooks->spare(hooks->ctx, drop, sizeof drop / sizeof drop[0]);
	spare_main(hooks, sv[1], release_fd, comm);
}

int leader_spare_hand_encoded(int chan, const unsigned char *req, size_t len, size_t workers,
			      const int *fds, size_t nfds)
{
	unsigned char buf[sizeof(uint32_t) + PROTO_MSG_MAX];
	uint32_t w = (uint32_t)workers;

	if (len > PROTO_MSG_MAX)
		return errno = EMSGSIZE, -1;
	memcpy(buf, &w, sizeof w);
	memcpy(buf + sizeof w, req, len);
	return proto_send(chan, buf, sizeof w + len, fds, nfds);
}

int leader_spare_hand(int chan, const struct proto_request *rq, size_t workers,
		      const int fds[LEADER_FDS])
{
	unsigned char req[PROTO_MSG_MAX];
	long len = proto_encode_request(rq, req, sizeof req);

	if (len < 0)
		return errno = EMSGSIZE, -1;
	int packed[LEADER_FDS];
	size_t n = 0;

	for (int i = 0; i < LEADER_FDS; i++)
		if (fds[i] >= 0)
			packed[n++] = fds[i];
	return leader_spare_hand_encoded(chan, req, (size_t)len, workers, packed, n);
}
