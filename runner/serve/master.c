/*
 * master.c - the master of `cowrun serve`: owns the socket and the
 * generations, checks every connection and request, never runs a setup.
 * See serve.h.
 */
#define _GNU_SOURCE
#include "serve.h"
#include "serve_internal.h"
#include "os/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
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

enum gen_state { GEN_FREE, GEN_LOADING, GEN_READY, GEN_RETIRING };

struct running {
	pid_t leader, client;
	int workers;
};

struct generation {
	enum gen_state state;
	unsigned id;
	pid_t pid;
	int chan;                /* -1 once closed */
	int reload_conn;         /* a --reload client waiting for this one */
	struct running run[MAX_RUNNING];
	size_t nrun;
};

struct pending {
	int fd;                  /* -1: free */
	uint64_t deadline_ns;
	int refused;             /* its uid may not: read, answer, close */
};

static struct master {
	const struct serve_config *cfg;
	const struct serve_hooks *hooks;
	int listen_fd;
	struct generation gens[MAX_GENERATIONS];
	struct pending pending[MAX_PENDING];
	unsigned next_id;
	int stopping;            /* 1: draining, 2: killing */
	int status;              /* the exit status */
	unsigned long long requests;
} M;

static void logx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void logx(const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	fprintf(stderr, "cowrun serve[%ld]: %s\n", (long)getpid(), line);
}

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

static void close_pending(size_t i)
{
	if (M.pending[i].fd >= 0)
		close(M.pending[i].fd);
	M.pending[i].fd = -1;
}

/* In a new generation: none of the master's descriptors. */
static void close_master_fds(void)
{
	if (M.listen_fd >= 0)
		close(M.listen_fd);
	for (size_t i = 0; i < MAX_PENDING; i++)
		close_pending(i);
	for (size_t i = 0; i < MAX_GENERATIONS; i++) {
		if (M.gens[i].chan >= 0)
			close(M.gens[i].chan);
		if (M.gens[i].reload_conn >= 0)
			close(M.gens[i].reload_conn);
	}
	serve_signals_close();
}

/* Fork a generation; `reload_conn` (or -1) hears how it went.  Returns
 * 0, or -1 after a reply or a message. */
static int start_generation(int reload_conn)
{
	struct generation *g = NULL;
	int sv[2];

	for (size_t i = 0; i < MAX_GENERATIONS && g == NULL; i++)
		if (M.gens[i].state == GEN_FREE)
			g = &M.gens[i];
	const char *why = loading() ? "a reload is already under way"
			 : g == NULL ? "too many generations still finishing their batches" : NULL;
	if (why == NULL && socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		why = strerror(errno);
	if (why) {
		logx("cannot start a generation: %s", why);
		if (reload_conn >= 0) {
			proto_reply(reload_conn, PROTO_ERROR, 255, why);
			close(reload_conn);
		}
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
		logx("cannot fork a generation: %s", strerror(errno));
		if (reload_conn >= 0) {
			proto_reply(reload_conn, PROTO_ERROR, 255, "cannot fork a generation");
			close(reload_conn);
		}
		return -1;
	}
	*g = (struct generation){ GEN_LOADING, id, pid, sv[0], reload_conn, { { 0, 0, 0 } }, 0 };
	logx("generation %u (pid %ld): setup started", id, (long)pid);
	return 0;
}

static void retire(struct generation *g)
{
	g->state = GEN_RETIRING;
	if (g->chan >= 0 && send(g->chan, RETIRE_MESSAGE, 4, MSG_NOSIGNAL) != 4) {
		close(g->chan);
		g->chan = -1;
	}
}

static void answer_reload(struct generation *g, unsigned type, int status, const char *text)
{
	if (g->reload_conn < 0)
		return;
	proto_reply(g->reload_conn, type, status, text);
	close(g->reload_conn);
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
	snprintf(text, sizeof text, "generation %u (pid %ld) is ready%s", g->id, (long)g->pid,
		 old ? "; the previous one finishes its batches and exits" : "");
	logx("%s", text);
	answer_reload(g, PROTO_TEXT, 0, text);
	if (M.stopping)
		retire(g);
}

static void generation_failed(struct generation *g, const char *why)
{
	struct generation *old = current();
	char text[PROTO_TEXT_MAX - 256];

	snprintf(text, sizeof text, "reload failed: generation %u's setup failed%s%s; %s", g->id,
		 why[0] ? ": " : "", why, old ? "the previous generation still serves" :
		 "no generation serves");
	logx("%s", text);
	answer_reload(g, PROTO_ERROR, 255, text);
}

static void forget_batch(struct generation *g, pid_t leader)
{
	for (size_t i = 0; i < g->nrun; i++)
		if (g->run[i].leader == leader) {
			g->run[i] = g->run[--g->nrun];
			return;
		}
}

/* One note from a generation, or its channel closed. */
static void read_note(struct generation *g)
{
	struct gen_note note;
	ssize_t n = recv(g->chan, &note, sizeof note, MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		close(g->chan);
		g->chan = -1;
		if (g->state == GEN_LOADING)
			generation_failed(g, "it exited");
		return;
	}
	if ((size_t)n < offsetof(struct gen_note, text))
		return;
	note.text[sizeof note.text - 1] = '\0';
	if (n < (ssize_t)sizeof note)
		note.text[n > (ssize_t)offsetof(struct gen_note, text) ? n - offsetof(struct gen_note, text) : 0] = '\0';
	switch (note.kind) {
	case NOTE_READY: if (g->state == GEN_LOADING) generation_ready(g); break;
	case NOTE_FAILED: if (g->state == GEN_LOADING) generation_failed(g, note.text); break;
	case NOTE_START:
		if (g->nrun < MAX_RUNNING)
			g->run[g->nrun++] = (struct running){ note.pid, note.client_pid, note.workers };
		break;
	case NOTE_END: forget_batch(g, note.pid); break;
	}
}

/* Reap every child that ended: generations. */
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
			describe_wait_status(status, how, sizeof how);
			logx("generation %u (pid %ld) ended: %s", g->id, (long)pid, how);
			if (g->state == GEN_LOADING)
				generation_failed(g, how);
			int was_ready = g->state == GEN_READY;
			if (g->chan >= 0)
				close(g->chan);
			answer_reload(g, PROTO_ERROR, 255, "the generation ended");
			memset(g, 0, sizeof *g);
			g->chan = g->reload_conn = -1;
			if (was_ready && !M.stopping)
				start_generation(-1);
		}
	}
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

/* Accept what waits.  A peer whose uid is not allowed is answered once
 * its request is read (closing on an unread request would reset the
 * connection, and the peer would not hear why). */
static void accept_all(void)
{
	for (int k = 0; k < 32; k++) {
		int fd = accept4(M.listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			return;
		struct ucred cred;
		socklen_t len = sizeof cred;
		int refused = getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
			      !uid_allowed(cred.uid);
		if (refused)
			logx("refused a connection from uid %ld (pid %ld)", (long)cred.uid, (long)cred.pid);
		size_t i = 0;
		while (i < MAX_PENDING && M.pending[i].fd >= 0)
			i++;
		if (i == MAX_PENDING) {
			proto_reply(fd, PROTO_ERROR, 255, "server busy: too many connections waiting");
			close(fd);
			continue;
		}
		M.pending[i] = (struct pending){ fd, now_ns() + (uint64_t)M.cfg->read_timeout_ms * 1000000u,
						 refused };
	}
}

#define REFUSED_TEXT "permission denied: your uid may not use this server"

static size_t status_text(char *buf, size_t size)
{
	size_t n = 0;

#define ADD(...) do { int w = snprintf(buf + n, size - n, __VA_ARGS__); \
		if (w > 0) n = n + (size_t)w < size ? n + (size_t)w : size - 1; } while (0)
	ADD("server pid %ld, socket %s, max workers %zu, requests %llu%s\n", (long)getpid(),
	    M.cfg->socket_path, M.cfg->max_workers, M.requests, M.stopping ? ", stopping" : "");
	for (size_t i = 0; i < MAX_GENERATIONS; i++) {
		const struct generation *g = &M.gens[i];
		static const char *const states[] = { "free", "loading", "ready", "retiring" };
		if (g->state == GEN_FREE)
			continue;
		ADD("generation %u pid %ld %s, %zu batches running\n", g->id, (long)g->pid,
		    states[g->state], g->nrun);
		for (size_t k = 0; k < g->nrun; k++)
			ADD("  batch leader pid %ld, client pid %ld, %d workers\n", (long)g->run[k].leader,
			    (long)g->run[k].client, g->run[k].workers);
	}
#undef ADD
	return n;
}

/* A run request's descriptors: standard output, standard error, the
 * output directory; the joblog and its journal if it names one.  Returns
 * NULL or what is wrong. */
static const char *check_run_fds(const struct proto_request *rq, const int *fds, size_t nfds)
{
	struct stat st;

	if (nfds != ((rq->present & (1u << PF_JOBLOG)) ? 5u : 3u))
		return "a run request carries 3 descriptors (stdout, stderr, output directory), "
		       "5 with a joblog (the joblog and its journal)";
	if (fstat(fds[2], &st) != 0 || !S_ISDIR(st.st_mode))
		return "the output directory descriptor is not a directory";
	return NULL;
}

/* Forward a run request with its descriptors to the current generation. */
static const char *forward(int conn, const unsigned char *buf, size_t len, const int *fds,
			   size_t nfds)
{
	struct generation *g = current();
	int all[PROTO_FDS_MAX] = { conn };

	memcpy(all + 1, fds, nfds * sizeof *fds);
	if (g == NULL || g->chan < 0)
		return "no generation is ready (see the server's log)";
	if (proto_send(g->chan, buf, len, all, nfds + 1) != 0)
		return "cannot pass the request to the generation";
	M.requests++;
	return NULL;
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
	if (M.pending[i].refused) {
		for (size_t k = 0; k < nfds; k++)
			close(fds[k]);
		proto_reply(conn, PROTO_ERROR, 255, REFUSED_TEXT);
		close(conn);
		return;
	}
	if (n <= 0) {
		if (n < 0)
			proto_reply(conn, PROTO_ERROR, 255, "bad request: message too long or too many descriptors");
		close(conn);
		return;
	}
	if (proto_decode_request(buf, (size_t)n, &rq, &why) == 0) {
		if (rq.type == PROTO_RUN)
			why = check_run_fds(&rq, fds, nfds);
		else if (nfds != 0)
			why = "descriptors with a request that takes none";
	}
	if (why == NULL && rq.type == PROTO_STATUS) {
		char text[PROTO_TEXT_MAX];
		status_text(text, sizeof text);
		proto_reply(conn, PROTO_TEXT, 0, text);
	} else if (why == NULL && rq.type == PROTO_RELOAD) {
		logx("reload requested");
		start_generation(conn);
		conn = -1;
	} else if (why == NULL) {
		why = forward(conn, buf, (size_t)n, fds, nfds);
		if (why)
			proto_reply(conn, PROTO_ERROR, 255, why);
	} else {
		char text[256];
		snprintf(text, sizeof text, "bad request: %s", why);
		logx("%s", text);
		proto_reply(conn, PROTO_ERROR, 255, text);
	}
	for (size_t k = 0; k < nfds; k++)
		close(fds[k]);
	if (conn >= 0)
		close(conn);
}

/* Connections whose request did not come in time. */
static void expire_pending(uint64_t now)
{
	for (size_t i = 0; i < MAX_PENDING; i++)
		if (M.pending[i].fd >= 0 && now >= M.pending[i].deadline_ns) {
			proto_reply(M.pending[i].fd, PROTO_ERROR, 255,
				    M.pending[i].refused ? REFUSED_TEXT : "no request within the deadline");
			close_pending(i);
		}
}

/* ---- the loop ---- */

/* SIGTERM/SIGINT: stop accepting, let the batches finish; the second
 * one: have the generations kill them. */
static void stop(int terms)
{
	if (M.stopping == 0 && terms >= 1) {
		logx("stopping: no new requests; running batches finish");
		M.stopping = 1;
		close(M.listen_fd);
		M.listen_fd = -1;
		unlink(M.cfg->socket_path);
		for (size_t i = 0; i < MAX_PENDING; i++)
			if (M.pending[i].fd >= 0) {
				proto_reply(M.pending[i].fd, PROTO_ERROR, 255, "the server is stopping");
				close_pending(i);
			}
		for (size_t i = 0; i < MAX_GENERATIONS; i++) {
			struct generation *g = &M.gens[i];
			if (g->state == GEN_LOADING)
				kill(g->pid, SIGKILL);
			else if (g->state != GEN_FREE)
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

/* Poll everything once and act on it. */
static void master_step(void)
{
	struct pollfd pfd[2 + MAX_GENERATIONS + MAX_PENDING];
	size_t gen_at[MAX_GENERATIONS], pend_at[MAX_PENDING], n = 0, ng = 0, np = 0;
	uint64_t now = now_ns(), next = UINT64_MAX;

	pfd[n++] = (struct pollfd){ serve_wake_fd(), POLLIN, 0 };
	pfd[n++] = (struct pollfd){ current() ? M.listen_fd : -1, POLLIN, 0 };
	for (size_t i = 0; i < MAX_GENERATIONS; i++)
		if (M.gens[i].state != GEN_FREE && M.gens[i].chan >= 0) {
			gen_at[ng++] = i;
			pfd[n++] = (struct pollfd){ M.gens[i].chan, POLLIN, 0 };
		}
	for (size_t i = 0; i < MAX_PENDING; i++)
		if (M.pending[i].fd >= 0) {
			pend_at[np++] = i;
			pfd[n++] = (struct pollfd){ M.pending[i].fd, POLLIN, 0 };
			if (M.pending[i].deadline_ns < next)
				next = M.pending[i].deadline_ns;
		}
	int timeout = next == UINT64_MAX ? -1 : next <= now ? 0 : (int)((next - now) / 1000000 + 1);
	if (poll(pfd, n, timeout) < 0 && errno != EINTR)
		return;
	if (serve_take_chld())
		reap();
	stop(serve_terms());
	if (serve_take_hup() && !M.stopping) {
		logx("SIGHUP: reload");
		start_generation(-1);
	}
	for (size_t j = 0; j < ng; j++)
		if (pfd[2 + j].revents && M.gens[gen_at[j]].chan == pfd[2 + j].fd)
			read_note(&M.gens[gen_at[j]]);
	for (size_t j = 0; j < np; j++)
		if (pfd[2 + ng + j].revents && M.pending[pend_at[j]].fd == pfd[2 + ng + j].fd)
			handle_request(pend_at[j]);
	if (pfd[1].revents && M.listen_fd >= 0)
		accept_all();
	expire_pending(now_ns());
}

static void write_pidfile(const char *path)
{
	char temp[PATH_MAX], text[32];

	snprintf(temp, sizeof temp, "%s.%ld.tmp", path, (long)getpid());
	int fd = open(temp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int len = snprintf(text, sizeof text, "%ld\n", (long)getpid());
	if (fd < 0 || write_all(fd, text, (size_t)len) != 0 || close(fd) != 0 ||
	    rename(temp, path) != 0) {
		logx("cannot write the pid file '%s': %s", path, strerror(errno));
		unlink(temp);
	}
}

int serve_main(const struct serve_config *cfg, const struct serve_hooks *hooks)
{
	int ever_ready = 0;

	static struct serve_config config;

	memset(&M, 0, sizeof M);
	config = *cfg;
	if (config.max_workers == 0)
		config.max_workers = (size_t)cpu_count();
	M.cfg = cfg = &config;
	M.hooks = hooks;
	for (size_t i = 0; i < MAX_PENDING; i++)
		M.pending[i].fd = -1;
	for (size_t i = 0; i < MAX_GENERATIONS; i++)
		M.gens[i].chan = M.gens[i].reload_conn = -1;
	if ((M.listen_fd = serve_listen(cfg)) < 0)
		return 255;
	if (serve_signals_init() != 0) {
		warnx_("serve: cannot install signal handlers: %s", strerror(errno));
		close(M.listen_fd);
		unlink(cfg->socket_path);
		return 255;
	}
	if (cfg->pidfile)
		write_pidfile(cfg->pidfile);
	logx("listening on %s, max workers %zu", cfg->socket_path, cfg->max_workers);
	start_generation(-1);
	while (live_generations() > 0) {
		master_step();
		ever_ready |= current() != NULL;
		if (!ever_ready && !loading() && live_generations() == 0)
			break;
	}
	if (!ever_ready && !M.stopping) {
		warnx_("serve: the first setup failed: not serving");
		M.status = 255;
	}
	if (M.listen_fd >= 0) {
		close(M.listen_fd);
		unlink(cfg->socket_path);
	}
	if (cfg->pidfile)
		unlink(cfg->pidfile);
	logx("stopped");
	return M.status;
}
