/*
 * test_cgroup.c - unit tests for runner/os/cgroup.c and memavail.c on a
 * fake cgroup tree: the walk visits a process's cgroup and each parent up
 * to its hierarchy's root (v2 at the root and under unified/, v1 only in
 * the hierarchy whose controller list names the controller), under
 * COWRUN_CGROUP_ROOT; mem_available_bytes() answers the tightest room
 * (limit less usage, plus the inactive page cache) on that walk, v1 and
 * v2.  Each test has a temporary directory of its own: the tree in cg/,
 * the process's cgroup list in self (COWRUN_CGROUP_SELF).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "os/cgroup.h"
#include "os/memavail.h"
#include "os/fileops.h"
#include "scratch.h"

#define MIB (1024LL * 1024)

static char dir[PATH_MAX - 64]; /* this test's directory */
static char root[PATH_MAX];   /* dir/cg: COWRUN_CGROUP_ROOT */

static int make_tree(void **state)
{
	char self[PATH_MAX];

	(void)state;
	if (scratch_make(dir, sizeof dir, "cgroup") != 0)
		return -1;
	snprintf(root, sizeof root, "%s/cg", dir);
	snprintf(self, sizeof self, "%s/self", dir);
	return setenv("COWRUN_CGROUP_ROOT", root, 1) == 0 && setenv("COWRUN_CGROUP_SELF", self, 1) == 0
		? 0 : -1;
}

static int remove_tree(void **state)
{
	(void)state;
	unsetenv("COWRUN_CGROUP_ROOT");
	unsetenv("COWRUN_CGROUP_SELF");
	return scratch_remove(dir);
}

/* Write `text` to `base`/`rel`, making its directories. */
static void write_at(const char *base, const char *rel, const char *text)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", base, rel);
	*strrchr(path, '/') = '\0';
	assert_int_equal(make_dirs(path), 0);
	snprintf(path, sizeof path, "%s/%s", base, rel);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* A file of the fake tree, ROOT/rel. */
static void put(const char *rel, const char *text)
{
	write_at(root, rel, text);
}

/* A number of bytes, as a cgroup file holds it. */
static void put_bytes(const char *rel, long long bytes)
{
	char text[32];

	snprintf(text, sizeof text, "%lld\n", bytes);
	put(rel, text);
}

/* The process's cgroup list (what /proc/self/cgroup would say). */
static void set_self(const char *text)
{
	write_at(dir, "self", text);
}

/* ---- the walk ---- */

static char visited[4096];

/* Record "PATH-UNDER-ROOT vN;" for each visit. */
static void record(const char *at, int v1, void *ctx)
{
	size_t len = strlen(visited), top = strlen(root);

	assert_ptr_equal(ctx, visited);
	assert_memory_equal(at, root, top);
	snprintf(visited + len, sizeof visited - len, "%s v%d;", at[top] ? at + top : "(root)",
		 v1 ? 1 : 2);
}

static void expect_walk(const char *controller, const char *want)
{
	visited[0] = '\0';
	assert_int_equal(cgroup_walk(controller, record, visited), 0);
	assert_string_equal(visited, want);
}

static void test_walk_v2_cgroup_and_parents(void **state)
{
	(void)state;
	set_self("0::/a/b\n");
	expect_walk("memory", "/a/b v2;/a v2;(root) v2;/unified/a/b v2;/unified/a v2;/unified v2;");
	expect_walk("cpu", "/a/b v2;/a v2;(root) v2;/unified/a/b v2;/unified/a v2;/unified v2;");
	set_self("0::/\n");
	expect_walk("memory", "(root) v2;/unified v2;");
}

static void test_walk_v1_only_the_hierarchy_naming_it(void **state)
{
	(void)state;
	set_self("9:name=systemd:/s\n"
		 "5:cpu,cpuacct:/x/y\n"
		 "4:memory:/a/b\n"
		 "3:memory_extra,cpuset:/z\n"
		 "2:pids:/\n");
	expect_walk("memory", "/memory/a/b v1;/memory/a v1;/memory v1;");
	expect_walk("cpu", "/cpu,cpuacct/x/y v1;/cpu,cpuacct/x v1;/cpu,cpuacct v1;");
	expect_walk("cpuacct", "/cpu,cpuacct/x/y v1;/cpu,cpuacct/x v1;/cpu,cpuacct v1;");
	expect_walk("pids", "/pids v1;");
	expect_walk("blkio", "");
}

static void test_walk_hybrid_and_unreadable(void **state)
{
	(void)state;
	set_self("4:memory:/a\n0::/b\n");
	expect_walk("memory", "/memory/a v1;/memory v1;/b v2;(root) v2;/unified/b v2;/unified v2;");
	setenv("COWRUN_CGROUP_SELF", "/nonexistent/cgroup", 1);
	visited[0] = '\0';
	assert_int_equal(cgroup_walk("memory", record, visited), -1);
	assert_string_equal(visited, "");
}

/* ---- mem_available_bytes() on the walk ---- */

static void expect_avail(long long want)
{
	assert_int_equal((long long)mem_available_bytes(), want);
}

/* MemAvailable alone, well above the fake limits of these tests (MiBs). */
static void expect_no_limit(void)
{
	size_t avail = mem_available_bytes();

	if (avail <= (size_t)(128 * MIB))
		fail_msg("no cgroup limit: %zu bytes, want MemAvailable (over 128 MiB)", avail);
}

/* One step of a test: a cgroup's limit and usage (v2's or v1's files;
 * a limit < 0 is "max"), then what mem_available_bytes() must say. */
struct step {
	const char *at;            /* the cgroup's directory under ROOT */
	long long limit, usage;
	long long want;
};

static void run_steps(int v1, const struct step *steps, size_t n)
{
	char rel[PATH_MAX];

	for (size_t i = 0; i < n; i++) {
		const struct step *s = &steps[i];
		snprintf(rel, sizeof rel, "%s/%s", s->at, v1 ? "memory.limit_in_bytes" : "memory.max");
		if (s->limit < 0)
			put(rel, "max\n");
		else
			put_bytes(rel, s->limit);
		snprintf(rel, sizeof rel, "%s/%s", s->at, v1 ? "memory.usage_in_bytes" : "memory.current");
		put_bytes(rel, s->usage);
		expect_avail(s->want);
	}
}

static void test_memavail_v2(void **state)
{
	static const struct step steps[] = {
		/* limit - usage + inactive_file (not active_file): 100 - 40 + 10 */
		{ "a/b", 100 * MIB, 40 * MIB, 70 * MIB },
		{ "a", 50 * MIB, 45 * MIB, 5 * MIB },           /* a parent tighter */
		{ "a", -1, 45 * MIB, 70 * MIB },                /* "max": no limit */
		{ "unified/a", 30 * MIB, 10 * MIB, 20 * MIB },  /* a hybrid mount's v2 */
		{ ".", 8 * MIB, 9 * MIB, 0 },                   /* the root, over its limit */
	};

	(void)state;
	set_self("0::/a/b\n");
	expect_no_limit();
	put("a/b/memory.stat", "anon 1\nactive_file 999\ninactive_file 10485760\n");
	run_steps(0, steps, sizeof steps / sizeof steps[0]);
}

static void test_memavail_v1(void **state)
{
	static const struct step steps[] = {
		/* limit - usage + total_inactive_file: 64 - 16 + 2 */
		{ "memory/a/b", 64 * MIB, 16 * MIB, 50 * MIB },
		{ "memory", 40 * MIB, 37 * MIB, 3 * MIB },      /* the hierarchy's root */
		/* v1's "no limit" is a huge number */
		{ "memory", 9223372036854771712LL, 37 * MIB, 50 * MIB },
	};

	(void)state;
	set_self("5:cpu,cpuacct:/a/b\n4:memory:/a/b\n");
	/* Memory files in a hierarchy without the memory controller, and v2's
	 * names in the memory one, are not read. */
	put_bytes("cpu,cpuacct/a/b/memory.limit_in_bytes", 1 * MIB);
	put_bytes("cpu,cpuacct/a/b/memory.usage_in_bytes", 0);
	put_bytes("memory/a/b/memory.max", 1 * MIB);
	put_bytes("memory/a/b/memory.current", 0);
	expect_no_limit();
	put("memory/a/b/memory.stat", "inactive_file 1\ntotal_inactive_file 2097152\n");
	run_steps(1, steps, sizeof steps / sizeof steps[0]);
}

/* Each test on a fresh tree of its own. */
#define ON_A_TREE(test) cmocka_unit_test_setup_teardown(test, make_tree, remove_tree)

int main(void)
{
	const struct CMUnitTest tests[] = {
		ON_A_TREE(test_walk_v2_cgroup_and_parents),
		ON_A_TREE(test_walk_v1_only_the_hierarchy_naming_it),
		ON_A_TREE(test_walk_hybrid_and_unreadable),
		ON_A_TREE(test_memavail_v2),
		ON_A_TREE(test_memavail_v1),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
