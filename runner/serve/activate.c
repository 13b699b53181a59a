/*
 * activate.c - what a server is handed when it starts: the socket systemd
 * may pass it (socket activation, read without libsystemd), and every
 * other inherited descriptor, which it closes.  See serve_internal.h.
 */
#define _GNU_SOURCE
#include "serve_internal.h"
#include "os/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define LISTEN_FDS_START 3

/* A number in an environment variable, or -1. */
static long env_number(const char *name)
{
	const char *s = getenv(name);
	long long v;

	return s && parse_ll(s, 0, INT_MAX, &v) == 0 ? (long)v : -1;
}

/* fd is a listening AF_UNIX SOCK_SEQPACKET socket bound to `path`.
 * Returns 0 or -1 after a message. */
static int check_passed(int fd, const char *path)
{
	int type = 0, domain = 0, listening = 0;
	socklen_t len = sizeof type;
	struct sockaddr_un addr;
	socklen_t alen = sizeof addr;

	memset(&addr, 0, sizeof addr);
	getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len);
	len = sizeof domain;
	getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len);
	len = sizeof listening;
	getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len);
	if (domain != AF_UNIX || type != SOCK_SEQPACKET || !listening) {
		warnx_("serve: the socket systemd passed (descriptor %d) is not a listening Unix "
		       "SOCK_SEQPACKET socket: the unit needs ListenSequentialPacket=%s", fd, path);
		return -1;
	}
	if (getsockname(fd, (struct sockaddr *)&addr, &alen) != 0 ||
	    strncmp(addr.sun_path, path, sizeof addr.sun_path) != 0) {
		warnx_("serve: the socket systemd passed is '%.*s', not --socket '%s'",
		       (int)sizeof addr.sun_path, addr.sun_path, path);
		return -1;
	}
	return 0;
}

int serve_take_activation(const struct serve_config *cfg, int *fd)
{
	long pid = env_number("LISTEN_PID"), nfds = env_number("LISTEN_FDS");

	*fd = -1;
	/* Not for any process of ours to see again. */
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_FDNAMES");
	if (pid != (long)getpid() || nfds <= 0)
		return 0;
	if (nfds != 1) {
		warnx_("serve: systemd passed %ld sockets; the unit should listen on one "
		       "(ListenSequentialPacket=%s)", nfds, cfg->socket_path);
		return -1;
	}
	if (check_passed(LISTEN_FDS_START, cfg->socket_path) != 0)
		return -1;
	int flags = fcntl(LISTEN_FDS_START, F_GETFL);
	if (flags < 0 || fcntl(LISTEN_FDS_START, F_SETFL, flags | O_NONBLOCK) != 0 ||
	    fcntl(LISTEN_FDS_START, F_SETFD, FD_CLOEXEC) != 0) {
		warnx_("serve: cannot use the socket systemd passed: %s", strerror(errno));
		return -1;
	}
	*fd = LISTEN_FDS_START;
	return 0;
}

void serve_close_inherited(int keep_below)
{
	if (close_range((unsigned)keep_below, ~0U, 0) == 0)
		return;
	long max = sysconf(_SC_OPEN_MAX);
	for (long fd = keep_below; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
		close((int)fd);
}
