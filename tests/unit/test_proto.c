/*
 * test_proto.c - unit tests for runner/serve/proto.c: requests and replies
 * round-trip; every malformed message is refused with a reason; messages
 * and descriptors cross a SOCK_SEQPACKET pair; a message or a descriptor
 * list too long for the receiver is refused, its descriptors closed.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "serve/proto.h"
#include "run/options_table.h"
#include "run/sidefiles.h"

static unsigned char buf[PROTO_MSG_MAX];

static void test_request_round_trip(void **unused)
{
	static struct proto_request rq, back;
	const char *why = NULL;

	(void)unused;
	memset(&rq, 0, sizeof rq);
	rq.type = PROTO_RUN;
	assert_int_equal(proto_set(&rq, PF_JOBS, "3"), 0);
	assert_int_equal(proto_set(&rq, PF_TASKS, "0-9,17"), 0);
	assert_int_equal(proto_set(&rq, PF_OUTDIR, ""), 0);
	long len = proto_encode_request(&rq, buf, sizeof buf);
	assert_true(len > 12);
	assert_int_equal(proto_decode_request(buf, (size_t)len, &back, &why), 0);
	assert_int_equal(back.type, PROTO_RUN);
	assert_int_equal(back.present, (1u << PF_JOBS) | (1u << PF_TASKS) | (1u << PF_OUTDIR));
	assert_string_equal(back.field[PF_JOBS], "3");
	assert_string_equal(back.field[PF_TASKS], "0-9,17");
	assert_string_equal(back.field[PF_OUTDIR], "");
	assert_string_equal(back.field[PF_HALT], "");
}

/* The report options (issue 34) travel as given, a shell command's
 * quotes and spaces included, after the older fields; they carry no
 * descriptor. */
static void test_report_fields(void **unused)
{
	static struct proto_request rq, back;
	const char *cmd = "sh -c 'cat > \"/tmp/a b/{}\"'";
	const char *why = NULL;

	(void)unused;
	assert_int_equal(PF_REPORT_FILTER, PF_IN_OUTDIR + 1);   /* older clients' tags kept */
	memset(&rq, 0, sizeof rq);
	rq.type = PROTO_RUN;
	assert_int_equal(proto_set(&rq, PF_REPORT_FILTER, "gzip -n"), 0);
	assert_int_equal(proto_set(&rq, PF_REPORT_TO, cmd), 0);
	assert_int_equal(proto_set(&rq, PF_REPORT_SUFFIX, ".gz"), 0);
	assert_int_equal(proto_run_fds(&rq), 3);
	long len = proto_encode_request(&rq, buf, sizeof buf);
	assert_int_equal(len, 12 + 3 * 3 + 7 + (long)strlen(cmd) + 3);
	assert_int_equal(proto_decode_request(buf, (size_t)len, &back, &why), 0);
	assert_int_equal(back.present, (1u << PF_REPORT_FILTER) | (1u << PF_REPORT_TO) |
				       (1u << PF_REPORT_SUFFIX));
	assert_string_equal(back.field[PF_REPORT_FILTER], "gzip -n");
	assert_string_equal(back.field[PF_REPORT_TO], cmd);
	assert_string_equal(back.field[PF_REPORT_SUFFIX], ".gz");
	assert_int_equal(proto_run_fds(&back), 3);
	/* Tag 13 is PF_REPORT_FILTER's on the wire. */
	assert_int_equal(buf[12], 13);
}

/* --seed is tag 16 on the wire (the one after PF_REPORT_SUFFIX, as
 * released), its key 's'; it passes no descriptor. */
static void test_seed_field(void **unused)
{
	static struct proto_request rq, back;
	const char *why = NULL;

	(void)unused;
	assert_int_equal(PF_SEED, 16);
	assert_int_equal(PF_SEED, PF_REPORT_SUFFIX + 1);
	assert_int_equal(option_by_wire(PF_SEED, "")->key, 's');
	memset(&rq, 0, sizeof rq);
	rq.type = PROTO_RUN;
	assert_int_equal(proto_set(&rq, PF_SEED, "18446744073709551615"), 0);
	assert_int_equal(proto_run_fds(&rq), 3);
	long len = proto_encode_request(&rq, buf, sizeof buf);
	assert_int_equal(len, 12 + 3 + 20);
	assert_int_equal(buf[12], 16);
	assert_int_equal(proto_decode_request(buf, (size_t)len, &back, &why), 0);
	assert_int_equal(back.present, 1u << PF_SEED);
	assert_string_equal(back.field[PF_SEED], "18446744073709551615");
}

/* A tag's number is its meaning on the wire: every field keeps the
 * number it was released with (new fields go last); each but
 * PF_IN_OUTDIR, which submit finds itself, is an option's (the option
 * table, run/options_table.h; test_options_table.c checks the rest). */
static void test_field_numbers(void **unused)
{
	static const int released[] = {
		PF_JOBS, PF_TASKS, PF_SHARD, PF_RETRIES, PF_HALT, PF_TIMEOUT, PF_OUTDIR,
		PF_JOBLOG, PF_SAVE, PF_TIMELINE, PF_STATS, PF_RESUME, PF_IN_OUTDIR,
		PF_REPORT_FILTER, PF_REPORT_TO, PF_REPORT_SUFFIX, PF_SEED, PF_TASKS_PER_WORKER,
		PF_RETRY_DELAY,
	};

	(void)unused;
	assert_int_equal(PF_COUNT, sizeof released / sizeof released[0]);
	for (int f = 0; f < PF_COUNT; f++)
		assert_int_equal(released[f], f);
	assert_string_equal(option_by_wire(PF_JOBS, "")->name, "jobs");
	assert_string_equal(option_by_wire(PF_STATS, "")->name, "stats");
	assert_string_equal(option_by_wire(PF_SEED, "")->name, "seed");
	assert_string_equal(option_by_wire(PF_RETRY_DELAY, "")->name, "retry-delay");
	assert_string_equal(option_by_wire(PF_RESUME, "1")->name, "resume");
	assert_string_equal(option_by_wire(PF_RESUME, "2")->name, "resume-failed");
	assert_null(option_by_wire(PF_IN_OUTDIR, ""));
	assert_null(option_by_wire(PF_COUNT, ""));
}

static void test_request_limits(void **unused)
{
	static struct proto_request rq;
	char big[PROTO_FIELD_MAX + 1];

	(void)unused;
	memset(&rq, 0, sizeof rq);
	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	assert_int_equal(proto_set(&rq, PF_TASKS, big), -1);           /* too long */
	big[PROTO_FIELD_MAX - 1] = '\0';
	rq.type = PROTO_RUN;
	for (unsigned f = 0; f < PF_COUNT; f++)
		assert_int_equal(proto_set(&rq, (enum proto_field)f, big), 0);
	assert_int_equal(proto_encode_request(&rq, buf, sizeof buf), -1); /* > PROTO_MSG_MAX */
	rq.type = 9;
	rq.present = 0;
	assert_int_equal(proto_encode_request(&rq, buf, sizeof buf), -1); /* unknown type */
}

/* decode_fails HEX-ish bytes: refused, with a reason naming `part`. */
static void expect_refused(const void *msg, size_t len, const char *part)
{
	static struct proto_request rq;
	const char *why = NULL;

	assert_int_equal(proto_decode_request(msg, len, &rq, &why), -1);
	assert_non_null(why);
	if (strstr(why, part) == NULL)
		fail_msg("reason '%s' does not mention '%s'", why, part);
}

static void test_request_refused(void **unused)
{
	(void)unused;
	expect_refused("CWRQ\1\0\1\0\0\0", 10, "length");
	expect_refused("CWRP\1\0\1\0\0\0\0\0", 12, "not a cowrun");
	expect_refused("CWRQ\2\0\1\0\0\0\0\0", 12, "version");
	expect_refused("CWRQ\1\0\1\0\1\0\0\0", 12, "body length");
	expect_refused("CWRQ\1\0\7\0\0\0\0\0", 12, "request type");
	expect_refused("CWRQ\1\0\1\0\2\0\0\0\0\0", 14, "truncated");
	/* the first tag past the fields, and the last a byte can hold */
	const unsigned char past[] = { 'C', 'W', 'R', 'Q', 1, 0, 1, 0, 3, 0, 0, 0, PF_COUNT, 0, 0 };
	expect_refused(past, sizeof past, "unknown field");
	expect_refused("CWRQ\1\0\1\0\3\0\0\0\xff\0\0", 15, "unknown field");
	/* PF_IN_OUTDIR (12): five names, '/' between them */
	expect_refused("CWRQ\1\0\1\0\6\0\0\0\x0c\3\0" "a/b", 18, "5 names");
	expect_refused("CWRQ\1\0\1\0\x08\0\0\0\x0c\5\0" "/////", 20, "5 names");
	/* PF_RESUME (11): "1" or "2", and only with PF_JOBLOG (7) */
	expect_refused("CWRQ\1\0\1\0\x08\0\0\0\7\1\0" "j\x0b\1\0" "3", 20, "neither 1 nor 2");
	expect_refused("CWRQ\1\0\1\0\4\0\0\0\x0b\1\0" "1", 16, "without a joblog");
	expect_refused("CWRQ\1\0\1\0\4\0\0\0\1\5\0" "1", 16, "longer");
	expect_refused("CWRQ\1\0\1\0\x08\0\0\0\1\1\0" "1\1\1\0" "2", 20, "twice");
	expect_refused("CWRQ\1\0\1\0\4\0\0\0\1\1\0\0", 16, "NUL");
	unsigned char big[PROTO_MSG_MAX + 1] = "CWRQ\1\0\1\0";
	expect_refused(big, sizeof big, "length");
}

/* The descriptors a run request carries: 3, 2 more with a joblog, 1 more
 * for each temporary side file; --resume with its joblog decodes. */
static void test_run_fds(void **unused)
{
	static struct proto_request rq, back;
	unsigned char msg[PROTO_MSG_MAX];
	const char *why = NULL;

	(void)unused;
	memset(&rq, 0, sizeof rq);
	rq.type = PROTO_RUN;
	assert_int_equal(proto_run_fds(&rq), 3);
	assert_int_equal(proto_set(&rq, PF_SAVE, "r.res"), 0);
	assert_int_equal(proto_run_fds(&rq), 4);
	assert_int_equal(proto_set(&rq, PF_JOBLOG, "j.log"), 0);
	assert_int_equal(proto_set(&rq, PF_RESUME, "2"), 0);
	assert_int_equal(proto_run_fds(&rq), 6);
	assert_int_equal(proto_set(&rq, PF_TIMELINE, "t.csv"), 0);
	assert_int_equal(proto_set(&rq, PF_STATS, "s.csv"), 0);
	assert_int_equal(proto_set(&rq, PF_IN_OUTDIR, "///j.log.res/task-1"), 0);
	assert_int_equal(proto_run_fds(&rq), 8);
	assert_true(proto_run_fds(&rq) < PROTO_FDS_MAX);   /* the connection beside them */
	long n = proto_encode_request(&rq, msg, sizeof msg);
	assert_true(n > 0);
	assert_int_equal(proto_decode_request(msg, (size_t)n, &back, &why), 0);
	assert_string_equal(back.field[PF_RESUME], "2");
	assert_string_equal(back.field[PF_STATS], "s.csv");
	assert_string_equal(back.field[PF_IN_OUTDIR], "///j.log.res/task-1");
	assert_int_equal(proto_run_fds(&back), 8);
}

static void test_reply_round_trip(void **unused)
{
	static struct proto_reply rp, back;
	const char *why = NULL;

	(void)unused;
	memset(&rp, 0, sizeof rp);
	rp.type = PROTO_EXIT;
	rp.status = 143;
	strcpy(rp.text, "interrupted");
	long len = proto_encode_reply(&rp, buf, sizeof buf);
	assert_int_equal(len, 12 + 4 + 11);
	assert_int_equal(proto_decode_reply(buf, (size_t)len, &back, &why), 0);
	assert_int_equal(back.type, PROTO_EXIT);
	assert_int_equal(back.status, 143);
	assert_string_equal(back.text, "interrupted");
	assert_int_equal(proto_decode_reply(buf, 14, &back, &why), -1);   /* cut */
	buf[6] = 9;
	assert_int_equal(proto_decode_reply(buf, (size_t)len, &back, &why), -1);
	assert_string_equal(why, "unknown reply type");
	assert_int_equal(proto_decode_reply((const unsigned char *)"CWRP\1\0\1\0\0\0\0\0", 12,
					    &back, &why), -1);
}

static void test_send_recv_fds(void **unused)
{
	int sv[2], fds[PROTO_FDS_MAX], dir = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t nfds = 9;
	struct stat a, b;

	(void)unused;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	int out[3] = { STDOUT_FILENO, STDERR_FILENO, dir };
	assert_int_equal(proto_send(sv[0], "hello", 5, out, 3), 0);
	assert_int_equal(proto_recv(sv[1], buf, sizeof buf, fds, &nfds), 5);
	assert_int_equal(nfds, 3);
	assert_memory_equal(buf, "hello", 5);
	assert_int_equal(fstat(fds[2], &a), 0);
	assert_int_equal(fstat(dir, &b), 0);
	assert_true(a.st_ino == b.st_ino && S_ISDIR(a.st_mode));
	assert_true(fcntl(fds[2], F_GETFD) & FD_CLOEXEC);
	for (size_t i = 0; i < nfds; i++)
		close(fds[i]);
	/* Nothing waiting: EAGAIN, not a block. */
	assert_int_equal(proto_recv(sv[1], buf, sizeof buf, fds, &nfds), -1);
	assert_int_equal(errno, EAGAIN);
	/* Longer than the receiver's buffer: refused whole, fds closed. */
	assert_int_equal(proto_send(sv[0], "0123456789", 10, out, 2), 0);
	assert_int_equal(proto_recv(sv[1], buf, 4, fds, &nfds), -1);
	assert_int_equal(errno, EMSGSIZE);
	assert_int_equal(nfds, 0);
	/* More descriptors than a message may carry: refused by the sender. */
	int many[PROTO_FDS_MAX + 1] = { 0, 1, 2, 0, 1 };
	assert_int_equal(proto_send(sv[0], "x", 1, many, PROTO_FDS_MAX + 1), -1);
	/* The peer gone: 0. */
	close(sv[0]);
	assert_int_equal(proto_recv(sv[1], buf, sizeof buf, fds, &nfds), 0);
	close(sv[1]);
	close(dir);
}

static void test_reply_helper(void **unused)
{
	int sv[2], fds[PROTO_FDS_MAX];
	size_t nfds;
	static struct proto_reply rp;
	const char *why;

	(void)unused;
	assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal(proto_reply(sv[0], PROTO_ERROR, 255, "bad request: x"), 0);
	long n = proto_recv(sv[1], buf, sizeof buf, fds, &nfds);
	assert_true(n > 0);
	assert_int_equal(proto_decode_reply(buf, (size_t)n, &rp, &why), 0);
	assert_int_equal(rp.type, PROTO_ERROR);
	assert_int_equal(rp.status, 255);
	assert_string_equal(rp.text, "bad request: x");
	close(sv[0]);
	close(sv[1]);
}

/* Which side files are whole: "complete" when all given are, else the
 * names of those that are; read back to the same bits; anything else
 * (an older server's "", a bad word) is none. */
static void test_whole_text(void **unused)
{
	const unsigned all = SIDEFILE_WHOLE_SAVE | SIDEFILE_WHOLE_TIMELINE | SIDEFILE_WHOLE_STATS;
	char text[64];

	(void)unused;
	proto_whole_text(SIDEFILE_WHOLE_TIMELINE, SIDEFILE_WHOLE_TIMELINE, text, sizeof text);
	assert_string_equal(text, PROTO_COMPLETE);
	assert_int_equal(proto_whole_parse(text), all);
	proto_whole_text(SIDEFILE_WHOLE_TIMELINE | SIDEFILE_WHOLE_STATS, all, text, sizeof text);
	assert_string_equal(text, "whole timeline stats");
	assert_int_equal(proto_whole_parse(text), SIDEFILE_WHOLE_TIMELINE | SIDEFILE_WHOLE_STATS);
	proto_whole_text(0, all, text, sizeof text);
	assert_string_equal(text, "");
	assert_int_equal(proto_whole_parse(text), 0);
	assert_int_equal(proto_whole_parse("whole results"), SIDEFILE_WHOLE_SAVE);
	assert_int_equal(proto_whole_parse("whole resultsx stat"), 0);
	assert_int_equal(proto_whole_parse("wholesale"), 0);
	assert_int_equal(proto_whole_parse("completed"), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_request_round_trip),
		cmocka_unit_test(test_report_fields),
		cmocka_unit_test(test_seed_field),
		cmocka_unit_test(test_field_numbers),
		cmocka_unit_test(test_request_limits),
		cmocka_unit_test(test_request_refused),
		cmocka_unit_test(test_run_fds),
		cmocka_unit_test(test_reply_round_trip),
		cmocka_unit_test(test_send_recv_fds),
		cmocka_unit_test(test_reply_helper),
		cmocka_unit_test(test_whole_text),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
