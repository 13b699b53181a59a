/*
 * fdpass.c - one message with descriptors over a Unix socket.  See
 * fdpass.h.
 */
#define _GNU_SOURCE
#include "fdpass.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

union fdpass_control {
	char buf[CMSG_SPACE(sizeof(int) * FDPASS_MAX)];
	struct cmsghdr align;
};

int fdpass_send(int sock, const void *buf, size_t len, const int *fds, size_t nfds)
{
	union fdpass_control control;
	struct iovec iov = { (void *)buf, len };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };

	if (nfds > FDPASS_MAX)
		return errno = EINVAL, -1;
	if (nfds > 0) {
		memset(&control, 0, sizeof control);
		msg.msg_control = control.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
	}
	ssize_t n;
	while ((n = sendmsg(sock, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return -1;
	return (size_t)n == len ? 0 : (errno = EMSGSIZE, -1);
}

/* Take the descriptors out of a received message's control data. */
static size_t take_fds(struct msghdr *msg, int *fds, size_t max, int *overflow)
{
	size_t got = 0;

	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int fd;
			memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
			if (got < max)
				fds[got++] = fd;
			else {
				close(fd);
				*overflow = 1;
			}
		}
	}
	return got;
}

long fdpass_recv(int sock, void *buf, size_t size, int *fds, size_t max, size_t *nfds)
{
	union fdpass_control control;
	struct iovec iov = { buf, size };
	struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1,
			      .msg_control = control.buf, .msg_controllen = sizeof control.buf };
	ssize_t n;
	int overflow = 0;

	*nfds = 0;
	while ((n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT)) < 0 && errno == EINTR)
		;
	if (n < 0)
		return -1;
	*nfds = take_fds(&msg, fds, max < FDPASS_MAX ? max : FDPASS_MAX, &overflow);
	if (overflow || (msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		for (size_t i = 0; i < *nfds; i++)
			close(fds[i]);
		*nfds = 0;
		return errno = EMSGSIZE, -1;
	}
	return (long)n;
}
