/*
 * runid.h - a run's identity text, the first frame of saved results and
 * of a results journal: read back and compared with this run's, with one
 * line saying what differs.
 *
 * One "KEY VALUE" line each (results.c writes the head, run/inputs.c the
 * rest):
 *
 *   cowrun results 5          format, cowrun's version, the workload and
 *   cowrun 0.4.0              its ABI: compared as text
 *   workload sales
 *   abi 3
 *   seed 0                    the run seed (--seed): compared first, even
 *                             before the setup
 *   tasks 64                  the task count
 *   names 0123456789abcdef    the hash of the task names in order (none
 *                             before the setup)
 *   context 3f0c...           the hash of the merge context, if any
 *   input 1 --input file 132000000 92c5...    each input (inputid.h): kind,
 *   input-at 1 2049:1234 1700000000.000000000 /data/tx.csv   size, hash;
 *                             where it is (a resume compares that too)
 *   arg --input               the arguments, an input's value as
 *   arg-input 1               "arg-input N", options that change no
 *   arg --rows                result left out
 *   arg 10
 *
 * A line "inputs-from FILE" in this run's identity (a merge without setup
 * took its inputs from FILE) is never compared: messages name FILE.  Nor
 * is "run-id ID", the run that wrote the file (the id --metrics and
 * --log-time give it), which every run has its own of.
 */
#ifndef COWRUN_RUNID_H
#define COWRUN_RUNID_H

#include <limits.h>
#include <stddef.h>

/* runid_check()'s flags. */
enum {
	RUNID_RESUME = 1,  /* compare where each input is too (the same host) */
	RUNID_EARLY = 2,   /* before the setup: no task count, no merge
			    * context, no content hash to compare yet;
			    * only an input that differs is refused */
};

/*
 * Does the saved identity `saved` (its frame's payload, `len` bytes)
 * match this run's, `ours`?  Returns 0 if it does, else -1 after one line
 * "CONTEXT: ..." naming `path`: for another seed, both seeds; for as many
 * tasks of other names, both names' hashes; for an input that differs,
 * which input and what changed (size, content, or with RUNID_RESUME its path, device
 * and inode, or modification time); else both runs described, as
 * "'PATH' was saved by 'sales --rows 10 (64 tasks)', not by this run's
 * '...'".
 */
int runid_check(const char *context, const char *path, const char *saved, size_t len,
		const char *ours, int flags);

/* One input of an identity, as runid_inputs() reads it. */
struct runid_input {
	unsigned n;
	char option[64];         /* "--input" */
	char kind[16];           /* file, missing, other, unknown */
	char size[24], hash[24]; /* "-" when not known */
	int guessed;
	char where[96];          /* "DEV:INO MTIME", "- -", or "" without an input-at line */
	char path[PATH_MAX];     /* unescaped; "" without an input-at line */
};

/* The inputs of an identity text, in order: a malloc'd array (the caller
 * frees it) in *inputs, their count in *n.  Returns 0, or -1 (ENOMEM). */
int runid_inputs(const char *text, size_t len, struct runid_input **inputs, size_t *n);

/* The value of line "KEY VALUE" of an identity text, into buf ("?" if
 * there is none). */
void runid_field(const char *text, size_t len, const char *key, char *buf, size_t size);

#endif
