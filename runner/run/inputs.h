/*
 * inputs.h - the input files of a run: which of the workload's options
 * name them, what each file is before and after the setup, and the
 * identity text's body (runid.h) built from them and the arguments, so
 * that --resume and --merge never mix results of two different inputs.
 *
 * An input is the value of an option the workload's table declares
 * COWRUN_OPT_INPUT; or, in a table that declares none, of a STRING option
 * whose value names an existing regular file, unless the table flags it
 * COWRUN_OPT_NOT_INPUT or COWRUN_OPT_TUNING or the user said --not-input.
 * Options flagged COWRUN_OPT_TUNING are left out of the body.
 *
 * One setup per process (a served generation is a process of its own):
 * this module keeps the inputs of the last setup for the batches after it.
 */
#ifndef COWRUN_INPUTS_H
#define COWRUN_INPUTS_H

#include "cowrun.h"

#include <stddef.h>
#include <stdint.h>

/* Does every name in `names` (with or without "--") name an option of w's
 * table that could name a file (STRING or INPUT)?  Returns 0, or -1 after
 * one line naming the first that does not ("--not-input: ..."). */
int inputs_check_names(const struct cowrun_workload *w, const char *const *names, size_t n);

/*
 * Find the inputs in the workload's arguments argv[1..argc-1] (kept: the
 * caller keeps them alive) and, with `look`, what each file is now.  A
 * merge that runs no setup does not look (it needs no input file): its
 * inputs stay unknown until inputs_take_from().  Returns 0, or -1 after
 * one line (a --not-input name, out of memory).
 */
int inputs_find(const struct cowrun_workload *w, int argc, char **argv,
		const char *const *not_inputs, size_t nnot, int look);

/*
 * --resume, before the setup: compare the run seed and the inputs as they
 * are now (path, device, inode, size, modification time; their content
 * is not known yet) with those the journal `journal` recorded, so another
 * --seed or a changed input is refused before an expensive setup.  Nothing to compare (no journal, or
 * one this cowrun cannot read: the later full read says why) is no
 * refusal.  Returns 0, or -1 after one line naming the file and what
 * changed.
 */
int inputs_check_journal(const struct cowrun_workload *w, uint64_t seed, const char *journal);

/*
 * After the setup: each input's identity.  Refused if a file changed
 * while the setup read it; its hash is the one the workload handed over
 * (cowrun_input_hash()) or is computed here, on the setup threads.  With
 * `verbose`, one line says how many inputs, their bytes, where each hash
 * came from and what hashing cost.  Returns 0, or -1 after one line.
 */
int inputs_settle(const char *workload, int verbose);

/*
 * A merge without setup: take the inputs' kind, size and hash from the
 * identity of results file `path` (the first the merge reads), which
 * every file is then compared with; an option guessed there and not here
 * (or here and not there) is settled the way the file says.  Nothing
 * happens if the file cannot be read (the merge says why).  Returns 0, or
 * -1 (ENOMEM).
 */
int inputs_take_from(const char *path);

/* The identity's body: the inputs' lines, then the arguments
 * (results_identity()), after inputs_find() (and inputs_settle() or
 * inputs_take_from()).  malloc'd (the caller frees it), or NULL (ENOMEM). */
char *inputs_body(void);

/* The script of a workload that parses its own arguments (its first
 * argument), after inputs_find(): its canonical path as found before the
 * setup (absolute, as given, if it cannot be resolved), what its
 * manifest is keyed by (manifest.h); NULL for any other workload. */
const char *inputs_script(void);

/* Forget the inputs (the strings stay the caller's). */
void inputs_free(void);

#endif
