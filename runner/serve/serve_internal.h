/*
 * serve_internal.h - what the serve modules share: the master (serve.c,
 * master.c), a generation (generation.c) and a batch's leader (leader.c).
 */
#ifndef COWRUN_SERVE_INTERNAL_H
#define COWRUN_SERVE_INTERNAL_H

#include "serve.h"

#include <stdint.h>
#include <sys/types.h>

/* A generation tells the master, over their SOCK_SEQPACKET pair. */
enum gen_note_kind { NOTE_READY = 1, NOTE_FAILED, NOTE_START, NOTE_END };

struct gen_note {
	int32_t kind;
	int32_t pid;             /* NOTE_START/END: the leader */
	int32_t client_pid;
	int32_t workers;
	char text[2048];         /* NOTE_FAILED: the setup's messages */
};

/* The master tells a generation to finish its batches and exit. */
#define RETIRE_MESSAGE "BYE!"

/* Flags set by SIGTERM/SIGINT, SIGHUP, SIGCHLD and a self-pipe to poll
 * (master and generation; a generation calls init again for its own). */
int serve_signals_init(void);
void serve_signals_close(void);
int serve_wake_fd(void);
int serve_terms(void);           /* SIGTERM/SIGINT so far */
int serve_take_hup(void);        /* SIGHUPs since the last call */
int serve_take_chld(void);       /* drains the pipe; SIGCHLD since? */

/* The listening socket (checks in serve.h's order).  Returns it, or -1
 * after a message. */
int serve_listen(const struct serve_config *cfg);

/* A generation's life, in the child the master forked: `chan` its end of
 * the pair.  Never returns. */
void generation_main(int chan, unsigned id, const struct serve_config *cfg,
		     const struct serve_hooks *hooks) __attribute__((noreturn));

/* The descriptors a leader is given: the connection, the client's
 * standard output, standard error, output directory, joblog and journal
 * (the last two -1 without --joblog). */
#define LEADER_FDS 6

/* Fork a leader for one request: `fds` as above (the caller closes its
 * copies); `close_in_child(ctx)` closes the generation's other
 * descriptors in the child.  Returns the leader's pid, or -1. */
pid_t leader_start(const struct serve_hooks *hooks, const struct proto_request *rq,
		   size_t workers, const int fds[LEADER_FDS], void (*close_in_child)(void *),
		   void *ctx);

/* In a leader, before it touches anything of the client's: check the
 * client's descriptors (standard output and error, already in place; files:
 * the output directory, the joblog and its journal, -1 if none) for kind
 * and access mode, and take the client's rights: a server run as root
 * becomes the client (groups, gid, uid); another serves a client of
 * another uid only into a directory that uid owns (identity.c).  Returns
 * 0, or -1 with the reason, for the client, in why. */
int leader_take_client(int conn, const int files[3], char *why, size_t size);

#endif
