/*
 * master_door.c - the master's listening socket (master_internal.h):
 * opened (systemd's, or made here) and closed, its connections taken.  A
 * peer whose uid is refused costs a reply and a close that lets the reply
 * reach it (master_peers.c), as soon as its credentials are read; the log
 * counts such refusals, one line per REFUSAL_LOG_S at most.  A connection
 * kept waits for its request until the read timeout.
 */
#define _GNU_SOURCE
#include "master_internal.h"
#include "os/util.h"

#include <sys/socket.h>
#include <unistd.h>

/* The socket: systemd's, or one made here; everything else inherited is
 * closed first.  Returns 0 or -1 after a message. */
int door_open(struct master *m)
{
	int passed;

	if (serve_take_activation(m->cfg, &passed) != 0)
		return -1;
	serve_close_inherited(passed >= 0 ? passed + 1 : 3);
	if (passed >= 0) {
		m->listen_fd = passed;
		logx("serving the socket systemd passed (%s)", m->cfg->socket_path);
		return 0;
	}
	if ((m->listen_fd = serve_listen(m->cfg)) < 0)
		return -1;
	m->created_socket = 1;
	return 0;
}

void door_close(struct master *m)
{
	if (m->listen_fd < 0)
		return;
	close(m->listen_fd);
	m->listen_fd = -1;
	if (m->created_socket)
		unlink(m->cfg->socket_path);
}

/* ---- refusals ---- */

static int uid_allowed(const struct master *m, uid_t uid)
{
	if (uid == geteuid())
		return 1;
	for (size_t i = 0; i < m->cfg->nallow; i++)
		if (m->cfg->allow_uid[i] == uid)
			return 1;
	return 0;
}

/* The log's line about refused peers: the first in full, then a count
 * per REFUSAL_LOG_S while they go on (door_flush_refusals()). */
static void log_refusal(struct master *m, long uid, long pid)
{
	uint64_t now = now_ns();

	if (m->refused.window_end != 0 && now < m->refused.window_end) {
		m->refused.count++;
		m->refused.last_uid = uid;
		return;
	}
	logx("refused a connection from uid %ld (pid %ld); more are counted, a line per %d s",
	     uid, pid, REFUSAL_LOG_S);
	m->refused.window_end = now + REFUSAL_LOG_S * 1000 * MS;
}

void door_flush_refusals(struct master *m, uint64_t now)
{
	if (m->refused.window_end == 0 || now < m->refused.window_end)
		return;
	if (m->refused.count == 0) {
		m->refused.window_end = 0;
		return;
	}
	logx("refused %llu more connections in the last %d s (the last from uid %ld)",
	     m->refused.count, REFUSAL_LOG_S, m->refused.last_uid);
	m->refused.count = 0;
	m->refused.window_end = now + REFUSAL_LOG_S * 1000 * MS;
}

/* ---- connections ---- */

#define REFUSED_TEXT "permission denied: your uid may not use this server"

/* A new connection: refused at once by its uid, or kept for its request. */
static void take_connection(struct master *m, int fd)
{
	struct ucred cred = { 0, (uid_t)-1, 0 };
	socklen_t len = sizeof cred;
	size_t i = 0;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
	    !uid_allowed(m, cred.uid)) {
		log_refusal(m, (long)cred.uid, (long)cred.pid);
		peers_reply_and_close(fd, PROTO_ERROR, 255, REFUSED_TEXT);
		return;
	}
	while (i < MAX_PENDING && m->pending[i].fd >= 0)
		i++;
	if (i == MAX_PENDING) {
		peers_reply_and_close(fd, PROTO_ERROR, 255,
				      "server busy: too many connections waiting");
		return;
	}
	m->pending[i] = (struct pending){ fd, now_ns() + (uint64_t)m->cfg->read_timeout_ms * MS };
}

void door_accept_all(struct master *m)
{
	for (int k = 0; k < ACCEPT_BURST && m->listen_fd >= 0; k++) {
		int fd = accept4(m->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0)
			return;
		take_connection(m, fd);
	}
}

/* Connections whose request did not come in time. */
void door_expire(struct master *m, uint64_t now)
{
	for (size_t i = 0; i < MAX_PENDING; i++)
		if (m->pending[i].fd >= 0 && now >= m->pending[i].deadline_ns)
			peers_close_pending(m, i, "no request within the deadline");
}
