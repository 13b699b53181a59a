/*
 * master_gens.c - the master's generations (master_internal.h): forked,
 * ready (the old one retires) or failed (its --reload client told), their
 * notes read, their batches' workers granted under the server-wide cap
 * (ledger.h), a lost one replaced (RETRIES setups at most), the ended ones
 * reaped, a retired one that outlives its bound named in the log.  What it
 * tells a generation and the replies go through master_peers.c, below.
 */
#define _GNU_SOURCE
#include "master_internal.h"
#include "ledger.h"
#include "os/util.h"
#include "os/process.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static void fork_failed(int reload_conn, const char *why)
{
	logx("cannot start a generation: %s", why);
	if (reload_conn >= 0)
		peers_reply_and_close(reload_conn, PROTO_ERROR, 255, why);
}

/* Fork a generation; `reload_conn` (or -1) hears how it went.  Returns
 * 0, or -1 after a reply or a message. */
int gens_start(struct master *m, int reload_conn)
{
	struct generation *g = peers_free_slot(m);
	int sv[2];

	if (peers_loading(m) || g == NULL) {
		fork_failed(reload_conn, peers_loading(m) ? "a reload is already under way"
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
	unsigned id = ++m->next_id;
	fflush(NULL);
	pid_t pid = fork();
	if (pid == 0) {
		close(sv[0]);
		if (reload_conn >= 0)
			close(reload_conn);
		peers_close_all(m);
		generation_main(sv[1], id, m->cfg, m->hooks);
	}
	close(sv[1]);
	if (pid < 0) {
		close(sv[0]);
		fork_failed(reload_conn, "cannot fork a generation");
		return -1;
	}
	peers_clear(g);
	g->state = GEN_LOADING;
	g->id = id;
	g->pid = pid;
	g->chan = sv[0];
	g->reload_conn = reload_conn;
	logx("generation %u (pid %ld): setup started", id, (long)pid);
	return 0;
}

static void answer_reload(struct generation *g, unsigned type, int status, const char *text)
{
	if (g->reload_conn < 0)
		return;
	peers_reply_and_close(g->reload_conn, type, status, text);
	g->reload_conn = -1;
}

/* A generation is ready: it takes the new requests, the old one retires. */
static void generation_ready(struct master *m, struct generation *g)
{
	struct generation *old = peers_current(m);
	char text[256];

	if (old)
		peers_retire(old);
	g->state = GEN_READY;
	m->ever_ready = 1;
	m->retries = 0;
	snprintf(text, sizeof text, "generation %u (pid %ld) is ready%s", g->id, (long)g->pid,
		 old ? "; the previous one finishes its batches and exits" : "");
	logx("%s", text);
	answer_reload(g, PROTO_TEXT, 0, text);
	if (m->stopping)
		peers_retire(g);
}

/* Said once per generation: the first account (its own note, with the
 * setup's messages, comes before its exit). */
static void generation_failed(struct master *m, struct generation *g, const char *why)
{
	struct generation *old = peers_current(m);
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

/* Send every grant the ledger can make now. */
void gens_grant_all(struct master *m)
{
	struct ledger_grant gr;

	while (ledger_next(&gr)) {
		struct generation *g = &m->gens[gr.gen];
		struct gen_grant msg = { GRANT_MAGIC, gr.ticket, (uint32_t)gr.workers };
		peers_tell(g, &msg, sizeof msg);
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
static void batch_note(struct master *m, struct generation *g, const struct gen_note *n)
{
	struct running *r = find_batch(g, n->pid);
	int gi = peers_index(m, g);

	switch (n->kind) {
	case NOTE_WANT:
		if (ledger_want(gi, n->ticket, (size_t)n->workers) != 0)
			logx("generation %u: too many batches waiting", g->id);
		break;
	case NOTE_WITHDRAW: ledger_withdraw(gi, n->ticket); break;
	case NOTE_WAITS:
		g->waits = (struct gen_waits){ 1, (size_t)n->workers, n->ticket, (size_t)n->client_pid };
		break;
	case NOTE_START:
		m->batches++;
		if (g->nrun < MAX_RUNNING)
			g->run[g->nrun++] = (struct running){ n->pid, n->client_pid, n->workers };
		break;
	case NOTE_SPARE_GONE:   /* not lent any more; its batch, if it had one, is over */
		for (size_t k = 0; k < SPARE_LEADERS; k++)
			if (g->spare[k].pid == n->pid)
				peers_drop_lent(g, k);
		/* fall through */
	case NOTE_FREE:   /* a batch's: what the master counts it holds */
	case NOTE_END:
		ledger_free(gi, r ? (size_t)r->workers : (size_t)n->workers);
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
int gens_read_note(struct master *m, struct generation *g)
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
		peers_lose_channel(g, n < 0 ? strerror(errno)
				   : g->state == GEN_READY ? "closed by the generation" : NULL);
		return 0;
	}
	if (n <= 0) {
		close(g->chan);
		g->chan = -1;
		generation_failed(m, g, "it exited");
		return 0;
	}
	if ((size_t)n <= offsetof(struct gen_note, text))
		return 1;
	note.text[n - offsetof(struct gen_note, text) - 1 < sizeof note.text
		  ? n - offsetof(struct gen_note, text) - 1 : sizeof note.text - 1] = '\0';
	if (note.kind == NOTE_READY && g->state == GEN_LOADING) {
		g->ntasks = (size_t)note.ntasks;
		generation_ready(m, g);
	}
	else if (note.kind == NOTE_FAILED && g->state == GEN_LOADING)
		generation_failed(m, g, note.text);
	else
		batch_note(m, g, &note);
	return 1;
}

/* ---- a lost generation ---- */

/* No generation could be set up again: stop, and say so to whoever
 * waits (the supervisor reads the exit status). */
static void give_up(struct master *m)
{
	char why[160];

	snprintf(why, sizeof why, "the server stopped: no generation could be set up in %d tries",
		 RETRIES);
	logx("%s", why);
	m->status = 254;
	m->gave_up = 1;
	for (size_t i = 0; i < MAX_PENDING; i++)
		peers_close_pending(m, i, why);
	for (int k = 0; m->listen_fd >= 0 && k < 4096; k++) {
		int fd = accept4(m->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			break;
		peers_reply_and_close(fd, PROTO_ERROR, 254, why);
	}
}

/* After a generation ended: when none serves or sets up, a new one, at
 * once the first time, then after a growing wait; RETRIES in all. */
void gens_after_loss(struct master *m)
{
	if (m->stopping || !m->ever_ready || peers_current(m) || peers_loading(m) || m->retry_at ||
	    m->gave_up)
		return;
	if (m->retries >= RETRIES) {
		give_up(m);
		return;
	}
	uint64_t wait_ms = m->retries ? (uint64_t)RETRY_FIRST_MS << (m->retries - 1) : 0;
	m->retries++;
	m->retry_at = now_ns() + wait_ms * MS + 1;
	logx("no generation serves: setting up a new one%s (try %d of %d)",
	     wait_ms ? " after a wait" : "", m->retries, RETRIES);
}

/* Reap every child that ended: generations.  Their last notes are read
 * first (a failed setup's messages). */
void gens_reap(struct master *m)
{
	int status;
	pid_t pid;
	char how[128];

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0 || (pid < 0 && errno == EINTR)) {
		for (size_t i = 0; pid > 0 && i < MAX_GENERATIONS; i++) {
			struct generation *g = &m->gens[i];
			if (g->state == GEN_FREE || g->pid != pid)
				continue;
			while (g->chan >= 0 && gens_read_note(m, g))
				;
			describe_wait_status(status, how, sizeof how);
			logx("generation %u (pid %ld) ended: %s", g->id, (long)pid, how);
			if (g->state == GEN_LOADING)
				generation_failed(m, g, how);
			if (g->chan >= 0)
				close(g->chan);
			answer_reload(g, PROTO_ERROR, 255, "the generation ended");
			ledger_forget((int)i);
			peers_drop_all_lent(g);
			peers_clear(g);
		}
	}
	gens_after_loss(m);
	gens_grant_all(m);
}

/* ---- retirement's bound ---- */

/* A retiring generation that the master knows runs no batch, and that
 * says (if it said) it has no request queued, should end at once: its
 * lent spares were given back and end by themselves.  Once it has been
 * so RETIRE_BOUND_MS, the log names it with what each side counts (then
 * once a minute); a server that is stopping also sends it SIGTERM, which
 * ends what it still waits for, since none of it is a client's batch. */
void gens_check_retiring(struct master *m, struct generation *g, uint64_t now)
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
	     g->waits.leaders, g->waits.queued, g->waits.lent, peers_lent_count(g),
	     m->stopping ? "; the server is stopping: SIGTERM sent to it" : "");
	if (m->stopping)
		kill(g->pid, SIGTERM);
}
