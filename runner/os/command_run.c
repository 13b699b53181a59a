/*
 * command_run.c - running a parsed command (command.c): spawned through
 * cowrun-supervise, its standard error kept in an unnamed file, waited
 * for or taken down.  See command_run.h.
 */
#define _GNU_SOURCE
#include "command_run.h"
#include "command_internal.h"
#include "spawnattr.h"
#include "signals.h"
#include "util.h"
#include "process.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* The most of a successful command's stderr copied to the caller's. */
#define STDERR_COPY_MAX (64 * 1024)
/* A failed command's last line is looked for in this much of its end. */
#define STDERR_TAIL 4096
/* ... and cut to this many bytes. */
#define LAST_LINE_MAX 200

/* ---- running ---- */

/* An unnamed file for the child's stderr: a file, not a pipe, so the
 * child never blocks on it while the caller writes its stdin.  In
 * $TMPDIR, else in memory: the file is only a means, and a run should
 * not fail for want of O_TMPFILE (or a usable $TMPDIR).  -1 with errno. */
static int stderr_file(void)
{
	const char *dir = getenv("TMPDIR");
	int fd = open(dir && *dir ? dir : "/tmp", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);

	if (fd < 0)
		fd = memfd_create("cowrun-stderr", MFD_CLOEXEC);
	return fd;
}

/* The supervisor's descriptors: 0, 1 (COMMAND_OUT_CAPTURE: the stderr
 * file too), 2, and `report` as 3; nothing else (the caller's, CLOEXEC or
 * not, another thread's pipe to its own child).  Returns 0 or an error
 * number. */
static int spawn_files(posix_spawn_file_actions_t *fa, int in_fd, int out_fd, int err_fd,
		       int report)
{
	int err = posix_spawn_file_actions_init(fa);

	if (err)
		return err;
	if (out_fd == COMMAND_OUT_CAPTURE)
		out_fd = err_fd;
	if ((in_fd >= 0 && (err = posix_spawn_file_actions_adddup2(fa, in_fd, 0)) != 0) ||
	    (out_fd >= 0 && (err = posix_spawn_file_actions_adddup2(fa, out_fd, 1)) != 0) ||
	    (err = posix_spawn_file_actions_adddup2(fa, err_fd, 2)) != 0 ||
	    (err = posix_spawn_file_actions_adddup2(fa, report, 3)) != 0 ||
	    (err = posix_spawn_file_actions_addclosefrom_np(fa, 4)) != 0)
		posix_spawn_file_actions_destroy(fa);
	return err;
}

/* ---- the supervisor ---- */

/* Where bin/cowrun-supervise is: beside the running binary (a checkout's
 * bin/), else where make install put it, relative to the binary's
 * directory (COWRUN_SUPERVISE_RELPATH: bindir to libexecdir), so a staged
 * or moved tree still finds its own.  Looked up once. */
#ifndef COWRUN_SUPERVISE_RELPATH
#define COWRUN_SUPERVISE_RELPATH "../libexec/cowrun/cowrun-supervise"
#endif
#define SUPERVISE_NAME "cowrun-supervise"

static char supervisor[PATH_MAX];
static char supervisor_missing[PATH_MAX + 64];
static pthread_once_t supervisor_once = PTHREAD_ONCE_INIT;

static void find_supervisor(void)
{
	char exe[PATH_MAX], path[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

	if (supervisor[0])
		return;   /* command_set_supervisor() */
	if (n <= 0) {
		snprintf(supervisor_missing, sizeof supervisor_missing,
			 "cannot find " SUPERVISE_NAME ": /proc/self/exe: %s", strerror(errno));
		return;
	}
	exe[n] = '\0';
	*strrchr(exe, '/') = '\0';
	const char *tries[] = { SUPERVISE_NAME, COWRUN_SUPERVISE_RELPATH };
	for (size_t i = 0; i < sizeof tries / sizeof *tries; i++) {
		int len = snprintf(path, sizeof path, "%s/%s", exe, tries[i]);
		if (len > 0 && (size_t)len < sizeof path && access(path, X_OK) == 0) {
			memcpy(supervisor, path, (size_t)len + 1);
			return;
		}
	}
	snprintf(supervisor_missing, sizeof supervisor_missing,
		 "no " SUPERVISE_NAME " in %.*s or %.*s/" COWRUN_SUPERVISE_RELPATH " (make, or make install)",
		 PATH_MAX / 4, exe, PATH_MAX / 4, exe);
}

void command_set_supervisor(const char *path)
{
	snprintf(supervisor, sizeof supervisor, "%s", path);
}

/* A fork-mode worker's running supervisor, for the pool (command.h). */
static _Atomic int *published;

void command_publish_to(_Atomic int *where)
{
	published = where;
}

static void publish(pid_t pid)
{
	if (published)
		atomic_store(published, (int)pid);
}

/*
 * posix_spawn() of the supervisor with argv after its own arguments:
 * `FD PPID GRACE_MS`, the write end of `report` as FD 3.  In a process
 * group of its own, so no signal for the caller's group (a terminal's
 * ^C, the pool's SIGKILL of a worker's group) takes it before it has
 * taken its command down.  Returns 0 or an error number.
 */
static int spawn(char **argv, int in_fd, int out_fd, int err_fd, int report, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	char fd_arg[16], ppid_arg[24], grace_arg[24];
	size_t n = 0;
	int err;

	pthread_once(&supervisor_once, find_supervisor);
	if (!supervisor[0])
		return ENOENT;
	while (argv[n])
		n++;
	char **args = malloc((n + 5) * sizeof *args);
	if (args == NULL)
		return ENOMEM;
	snprintf(fd_arg, sizeof fd_arg, "3");
	snprintf(ppid_arg, sizeof ppid_arg, "%ld", (long)getpid());
	snprintf(grace_arg, sizeof grace_arg, "%d", COMMAND_KILL_GRACE_MS);
	args[0] = supervisor;
	args[1] = fd_arg;
	args[2] = ppid_arg;
	args[3] = grace_arg;
	memcpy(args + 4, argv, (n + 1) * sizeof *args);
	err = spawnattr_own_group_default_signals(&attr);
	if (err == 0) {
		err = spawn_files(&fa, in_fd, out_fd, err_fd, report);
		if (err == 0) {
			err = posix_spawn(pid, supervisor, &fa, &attr, args, environ);
			posix_spawn_file_actions_destroy(&fa);
		}
		posix_spawnattr_destroy(&attr);
	}
	free(args);
	return err;
}

/* What the supervisor says of its command's start: 0, or the errno of a
 * start that failed (EOF: started, or the supervisor died first). */
static int start_result(int fd)
{
	int err = 0;
	ssize_t n;

	while ((n = read(fd, &err, sizeof err)) < 0 && errno == EINTR)
		;
	return n == (ssize_t)sizeof err && err > 0 ? err : 0;
}

static const char *error_text(int err, char *buf, size_t size)
{
	return strerror_r(err, buf, size); /* GNU: thread-safe, returns the text */
}

/* The pipe the supervisor reports its command's start on: both ends
 * close-on-exec, the write end above 3 (dup2 onto 3 must not be a no-op
 * that leaves its close-on-exec flag set).  Returns 0 or an error number. */
static int report_pipe(int fds[2])
{
	if (pipe2(fds, O_CLOEXEC) != 0)
		return errno;
	if (fds[1] <= 3) {
		int moved = fcntl(fds[1], F_DUPFD_CLOEXEC, 4);
		int err = errno;
		close(fds[1]);
		if (moved < 0) {
			close(fds[0]);
			return err;
		}
		fds[1] = moved;
	}
	return 0;
}

int command_start(const struct command *c, const struct command_values *v, int in_fd,
		  int out_fd, struct command_run *run, char *why, size_t size)
{
	char ebuf[64];
	int err, report[2];

	memcpy(run->label, command_label(c), sizeof run->label);
	run->tag = v->tag;
	run->pid = -1;
	run->stderr_fd = stderr_file();
	if (run->stderr_fd < 0) {
		snprintf(why, size, "cannot run '%s': no file for its standard error: %s",
			 run->label, error_text(errno, ebuf, sizeof ebuf));
		return -1;
	}
	char **argv = command_argv(c, v);
	err = argv ? report_pipe(report) : ENOMEM;
	if (err == 0) {
		/* The signals that end a worker wait until the pool can know its
		 * supervisor (published), which is then its child to reap. */
		sigset_t ending, before;
		sigemptyset(&ending);
		sigaddset(&ending, SIGTERM);
		sigaddset(&ending, SIGHUP);
		pthread_sigmask(SIG_BLOCK, &ending, &before);
		err = spawn(argv, in_fd, out_fd, run->stderr_fd, report[1], &run->pid);
		if (err == 0)
			publish(run->pid);
		pthread_sigmask(SIG_SETMASK, &before, NULL);
		close(report[1]);
		if (err == 0 && (err = start_result(report[0])) != 0) {
			reap_child(run->pid, NULL);
			publish(0);
		}
		close(report[0]);
		if (err == ENOENT && !supervisor[0]) {
			snprintf(why, size, "cannot run '%s': %s", run->label, supervisor_missing);
			goto failed;
		}
	}
	free(argv);
	argv = NULL;
	if (err) {
		snprintf(why, size, "cannot run '%s': %s", run->label,
			 error_text(err, ebuf, sizeof ebuf));
		goto failed;
	}
	return 0;
failed:
	free(argv);
	close(run->stderr_fd);
	run->stderr_fd = -1;
	run->pid = -1;
	return -1;
}

/* Read up to len bytes at offset off (EINTR and short reads retried).
 * Returns the count read, or -1. */
static ssize_t read_at(int fd, char *buf, size_t len, off_t off)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = pread(fd, buf + got, len - got, off + (off_t)got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

static off_t file_size(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 ? st.st_size : -1;
}

static int is_space(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n';
}

/* The last non-empty line of the file, at most LAST_LINE_MAX bytes,
 * control characters as '?', in out; "" if none (or unreadable). */
static void last_line(int fd, char *out, size_t size)
{
	char buf[STDERR_TAIL];
	off_t end = file_size(fd);
	off_t from = end > STDERR_TAIL ? end - STDERR_TAIL : 0;
	ssize_t n = end > 0 ? read_at(fd, buf, (size_t)(end - from), from) : 0;
	ssize_t start;

	out[0] = '\0';
	while (n > 0 && is_space(buf[n - 1]))
		n--;
	for (start = n; start > 0 && buf[start - 1] != '\n'; start--)
		if ((unsigned char)buf[start - 1] < 0x20 || buf[start - 1] == 0x7f)
			buf[start - 1] = '?'; /* a NUL too: it would end the message */
	if (n <= 0)
		return;
	size_t len = command_utf8_prefix(buf + start, (size_t)(n - start), LAST_LINE_MAX);
	snprintf(out, size, "%.*s", (int)len, buf + start);
}

/* "exited with status 3", "was killed by signal 9 (Killed)". */
static void describe_end(int status, char *buf, size_t size)
{
	if (WIFEXITED(status)) {
		snprintf(buf, size, "exited with status %d", WEXITSTATUS(status));
	} else if (WIFSIGNALED(status)) {
		const char *descr = sigdescr_np(WTERMSIG(status)); /* thread-safe */
		snprintf(buf, size, "was killed by signal %d (%s)%s", WTERMSIG(status),
			 descr ? descr : "unknown signal",
			 WCOREDUMP(status) ? ", core dumped" : "");
	} else {
		describe_wait_status(status, buf, size);
	}
}

/* The n bytes at buf, each line prefixed "TAG: ", into a new buffer (its
 * length in *len), or NULL. */
static char *tagged(const char *buf, size_t n, const char *tag, size_t *len)
{
	size_t taglen = strlen(tag), lines = 1;

	for (size_t i = 0; i + 1 < n; i++)
		lines += buf[i] == '\n';
	char *out = malloc(n + lines * (taglen + 2) + 1);
	if (out == NULL)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (i == 0 || buf[i - 1] == '\n') {
			memcpy(out + o, tag, taglen);
			memcpy(out + o + taglen, ": ", 2);
			o += taglen + 2;
		}
		out[o++] = buf[i];
	}
	*len = o;
	return out;
}

/* What a successful command wrote to its captured output (its stderr,
 * and its stdout where captured), to the caller's stderr in one write
 * (lines of several workers do not interleave), each line tagged with
 * the task's name when the caller gave one: the first STDERR_COPY_MAX
 * bytes, ended by a newline, and a note of the rest.  Best effort: a
 * failure to read or to write loses only warnings. */
static void copy_stderr(const struct command_run *run)
{
	off_t size = file_size(run->stderr_fd);
	size_t len = size > STDERR_COPY_MAX ? STDERR_COPY_MAX : size > 0 ? (size_t)size : 0;

	if (len == 0)
		return;
	char *buf = malloc(len + 1);
	if (buf == NULL)
		return;
	ssize_t n = read_at(run->stderr_fd, buf, len, 0);
	if (n > 0) {
		if (buf[n - 1] != '\n')
			buf[n++] = '\n';
		size_t out_len = (size_t)n;
		char *out = run->tag && run->tag[0] ? tagged(buf, (size_t)n, run->tag, &out_len) : NULL;
		write_all(STDERR_FILENO, out ? out : buf, out_len);
		free(out);
	}
	free(buf);
	if (n > 0 && size > STDERR_COPY_MAX)
		warnx_("'%s' wrote %lld more bytes to its standard error, not shown",
		       run->label, (long long)(size - STDERR_COPY_MAX));
}

static void close_run(struct command_run *run)
{
	if (run->stderr_fd >= 0)
		close(run->stderr_fd);
	run->stderr_fd = -1;
	run->pid = -1;
	publish(0);
}

/* Wait for the supervisor.  In --mode serial and omp it is a child of
 * the process that runs the tasks, which the run's second signal does not
 * kill (a fork-mode worker it kills, and the supervisor sees its parent
 * die): so that signal, which ends a poll() whatever SA_RESTART says, has
 * the supervisor take its command down here (SIGTERM, the grace period,
 * SIGKILL).  The timeout covers a signal that another thread took.
 * Without pidfd_open() (Linux < 5.3): a plain wait, as before. */
static pid_t wait_supervisor(pid_t pid, int *status)
{
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	if (fd >= 0) {
		struct pollfd p = { fd, POLLIN, 0 };
		for (;;) {
			int n = poll(&p, 1, 100);
			if (n > 0 || (n < 0 && errno != EINTR))
				break;
			if (signals_count() > 1) {
				kill(pid, SIGTERM);
				break;
			}
		}
		close(fd);
	}
	return reap_child(pid, status);
}

int command_finish(struct command_run *run, char *why, size_t size)
{
	char ended[96], line[LAST_LINE_MAX + 8];
	int status;

	if (wait_supervisor(run->pid, &status) < 0) {
		char ebuf[64];
		/* Not ours to wait for: SIGCHLD ignored, or reaped elsewhere. */
		snprintf(why, size, "cannot wait for '%s': %s", run->label,
			 error_text(errno, ebuf, sizeof ebuf));
		close_run(run);
		return -1;
	}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		copy_stderr(run);
		close_run(run);
		return 0;
	}
	describe_end(status, ended, sizeof ended);
	last_line(run->stderr_fd, line, sizeof line);
	snprintf(why, size, "'%s' %s%s%s", run->label, ended, line[0] ? ": " : "", line);
	close_run(run);
	return -1;
}

void command_abandon(struct command_run *run)
{
	if (run->pid > 0) {
		/* The supervisor takes the command's group down: SIGTERM, the
		 * grace period, SIGKILL. */
		kill(run->pid, SIGTERM);
		reap_child(run->pid, NULL);
	}
	close_run(run);
}
