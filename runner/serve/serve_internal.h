/*
 * serve_internal.h - what the serve modules share: the master (serve.c,
 * master.c and its pieces: master_internal.h), a generation
 * (generation.c) and a batch's leader (leader.c).
 */
#ifndef COWRUN_SERVE_INTERNAL_H
#define COWRUN_SERVE_INTERNAL_H

#include "serve.h"

#include <stdint.h>
#include <sys/types.h>

/* A generation tells the master, over their SOCK_SEQPACKET pair.  The
 * workers of every batch are the master's to grant (ledger.h): a
 * generation asks (WANT), starts the batch once granted (START), and
 * gives them back (FREE: a leader stuck on its client's output has none
 * left running; END: the batch ended; both with what it still held).
 * SPARE lends the master a spare leader (pid), the spare's end of its
 * pair passed with the note: the master hands it a request whose workers
 * it granted at once, with no hop through the generation, and says so
 * (TOOK); SPARE_GONE: a lent spare died, or ended before its TOOK came
 * (its batch, if it had one, is over).  WAITS: a retiring generation
 * says what it still waits for before it can exit, each time that
 * changes (workers: its leaders; ticket: its queued requests; client_pid:
 * its lent spares), for --status and the master's bound on retiring. */
enum gen_note_kind {
	NOTE_READY = 1, NOTE_FAILED, NOTE_WANT, NOTE_WITHDRAW, NOTE_START, NOTE_FREE, NOTE_END,
	NOTE_SPARE, NOTE_SPARE_GONE, NOTE_WAITS
};

/* Spare leaders a generation keeps forked in advance, and leaders (batches)
 * it runs at once at most. */
#define SPARE_LEADERS 2
#define MAX_LEADERS 64

struct gen_note {
	int32_t kind;
	int32_t pid;             /* START/FREE/END: the leader */
	int32_t client_pid;
	int32_t workers;         /* WANT: wanted; START: granted; FREE/END: given back */
	uint32_t ticket;         /* WANT/WITHDRAW: the generation's name for the batch */
	uint64_t ntasks;         /* READY: the setup's task count */
	char text[2048];         /* NOTE_FAILED: the setup's messages */
};

/* The master tells a generation to finish its batches and exit. */
#define RETIRE_MESSAGE "BYE!"

/* A run request as the master passes it on: the workers its batch wants
 * (the master reckons them: want_workers()) and those granted at once
 * (0: none free, or batches wait before it: the generation asks), then
 * the request as the client sent it. */
#define PASSED_MAGIC "PASS"
struct gen_passed {
	char magic[4];
	uint32_t granted;
	uint64_t want;
};

/* The master handed the lent spare `pid` the batch of client `client`,
 * with `workers` granted: it is that batch's leader now. */
#define TOOK_MAGIC "TOOK"
struct gen_took {
	char magic[4];
	int32_t pid;
	int32_t client;
	uint32_t workers;
};

/* The master grants a waiting batch its workers. */
#define GRANT_MAGIC "GRNT"
struct gen_grant {
	char magic[4];
	uint32_t ticket;
	uint32_t workers;
};

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

/* systemd's socket activation (activate.c): when LISTEN_PID is this
 * process and LISTEN_FDS is 1, *fd is descriptor 3, checked to be a
 * listening SOCK_SEQPACKET socket bound to cfg->socket_path, and made
 * non-blocking; otherwise *fd is -1.  The variables are unset either way.
 * Returns 0, or -1 after a message.  The server never unlinks a socket
 * it was given. */
int serve_take_activation(const struct serve_config *cfg, int *fd);

/* Close every descriptor from `keep_below` up: what whatever started the
 * server left open (systemd's socket is below). */
void serve_close_inherited(int keep_below);

/* A generation's life, in the child the master forked: `chan` its end of
 * the pair.  Never returns. */
void generation_main(int chan, unsigned id, const struct serve_config *cfg,
		     const struct serve_hooks *hooks) __attribute__((noreturn));

/* The descriptors a leader is given, each in its slot: the connection,
 * the client's standard output, standard error, output directory, joblog
 * and journal (-1 without --joblog), the temporary files of
 * --save-results, --timeline and --stats (-1 where not given). */
#define LEADER_FDS 9
enum { LFD_CONN, LFD_STDOUT, LFD_STDERR, LFD_OUTDIR, LFD_JOBLOG, LFD_JOURNAL, LFD_SAVE,
       LFD_TIMELINE, LFD_STATS };

/* Put the descriptors passed with run request `rq` (got[0] the
 * connection, then the client's, in proto.h's order) in their slots.
 * Returns 0, or -1 if their number is not the request's (nothing closed,
 * fds[] unspecified). */
int leader_place_fds(const struct proto_request *rq, const int *got, size_t n,
		     int fds[LEADER_FDS]);

/* Fork a leader for one request: `fds` as above (the caller closes its
 * copies); `release_fd` where it gives its workers back early (guard.h;
 * kept open in the leader); `close_in_child(ctx)` closes the
 * generation's other descriptors in the child.  Returns the leader's
 * pid, or -1. */
pid_t leader_start(const struct serve_hooks *hooks, const struct proto_request *rq,
		   size_t workers, const int fds[LEADER_FDS], int release_fd,
		   void (*close_in_child)(const void *), const void *ctx);

/* Fork a spare leader: it waits for one request on the pair whose other
 * end is *chan (the caller's, close-on-exec, to close), then runs it as a
 * leader_start() leader would.  `close_in_child(ctx)` as there.  The
 * spare's name (comm) is "cowrun-spare" until it gets its request; it
 * ends quietly when *chan is closed first.  Returns its pid, or -1. */
pid_t leader_spare_start(const struct serve_hooks *hooks, int release_fd, int *chan,
			 void (*close_in_child)(const void *), const void *ctx);

/* Hand a spare its request: `fds` as leader_start()'s (the caller closes
 * its copies).  Returns 0, or -1 with errno (the spare is gone). */
int leader_spare_hand(int chan, const struct proto_request *rq, size_t workers,
		      const int fds[LEADER_FDS]);

/* The same with the request as the client encoded it (req, len bytes)
 * and its descriptors as passed (fds[0] the connection, then the
 * client's, in proto.h's order). */
int leader_spare_hand_encoded(int chan, const unsigned char *req, size_t len, size_t workers,
			      const int *fds, size_t nfds);

/* A line on the server's log (standard error): "cowrun serve[PID]: ...". */
void serve_log(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* In a leader, before it touches anything of the client's: check the
 * client's descriptors (standard output and error, already in place; files:
 * the output directory, the joblog and its journal, the temporary side
 * files, -1 where none: slots LFD_OUTDIR on) for kind
 * and access mode, and take the client's rights: a server run as root
 * becomes the client (groups, gid, uid); another serves a client of
 * another uid only into a directory that uid owns, and refuses a request
 * `rq` that names a command (--report-filter, --report-to): it would run
 * as the server's user (identity.c).  Returns
 * 0, or -1 with the reason, for the client, in why. */
int leader_take_client(int conn, const struct proto_request *rq,
		       const int files[LEADER_FDS - 3], char *why, size_t size);

#endif
