/*
 * cgroup.h - this process's cgroups, one controller at a time: the
 * directory of the cgroup /proc/self/cgroup names for it (v2, or the v1
 * hierarchy that holds the controller) and each of its parents, for
 * cpus.c's CPU quota and memavail.c's memory limits.
 */
#ifndef COWRUN_CGROUP_H
#define COWRUN_CGROUP_H

/* Called with a cgroup's directory (its full path, to which the caller
 * appends a file name such as "memory.max"); `v1`: a v1 hierarchy's
 * directory (v1 file names), else v2's.  `ctx` is cgroup_walk()'s. */
typedef void cgroup_visit_fn(const char *dir, int v1, void *ctx);

/* For each cgroup of this process that may hold `controller` ("cpu",
 * "memory"): call `visit` for its directory, then for each parent up to
 * and including the root of its hierarchy.  The cgroup file systems are
 * under COWRUN_CGROUP_ROOT (default /sys/fs/cgroup): v2 there and under
 * unified/ (a hybrid mount: both are visited), a v1 hierarchy in the
 * directory named after its controller list ("cpu,cpuacct") when that
 * list names `controller`.  COWRUN_CGROUP_SELF names the file that lists
 * this process's cgroups (default /proc/self/cgroup; the unit tests
 * point it at one of their own).  A path too long is not visited.
 * Returns 0, or -1 with errno if that file cannot be read. */
int cgroup_walk(const char *controller, cgroup_visit_fn *visit, void *ctx);

#endif
