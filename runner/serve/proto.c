/*
 * proto.c - the serve/submit messages: encoding, checked decoding, and
 * sending them with descriptors.  See proto.h.
 */
#define _GNU_SOURCE
#include "proto.h"
#include "os/fdpass.h"
#include "run/sidefiles.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define HEADER_LEN 12

static void put16(unsigned char *p, unsigned v) { p[0] = v & 0xff; p[1] = (v >> 8) & 0xff; }
static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (v >> (8 * i)) & 0xff;
}
static unsigned get16(const unsigned char *p) { return p[0] | (unsigned)p[1] << 8; }
static uint32_t get32(const unsigned char *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

int proto_apply_request(struct run_config *cfg, const struct proto_request *rq)
{
	cfg->seen = 0;
	for (unsigned f = 0; f < PF_COUNT; f++) {
		if (!(rq->present & (1u << f)))
			continue;
		const struct runner_option *o = option_by_wire((int)f, rq->field[f]);
		if (o != NULL && run_config_set(cfg, o->key, o->wire_value ? NULL : rq->field[f]) != 0)
			return EXIT_USAGE;
	}
	return 0;
}

int proto_set(struct proto_request *rq, enum proto_field f, const char *text)
{
	size_t n = strlen(text);

	if ((unsigned)f >= PF_COUNT || n >= PROTO_FIELD_MAX)
		return -1;
	memcpy(rq->field[f], text, n + 1);
	rq->present |= 1u << f;
	return 0;
}

static void put_header(unsigned char *buf, const char *magic, unsigned type, size_t body)
{
	memcpy(buf, magic, 4);
	put16(buf + 4, PROTO_VERSION);
	put16(buf + 6, type);
	put32(buf + 8, (uint32_t)body);
}

long proto_encode_request(const struct proto_request *rq, unsigned char *buf, size_t size)
{
	size_t at = HEADER_LEN;

	if (rq->type < PROTO_RUN || rq->type > PROTO_RELOAD || size < HEADER_LEN)
		return -1;
	for (unsigned f = 0; f < PF_COUNT; f++) {
		if (!(rq->present & (1u << f)))
			continue;
		size_t n = strnlen(rq->field[f], PROTO_FIELD_MAX);
		if (n >= PROTO_FIELD_MAX || at + 3 + n > size || at + 3 + n > PROTO_MSG_MAX)
			return -1;
		buf[at] = (unsigned char)f;
		put16(buf + at + 1, (unsigned)n);
		memcpy(buf + at + 3, rq->field[f], n);
		at += 3 + n;
	}
	put_header(buf, "CWRQ", rq->type, at - HEADER_LEN);
	return (long)at;
}

long proto_encode_reply(const struct proto_reply *rp, unsigned char *buf, size_t size)
{
	size_t n = strnlen(rp->text, PROTO_TEXT_MAX);

	if (rp->type < PROTO_EXIT || rp->type > PROTO_TEXT || n >= PROTO_TEXT_MAX ||
	    HEADER_LEN + 4 + n > size || HEADER_LEN + 4 + n > PROTO_MSG_MAX)
		return -1;
	put_header(buf, "CWRP", rp->type, 4 + n);
	put32(buf + HEADER_LEN, (uint32_t)rp->status);
	memcpy(buf + HEADER_LEN + 4, rp->text, n);
	return (long)(HEADER_LEN + 4 + n);
}

/* The header's checks, common to both directions.  Returns the type or -1. */
static int check_header(const unsigned char *buf, size_t len, const char *magic,
			const char **why)
{
	if (len < HEADER_LEN || len > PROTO_MSG_MAX)
		return *why = "bad message length", -1;
	if (memcmp(buf, magic, 4) != 0)
		return *why = "not a cowrun message", -1;
	if (get16(buf + 4) != PROTO_VERSION)
		return *why = "unsupported protocol version", -1;
	if (get32(buf + 8) != len - HEADER_LEN)
		return *why = "body length does not match the message", -1;
	return (int)get16(buf + 6);
}

static size_t count_char(const char *text, char c)
{
	size_t n = 0;

	while ((text = strchr(text, c)) != NULL) {
		n++;
		text++;
	}
	return n;
}

int proto_decode_request(const unsigned char *buf, size_t len, struct proto_request *rq,
			 const char **why)
{
	int type = check_header(buf, len, "CWRQ", why);

	memset(rq, 0, sizeof *rq);
	if (type < 0)
		return -1;
	if (type < PROTO_RUN || type > PROTO_RELOAD)
		return *why = "unknown request type", -1;
	rq->type = (unsigned)type;
	for (size_t at = HEADER_LEN; at < len;) {
		if (len - at < 3)
			return *why = "truncated field", -1;
		unsigned tag = buf[at], n = get16(buf + at + 1);
		if (tag >= PF_COUNT)
			return *why = "unknown field", -1;
		if (rq->present & (1u << tag))
			return *why = "field given twice", -1;
		if (n >= PROTO_FIELD_MAX || n > len - at - 3)
			return *why = "field longer than the message or the limit", -1;
		if (memchr(buf + at + 3, '\0', n) != NULL)
			return *why = "NUL inside a field", -1;
		memcpy(rq->field[tag], buf + at + 3, n);
		rq->field[tag][n] = '\0';
		rq->present |= 1u << tag;
		at += 3 + n;
	}
	if ((rq->present & (1u << PF_RESUME)) && strcmp(rq->field[PF_RESUME], "1") != 0 &&
	    strcmp(rq->field[PF_RESUME], "2") != 0)
		return *why = "resume field neither 1 nor 2", -1;
	if ((rq->present & (1u << PF_RESUME)) && !(rq->present & (1u << PF_JOBLOG)))
		return *why = "resume without a joblog", -1;
	if ((rq->present & (1u << PF_IN_OUTDIR)) && count_char(rq->field[PF_IN_OUTDIR], '/') != 4)
		return *why = "side files' places not 5 names", -1;
	return 0;
}

size_t proto_run_fds(const struct proto_request *rq)
{
	size_t n = (rq->present & (1u << PF_JOBLOG)) ? 5 : 3;

	for (unsigned f = PF_SAVE; f <= PF_STATS; f++)
		n += (rq->present & (1u << f)) != 0;
	return n;
}

int proto_decode_reply(const unsigned char *buf, size_t len, struct proto_reply *rp,
		       const char **why)
{
	int type = check_header(buf, len, "CWRP", why);

	memset(rp, 0, sizeof *rp);
	if (type < 0)
		return -1;
	if (type < PROTO_EXIT || type > PROTO_TEXT)
		return *why = "unknown reply type", -1;
	if (len < HEADER_LEN + 4)
		return *why = "reply without a status", -1;
	size_t n = len - HEADER_LEN - 4;
	if (n >= PROTO_TEXT_MAX || memchr(buf + HEADER_LEN + 4, '\0', n) != NULL)
		return *why = "bad reply text", -1;
	rp->type = (unsigned)type;
	rp->status = (int32_t)get32(buf + HEADER_LEN);
	memcpy(rp->text, buf + HEADER_LEN + 4, n);
	rp->text[n] = '\0';
	return 0;
}

int proto_send(int sock, const void *buf, size_t len, const int *fds, size_t nfds)
{
	if (nfds > PROTO_FDS_MAX)
		return errno = EINVAL, -1;
	return fdpass_send(sock, buf, len, fds, nfds);
}

long proto_recv(int sock, void *buf, size_t size, int *fds, size_t *nfds)
{
	return fdpass_recv(sock, buf, size, fds, PROTO_FDS_MAX, nfds);
}

/* The side files' names in a reply, by bit (SIDEFILE_WHOLE_*). */
static const char *const whole_names[] = { "results", "timeline", "stats" };
#define NWHOLE (sizeof whole_names / sizeof whole_names[0])
_Static_assert(SIDEFILE_WHOLE_SAVE == 1 && SIDEFILE_WHOLE_TIMELINE == 2 &&
	       SIDEFILE_WHOLE_STATS == 4, "whole_names[] in bit order");

void proto_whole_text(unsigned whole, unsigned given, char *buf, size_t size)
{
	size_t n = 0;

	buf[0] = '\0';
	if (whole == 0)
		return;
	if ((whole & given) == given) {
		snprintf(buf, size, "%s", PROTO_COMPLETE);
		return;
	}
	n = (size_t)snprintf(buf, size, "%s", PROTO_WHOLE);
	for (size_t i = 0; i < NWHOLE && n < size; i++)
		if (whole & (1u << i))
			n += (size_t)snprintf(buf + n, size - n, " %s", whole_names[i]);
}

unsigned proto_whole_parse(const char *text)
{
	unsigned whole = 0;
	size_t len = strlen(PROTO_WHOLE);

	if (strcmp(text, PROTO_COMPLETE) == 0)
		return (1u << NWHOLE) - 1;
	if (strncmp(text, PROTO_WHOLE, len) != 0)
		return 0;
	for (const char *p = text + len; *p == ' ';) {
		size_t word = strcspn(++p, " ");
		for (size_t i = 0; i < NWHOLE; i++)
			if (strlen(whole_names[i]) == word && strncmp(p, whole_names[i], word) == 0)
				whole |= 1u << i;
		p += word;
	}
	return whole;
}

int proto_reply(int sock, unsigned type, int status, const char *text)
{
	static struct proto_reply rp;
	unsigned char buf[PROTO_MSG_MAX];

	rp.type = type;
	rp.status = status;
	snprintf(rp.text, sizeof rp.text, "%s", text ? text : "");
	long len = proto_encode_reply(&rp, buf, sizeof buf);
	return len < 0 ? -1 : proto_send(sock, buf, (size_t)len, NULL, 0);
}
