/*
 * master.c - the master of `cowrun serve`: owns the socket and the
 * generations, checks every connection and request, grants every batch
 * its workers under the server-wide cap (ledger.h), replaces a lost
 * generation, never runs a setup.  See serve.h.
 *
 * This is its loop and its life (start, timers, stopping, the end); the
 * pieces below it, one way down, are named in master_internal.h: the
 * requests (master_requests.c), the listening socket and its refusals
 * (master_door.c), the generations (master_gens.c), and at the bottom
 * their tables, the replies and what a generation is told
 * (master_peers.c).  The state is one struct master, passed to each.
 */
#define _GNU_SOURCE
#include "serve.h"
#include "master_internal.h"
#include "ledger.h"
#include "os/util.h"
#include "os/fileops.h"
#include "os/process.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- the loop ---- */

/* SIGTERM/SIGINT: stop accepting, let the batches finish; the second
 * one: have the generations kill them. */
static void stop(struct master *m, int terms)
{
	if (m->stopping == 0 && terms >= 1) {
		logx("stopping: no new requests; running batches finish");
		m->stopping = 1;
		m->retry_at = 0;
		door_close(m);
		for (size_t i = 0; i < MAX_PENDING; i++)
			peers_close_pending(m, i, "the server is stopping");
		for (size_t i = 0; i < MAX_GENERATIONS; i++) {
			struct generation *g = &m->gens[i];
			if (g->state == GEN_LOADING)
				kill(g->pid, SIGKILL);
			else if (g->state == GEN_READY)
				peers_retire(g);
		}
	}
	if (m->stopping == 1 && terms >= 2) {
		logx("second signal: killing the running batches");
		m->stopping = 2;
		for (size_t i = 0; i < MAX_GENERATIONS; i++)
			if (m->gens[i].state != GEN_FREE)
				kill(m->gens[i].pid, SIGTERM);
	}
}

/* When the loop must wake up at the latest (UINT64_MAX: never). */
static uint64_t next_deadline(const struct master *m)
{
	uint64_t next = m->retry_at ? m->retry_at : UINT64_MAX;

	if (m->refused.window_end && m->refused.window_end < next)
		next = m->refused.window_end;
	for (size_t i = 0; i < MAX_PENDING; i++)
		if (m->pending[i].fd >= 0 && m->pending[i].deadline_ns < next)
			next = m->pending[i].deadline_ns;
	if (peers_retiring(m) > 0 && now_ns() + 1000 * MS < next)   /* gens_check_retiring() */
		next = now_ns() + 1000 * MS;
	return next;
}

/* Timers: a new generation's turn, the refusals' line, late requests,
 * retired generations past their bound. */
static void on_time(struct master *m)
{
	uint64_t now = now_ns();

	for (size_t i = 0; i < MAX_GENERATIONS; i++)
		if (m->gens[i].state == GEN_RETIRING)
			gens_check_retiring(m, &m->gens[i], now);
	gens_after_loss(m);

	if (m->retry_at && now >= m->retry_at) {
		m->retry_at = 0;
		if (!m->stopping && gens_start(m, -1) != 0)
			gens_after_loss(m);
	}
	door_flush_refusals(m, now);
	door_expire(m, now);
}

/* Poll everything once and act on it. */
static void master_step(struct master *m)
{
	struct pollfd pfd[2 + MAX_GENERATIONS + MAX_PENDING];
	size_t gen_at[MAX_GENERATIONS], pend_at[MAX_PENDING], n = 0, ng = 0, np = 0;
	uint64_t now = now_ns(), next = next_deadline(m);

	pfd[n++] = (struct pollfd){ serve_wake_fd(), POLLIN, 0 };
	pfd[n++] = (struct pollfd){ peers_current(m) ? m->listen_fd : -1, POLLIN, 0 };
	for (size_t i = 0; i < MAX_GENERATIONS; i++)
		if (m->gens[i].state != GEN_FREE && m->gens[i].chan >= 0) {
			gen_at[ng++] = i;
			pfd[n++] = (struct pollfd){ m->gens[i].chan,
						    POLLIN | (m->gens[i].out.count ? POLLOUT : 0), 0 };
		}
	for (size_t i = 0; i < MAX_PENDING; i++)
		if (m->pending[i].fd >= 0) {
			pend_at[np++] = i;
			pfd[n++] = (struct pollfd){ m->pending[i].fd, POLLIN, 0 };
		}
	int timeout = next == UINT64_MAX ? -1 : next <= now ? 0 : (int)((next - now) / MS + 1);
	if (poll(pfd, n, timeout) < 0 && errno != EINTR)
		return;
	if (serve_take_chld() || peers_retiring(m) > 0)   /* a lost SIGCHLD too */
		gens_reap(m);
	stop(m, serve_terms());
	if (serve_take_hup() && !m->stopping) {
		logx("SIGHUP: reload");
		gens_start(m, -1);
	}
	for (size_t j = 0; j < ng; j++) {
		struct generation *g = &m->gens[gen_at[j]];
		if ((pfd[2 + j].revents & POLLOUT) && g->chan == pfd[2 + j].fd)
			peers_flush(g);
		if ((pfd[2 + j].revents & ~POLLOUT) && g->chan == pfd[2 + j].fd)
			while (g->chan >= 0 && gens_read_note(m, g))
				;
	}
	gens_grant_all(m);
	for (size_t j = 0; j < np; j++)
		if (pfd[2 + ng + j].revents && m->pending[pend_at[j]].fd == pfd[2 + ng + j].fd)
			requests_handle(m, pend_at[j]);
	if (pfd[1].revents && m->listen_fd >= 0)
		door_accept_all(m);
	on_time(m);
}

/* ---- the server's start and end ---- */

static void write_pidfile(const char *path)
{
	char text[32];
	int len = snprintf(text, sizeof text, "%ld\n", (long)getpid());

	/* A pid file is advice, not data: written new and renamed, no fsync. */
	if (commit_new_file_at(AT_FDCWD, path, text, (size_t)len, 0644, 0) != 0)
		logx("cannot write the pid file '%s': %s", path, strerror(errno));
}

static void init_master(struct master *m, const struct serve_config *cfg,
			const struct serve_hooks *hooks)
{
	memset(m, 0, sizeof *m);
	m->cfg = cfg;
	m->hooks = hooks;
	m->listen_fd = -1;
	for (size_t i = 0; i < MAX_PENDING; i++)
		m->pending[i].fd = -1;
	for (size_t i = 0; i < MAX_GENERATIONS; i++)
		peers_clear(&m->gens[i]);
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
	struct master master, *m = &master;   /* the only one, passed down (44 KB) */

	config = *cfg;
	if (config.max_workers == 0)
		config.max_workers = (size_t)cpu_count();
	init_master(m, &config, hooks);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	cfg = &config;
	if (door_open(m) != 0)
		return 255;
	if (serve_signals_init() != 0) {
		warnx_("serve: cannot install signal handlers: %s", strerror(errno));
		door_close(m);
		return 255;
	}
	if (cfg->pidfile)
		write_pidfile(cfg->pidfile);
	logx("listening on %s, max workers %zu", cfg->socket_path, cfg->max_workers);
	gens_start(m, -1);
	while (peers_live(m) > 0 || m->retry_at) {
		master_step(m);
		if (!m->ever_ready && !peers_loading(m) && peers_live(m) == 0)
			break;
	}
	if (!m->ever_ready && !m->stopping) {
		warnx_("serve: the first setup failed: not serving");
		m->status = 255;
	}
	door_close(m);
	reap_orphans();
	if (cfg->pidfile)
		unlink(cfg->pidfile);
	logx("stopped%s", m->status ? " (not serving)" : "");
	return m->status;
}
