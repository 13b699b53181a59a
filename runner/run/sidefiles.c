/*
 * sidefiles.c - the side files' life cycle: checked before any is opened,
 * opened in an order that leaves earlier files alone when a run is refused,
 * committed or removed at the end.  See sidefiles.h.
 */
#define _GNU_SOURCE
#include "sidefiles.h"
#include "resume.h"
#include "engine/batch.h"
#include "os/procstat.h"
#include "os/util.h"
#include "os/fileops.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SIDEFILES_MAX 5          /* save, timeline, joblog, journal, stats */
#define LINK_DEPTH_MAX 40        /* symbolic links followed, as the kernel's */

/* One side file as the checks see it: the option that named it, whether
 * it is written under a temporary name and renamed over `path`, and its
 * place in sidefiles_in_outdir()'s text. */
struct side_entry {
	const char *option;
	const char *path;
	int renamed;
	int slot;
};

/* What a side file is on disk: an existing file by its device and inode,
 * a missing one by its canonical path. */
struct file_id {
	int exists;
	int regular;             /* a device or a pipe is no file to clobber */
	dev_t dev;
	ino_t ino;
	char canonical[PATH_MAX];
};

void sidefiles_init(struct sidefiles *s, const struct sidefiles_paths *paths)
{
	memset(s, 0, sizeof *s);
	s->paths = *paths;
	s->save.fd = s->journal.fd = s->joblog.fd = -1;
	if (paths->joblog)
		resume_journal_path(paths->joblog, s->journal_path, sizeof s->journal_path);
}

/* `given` made absolute into at (size bytes), a leading '+' kept. */
static void anchor_one(const char *given, char *at, size_t size)
{
	int plus = given[0] == '+';

	at[0] = '+';
	absolute_path(given + plus, at + plus, size - (size_t)plus);
}

void sidefiles_anchor(struct sidefiles *s)
{
	const struct sidefiles_paths *p = &s->paths;

	if (p->by_fd)
		return;
	if (p->save)
		anchor_one(p->save, s->save_at, sizeof s->save_at);
	if (p->timeline)
		anchor_one(p->timeline, s->timeline_at, sizeof s->timeline_at);
	if (p->joblog)
		anchor_one(p->joblog, s->joblog_at, sizeof s->joblog_at);
	if (p->stats)
		anchor_one(p->stats, s->stats_at, sizeof s->stats_at);
	s->anchored = 1;
}

void sidefiles_rebase(struct sidefiles *s)
{
	struct sidefiles_paths *p = &s->paths;

	if (!s->anchored)
		return;
	p->save = p->save ? s->save_at : NULL;
	p->timeline = p->timeline ? s->timeline_at : NULL;
	p->stats = p->stats ? s->stats_at : NULL;
	if (p->joblog) {
		p->joblog = s->joblog_at;
		/* Locked by its name as given: removed, if it must be, by this one. */
		if (s->joblog.path)
			s->joblog.path = p->joblog + (p->joblog[0] == '+');
		resume_journal_path(p->joblog, s->journal_path, sizeof s->journal_path);
	}
}

/* The side files given, in the order messages name them. */
static size_t list_entries(const struct sidefiles *s, struct side_entry e[SIDEFILES_MAX])
{
	const char *joblog = s->paths.joblog;
	size_t n = 0;

	if (s->paths.save)
		e[n++] = (struct side_entry){ "--save-results", s->paths.save, 1, 0 };
	if (s->paths.timeline)
		e[n++] = (struct side_entry){ "--timeline", s->paths.timeline, 1, 1 };
	if (joblog) {
		e[n++] = (struct side_entry){ "--joblog", joblog[0] == '+' ? joblog + 1 : joblog, 0, 2 };
		e[n++] = (struct side_entry){ "--joblog's journal", s->journal_path, 0, 3 };
	}
	if (s->paths.stats)
		e[n++] = (struct side_entry){ "--stats", s->paths.stats, 0, 4 };
	return n;
}

/* Split a path into its directory and its last name, trailing slashes
 * dropped: "a/b" -> "a", "b"; "b" -> ".", "b"; "/b" -> "/", "b". */
static void split_path(const char *path, char *dir, size_t size, const char **base)
{
	snprintf(dir, size, "%s", path);
	size_t n = strlen(dir);
	while (n > 1 && dir[n - 1] == '/')
		dir[--n] = '\0';
	char *slash = strrchr(dir, '/');
	if (slash == NULL) {
		*base = path;
		snprintf(dir, size, ".");
		return;
	}
	*base = path + (slash + 1 - dir);
	if (slash == dir)
		slash++; /* keep the root */
	*slash = '\0';
}

/* `dir` (canonical) joined with `name` as the kernel would resolve it:
 * "." is dir itself, ".." its parent. */
static void join_name(char *out, size_t size, const char *dir, const char *name,
		      size_t name_len)
{
	if (name_len == 0 || (name_len == 1 && name[0] == '.')) {
		snprintf(out, size, "%s", dir);
	} else if (name_len == 2 && strncmp(name, "..", 2) == 0) {
		snprintf(out, size, "%s", dir);
		char *slash = strrchr(out, '/');
		if (slash != NULL)
			slash[slash == out] = '\0';
	} else if (snprintf(out, size, "%s%s%.*s", dir, strcmp(dir, "/") == 0 ? "" : "/",
			    (int)name_len, name) >= (int)size) {
		out[size - 1] = '\0'; /* cut short: too long to open anyway */
	}
}

static void canonical_path(const char *path, char *out, size_t size, int depth);

/* A symbolic link that leads nowhere yet: the file opening it would
 * create.  Returns 1 if `path` is one (out filled), else 0. */
static int follow_dangling_link(const char *path, const char *dir, char *out, size_t size,
				int depth)
{
	char target[PATH_MAX], joined[2 * PATH_MAX];
	struct stat st;
	ssize_t n;

	if (lstat(path, &st) != 0 || !S_ISLNK(st.st_mode) ||
	    (n = readlink(path, target, sizeof target - 1)) <= 0)
		return 0;
	target[n] = '\0';
	if (target[0] == '/') {
		canonical_path(target, out, size, depth + 1);
		return 1;
	}
	snprintf(joined, sizeof joined, "%s/%s", dir, target);
	canonical_path(joined, out, size, depth + 1);
	return 1;
}

/* The canonical name of a file that may not exist: its real path where it
 * exists; else its directory's canonical name (that directory may be
 * missing too) joined with its name; a dangling symbolic link stands for
 * its target.  The path as given past LINK_DEPTH_MAX steps (a loop). */
static void canonical_path(const char *path, char *out, size_t size, int depth)
{
	char dir[PATH_MAX], parent[PATH_MAX];
	const char *base;
	char *real = realpath(path, NULL);

	if (real != NULL || depth > LINK_DEPTH_MAX) {
		snprintf(out, size, "%s", real ? real : path);
		free(real);
		return;
	}
	split_path(path, dir, sizeof dir, &base);
	if (follow_dangling_link(path, dir, out, size, depth))
		return;
	canonical_path(dir, parent, sizeof parent, depth + 1);
	join_name(out, size, parent, base, strcspn(base, "/"));
}

/* Identify one side file; a directory is refused, and so is a device, a
 * pipe or a socket where the file is renamed into place: the rename would
 * replace it (as root, /dev/null itself).  Returns 0 or -1 after a
 * message. */
static int identify(const struct side_entry *e, struct file_id *id)
{
	struct stat st;

	memset(id, 0, sizeof *id);
	/* Too long to open, and to compare with the others. */
	if (strlen(e->path) >= PATH_MAX) {
		warnx_("%s: cannot use '%s': %s", e->option, e->path, strerror(ENAMETOOLONG));
		return -1;
	}
	if (stat(e->path, &st) != 0) {
		canonical_path(e->path, id->canonical, sizeof id->canonical, 0);
		return 0;
	}
	if (S_ISDIR(st.st_mode)) {
		warnx_("%s: '%s' is a directory", e->option, e->path);
		return -1;
	}
	id->exists = 1;
	id->regular = S_ISREG(st.st_mode);
	if (e->renamed && !id->regular) {
		warnx_("%s: '%s' is not a regular file: it would be replaced", e->option, e->path);
		return -1;
	}
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	return 0;
}

static int same_file(const struct file_id *a, const struct file_id *b)
{
	if (a->exists || b->exists)
		return a->regular && b->regular && a->dev == b->dev && a->ino == b->ino;
	return strcmp(a->canonical, b->canonical) == 0;
}

static void refuse_same(const struct side_entry *a, const struct side_entry *b)
{
	if (strcmp(a->path, b->path) == 0)
		warnx_("%s and %s name the same file '%s'", a->option, b->option, a->path);
	else
		warnx_("%s '%s' and %s '%s' name the same file", a->option, a->path, b->option,
		       b->path);
}

int sidefiles_check(const struct sidefiles *s)
{
	struct side_entry e[SIDEFILES_MAX];
	struct file_id id[SIDEFILES_MAX];
	size_t n = s->paths.by_fd ? 0 : list_entries(s, e);

	for (size_t i = 0; i < n; i++)
		if (identify(&e[i], &id[i]) != 0)
			return -1;
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			if (same_file(&id[i], &id[j])) {
				refuse_same(&e[i], &e[j]);
				return -1;
			}
	return 0;
}

void sidefiles_in_outdir(const struct sidefiles *s, const char *outdir, char *text,
			 size_t size)
{
	struct side_entry e[SIDEFILES_MAX];
	char dir[PATH_MAX], file[PATH_MAX], in_dir[PATH_MAX];
	char names[SIDEFILES_MAX][COWRUN_NAME_MAX] = { "", "", "", "", "" };
	size_t n = list_entries(s, e);

	canonical_path(outdir, dir, sizeof dir, 0);
	for (size_t i = 0; i < n; i++) {
		canonical_path(e[i].path, file, sizeof file, 0);
		const char *slash = strrchr(file, '/');
		if (slash == NULL || strlen(slash + 1) >= COWRUN_NAME_MAX)
			continue;
		join_name(in_dir, sizeof in_dir, dir, slash + 1, strlen(slash + 1));
		if (strcmp(in_dir, file) == 0)
			snprintf(names[e[i].slot], sizeof names[0], "%s", slash + 1);
	}
	snprintf(text, size, "%s/%s/%s/%s/%s", names[0], names[1], names[2], names[3], names[4]);
}

/* The name in slot `slot` of sidefiles_in_outdir()'s text, into `name`:
 * "" if empty, missing or too long for a task's name. */
static void name_in_slot(const char *text, int slot, char name[COWRUN_NAME_MAX])
{
	for (; slot > 0 && text != NULL; slot--)
		if ((text = strchr(text, '/')) != NULL)
			text++;
	size_t n = text ? strcspn(text, "/") : 0;

	if (n >= COWRUN_NAME_MAX)
		n = 0;
	memcpy(name, text ? text : "", n);
	name[n] = '\0';
}

int sidefiles_check_reports(const struct sidefiles *s, const char *outdir,
			    int (*is_report)(void *ctx, const char *name), void *ctx)
{
	struct side_entry e[SIDEFILES_MAX];
	char found[SIDEFILES_IN_OUTDIR_MAX], name[COWRUN_NAME_MAX];
	const char *in_outdir = found;
	size_t n = list_entries(s, e);

	if (s->paths.by_fd)   /* the client's paths: its finding */
		in_outdir = s->paths.in_outdir;
	else
		sidefiles_in_outdir(s, outdir, found, sizeof found);
	for (size_t i = 0; i < n; i++) {
		name_in_slot(in_outdir, e[i].slot, name);
		if (name[0] && is_report(ctx, name)) {
			warnx_("%s: '%s' is the report file of task '%s' in output directory '%s'",
			       e[i].option, e[i].path, name, outdir);
			return -1;
		}
	}
	return 0;
}

/* ---- opening and closing ---- */

/* The lock wait: COWRUN_LOCK_WAIT seconds if set and sane. */
static double lock_wait(void)
{
	const char *text = getenv("COWRUN_LOCK_WAIT");
	double wait;

	if (text != NULL && parse_double(text, 0, 3600, &wait) == 0)
		return wait;
	return JOBLOG_LOCK_WAIT_S;
}

/* A regular file no name leads to any more (a submit refused beside
 * this one took back the joblog it had created, empty). */
static int removed(int fd)
{
	struct stat st;

	return fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_nlink == 0;
}

int sidefiles_lock(struct sidefiles *s, const char *workload)
{
	if (s->paths.joblog == NULL)
		return 0;
	if (s->paths.by_fd) {
		int fd = s->paths.joblog_fd;
		s->paths.joblog_fd = -1;
		if (fd < 0 || joblog_lock_fd(&s->joblog, fd, s->paths.joblog, lock_wait()) != 0)
			return -1;
		if (removed(s->joblog.fd) || removed(s->paths.journal_fd)) {
			warnx_("--joblog: '%s' or its journal was removed before the batch could lock it; "
			       "run again", s->joblog.path);
			joblog_close(&s->joblog);
			return -1;
		}
	} else if (joblog_lock(&s->joblog, s->paths.joblog, lock_wait()) != 0)
		return -1;
	if (workload != NULL && joblog_read(&s->joblog, workload) != 0) {
		joblog_close(&s->joblog);
		return -1;
	}
	return 0;
}

/* The saved results and the journal as the batch's outcome sinks. */
static int put_saved(void *ctx, enum wire_type type, size_t task, const void *bytes,
		     size_t length)
{
	return results_put(ctx, type, task, bytes, length);
}

static int put_journal(void *ctx, enum wire_type type, size_t task, const void *bytes,
		       size_t length)
{
	return journal_put(ctx, type, task, bytes, length);
}

/* A descriptor the paths lend (a served batch's), taken: -1 after. */
static int take_fd(int *fd)
{
	int taken = *fd;

	*fd = -1;
	return taken;
}

/* --timeline goes to a temporary file renamed at the end, like every file
 * cowrun writes (a served batch's client created it: `given`, else -1). */
static int timeline_open(struct sidefiles_temp *t, const char *path, int given)
{
	int fd = given;

	if (given >= 0)
		snprintf(t->temp, sizeof t->temp, "%s", path);
	else
		fd = create_temp_beside_at(AT_FDCWD, path, t->temp, sizeof t->temp, 0666);
	t->f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (t->f == NULL) {
		if (fd >= 0)
			close(fd);
		warnx_("cannot create '%s': %s", t->temp, strerror(errno));
		return -1;
	}
	fprintf(t->f, "task,name,worker,pid,start_s,end_s,status,slot\n");
	return 0;
}

static int timeline_close(struct sidefiles_temp *t, const char *path, int keep, int by_fd)
{
	int rc = 0;

	if (t->f == NULL)
		return 0;
	if (by_fd) {   /* the client renames or removes its own file */
		if (fflush(t->f) != 0 || (keep && fsync(fileno(t->f)) != 0) || fclose(t->f) != 0) {
			warnx_("cannot write '%s': %s", path, strerror(errno));
			rc = -1;
		}
		t->f = NULL;
		return rc;
	}
	/* Not fsync'd here (it never was), unlike the client's file above. */
	if ((keep ? commit_stream_at(AT_FDCWD, t->f, t->temp, path, 0) : fclose(t->f)) != 0) {
		warnx_("cannot write '%s': %s", path, strerror(errno));
		rc = -1;
	}
	if (!keep)
		unlink(t->temp);
	t->f = NULL;
	return rc;
}

/* The side files that write under temporary names first: nothing of an
 * earlier run is touched if the run is then refused. */
static int open_temporary(struct sidefiles *s, struct batch *b, const char *identity)
{
	if (s->paths.save) {
		struct results_context context = results_context_of(b->workload, b->state);
		int fd = s->paths.by_fd ? take_fd(&s->paths.save_fd) : -1;
		if (s->paths.by_fd ? fd < 0 || results_create_fd(&s->save, fd, s->paths.save,
								  identity, context) != 0
				   : results_create(&s->save, s->paths.save, identity, context) != 0)
			return -1;
		b->save = (struct outcome_sink){ put_saved, &s->save };
	}
	if (s->paths.timeline) {
		int fd = s->paths.by_fd ? take_fd(&s->paths.timeline_fd) : -1;
		if ((s->paths.by_fd && fd < 0) || timeline_open(&s->timeline, s->paths.timeline, fd) != 0)
			return -1;
		b->timeline = s->timeline.f;
	}
	return 0;
}

/* The side files written in place (a fresh joblog replaces the old one):
 * opened last, once everything else has been accepted. */
static int open_in_place(struct sidefiles *s, struct batch *b, const char *identity,
			 long long journal_keep)
{
	const char *joblog = s->paths.joblog;

	int stats_fd = s->paths.by_fd && s->paths.stats ? take_fd(&s->paths.stats_fd) : -1;
	if (stats_fd >= 0 && (s->stats = fdopen(stats_fd, "w")) == NULL)
		close(stats_fd);
	else if (s->paths.stats && !s->paths.by_fd)
		s->stats = fopen(s->paths.stats, "we");
	if (s->paths.stats && s->stats == NULL) {
		warnx_("--stats: cannot create '%s': %s", s->paths.stats, strerror(errno));
		return -1;
	}
	if (joblog == NULL)
		return 0;
	/* Locked already, unless the caller skipped sidefiles_lock(). */
	if (s->joblog.fd < 0 && sidefiles_lock(s, NULL) != 0)
		return -1;
	/* --resume appends to the joblog, as GNU Parallel does. */
	if (joblog_open(&s->joblog, joblog[0] == '+', s->paths.resume) != 0)
		return -1;
	b->joblog = &s->joblog;
	if (s->paths.by_fd) {
		int fd = s->paths.journal_fd;
		s->paths.journal_fd = -1;
		if (fd < 0 || journal_open_fd(&s->journal, fd, s->journal_path, identity,
					      journal_keep) != 0)
			return -1;
	} else if (journal_open(&s->journal, s->journal_path, identity, journal_keep) != 0)
		return -1;
	b->journal = (struct outcome_sink){ put_journal, &s->journal };
	return 0;
}

int sidefiles_open(struct sidefiles *s, struct batch *b, const char *identity,
		   long long journal_keep, int (*prepare)(void *ctx), void *ctx)
{
	/* Checked again: the setup may have taken hours. */
	if (sidefiles_check(s) != 0 || open_temporary(s, b, identity) != 0 ||
	    (prepare != NULL && prepare(ctx) != 0) ||
	    open_in_place(s, b, identity, journal_keep) != 0) {
		sidefiles_close(s, b, 0);
		return -1;
	}
	return 0;
}

int sidefiles_write_stats(struct sidefiles *s, const struct worker_stats *rows, size_t n)
{
	if (s->stats == NULL)
		return 0;
	procstat_write_header(s->stats);
	for (size_t i = 0; i < n; i++)
		procstat_write_row(s->stats, &rows[i]);
	if (fflush(s->stats) != 0) {
		warnx_("--stats: cannot write '%s': %s", s->paths.stats, strerror(errno));
		return -1;
	}
	s->stats_written = 1;
	return 0;
}

void sidefiles_hand_over(struct sidefiles *s)
{
	s->joblog.created = 0;
}

int sidefiles_close(struct sidefiles *s, struct batch *b, int complete)
{
	int rc = 0;

	b->timeline = NULL;
	/* A timeline of a run that never started is no timeline. */
	int had_timeline = s->timeline.f != NULL;
	if (timeline_close(&s->timeline, s->paths.timeline, b->started_ns != 0, s->paths.by_fd) != 0)
		rc = -1;
	else if (had_timeline && b->started_ns != 0)
		s->whole |= SIDEFILE_WHOLE_TIMELINE;
	if (joblog_close(&s->joblog) != 0)
		rc = -1;
	if (journal_close(&s->journal) != 0)
		rc = -1;
	int commit = complete && !b->merge_failed;
	if (s->save.fd >= 0 && commit) {
		int failed = results_commit(&s->save);
		rc |= failed;
		if (!failed)
			s->whole |= SIDEFILE_WHOLE_SAVE;
	} else if (s->save.fd >= 0) {
		results_abort(&s->save);
	}
	int keep_stats = s->stats_written;
	if (s->stats && ((s->paths.by_fd && keep_stats && (fflush(s->stats) != 0 ||
							   fsync(fileno(s->stats)) != 0)) |
			 fclose(s->stats)) != 0) {
		warnx_("--stats: cannot write '%s': %s", s->paths.stats, strerror(errno));
		rc = -1;
		keep_stats = 0;
	}
	if (s->stats && keep_stats)
		s->whole |= SIDEFILE_WHOLE_STATS;
	s->stats = NULL;
	if (s->paths.by_fd) {   /* lent but never opened: the run was refused */
		int *lent[] = { &s->paths.joblog_fd, &s->paths.journal_fd, &s->paths.save_fd,
				&s->paths.timeline_fd, &s->paths.stats_fd };
		for (size_t i = 0; i < sizeof lent / sizeof lent[0]; i++)
			if (*lent[i] >= 0)
				close(take_fd(lent[i]));
	}
	if (commit && rc == 0)
		s->complete = 1;
	b->joblog = NULL;
	b->journal = (struct outcome_sink){ NULL, NULL };
	b->save = (struct outcome_sink){ NULL, NULL };
	return rc;
}
