/*
 * master_requests.c - a connection's request, as the master takes it
 * (master_internal.h): checked (a run request's descriptors too), then
 * answered here (--status), by a new generation (--reload,
 * master_gens.c), or forwarded to the current generation with the
 * workers its batch wants, granted at once when they are free, and handed
 * straight to a spare leader the generation lent where it can.  Replies
 * and what the generation is told go through master_peers.c.
 */
#define _GNU_SOURCE
#include "master_internal.h"
#include "ledger.h"
#include "os/util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

static size_t status_text(const struct master *m, char *buf, size_t size)
{
	size_t n = 0;

#define ADD(...) do { int w = snprintf(buf + n, size - n, __VA_ARGS__); \
		if (w > 0) n = n + (size_t)w < size ? n + (size_t)w : size - 1; } while (0)
	ADD("server pid %ld, socket %s, max workers %zu, requests %llu, batches started %llu, "
	    "workers in use %zu, batches waiting %zu%s\n", (long)getpid(), m->cfg->socket_path,
	    m->cfg->max_workers, m->requests, m->batches, ledger_in_use(), ledger_waiting(),
	    m->stopping ? ", stopping" : "");
	for (size_t i = 0; i < MAX_GENERATIONS; i++) {
		const struct generation *g = &m->gens[i];
		static const char *const states[] = { "free", "loading", "ready", "retiring" };
		if (g->state == GEN_FREE)
			continue;
		ADD("generation %u pid %ld %s, %zu batches running, %zu spare leaders lent", g->id,
		    (long)g->pid, states[g->state], g->nrun, peers_lent_count(g));
		if (g->state == GEN_RETIRING && g->waits.told)
			ADD("; retired %.1f s ago, waits for %zu leaders, %zu queued requests, "
			    "%zu lent spares", (double)(now_ns() - g->retired_ns) / 1e9,
			    g->waits.leaders, g->waits.queued, g->waits.lent);
		else if (g->state == GEN_RETIRING)
			ADD("; retired %.1f s ago, has not said what it waits for",
			    (double)(now_ns() - g->retired_ns) / 1e9);
		ADD("\n");
		for (size_t k = 0; k < g->nrun; k++)
			ADD("  batch leader pid %ld, client pid %ld, %d workers\n", (long)g->run[k].leader,
			    (long)g->run[k].client, g->run[k].workers);
	}
#undef ADD
	return n;
}

/* A run request's descriptors: standard output, standard error, the
 * output directory; the joblog and its journal if it names one; then the
 * temporary files of --save-results, --timeline and --stats, each a
 * regular file opened for writing.  Returns NULL or what is wrong. */
static const char *check_run_fds(const struct proto_request *rq, const int *fds, size_t nfds)
{
	size_t first = (rq->present & (1u << PF_JOBLOG)) ? 5 : 3;
	struct stat st;

	if (nfds != proto_run_fds(rq))
		return "a run request carries 3 descriptors (stdout, stderr, output directory), "
		       "2 more with a joblog (the joblog and its journal), 1 more for each of "
		       "--save-results, --timeline and --stats";
	if (fstat(fds[2], &st) != 0 || !S_ISDIR(st.st_mode))
		return "the output directory descriptor is not a directory";
	for (size_t i = first; i < nfds; i++) {
		int fl = fcntl(fds[i], F_GETFL);
		if (fl < 0 || (fl & O_ACCMODE) == O_RDONLY || fstat(fds[i], &st) != 0 ||
		    !S_ISREG(st.st_mode))
			return "a side file descriptor is not a regular file opened for writing";
	}
	return NULL;
}

/* Hand a run request whose workers were granted at once to one of g's
 * lent spares, and tell g (TOOK): the batch starts without a hop through
 * the generation.  `all`: the connection, then the client's descriptors.
 * Returns 0, or -1 if no spare took it (the caller passes it to g). */
static int hand_to_lent(struct master *m, struct generation *g, int conn,
			const unsigned char *req, size_t len, const int *all, size_t nall,
			uint32_t granted)
{
	struct ucred cred = { 0, 0, 0 };
	socklen_t clen = sizeof cred;

	if (g->nrun >= MAX_LEADERS)
		return -1;
	for (size_t k = 0; k < SPARE_LEADERS; k++) {
		struct lent_spare sp = g->spare[k];
		if (sp.pid == 0)
			continue;
		int rc = leader_spare_hand_encoded(sp.chan, req, len, granted, all, nall);
		peers_drop_lent(g, k);   /* it has its request, or it is gone */
		if (rc != 0)
			continue;
		getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &clen);
		struct gen_took took = { TOOK_MAGIC, sp.pid, cred.pid, granted };
		peers_tell(g, &took, sizeof took);   /* lost with the channel: its SPARE_GONE ends it */
		g->run[g->nrun++] = (struct running){ sp.pid, cred.pid, (int)granted };
		m->batches++;
		m->requests++;
		return 0;
	}
	return -1;
}

/* Forward a run request with its descriptors to the current generation,
 * with the workers its batch wants and, if they are free and no batch
 * waits before it, granted at once: the generation starts it without
 * asking (two messages fewer before a client's batch starts). */
static const char *forward(struct master *m, int conn, const struct proto_request *rq,
			   const unsigned char *buf, size_t len, const int *fds, size_t nfds)
{
	struct generation *g = peers_current(m);
	int all[PROTO_FDS_MAX] = { conn };
	unsigned char msg[sizeof(struct gen_passed) + PROTO_MSG_MAX];
	struct gen_passed head = { PASSED_MAGIC, 0, 0 };

	memcpy(all + 1, fds, nfds * sizeof *fds);
	if (g == NULL || g->chan < 0)
		return "no generation is ready (see the server's log)";
	head.want = m->hooks->want_workers(m->hooks->ctx, rq, g->ntasks);
	if (head.want > ledger_cap())
		head.want = ledger_cap();
	head.granted = (uint32_t)ledger_take_now(peers_index(m, g), (size_t)head.want);
	if ((head.granted > 0 || head.want == 0) &&
	    hand_to_lent(m, g, conn, buf, len, all, nfds + 1, head.granted) == 0)
		return NULL;
	memcpy(msg, &head, sizeof head);
	memcpy(msg + sizeof head, buf, len);
	if (proto_send(g->chan, msg, sizeof head + len, all, nfds + 1) != 0) {
		ledger_free(peers_index(m, g), head.granted);
		return errno == EAGAIN ? "server busy: the generation is not keeping up"
				       : "cannot pass the request to the generation";
	}
	m->requests++;
	return NULL;
}

/* What a well-formed request asks.  Returns the connection if still the
 * caller's to close, or -1. */
static int answer(struct master *m, int conn, const struct proto_request *rq,
		  const unsigned char *buf, size_t n, const int *fds, size_t nfds)
{
	const char *why;

	if (rq->type == PROTO_STATUS) {
		char text[PROTO_TEXT_MAX];
		status_text(m, text, sizeof text);
		peers_reply_and_close(conn, PROTO_TEXT, 0, text);
		return -1;
	}
	if (rq->type == PROTO_RELOAD) {
		logx("reload requested");
		gens_start(m, conn);
		return -1;
	}
	why = forward(m, conn, rq, buf, n, fds, nfds);
	if (why)
		peers_reply_and_close(conn, PROTO_ERROR, 255, why);
	return why ? -1 : conn;
}

/* The request on pending connection i.  The connection is closed or
 * handed on, except while nothing has arrived yet. */
void requests_handle(struct master *m, size_t i)
{
	unsigned char buf[PROTO_MSG_MAX];
	int fds[PROTO_FDS_MAX];
	size_t nfds = 0;
	int conn = m->pending[i].fd;
	long n = proto_recv(conn, buf, sizeof buf, fds, &nfds);
	struct proto_request rq;
	const char *why = NULL;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	m->pending[i].fd = -1;
	if (n < 0)
		why = "message too long or too many descriptors";
	else if (n > 0 && proto_decode_request(buf, (size_t)n, &rq, &why) == 0) {
		if (rq.type == PROTO_RUN)
			why = check_run_fds(&rq, fds, nfds);
		else if (nfds != 0)
			why = "descriptors with a request that takes none";
	}
	if (n == 0)
		peers_reply_and_close(conn, 0, 0, NULL);
	else if (why) {
		char text[256];
		snprintf(text, sizeof text, "bad request: %s", why);
		logx("%s", text);
		peers_reply_and_close(conn, PROTO_ERROR, 255, text);
	} else if ((conn = answer(m, conn, &rq, buf, (size_t)n, fds, nfds)) >= 0)
		close(conn);
	for (size_t k = 0; k < nfds; k++)
		close(fds[k]);
}
