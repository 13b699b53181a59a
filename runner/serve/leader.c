/*
 * leader.c - one served batch: the leader a generation forks per request.
 * It takes the client's standard output and error and its output
 * directory (descriptors passed with the request), its own signal state
 * (a fresh self-pipe, SIGCHLD back to default: the pool reaps its workers
 * by pid; SIGPIPE ignored), writes to the client only through guarded
 * streams (guard.h: a client that does not read stalls only itself), and
 * watches the connection: a client that goes away cancels the batch (its
 * workers killed, no report under a final name).  Then today's fork-mode
 * batch, and its exit status to the client.  See serve.h.
 */
#define _GNU_SOURCE
#include "serve_internal.h"
#include "guard.h"
#include "os/signals.h"

#include <signal.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>

static void __attribute__((noreturn))
leader_main(const struct serve_hooks *hooks, const struct proto_request *rq, size_t workers,
	    const int fds[LEADER_FDS], int release_fd)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	signal(SIGCHLD, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	signal(SIGPIPE, SIG_IGN);
	if (signals_restart() != 0 || dup2(fds[1], STDOUT_FILENO) < 0 ||
	    dup2(fds[2], STDERR_FILENO) < 0 || guard_streams(fds[0], release_fd) != 0) {
		proto_reply(fds[0], PROTO_ERROR, 254, "the batch's leader could not start");
		_exit(254);
	}
	close(fds[1]);
	close(fds[2]);
	char why[256];
	if (leader_take_client(fds[0], fds + 3, why, sizeof why) != 0) {
		proto_reply(fds[0], PROTO_ERROR, 255, why);
		_exit(255);
	}
	signals_watch(fds[0]);
	int rc = hooks->run(hooks->ctx, rq, workers, fds + 3);
	fflush(NULL);
	proto_reply(fds[0], PROTO_EXIT, rc, "");
	_exit(rc & 0xff);
}

pid_t leader_start(const struct serve_hooks *hooks, const struct proto_request *rq,
		   size_t workers, const int fds[LEADER_FDS], int release_fd,
		   void (*close_in_child)(const void *), const void *ctx)
{
	fflush(NULL);
	pid_t pid = fork();

	if (pid != 0)
		return pid;
	close_in_child(ctx);
	leader_main(hooks, rq, workers, fds, release_fd);
}
