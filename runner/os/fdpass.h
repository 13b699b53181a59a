/*
 * fdpass.h - one message with descriptors over a Unix socket (SCM_RIGHTS):
 * the serve/submit messages (serve/proto.c) and a standby worker's
 * handover (engine/standby.c) both go this way.
 */
#ifndef COWRUN_FDPASS_H
#define COWRUN_FDPASS_H

#include <stddef.h>

#define FDPASS_MAX 16   /* descriptors one message may carry */

/* Send len bytes and nfds (<= FDPASS_MAX) descriptors as one message
 * (MSG_NOSIGNAL, EINTR retried).  Returns 0, or -1 with errno (EMSGSIZE:
 * sent short). */
int fdpass_send(int sock, const void *buf, size_t len, const int *fds, size_t nfds);

/* Receive one message without waiting (MSG_DONTWAIT) into buf (size
 * bytes) and at most max (<= FDPASS_MAX) descriptors, close-on-exec.  A
 * message cut short or carrying more descriptors than max is refused:
 * its descriptors closed, -1 with EMSGSIZE.  Returns the bytes read (0:
 * the peer closed), or -1 with errno. */
long fdpass_recv(int sock, void *buf, size_t size, int *fds, size_t max, size_t *nfds);

#endif
