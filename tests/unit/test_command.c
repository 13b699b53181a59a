/*
 * test_command.c - unit tests for runner/os/command.c and command_run.c: telling a direct
 * command from a shell one, values that arrive whole and literal however
 * they are quoted, stdin and stdout, failures named by the last line of
 * stderr, and what the child gets: default signals, descriptors 0 to 2
 * only, the caller's process group.  Each test runs in its own scratch
 * directory and ends with no child left.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "os/command_run.h"
#include "scratch.h"

#define OPTION "--report-filter"

struct scratch {
	char dir[4096];
	int old_cwd;
};

static int setup(void **state)
{
	static struct scratch s;

	if (scratch_make(s.dir, sizeof s.dir, "command") != 0)
		return -1;
	s.old_cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (s.old_cwd < 0 || chdir(s.dir) != 0)
		return -1;
	*state = &s;
	return 0;
}

/* Every test leaves no child behind: each run was waited for. */
static int teardown(void **state)
{
	struct scratch *s = *state;
	pid_t left = waitpid(-1, NULL, WNOHANG);
	int rc = left == -1 && errno == ECHILD ? 0 : -1;

	if (rc != 0)
		fprintf(stderr, "a child was left: waitpid gave %d\n", (int)left);
	if (fchdir(s->old_cwd) != 0 || scratch_remove(s->dir) != 0)
		rc = -1;
	close(s->old_cwd);
	return rc;
}

static struct command *parse_ok(const char *text)
{
	char why[256] = "";
	struct command *c = command_parse(OPTION, text, why, sizeof why);

	if (c == NULL)
		fail_msg("command_parse(\"%s\") failed: %s", text, why);
	return c;
}

static void expect_parse_error(const char *text, const char *want)
{
	char why[256] = "";
	struct command *c = command_parse(OPTION, text, why, sizeof why);

	if (c != NULL)
		fail_msg("command_parse(\"%s\") accepted it", text);
	if (strstr(why, want) == NULL)
		fail_msg("command_parse(\"%s\"): \"%s\", want \"%s\" in it", text, why, want);
}

static int open_new(const char *name)
{
	int fd = open(name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	assert_true(fd >= 0);
	return fd;
}

/* The whole file, NUL-terminated, in buf; its length. */
static size_t read_whole(int fd, char *buf, size_t size)
{
	ssize_t n = pread(fd, buf, size - 1, 0);

	assert_true(n >= 0);
	buf[n] = '\0';
	return (size_t)n;
}

/*
 * Run `text` with name, number and slot, stdin in_fd, stdout into a new
 * file; its output in out.  Returns command_finish()'s result, -2 if
 * command_start() failed (why then says why).
 */
static int run_capture(const char *text, const char *name, unsigned long long number,
		       unsigned long slot, int in_fd, char *out, size_t size, char *why,
		       size_t why_size)
{
	struct command *c = parse_ok(text);
	struct command_values v = { name, number, slot, name, NULL };
	struct command_run run;
	int out_fd = open_new("stdout");
	int rc = -2;

	why[0] = '\0';
	if (command_start(c, &v, in_fd, out_fd, &run, why, why_size) == 0) {
		rc = command_finish(&run, why, why_size);
		assert_int_equal(run.stderr_fd, -1);
	}
	read_whole(out_fd, out, size);
	close(out_fd);
	command_free(c);
	return rc;
}

/* Run `text`, which must succeed; its output in out. */
static void run_ok(const char *text, const char *name, char *out, size_t size)
{
	char why[512];

	if (run_capture(text, name, 1, 1, -1, out, size, why, sizeof why) != 0)
		fail_msg("'%s' failed: %s", text, why);
}

/* Run `text`, which must fail; the reason in why. */
static void run_failing(const char *text, char *why, size_t size)
{
	char out[256];

	if (run_capture(text, "n", 1, 1, -1, out, sizeof out, why, size) != -1)
		fail_msg("'%s' did not fail as it ran (%s)", text, why);
}

/* ---- parsing ---- */

static void test_parse_empty(void **state)
{
	(void)state;
	expect_parse_error("", OPTION ": empty command");
	expect_parse_error("   ", OPTION ": empty command");
	expect_parse_error(" \t \t", OPTION ": empty command");
	expect_parse_error("\n", OPTION ": empty command");
}

static void expect_shell(const char *text, int shell)
{
	struct command *c = parse_ok(text);

	if (command_uses_shell(c) != shell)
		fail_msg("\"%s\": uses_shell %d, want %d", text, command_uses_shell(c), shell);
	assert_string_equal(command_text(c), text);
	command_free(c);
}

static void test_detect_direct(void **state)
{
	(void)state;
	expect_shell("gzip -9", 0);
	expect_shell("  gzip\t-9  ", 0);
	expect_shell("cp {} {#}.bak", 0);       /* {#} holds a '#': not a comment */
	expect_shell("lpr -P q{%} {}", 0);
	expect_shell("echo {x} {a,b} {%", 0);   /* other braces: literal */
	expect_shell("gzip --suffix=.z {}", 0); /* '=' past the first word */
	expect_shell("1A=2 cmd", 0);            /* not a NAME */
}

static void test_detect_shell(void **state)
{
	(void)state;
	expect_shell("gzip -9 > x", 1);
	expect_shell("a || b", 1);
	expect_shell("FOO=1 cmd", 1);
	expect_shell("  _x9= cmd", 1);
	expect_shell("echo $HOME", 1);
	expect_shell("a && b", 1);
	expect_shell("a; b", 1);
	expect_shell("a\nb", 1);
	expect_shell("ls *.csv", 1);
	expect_shell("ls ?.csv", 1);
	expect_shell("ls [ab].csv", 1);
	expect_shell("ls ~", 1);
	expect_shell("echo a # comment", 1);
	expect_shell("echo \\{}", 1);
	expect_shell("echo '{}'", 1);
	expect_shell("echo \"{}\"", 1);
	expect_shell("echo `date`", 1);
	expect_shell("(cd /)", 1);
}

static void test_parse_backquotes_refused(void **state)
{
	(void)state;
	expect_parse_error("echo `cat {}`", "`...`");
	expect_parse_error("echo \"`printf %s {#}`\"", "`...`");
	expect_shell("echo `date` {}", 1);   /* outside them: fine */
	expect_shell("echo '`' {}", 1);      /* a quoted backquote opens none */
}

/* {} the path, {/} the name; GNU Parallel's others refused, not text. */
static void test_path_and_name(void **state)
{
	struct command_values v = { "r.csv", 4, 2, "/out/.cowrun-x/r.csv", NULL };
	const char *texts[] = { "cp {} q{%}/{/}", "cp {} q{%}/{/} > /dev/null" };
	const char *wants[] = { "cp /out/.cowrun-x/r.csv q2/r.csv",
				"cp /out/.cowrun-x/r.csv q2/r.csv > /dev/null" };

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		struct command *c = parse_ok(texts[i]);
		char *got = command_expand(c, &v);
		assert_non_null(got);
		assert_string_equal(got, wants[i]);
		assert_int_equal(command_uses_path(c), 1);
		free(got);
		command_free(c);
	}
	struct command *c = parse_ok("lp -t {/} -d q{%}");
	assert_int_equal(command_uses_path(c), 0);
	command_free(c);
	expect_parse_error("gzip {.}", "{.} is not filled in");
	expect_parse_error("cp {} {/.}.bak", "{/.} is not filled in");
	expect_parse_error("cd {//} && ls", "{//} is not filled in");
	expect_parse_error("echo '{//}'", "{//} is not filled in");
}

/* A pipeline is refused wherever its status would be the command's. */
static void test_pipeline_refused(void **state)
{
	static const char *const refused[] = {
		"sort | gzip", "{ head -c 1000; exit 3; } | lp", "(sort | gzip)",
		"a && b|c", "sort {} |gzip", "x=1; a | b",
	};
	static const char *const accepted[] = {
		"a || b", "echo 'a|b'", "echo \"a|b\"", "echo a\\|b", "lp -t \"$(echo {/} | tr a b)\"",
		"echo $((1 | 2))", "echo `date | cat`", "echo x >| f", "echo a # | b",
	};

	(void)state;
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++)
		expect_parse_error(refused[i], "a '|' pipeline hides a failing stage");
	for (size_t i = 0; i < sizeof accepted / sizeof accepted[0]; i++)
		command_free(parse_ok(accepted[i]));
}

static void test_parse_too_deep(void **state)
{
	char text[400] = "echo ";

	(void)state;
	for (int i = 0; i < 70; i++)
		strcat(text, "$(");
	expect_parse_error(text, "nested");
}

/* ---- values ---- */

static void test_direct_value_is_one_argument(void **state)
{
	char out[256];

	(void)state;
	run_ok("printf %s/ {} {}", "a b'c \"d\".txt", out, sizeof out);
	assert_string_equal(out, "a b'c \"d\".txt/a b'c \"d\".txt/");
	run_ok("printf %s/ pre{}post", "x  y", out, sizeof out);
	assert_string_equal(out, "prex  ypost/");
	run_ok("printf %s/ {} x", "", out, sizeof out);      /* empty: still one */
	assert_string_equal(out, "/x/");
	run_ok("printf %s/ {x} {a,b} {% {} }", "n", out, sizeof out);
	assert_string_equal(out, "{x}/{a,b}/{%/n/}/");
	run_ok("printf\t%s/\t\t{}  ", "$(touch PWNED)", out, sizeof out);
	assert_string_equal(out, "$(touch PWNED)/");
	assert_int_equal(access("PWNED", F_OK), -1);
}

/* In every quoting of the text, each hostile name arrives as itself and
 * runs nothing. */
static void test_shell_values_literal(void **state)
{
	static const char *const names[] = {
		"a b'c;$(touch PWNED).txt", "`touch PWNED`", "\"; touch PWNED; \"",
		"'; touch PWNED; '", "\\", "\\'", "$HOME", "", "-n x", "x\ny", "*",
		"~", "A=1", "#", "a}b", "${HOME}", "plain.csv",
	};
	const char *text = "printf '%s\\n' {} \"{}\" '{}' \"$(printf %s {})\" "
			   "\"a'{}'b\" $(printf %s {}x)";
	char out[1024], want[1024];

	(void)state;
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		const char *n = names[i];
		run_ok(text, n, out, sizeof out);
		snprintf(want, sizeof want, "%s\n%s\n%s\n%s\na'%s'b\n", n, n, n, n, n);
		if (strncmp(out, want, strlen(want)) != 0)
			fail_msg("name \"%s\": got \"%s\", want \"%s...\"", n, out, want);
		assert_int_equal(access("PWNED", F_OK), -1);
	}
	/* The last one unquoted, as the shell splits a $(...): a plain name
	 * shows it went through the command substitution. */
	run_ok(text, "plain.csv", out, sizeof out);
	assert_non_null(strstr(out, "'plain.csv'b\nplain.csvx\n"));
}

static void test_number_and_slot(void **state)
{
	char out[256], why[256];

	(void)state;
	assert_int_equal(run_capture("printf %s/%s/%s/ {#} {%} x{#}y{%}z{}", "n",
				     12345678901234ULL, 7, -1, out, sizeof out,
				     why, sizeof why), 0);
	assert_string_equal(out, "12345678901234/7/x12345678901234y7zn/");
	/* Shell: unquoted (arithmetic too), and "${#}" is the shell's. */
	assert_int_equal(run_capture("echo {#} {%} $(({#} + {%})) ${#}", "n", 40, 2, -1,
				     out, sizeof out, why, sizeof why), 0);
	assert_string_equal(out, "40 2 42 0\n");
}

static void test_expand(void **state)
{
	struct command_values v = { "a b", 3, 2, "a b", NULL };
	struct {
		const char *text, *name, *want;
	} cases[] = {
		{ "gzip -9 {}.x {#} {%}", "a b", "gzip -9 a b.x 3 2" },
		{ "gzip < {} > {#}.gz", "a b", "gzip < 'a b' > 3.gz" },
		{ "gzip < {} > {#}.gz", "data.csv", "gzip < data.csv > 3.gz" },
		{ "gzip < {}", "", "gzip < ''" },
		{ "gzip < {}", "it's", "gzip < 'it'\\''s'" },
		{ "cat \"{}\"", "a\"b$c`\\", "cat \"a\\\"b\\$c\\`\\\\\"" },
		{ "cat '{}'", "it's", "cat 'it'\\''s'" },
		{ "echo \\{} # {}", "x", "echo \\{} # {}" },
	};

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct command *c = parse_ok(cases[i].text);
		v.name = v.path = cases[i].name;
		char *got = command_expand(c, &v);
		assert_non_null(got);
		if (strcmp(got, cases[i].want) != 0)
			fail_msg("expand \"%s\" with \"%s\": \"%s\", want \"%s\"", cases[i].text,
				 cases[i].name, got, cases[i].want);
		free(got);
		command_free(c);
	}
}

/* ---- running ---- */

static void test_stdin_and_stdout_files(void **state)
{
	enum { SIZE = 200000, SKIP = 10 };
	char *data = malloc(SIZE), *out = malloc(SIZE + 1), why[256];
	int in_fd = open_new("stdin");

	(void)state;
	assert_non_null(data);
	assert_non_null(out);
	for (size_t i = 0; i < SIZE; i++)
		data[i] = (char)(i * 7 + i / 251);
	assert_int_equal(pwrite(in_fd, data, SIZE, 0), SIZE);
	/* Its offset, where the caller left it, is where the child reads. */
	assert_int_equal(lseek(in_fd, SKIP, SEEK_SET), SKIP);
	int rc = run_capture("cat", "n", 1, 1, in_fd, out, SIZE + 1, why, sizeof why);
	assert_int_equal(rc, 0);
	assert_memory_equal(out, data + SKIP, SIZE - SKIP);
	assert_int_equal(lseek(in_fd, 0, SEEK_CUR), SIZE); /* shared, as dup2 does */
	close(in_fd);
	free(data);
	free(out);
}

static void test_failure_names_last_line(void **state)
{
	char why[512];

	(void)state;
	run_failing("echo first >&2; echo \"last words\" >&2; exit 3", why, sizeof why);
	assert_string_equal(why, "'echo first >&2; echo \"last words\" >&2; exit 3' "
			    "exited with status 3: last words");
	assert_null(strstr(strstr(why, "status 3"), "first"));
	/* Trailing blank lines skipped; control characters shown as '?'. */
	run_failing("printf 'one\\ntwo\\tthree\\001\\n\\n  \\n' >&2; exit 1", why, sizeof why);
	assert_non_null(strstr(why, "exited with status 1: two?three?"));
	assert_null(strstr(strstr(why, "status 1"), "one"));
	/* A direct command, no stderr: no colon. */
	run_failing("false", why, sizeof why);
	assert_string_equal(why, "'false' exited with status 1");
}

static void test_failure_line_cut(void **state)
{
	char why[1024], *colon;

	(void)state;
	/* No pipeline: command_parse() refuses one. */
	run_failing("awk 'BEGIN { while (n++ < 300) printf \"x\"; print \"\" }' >&2; exit 2",
		    why, sizeof why);
	colon = strstr(why, "status 2: ");
	assert_non_null(colon);
	assert_int_equal(strlen(colon + strlen("status 2: ")), 200);
	assert_int_equal(strspn(colon + strlen("status 2: "), "x"), 200);
}

static void test_killed(void **state)
{
	char why[256];

	(void)state;
	run_failing("kill -9 $$", why, sizeof why);
	assert_string_equal(why, "'kill -9 $$' was killed by signal 9 (Killed)");
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	assert_non_null(d);
	while (readdir(d) != NULL)
		n++;
	closedir(d);
	return n;
}

static void test_missing_program(void **state)
{
	struct command *c = parse_ok("cowrun-no-such-lpx -P q {}");
	struct command_values v = { "n", 1, 1, "n", NULL };
	struct command_run run;
	char why[256];
	int fds = count_fds();

	(void)state;
	assert_int_equal(command_start(c, &v, -1, -1, &run, why, sizeof why), -1);
	assert_string_equal(why, "cannot run 'cowrun-no-such-lpx': No such file or directory");
	assert_int_equal(run.stderr_fd, -1);
	assert_int_equal(count_fds(), fds);   /* its stderr file closed */
	command_free(c);
}

static void test_label_of_long_shell_text(void **state)
{
	char text[200], why[512];

	(void)state;
	snprintf(text, sizeof text, "exit 4; %s", "0123456789012345678901234567890123456789"
		 "0123456789012345678901234567890123456789");
	run_failing(text, why, sizeof why);
	assert_string_equal(why, "'exit 4; 0123456789012345678901234567890123456789"
			    "012345678901...' exited with status 4");
}

/* Copy what the child wrote to stderr, as command_finish() does on
 * success, into a file of ours, and return it. */
static size_t run_stderr_captured(const char *text, char *buf, size_t size)
{
	int saved = dup(STDERR_FILENO), err_fd = open_new("stderr");
	char out[64];

	assert_true(saved >= 0);
	assert_int_equal(dup2(err_fd, STDERR_FILENO), STDERR_FILENO);
	run_ok(text, "n", out, sizeof out);
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	size_t n = read_whole(err_fd, buf, size);
	close(err_fd);
	return n;
}

static void test_stderr_copied_on_success(void **state)
{
	char buf[256];

	(void)state;
	run_stderr_captured("echo warn-1 >&2; printf warn-2 >&2", buf, sizeof buf);
	assert_string_equal(buf, "warn-1\nwarn-2\n");   /* the last line ended */
	run_stderr_captured("true", buf, sizeof buf);
	assert_string_equal(buf, "");
}

/* With a tag, each copied line starts "TAG: "; COMMAND_OUT_CAPTURE puts
 * its stdout among them, in the order written, in one copy. */
static void test_stderr_tagged_with_stdout(void **state)
{
	struct command *c = parse_ok("echo out-1; echo err-1 >&2; printf out-2");
	struct command_values v = { "n", 1, 1, NULL, "task-000007" };
	struct command_run run;
	int saved = dup(STDERR_FILENO), err_fd = open_new("stderr");
	char why[256], buf[256];

	(void)state;
	assert_true(saved >= 0);
	assert_int_equal(dup2(err_fd, STDERR_FILENO), STDERR_FILENO);
	assert_int_equal(command_start(c, &v, -1, COMMAND_OUT_CAPTURE, &run, why, sizeof why), 0);
	int rc = command_finish(&run, why, sizeof why);
	assert_int_equal(dup2(saved, STDERR_FILENO), STDERR_FILENO);
	close(saved);
	assert_int_equal(rc, 0);
	read_whole(err_fd, buf, sizeof buf);
	close(err_fd);
	assert_string_equal(buf, "task-000007: out-1\ntask-000007: err-1\ntask-000007: out-2\n");
	command_free(c);
}

/* 1 MiB of stderr: no deadlock (a file, not a pipe), the last line still
 * found, and on success only the first 64 KiB copied, the rest noted. */
static void test_large_stderr(void **state)
{
	enum { BIG = 1 << 20 };
	char why[512], *buf = malloc(2 * BIG);

	(void)state;
	assert_non_null(buf);
	run_failing("awk 'BEGIN { while (n++ < 1048576) printf \"x\" }' >&2; echo >&2; echo done >&2; exit 1",
		    why, sizeof why);
	assert_non_null(strstr(why, "exited with status 1: done"));
	size_t n = run_stderr_captured("awk 'BEGIN { while (n++ < 1048576) printf \"x\" }' >&2", buf,
				       2 * BIG);
	assert_true(n > 65536 && n < 65536 + 512);
	assert_int_equal(strspn(buf, "x"), 65536);
	assert_non_null(strstr(buf + 65536, "983040 more bytes"));
	free(buf);
}

/* A signal mask of /proc/PID/status ("SigIgn:"), 0 if none. */
static unsigned long long sigmask_of(const char *status, const char *field)
{
	const char *at = strstr(status, field);
	unsigned long long mask = 0;

	if (at == NULL || sscanf(at + strlen(field), "%llx", &mask) != 1)
		return 0;
	return mask;
}

/* Whatever the caller ignores or blocks, the child starts with every
 * signal at its default and none blocked (a direct cat: no shell that
 * might change them). */
static void test_signals_reset(void **state)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_int;
	sigset_t term, old_mask;
	char out[8192];

	(void)state;
	sigemptyset(&term);
	sigaddset(&term, SIGTERM);
	assert_int_equal(sigaction(SIGINT, &ign, &old_int), 0);
	assert_int_equal(sigprocmask(SIG_BLOCK, &term, &old_mask), 0);
	run_ok("cat /proc/self/status", "n", out, sizeof out);
	/* It is not a test without what it resets: check ours, then restore. */
	char self[8192];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	read_whole(fd, self, sizeof self);
	close(fd);
	sigprocmask(SIG_SETMASK, &old_mask, NULL);
	sigaction(SIGINT, &old_int, NULL);
	assert_true(sigmask_of(self, "SigIgn:") & 1ULL << (SIGINT - 1));
	assert_true(sigmask_of(self, "SigBlk:") & 1ULL << (SIGTERM - 1));
	assert_non_null(strstr(out, "SigIgn:\t0000000000000000\n"));
	assert_non_null(strstr(out, "SigBlk:\t0000000000000000\n"));
	assert_non_null(strstr(out, "SigCgt:\t0000000000000000\n"));
}

/* Only 0, 1 and 2 reach the child (and ls's own directory, 3), not a
 * descriptor of ours without CLOEXEC. */
static void test_no_descriptor_leaks(void **state)
{
	char out[512];
	int fd = open(".", O_RDONLY);   /* no O_CLOEXEC, on purpose */

	(void)state;
	assert_true(fd >= 0);
	assert_int_equal(dup2(fd, 100), 100);
	run_ok("ls -1 /proc/self/fd", "n", out, sizeof out);
	close(100);
	close(fd);
	assert_string_equal(out, "0\n1\n2\n3\n");
}

/* The command leads a process group of its own (its supervisor's
 * SIGTERM and SIGKILL go to it), not ours: fields 1 and 5 of its stat. */
static void test_own_process_group(void **state)
{
	char out[1024];
	int pid = -1, pgrp = -1;

	(void)state;
	run_ok("cat /proc/self/stat", "n", out, sizeof out);
	char *end = strrchr(out, ')');
	assert_non_null(end);
	assert_int_equal(sscanf(out, "%d", &pid), 1);
	assert_int_equal(sscanf(end + 1, " %*c %*d %d", &pgrp), 1);
	assert_int_equal(pgrp, pid);
	assert_int_not_equal(pgrp, getpgrp());
}

static void test_abandon(void **state)
{
	struct command *c = parse_ok("cat");
	struct command_values v = { "n", 1, 1, "n", NULL };
	struct command_run run;
	char why[256];
	int in[2];

	(void)state;
	/* Its stdin a pipe we hold open: it would wait for ever. */
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(command_start(c, &v, in[0], -1, &run, why, sizeof why), 0);
	pid_t pid = run.pid;
	command_abandon(&run);
	assert_int_equal(run.stderr_fd, -1);
	assert_int_equal(kill(pid, 0), -1);   /* gone and reaped */
	close(in[0]);
	close(in[1]);
	command_free(c);
}

/* Threads spawning at once: each run's output where it belongs. */
static void test_concurrent_threads(void **state)
{
	enum { RUNS = 64 };
	struct command *c = parse_ok("printf %s {#}");
	int bad = 0;

	(void)state;
	#pragma omp parallel for num_threads(8) reduction(+:bad)
	for (int i = 1; i <= RUNS; i++) {
		struct command_values v = { "n", (unsigned long long)i, 1, "n", NULL };
		struct command_run run;
		char why[256], out[32], want[32];
		int fd = open(".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
		if (fd < 0 || command_start(c, &v, -1, fd, &run, why, sizeof why) != 0 ||
		    command_finish(&run, why, sizeof why) != 0) {
			bad++;
		} else {
			ssize_t n = pread(fd, out, sizeof out - 1, 0);
			out[n > 0 ? n : 0] = '\0';
			snprintf(want, sizeof want, "%d", i);
			bad += strcmp(out, want) != 0;
		}
		if (fd >= 0)
			close(fd);
	}
	assert_int_equal(bad, 0);
	command_free(c);
}

/* command_program(): the word to look up on PATH before the setup, or
 * none where the shell decides (a builtin, a keyword, a variable...). */
static void test_program(void **state)
{
	static const struct { const char *text, *program; } cases[] = {
		{ "lpx -d x", "lpx" },
		{ "  gzip", "gzip" },
		{ "/usr/bin/lp -t {}", "/usr/bin/lp" },
		{ "lp{%} -d x", NULL },         /* glued to a replacement string */
		{ "{} x", NULL },
		{ "lpx -d x > y", "lpx" },
		{ "\n  lpx < {} > y", "lpx" },
		{ "lpx;cat", "lpx" },
		{ "lp{#} > y", NULL },
		{ "{ head -c 9; exit 3; } > y", NULL },
		{ "exec lp > x", NULL },
		{ "cd /tmp && lp", NULL },
		{ "if true; then lp; fi", NULL },
		{ "echo x > y", NULL },
		{ "$LP -d x > y", NULL },
		{ "LP=x lp > y", NULL },
		{ "'lp' -d x > y", NULL },
		{ "\"lp\" x > y", NULL },
		{ "l\\p x > y", NULL },
		{ "f() { cat; }; f", NULL },
		{ "(lp) > y", NULL },
	};
	char why[256], prog[64];

	(void)state;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct command *c = command_parse(OPTION, cases[i].text, why, sizeof why);
		assert_non_null(c);
		int got = command_program(c, prog, sizeof prog);
		if (cases[i].program == NULL && got != 0)
			fail_msg("'%s': gave '%s', expected none", cases[i].text, prog);
		if (cases[i].program != NULL && (got != 1 || strcmp(prog, cases[i].program) != 0))
			fail_msg("'%s': gave %s, expected '%s'", cases[i].text,
				 got ? prog : "none", cases[i].program);
		command_free(c);
	}
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

int main(void)
{
	/* The checkout's supervisor: this binary is build/tests/. */
	char exe[4096], path[4200];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	if (n > 0) {
		exe[n] = '\0';
		*strrchr(exe, '/') = '\0';
		snprintf(path, sizeof path, "%s/../../bin/cowrun-supervise", exe);
		command_set_supervisor(path);
	}
	const struct CMUnitTest tests[] = {
		T(test_parse_empty),
		T(test_detect_direct),
		T(test_detect_shell),
		T(test_program),
		T(test_parse_backquotes_refused),
		T(test_path_and_name),
		T(test_pipeline_refused),
		T(test_parse_too_deep),
		T(test_direct_value_is_one_argument),
		T(test_shell_values_literal),
		T(test_number_and_slot),
		T(test_expand),
		T(test_stdin_and_stdout_files),
		T(test_failure_names_last_line),
		T(test_failure_line_cut),
		T(test_killed),
		T(test_missing_program),
		T(test_label_of_long_shell_text),
		T(test_stderr_copied_on_success),
		T(test_stderr_tagged_with_stdout),
		T(test_large_stderr),
		T(test_signals_reset),
		T(test_no_descriptor_leaks),
		T(test_own_process_group),
		T(test_abandon),
		T(test_concurrent_threads),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
