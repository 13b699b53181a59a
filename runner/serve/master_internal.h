/*
 * master_internal.h - what the pieces of the master share: its state
 * (struct master, passed to every piece), a generation as the master sees
 * it, and each piece's functions.  The pieces call one way, top to bottom
 * (build-aux/include-graph --check holds them to it):
 *
 *   master.c           the loop: polls everything, timers, stopping, the
 *                      server's start and end (serve_main())
 *   master_requests.c  a connection's request: checked, answered or
 *                      forwarded to the current generation
 *   master_door.c      the listening socket: connections taken, refused
 *                      by uid (the log counts them), or expired
 *   master_gens.c      generations: set up, ready or failed, their notes,
 *                      the workers granted them, a lost one replaced,
 *                      reaped, retired ones past their bound
 *   master_peers.c     the peers' tables (generations, connections that
 *                      await their request), replies that reach a client,
 *                      the lent spares, what the master tells a generation
 *                      (its outbox: nothing dropped), retirement
 *
 * The master's replies (master_peers.c) are at the bottom: a generation
 * that fails answers its --reload client there, and a request forwarded
 * to a generation tells it there, with no circle between them.
 */
#ifndef COWRUN_MASTER_INTERNAL_H
#define COWRUN_MASTER_INTERNAL_H

#include "serve.h"
#include "serve_internal.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MAX_GENERATIONS 8
#define MAX_PENDING 64           /* connections whose request is awaited */
#define MAX_RUNNING 256          /* batches a generation reports running */
#define ACCEPT_BURST 64          /* connections taken per wake-up */
#define RETRIES 5                /* setups tried when no generation serves */
#define RETRY_FIRST_MS 200       /* the wait before the second; doubled */
#define REFUSAL_LOG_S 10         /* a line about refused peers at most this often */
#define ORPHAN_WAIT_MS 2000      /* for the generations' orphans, at the end */
#define OUTBOX_MAX 128           /* messages a generation has not taken yet */
#define OUTBOX_MSG_MAX 16        /* the largest of GRANT, TOOK, RETIRE */
/* A retired generation that says it waits for nothing, and that the
 * master knows runs nothing, ends within this; one that has not is named
 * in the log (then once a minute while it lives). */
#define RETIRE_BOUND_MS 5000
#define RETIRE_LOG_REPEAT_MS 60000
#define MS 1000000ull

#define logx serve_log

enum gen_state { GEN_FREE, GEN_LOADING, GEN_READY, GEN_RETIRING };

struct running {
	pid_t leader, client;
	int workers;
};

/* A spare leader a generation lent: its pid, and the master's end of its
 * pair (-1: none; given back at retire, it is still counted until its
 * generation says it is gone). */
struct lent_spare {
	pid_t pid;
	int chan;
};

/* What the master has to tell a generation that its channel could not
 * take at once (grants, TOOK, RETIRE: none may be lost; a lost GRANT left
 * a batch waiting for good), sent in order as the channel drains. */
struct outbox {
	unsigned char msg[OUTBOX_MAX][OUTBOX_MSG_MAX];
	unsigned char len[OUTBOX_MAX];
	size_t head, count;
};

_Static_assert(sizeof(struct gen_took) <= OUTBOX_MSG_MAX &&
	       sizeof(struct gen_grant) <= OUTBOX_MSG_MAX, "OUTBOX_MSG_MAX too small");

/* What a retiring generation says it still waits for (NOTE_WAITS). */
struct gen_waits {
	int told;                /* a NOTE_WAITS came */
	size_t leaders, queued, lent;
};

struct generation {
	enum gen_state state;
	unsigned id;
	pid_t pid;
	int chan;                /* -1 once closed */
	int reload_conn;         /* a --reload client waiting for this one */
	int failed;              /* its setup's failure was told */
	struct running run[MAX_RUNNING];
	size_t nrun;
	size_t ntasks;           /* its setup's task count, once ready */
	struct lent_spare spare[SPARE_LEADERS];
	struct outbox out;
	struct gen_waits waits;
	uint64_t retired_ns;     /* when it was told to retire; 0: not yet */
	uint64_t idle_ns;        /* since when it has had nothing to wait for */
	uint64_t logged_ns;      /* its last line for outliving the bound */
};

struct pending {
	int fd;                  /* -1: free */
	uint64_t deadline_ns;
};

/* Refused peers, counted between log lines. */
struct refusals {
	uint64_t window_end;     /* 0: the next one is logged in full */
	unsigned long long count;
	long last_uid;
};

/* The master's state: one, serve_main()'s, passed to every piece. */
struct master {
	const struct serve_config *cfg;
	const struct serve_hooks *hooks;
	int listen_fd;
	int created_socket;      /* 0: systemd's, never unlinked */
	struct generation gens[MAX_GENERATIONS];
	struct pending pending[MAX_PENDING];
	struct refusals refused;
	unsigned next_id;
	int stopping;            /* 1: draining, 2: killing */
	int ever_ready, retries, gave_up;
	uint64_t retry_at;       /* 0: none scheduled */
	int status;              /* the exit status */
	unsigned long long requests, batches;
};

/* ---- master_peers.c: the tables, replies, lent spares, the outbox ---- */

/* Reply (text NULL: none), then close so that the reply reaches the
 * peer: shut down, drain what it had sent (its descriptors closed). */
void peers_reply_and_close(int fd, unsigned type, int status, const char *text);
/* Pending connection i, if any, refused with `reply`; its slot freed. */
void peers_close_pending(struct master *m, size_t i, const char *reply);
/* In a new generation: none of the master's descriptors. */
void peers_close_all(struct master *m);

/* The generation that serves, the one setting up, a free slot (NULL: none). */
struct generation *peers_current(struct master *m);
struct generation *peers_loading(struct master *m);
struct generation *peers_free_slot(struct master *m);
/* g's slot, the ledger's name for it. */
int peers_index(const struct master *m, const struct generation *g);
/* Generations not free; those retiring. */
size_t peers_live(const struct master *m);
size_t peers_retiring(const struct master *m);
/* A generation in its slot, fresh: nothing open. */
void peers_clear(struct generation *g);

/* g's lent spare k given back: its pair closed (a spare still waiting
 * then ends quietly); all of them. */
void peers_drop_lent(struct generation *g, size_t k);
void peers_drop_all_lent(struct generation *g);
/* g's lent spares, given back or not, until g says they are gone. */
size_t peers_lent_count(const struct generation *g);

/* g's channel lost (why NULL: closed by a retired g as it ends, no line):
 * closed, its outbox dropped; a ready g retires. */
void peers_lose_channel(struct generation *g, const char *why);
/* Send what waits in g's outbox, in order, while the channel takes it. */
void peers_flush(struct generation *g);
/* A small message to g, after what waits before it (a full outbox loses
 * the channel). */
void peers_tell(struct generation *g, const void *msg, size_t len);
/* No new batch for g: its lent spares given back, then RETIRE told. */
void peers_retire(struct generation *g);

/* ---- master_gens.c: generations ---- */

/* Fork a generation; `reload_conn` (or -1) hears how it went.  Returns
 * 0, or -1 after a reply or a message. */
int gens_start(struct master *m, int reload_conn);
/* One note from g, or its channel closed.  Returns 1 if one was read, 0
 * if none waits. */
int gens_read_note(struct master *m, struct generation *g);
/* Send every grant the ledger can make now. */
void gens_grant_all(struct master *m);
/* When none serves or sets up: a new one, now or after a wait, or give up. */
void gens_after_loss(struct master *m);
/* Reap the generations that ended, then the above and the grants. */
void gens_reap(struct master *m);
/* A retiring g past its bound named in the log (and killed when stopping). */
void gens_check_retiring(struct master *m, struct generation *g, uint64_t now);

/* ---- master_door.c: the listening socket, refusals, late requests ---- */

/* The socket: systemd's, or one made here; everything else inherited is
 * closed first.  Returns 0 or -1 after a message. */
int door_open(struct master *m);
/* Close it (and unlink it if it was made here). */
void door_close(struct master *m);
/* Take the connections that wait, up to ACCEPT_BURST. */
void door_accept_all(struct master *m);
/* The line about refused peers, when its window is over. */
void door_flush_refusals(struct master *m, uint64_t now);
/* Connections whose request did not come in time, refused. */
void door_expire(struct master *m, uint64_t now);

/* ---- master_requests.c ---- */

/* The request on pending connection i.  The connection is closed or
 * handed on, except while nothing has arrived yet. */
void requests_handle(struct master *m, size_t i);

#endif
