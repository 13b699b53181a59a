/*
 * util.c - messages, time, strict number parsing, complete writes: what
 * every runner module uses.  See util.h.
 */
#define _GNU_SOURCE
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

const char *progname = "cowrun";

/* A message longer than this has its quoted values shortened in their
 * middle; each keeps at least MESSAGE_KEEP bytes. */
#define MESSAGE_MAX 1000
#define MESSAGE_KEEP 80

static int word_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

/* The quote that opens a value: not inside a word (as in "joblog's").
 * The one that closes it: not followed by a letter or digit. */
static char *opening_quote(const char *line, char *from)
{
	for (char *q = strchr(from, '\''); q != NULL; q = strchr(q + 1, '\''))
		if (q == line || !word_char(q[-1]))
			return q;
	return NULL;
}

static char *closing_quote(char *from)
{
	for (char *q = strchr(from, '\''); q != NULL; q = strchr(q + 1, '\''))
		if (!word_char(q[1]))
			return q;
	return NULL;
}

/* The longest value a message quotes ('...'), or NULL if none is long
 * enough to lose more than "..." takes. */
static char *longest_quoted(char *line, size_t *length)
{
	char *best = NULL, *open = opening_quote(line, line);

	*length = MESSAGE_KEEP + 3;
	while (open != NULL) {
		char *close = closing_quote(open + 1);
		if (close == NULL)
			break;
		if ((size_t)(close - open - 1) > *length) {
			best = open + 1;
			*length = (size_t)(close - open - 1);
		}
		open = opening_quote(line, close + 1);
	}
	return best;
}

/* Fit a message into MESSAGE_MAX bytes by shortening the values it quotes
 * in their middle ('/aaaa...aaaa/x.csv'), longest first, so the reason
 * that follows a value is never cut; a message quoting nothing long is
 * shortened in its own middle. */
static void shorten_message(char *line)
{
	size_t len = strlen(line), n;

	while (len > MESSAGE_MAX) {
		char *value = longest_quoted(line, &n);
		if (value == NULL) {
			value = line;
			n = len;
		}
		size_t cut = len - MESSAGE_MAX + 3;
		if (cut > n - MESSAGE_KEEP)
			cut = n - MESSAGE_KEEP;
		if (cut <= 3)
			break;
		size_t head = (n - cut) / 2;
		memcpy(value + head, "...", 3);
		memmove(value + head + 3, value + head + cut, len - (size_t)(value - line) - head - cut + 1);
		len -= cut - 3;
	}
}

/* --log-time: the run id on every line; "" off. */
static char log_run_id[64];

void warnx_log_time(const char *run_id)
{
	snprintf(log_run_id, sizeof log_run_id, "%s", run_id);
}

/* Now, as "2026-11-24T06:15:00.123Z", in buf. */
static const char *iso_now(char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(buf, size, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, size - n, ".%03ldZ", ts.tv_nsec / 1000000);
	return buf;
}

void warnx_(const char *fmt, ...)
{
	char *line = NULL;
	va_list ap;

	va_start(ap, fmt);
	int n = vasprintf(&line, fmt, ap);
	va_end(ap);
	if (n < 0) {
		fprintf(stderr, "%s: %s\n", progname, fmt); /* out of memory: the bare format */
		return;
	}
	shorten_message(line);
	/* Messages quote input (a CSV header, a saved failure): keep them one
	 * line, and keep control characters away from the terminal. */
	for (unsigned char *c = (unsigned char *)line; *c; c++)
		if (*c < 0x20 || *c == 0x7f)
			*c = '?';
	/* One fprintf, so lines from several processes do not interleave. */
	if (log_run_id[0]) {
		char when[40];
		fprintf(stderr, "%s run=%s %s: %s\n", iso_now(when, sizeof when), log_run_id,
			progname, line);
	} else {
		fprintf(stderr, "%s: %s\n", progname, line);
	}
	free(line);
}

int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double epoch_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Strict: an optional '-', then digits (or a decimal number); no spaces,
 * no '+', no hexadecimal. */
static int plain_number(const char *text)
{
	if (*text == '-')
		text++;
	return (*text >= '0' && *text <= '9') || *text == '.';
}

int parse_ll(const char *text, long long min, long long max, long long *out)
{
	char *end;
	long long v;

	if (!plain_number(text)) {
		errno = EINVAL;
		return -1;
	}
	errno = 0;
	v = strtoll(text, &end, 10);
	if (end == text || *end != '\0' || errno == EINVAL) {
		errno = EINVAL;
		return -1;
	}
	if (errno == ERANGE || v < min || v > max) {
		errno = ERANGE;
		return -1;
	}
	*out = v;
	return 0;
}

int parse_double(const char *text, double min, double max, double *out)
{
	char *end;
	double v;

	if (!plain_number(text) || strpbrk(text, "xX") != NULL) {
		errno = EINVAL;
		return -1;
	}
	errno = 0;
	v = strtod(text, &end);
	if (end == text || *end != '\0' || isnan(v)) {
		errno = EINVAL;
		return -1;
	}
	/* Overflow (inf) and underflow are out of range, not "not a number". */
	if (!isfinite(v) || (errno == ERANGE && v != 0.0) || v < min || v > max) {
		errno = ERANGE;
		return -1;
	}
	*out = v;
	return 0;
}
