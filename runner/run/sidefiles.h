/*
 * sidefiles.h - the files a run writes besides its reports: --save-results,
 * --timeline, --joblog and its results journal (JOBLOG.res), --stats.  This
 * module is the one place that knows their life cycle:
 *
 *   sidefiles_init    take the paths from the command line (nothing opened)
 *   sidefiles_check   refuse a directory, or two options naming one file,
 *                     before anything is opened (touches no file)
 *   sidefiles_lock    lock the joblog (one run per joblog) and, for
 *                     --resume, read and check it
 *   sidefiles_check_reports  refuse a side file that a task's report would
 *                     overwrite, once the task names are known
 *   sidefiles_open    open them, lending the handles to the batch
 *   sidefiles_close   commit or remove each, as the run ended
 *
 * A later step (a checksum per file) belongs here, as a field of struct
 * sidefiles and a call in the step it belongs to.
 */
#ifndef COWRUN_SIDEFILES_H
#define COWRUN_SIDEFILES_H

#include "cowrun.h"
#include "files/joblog.h"
#include "files/results.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>

struct batch;
struct worker_stats;

/* The side files named on the command line; NULL: not given.  The strings
 * are borrowed (argv's) and must outlive the struct sidefiles. */
struct sidefiles_paths {
	const char *save;        /* --save-results FILE */
	const char *timeline;    /* --timeline FILE */
	const char *joblog;      /* --joblog FILE, or +FILE to append */
	const char *stats;       /* --stats FILE */
	int resume;              /* --resume(-failed): append to the joblog */
	/* A served batch (cowrun serve): its client opened the joblog and
	 * its journal, and created the temporary files of --save-results,
	 * --timeline and --stats, and passed them (-1: not given); the
	 * names are for messages only, nothing is opened, checked, renamed
	 * or removed by name, and the descriptors are this module's to
	 * close. */
	int by_fd;
	int joblog_fd, journal_fd;
	int save_fd, timeline_fd, stats_fd;
	/* A served batch: which side files lie in the output directory, as
	 * its client found them (sidefiles_in_outdir()); NULL: none. */
	const char *in_outdir;
};

/* sidefiles_in_outdir()'s text, NUL included, fits in this. */
#define SIDEFILES_IN_OUTDIR_MAX (5 * COWRUN_NAME_MAX)

/* --timeline's file, written under a temporary name until it is kept. */
struct sidefiles_temp {
	FILE *f;
	char temp[PATH_MAX];
};

/* Everything below the paths belongs to this module: sidefiles_close()
 * closes it.  The batch only borrows the handles sidefiles_open() lends. */
struct sidefiles {
	struct sidefiles_paths paths;
	char journal_path[PATH_MAX]; /* JOBLOG.res; "" without --joblog */
	struct results_writer save;  /* under a temporary name until committed */
	struct sidefiles_temp timeline;
	struct joblog joblog;        /* written in place */
	struct results_writer journal; /* written in place */
	FILE *stats;                 /* written in place */
	int stats_written;           /* sidefiles_write_stats() wrote it all */
	int complete;                /* closed with the saved results committed */
	unsigned whole;              /* SIDEFILE_WHOLE_*: those a run keeps */
	/* A direct run's paths made absolute before the setup
	 * (sidefiles_anchor()), for sidefiles_rebase(). */
	char save_at[PATH_MAX], timeline_at[PATH_MAX], joblog_at[PATH_MAX + 1];
	char stats_at[PATH_MAX];
	int anchored;
};

/* The side files written under temporary names, as sidefiles_close()
 * finds them (s->whole): whole and to be kept, as a direct run keeps
 * them (the saved results committed, the timeline of a task phase that
 * started, the stats written). */
enum {
	SIDEFILE_WHOLE_SAVE = 1,
	SIDEFILE_WHOLE_TIMELINE = 2,
	SIDEFILE_WHOLE_STATS = 4,
};

/* Take the paths (copied, the strings borrowed); open nothing.  Every
 * later step may follow, and sidefiles_close() is safe at any point. */
void sidefiles_init(struct sidefiles *s, const struct sidefiles_paths *paths);

/*
 * Before the setup, which may change the working directory (os.chdir()):
 * take each path (a direct run's) as an absolute one too, kept aside.
 * Touches no file.
 */
void sidefiles_anchor(struct sidefiles *s);

/*
 * After a setup that changed the working directory: the paths are the
 * absolute ones sidefiles_anchor() took (and the joblog's journal beside
 * the joblog), so every file is opened, renamed and removed where the
 * command line meant; messages then name them so.  Nothing without
 * sidefiles_anchor().
 */
void sidefiles_rebase(struct sidefiles *s);

/*
 * Check every side file before any is opened: none is a directory, none
 * that is renamed into place (--save-results, --timeline) is a device, a
 * pipe or a socket, and no
 * two options (the journal JOBLOG.res counted as one) name the same file:
 * compared by device and inode where it exists (a regular file: two
 * options may both name /dev/null), else by its canonical path (the real
 * path of its directory, and its name).  Creates, opens and
 * changes no file.  Returns 0, or -1 after one message naming the options
 * and the file: "--joblog and --stats name the same file 'x'".
 */
int sidefiles_check(const struct sidefiles *s);

/*
 * Take the joblog's lock (sidefiles_check() passed): open it without
 * truncating it, created if missing, and hold an exclusive flock() on it
 * until sidefiles_close(), waiting at most JOBLOG_LOCK_WAIT_S seconds
 * (COWRUN_LOCK_WAIT overrides it) for another run to let go.  With
 * `workload` (--resume), read and check the joblog too (joblog_read()).
 * Nothing without --joblog.  Returns 0, or -1 after one message; a joblog
 * this created is then removed again, and sidefiles_close() removes it
 * too if the run never starts writing it.
 */
int sidefiles_lock(struct sidefiles *s, const char *workload);

/*
 * Which side files lie in `outdir` (paths as given, relative to the
 * working directory), as one text: five names separated by '/', one for
 * each side file in the order --save-results, --timeline, --joblog, its
 * journal, --stats: its name in `outdir` if its canonical path is there
 * (as sidefiles_check() finds canonical paths), else empty ("" when not
 * given, or too long for a task's name).  A served batch's client sends
 * it (cowrun submit), since only it can resolve its paths; its batch
 * checks it against the task names.  Touches no file.
 */
void sidefiles_in_outdir(const struct sidefiles *s, const char *outdir, char *text,
			 size_t size);

/*
 * Refuse a side file that lies in `outdir` under the name of a task's
 * report, which would overwrite it or be overwritten.  `is_report(ctx,
 * name)` says whether a name is one; the caller knows the names.  Where
 * each lies is found here (sidefiles_in_outdir()), or for a served batch
 * (by_fd) taken from paths.in_outdir, its client's finding.  Call before
 * the output directory is created; touches no file.  Returns 0 or -1
 * after one message.
 */
int sidefiles_check_reports(const struct sidefiles *s, const char *outdir,
			    int (*is_report)(void *ctx, const char *name), void *ctx);

/*
 * Open the side files (sidefiles_check() passed) and lend them to the
 * batch: b->save, b->timeline, b->joblog, b->journal.  In this order, so a
 * refused run leaves every earlier file as it was: first the files written
 * under a temporary name (--save-results, --timeline); then `prepare(ctx)`,
 * the caller's last step that may refuse the run (creating the output
 * directory), if not NULL; last the files written in place (--stats, the
 * locked joblog, which a fresh run truncates and --resume cuts back to
 * its last complete line, and its journal, truncated to
 * `journal_keep` bytes when --resume appends to it, else started anew).
 * The joblog is locked here if sidefiles_lock() was not called.
 * `identity` heads the saved results and a new journal.  Returns 0, or -1
 * after a message; everything opened is then closed again and temporary
 * files removed, as by sidefiles_close(s, b, 0).
 */
int sidefiles_open(struct sidefiles *s, struct batch *b, const char *identity,
		   long long journal_keep, int (*prepare)(void *ctx), void *ctx);

/* --stats: the CSV header and one row per worker, flushed.  Nothing
 * without --stats.  Returns 0 or -1 after a message naming the file. */
int sidefiles_write_stats(struct sidefiles *s, const struct worker_stats *rows, size_t n);

/*
 * The side files are a child's now (serial and omp run their task phase
 * in a child under a watchdog): this process keeps only the joblog's lock
 * until sidefiles_close(), and removes nothing the child may have written.
 */
void sidefiles_hand_over(struct sidefiles *s);

/*
 * Close them all and take them back from the batch.  The saved results
 * are committed (renamed into place) only if `complete` and no merge or
 * save failed, else removed; the timeline is kept only if the task phase
 * started (b->started_ns), else removed; the joblog, its journal and the
 * stats file are closed where they are.  A served batch's files (by_fd)
 * are only closed (the saved results fsync'd first when committed), and
 * s->complete says whether they were written whole.  Safe to call again.
 * Returns 0, or -1 after a message for each file that could not be
 * written.
 */
int sidefiles_close(struct sidefiles *s, struct batch *b, int complete);

#endif
