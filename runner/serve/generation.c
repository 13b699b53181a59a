/*
 * generation.c - one generation of `cowrun serve`: the workload's setup,
 * once, then a leader per request once the master has granted the
 * batch's workers (the cap is the whole server's: ledger.h).  A request
 * whose client goes away before its batch starts gets no leader.  The
 * leaders are forked in advance: SPARE_LEADERS spares wait for a request
 * each, lent to the master, which hands a request granted at once to one
 * directly (TOOK); a request that waited for its workers goes to a leader
 * forked then (or to a spare the master could not take).  New spares are
 * forked once no batch runs.  See serve.h.
 */
#define _GNU_SOURCE
#include "serve_internal.h"
#include "os/util.h"
#include "os/process.h"

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

#define MAX_QUEUE 64
#define KILL_REPEAT_MS 100

/* Leader slots: MAX_LEADERS for the batches the generation starts itself,
 * and room for the spares the master hands batches to (TOOK).  Those are
 * at most SPARE_LEADERS alive at once: spares are forked only while no
 * batch runs. */
#define LEADER_SLOTS (MAX_LEADERS + SPARE_LEADERS)

struct leader_slot {
	pid_t pid;               /* 0: free */
	pid_t client;
	size_t workers;          /* granted and not given back yet */
};

/* A leader forked in advance, waiting on its pair for a request: the
 * generation's end is chan, or the master's (lent: chan is -1).  A lent
 * one may already run the batch the master handed it, its TOOK not read
 * yet: released says it gave its workers back meanwhile. */
struct spare {
	pid_t pid;               /* 0: none */
	int chan;
	int lent;
	int released;
};
#define NO_SPARE ((struct spare){ .pid = 0, .chan = -1 })

/* A request waiting for its workers: its descriptors (connection,
 * stdout, stderr, output directory, maybe the joblog and its journal; -1
 * where none) and what it wants. */
struct queued {
	int used;
	uint32_t ticket;
	pid_t client;
	int fds[LEADER_FDS];
	struct proto_request rq;
	size_t want;
};

static struct generation_state {
	int chan;
	unsigned id;
	const struct serve_hooks *hooks;
	size_t max_workers, nleaders, nqueued;
	uint32_t next_ticket;
	struct leader_slot leaders[LEADER_SLOTS];
	struct queued queue[MAX_QUEUE];
	struct spare spares[SPARE_LEADERS];
	int release[2];          /* leaders stuck on output write their pid */
	int retiring;
	size_t told_waits[3];    /* leaders, queued, lent spares: as last told */
	size_t ntasks;           /* the setup's task count */
} G;

/* A note to the master, with the descriptor fd unless it is -1.
 * Returns 0, or -1 (the master is gone or not reading: the channel is
 * closed, and the generation retires: no request can reach it now). */
static int note_fd(int kind, pid_t pid, pid_t client, size_t workers, uint32_t ticket,
		   const char *text, int fd)
{
	static struct gen_note n;

	memset(&n, 0, sizeof n);
	n.kind = kind;
	n.pid = pid;
	n.client_pid = client;
	n.workers = (int32_t)workers;
	n.ticket = ticket;
	n.ntasks = G.ntasks;
	snprintf(n.text, sizeof n.text, "%s", text ? text : "");
	size_t len = offsetof(struct gen_note, text) + strlen(n.text) + 1;
	if (G.chan < 0)
		return -1;
	if (proto_send(G.chan, &n, len, &fd, fd >= 0) == 0)
		return 0;
	if (errno != EAGAIN) {
		close(G.chan);
		G.chan = -1;
		G.retiring = 1;
	}
	return -1;
}

static void note(int kind, pid_t pid, pid_t client, size_t workers, uint32_t ticket,
		 const char *text)
{
	(void)note_fd(kind, pid, client, workers, ticket, text, -1);
}

static void close_fds(int fds[LEADER_FDS])
{
	for (int i = 0; i < LEADER_FDS; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

static void drop_queued(struct queued *q)
{
	close_fds(q->fds);
	q->used = 0;
	G.nqueued--;
}

/* In a leader: none of the generation's descriptors but release[1] and
 * those of its own request (ctx). */
static void close_in_leader(const void *ctx)
{
	if (G.chan >= 0)
		close(G.chan);
	close(G.release[0]);
	serve_signals_close();
	for (size_t i = 0; i < MAX_QUEUE; i++)
		if (G.queue[i].used && &G.queue[i] != ctx)
			close_fds(G.queue[i].fds);
	for (size_t i = 0; i < SPARE_LEADERS; i++)
		if (G.spares[i].chan >= 0)
			close(G.spares[i].chan);
}

static void drop_spare(struct spare *sp)
{
	if (sp->chan >= 0)
		close(sp->chan);
	*sp = NO_SPARE;
}

/* Fork the spares missing (a failed fork is tried again next time) and
 * lend each to the master: its end of the pair goes with the note.  One
 * the master cannot take stays the generation's. */
static void fill_spares(void)
{
	for (size_t i = 0; i < SPARE_LEADERS; i++) {
		struct spare *sp = &G.spares[i];
		if (sp->pid != 0)
			continue;
		sp->pid = leader_spare_start(G.hooks, G.release[1], &sp->chan, close_in_leader, NULL);
		if (sp->pid < 0)
			*sp = NO_SPARE;
		else if (note_fd(NOTE_SPARE, sp->pid, 0, 0, 0, NULL, sp->chan) == 0) {
			close(sp->chan);
			sp->chan = -1;
			sp->lent = 1;
		}
	}
}

/* Retiring: the generation's own spares told so (their pairs closed)
 * and reaped.  A lent one is left to end by itself: the master closes its
 * end when it retires this generation (a spare still waiting then ends
 * quietly), and one the master handed a batch whose TOOK is not read yet
 * runs it to its end and its client's reply (the second signal stops it
 * as a leader: signal_leaders()).  reap_leaders() reaps it. */
static void end_spares(void)
{
	for (size_t i = 0; i < SPARE_LEADERS; i++) {
		struct spare *sp = &G.spares[i];
		if (sp->pid == 0 || sp->lent)   /* a lent one ends by itself */
			continue;
		pid_t pid = sp->pid;
		drop_spare(sp);
		reap_child(pid, NULL);
	}
}

static size_t lent_spares(void)
{
	size_t n = 0;

	for (size_t i = 0; i < SPARE_LEADERS; i++)
		n += G.spares[i].pid != 0 && G.spares[i].lent;
	return n;
}

/* q's batch to a spare of the generation's own, if one takes it.  Returns
 * its pid, or 0. */
static pid_t hand_to_spare(const struct queued *q, size_t workers)
{
	for (size_t i = 0; i < SPARE_LEADERS; i++) {
		struct spare *sp = &G.spares[i];
		if (sp->pid == 0 || sp->lent)
			continue;
		pid_t pid = sp->pid;
		int rc = leader_spare_hand(sp->chan, &q->rq, workers, q->fds);
		drop_spare(sp);   /* it has its request, or it is gone */
		if (rc == 0)
			return pid;
	}
	return 0;
}

/* Any input or hangup on a connection whose request was read means the
 * client is gone (as a leader would take it). */
static int client_gone(int conn)
{
	struct pollfd p = { conn, POLLIN, 0 };

	return poll(&p, 1, 0) > 0;
}

static struct leader_slot *free_slot(void)
{
	for (size_t i = 0; i < LEADER_SLOTS; i++)
		if (G.leaders[i].pid == 0)
			return &G.leaders[i];
	return NULL;
}

/* Start q's batch with `workers`, or give them back.  q is dropped. */
static void start_leader(struct queued *q, size_t workers)
{
	struct leader_slot *slot = G.nleaders < MAX_LEADERS ? free_slot() : NULL;
	pid_t pid = -1;

	if (client_gone(q->fds[0]))
		serve_log("generation %u: client pid %ld went away before its batch started",
			  G.id, (long)q->client);
	else if (slot == NULL)
		proto_reply(q->fds[0], PROTO_ERROR, 255, "server busy: too many batches running");
	else if ((pid = hand_to_spare(q, workers)) == 0 &&
		 (pid = leader_start(G.hooks, &q->rq, workers, q->fds, G.release[1],
				     close_in_leader, q)) < 0)
		proto_reply(q->fds[0], PROTO_ERROR, 254, "cannot fork the batch's leader");
	if (pid > 0) {
		*slot = (struct leader_slot){ pid, q->client, workers };
		G.nleaders++;
		note(NOTE_START, pid, q->client, workers, q->ticket, NULL);
	} else if (workers > 0)
		note(NOTE_FREE, 0, q->client, workers, q->ticket, NULL);
	drop_queued(q);
}

/* The master handed a lent spare its batch: a leader now, with no
 * workers if it gave them back before this came (read_releases()).  A
 * spare that ended before this came was told as SPARE_GONE (the master
 * ends its batch then).  There is always a slot (LEADER_SLOTS). */
static void took(const struct gen_took *t)
{
	for (size_t i = 0; i < SPARE_LEADERS; i++) {
		struct spare *sp = &G.spares[i];
		if (sp->pid != t->pid || !sp->lent)
			continue;
		struct leader_slot *slot = free_slot();
		size_t workers = sp->released ? 0 : t->workers;
		drop_spare(sp);
		if (slot == NULL) {   /* not reached (LEADER_SLOTS): never lose count of it */
			kill(t->pid, SIGKILL);
			reap_child(t->pid, NULL);
			note(NOTE_END, t->pid, t->client, workers, 0, NULL);
			return;
		}
		*slot = (struct leader_slot){ t->pid, t->client, workers };
		G.nleaders++;
		return;
	}
}

/* The master granted a waiting batch its workers. */
static void granted(const struct gen_grant *gr)
{
	for (size_t i = 0; i < MAX_QUEUE; i++)
		if (G.queue[i].used && G.queue[i].ticket == gr->ticket) {
			start_leader(&G.queue[i], gr->workers);
			return;
		}
	note(NOTE_FREE, 0, 0, gr->workers, gr->ticket, NULL);   /* withdrawn meanwhile */
}

static struct queued *queue_slot(void)
{
	for (size_t i = 0; i < MAX_QUEUE; i++)
		if (!G.queue[i].used)
			return &G.queue[i];
	return NULL;
}

/* A run request with its descriptors, as the master passed it on (head):
 * start it at once if its workers were granted with it or it runs no
 * task, else ask the master for them.  Workers granted to a request that
 * cannot be taken are given back. */
static void queue_request(const struct gen_passed *head, const unsigned char *buf, size_t n,
			  const int *fds, size_t nfds)
{
	struct queued *q = queue_slot();
	struct ucred cred = { 0, 0, 0 };
	socklen_t len = sizeof cred;
	const char *why;

	if (q == NULL && nfds > 0)
		proto_reply(fds[0], PROTO_ERROR, 255, "server busy: too many requests waiting");
	if (q != NULL)
		memset(q, 0, sizeof *q);
	if (q == NULL || proto_decode_request(buf, n, &q->rq, &why) != 0 ||
	    leader_place_fds(&q->rq, fds, nfds, q->fds) != 0) {
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		if (head->granted > 0)
			note(NOTE_FREE, 0, 0, head->granted, 0, NULL);
		return;
	}
	getsockopt(q->fds[0], SOL_SOCKET, SO_PEERCRED, &cred, &len);
	q->used = 1;
	q->ticket = ++G.next_ticket;
	q->client = cred.pid;
	q->want = head->want < G.max_workers ? (size_t)head->want : G.max_workers;
	G.nqueued++;
	if (head->granted > 0 || q->want == 0)
		start_leader(q, head->granted);
	else
		note(NOTE_WANT, 0, q->client, q->want, q->ticket, NULL);
}

/* A message from the master: a request, a grant, or retire. */
static void read_chan(void)
{
	unsigned char buf[sizeof(struct gen_passed) + PROTO_MSG_MAX];
	int fds[PROTO_FDS_MAX];
	size_t nfds;
	long n = proto_recv(G.chan, buf, sizeof buf, fds, &nfds);
	struct gen_grant gr;
	struct gen_took t;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {   /* the master is gone */
		close(G.chan);
		G.chan = -1;
		G.retiring = 1;
	} else if (n == 4 && memcmp(buf, RETIRE_MESSAGE, 4) == 0)
		G.retiring = 1;
	else if (n == (long)sizeof gr && memcmp(buf, GRANT_MAGIC, 4) == 0) {
		memcpy(&gr, buf, sizeof gr);
		granted(&gr);
	} else if (n == (long)sizeof t && memcmp(buf, TOOK_MAGIC, 4) == 0) {
		memcpy(&t, buf, sizeof t);
		took(&t);
	} else if (n >= (long)sizeof(struct gen_passed) && memcmp(buf, PASSED_MAGIC, 4) == 0) {
		struct gen_passed head;
		memcpy(&head, buf, sizeof head);
		queue_request(&head, buf + sizeof head, (size_t)n - sizeof head, fds, nfds);
	} else {
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
	}
}

/* Waiting requests whose client went away: withdrawn. */
static void check_queued(const struct pollfd *pfd, const size_t *at, size_t n)
{
	for (size_t j = 0; j < n; j++) {
		struct queued *q = &G.queue[at[j]];
		if (!pfd[j].revents || !q->used || q->fds[0] != pfd[j].fd)
			continue;
		serve_log("generation %u: client pid %ld went away while its batch waited for workers",
			  G.id, (long)q->client);
		note(NOTE_WITHDRAW, 0, q->client, 0, q->ticket, NULL);
		drop_queued(q);
	}
}

static struct leader_slot *find_leader(pid_t pid)
{
	for (size_t i = 0; pid > 0 && i < LEADER_SLOTS; i++)
		if (G.leaders[i].pid == pid)
			return &G.leaders[i];
	return NULL;
}

/* Reap the leaders that ended (and nothing else is a child here). */
static void reap_leaders(void)
{
	pid_t pid;

	while ((pid = waitpid(-1, NULL, WNOHANG)) > 0 || (pid < 0 && errno == EINTR)) {
		struct leader_slot *s = find_leader(pid);
		for (size_t i = 0; s == NULL && i < SPARE_LEADERS; i++) {
			if (G.spares[i].pid != pid)
				continue;
			/* Killed while it waited, or a lent one that ran a batch
			 * whose TOOK is still on its way. */
			if (G.spares[i].lent)
				note(NOTE_SPARE_GONE, pid, 0, 0, 0, NULL);
			drop_spare(&G.spares[i]);
		}
		if (s == NULL)
			continue;
		note(NOTE_END, pid, s->client, s->workers, 0, NULL);
		s->pid = 0;
		G.nleaders--;
	}
}

static struct spare *find_lent(pid_t pid)
{
	for (size_t i = 0; pid > 0 && i < SPARE_LEADERS; i++)
		if (G.spares[i].pid == pid && G.spares[i].lent)
			return &G.spares[i];
	return NULL;
}

/* Leaders stuck on their client's output with no worker left give their
 * workers back; so may a lent spare whose batch's TOOK is not read yet
 * (the master knows its workers: it granted them). */
static void read_releases(void)
{
	pid_t pid;

	while (read(G.release[0], &pid, sizeof pid) == (ssize_t)sizeof pid) {
		struct leader_slot *s = find_leader(pid);
		struct spare *sp = s ? NULL : find_lent(pid);
		if (sp != NULL && !sp->released) {
			sp->released = 1;
			note(NOTE_FREE, pid, 0, 0, 0, NULL);
		}
		if (s == NULL || s->workers == 0)
			continue;
		note(NOTE_FREE, pid, s->client, s->workers, 0, NULL);
		s->workers = 0;
	}
}

/* SIGTERM to every leader: the first stops its batch, the second (sent
 * again every KILL_REPEAT_MS until it ends: two sent at once could be
 * delivered as one) kills its workers.  Lent spares too: one may run a
 * batch whose TOOK is not read yet; one still waiting just ends. */
static void signal_leaders(void)
{
	for (size_t i = 0; i < LEADER_SLOTS; i++)
		if (G.leaders[i].pid != 0)
			kill(G.leaders[i].pid, SIGTERM);
	for (size_t i = 0; i < SPARE_LEADERS; i++)
		if (G.spares[i].pid != 0 && G.spares[i].lent)
			kill(G.spares[i].pid, SIGTERM);
}

/* Every request still waiting for its workers refused with `status`
 * and `why`. */
static void refuse_queued(int status, const char *why)
{
	for (size_t i = 0; i < MAX_QUEUE; i++) {
		struct queued *q = &G.queue[i];
		if (!q->used)
			continue;
		proto_reply(q->fds[0], PROTO_ERROR, status, why);
		note(NOTE_WITHDRAW, 0, q->client, 0, q->ticket, NULL);
		drop_queued(q);
	}
}

/* The master's second signal: the running batches are killed, the
 * waiting ones refused. */
static void kill_batches(void)
{
	signal_leaders();
	refuse_queued(143, "the server stopped before the batch started");
	G.retiring = 1;
}

/* Retiring: tell the master what the generation still waits for, each
 * time that changes (--status shows it; the master names a generation
 * that outlives its bound).  With the channel gone no grant can come:
 * the requests waiting for one are refused, or they would wait for good
 * and the generation with them. */
static void report_waits(void)
{
	if (G.chan < 0 && G.nqueued > 0)
		refuse_queued(255, "the server lost touch with its generation before the batch "
			      "started; run it again");
	size_t now[3] = { G.nleaders, G.nqueued, lent_spares() };
	if (memcmp(now, G.told_waits, sizeof now) == 0)
		return;
	memcpy(G.told_waits, now, sizeof now);
	note(NOTE_WAITS, 0, (pid_t)now[2], now[0], (uint32_t)now[1], NULL);
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
	int rc = G.hooks->setup(G.hooks->ctx, &G.ntasks);
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

/* Poll everything once and act on it.  Returns -1 if poll failed. */
static int generation_step(int killed)
{
	struct pollfd pfd[3 + MAX_QUEUE];
	size_t at[MAX_QUEUE], nq = 0;

	pfd[0] = (struct pollfd){ serve_wake_fd(), POLLIN, 0 };
	pfd[1] = (struct pollfd){ G.chan, POLLIN, 0 };
	pfd[2] = (struct pollfd){ G.release[0], POLLIN, 0 };
	for (size_t i = 0; i < MAX_QUEUE; i++)
		if (G.queue[i].used) {
			pfd[3 + nq] = (struct pollfd){ G.queue[i].fds[0], POLLIN, 0 };
			at[nq++] = i;
		}
	/* Retiring, it also looks for ended children once a second whatever
	 * the signals said: a lost SIGCHLD must not keep it alive. */
	int timeout = killed ? KILL_REPEAT_MS : G.retiring ? 1000 : -1;
	if (poll(pfd, 3 + nq, timeout) < 0 && errno != EINTR)
		return -1;
	if (killed)
		signal_leaders();
	if (serve_take_chld() || G.retiring)
		reap_leaders();
	if (pfd[2].revents)
		read_releases();
	check_queued(pfd + 3, at, nq);
	if (pfd[1].revents && G.chan >= 0)
		read_chan();
	return 0;
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
	for (size_t i = 0; i < SPARE_LEADERS; i++)
		G.spares[i] = NO_SPARE;
	if (serve_signals_init() != 0 || pipe2(G.release, O_CLOEXEC | O_NONBLOCK) != 0 ||
	    run_setup(why, sizeof why) != 0) {
		note(NOTE_FAILED, getpid(), 0, 0, 0, why);
		_exit(255);
	}
	note(NOTE_READY, getpid(), 0, 0, 0, NULL);
	memset(G.told_waits, 0xff, sizeof G.told_waits);
	while (!G.retiring || G.nleaders > 0 || G.nqueued > 0 || lent_spares() > 0) {
		if (G.retiring) {
			end_spares();
			report_waits();
		}
		else if (G.nleaders == 0)
			fill_spares();
		if (generation_step(killed) != 0)
			break;
		if (serve_terms() > 0 && !killed) {
			killed = 1;
			kill_batches();
		}
	}
	end_spares();
	if (G.hooks->teardown)
		G.hooks->teardown(G.hooks->ctx);
	_exit(0);
}
