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
 * While standard output waits for a client that does not read, the
 * guard says so (`stalled`), and the leader gives its workers back to the
 * server's cap once none is left (a client can stall only itself).
 */
#ifndef COWRUN_SERVE_GUARD_H
#define COWRUN_SERVE_GUARD_H

/* In the leader, after descriptors 1 and 2 are the client's: replace
 * stdout and stderr (the leader owns `conn`; it is not closed here).
 * stalled, unless NULL, is called each time a write to standard output
 * has waited WAIT_MS for room.  In the processes the leader forks, the
 * streams write plainly.  Returns 0 or -1 with errno. */
int guard_streams(int conn, void (*stalled)(void));

#endif
