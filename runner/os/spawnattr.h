/*
 * spawnattr.h - the signals a spawned program starts with, the same for
 * the runner's spawn of cowrun-supervise (os/command_run.c) and the
 * supervisor's spawn of the command (tools/supervise.c): every catchable
 * signal at its default action, none blocked, whatever the caller ignores
 * or blocks, in a process group of its own.  Header-only: the supervisor
 * is a small static program that links no runner code.
 */
#ifndef COWRUN_SPAWNATTR_H
#define COWRUN_SPAWNATTR_H

#include <signal.h>
#include <spawn.h>
#include <string.h>

/*
 * Initialise *attr so.  Returns 0, or an error number (attr destroyed).
 *
 * Every bit set, not sigfillset(): that leaves out glibc's own signals
 * 32 and 33, and glibc's posix_spawn() then sets those to SIG_IGN in the
 * child (it runs with all blocked until the exec), which the exec keeps:
 * the program would start with them ignored.  At SIG_DFL before the
 * exec they are no danger: glibc sends them only to the caller's own
 * threads, never to the child.
 */
static inline int spawnattr_own_group_default_signals(posix_spawnattr_t *attr)
{
	sigset_t all, none;
	int err = posix_spawnattr_init(attr);

	if (err)
		return err;
	memset(&all, 0xff, sizeof all);
	sigdelset(&all, SIGKILL);
	sigdelset(&all, SIGSTOP);
	sigemptyset(&none);
	if ((err = posix_spawnattr_setsigdefault(attr, &all)) != 0 ||
	    (err = posix_spawnattr_setsigmask(attr, &none)) != 0 ||
	    (err = posix_spawnattr_setpgroup(attr, 0)) != 0 ||
	    (err = posix_spawnattr_setflags(attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK |
					    POSIX_SPAWN_SETPGROUP)) != 0)
		posix_spawnattr_destroy(attr);
	return err;
}

#endif
