/*
 * test_sidefiles.c - unit tests for runner/run/sidefiles.c: two options naming
 * one file (the same spelling, another spelling, a symbolic link, a file
 * not there yet, the --joblog journal) are refused with one message naming
 * both; a directory is refused; distinct files pass; a side file where a
 * report goes is refused (a served batch's: where its client found it);
 * and a refused check or open changes no file; a served joblog removed
 * before its batch locked it is refused.
 * Each test runs in a fresh temporary directory of its own.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine/batch.h"
#include "run/sidefiles.h"
#include "os/fileops.h"
#include "scratch.h"

static char home[PATH_MAX];   /* the directory the tests started in */
static char dir[PATH_MAX];    /* this test's directory, the cwd */

static int enter_dir(void **state)
{
	(void)state;
	if (getcwd(home, sizeof home) == NULL || scratch_make(dir, sizeof dir, "sidefiles") != 0 ||
	    chdir(dir) != 0)
		return -1;
	return 0;
}

static int leave_dir(void **state)
{
	(void)state;
	if (chdir(home) != 0)
		return -1;
	return scratch_remove(dir);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* ---- what is on disk ---- */

static char *listing;
static size_t listing_len;
static int skip_top_mtime;    /* leave out the test directory's own mtime */

static int list_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)flag;
	size_t room = 65536 - listing_len;
	int top = ftw->level == 0 && skip_top_mtime;
	int n = snprintf(listing + listing_len, room, "%s %o %lld %lld.%09ld\n", path,
			 (unsigned)st->st_mode, (long long)st->st_size,
			 top ? 0LL : (long long)st->st_mtim.tv_sec, top ? 0L : st->st_mtim.tv_nsec);
	if (n > 0 && (size_t)n < room)
		listing_len += (size_t)n;
	return 0;
}

/* Every name under the cwd with its mode, size and mtime (nftw's order is
 * the directory's, which does not change when nothing is created).  The
 * cwd's own mtime too: a file created and removed again changes it. */
static char *snapshot(void)
{
	listing = calloc(1, 65536);
	assert_non_null(listing);
	listing_len = 0;
	assert_int_equal(nftw(".", list_entry, 16, FTW_PHYS), 0);
	return listing;
}

static void assert_same_snapshot(char *before)
{
	char *after = snapshot();

	assert_string_equal(before, after);
	free(before);
	free(after);
}

/* How many names the cwd holds. */
static int count_entries(void)
{
	struct dirent **names;
	int n = scandir(".", &names, NULL, NULL);

	assert_true(n >= 2);
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return n - 2;
}

/* ---- stderr caught, so a test can read the message ---- */

static FILE *caught;
static int saved_stderr = -1;

static void catch_stderr(void)
{
	caught = tmpfile();
	assert_non_null(caught);
	fflush(stderr);
	saved_stderr = dup(2);
	assert_true(saved_stderr >= 0);
	assert_true(dup2(fileno(caught), 2) >= 0);
}

/* Put stderr back; what was written meanwhile goes into msg. */
static void release_stderr(char *msg, size_t size)
{
	fflush(stderr);
	dup2(saved_stderr, 2);
	close(saved_stderr);
	rewind(caught);
	size_t n = fread(msg, 1, size - 1, caught);
	msg[n] = '\0';
	fclose(caught);
}

/* ---- running the check ---- */

/* Run sidefiles_check() on these paths; its message (if any) goes into
 * msg.  The working directory must be exactly as it was afterwards. */
static int check(const struct sidefiles_paths *paths, char *msg, size_t size)
{
	struct sidefiles s;
	char *before = snapshot();

	catch_stderr();
	sidefiles_init(&s, paths);
	int rc = sidefiles_check(&s);
	release_stderr(msg, size);
	assert_same_snapshot(before);
	return rc;
}

/* The check refuses, with exactly one line holding `want`. */
static void expect_refused(const struct sidefiles_paths *paths, const char *want)
{
	char msg[1024];

	if (check(paths, msg, sizeof msg) != -1)
		fail_msg("accepted; expected '%s'", want);
	if (strstr(msg, want) == NULL)
		fail_msg("message '%s' does not hold '%s'", msg, want);
	if (strncmp(msg, "cowrun: ", 8) != 0 || strchr(msg, '\n') != msg + strlen(msg) - 1)
		fail_msg("not one 'cowrun: ' line: '%s'", msg);
}

static void expect_accepted(const struct sidefiles_paths *paths)
{
	char msg[1024];

	if (check(paths, msg, sizeof msg) != 0)
		fail_msg("refused: %s", msg);
	assert_string_equal(msg, "");
}

/* ---- two options, one file ---- */

static void test_same_existing_file(void **state)
{
	(void)state;
	write_file("x", "precious\n");
	expect_refused(&(struct sidefiles_paths){ .joblog = "x", .stats = "x" },
		       "--joblog and --stats name the same file 'x'");
	expect_refused(&(struct sidefiles_paths){ .save = "x", .timeline = "x" },
		       "--save-results and --timeline name the same file 'x'");
	expect_refused(&(struct sidefiles_paths){ .joblog = "+x", .stats = "x" },
		       "--joblog and --stats name the same file 'x'");
}

static void test_same_existing_file_other_spelling(void **state)
{
	char abs[PATH_MAX + 8];

	(void)state;
	write_file("x", "precious\n");
	assert_int_equal(mkdir("sub", 0777), 0);
	expect_refused(&(struct sidefiles_paths){ .joblog = "x", .stats = "./x" },
		       "--joblog 'x' and --stats './x' name the same file");
	expect_refused(&(struct sidefiles_paths){ .timeline = "sub/../x", .stats = "x" },
		       "--timeline 'sub/../x' and --stats 'x' name the same file");
	snprintf(abs, sizeof abs, "%s/x", dir);
	expect_refused(&(struct sidefiles_paths){ .save = abs, .joblog = "x" },
		       "name the same file");
}

static void test_same_existing_file_through_links(void **state)
{
	(void)state;
	write_file("x", "precious\n");
	assert_int_equal(symlink("x", "lx"), 0);
	assert_int_equal(link("x", "hx"), 0);
	assert_int_equal(mkdir("d", 0777), 0);
	assert_int_equal(symlink("d", "ld"), 0);
	write_file("d/y", "");
	expect_refused(&(struct sidefiles_paths){ .timeline = "lx", .stats = "x" },
		       "--timeline 'lx' and --stats 'x' name the same file");
	expect_refused(&(struct sidefiles_paths){ .joblog = "hx", .stats = "x" },
		       "--joblog 'hx' and --stats 'x' name the same file");
	expect_refused(&(struct sidefiles_paths){ .save = "ld/y", .stats = "d/y" },
		       "--save-results 'ld/y' and --stats 'd/y' name the same file");
}

static void test_same_missing_file(void **state)
{
	char abs[PATH_MAX + 8];

	(void)state;
	assert_int_equal(mkdir("d", 0777), 0);
	assert_int_equal(symlink("d", "ld"), 0);
	expect_refused(&(struct sidefiles_paths){ .save = "n.res", .stats = "n.res" },
		       "--save-results and --stats name the same file 'n.res'");
	expect_refused(&(struct sidefiles_paths){ .save = "n.res", .stats = "./n.res" },
		       "--save-results 'n.res' and --stats './n.res' name the same file");
	expect_refused(&(struct sidefiles_paths){ .timeline = "ld/t.csv", .stats = "d/t.csv" },
		       "--timeline 'ld/t.csv' and --stats 'd/t.csv' name the same file");
	expect_refused(&(struct sidefiles_paths){ .timeline = "d/../t.csv", .joblog = "t.csv" },
		       "--timeline 'd/../t.csv' and --joblog 't.csv' name the same file");
	snprintf(abs, sizeof abs, "%s/d/t.csv", dir);
	expect_refused(&(struct sidefiles_paths){ .timeline = "d/t.csv", .stats = abs },
		       "name the same file");
	/* Missing directories too: both would be made as the output directory. */
	expect_refused(&(struct sidefiles_paths){ .joblog = "no/a/log", .stats = "no/./a/log" },
		       "--joblog 'no/a/log' and --stats 'no/./a/log' name the same file");
	expect_refused(&(struct sidefiles_paths){ .joblog = "no/../log", .stats = "log" },
		       "--joblog 'no/../log' and --stats 'log' name the same file");
	expect_accepted(&(struct sidefiles_paths){ .joblog = "no/../log", .stats = "no/log" });
}

/* A dangling link names the file opening it would create. */
static void test_same_file_through_dangling_link(void **state)
{
	(void)state;
	assert_int_equal(symlink("target", "dl"), 0);
	expect_refused(&(struct sidefiles_paths){ .timeline = "dl", .stats = "target" },
		       "--timeline 'dl' and --stats 'target' name the same file");
	assert_int_equal(access("target", F_OK), -1);
}

/* --joblog x keeps its journal in x.res: --save-results x.res collides. */
static void test_journal_collides(void **state)
{
	(void)state;
	expect_refused(&(struct sidefiles_paths){ .save = "x.res", .joblog = "x" },
		       "--save-results and --joblog's journal name the same file 'x.res'");
	expect_refused(&(struct sidefiles_paths){ .joblog = "+x", .stats = "./x.res" },
		       "--joblog's journal 'x.res' and --stats './x.res' name the same file");
	write_file("x.res", "");
	expect_refused(&(struct sidefiles_paths){ .save = "x.res", .joblog = "x", .resume = 1 },
		       "--save-results and --joblog's journal name the same file 'x.res'");
	/* The joblog and its own journal, one file through a link. */
	write_file("j", "");
	assert_int_equal(symlink("j", "j.res"), 0);
	expect_refused(&(struct sidefiles_paths){ .joblog = "j" },
		       "--joblog 'j' and --joblog's journal 'j.res' name the same file");
}

static void test_directory_refused(void **state)
{
	(void)state;
	assert_int_equal(mkdir("d", 0777), 0);
	assert_int_equal(mkdir("j.res", 0777), 0);
	expect_refused(&(struct sidefiles_paths){ .save = "d" }, "--save-results: 'd' is a directory");
	expect_refused(&(struct sidefiles_paths){ .timeline = "d" }, "--timeline: 'd' is a directory");
	expect_refused(&(struct sidefiles_paths){ .joblog = "+d" }, "--joblog: 'd' is a directory");
	expect_refused(&(struct sidefiles_paths){ .stats = "d/" }, "--stats: 'd/' is a directory");
	expect_refused(&(struct sidefiles_paths){ .joblog = "j" },
		       "--joblog's journal: 'j.res' is a directory");
}

static void test_distinct_files_accepted(void **state)
{
	(void)state;
	write_file("old.res", "x");
	write_file("log", "y");
	assert_int_equal(mkdir("d", 0777), 0);
	expect_accepted(&(struct sidefiles_paths){ 0 });
	expect_accepted(&(struct sidefiles_paths){ .save = "old.res", .timeline = "t.csv",
						   .joblog = "log", .stats = "d/stats.csv" });
	expect_accepted(&(struct sidefiles_paths){ .save = "a.res", .timeline = "d/a.res",
						   .joblog = "+log", .stats = "log.res.csv",
						   .resume = 1 });
	/* A device is no file to clobber: both may discard into it. */
	expect_accepted(&(struct sidefiles_paths){ .joblog = "/dev/null", .stats = "/dev/null" });
	/* Names that only look alike. */
	expect_accepted(&(struct sidefiles_paths){ .save = "x", .stats = "x.res" });
	expect_accepted(&(struct sidefiles_paths){ .save = "log", .joblog = "log.res" });
}

/* ---- a side file where a report goes ---- */

static int is_report(void *ctx, const char *name)
{
	(void)ctx;
	return strncmp(name, "task-", 5) == 0;
}

static int check_reports(const struct sidefiles_paths *paths, const char *outdir)
{
	struct sidefiles s;
	char *before = snapshot(), msg[1024];

	catch_stderr();
	sidefiles_init(&s, paths);
	int rc = sidefiles_check_reports(&s, outdir, is_report, NULL);
	release_stderr(msg, sizeof msg);
	assert_same_snapshot(before);
	if (rc != 0 && strstr(msg, "is the report file of task 'task-1' in output directory") == NULL)
		fail_msg("refused, saying '%s'", msg);
	return rc;
}

static void test_report_collides(void **state)
{
	(void)state;
	assert_int_equal(mkdir("out", 0777), 0);
	assert_int_equal(symlink("out", "lout"), 0);
	assert_int_equal(check_reports(&(struct sidefiles_paths){ .stats = "out/task-1" }, "out"), -1);
	assert_int_equal(check_reports(&(struct sidefiles_paths){ .stats = "lout/task-1" }, "./out"), -1);
	assert_int_equal(check_reports(&(struct sidefiles_paths){ .joblog = "rep/task-1" }, "rep/"), -1);
	/* The journal's name is JOBLOG.res: not a report's here. */
	assert_int_equal(check_reports(&(struct sidefiles_paths){ .joblog = "out/log" }, "out"), 0);
	assert_int_equal(check_reports(&(struct sidefiles_paths){ .stats = "task-1" }, "out"), 0);
	assert_int_equal(check_reports(&(struct sidefiles_paths){ .stats = "out/summary" }, "out"), 0);
}

static void expect_in_outdir(const struct sidefiles_paths *paths, const char *outdir,
			     const char *expected)
{
	struct sidefiles s;
	char text[SIDEFILES_IN_OUTDIR_MAX];
	char *before = snapshot();

	sidefiles_init(&s, paths);
	sidefiles_in_outdir(&s, outdir, text, sizeof text);
	assert_same_snapshot(before);
	assert_string_equal(text, expected);
}

/* What a served batch's client sends: each side file's name in the output
 * directory, in a slot of its own, found as the direct run's check finds
 * it; and the batch's check on that text alone, by_fd (the client's paths
 * mean nothing where the server runs). */
static void test_in_outdir(void **state)
{
	char longname[COWRUN_NAME_MAX + 8];

	(void)state;
	assert_int_equal(mkdir("out", 0777), 0);
	assert_int_equal(symlink("out", "lout"), 0);
	expect_in_outdir(&(struct sidefiles_paths){ 0 }, "out", "////");
	expect_in_outdir(&(struct sidefiles_paths){ .save = "out/a", .timeline = "t",
						    .joblog = "+lout/j", .stats = "./out/s" },
			 "out/", "a//j/j.res/s");
	expect_in_outdir(&(struct sidefiles_paths){ .timeline = "lout/task-1" }, "./out",
			 "/task-1///");
	expect_in_outdir(&(struct sidefiles_paths){ .stats = "rep/x" }, "rep", "////x");
	memset(longname, 'n', sizeof longname - 1);
	memcpy(longname, "out/", 4);
	longname[sizeof longname - 1] = '\0';
	expect_in_outdir(&(struct sidefiles_paths){ .save = longname }, "out", "////");

	struct sidefiles s;
	char msg[1024];
	sidefiles_init(&s, &(struct sidefiles_paths){ .stats = "/elsewhere/task-1", .by_fd = 1,
						      .in_outdir = "////task-1" });
	catch_stderr();
	assert_int_equal(sidefiles_check_reports(&s, "o", is_report, NULL), -1);
	release_stderr(msg, sizeof msg);
	assert_non_null(strstr(msg, "--stats: '/elsewhere/task-1' is the report file of task "
				    "'task-1' in output directory 'o'"));
	/* Each slot is its own file's: this one is the joblog's, not given. */
	sidefiles_init(&s, &(struct sidefiles_paths){ .stats = "x", .by_fd = 1,
						      .in_outdir = "//task-1//summary" });
	assert_int_equal(sidefiles_check_reports(&s, "o", is_report, NULL), 0);
	sidefiles_init(&s, &(struct sidefiles_paths){ .stats = "x", .by_fd = 1 });
	assert_int_equal(sidefiles_check_reports(&s, "o", is_report, NULL), 0);
}

/* ---- opening and closing ---- */

static int refuse(void *ctx)
{
	(void)ctx;
	return -1;
}

static int steps;

/* sidefiles_open()'s middle step: the temporary files are open by now,
 * nothing written in place yet. */
static int middle_step(void *ctx)
{
	char pattern[300];
	glob_t found;

	(void)ctx;
	steps++;
	/* The temporary name's last part is random (temp_name_beside()). */
	snprintf(pattern, sizeof pattern, "x.res.%s.%ld.*.tmp", host_tag(), (long)getpid());
	int temp_there = glob(pattern, 0, NULL, &found) == 0 && found.gl_pathc == 1;
	globfree(&found);
	return temp_there && access("log", F_OK) != 0 ? 0 : -1;
}

static const struct sidefiles_paths all = {
	.save = "x.res", .timeline = "t.csv", .joblog = "log", .stats = "s.csv",
};

/* A run refused at the last step leaves the earlier run's files alone
 * and no temporary file behind. */
static void test_refused_open_changes_nothing(void **state)
{
	struct sidefiles s;
	struct batch b = { 0 };
	char msg[1024];

	(void)state;
	write_file("x.res", "old results");
	write_file("log", "old joblog");
	write_file("s.csv", "old stats");
	skip_top_mtime = 1;
	char *before = snapshot();
	sidefiles_init(&s, &all);
	catch_stderr();
	assert_int_equal(sidefiles_open(&s, &b, "identity", 0, refuse, NULL), -1);
	release_stderr(msg, sizeof msg);
	assert_null(b.save.put);
	assert_null(b.journal.put);
	assert_null(b.timeline);
	assert_null(b.joblog);
	assert_same_snapshot(before);
	skip_top_mtime = 0;
	assert_int_equal(sidefiles_close(&s, &b, 0), 0);
}

/* A colliding pair found by sidefiles_open() too (the setup between the
 * check and the open may be long): nothing opened. */
static void test_open_checks_again(void **state)
{
	struct sidefiles s;
	struct batch b = { 0 };
	char msg[1024];

	(void)state;
	write_file("x.res", "old results");
	char *before = snapshot();
	sidefiles_init(&s, &(struct sidefiles_paths){ .save = "x.res", .joblog = "x" });
	catch_stderr();
	assert_int_equal(sidefiles_open(&s, &b, "identity", 0, NULL, NULL), -1);
	release_stderr(msg, sizeof msg);
	assert_non_null(strstr(msg, "name the same file 'x.res'"));
	assert_same_snapshot(before);
}

static void test_open_then_close(void **state)
{
	struct sidefiles s;
	struct batch b = { 0 };

	(void)state;
	steps = 0;
	sidefiles_init(&s, &all);
	assert_int_equal(sidefiles_open(&s, &b, "identity", 0, middle_step, NULL), 0);
	assert_int_equal(steps, 1);
	assert_non_null(b.save.put);
	assert_non_null(b.journal.put);
	assert_non_null(b.timeline);
	assert_non_null(b.joblog);
	assert_int_equal(b.save.put(b.save.ctx, WIRE_RESULT, 0, "r", 1), 0);
	assert_int_equal(b.journal.put(b.journal.ctx, WIRE_RESULT, 0, "r", 1), 0);
	assert_int_equal(access("x.res", F_OK), -1); /* still under a temporary name */
	assert_int_equal(access("log.res", F_OK), 0);
	b.started_ns = 1;
	assert_int_equal(sidefiles_close(&s, &b, 1), 0);
	assert_null(b.save.put);
	assert_null(b.journal.put);
	assert_null(b.timeline);
	assert_null(b.joblog);
	/* x.res t.csv log log.res s.csv, and no temporary file */
	assert_int_equal(count_entries(), 5);
	assert_int_equal(access("x.res", F_OK), 0);
	assert_int_equal(access("t.csv", F_OK), 0);
	assert_int_equal(access("s.csv", F_OK), 0);
	assert_int_equal(sidefiles_close(&s, &b, 1), 0); /* again: nothing left to do */
}

/* An incomplete run keeps no saved results; one that never started keeps
 * no timeline. */
static void test_close_incomplete(void **state)
{
	struct sidefiles s;
	struct batch b = { 0 };

	(void)state;
	sidefiles_init(&s, &(struct sidefiles_paths){ .save = "x.res", .timeline = "t.csv" });
	assert_int_equal(sidefiles_open(&s, &b, "identity", 0, NULL, NULL), 0);
	assert_int_equal(count_entries(), 2);
	assert_int_equal(sidefiles_close(&s, &b, 0), 0);
	assert_int_equal(count_entries(), 0);
	/* Started but stopped: the timeline is kept, the results are not. */
	assert_int_equal(sidefiles_open(&s, &b, "identity", 0, NULL, NULL), 0);
	b.started_ns = 1;
	assert_int_equal(sidefiles_close(&s, &b, 0), 0);
	assert_int_equal(count_entries(), 1);
	assert_int_equal(access("t.csv", F_OK), 0);
	/* Complete but a merge or a save failed: no saved results either. */
	assert_int_equal(sidefiles_open(&s, &b, "identity", 0, NULL, NULL), 0);
	b.merge_failed = 1;
	assert_int_equal(sidefiles_close(&s, &b, 1), 0);
	assert_int_equal(access("x.res", F_OK), -1);
}

/* What make_dirs_noting() made, remove_made_dirs() takes back: only the
 * levels this call made, only while empty. */
static void test_made_dirs_taken_back(void **state)
{
	char made[PATH_MAX];
	struct stat st;

	(void)state;
	assert_int_equal(mkdir("a", 0777), 0);
	assert_int_equal(make_dirs_noting("a/b/c/", made, sizeof made), 0);
	assert_string_equal(made, "a/b");
	remove_made_dirs("a/b/c/", made);
	assert_int_equal(stat("a/b", &st), -1);
	assert_int_equal(stat("a", &st), 0);
	/* nothing made: nothing taken */
	assert_int_equal(make_dirs_noting("a", made, sizeof made), 0);
	assert_string_equal(made, "");
	remove_made_dirs("a", made);
	assert_int_equal(stat("a", &st), 0);
	/* a level that is no longer empty stays, and those above it */
	assert_int_equal(make_dirs_noting("p/q/r", made, sizeof made), 0);
	assert_string_equal(made, "p");
	write_file("p/q/kept", "x");
	remove_made_dirs("p/q/r", made);
	assert_int_equal(stat("p/q/r", &st), -1);
	assert_int_equal(stat("p/q/kept", &st), 0);
	/* a file where a level goes: an error, what was made noted */
	write_file("f", "x");
	assert_int_equal(make_dirs_noting("f/x", made, sizeof made), -1);
	assert_string_equal(made, "");
}

/* A served batch's joblog and journal (by_fd) that a submit refused
 * beside it took back before this batch had the joblog's lock: refused,
 * and said, rather than written where no name leads. */
static void test_lock_refuses_a_removed_joblog(void **state)
{
	static const char *const removed[] = { NULL, "j.log", "j.jr" };
	char msg[1024];

	(void)state;
	for (size_t i = 0; i < sizeof removed / sizeof removed[0]; i++) {
		struct sidefiles s;
		int log = open("j.log", O_RDWR | O_CREAT | O_TRUNC, 0666);
		int journal = open("j.jr", O_RDWR | O_CREAT | O_TRUNC, 0666);
		assert_true(log >= 0 && journal >= 0);
		if (removed[i] != NULL)
			assert_int_equal(unlink(removed[i]), 0);
		sidefiles_init(&s, &(struct sidefiles_paths){ .joblog = "j.log", .by_fd = 1,
							      .joblog_fd = log, .journal_fd = journal });
		catch_stderr();
		int rc = sidefiles_lock(&s, NULL);
		release_stderr(msg, sizeof msg);
		if (removed[i] == NULL) {
			assert_int_equal(rc, 0);
			assert_string_equal(msg, "");
			joblog_close(&s.joblog);
		} else {
			assert_int_equal(rc, -1);
			assert_non_null(strstr(msg, "--joblog: 'j.log' or its journal was removed "
						    "before the batch could lock it"));
		}
		close(journal);
		unlink("j.log");
		unlink("j.jr");
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_made_dirs_taken_back, enter_dir, leave_dir),
		cmocka_unit_test_setup_teardown(test_lock_refuses_a_removed_joblog, enter_dir, leave_dir),
		cmocka_unit_test_setup_teardown(test_same_existing_file, enter_dir, leave_dir),
		cmocka_unit_test_setup_teardown(test_same_existing_file_other_spelling, enter_dir, leave_dir),
		cmocka_unit_test_setup_teardown(test_same_existing_file_through_links, enter_dir, leave_dir),
		cmocka_unit_test_setup_teardown(test_same_missing_file, enter_dir, leave_dir),
		cmocka_unit_test_setup_teardown(test_same_file_through_dangling_link, enter_dir, leave_dir),
		cmocka_unit_test_setup_teardown(test_journal_collides, enter_dir, leave_dir),
		cmocka_unit_test_setup_teardown(test_directory_refused, enter_dir, leave_dir),
		cmocka_unit_test_setup_teardown(test_distinct_files_accepted, enter_dir, leave_dir),
		cmocka_unit_test_setup_teardown(test_report_collides, enter_dir, leave_dir),
		cmocka_unit_test_setup_teardown(test_in_outdir, enter_dir, leave_dir),
		cmocka_unit_test_setup_teardown(test_refused_open_changes_nothing, enter_dir, leave_dir),
		cmocka_unit_test_setup_teardown(test_open_checks_again, enter_dir, leave_dir),
		cmocka_unit_test_setup_teardown(test_open_then_close, enter_dir, leave_dir),
		cmocka_unit_test_setup_teardown(test_close_incomplete, enter_dir, leave_dir),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
