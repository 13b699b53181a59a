/*
 * inputid.h - the identity of an input file: what --resume and --merge
 * compare so that results of two different inputs never mix.
 *
 * An identity is the file's kind and size and a hash of its content (the
 * part a merge compares: shards come from other hosts and mounts), and its
 * canonical path, device, inode and modification time (the part only a
 * resume on the same host compares, and the one a fast check reads before
 * any setup).  The content hash is cowrun.h's: XXH3 of fixed blocks of
 * COWRUN_INPUT_BLOCK bytes, hashed on the setup threads, or taken from the
 * workload's own read (cowrun_input_hash()).
 */
#ifndef COWRUN_INPUTID_H
#define COWRUN_INPUTID_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

enum inputid_kind {
	INPUT_UNKNOWN = 0,  /* not looked at: a merge that runs no setup */
	INPUT_MISSING,      /* no such file (the setup decides what that means) */
	INPUT_FILE,         /* a regular file */
	INPUT_OTHER,        /* a pipe, a device, a directory: never read here */
};

struct inputid {
	enum inputid_kind kind;
	uint64_t size;           /* INPUT_FILE */
	int hashed;              /* hash is set */
	uint64_t hash;
	uint64_t dev, ino;       /* INPUT_FILE */
	int64_t mtime_s;         /* INPUT_FILE */
	long mtime_ns;
	char path[PATH_MAX];     /* canonical; as given if it cannot be resolved */
};

/* Look at the file `given` names (following links): kind, size, device,
 * inode, mtime and canonical path; no hash yet.  A missing or unreadable
 * file is INPUT_MISSING, not an error: the setup says why it cannot read
 * it. */
void inputid_stat(struct inputid *id, const char *given);

/* Are a and b the same file in the same state: kind, size, device, inode,
 * mtime (a hash is not compared)? */
int inputid_same_state(const struct inputid *a, const struct inputid *b);

/*
 * Hash the content of the regular file `given` (id filled by inputid_stat()
 * and still describing it) on the setup threads (cowrun_parallel()).
 * Returns 0 with id->hash set, or -1 after a message naming the file: it
 * cannot be read, or it changed while it was read.
 */
int inputid_hash(struct inputid *id, const char *given);

/* The content hash (as above) of the first `size` bytes of the file open
 * on fd, read with pread: on the setup threads if `parallel`, else in
 * this thread (from inside a cowrun_parallel() block).  Returns 0 with
 * *hash set, or -1 with errno (EAGAIN: the file ended before `size`). */
int inputid_hash_fd(int fd, uint64_t size, int parallel, uint64_t *hash);

/* A hash the workload handed over with cowrun_input_hash() for the file
 * in id's state: 1 with id->hash set, else 0. */
int inputid_take_reported(struct inputid *id);

/* Forget the hashes workloads handed over (before a new setup). */
void inputid_forget_reported(void);

/*
 * The identity's lines for input number n (from 1) of option `option`:
 *   input N OPTION KIND SIZE HASH[ guessed]     compared by merge and resume
 *   input-at N DEV:INO MTIME PATH               compared by resume only
 * KIND is file, missing, other or unknown; SIZE and HASH are "-" when not
 * known; PATH, the rest of the line, has '%' and control characters
 * escaped as %XX.  `guessed`: the option was taken for an input because its value
 * names a file (the workload declares none).  No input-at line for an
 * unknown input, nor for one without a path (taken from saved results).
 */
void inputid_format(FILE *out, unsigned n, const char *option, int guessed,
		    const struct inputid *id);

/* Undo the %XX escapes of a path written by inputid_format(), in place. */
void inputid_unescape(char *path);

#endif
