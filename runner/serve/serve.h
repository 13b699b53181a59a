/*
 * serve.h - `cowrun serve`: keep a workload's setup warm and run batches
 * on request (`cowrun submit`) over a Unix socket.
 *
 * Three kinds of process, each single-threaded when it forks:
 *   master      owns the socket (its own, or systemd's); accepts, refuses
 *               a peer whose uid may not at once, reads and checks each
 *               request within a deadline, answers status and reload
 *               requests itself, and hands a run request with its
 *               descriptors to a spare leader the current generation lent
 *               it when its workers are granted at once (they are free
 *               and no batch waits before it), telling the generation;
 *               otherwise passes it to the generation.  Grants every
 *               batch its workers: at most --max-workers across the whole
 *               server, every generation's batches together (ledger.h).
 *               Replaces a lost generation.  Never runs a setup.
 *   generation  forked by the master: runs the setup once (arena, freeze),
 *               forks spare leaders in advance and lends them to the
 *               master; a request passed to it waits for its workers, then
 *               gets a leader forked then (one whose client went away gets
 *               none).  Reaps its leaders and gives their workers back.  A
 *               reload starts a new one; the old one exits once its
 *               batches have ended.
 *   leader      one request's batch: today's fork-mode batch (the hooks'
 *               run()), its first worker a standby forked in advance
 *               (pool.h; the leader itself a spare forked in advance),
 *               writing to the client's standard output and error
 *               (never blocked for good: guard.h) and its output
 *               directory, passed as descriptors; then the exit status to
 *               the client.  A client that goes away cancels its batch.
 * hooks.c gives the run's steps (run/run.h) as hooks; the rest of this
 * folder owns the processes, the socket and the messages (proto.h).
 */
#ifndef COWRUN_SERVE_H
#define COWRUN_SERVE_H

#include "proto.h"
#include "run/config.h"

#include <stddef.h>
#include <sys/types.h>

#define SERVE_ALLOW_MAX 16

struct serve_config {
	const char *socket_path;
	unsigned socket_mode;        /* 0600 unless --socket-mode */
	uid_t allow_uid[SERVE_ALLOW_MAX]; /* besides the server's own */
	size_t nallow;
	size_t max_workers;          /* across running batches; 0: the CPUs */
	const char *pidfile;
	int read_timeout_ms;         /* a request must arrive within this */
};

struct serve_hooks {
	/* In a new generation: the workload's setup; *ntasks its task
	 * count.  0, or -1 after a message on standard error. */
	int (*setup)(void *ctx, size_t *ntasks);
	/* In the master: the workers a request's batch would use at most
	 * (its -j, its task count) with a setup of ntasks tasks; 0 if it
	 * runs none. */
	size_t (*want_workers)(void *ctx, const struct proto_request *rq, size_t ntasks);
	/* In the leader: run the batch with at most `workers` workers;
	 * files[0] is the client's output directory (kept open), files[1]
	 * and files[2] its joblog and journal (-1 without --joblog),
	 * files[3..5] the temporary files of --save-results, --timeline and
	 * --stats (-1 where not given; the run owns them all and never
	 * renames or removes a file by name); standard output and error are
	 * the client's.  *whole says which side files were written whole,
	 * to be kept as a direct run keeps them (SIDEFILE_WHOLE_*: the saved
	 * results committed, the timeline of a task phase that started, the
	 * stats written).  Returns the exit status. */
	int (*run)(void *ctx, const struct proto_request *rq, size_t workers, const int files[6],
		   unsigned *whole);
	/* In a spare leader, before its request: fork its batch's first
	 * worker in advance (pool_standby_fork()), closing there the ndrop
	 * descriptors in drop.  0, or -1 (the batch will fork it). */
	int (*spare)(void *ctx, const int *drop, size_t ndrop);
	/* In a generation that retires (its loop ended, its leaders gone):
	 * the workload's teardown of the setup's state, as a direct run's
	 * parent does after its batch; an embedded interpreter ends there
	 * (cowrun r removes its session's temporary directory).  May be
	 * NULL. */
	void (*teardown)(void *ctx);
	void *ctx;
};

/* Take the serve options at the front of argv (argv[0] is "serve"):
 * --socket PATH (required), --socket-mode OCTAL, --allow-uid UID
 * (repeatable), --max-workers N, --pidfile FILE, --read-timeout MS (a
 * request must arrive within it; default 2000).  Returns how many
 * arguments were taken (argv[that - 1] is the last serve option, where the
 * runner's options take over), 0 after --help, or -1 after a message. */
int serve_parse(int argc, char **argv, struct serve_config *cfg);

/* Run the server until SIGTERM or SIGINT (a second one kills running
 * batches).  Returns the exit status: 0 when stopped so; 255 after a
 * message when it could not start (the socket, systemd's socket, the
 * first setup); 254 when it stopped serving (no generation could be set
 * up again after a lost one, RETRIES tries with growing waits). */
int serve_main(const struct serve_config *cfg, const struct serve_hooks *hooks);

/* `cowrun serve`: serve the workload of a parsed runner command line
 * (cfg, kept by the server) with the serve options in scfg.  Options a
 * served batch cannot have (--mode other than fork, --merge, side files)
 * are refused.  Returns serve_main()'s status, or EXIT_USAGE. */
int serve_workload(const struct serve_config *scfg, const struct run_config *cfg);

/* submit's options (argv[0] is "submit") into a request, and the
 * socket's path.  Returns 0, -1 after --help, or 255 after a message.
 * submit_main()'s first step. */
int submit_parse(int argc, char **argv, struct proto_request *rq, const char **socket_path);

/* `cowrun submit ...` (argv[0] is "submit").  Returns the exit status:
 * the batch's, or 255 (bad usage, refused) or 254 (server lost). */
int submit_main(int argc, char **argv);

#endif
