/*
 * master_peers.c - the master's peers, at the bottom of its pieces
 * (master_internal.h): its tables of generations and of connections that
 * await their request, the replies that reach a client, the spares a
 * generation lends, and what the master tells a generation: queued in its
 * outbox when the channel cannot take it at once, none dropped.
 *
 * A connection it closes after a reply is shut down and drained first
 * (peers_reply_and_close()): closing on an unread request would reset it,
 * and the client would lose the reply.
 */
#define _GNU_SOURCE
#include "master_internal.h"
#include "os/util.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* Reply, then close so that the reply reaches the peer: shut the
 * connection down (the peer can send no more), read what it had sent
 * (its descriptors closed), close. */
void peers_reply_and_close(int fd, unsigned type, int status, const char *text)
{
	unsigned char buf[PROTO_MSG_MAX];
	int fds[PROTO_FDS_MAX];
	size_t nfds;

	if (text)
		proto_reply(fd, type, status, text);
	shutdown(fd, SHUT_RDWR);
	for (;;) {
		long n = proto_recv(fd, buf, sizeof buf, fds, &nfds);
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		if (n == 0 || (n < 0 && errno != EMSGSIZE))
			break;
	}
	close(fd);
}

void peers_close_pending(struct master *m, size_t i, const char *reply)
{
	if (m->pending[i].fd >= 0)
		peers_reply_and_close(m->pending[i].fd, PROTO_ERROR, 255, reply);
	m->pending[i].fd = -1;
}

/* In a new generation: none of the master's descriptors. */
void peers_close_all(struct master *m)
{
	if (m->listen_fd >= 0)
		close(m->listen_fd);
	for (size_t i = 0; i < MAX_PENDING; i++)
		if (m->pending[i].fd >= 0)
			close(m->pending[i].fd);
	for (size_t i = 0; i < MAX_GENERATIONS; i++) {
		struct generation *g = &m->gens[i];
		if (g->chan >= 0)
			close(g->chan);
		if (g->reload_conn >= 0)
			close(g->reload_conn);
		for (size_t k = 0; k < SPARE_LEADERS; k++)
			if (g->spare[k].chan >= 0)
				close(g->spare[k].chan);
	}
	serve_signals_close();
}

/* ---- the table of generations ---- */

static struct generation *in_state(struct master *m, enum gen_state state)
{
	for (size_t i = 0; i < MAX_GENERATIONS; i++)
		if (m->gens[i].state == state)
			return &m->gens[i];
	return NULL;
}

struct generation *peers_current(struct master *m)
{
	return in_state(m, GEN_READY);
}

struct generation *peers_loading(struct master *m)
{
	return in_state(m, GEN_LOADING);
}

struct generation *peers_free_slot(struct master *m)
{
	return in_state(m, GEN_FREE);
}

int peers_index(const struct master *m, const struct generation *g)
{
	return (int)(g - m->gens);
}

size_t peers_live(const struct master *m)
{
	size_t n = 0;

	for (size_t i = 0; i < MAX_GENERATIONS; i++)
		n += m->gens[i].state != GEN_FREE;
	return n;
}

size_t peers_retiring(const struct master *m)
{
	size_t n = 0;

	for (size_t i = 0; i < MAX_GENERATIONS; i++)
		n += m->gens[i].state == GEN_RETIRING;
	return n;
}

/* A generation in its slot, fresh: nothing open. */
void peers_clear(struct generation *g)
{
	memset(g, 0, sizeof *g);
	g->chan = g->reload_conn = -1;
	for (size_t k = 0; k < SPARE_LEADERS; k++)
		g->spare[k] = (struct lent_spare){ 0, -1 };
}

/* ---- lent spares ---- */

/* g's lent spare k given back: its pair closed (a spare still waiting
 * then ends quietly). */
void peers_drop_lent(struct generation *g, size_t k)
{
	if (g->spare[k].chan >= 0)
		close(g->spare[k].chan);
	g->spare[k] = (struct lent_spare){ 0, -1 };
}

void peers_drop_all_lent(struct generation *g)
{
	for (size_t k = 0; k < SPARE_LEADERS; k++)
		peers_drop_lent(g, k);
}

/* g retires: its lent spares given back (their pairs closed: a spare
 * still waiting ends), each still counted until g says it is gone
 * (SPARE_GONE), as g itself waits for them. */
static void give_back_lent(struct generation *g)
{
	for (size_t k = 0; k < SPARE_LEADERS; k++)
		if (g->spare[k].chan >= 0) {
			close(g->spare[k].chan);
			g->spare[k].chan = -1;
		}
}

size_t peers_lent_count(const struct generation *g)
{
	size_t n = 0;

	for (size_t k = 0; k < SPARE_LEADERS; k++)
		n += g->spare[k].pid != 0;
	return n;
}

/* g takes no new batch: its lent spares are given back. */
static void mark_retiring(struct generation *g)
{
	g->state = GEN_RETIRING;
	g->retired_ns = now_ns();
	give_back_lent(g);
}

/* ---- messages to a generation: none dropped ---- */

/* The channel is lost: the generation sees it closed, refuses the
 * requests it queued and ends once its batches have. */
void peers_lose_channel(struct generation *g, const char *why)
{
	if (why)   /* NULL: a retired generation closed it, as it ends */
		logx("generation %u: lost its channel (%s)%s", g->id, why,
		     g->state == GEN_READY ? "; it retires, a new one is set up" : "");
	close(g->chan);
	g->chan = -1;
	g->out.count = 0;
	if (g->state == GEN_READY)   /* gens_after_loss() sets up the next */
		mark_retiring(g);
}

/* Send what waits in g's outbox, in order, while the channel takes it. */
void peers_flush(struct generation *g)
{
	struct outbox *o = &g->out;

	while (o->count > 0 && g->chan >= 0) {
		if (send(g->chan, o->msg[o->head], o->len[o->head], MSG_NOSIGNAL | MSG_DONTWAIT) !=
		    (ssize_t)o->len[o->head]) {
			if (errno != EAGAIN && errno != EINTR)
				peers_lose_channel(g, strerror(errno));
			return;
		}
		o->head = (o->head + 1) % OUTBOX_MAX;
		o->count--;
	}
}

/* A small message to g, after what waits before it: queued, then sent
 * as far as the channel takes (peers_flush()).  A full outbox (the
 * generation stopped reading) loses the channel. */
void peers_tell(struct generation *g, const void *msg, size_t len)
{
	struct outbox *o = &g->out;

	if (g->chan < 0)
		return;
	if (o->count == OUTBOX_MAX) {
		peers_lose_channel(g, "it has not read its last messages");
		return;
	}
	size_t at = (o->head + o->count++) % OUTBOX_MAX;
	memcpy(o->msg[at], msg, len);
	o->len[at] = (unsigned char)len;
	peers_flush(g);
}

/* No new batch for g: its lent spares given back first (a TOOK already
 * sent comes before the RETIRE), then it finishes its batches and exits. */
void peers_retire(struct generation *g)
{
	mark_retiring(g);
	peers_tell(g, RETIRE_MESSAGE, 4);
}
