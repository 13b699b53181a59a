/*
 * generation.c - one generation of `cowrun serve`: the workload's setup,
 * once, then a leader per request, the workers of its running batches
 * kept within --max-workers.  See serve.h.
 */
#define _GNU_SOURCE
#include "serve_internal.h"
#include "os/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_LEADERS 64
#define MAX_QUEUE 64
#define KILL_REPEAT_MS 100

struct leader_slot {
	pid_t pid;               /* 0: free */
	pid_t client;
	size_t workers;
};

/* A request waiting for workers to come free: its descriptors
 * (connection, stdout, stderr, output directory, maybe the joblog and its
 * journal; -1 where none) and what it wants. */
struct queued {
	int fds[LEADER_FDS];
	struct proto_request rq;
	size_t want;
};

static struct generation_state {
	int chan;
	unsigned id;
	const struct serve_hooks *hooks;
	size_t max_workers, in_use, nleaders;
	struct leader_slot leaders[MAX_LEADERS];
	struct queued queue[MAX_QUEUE];
	size_t qhead, qlen;
	int retiring;
} G;

static void note(int kind, pid_t pid, pid_t client, size_t workers, const char *text)
{
	static struct gen_note n;

	memset(&n, 0, sizeof n);
	n.kind = kind;
	n.pid = pid;
	n.client_pid = client;
	n.workers = (int32_t)workers;
	snprintf(n.text, sizeof n.text, "%s", text ? text : "");
	size_t len = offsetof(struct gen_note, text) + strlen(n.text) + 1;
	if (G.chan >= 0 && send(G.chan, &n, len, MSG_NOSIGNAL) < 0 && errno != EAGAIN) {
		close(G.chan);
		G.chan = -1;
	}
}

static void close_fds(int fds[LEADER_FDS])
{
	for (int i = 0; i < LEADER_FDS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* In a leader: none of the generation's descriptors. */
static void close_in_leader(void *ctx)
{
	(void)ctx;
	if (G.chan >= 0)
		close(G.chan);
	serve_signals_close();
	for (size_t i = 0; i < G.qlen; i++)
		close_fds(G.queue[(G.qhead + i) % MAX_QUEUE].fds);
}

static void start_leader(struct queued *q)
{
	struct ucred cred = { 0, 0, 0 };
	socklen_t len = sizeof cred;
	size_t slot = 0;

	getsockopt(q->fds[0], SOL_SOCKET, SO_PEERCRED, &cred, &len);
	while (G.leaders[slot].pid != 0)
		slot++;
	pid_t pid = leader_start(G.hooks, &q->rq, q->want, q->fds, close_in_leader, NULL);
	if (pid < 0)
		proto_reply(q->fds[0], PROTO_ERROR, 254, "cannot fork the batch's leader");
	close_fds(q->fds);
	if (pid < 0)
		return;
	G.leaders[slot] = (struct leader_slot){ pid, cred.pid, q->want };
	G.nleaders++;
	G.in_use += q->want;
	note(NOTE_START, pid, cred.pid, q->want, NULL);
}

/* Start queued requests, in order, while workers are free under the cap:
 * a batch gets its -j, or what is left of the cap if less. */
static void start_queued(void)
{
	while (G.qlen > 0 && G.nleaders < MAX_LEADERS) {
		struct queued *q = &G.queue[G.qhead];
		/* What is free of the cap, up to its -j; none free: it waits. */
		if (q->want > 0 && G.in_use >= G.max_workers)
			return;
		if (q->want > G.max_workers - G.in_use)
			q->want = G.max_workers - G.in_use;
		G.qhead = (G.qhead + 1) % MAX_QUEUE;
		G.qlen--;
		start_leader(q);
	}
}

/* A request from the master, with its four descriptors. */
static void take_request(void)
{
	unsigned char buf[PROTO_MSG_MAX];
	int fds[PROTO_FDS_MAX];
	size_t nfds;
	long n = proto_recv(G.chan, buf, sizeof buf, fds, &nfds);
	const char *why;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0 || (n == 4 && memcmp(buf, RETIRE_MESSAGE, 4) == 0)) {
		G.retiring = 1;   /* the master closed, or retires us */
		return;
	}
	struct queued q = { { -1, -1, -1, -1, -1, -1 }, { 0 }, 0 };
	if ((nfds != 4 && nfds != 6) || proto_decode_request(buf, (size_t)n, &q.rq, &why) != 0) {
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		return;
	}
	memcpy(q.fds, fds, nfds * sizeof *fds);
	if (G.qlen == MAX_QUEUE) {
		proto_reply(q.fds[0], PROTO_ERROR, 255, "server busy: too many requests waiting");
		close_fds(q.fds);
		return;
	}
	q.want = G.hooks->want_workers(G.hooks->ctx, &q.rq);
	if (q.want > G.max_workers)
		q.want = G.max_workers;
	G.queue[(G.qhead + G.qlen++) % MAX_QUEUE] = q;
	start_queued();
}

/* Reap the leaders that ended (and nothing else is a child here). */
static void reap_leaders(void)
{
	pid_t pid;

	while ((pid = waitpid(-1, NULL, WNOHANG)) > 0 || (pid < 0 && errno == EINTR)) {
		for (size_t i = 0; pid > 0 && i < MAX_LEADERS; i++)
			if (G.leaders[i].pid == pid) {
				G.in_use -= G.leaders[i].workers;
				G.nleaders--;
				G.leaders[i].pid = 0;
				note(NOTE_END, pid, G.leaders[i].client, 0, NULL);
			}
	}
	start_queued();
}

/* SIGTERM to every leader: the first stops its batch, the second (sent
 * again every KILL_REPEAT_MS until it ends: two sent at once could be
 * delivered as one) kills its workers. */
static void signal_leaders(void)
{
	for (size_t i = 0; i < MAX_LEADERS; i++)
		if (G.leaders[i].pid != 0)
			kill(G.leaders[i].pid, SIGTERM);
}

/* The master's second signal: the running batches are killed, the
 * waiting ones refused. */
static void kill_batches(void)
{
	signal_leaders();
	while (G.qlen > 0) {
		struct queued *q = &G.queue[G.qhead];
		proto_reply(q->fds[0], PROTO_ERROR, 143, "the server stopped before the batch started");
		close_fds(q->fds);
		G.qhead = (G.qhead + 1) % MAX_QUEUE;
		G.qlen--;
	}
	G.retiring = 1;
}

/* The setup, its messages kept to tell the master why it failed.
 * Returns 0 or -1. */
static int run_setup(char *why, size_t size)
{
	int mem = memfd_create("cowrun-setup-messages", MFD_CLOEXEC);
	int saved = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, 3);

	fflush(stderr);
	if (mem >= 0 && saved >= 0)
		dup2(mem, STDERR_FILENO);
	int rc = G.hooks->setup(G.hooks->ctx);
	fflush(NULL);
	why[0] = '\0';
	if (mem >= 0 && saved >= 0) {
		dup2(saved, STDERR_FILENO);
		ssize_t n = pread(mem, why, size - 1, 0);
		why[n > 0 ? n : 0] = '\0';
		if (n > 0 && write_all(STDERR_FILENO, why, (size_t)n) != 0) {
		}
		size_t len = strlen(why);
		while (len > 0 && why[len - 1] == '\n')
			why[--len] = '\0';
	}
	if (mem >= 0)
		close(mem);
	if (saved >= 0)
		close(saved);
	return rc;
}

void generation_main(int chan, unsigned id, const struct serve_config *cfg,
		     const struct serve_hooks *hooks)
{
	char why[sizeof ((struct gen_note *)0)->text];
	int killed = 0;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	setpgid(0, 0);   /* a terminal's Ctrl-C is the master's to handle */
	memset(&G, 0, sizeof G);
	G.chan = chan;
	G.id = id;
	G.hooks = hooks;
	G.max_workers = cfg->max_workers ? cfg->max_workers : (size_t)cpu_count();
	if (serve_signals_init() != 0 || run_setup(why, sizeof why) != 0) {
		note(NOTE_FAILED, getpid(), 0, 0, why);
		_exit(255);
	}
	note(NOTE_READY, getpid(), 0, 0, NULL);
	while (!G.retiring || G.nleaders > 0 || G.qlen > 0) {
		struct pollfd pfd[2] = { { serve_wake_fd(), POLLIN, 0 },
					 { G.retiring ? -1 : G.chan, POLLIN, 0 } };
		if (poll(pfd, 2, killed ? KILL_REPEAT_MS : -1) < 0 && errno != EINTR)
			break;
		if (killed)
			signal_leaders();
		if (serve_take_chld())
			reap_leaders();
		if (serve_terms() > 0 && !killed) {
			killed = 1;
			kill_batches();
		}
		if (pfd[1].revents)
			take_request();
	}
	_exit(0);
}
