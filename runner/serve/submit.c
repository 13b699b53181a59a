/*
 * submit.c - `cowrun submit`: the client of `cowrun serve`.  It opens its
 * own output directory (created if missing), its joblog and journal, and
 * creates the temporary files of --save-results, --timeline and --stats
 * (unnamed, in their final names' directories), and passes them, with its
 * standard output and error, beside the request; the server writes
 * through them.  The batch's reply says which side files are whole, as a
 * direct run would keep them (saved results of a complete batch, the
 * timeline of one that started, the stats written): submit names those
 * with their final names itself; the others go, and all of them go on an
 * error, the server gone, or submit interrupted or killed: a final name
 * holds a complete file or nothing.  The
 * request says which side files lie in the output directory, for the
 * batch to refuse one under a report's name.  It exits with the batch's
 * status, as cowrun would.  See serve.h.
 */
#define _GNU_SOURCE
#include "serve.h"
#include "run/options_table.h"
#include "run/resume.h"
#include "run/sidefiles.h"
#include "os/util.h"
#include "os/fileops.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

enum { EXIT_LOST = 254, EXIT_BAD = 255 };

_Static_assert(SIDEFILES_IN_OUTDIR_MAX <= PROTO_FIELD_MAX, "PF_IN_OUTDIR always fits");

/* Its options' rows, their names from the option table: the options
 * with these keys side by side, then what they do for submit. */
static const struct {
	int keys[8];
	const char *text;
} usage_rows[] = {
	{ { 'j' }, "workers for this batch (the server caps the total)" },
	{ { 'o' }, "where report files go (default: out; created here)" },
	{ { 'T', 'S', 'y', 'H', 't', 'k', 'D' }, "as for cowrun" },
	{ { 'J' }, "as for cowrun (+FILE appends); opened here, with\n"
		   "FILE.res, and passed to the server" },
	{ { 'r', 'f' }, "as for cowrun (with --joblog)" },
	{ { 'R', 'L', 'P' }, "as for cowrun: created here as a temporary file,\n"
			     "written by the server, named here when whole (as\n"
			     "cowrun keeps them), else dropped" },
	{ { 's' }, "as for cowrun (default: the server's --seed); the\n"
		   "hash seed of a Python script is the server's" },
	{ { 'e', 'd', 'x' }, "as for cowrun; CMD runs as you: a server that cannot\n"
			     "act as you (not root, another user) refuses it" },
	{ { OPT_KEY_STATUS }, "list the server's generations and running batches" },
	{ { OPT_KEY_RELOAD }, "start a new generation (a fresh setup); wait for it" },
};

static void submit_usage(void)
{
	fputs("Usage: cowrun submit --socket PATH [OPTIONS]\n"
	      "Run a batch on a `cowrun serve` server (its workload, its setup) and exit\n"
	      "with the batch's status, as cowrun would.\n", stdout);
	for (size_t i = 0; i < sizeof usage_rows / sizeof usage_rows[0]; i++)
		options_help_row(stdout, usage_rows[i].keys, 21, usage_rows[i].text);
}

/* The side files submit creates under a temporary name: the request's
 * fields, in the order their descriptors are passed. */
static const enum proto_field temp_fields[] = { PF_SAVE, PF_TIMELINE, PF_STATS };
#define NTEMP (sizeof temp_fields / sizeof temp_fields[0])

/* A side file's temporary file: unnamed where the file system has
 * O_TMPFILE, else named beside its final name. */
struct side_temp {
	int fd;                 /* -1: none */
	char name[PATH_MAX];    /* "": unnamed */
};

/* What submit created for a run request by its user's name, taken back
 * when the server refuses the request (no task ran): a refused run leaves
 * the disk as it found it, as a direct run does. */
struct made {
	char outdir[PATH_MAX];   /* the first level of -o's path made here, "" none */
	int joblog, journal;     /* created here (O_EXCL succeeded) */
};

struct submit_args {
	const char *socket_path;
	struct proto_request rq;
	struct side_temp temp[NTEMP];
	struct made made;
};

/* SIGTERM, SIGINT, SIGHUP while a batch runs: remove the temporary files
 * and go the way the signal would have taken us. */
static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

/* Field f of the request, from option --name: given once, and no longer
 * than a field carries (a command can be).  Returns 0 or -1 after a
 * message. */
static int set_field(struct proto_request *rq, enum proto_field f, const char *name,
		     const char *value)
{
	if (rq->present & (1u << f)) {
		warnx_("submit: --%s given twice", name);
		return -1;
	}
	if (proto_set(rq, f, value) != 0) {
		warnx_("submit: --%s: %zu bytes, longer than a served batch takes (%d bytes)",
		       name, strlen(value), PROTO_FIELD_MAX - 1);
		return -1;
	}
	return 0;
}

/* Option o's field of the request: one with an argument given once;
 * one without, its field's text, the stronger of two winning ("2"
 * --resume-failed over "1" --resume, in either order).  Returns 0 or -1
 * after a message. */
static int set_option_field(struct proto_request *rq, const struct runner_option *o,
			    const char *arg)
{
	enum proto_field f = (enum proto_field)o->wire;

	if (o->wire_value == NULL)
		return set_field(rq, f, o->name, arg);
	if (!(rq->present & (1u << f)) || strcmp(o->wire_value, rq->field[f]) > 0)
		proto_set(rq, f, o->wire_value);
	return 0;
}

int submit_parse(int argc, char **argv, struct proto_request *rq, const char **socket_path)
{
	/* Built from the option table, once. */
	static struct option longopts[OPTIONS_MAX];
	static char optstring[OPTIONS_MAX];
	int c;

	if (longopts[0].name == NULL)
		options_getopt(OPT_SUBMIT, longopts, optstring, sizeof optstring);
	memset(rq, 0, sizeof *rq);
	rq->type = PROTO_RUN;
	*socket_path = NULL;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, optstring, longopts, NULL)) != -1) {
		const struct runner_option *o = option_by_key(c);
		if (c == OPT_KEY_SOCKET)
			*socket_path = optarg;
		else if (c == OPT_KEY_STATUS)
			rq->type = PROTO_STATUS;
		else if (c == OPT_KEY_RELOAD)
			rq->type = PROTO_RELOAD;
		else if (c == 'h') {
			submit_usage();
			return -1;
		} else if (o != NULL && o->wire != PF_NONE) {
			if (set_option_field(rq, o, optarg) != 0)
				return EXIT_BAD;
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
	if (*socket_path == NULL) {
		warnx_("submit: --socket PATH is required");
		return EXIT_BAD;
	}
	if ((rq->present & (1u << PF_RESUME)) && !(rq->present & (1u << PF_JOBLOG))) {
		warnx_("--resume needs the --joblog FILE of the run to resume");
		return EXIT_BAD;
	}
	return 0;
}

static int parse_submit(int argc, char **argv, struct submit_args *a)
{
	memset(a, 0, sizeof *a);
	for (size_t i = 0; i < NTEMP; i++)
		a->temp[i].fd = -1;
	return submit_parse(argc, argv, &a->rq, &a->socket_path);
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

/* The output directory, created if missing (the first level made noted
 * in made), opened here with the client's own rights.  Returns it or -1
 * after a message. */
static int open_outdir(const char *dir, char *made, size_t size)
{
	int fd = -1;

	if (make_dirs_noting(dir, made, size) == 0)
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		warnx_("submit: cannot create output directory '%s': %s", dir, strerror(errno));
	return fd;
}

/* open(path, flags | O_CREAT): *made says whether this call created it
 * (O_EXCL first; an existing file, or a link to one, opened as it is). */
static int open_noting(const char *path, int flags, int *made)
{
	int fd = open(path, flags | O_CREAT | O_EXCL, 0666);

	*made = fd >= 0;
	if (fd < 0 && errno == EEXIST)
		fd = open(path, flags | O_CREAT, 0666);
	return fd;
}

/* Remove path if this submit created it (made) and it is still the
 * empty file fd: the batch, which writes a header first, never had it. */
static void remove_if_made_empty(const char *path, int fd, int made)
{
	struct stat st, named;

	if (made && fd >= 0 && fstat(fd, &st) == 0 && st.st_size == 0 &&
	    lstat(path, &named) == 0 && named.st_dev == st.st_dev && named.st_ino == st.st_ino)
		unlink(path);
}

/* --joblog: the joblog (not truncated: the batch does that once it has
 * its lock) and its journal, opened here with the client's own rights.
 * Returns 0 or -1 after a message. */
static int open_joblog(const char *arg, int fds[2], struct made *made)
{
	char journal[PATH_MAX];
	const char *path = arg[0] == '+' ? arg + 1 : arg;

	resume_journal_path(arg, journal, sizeof journal);
	fds[1] = -1;
	fds[0] = open_noting(path, O_RDWR | O_CLOEXEC, &made->joblog);
	if (fds[0] >= 0 &&
	    (fds[1] = open_noting(journal, O_RDWR | O_NOFOLLOW | O_CLOEXEC, &made->journal)) >= 0)
		return 0;
	warnx_("submit: --joblog: cannot open '%s': %s", fds[0] < 0 ? path : journal,
	       strerror(errno));
	if (fds[0] >= 0) {
		remove_if_made_empty(path, fds[0], made->joblog);
		close(fds[0]);
	}
	return -1;
}

/* A run request's side files as a direct run checks them (none a
 * directory, no two naming one file), none that is renamed into place a
 * device, a pipe or a socket; and which of them lie in the output
 * directory (PF_IN_OUTDIR), found here, where their names and the output
 * directory's mean what the user meant: the server, which knows the task
 * names, refuses one under a report's name.  It takes this client's word
 * for it: a client that lies only lets a report overwrite its own file.
 * Touches no file.  Returns 0 or -1 after a message. */
static int check_side_files(struct proto_request *rq)
{
	const struct sidefiles_paths paths = {
		.save = (rq->present & (1u << PF_SAVE)) ? rq->field[PF_SAVE] : NULL,
		.timeline = (rq->present & (1u << PF_TIMELINE)) ? rq->field[PF_TIMELINE] : NULL,
		.joblog = (rq->present & (1u << PF_JOBLOG)) ? rq->field[PF_JOBLOG] : NULL,
		.stats = (rq->present & (1u << PF_STATS)) ? rq->field[PF_STATS] : NULL,
	};
	struct sidefiles files;
	char names[SIDEFILES_IN_OUTDIR_MAX];
	struct stat st;

	sidefiles_init(&files, &paths);
	if (sidefiles_check(&files) != 0)
		return -1;
	if (paths.stats && stat(paths.stats, &st) == 0 && !S_ISREG(st.st_mode)) {
		warnx_("--stats: '%s' is not a regular file: it would be replaced", paths.stats);
		return -1;
	}
	if (!paths.save && !paths.timeline && !paths.joblog && !paths.stats)
		return 0;
	sidefiles_in_outdir(&files, rq->field[PF_OUTDIR], names, sizeof names);
	return proto_set(rq, PF_IN_OUTDIR, names);   /* fits: the _Static_assert above */
}

/* Close the temporary files, removing those that have a name. */
static void remove_temps(struct submit_args *a)
{
	for (size_t i = 0; i < NTEMP; i++) {
		struct side_temp *t = &a->temp[i];
		if (t->fd >= 0)
			close(t->fd);
		if (t->name[0])
			unlink(t->name);
		t->fd = -1;
		t->name[0] = '\0';
	}
}

/* The temporary file of the side file `final`: unnamed first, so that a
 * submit killed by SIGKILL, which no handler sees, leaves nothing (the
 * kernel drops the file with its last descriptor, the server's included).
 * Where the kernel or the file system has no O_TMPFILE, or /proc is
 * missing, a named one beside the final name (O_EXCL|O_NOFOLLOW, a random
 * part): the signals submit catches still remove it, SIGKILL leaves it.
 * Returns the descriptor, or -1 with errno. */
static int create_temp(struct side_temp *t, const char *final)
{
	t->name[0] = '\0';
	t->fd = create_unnamed_beside(final, O_WRONLY, 0666);
	if (t->fd >= 0 || (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL))
		return t->fd;
	t->fd = create_temp_beside_at(AT_FDCWD, final, t->name, sizeof t->name, 0666);
	return t->fd;
}

/* Create the temporary file of each side file given.  Returns 0, or -1
 * after a message (none left). */
static int create_temps(struct submit_args *a)
{
	for (size_t i = 0; i < NTEMP; i++) {
		enum proto_field f = temp_fields[i];
		if (!(a->rq.present & (1u << f)) || create_temp(&a->temp[i], a->rq.field[f]) >= 0)
			continue;
		warnx_("cannot create '%s': %s", a->temp[i].name[0] ? a->temp[i].name : a->rq.field[f],
		       strerror(errno));
		a->temp[i].name[0] = '\0';
		remove_temps(a);
		return -1;
	}
	return 0;
}

/* Add the temporary files' descriptors (still submit's) to fds[n...], in
 * the request's order.  Returns the new count. */
static size_t add_temp_fds(const struct submit_args *a, int *fds, size_t n)
{
	for (size_t i = 0; i < NTEMP; i++)
		if (a->temp[i].fd >= 0)
			fds[n++] = a->temp[i].fd;
	return n;
}

/* A whole temporary file under its final name, in place of what is
 * there.  Returns 0 or -1 with errno. */
static int keep_temp(struct side_temp *t, const char *final)
{
	if (!t->name[0])
		return name_unnamed(t->fd, final);
	/* commit_rename_at() removes the temporary if the rename fails. */
	int rc = commit_rename_at(AT_FDCWD, t->name, final);
	t->name[0] = '\0';
	return rc;
}

/* The batch ended with `status`, its side files whole or not: give each
 * temporary file its final name, or drop them all.  Returns the exit
 * status: 254 if one could not be named. */
static int settle_temps(struct submit_args *a, int status, unsigned whole)
{
	int rc = status;

	for (size_t i = 0; i < NTEMP; i++) {
		const char *final = a->rq.field[temp_fields[i]];
		if (a->temp[i].fd < 0 || !(whole & (1u << i)) || status < 0 || status > 101)
			continue;
		if (keep_temp(&a->temp[i], final) != 0) {
			warnx_("cannot save '%s': %s", final, strerror(errno));
			rc = EXIT_LOST;
		}
	}
	remove_temps(a);
	return rc;
}

/* Wait for the one reply (a batch may take hours) and act on it;
 * *whole: the side files the reply says are whole (bit i: temp_fields[i]). */
static int await_reply(int sock, unsigned *whole)
{
	unsigned char buf[PROTO_MSG_MAX];
	struct proto_reply rp;
	const char *why;
	int fds[PROTO_FDS_MAX];
	size_t nfds;

	*whole = 0;
	for (;;) {
		struct pollfd pfd = { sock, POLLIN, 0 };
		if (stop_signal)
			return 128 + stop_signal;
		if (poll(&pfd, 1, -1) < 0 && errno != EINTR)
			break;
		if (stop_signal)
			return 128 + stop_signal;
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
		*whole = rp.type == PROTO_EXIT ? proto_whole_parse(rp.text) : 0;
		return rp.status & 0xff;
	}
	warnx_("submit: the server closed the connection without a result");
	return EXIT_LOST;
}

static void catch_stops(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop;   /* no SA_RESTART: poll() returns */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

/* Close the descriptors open_run_files() opened (fds[2..nfds)); when no
 * task ran (status 255), take back what it created: the joblog and journal
 * if still empty, the output directory and the parents it made if empty.
 * The joblog and journal only under the joblog's lock: another submit's
 * batch that opened them meanwhile then finds them removed once it has
 * the lock, and says so (sidefiles_lock()); one holding it keeps them. */
static void close_run_files(struct submit_args *a, int *fds, size_t nfds, int status)
{
	const char *joblog = a->rq.field[PF_JOBLOG];

	if (status == EXIT_BAD && nfds == 5 && flock(fds[3], LOCK_EX | LOCK_NB) == 0) {
		char journal[PATH_MAX];
		resume_journal_path(joblog, journal, sizeof journal);
		remove_if_made_empty(joblog[0] == '+' ? joblog + 1 : joblog, fds[3], a->made.joblog);
		remove_if_made_empty(journal, fds[4], a->made.journal);
	}
	for (size_t i = 2; i < nfds; i++)
		close(fds[i]);
	if (status == EXIT_BAD)
		remove_made_dirs(a->rq.field[PF_OUTDIR], a->made.outdir);
}

/* A run request's descriptors after standard output and error: the
 * output directory, the joblog and its journal (fds[2..*nfds), the
 * caller's to close), and the temporary side files (a->temp).  Returns 0
 * or -1 after a message (nothing left open or created). */
static int open_run_files(struct submit_args *a, int *fds, size_t *nfds)
{
	*nfds = 2;
	if ((fds[2] = open_outdir(a->rq.field[PF_OUTDIR], a->made.outdir, sizeof a->made.outdir)) < 0)
		goto fail;   /* mkdir -p may have made parents */
	*nfds = 3;
	if ((a->rq.present & (1u << PF_JOBLOG)) &&
	    open_joblog(a->rq.field[PF_JOBLOG], fds + 3, &a->made) == 0)
		*nfds = 5;
	else if (a->rq.present & (1u << PF_JOBLOG))
		goto fail;
	if (create_temps(a) == 0)
		return 0;
fail:
	close_run_files(a, fds, *nfds, EXIT_BAD);
	*nfds = 0;
	return -1;
}

int submit_main(int argc, char **argv)
{
	struct submit_args a;
	unsigned char buf[PROTO_MSG_MAX];
	int rc = parse_submit(argc, argv, &a), sock;
	unsigned whole = 0;
	int fds[PROTO_FDS_MAX] = { STDOUT_FILENO, STDERR_FILENO };
	size_t nfds = 0;

	if (rc != 0)
		return rc < 0 ? 0 : rc;
	signal(SIGPIPE, SIG_IGN);
	/* The output directory named in every run request: the batch's
	 * messages name the client's, not the server's default. */
	if (a.rq.type == PROTO_RUN && !(a.rq.present & (1u << PF_OUTDIR)))
		proto_set(&a.rq, PF_OUTDIR, "out");
	if (a.rq.type == PROTO_RUN && check_side_files(&a.rq) != 0)
		return EXIT_BAD;
	long len = proto_encode_request(&a.rq, buf, sizeof buf);
	if (len < 0) {
		warnx_("submit: the request is too long: its options take more than the %d bytes "
		       "a request holds", PROTO_MSG_MAX);
		return EXIT_BAD;
	}
	if ((sock = connect_to(a.socket_path)) < 0) {
		warnx_("submit: cannot connect to '%s': %s", a.socket_path, strerror(errno));
		return EXIT_BAD;
	}
	if (a.rq.type == PROTO_RUN) {
		catch_stops();
		if (open_run_files(&a, fds, &nfds) != 0) {
			close(sock);
			return EXIT_BAD;
		}
	}
	fflush(NULL);
	/* A refused client (its uid) may find the connection closed: the
	 * reply that says why waits on it all the same. */
	int sent = proto_send(sock, buf, (size_t)len, fds, add_temp_fds(&a, fds, nfds)) == 0 ||
		   errno == EPIPE;
	if (!sent) {
		warnx_("submit: cannot send the request: %s", strerror(errno));
		rc = EXIT_LOST;
	} else
		rc = await_reply(sock, &whole);
	close_run_files(&a, fds, nfds, sent ? rc : EXIT_BAD);   /* not sent: no task ran */
	/* Closing the connection cancels a batch still running. */
	close(sock);
	rc = settle_temps(&a, rc, stop_signal ? 0 : whole);
	fflush(stdout);
	if (stop_signal) {
		signal(stop_signal, SIG_DFL);
		raise(stop_signal);
	}
	return rc;
}
