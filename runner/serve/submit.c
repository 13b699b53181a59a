/*
 * submit.c - `cowrun submit`: the client of `cowrun serve`.  It opens its
 * own output directory (created if missing) and passes it, with its
 * standard output and error, beside the request; the server writes
 * through them.  It exits with the batch's status, as cowrun would.  See
 * serve.h.
 */
#define _GNU_SOURCE
#include "serve.h"
#include "run/resume.h"
#include "os/util.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

enum { EXIT_LOST = 254, EXIT_BAD = 255 };

static void submit_usage(void)
{
	printf(
"Usage: cowrun submit --socket PATH [OPTIONS]\n"
"Run a batch on a `cowrun serve` server (its workload, its setup) and exit\n"
"with the batch's status, as cowrun would.\n"
"  -j, --jobs N       workers for this batch (the server caps the total)\n"
"  -o, --outdir DIR   where report files go (default: out; created here)\n"
"      --tasks LIST   --shard k/M  --retries N  --halt WHEN  --timeout SECS\n"
"                     as for cowrun\n"
"      --joblog FILE  as for cowrun (+FILE appends); opened here, with\n"
"                     FILE.res, and passed to the server\n"
"      --status       list the server's generations and running batches\n"
"      --reload       start a new generation (a fresh setup); wait for it\n");
}

struct submit_args {
	const char *socket_path;
	struct proto_request rq;
};

static int parse_submit(int argc, char **argv, struct submit_args *a)
{
	static const struct option longopts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "jobs", required_argument, NULL, 'j' },
		{ "outdir", required_argument, NULL, 'o' },
		{ "tasks", required_argument, NULL, 'T' },
		{ "shard", required_argument, NULL, 'S' },
		{ "retries", required_argument, NULL, 'y' },
		{ "halt", required_argument, NULL, 'H' },
		{ "timeout", required_argument, NULL, 't' },
		{ "joblog", required_argument, NULL, 'J' },
		{ "status", no_argument, NULL, 'i' },
		{ "reload", no_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	static const char keys[] = "jTSyHtoJ";   /* enum proto_field's order */
	int c;

	memset(a, 0, sizeof *a);
	a->rq.type = PROTO_RUN;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:j:o:h", longopts, NULL)) != -1) {
		const char *at = c ? strchr(keys, c) : NULL;
		if (c == 's')
			a->socket_path = optarg;
		else if (c == 'i')
			a->rq.type = PROTO_STATUS;
		else if (c == 'r')
			a->rq.type = PROTO_RELOAD;
		else if (c == 'h') {
			submit_usage();
			return -1;
		} else if (at != NULL) {
			if ((a->rq.present & (1u << (at - keys))) ||
			    proto_set(&a->rq, (enum proto_field)(at - keys), optarg) != 0) {
				warnx_("submit: %s given twice or too long", argv[optind - 1]);
				return EXIT_BAD;
			}
		} else {
			warnx_("submit: %s option '%s' (see cowrun submit --help)",
			       c == ':' ? "missing value for" : "unknown", argv[optind - 1]);
			return EXIT_BAD;
		}
	}
	if (optind < argc) {
		warnx_("submit: unexpected argument '%s': the workload is the server's", argv[optind]);
		return EXIT_BAD;
	}
	if (a->socket_path == NULL) {
		warnx_("submit: --socket PATH is required");
		return EXIT_BAD;
	}
	return 0;
}

static int connect_to(const char *path)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (strlen(path) >= sizeof addr.sun_path) {
		errno = ENAMETOOLONG;
		return -1;
	}
	snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/* The output directory, created if missing, opened here with the
 * client's own rights.  Returns it or -1 after a message. */
static int open_outdir(const char *dir)
{
	int fd = -1;

	if (make_dirs(dir) == 0)
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		warnx_("submit: cannot create output directory '%s': %s", dir, strerror(errno));
	return fd;
}

/* --joblog: the joblog (not truncated: the batch does that once it has
 * its lock) and its journal, opened here with the client's own rights.
 * Returns 0 or -1 after a message. */
static int open_joblog(const char *arg, int fds[2])
{
	char journal[PATH_MAX];
	const char *path = arg[0] == '+' ? arg + 1 : arg;

	resume_journal_path(arg, journal, sizeof journal);
	fds[1] = -1;
	fds[0] = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (fds[0] >= 0 && (fds[1] = open(journal, O_RDWR | O_CREAT | O_CLOEXEC, 0666)) >= 0)
		return 0;
	warnx_("submit: --joblog: cannot open '%s': %s", fds[0] < 0 ? path : journal,
	       strerror(errno));
	if (fds[0] >= 0)
		close(fds[0]);
	return -1;
}

/* Wait for the one reply (a batch may take hours) and act on it. */
static int await_reply(int sock)
{
	unsigned char buf[PROTO_MSG_MAX];
	struct proto_reply rp;
	const char *why;
	int fds[PROTO_FDS_MAX];
	size_t nfds;

	for (;;) {
		struct pollfd pfd = { sock, POLLIN, 0 };
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			break;
		long n = proto_recv(sock, buf, sizeof buf, fds, &nfds);
		for (size_t i = 0; i < nfds; i++)
			close(fds[i]);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			continue;
		if (n <= 0)
			break;
		if (proto_decode_reply(buf, (size_t)n, &rp, &why) != 0) {
			warnx_("submit: bad reply from the server: %s", why);
			return EXIT_LOST;
		}
		if (rp.type == PROTO_TEXT)
			printf("%s%s", rp.text, rp.text[0] && rp.text[strlen(rp.text) - 1] != '\n' ? "\n" : "");
		else if (rp.type == PROTO_ERROR)
			warnx_("submit: %s", rp.text);
		return rp.status & 0xff;
	}
	warnx_("submit: the server closed the connection without a result");
	return EXIT_LOST;
}

int submit_main(int argc, char **argv)
{
	struct submit_args a;
	unsigned char buf[PROTO_MSG_MAX];
	int rc = parse_submit(argc, argv, &a), sock, dir = -1;

	if (rc != 0)
		return rc < 0 ? 0 : rc;
	signal(SIGPIPE, SIG_IGN);
	long len = proto_encode_request(&a.rq, buf, sizeof buf);
	if (len < 0) {
		warnx_("submit: the request is too long");
		return EXIT_BAD;
	}
	if ((sock = connect_to(a.socket_path)) < 0) {
		warnx_("submit: cannot connect to '%s': %s", a.socket_path, strerror(errno));
		return EXIT_BAD;
	}
	if (a.rq.type == PROTO_RUN) {
		const char *outdir = (a.rq.present & (1u << PF_OUTDIR)) ? a.rq.field[PF_OUTDIR] : "out";
		if ((dir = open_outdir(outdir)) < 0) {
			close(sock);
			return EXIT_BAD;
		}
	}
	int fds[5] = { STDOUT_FILENO, STDERR_FILENO, dir, -1, -1 };
	size_t nfds = dir >= 0 ? 3 : 0;
	if (nfds && (a.rq.present & (1u << PF_JOBLOG))) {
		if (open_joblog(a.rq.field[PF_JOBLOG], fds + 3) != 0) {
			close(dir);
			close(sock);
			return EXIT_BAD;
		}
		nfds = 5;
	}
	fflush(NULL);
	/* A refused client (its uid) may find the connection closed: the
	 * reply that says why waits on it all the same. */
	if (proto_send(sock, buf, (size_t)len, fds, nfds) != 0 && errno != EPIPE) {
		warnx_("submit: cannot send the request: %s", strerror(errno));
		rc = EXIT_LOST;
	} else
		rc = await_reply(sock);
	for (size_t i = 2; i < nfds; i++)
		close(fds[i]);
	close(sock);
	fflush(stdout);
	return rc;
}
