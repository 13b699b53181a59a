/*
 * guard.h - a served batch's leader writes to its client's standard
 * output and error without ever blocking for good.  The descriptors are
 * the client's: their O_NONBLOCK flag is shared with the client's own
 * pipeline, so it is never set.  Instead stdout and stderr become streams
 * whose writes wait for room with poll(POLLOUT) beside the connection,
 * write at most PIPE_BUF at a time, and are cut short by a timer should
 * one block all the same (another writer took the room).  A write gives
 * up, and fails, once the client is gone (it cancels the batch) or the
 * batch is being killed (a second SIGTERM).
 *
 * While the summary waits for a client that does not read, and no
 * worker is left, the leader gives its workers back to the server's cap
 * (a client can stall only itself): it writes its pid to `release_fd`.
 */
#ifndef COWRUN_SERVE_GUARD_H
#define COWRUN_SERVE_GUARD_H

/* In the leader, after descriptors 1 and 2 are the client's: replace
 * stdout and stderr (the leader owns `conn` and `release_fd`; neither is
 * closed here).  In the processes it forks, the streams write plainly.
 * Returns 0 or -1 with errno. */
int guard_streams(int conn, int release_fd);

/* The batch is over and answered: give its workers back now (once no
 * worker is left), not when this leader's own exit is reaped. */
void guard_give_back(void);

#endif
