/*
 * serve.c - `cowrun serve`: the master and its generations.  See serve.h;
 * a generation's leaders are in leader.c.
 */
#define _GNU_SOURCE
#include "serve.h"
#include "serve_internal.h"
#include "os/signals.h"
#include "run/options_table.h"
#include "os/util.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>


/* ---- options ---- */

static int take_uid(const char *arg, struct serve_config *cfg)
{
	long long v;

	if (cfg->nallow >= SERVE_ALLOW_MAX || parse_ll(arg, 0, 4294967294LL, &v) != 0) {
		warnx_("serve: --allow-uid: bad value '%s' (a numeric uid, at most %d)", arg,
		       SERVE_ALLOW_MAX);
		return -1;
	}
	cfg->allow_uid[cfg->nallow++] = (uid_t)v;
	return 0;
}

/* Serve option o and its value.  Returns 0 or -1 after a message. */
static int take_option(const struct runner_option *o, const char *arg, struct serve_config *cfg)
{
	long long v;
	char *end;
	unsigned long mode;

	switch (o->key) {
	case OPT_KEY_SOCKET:
		cfg->socket_path = arg;
		return 0;
	case OPT_KEY_PIDFILE:
		cfg->pidfile = arg;
		return 0;
	case OPT_KEY_ALLOW_UID:
		return take_uid(arg, cfg);
	case OPT_KEY_SOCKET_MODE:
		mode = strtoul(arg, &end, 8);
		if (*arg == '\0' || *end != '\0' || mode > 0777 || (mode & 0600) != 0600) {
			warnx_("serve: --socket-mode: bad value '%s' (octal, at least 0600)", arg);
			return -1;
		}
		cfg->socket_mode = (unsigned)mode;
		return 0;
	case OPT_KEY_READ_TIMEOUT:
		if (parse_ll(arg, 1, 600000, &v) != 0) {
			warnx_("serve: --read-timeout: bad value '%s': expected 1-600000 ms", arg);
			return -1;
		}
		cfg->read_timeout_ms = (int)v;
		return 0;
	case OPT_KEY_MAX_WORKERS:
		if (parse_ll(arg, 1, 100000, &v) != 0) {
			warnx_("serve: --max-workers: bad value '%s': expected 1-100000", arg);
			return -1;
		}
		cfg->max_workers = (size_t)v;
		return 0;
	}
	return 0;
}

static void serve_usage(void)
{
	fputs("Usage: cowrun serve --socket PATH [SERVE OPTIONS] [RUNNER OPTIONS] WORKLOAD [ARGS]\n"
	      "Run WORKLOAD's setup once and then batches on request (cowrun submit).\n"
	      "Serve options, before the runner options:\n", stdout);
	options_help(stdout, OPT_SERVE);
	fputs("SIGHUP or cowrun submit --reload: a fresh setup; SIGTERM/SIGINT: finish the\n"
	      "running batches and exit (a second one kills them).\n"
	      "Started by systemd with the socket (ListenSequentialPacket=PATH), it serves\n"
	      "that socket and never removes it.  Exit status: 0 stopped by a signal; 255\n"
	      "could not start; 254 stopped serving (no setup succeeded after a lost one).\n",
	      stdout);
}

int serve_parse(int argc, char **argv, struct serve_config *cfg)
{
	int i = 1;

	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		serve_usage();
		return 0;
	}

	memset(cfg, 0, sizeof *cfg);
	cfg->socket_mode = 0600;
	cfg->read_timeout_ms = 2000;
	for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
		char *eq = strchr(argv[i], '='), opt[32];
		const char *arg = eq ? eq + 1 : i + 1 < argc ? argv[i + 1] : NULL;
		snprintf(opt, sizeof opt, "%.*s", eq ? (int)(eq - argv[i]) : (int)strlen(argv[i]),
			 argv[i]);
		const struct runner_option *o = option_by_name(opt + 2, OPT_SERVE);
		if (o == NULL)
			break;   /* a runner option: the rest is cowrun's */
		if (arg == NULL) {
			warnx_("serve: option '%s' needs a value", opt);
			return -1;
		}
		if (take_option(o, arg, cfg) != 0)
			return -1;
		if (eq == NULL)
			i++;
	}
	if (cfg->socket_path == NULL || cfg->socket_path[0] == '\0') {
		warnx_("serve: --socket PATH is required (before the runner options)");
		return -1;
	}
	if (strlen(cfg->socket_path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
		warnx_("serve: socket path '%s' is too long for a Unix socket", cfg->socket_path);
		return -1;
	}
	return i;
}

void serve_log(const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	fprintf(stderr, "cowrun serve[%ld]: %s\n", (long)getpid(), line);
}

/* ---- signals: flags and a self-pipe, for master and generation ---- */

static volatile sig_atomic_t got_term, got_hup, got_chld;
static int wake[2] = { -1, -1 };

static void on_serve_signal(int sig)
{
	int saved = errno;

	if (sig == SIGTERM || sig == SIGINT)
		got_term++;
	else if (sig == SIGHUP)
		got_hup++;
	else if (sig == SIGCHLD)
		got_chld = 1;
	if (write(wake[1], "", 1) < 0) {
	}
	errno = saved;
}

int serve_signals_init(void)
{
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGCHLD };

	serve_signals_close();
	got_term = got_hup = got_chld = 0;
	if (signals_route(wake, on_serve_signal, sigs, sizeof sigs / sizeof sigs[0]) != 0)
		return -1;
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

void serve_signals_close(void)
{
	signals_close_pipe(wake);
}

int serve_wake_fd(void) { return wake[0]; }
int serve_terms(void) { return got_term; }

/* A flag read and cleared in one instruction: a signal that lands
 * between a plain read and the store of 0 would be lost (issue 32: a
 * lost SIGCHLD left a generation unreaped, and its master waiting for it
 * for good). */
static int take_flag(volatile sig_atomic_t *flag)
{
	return __atomic_exchange_n(flag, 0, __ATOMIC_SEQ_CST);
}

int serve_take_hup(void)
{
	return take_flag(&got_hup);
}

int serve_take_chld(void)
{
	char buf[64];

	while (read(wake[0], buf, sizeof buf) > 0)
		;
	return take_flag(&got_chld);
}

/* ---- the socket ---- */

/* The socket's directory must be the user's own and closed to others (a
 * fresh private directory, not /tmp itself), so nobody else can replace
 * the socket or its name.  Returns 0 or -1 after a message. */
static int check_socket_dir(const char *path)
{
	char copy[PATH_MAX];
	struct stat st;

	snprintf(copy, sizeof copy, "%s", path);
	const char *dir = dirname(copy);
	if (lstat(dir, &st) != 0) {
		warnx_("serve: cannot use socket directory '%s': %s", dir, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		warnx_("serve: socket directory '%s' must be a directory of your own that others "
		       "cannot write in (make a private one: mkdir -m 700)", dir);
		return -1;
	}
	return 0;
}

/* A socket file already at the path: a live server's (refused) or a dead
 * one's (removed). */
static int clear_stale_socket(const char *path, const struct sockaddr_un *addr)
{
	struct stat st;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISSOCK(st.st_mode)) {
		warnx_("serve: '%s' exists and is not a socket", path);
		return -1;
	}
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	int live = fd >= 0 && connect(fd, (const struct sockaddr *)addr, sizeof *addr) == 0;
	if (fd >= 0)
		close(fd);
	if (live) {
		warnx_("serve: another server is listening on '%s'", path);
		return -1;
	}
	return unlink(path);
}

int serve_listen(const struct serve_config *cfg)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	int fd = -1;

	snprintf(addr.sun_path, sizeof addr.sun_path, "%s", cfg->socket_path);
	if (check_socket_dir(cfg->socket_path) != 0 ||
	    clear_stale_socket(cfg->socket_path, &addr) != 0)
		return -1;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	mode_t old = umask(0177);
	int rc = fd < 0 ? -1 : bind(fd, (struct sockaddr *)&addr, sizeof addr);
	umask(old);
	if (rc == 0 && cfg->socket_mode != 0600)
		rc = chmod(cfg->socket_path, cfg->socket_mode);
	if (rc == 0)
		rc = listen(fd, 128);
	if (rc != 0) {
		warnx_("serve: cannot listen on '%s': %s", cfg->socket_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}
