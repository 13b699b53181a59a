/*
 * proto.h - the messages of `cowrun serve` and `cowrun submit`: a request
 * (run a batch, report status, reload) and its reply, each one small,
 * versioned, length-checked datagram on a SOCK_SEQPACKET Unix socket, with
 * the client's descriptors (standard output and error, the output
 * directory; with --joblog the joblog and its journal; the temporary
 * files of --save-results, --timeline and --stats) passed beside a run
 * request (SCM_RIGHTS), in that order, those of absent fields left out.
 *
 * A message is a 12-byte header, "CWRQ" (request) or "CWRP" (reply), the
 * version (u16), the type (u16), the body's length (u32), all little-
 * endian; then the body.  A request's body is fields: tag (u8), length
 * (u16), that many bytes of text without NUL; each tag at most once.  A
 * reply's body is a status (i32) and text.  Nothing but these functions
 * knows the layout; the decoders refuse anything else with a reason.
 */
#ifndef COWRUN_PROTO_H
#define COWRUN_PROTO_H

#include "run/config.h"
#include "run/options_table.h"

#include <stddef.h>
#include <stdint.h>

#define PROTO_VERSION 1
#define PROTO_MSG_MAX 4096        /* no message is longer */
#define PROTO_TEXT_MAX 4000       /* a reply's text, NUL included */
#define PROTO_FIELD_MAX 1024      /* a request field's text, NUL included */
#define PROTO_FDS_MAX 9           /* descriptors passed with one message */

enum proto_req_type { PROTO_RUN = 1, PROTO_STATUS = 2, PROTO_RELOAD = 3 };
enum proto_reply_type { PROTO_EXIT = 1, PROTO_ERROR = 2, PROTO_TEXT = 3 };

/* A PROTO_EXIT reply's text says which side files the batch wrote whole
 * (the client then renames those into place, and drops the others), as a
 * direct run would keep them: "complete" when all of them are, else
 * PROTO_WHOLE and the names of those that are ("whole timeline stats"),
 * "" for none.  proto_whole_text() and proto_whole_parse() write and
 * read it (bits: SIDEFILE_WHOLE_* of run/sidefiles.h). */
#define PROTO_COMPLETE "complete"
#define PROTO_WHOLE "whole"
void proto_whole_text(unsigned whole, unsigned given, char *buf, size_t size);
unsigned proto_whole_parse(const char *text);

/* A request's fields (enum proto_field, PF_JOBS ...), the runner options
 * a client may give per batch, are numbered in the option table
 * (run/options_table.h): each option's entry names its field. */
/* A request's `present` has a bit per field. */
_Static_assert(PF_COUNT <= 32, "enum proto_field fits proto_request.present");

struct proto_request {
	unsigned type;
	unsigned present;                        /* bit f: field f given */
	char field[PF_COUNT][PROTO_FIELD_MAX];   /* "" when absent */
};

struct proto_reply {
	unsigned type;
	int32_t status;        /* PROTO_EXIT: the batch's exit status */
	char text[PROTO_TEXT_MAX];
};

/* Set a request's options over cfg as if they were on the server's
 * command line: each field through its option's parser in the option
 * table (PF_IN_OUTDIR, no option's, left alone); not checked as a whole
 * (run_config_check()).  Returns 0, or EXIT_USAGE after a message. */
int proto_apply_request(struct run_config *cfg, const struct proto_request *rq);

/* Set field f of a request to `text`.  Returns 0, or -1 if too long. */
int proto_set(struct proto_request *rq, enum proto_field f, const char *text);

/* How many descriptors a run request's client passes: 3 (standard
 * output, standard error, output directory), 2 more with PF_JOBLOG, 1
 * more for each of PF_SAVE, PF_TIMELINE, PF_STATS. */
size_t proto_run_fds(const struct proto_request *rq);

/* Encode into buf (PROTO_MSG_MAX bytes).  Returns the length, or -1 if
 * it does not fit or the type is unknown. */
long proto_encode_request(const struct proto_request *rq, unsigned char *buf, size_t size);
long proto_encode_reply(const struct proto_reply *rp, unsigned char *buf, size_t size);

/* Decode and check a whole message of `len` bytes.  Returns 0, or -1 with
 * *why saying what is wrong (a static string); *rq or *rp is then
 * unspecified. */
int proto_decode_request(const unsigned char *buf, size_t len, struct proto_request *rq,
			 const char **why);
int proto_decode_reply(const unsigned char *buf, size_t len, struct proto_reply *rp,
		       const char **why);

/* Send one message with `nfds` descriptors (the caller keeps them).
 * Returns 0 or -1 with errno. */
int proto_send(int sock, const void *buf, size_t len, const int *fds, size_t nfds);

/* Receive one message, without waiting (poll first; EAGAIN: none yet),
 * of at most `size` bytes and at most PROTO_FDS_MAX descriptors,
 * close-on-exec, which the caller then owns (*nfds of them in fds[]).  A truncated message or descriptor list is refused (EMSGSIZE),
 * its descriptors closed.  Returns the length (0: the peer closed), or -1
 * with errno. */
long proto_recv(int sock, void *buf, size_t size, int *fds, size_t *nfds);

/* A reply in one call: encode and send.  Returns 0 or -1. */
int proto_reply(int sock, unsigned type, int status, const char *text);

#endif
