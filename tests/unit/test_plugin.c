/*
 * test_plugin.c - unit tests for runner/workload/plugin.c: the search path for
 * bundled workloads ($COWRUN_WORKLOAD_PATH first, then beside the binary)
 * and names that must never reach the file system.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "workload/plugin.h"

/* This test binary's own directory. */
static void exe_dir(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);

	assert_true(n > 0);
	buf[n] = '\0';
	*strrchr(buf, '/') = '\0';
}

static void test_path_env_first_then_beside_binary(void **unused)
{
	struct plugin_path p;
	char dir[PATH_MAX], want[PATH_MAX + 64];

	(void)unused;
	setenv(PLUGIN_PATH_ENV, "/a::/b/c:", 1);
	plugin_search_path(&p);
	assert_int_equal(p.n, 4);
	assert_string_equal(p.dir[0], "/a");
	assert_string_equal(p.dir[1], "/b/c");
	exe_dir(dir, sizeof dir);
	snprintf(want, sizeof want, "%s/../lib/cowrun/workloads", dir);
	assert_string_equal(p.dir[2], want);
	snprintf(want, sizeof want, "%s/../build/workloads", dir);
	assert_string_equal(p.dir[3], want);
}

static void test_path_without_env(void **unused)
{
	struct plugin_path p;

	(void)unused;
	unsetenv(PLUGIN_PATH_ENV);
	plugin_search_path(&p);
	assert_int_equal(p.n, 2);
	setenv(PLUGIN_PATH_ENV, "", 1);
	plugin_search_path(&p);
	assert_int_equal(p.n, 2);
}

static void test_path_caps_directories(void **unused)
{
	struct plugin_path p;
	char env[PLUGIN_MAX_DIRS * 8 + 64] = "";

	(void)unused;
	for (int i = 0; i < PLUGIN_MAX_DIRS + 5; i++)
		snprintf(env + strlen(env), sizeof env - strlen(env), "/d%d:", i);
	setenv(PLUGIN_PATH_ENV, env, 1);
	plugin_search_path(&p);
	assert_int_equal(p.n, PLUGIN_MAX_DIRS);
	assert_string_equal(p.dir[PLUGIN_MAX_DIRS - 1], "/d15");
}

static void test_describe_path(void **unused)
{
	struct plugin_path p;
	char buf[64];

	(void)unused;
	setenv(PLUGIN_PATH_ENV, "/x:/y", 1);
	plugin_search_path(&p);
	p.n = 2;
	assert_string_equal(plugin_describe_path(&p, buf, sizeof buf), "/x, /y");
}

/* A name with a '/', a leading '.', or empty, is never looked up: the
 * search directory T/sub has .hidden.so and T has evil.so, which
 * "../evil" would reach; neither is found, nothing is printed. */
static void test_names_that_are_not_plain(void **unused)
{
	const struct cowrun_workload *w = (const void *)1;
	const char *bad[] = { "", ".hidden", "../evil", "a/b", "/etc/passwd" };
	char top[] = "/tmp/test_plugin.XXXXXX", sub[64], file[96];

	(void)unused;
	assert_non_null(mkdtemp(top));
	snprintf(sub, sizeof sub, "%s/sub", top);
	assert_int_equal(mkdir(sub, 0700), 0);
	snprintf(file, sizeof file, "%s/evil.so", top);
	fclose(fopen(file, "w"));
	snprintf(file, sizeof file, "%s/.hidden.so", sub);
	fclose(fopen(file, "w"));
	setenv(PLUGIN_PATH_ENV, sub, 1);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		assert_int_equal(plugin_find(bad[i], &w), 0);
		assert_null(w);
	}
	unlink(file);
	snprintf(file, sizeof file, "%s/evil.so", top);
	unlink(file);
	rmdir(sub);
	rmdir(top);
}

static void test_missing_name_is_not_found(void **unused)
{
	const struct cowrun_workload *w;

	(void)unused;
	setenv(PLUGIN_PATH_ENV, "/nonexistent-cowrun-dir", 1);
	assert_int_equal(plugin_find("no-such-workload-here", &w), 0);
	assert_null(w);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path_env_first_then_beside_binary),
		cmocka_unit_test(test_path_without_env),
		cmocka_unit_test(test_path_caps_directories),
		cmocka_unit_test(test_describe_path),
		cmocka_unit_test(test_names_that_are_not_plain),
		cmocka_unit_test(test_missing_name_is_not_found),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
