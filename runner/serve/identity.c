/*
 * identity.c - a served batch acts with its client's rights, never with
 * the server's: the leader checks every descriptor the client passed
 * (kind and access mode), then, when the client is another user, either
 * becomes that user (a server run as root: its groups, gid and uid, in
 * that order) or, a server that cannot, writes only into a directory the
 * client owns and runs none of the client's commands (--report-filter,
 * --report-to: they would run as the server's user).  See identity.h's
 * caller, leader.c, and README's "Who may do what with a server".
 */
#define _GNU_SOURCE
#include "serve_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define CLIENT_GROUPS_MAX 256

/* The descriptors as a batch uses them: the output directory a directory
 * opened for reading (a path-only one would let openat() create where the
 * client never opened anything); the joblog and journal regular files
 * open for reading and writing; the side files' temporary files
 * (--save-results, --timeline, --stats) regular files open for writing.
 * (Standard output and error need no
 * check: one not open for writing is the client's closed one, whose
 * place submit holds with /dev/null read-only; writing there fails, and
 * the batch says so as a direct run would.)  Returns 0, or -1 with *why. */
static int check_descriptors(const int files[LEADER_FDS - 3], const char **why)
{
	struct stat st;
	int fl = fcntl(files[0], F_GETFL);

	if (fl < 0 || (fl & O_PATH) || (fl & O_ACCMODE) != O_RDONLY ||
	    fstat(files[0], &st) != 0 || !S_ISDIR(st.st_mode))
		return *why = "the output directory must be a directory opened for reading", -1;
	for (int i = 1; i < LEADER_FDS - 3; i++) {
		if (files[i] < 0)
			continue;
		fl = fcntl(files[i], F_GETFL);
		int mode_ok = i < 3 ? (fl & O_ACCMODE) == O_RDWR
				    : (fl & O_ACCMODE) == O_WRONLY || (fl & O_ACCMODE) == O_RDWR;
		if (fl < 0 || (fl & O_PATH) || !mode_ok || fstat(files[i], &st) != 0 ||
		    !S_ISREG(st.st_mode))
			return *why = i < 3 ? "the joblog and its journal must be regular files open "
					      "for reading and writing"
					    : "a side file (--save-results, --timeline, --stats) must "
					      "be a regular file open for writing", -1;
	}
	return 0;
}

/* Become the peer: its supplementary groups (SO_PEERGROUPS), gid, uid.
 * The change clears the parent-death signal: set it again, and make sure
 * the generation did not die in between.  Returns 0, or -1 with *why. */
static int become(int conn, const struct ucred *peer, const char **why)
{
	gid_t groups[CLIENT_GROUPS_MAX];
	socklen_t len = sizeof groups;
	pid_t parent = getppid();

	if (getsockopt(conn, SOL_SOCKET, SO_PEERGROUPS, groups, &len) != 0)
		return *why = "cannot read the client's groups", -1;
	if (setgroups(len / sizeof groups[0], groups) != 0 || setgid(peer->gid) != 0 ||
	    setuid(peer->uid) != 0)
		return *why = "cannot take the client's identity", -1;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		return *why = "the server went away", -1;
	return 0;
}

/* A server that cannot become its client runs the batch as itself: a
 * client's --report-filter or --report-to would then be a command run
 * with the server's rights, which the client does not have.  Returns 0
 * when the request names neither, else -1 with the reason in why. */
static int refuse_commands(const struct proto_request *rq, uid_t client, char *why,
			   size_t size)
{
	int filter = (rq->present & (1u << PF_REPORT_FILTER)) != 0;
	int to = (rq->present & (1u << PF_REPORT_TO)) != 0;

	if (!filter && !to)
		return 0;
	snprintf(why, size, "%s%s%s: this server (uid %ld) cannot act as you (uid %ld): "
		 "it would run your command as its own user", filter ? "--report-filter" : "",
		 filter && to ? ", " : "", to ? "--report-to" : "", (long)getuid(), (long)client);
	return -1;
}

int leader_take_client(int conn, const struct proto_request *rq,
		       const int files[LEADER_FDS - 3], char *why, size_t size)
{
	struct ucred peer;
	socklen_t len = sizeof peer;
	const char *reason = NULL;
	struct stat st;

	if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &len) != 0)
		reason = "cannot read the client's credentials";
	else if (check_descriptors(files, &reason) != 0)
		;
	else if (peer.uid == getuid())
		return 0;
	else if (getuid() == 0)
		(void)become(conn, &peer, &reason);
	else if (refuse_commands(rq, peer.uid, why, size) != 0)
		return -1;
	else if (fstat(files[0], &st) != 0 || st.st_uid != peer.uid)
		reason = "this server serves another user only into a directory that user owns "
			 "(run the server as root, or give -o a directory of your own)";
	if (reason == NULL)
		return 0;
	snprintf(why, size, "%s", reason);
	return -1;
}
