/*
 * master.c - the master of `cowrun serve`: owns the socket and the
 * generations, checks every connection and request, grants every batch
 * its workers under the server-wide cap (ledger.h), replaces a lost
 * generation, never runs a setup.  See serve.h.
 *
 * A connection it closes after a reply is shut down and drained first
 * (reply_and_close()): closing on an unread request would reset it, and
 * the client would lose the reply.  A peer whose uid is refused costs a
 * reply and that close, as soon as its credentials are read; the log
 * counts such refusals, one line per REFUSAL_LOG_S at most.
 */
#define _GNU_SOURCE
#include "serve.h"
#include "serve_internal.h"
#include "ledger.h"
#include "os/util.h"
#include "os/fileops.h"
#include "os/process.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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

static struct master {
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
} M;

#define logx serve_log

static struct generation *current(void)
{
	for (size_t i = 0; i < MAX_GENERATIONS; i++)
		if (M.gens[i].state == GEN_READY)
			return &M.gens[i];
	return NULL;
}

static struct generation *loading(void)
{
	for (size_t i = 0; i < MAX_GENERATIONS; i++)
		if (M.gens[i].state == GEN_LOADING)
			return &M.gens[i];
	return NULL;
}

/* Reply, then close so that the reply reaches the peer: shut the
 * connection down (the peer can send no more), read what it had sent
 * (its descriptors closed), close. */
static void reply_and_close(int fd, unsigned type, int status, const char *text)
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

static void close_pending(size_t i, const char *reply)
{
	if (M.pending[i].fd >= 0)
		reply_and_close(M.pending[i].fd, PROTO_ERROR, 255, reply);
	M.pending[i].fd = -1;
}

/* In a new generation: none of the master's descriptors. */
static void close_master_fds(void)
{
	if (M.listen_fd >= 0)
		close(M.listen_fd);
	for (size_t i = 0; i < MAX_PENDING; i++)
		if (M.pending[i].fd >= 0)
			close(M.pending[i].fd);
	for (size_t i = 0; i < MAX_GENERATIONS; i++) {
		if (M.gens[i].chan >= 0)
			close(M.gens[i].chan);
		if (M.gens[i].reload_conn >= 0)
			close(M.gens[i].reload_conn);
		for (size_t k = 0; k < SPARE_LEADERS; k++)
			if (M.gens[i].spare[k].chan >= 0)
				close(M.gens[i].spare[k].chan);
	}
	serve_signals_close();
}

/* g's lent spare k given back: its pair closed (a spare still waiting
 * then ends quietly). */
static void drop_lent(struct generation *g, size_t k)
{
	if (g->spare[k].chan >= 0)
		close(g->spare[k].chan);
	g->spare[k] = (struct lent_spare){ 0, -1 };
}

static void drop_all_lent(struct generation *g)
{
	for (size_t k = 0; k < SPARE_LEADERS; k++)
		drop_lent(g, k);
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

static size_t lent_count(const struct generation *g)
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
static void lose_channel(struct generation *g, const char *why)
{
	if (why)   /* NULL: a retired generation closed it, as it ends */
		logx("generation %u: lost its channel (%s)%s", g->id, why,
		     g->state == GEN_READY ? "; it retires, a new one is set up" : "");
	close(g->chan);
	g->chan = -1;
	g->out.count = 0;
	if (g->state == GEN_READY)   /* after_loss() sets up the next */
		mark_retiring(g);
}

/* Send what waits in g's outbox, in order, while the channel takes it. */
static void flush_outbox(struct generation *g)
{
	struct outbox *o = &g->out;

	while (o->count > 0 && g->chan >= 0) {
		if (send(g->chan, o->msg[o->head], o->len[o->head], MSG_NOSIGNAL | MSG_DONTWAIT) !=
		    (ssize_t)o->len[o->head]) {
			if (errno != EAGAIN && errno != EINTR)
				lose_channel(g, strerror(errno));
			return;
		}
		o->head = (o->head + 1) % OUTBOX_MAX;
		o->count--;
	}
}

/* A small message to g, after what waits before it: queued, then sent
 * as far as the channel takes (flush_outbox()).  A full outbox (the
 * generation stopped reading) loses the channel. */
static void tell(struct generation *g, const void *msg, size_t len)
{
	struct outbox *o = &g->out;

	if (g->chan < 0)
		return;
	if (o->count == OUTBOX_MAX) {
		lose_channel(g, "it has not read its last messages");
		return;
	}
	size_t at = (o->head + o->count++) % OUTBOX_MAX;
	memcpy(o->msg[at], msg, len);
	o->len[at] = (unsigned char)len;
	flush_outbox(g);
}

/* A generation in its slot, fresh: nothing open. */
static void clear_generation(struct generation *g)
{
	memset(g, 0, sizeof *g);
	g->chan = g->reload_conn = -1;
	for (size_t k = 0; k < SPARE_LEADERS; k++)
		g->spare[k] = (struct lent_spare){ 0, -1 };
}

static struct generation *free_generation(void)
{
	for (size_t i = 0; i < MAX_GENERATIONS; i++)
		if (M.gens[i].state == GEN_FREE)
			return &M.gens[i];
	return NULL;
}

static void fork_failed(int reload_conn, const char *why)
{
	logx("cannot start a generation: %s", why);
	if (reload_conn >= 0)
		reply_and_close(reload_conn, PROTO_ERROR, 255, why);
}

/* Fork a generation; `reload_conn` (or -1) hears how it went.  Returns
 * 0, or -1 after a reply or a message. */
static int start_generation(int reload_conn)
{
	struct generation *g = free_generation();
	int sv[2];

	if (loading() || g == NULL) {
		fork_failed(reload_conn, loading() ? "a reload is already under way"
			    : "too many generations still finishing their batches");
		return -1;
	}
	/* The master's end never blocks; the generation's does (its notes
	 * are never dropped). */
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0 ||
	    fcntl(sv[0], F_SETFL, O_NONBLOCK) != 0) {
		fork_failed(reload_conn, strerror(errno));
		return -1;
	}
	unsigned id = ++M.next_id;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		if (reload_conn >= 0)
			close(reload_conn);
		close_master_fds();
		generation_main(sv[1], id, M.cfg, M.hooks);
	}
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		fork_failed(reload_conn, "cannot fork a generation");
		return -1;
	}
	clear_generation(g);
	g->state = GEN_LOADING;
	g->id = id;
	g->pid = pid;
	g->chan = sv[0];
	g->reload_conn = reload_conn;
	logx("generation %u (pid %ld): setup started", id, (long)pid);
	return 0;
}

/* No new batch for g: its lent spares given back first (a TOOK already
 * sent comes before the RETIRE), then it finishes its batches and exits. */
static void retire(struct generation *g)
{
	mark_retiring(g);
	tell(g, RETIRE_MESSAGE, 4);
}

static void answer_reload(struct generation *g, unsigned type, int status, const char *text)
{
	if (g->reload_conn < 0)
		return;
	reply_and_close(g->reload_conn, type, status, text);
	g->reload_conn = -1;
}

/* A generation is ready: it takes the new requests, the old one retires. */
static void generation_ready(struct generation *g)
{
	struct generation *old = current();
	char text[256];

	if (old)
		retire(old);
	g->state = GEN_READY;
	M.ever_ready = 1;
	M.retries = 0;
	snprintf(text, sizeof text, "generation %u (pid %ld) is ready%s", g->id, (long)g->pid,
		 old ? "; the previous one finishes its batches and exits" : "");
	logx("%s", text);
	answer_reload(g, PROTO_TEXT, 0, text);
	if (M.stopping)
		retire(g);
}

/* Said once per generation: the first account (its own note, with the
 * setup's messages, comes before its exit). */
static void generation_failed(struct generation *g, const char *why)
{
	struct generation *old = current();
	char text[PROTO_TEXT_MAX - 256];

	if (g->failed)
		return;
	g->failed = 1;
	snprintf(text, sizeof text, "%sgeneration %u's setup failed%s%s; %s",
		 g->reload_conn >= 0 ? "reload failed: " : "", g->id, why[0] ? ": " : "", why,
		 old ? "the previous generation still serves" : "no generation serves");
	logx("%s", text);
	answer_reload(g, PROTO_ERROR, 255, text);
}

/* ---- workers: the ledger's grants ---- */

static int gen_index(const struct generation *g)
{
	return (int)(g - M.gens);
}

/* Send every grant the ledger can make now. */
static void grant_all(void)
{
	struct ledger_grant gr;

	while (ledger_next(&gr)) {
		struct generation *g = &M.gens[gr.gen];
		struct gen_grant msg = { GRANT_MAGIC, gr.ticket, (uint32_t)gr.workers };
		tell(g, &msg, sizeof msg);
		if (g->chan < 0) {   /* it refuses what it queued: nobody takes these */
			logx("generation %u: cannot pass on a grant of %zu workers", g->id, gr.workers);
			ledger_free(gr.gen, gr.workers);
		}
	}
}

static struct running *find_batch(struct generation *g, pid_t leader)
{
	for (size_t i = 0; leader > 0 && i < g->nrun; i++)
		if (g->run[i].leader == leader)
			return &g->run[i];
	return NULL;
}

/* A note about a batch's workers. */
static void batch_note(struct generation *g, const struct gen_note *n)
{
	struct running *r = find_batch(g, n->pid);

	switch (n->kind) {
	case NOTE_WANT:
		if (ledger_want(gen_index(g), n->ticket, (size_t)n->workers) != 0)
			logx("generation %u: too many batches waiting", g->id);
		break;
	case NOTE_WITHDRAW: ledger_withdraw(gen_index(g), n->ticket); break;
	case NOTE_WAITS:
		g->waits = (struct gen_waits){ 1, (size_t)n->workers, n->ticket, (size_t)n->client_pid };
		break;
	case NOTE_START:
		M.batches++;
		if (g->nrun < MAX_RUNNING)
			g->run[g->nrun++] = (struct running){ n->pid, n->client_pid, n->workers };
		break;
	case NOTE_SPARE_GONE:   /* not lent any more; its batch, if it had one, is over */
		for (size_t k = 0; k < SPARE_LEADERS; k++)
			if (g->spare[k].pid == n->pid)
				drop_lent(g, k);
		/* fall through */
	case NOTE_FREE:   /* a batch's: what the master counts it holds */
	case NOTE_END:
		ledger_free(gen_index(g), r ? (size_t)r->workers : (size_t)n->workers);
		if (r && n->kind == NOTE_FREE)
			r->workers = 0;
		else if (r)
			*r = g->run[--g->nrun];
		break;
	}
}

/* A spare g lends (its end of the pair in fd): kept while g is the one
 * that serves and there is room, else given back (closed). */
static void take_lent(struct generation *g, pid_t pid, int fd)
{
	for (size_t k = 0; fd >= 0 && g->state == GEN_READY && pid > 0 && k < SPARE_LEADERS; k++)
		if (g->spare[k].pid == 0) {
			g->spare[k] = (struct lent_spare){ pid, fd };
			return;
		}
	if (fd >= 0)
		close(fd);
}

/* One note from a generation, or its channel closed.  Returns 1 if one
 * was read, 0 if none waits. */
static int read_note(struct generation *g)
{
	struct gen_note note = { 0 };
	int fds[PROTO_FDS_MAX];
	size_t nfds = 0;
	long n = proto_recv(g->chan, &note, sizeof note, fds, &nfds);

	if (n < 0 && errno == EMSGSIZE) {   /* a spare's end lost (out of descriptors) */
		logx("generation %u: a note came cut short; its spare is not lent", g->id);
		return 1;
	}
	for (size_t i = 1; i < nfds; i++)
		close(fds[i]);
	int fd = nfds > 0 ? fds[0] : -1;
	if (n > 0 && note.kind == NOTE_SPARE && (size_t)n > offsetof(struct gen_note, text)) {
		take_lent(g, note.pid, fd);
		return 1;
	}
	if (fd >= 0)
		close(fd);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0 && g->state != GEN_LOADING) {
		lose_channel(g, n < 0 ? strerror(errno)
				: g->state == GEN_READY ? "closed by the generation" : NULL);
		return 0;
	}
	if (n <= 0) {
		close(g->chan);
		g->chan = -1;
		generation_failed(g, "it exited");
		return 0;
	}
	if ((size_t)n <= offsetof(struct gen_note, text))
		return 1;
	note.text[n - offsetof(struct gen_note, text) - 1 < sizeof note.text
		  ? n - offsetof(struct gen_note, text) - 1 : sizeof note.text - 1] = '\0';
	if (note.kind == NOTE_READY && g->state == GEN_LOADING) {
		g->ntasks = (size_t)note.ntasks;
		generation_ready(g);
	}
	else if (note.kind == NOTE_FAILED && g->state == GEN_LOADING)
		generation_failed(g, note.text);
	else
		batch_note(g, &note);
	return 1;
}

/* ---- a lost generation ---- */

/* No generation could be set up again: stop, and say so to whoever
 * waits (the supervisor reads the exit status). */
static void give_up(void)
{
	char why[160];

	snprintf(why, sizeof why, "the server stopped: no generation could be set up in %d tries",
		 RETRIES);
	logx("%s", why);
	M.status = 254;
	M.gave_up = 1;
	for (size_t i = 0; i < MAX_PENDING; i++)
		close_pending(i, why);
	for (int k = 0; M.listen_fd >= 0 && k < 4096; k++) {
		int fd = accept4(M.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			break;
		reply_and_close(fd, PROTO_ERROR, 254, why);
	}
}

/* After a generation ended: when none serves or sets up, a new one, at
 * once the first time, then after a growing wait; RETRIES in all. */
static void after_loss(void)
{
	if (M.stopping || !M.ever_ready || current() || loading() || M.retry_at || M.gave_up)
		return;
	if (M.retries >= RETRIES) {
		give_up();
		return;
	}
	uint64_t wait_ms = M.retries ? (uint64_t)RETRY_FIRST_MS << (M.retries - 1) : 0;
	M.retries++;
	M.retry_at = now_ns() + wait_ms * MS + 1;
	logx("no generation serves: setting up a new one%s (try %d of %d)",
	     wait_ms ? " after a wait" : "", M.retries, RETRIES);
}

/* Reap every child that ended: generations.  Their last notes are read
 * first (a failed setup's messages). */
static void reap(void)
{
	int status;
	pid_t pid;
	char how[128];

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0 || (pid < 0 && errno == EINTR)) {
		for (size_t i = 0; pid > 0 && i < MAX_GENERATIONS; i++) {
			struct generation *g = &M.gens[i];
			if (g->state == GEN_FREE || g->pid != pid)
				continue;
			while (g->chan >= 0 && read_note(g))
				;
			describe_wait_status(status, how, sizeof how);
			logx("generation %u (pid %ld) ended: %s", g->id, (long)pid, how);
			if (g->state == GEN_LOADING)
				generation_failed(g, how);
			if (g->chan >= 0)
				close(g->chan);
			answer_reload(g, PROTO_ERROR, 255, "the generation ended");
			ledger_forget((int)i);
			drop_all_lent(g);
			clear_generation(g);
		}
	}
	after_loss();
	grant_all();
}

/* ---- connections and requests ---- */

static int uid_allowed(uid_t uid)
{
	if (uid == geteuid())
		return 1;
	for (size_t i = 0; i < M.cfg->nallow; i++)
		if (M.cfg->allow_uid[i] == uid)
			return 1;
	return 0;
}

/* The log's line about refused peers: the first in full, then a count
 * per REFUSAL_LOG_S while they go on (flush_refusals()). */
static void log_refusal(long uid, long pid)
{
	uint64_t now = now_ns();

	if (M.refused.window_end != 0 && now < M.refused.window_end) {
		M.refused.count++;
		M.refused.last_uid = uid;
		return;
	}
	logx("refused a connection from uid %ld (pid %ld); more are counted, a line per %d s",
	     uid, pid, REFUSAL_LOG_S);
	M.refused.window_end = now + REFUSAL_LOG_S * 1000 * MS;
}

static void flush_refusals(uint64_t now)
{
	if (M.refused.window_end == 0 || now < M.refused.window_end)
		return;
	if (M.refused.count == 0) {
		M.refused.window_end = 0;
		return;
	}
	logx("refused %llu more connections in the last %d s (the last from uid %ld)",
	     M.refused.count, REFUSAL_LOG_S, M.refused.last_uid);
	M.refused.count = 0;
	M.refused.window_end = now + REFUSAL_LOG_S * 1000 * MS;
}

#define REFUSED_TEXT "permission denied: your uid may not use this server"

/* A new connection: refused at once by its uid, or kept for its request. */
static void take_connection(int fd)
{
	struct ucred cred = { 0, (uid_t)-1, 0 };
	socklen_t len = sizeof cred;
	size_t i = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || !uid_allowed(cred.uid)) {
		log_refusal((long)cred.uid, (long)cred.pid);
		reply_and_close(fd, PROTO_ERROR, 255, REFUSED_TEXT);
		return;
	}
	while (i < MAX_PENDING && M.pending[i].fd >= 0)
		i++;
	if (i == MAX_PENDING) {
		reply_and_close(fd, PROTO_ERROR, 255, "server busy: too many connections waiting");
		return;
	}
	M.pending[i] = (struct pending){ fd, now_ns() + (uint64_t)M.cfg->read_timeout_ms * MS };
}

static void accept_all(void)
{
	for (int k = 0; k < ACCEPT_BURST && M.listen_fd >= 0; k++) {
		int fd = accept4(M.listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return;
		take_connection(fd);
	}
}

static size_t status_text(char *buf, size_t size)
{
	size_t n = 0;

#define ADD(...) do { int w = snprintf(buf + n, size - n, __VA_ARGS__); \
		if (w > 0) n = n + (size_t)w < size ? n + (size_t)w : size - 1; } while (0)
	ADD("server pid %ld, socket %s, max workers %zu, requests %llu, batches started %llu, "
	    "workers in use %zu, batches waiting %zu%s\n", (long)getpid(), M.cfg->socket_path,
	    M.cfg->max_workers, M.requests, M.batches, ledger_in_use(), ledger_waiting(),
	    M.stopping ? ", stopping" : "");
	for (size_t i = 0; i < MAX_GENERATIONS; i++) {
		const struct generation *g = &M.gens[i];
		static const char *const states[] = { "free", "loading", "ready", "retiring" };
		if (g->state == GEN_FREE)
			continue;
		ADD("generation %u pid %ld %s, %zu batches running, %zu spare leaders lent", g->id,
		    (long)g->pid, states[g->state], g->nrun, lent_count(g));
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
static int hand_to_lent(struct generation *g, int conn, const unsigned char *req, size_t len,
			const int *all, size_t nall, uint32_t granted)
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
		drop_lent(g, k);   /* it has its request, or it is gone */
		if (rc != 0)
			continue;
		getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &clen);
		struct gen_took took = { TOOK_MAGIC, sp.pid, cred.pid, granted };
		tell(g, &took, sizeof took);   /* lost with the channel: its SPARE_GONE ends it */
		g->run[g->nrun++] = (struct running){ sp.pid, cred.pid, (int)granted };
		M.batches++;
		M.requests++;
		return 0;
	}
	return -1;
}

/* Forward a run request with its descriptors to the current generation,
 * with the workers its batch wants and, if they are free and no batch
 * waits before it, granted at once: the generation starts it without
 * asking (two messages fewer before a client's batch starts). */
static const char *forward(int conn, const struct proto_request *rq, const unsigned char *buf,
			   size_t len, const int *fds, size_t nfds)
{
	struct generation *g = current();
	int all[PROTO_FDS_MAX] = { conn };
	unsigned char msg[sizeof(struct gen_passed) + PROTO_MSG_MAX];
	struct gen_passed head = { PASSED_MAGIC, 0, 0 };

	memcpy(all + 1, fds, nfds * sizeof *fds);
	if (g == NULL || g->chan < 0)
		return "no generation is ready (see the server's log)";
	head.want = M.hooks->want_workers(M.hooks->ctx, rq, g->ntasks);
	if (head.want > ledger_cap())
		head.want = ledger_cap();
	head.granted = (uint32_t)ledger_take_now(gen_index(g), (size_t)head.want);
	if ((head.granted > 0 || head.want == 0) && hand_to_lent(g, conn, buf, len, all, nfds + 1,
								  head.granted) == 0)
		return NULL;
	memcpy(msg, &head, sizeof head);
	memcpy(msg + sizeof head, buf, len);
	if (proto_send(g->chan, msg, sizeof head + len, all, nfds + 1) != 0) {
		ledger_free(gen_index(g), head.granted);
		return errno == EAGAIN ? "server busy: the generation is not keeping up"
				       : "cannot pass the request to the generation";
	}
	M.requests++;
	return NULL;
}

/* What a well-formed request asks.  Returns the connection if still the
 * caller's to close, or -1. */
static int answer(int conn, const struct proto_request *rq, const unsigned char *buf, size_t n,
		  const int *fds, size_t nfds)
{
	const char *why;

	if (rq->type == PROTO_STATUS) {
		char text[PROTO_TEXT_MAX];
		status_text(text, sizeof text);
		reply_and_close(conn, PROTO_TEXT, 0, text);
		return -1;
	}
	if (rq->type == PROTO_RELOAD) {
		logx("reload requested");
		start_generation(conn);
		return -1;
	}
	why = forward(conn, rq, buf, n, fds, nfds);
	if (why)
		reply_and_close(conn, PROTO_ERROR, 255, why);
	return why ? -1 : conn;
}

/* The request on pending connection i.  The connection is closed or
 * handed on, except while nothing has arrived yet. */
static void handle_request(size_t i)
{
	unsigned char buf[PROTO_MSG_MAX];
	int fds[PROTO_FDS_MAX];
	size_t nfds = 0;
	int conn = M.pending[i].fd;
	long n = proto_recv(conn, buf, sizeof buf, fds, &nfds);
	struct proto_request rq;
	const char *why = NULL;

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	M.pending[i].fd = -1;
	if (n < 0)
		why = "message too long or too many descriptors";
	else if (n > 0 && proto_decode_request(buf, (size_t)n, &rq, &why) == 0) {
		if (rq.type == PROTO_RUN)
			why = check_run_fds(&rq, fds, nfds);
		else if (nfds != 0)
			why = "descriptors with a request that takes none";
	}
	if (n == 0)
		reply_and_close(conn, 0, 0, NULL);
	else if (why) {
		char text[256];
		snprintf(text, sizeof text, "bad request: %s", why);
		logx("%s", text);
		reply_and_close(conn, PROTO_ERROR, 255, text);
	} else if ((conn = answer(conn, &rq, buf, (size_t)n, fds, nfds)) >= 0)
		close(conn);
	for (size_t k = 0; k < nfds; k++)
		close(fds[k]);
}

/* Connections whose request did not come in time. */
static void expire_pending(uint64_t now)
{
	for (size_t i = 0; i < MAX_PENDING; i++)
		if (M.pending[i].fd >= 0 && now >= M.pending[i].deadline_ns)
			close_pending(i, "no request within the deadline");
}

/* ---- the loop ---- */

static void stop_listening(void)
{
	if (M.listen_fd < 0)
		return;
	close(M.listen_fd);
	M.listen_fd = -1;
	if (M.created_socket)
		unlink(M.cfg->socket_path);
}

/* SIGTERM/SIGINT: stop accepting, let the batches finish; the second
 * one: have the generations kill them. */
static void stop(int terms)
{
	if (M.stopping == 0 && terms >= 1) {
		logx("stopping: no new requests; running batches finish");
		M.stopping = 1;
		M.retry_at = 0;
		stop_listening();
		for (size_t i = 0; i < MAX_PENDING; i++)
			close_pending(i, "the server is stopping");
		for (size_t i = 0; i < MAX_GENERATIONS; i++) {
			struct generation *g = &M.gens[i];
			if (g->state == GEN_LOADING)
				kill(g->pid, SIGKILL);
			else if (g->state == GEN_READY)
				retire(g);
		}
	}
	if (M.stopping == 1 && terms >= 2) {
		logx("second signal: killing the running batches");
		M.stopping = 2;
		for (size_t i = 0; i < MAX_GENERATIONS; i++)
			if (M.gens[i].state != GEN_FREE)
				kill(M.gens[i].pid, SIGTERM);
	}
}

static size_t live_generations(void)
{
	size_t n = 0;

	for (size_t i = 0; i < MAX_GENERATIONS; i++)
		n += M.gens[i].state != GEN_FREE;
	return n;
}

static size_t retiring_generations(void)
{
	size_t n = 0;

	for (size_t i = 0; i < MAX_GENERATIONS; i++)
		n += M.gens[i].state == GEN_RETIRING;
	return n;
}

/* When the loop must wake up at the latest (UINT64_MAX: never). */
static uint64_t next_deadline(void)
{
	uint64_t next = M.retry_at ? M.retry_at : UINT64_MAX;

	if (M.refused.window_end && M.refused.window_end < next)
		next = M.refused.window_end;
	for (size_t i = 0; i < MAX_PENDING; i++)
		if (M.pending[i].fd >= 0 && M.pending[i].deadline_ns < next)
			next = M.pending[i].deadline_ns;
	if (retiring_generations() > 0 && now_ns() + 1000 * MS < next)   /* check_retiring() */
		next = now_ns() + 1000 * MS;
	return next;
}

/* A retiring generation that the master knows runs no batch, and that
 * says (if it said) it has no request queued, should end at once: its
 * lent spares were given back and end by themselves.  Once it has been
 * so RETIRE_BOUND_MS, the log names it with what each side counts (then
 * once a minute); a server that is stopping also sends it SIGTERM, which
 * ends what it still waits for, since none of it is a client's batch. */
static void check_retiring(struct generation *g, uint64_t now)
{
	int idle = g->nrun == 0 && (!g->waits.told || g->waits.queued == 0);

	if (!idle) {
		g->idle_ns = 0;
		return;
	}
	if (g->idle_ns == 0)
		g->idle_ns = now;
	if (now - g->idle_ns < RETIRE_BOUND_MS * MS ||
	    (g->logged_ns && now - g->logged_ns < RETIRE_LOG_REPEAT_MS * MS))
		return;
	g->logged_ns = now;
	logx("generation %u (pid %ld) retired %.1f s ago has not ended, past its bound of %d s: "
	     "it %s %zu leaders, %zu queued requests, %zu lent spares; the master counts no batch "
	     "running and %zu lent spares given back%s", g->id, (long)g->pid,
	     (double)(now - g->retired_ns) / 1e9, RETIRE_BOUND_MS / 1000,
	     g->waits.told ? "last said it waits for" : "has not said what it waits for:",
	     g->waits.leaders, g->waits.queued, g->waits.lent, lent_count(g),
	     M.stopping ? "; the server is stopping: SIGTERM sent to it" : "");
	if (M.stopping)
		kill(g->pid, SIGTERM);
}

/* Timers: a new generation's turn, the refusals' line, late requests,
 * retired generations past their bound. */
static void on_time(void)
{
	uint64_t now = now_ns();

	for (size_t i = 0; i < MAX_GENERATIONS; i++)
		if (M.gens[i].state == GEN_RETIRING)
			check_retiring(&M.gens[i], now);
	after_loss();

	if (M.retry_at && now >= M.retry_at) {
		M.retry_at = 0;
		if (!M.stopping && start_generation(-1) != 0)
			after_loss();
	}
	flush_refusals(now);
	expire_pending(now);
}

/* Poll everything once and act on it. */
static void master_step(void)
{
	struct pollfd pfd[2 + MAX_GENERATIONS + MAX_PENDING];
	size_t gen_at[MAX_GENERATIONS], pend_at[MAX_PENDING], n = 0, ng = 0, np = 0;
	uint64_t now = now_ns(), next = next_deadline();

	pfd[n++] = (struct pollfd){ serve_wake_fd(), POLLIN, 0 };
	pfd[n++] = (struct pollfd){ current() ? M.listen_fd : -1, POLLIN, 0 };
	for (size_t i = 0; i < MAX_GENERATIONS; i++)
		if (M.gens[i].state != GEN_FREE && M.gens[i].chan >= 0) {
			gen_at[ng++] = i;
			pfd[n++] = (struct pollfd){ M.gens[i].chan,
						    POLLIN | (M.gens[i].out.count ? POLLOUT : 0), 0 };
		}
	for (size_t i = 0; i < MAX_PENDING; i++)
		if (M.pending[i].fd >= 0) {
			pend_at[np++] = i;
			pfd[n++] = (struct pollfd){ M.pending[i].fd, POLLIN, 0 };
		}
	int timeout = next == UINT64_MAX ? -1 : next <= now ? 0 : (int)((next - now) / MS + 1);
	if (poll(pfd, n, timeout) < 0 && errno != EINTR)
		return;
	if (serve_take_chld() || retiring_generations() > 0)   /* a lost SIGCHLD too */
		reap();
	stop(serve_terms());
	if (serve_take_hup() && !M.stopping) {
		logx("SIGHUP: reload");
		start_generation(-1);
	}
	for (size_t j = 0; j < ng; j++) {
		struct generation *g = &M.gens[gen_at[j]];
		if ((pfd[2 + j].revents & POLLOUT) && g->chan == pfd[2 + j].fd)
			flush_outbox(g);
		if ((pfd[2 + j].revents & ~POLLOUT) && g->chan == pfd[2 + j].fd)
			while (g->chan >= 0 && read_note(g))
				;
	}
	grant_all();
	for (size_t j = 0; j < np; j++)
		if (pfd[2 + ng + j].revents && M.pending[pend_at[j]].fd == pfd[2 + ng + j].fd)
			handle_request(pend_at[j]);
	if (pfd[1].revents && M.listen_fd >= 0)
		accept_all();
	on_time();
}

static void write_pidfile(const char *path)
{
	char temp[PATH_MAX], text[32];
	int fd = temp_name_beside(temp, sizeof temp, path) == 0
		? create_new_at(AT_FDCWD, temp, O_WRONLY, 0644) : -1;
	int len = snprintf(text, sizeof text, "%ld\n", (long)getpid());

	if (fd < 0) {
		logx("cannot write the pid file '%s': %s", path, strerror(errno));
		return;   /* nothing of ours to remove: what is there is not */
	}
	if (write_all(fd, text, (size_t)len) != 0 || close(fd) != 0 || rename(temp, path) != 0) {
		logx("cannot write the pid file '%s': %s", path, strerror(errno));
		unlink(temp);
	}
}

/* The socket: systemd's, or one made here; everything else inherited is
 * closed first.  Returns 0 or -1 after a message. */
static int open_socket(const struct serve_config *cfg)
{
	int passed;

	if (serve_take_activation(cfg, &passed) != 0)
		return -1;
	serve_close_inherited(passed >= 0 ? passed + 1 : 3);
	if (passed >= 0) {
		M.listen_fd = passed;
		logx("serving the socket systemd passed (%s)", cfg->socket_path);
		return 0;
	}
	if ((M.listen_fd = serve_listen(cfg)) < 0)
		return -1;
	M.created_socket = 1;
	return 0;
}

static void init_master(const struct serve_config *cfg, const struct serve_hooks *hooks)
{
	memset(&M, 0, sizeof M);
	M.cfg = cfg;
	M.hooks = hooks;
	M.listen_fd = -1;
	for (size_t i = 0; i < MAX_PENDING; i++)
		M.pending[i].fd = -1;
	for (size_t i = 0; i < MAX_GENERATIONS; i++)
		clear_generation(&M.gens[i]);
	ledger_init(cfg->max_workers);
}

/* The generations' orphans (the spare leaders of one that was killed,
 * ended by their parent-death signal) are the master's to reap: it is
 * its subreaper, and before it returns waits up to ORPHAN_WAIT_MS for
 * the last of them. */
static void reap_orphans(void)
{
	pid_t pid;

	for (int waited = 0; waited < ORPHAN_WAIT_MS;) {
		pid = waitpid(-1, NULL, WNOHANG);
		if (pid < 0 && errno != EINTR)
			return;   /* none left */
		if (pid == 0) {
			usleep(10 * 1000);
			waited += 10;
		}
	}
}

int serve_main(const struct serve_config *cfg, const struct serve_hooks *hooks)
{
	static struct serve_config config;

	config = *cfg;
	if (config.max_workers == 0)
		config.max_workers = (size_t)cpu_count();
	init_master(&config, hooks);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	cfg = &config;
	if (open_socket(cfg) != 0)
		return 255;
	if (serve_signals_init() != 0) {
		warnx_("serve: cannot install signal handlers: %s", strerror(errno));
		stop_listening();
		return 255;
	}
	if (cfg->pidfile)
		write_pidfile(cfg->pidfile);
	logx("listening on %s, max workers %zu", cfg->socket_path, cfg->max_workers);
	start_generation(-1);
	while (live_generations() > 0 || M.retry_at) {
		master_step();
		if (!M.ever_ready && !loading() && live_generations() == 0)
			break;
	}
	if (!M.ever_ready && !M.stopping) {
		warnx_("serve: the first setup failed: not serving");
		M.status = 255;
	}
	stop_listening();
	reap_orphans();
	if (cfg->pidfile)
		unlink(cfg->pidfile);
	logx("stopped%s", M.status ? " (not serving)" : "");
	return M.status;
}
