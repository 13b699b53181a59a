/*
 * cowrun-lp.c - cowrun-lp, a printer command that waits until its job is
 * printed: `lp` returns when cupsd has spooled a job, and a job that the
 * backend then aborts, or that a stopped queue holds, was never printed
 * although `lp` exited 0.
 *
 *   cowrun-lp [-d DEST] [-t TITLE] [-o NAME=VALUE]... [--wait-limit SECS] [FILE]
 *
 * It sends FILE (or standard input) as one job to DEST on the cupsd that
 * libcups is configured for (CUPS_SERVER, client.conf: cupsServer()), then
 * asks for the job's state (Get-Job-Attributes) until it is `completed`,
 * and says "DEST-ID completed" on stdout.  Everything goes through libcups's
 * destination API; there is no IPP encoding of its own.
 *
 * A stopped or rejecting queue fails at once, as do an aborted or canceled
 * job; a job not completed within --wait-limit seconds (held, say) fails
 * then: each in one line, "cowrun-lp: DEST-ID: REASON", with CUPS's own
 * reason.  Whenever it ends without `completed` (a failure, the wait limit,
 * SIGTERM, SIGINT, SIGHUP) it cancels its job first, so that cupsd never
 * prints later a report that a resumed run prints again.
 *
 * Exit status: 0 completed (printed); 1 not printed (one line on stderr);
 * 2 bad options.
 */
#define _GNU_SOURCE
#include <cups/cups.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define PROG            "cowrun-lp"
#define VERSION         "0.5.1"     /* cowrun's (runner/run/config.h) */
#define EXIT_NOT_PRINTED 1
#define EXIT_USAGE      2
#define WAIT_LIMIT      600.0
#define WAIT_LIMIT_MAX  (7 * 24 * 3600.0)
#define POLL_FIRST_NS   20000000L   /* 20 ms, doubling ... */
#define POLL_MAX_NS     500000000L  /* ... up to half a second */
#define CHUNK           65536
#define REASON_MAX      1024

static const char usage_line[] =
	"usage: " PROG " [-d DEST] [-t TITLE] [-o NAME=VALUE]... [--wait-limit SECS] [FILE]";

struct options {
	const char *dest;       /* NULL: the default destination */
	const char *title;      /* NULL: FILE's name, or "(stdin)" */
	const char *file;       /* NULL or "-": standard input */
	double wait_limit;
	int num_options;
	cups_option_t *options;
};

/* The job once created: what a cancel needs, and its name for messages. */
struct job {
	http_t *http;
	cups_dest_t *dest;
	cups_dinfo_t *info;
	int id;                 /* 0: none yet */
	char name[256];         /* "DEST-ID" or "DEST" */
};

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* One line on stderr, "cowrun-lp: ...". */
static void say(const char *fmt, ...)
{
	va_list ap;

	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- options ------------------------------------------------------------ */

static void help(void)
{
	printf("Usage: %s\n"
	       "\n"
	       "Print FILE (or standard input) on DEST through cupsd and wait until it is\n"
	       "printed: the job's state is asked for (Get-Job-Attributes) until CUPS says\n"
	       "`completed`.  `lp` only says the job was spooled.\n"
	       "\n"
	       "The server is the one libcups is configured for (CUPS_SERVER, client.conf);\n"
	       "a destination whose URI names another server is refused.\n"
	       "\n"
	       "  -d, --destination DEST   the queue (default: the default destination)\n"
	       "  -t, --title TITLE        the job's title (default: FILE's name, or (stdin))\n"
	       "  -o, --option NAME=VALUE  a job option, as lp takes it (repeatable)\n"
	       "      --wait-limit SECS    fail (and cancel the job) when it is not completed\n"
	       "                           within SECS seconds, held or queued (default 600)\n"
	       "      --help               this help\n"
	       "      --version            the version\n"
	       "\n"
	       "On success it prints \"DEST-ID completed\" on stdout.  A stopped or rejecting\n"
	       "queue, an aborted or canceled job, or the wait limit fail in one line,\n"
	       "\"cowrun-lp: DEST-ID: REASON\" with CUPS's reason.  Whenever it exits without\n"
	       "`completed` (a failure, the wait limit, SIGTERM, SIGINT, SIGHUP) it cancels\n"
	       "its job first: cupsd never prints it later.\n"
	       "\n"
	       "Exit status: 0 printed (completed); 1 not printed (the reason on stderr);\n"
	       "2 bad options.\n", usage_line + strlen("usage: "));
}

/* SECS: a number above 0 and at most a week. */
static int parse_wait_limit(const char *s, double *secs)
{
	char *end;

	errno = 0;
	*secs = strtod(s, &end);
	if (*s < '0' || *s > '9' || *end != '\0' || errno || !isfinite(*secs) ||
	    *secs <= 0 || *secs > WAIT_LIMIT_MAX) {
		say("--wait-limit: bad value '%s' (seconds, above 0, at most a week); %s",
		    s, usage_line);
		return -1;
	}
	return 0;
}

/* 0, 1 for --help or --version (printed), or -1 after one line. */
static int parse_options(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "destination", required_argument, NULL, 'd' },
		{ "title", required_argument, NULL, 't' },
		{ "option", required_argument, NULL, 'o' },
		{ "wait-limit", required_argument, NULL, 'w' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:t:o:", longopts, NULL)) != -1) {
		switch (c) {
		case 'd': o->dest = optarg; break;
		case 't': o->title = optarg; break;
		case 'o':
			if (!strchr(optarg, '=')) {
				say("-o: bad option '%s' (NAME=VALUE); %s", optarg, usage_line);
				return -1;
			}
			o->num_options = cupsParseOptions(optarg, o->num_options, &o->options);
			break;
		case 'w':
			if (parse_wait_limit(optarg, &o->wait_limit) < 0)
				return -1;
			break;
		case 'h': help(); return 1;
		case 'V': printf("%s %s\n", PROG, VERSION); return 1;
		case ':':
			say("option '%s' needs a value; %s", argv[optind - 1], usage_line);
			return -1;
		default:
			if (optopt)
				say("unknown option '-%c'; %s", optopt, usage_line);
			else
				say("unknown option '%s'; %s", argv[optind - 1], usage_line);
			return -1;
		}
	}
	if (argc - optind > 1) {
		say("one FILE at most; %s", usage_line);
		return -1;
	}
	o->file = optind < argc ? argv[optind] : NULL;
	if (o->dest && strstr(o->dest, "://")) {
		say("-d: '%s' is a URI: give a queue of the server (%s)", o->dest, cupsServer());
		return -1;
	}
	return 0;
}

/* ---- the server and the queue ------------------------------------------ */

/* Whether HOST is the server libcups is configured for: a local socket's
 * cupsd calls itself localhost. */
static int same_server(const char *host)
{
	const char *server = cupsServer();
	size_t n = strcspn(server, ":");

	if (server[0] == '/' || !strcasecmp(server, "localhost"))
		return !strcasecmp(host, "localhost") || !strcmp(host, "127.0.0.1") ||
		       !strcmp(host, "[::1]") || !strcmp(host, "::1");
	return strlen(host) == n && !strncasecmp(host, server, n);
}

/* The queue's URI must name the configured server: a destination libcups
 * found elsewhere (a DNS-SD printer, another cupsd's queue) would print
 * there, out of this server's sight.  0, or -1 after one line. */
static int check_uri(const cups_dest_t *dest)
{
	const char *uri = cupsGetOption("printer-uri-supported", dest->num_options, dest->options);
	char scheme[32], user[256], host[256], resource[1024];
	int port;

	if (!uri || httpSeparateURI(HTTP_URI_CODING_ALL, uri, scheme, sizeof scheme, user,
				    sizeof user, host, sizeof host, &port, resource,
				    sizeof resource) < HTTP_URI_STATUS_OK) {
		say("%s: no printer URI from %s: refused", dest->name, cupsServer());
		return -1;
	}
	if (!same_server(host)) {
		say("%s: its URI %s is on another server than %s (CUPS_SERVER): refused",
		    dest->name, uri, cupsServer());
		return -1;
	}
	return 0;
}

/* The queue as the server says it is now: a stopped queue would hold the
 * job, a rejecting one refuses it.  0, or -1 after one line. */
static int check_queue(const cups_dest_t *dest)
{
	int n = dest->num_options;
	const char *state = cupsGetOption("printer-state", n, dest->options);
	const char *accepting = cupsGetOption("printer-is-accepting-jobs", n, dest->options);
	const char *reasons = cupsGetOption("printer-state-reasons", n, dest->options);
	const char *message = cupsGetOption("printer-state-message", n, dest->options);

	if (state && atoi(state) == IPP_PSTATE_STOPPED)
		say("%s: the queue is stopped (printer-state-reasons %s; \"%s\")", dest->name,
		    reasons ? reasons : "none", message ? message : "");
	else if (accepting && !strcmp(accepting, "false"))
		say("%s: the queue is rejecting jobs (printer-state-reasons %s; \"%s\")",
		    dest->name, reasons ? reasons : "none", message ? message : "");
	else
		return 0;
	return -1;
}

/* The connection and the queue into *job: 0, or -1 after one line. */
static int open_queue(const struct options *o, struct job *job)
{
	job->http = httpConnect2(cupsServer(), ippPort(), NULL, AF_UNSPEC, cupsEncryption(),
				 1, 30000, NULL);
	if (!job->http) {
		say("%s: cannot reach cupsd at %s: %s", o->dest ? o->dest : "(default)",
		    cupsServer(), cupsLastErrorString());
		return -1;
	}
	job->dest = cupsGetNamedDest(job->http, o->dest, NULL);
	if (!job->dest) {
		say("%s: no such queue on %s: %s", o->dest ? o->dest : "(default)",
		    cupsServer(), cupsLastErrorString());
		return -1;
	}
	snprintf(job->name, sizeof job->name, "%s", job->dest->name);
	if (check_uri(job->dest) < 0 || check_queue(job->dest) < 0)
		return -1;
	job->info = cupsCopyDestInfo(job->http, job->dest);
	if (!job->info) {
		say("%s: cannot ask %s about the queue: %s", job->name, cupsServer(),
		    cupsLastErrorString());
		return -1;
	}
	return 0;
}

/* ---- the job -------------------------------------------------------------- */

/* Cancel the job (unless it has ended) and say why in one line: REASON and
 * what became of the job. */
static void give_up(struct job *job, const char *reason)
{
	if (!job->id) {
		say("%s: %s", job->name, reason);
		return;
	}
	if (cupsCancelDestJob(job->http, job->dest, job->id) == IPP_STATUS_OK)
		say("%s: %s; job cancelled", job->name, reason);
	else
		say("%s: %s; cancelling the job failed: %s", job->name, reason,
		    cupsLastErrorString());
}

/* The document's bytes from FD to the job: 0, or -1 with *reason set. */
static int send_document(struct job *job, int fd, const char *title, char *reason)
{
	static char buf[CHUNK];
	ssize_t n;

	if (cupsStartDestDocument(job->http, job->dest, job->info, job->id, title,
				  CUPS_FORMAT_AUTO, 0, NULL, 1) != HTTP_STATUS_CONTINUE) {
		snprintf(reason, REASON_MAX, "cannot send the document: %s", cupsLastErrorString());
		return -1;
	}
	while ((n = read(fd, buf, sizeof buf)) != 0) {
		if (n < 0 && errno == EINTR && !stop_signal)
			continue;
		if (n < 0) {
			snprintf(reason, REASON_MAX, "reading the report: %s",
				 stop_signal ? strsignal(stop_signal) : strerror(errno));
			return -1;
		}
		if (cupsWriteRequestData(job->http, buf, (size_t)n) != HTTP_STATUS_CONTINUE) {
			snprintf(reason, REASON_MAX, "sending the document: %s",
				 cupsLastErrorString());
			return -1;
		}
	}
	if (stop_signal) {
		snprintf(reason, REASON_MAX, "%s", strsignal(stop_signal));
		return -1;
	}
	if (cupsFinishDestDocument(job->http, job->dest, job->info) != IPP_STATUS_OK) {
		snprintf(reason, REASON_MAX, "the document was refused: %s", cupsLastErrorString());
		return -1;
	}
	return 0;
}

/* The job's state now: its job-state, and its reasons and the printer's
 * message as one text into reason.  0, or -1 with reason saying why not. */
static int job_state(struct job *job, ipp_jstate_t *state, char *reason)
{
	static const char *const wanted[] = {
		"job-state", "job-state-reasons", "job-printer-state-message",
	};
	ipp_t *req = ippNewRequest(IPP_OP_GET_JOB_ATTRIBUTES), *resp;
	const char *uri = cupsGetOption("printer-uri-supported", job->dest->num_options,
					job->dest->options);
	ipp_attribute_t *a;
	size_t len;

	ippAddString(req, IPP_TAG_OPERATION, IPP_TAG_URI, "printer-uri", NULL, uri);
	ippAddInteger(req, IPP_TAG_OPERATION, IPP_TAG_INTEGER, "job-id", job->id);
	ippAddString(req, IPP_TAG_OPERATION, IPP_TAG_NAME, "requesting-user-name", NULL,
		     cupsUser());
	ippAddStrings(req, IPP_TAG_OPERATION, IPP_TAG_KEYWORD, "requested-attributes",
		      3, NULL, wanted);
	resp = cupsDoRequest(job->http, req, "/");
	if (!resp || cupsLastError() > IPP_STATUS_OK_CONFLICTING) {
		snprintf(reason, REASON_MAX, "cannot ask for the job's state: %s",
			 cupsLastErrorString());
		ippDelete(resp);
		return -1;
	}
	a = ippFindAttribute(resp, "job-state", IPP_TAG_ENUM);
	*state = a ? (ipp_jstate_t)ippGetInteger(a, 0) : IPP_JSTATE_PENDING;
	len = (size_t)snprintf(reason, REASON_MAX, "job-state-reasons");
	a = ippFindAttribute(resp, "job-state-reasons", IPP_TAG_KEYWORD);
	for (int i = 0; a && i < ippGetCount(a) && len < REASON_MAX; i++)
		len += (size_t)snprintf(reason + len, REASON_MAX - len, "%s%s", i ? "," : " ",
					ippGetString(a, i, NULL));
	a = ippFindAttribute(resp, "job-printer-state-message", IPP_TAG_TEXT);
	if (a && len < REASON_MAX && *ippGetString(a, 0, NULL))
		snprintf(reason + len, REASON_MAX - len, "; \"%s\"", ippGetString(a, 0, NULL));
	ippDelete(resp);
	return 0;
}

/* Whether the queue is stopped now (1, its reasons and message into
 * reason), 0 if not, -1 with reason saying why it cannot be told.  CUPS
 * 2.4 gives a pending job on a stopped queue no reason of its own. */
static int queue_stopped(struct job *job, char *reason)
{
	static const char *const wanted[] = {
		"printer-state", "printer-state-reasons", "printer-state-message",
	};
	ipp_t *req = ippNewRequest(IPP_OP_GET_PRINTER_ATTRIBUTES), *resp;
	const char *uri = cupsGetOption("printer-uri-supported", job->dest->num_options,
					job->dest->options);
	ipp_attribute_t *a;
	size_t len;
	int stopped;

	ippAddString(req, IPP_TAG_OPERATION, IPP_TAG_URI, "printer-uri", NULL, uri);
	ippAddStrings(req, IPP_TAG_OPERATION, IPP_TAG_KEYWORD, "requested-attributes",
		      3, NULL, wanted);
	resp = cupsDoRequest(job->http, req, "/");
	if (!resp || cupsLastError() > IPP_STATUS_OK_CONFLICTING) {
		snprintf(reason, REASON_MAX, "cannot ask for the queue's state: %s",
			 cupsLastErrorString());
		ippDelete(resp);
		return -1;
	}
	a = ippFindAttribute(resp, "printer-state", IPP_TAG_ENUM);
	stopped = a && ippGetInteger(a, 0) == IPP_PSTATE_STOPPED;
	len = (size_t)snprintf(reason, REASON_MAX, "printer-state-reasons");
	a = ippFindAttribute(resp, "printer-state-reasons", IPP_TAG_KEYWORD);
	for (int i = 0; a && i < ippGetCount(a) && len < REASON_MAX; i++)
		len += (size_t)snprintf(reason + len, REASON_MAX - len, "%s%s", i ? "," : " ",
					ippGetString(a, i, NULL));
	a = ippFindAttribute(resp, "printer-state-message", IPP_TAG_TEXT);
	if (a && len < REASON_MAX)
		snprintf(reason + len, REASON_MAX - len, "; \"%s\"", ippGetString(a, 0, NULL));
	ippDelete(resp);
	return stopped;
}

static double since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) + (now.tv_nsec - t0->tv_nsec) / 1e9;
}

/* Until the job is completed (0), or it cannot be (-1 after one line; the
 * job cancelled where it still could print). */
static int wait_completed(struct job *job, double limit)
{
	static const char *const names[] = {
		[IPP_JSTATE_PENDING] = "pending", [IPP_JSTATE_HELD] = "held",
		[IPP_JSTATE_PROCESSING] = "processing", [IPP_JSTATE_STOPPED] = "stopped",
		[IPP_JSTATE_CANCELED] = "canceled", [IPP_JSTATE_ABORTED] = "aborted",
		[IPP_JSTATE_COMPLETED] = "completed",
	};
	char reason[REASON_MAX], queue[REASON_MAX], line[2 * REASON_MAX + 128];
	struct timespec t0, pause = { 0, POLL_FIRST_NS };
	ipp_jstate_t state;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		if (job_state(job, &state, reason) < 0) {
			give_up(job, reason);
			return -1;
		}
		if (state == IPP_JSTATE_COMPLETED)
			return 0;
		if (state < IPP_JSTATE_PENDING || state > IPP_JSTATE_COMPLETED)
			state = IPP_JSTATE_STOPPED;
		if (state == IPP_JSTATE_ABORTED || state == IPP_JSTATE_CANCELED) {
			say("%s: %s (%s)", job->name, names[state], reason);
			return -1;
		}
		/* A stopped queue holds its pending jobs: waiting is pointless. */
		int stopped = state == IPP_JSTATE_STOPPED || strstr(reason, "printer-stopped");
		if (stopped)
			snprintf(queue, sizeof queue, "printer-stopped");
		else if (state == IPP_JSTATE_PENDING)
			stopped = queue_stopped(job, queue);
		if (stopped < 0) {
			give_up(job, queue);
			return -1;
		}
		if (stopped) {
			snprintf(line, sizeof line, "the queue is stopped: %s (%s; %s)",
				 names[state], reason, queue);
			give_up(job, line);
			return -1;
		}
		if (stop_signal || since(&t0) >= limit) {
			if (stop_signal)
				snprintf(line, sizeof line, "%s while %s (%s)", strsignal(stop_signal),
					 names[state], reason);
			else
				snprintf(line, sizeof line, "not completed within %g s: %s (%s)",
					 limit, names[state], reason);
			give_up(job, line);
			return -1;
		}
		nanosleep(&pause, NULL);        /* (a signal ends it early) */
		if (pause.tv_nsec < POLL_MAX_NS)
			pause.tv_nsec = pause.tv_nsec * 2 > POLL_MAX_NS ? POLL_MAX_NS : pause.tv_nsec * 2;
	}
}

/* The report's descriptor: 0 (stdin) or the file opened; -1 after one line. */
static int open_report(const char *file)
{
	int fd;

	if (!file || !strcmp(file, "-"))
		return 0;
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		say("cannot open '%s': %s", file, strerror(errno));
	return fd;
}

/* TERM, INT and HUP end the wait (and cancel the job) instead of the
 * program: no SA_RESTART, so a sleep or a read returns at once. */
static void catch_signals(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
}

static int print_report(const struct options *o, struct job *job, int fd)
{
	const char *title = o->title;
	char reason[REASON_MAX];

	if (!title)
		title = o->file && strcmp(o->file, "-") ? o->file : "(stdin)";
	if (cupsCreateDestJob(job->http, job->dest, job->info, &job->id, title,
			      o->num_options, o->options) != IPP_STATUS_OK) {
		job->id = 0;
		say("%s: cannot create a job: %s", job->name, cupsLastErrorString());
		return -1;
	}
	snprintf(job->name, sizeof job->name, "%s-%d", job->dest->name, job->id);
	if (send_document(job, fd, title, reason) < 0) {
		give_up(job, reason);
		return -1;
	}
	if (wait_completed(job, o->wait_limit) < 0)
		return -1;
	printf("%s completed\n", job->name);
	return fflush(stdout) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	struct options o = { .wait_limit = WAIT_LIMIT };
	struct job job = { 0 };
	int rc, fd;

	rc = parse_options(argc, argv, &o);
	if (rc != 0)
		return rc > 0 ? 0 : EXIT_USAGE;
	catch_signals();
	fd = open_report(o.file);
	if (fd < 0)
		return EXIT_NOT_PRINTED;
	rc = open_queue(&o, &job) == 0 && print_report(&o, &job, fd) == 0;
	cupsFreeDestInfo(job.info);
	cupsFreeDests(job.dest ? 1 : 0, job.dest);
	cupsFreeOptions(o.num_options, o.options);
	if (job.http)
		httpClose(job.http);
	return rc ? 0 : EXIT_NOT_PRINTED;
}
