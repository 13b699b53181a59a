/*
 * manifest.c - a run's manifest and the stale reports of earlier runs.
 * See manifest.h.
 */
#define _GNU_SOURCE
#include "manifest.h"
#include "inputs.h"
#include "engine/task.h"
#include "files/inputid.h"
#include "os/command.h"
#include "os/util.h"
#include "os/fileops.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MANIFEST_PREFIX ".cowrun-manifest."
#define MANIFEST_MAGIC "cowrun manifest 1"
#define NAMES_SHOWN 3

/* A report a manifest names. */
struct entry {
	char *name;
	uint64_t size, hash;
	int earlier;             /* "earlier": carried over, not written by that run */
	int gone;                /* removed now, or no longer there */
};

struct entries {
	struct entry *e;
	size_t n, cap;
};

/* An earlier manifest: its file name and what it names. */
struct manifest {
	char file[NAME_MAX + 1];
	struct entries list;
	int legacy;              /* a script's manifest written before they were keyed
				  * by its path (cowrun 0.5.1 and before) */
};

/* Whose manifests a run reads and writes: a workload's, and of a
 * workload that parses its own arguments, one script's (its canonical
 * path, inputs_script(); NULL: none). */
struct owner {
	const char *workload;
	const char *script;
};

struct earlier {
	struct manifest *m;
	size_t n;
};

static void entries_free(struct entries *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->e[i].name);
	free(l->e);
	memset(l, 0, sizeof *l);
}

/* Append (name is copied).  Returns 0 or -1 (ENOMEM). */
static int entries_add(struct entries *l, const char *name, uint64_t size, uint64_t hash,
		       int earlier)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		struct entry *e = realloc(l->e, cap * sizeof *e);
		if (e == NULL)
			return -1;
		l->e = e;
		l->cap = cap;
	}
	struct entry *e = &l->e[l->n];
	if ((e->name = strdup(name)) == NULL)
		return -1;
	e->size = size;
	e->hash = hash;
	e->earlier = earlier;
	e->gone = 0;
	l->n++;
	return 0;
}

static void earlier_free(struct earlier *r)
{
	for (size_t i = 0; i < r->n; i++)
		entries_free(&r->m[i].list);
	free(r->m);
	memset(r, 0, sizeof *r);
}

/* ---- names ---- */

/* ".cowrun-manifest.WORKLOAD": the workload's name with every character
 * but letters, digits, '-' and '_' made '_'. */
static void manifest_prefix(const char *workload, char *buf, size_t size)
{
	size_t n = (size_t)snprintf(buf, size, MANIFEST_PREFIX "%s", workload);

	for (size_t i = strlen(MANIFEST_PREFIX); i < n && i < size; i++) {
		char c = buf[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_'))
			buf[i] = '_';
	}
}

void manifest_name(const char *workload, const char *script, const struct selection *sel,
		   char *buf, size_t size)
{
	char prefix[NAME_MAX + 1];

	manifest_prefix(workload, prefix, sizeof prefix);
	/* Two scripts in one directory: the key is the path, never the
	 * content, so an edited script still owns its earlier reports. */
	if (script)
		snprintf(prefix + strlen(prefix), sizeof prefix - strlen(prefix),
			 ".script-%016" PRIx64, cowrun_hash64(script, strlen(script), 0));
	if (sel->list) {
		char key[64];
		snprintf(key, sizeof key, "%s/%lld/%lld", sel->list, sel->shard, sel->shards);
		snprintf(buf, size, "%.150s.tasks-%016" PRIx64, prefix,
			 cowrun_hash64(sel->list, strlen(sel->list), cowrun_hash64(key, strlen(key), 0)));
	} else if (sel->shards > 0) {
		snprintf(buf, size, "%.150s.shard-%lld-of-%lld", prefix, sel->shard, sel->shards);
	} else {
		snprintf(buf, size, "%.200s", prefix);
	}
}

/* Is `file` a manifest (not a temporary file)?  Whose it is, its
 * workload line says (read_manifest()). */
static int is_manifest(const char *file)
{
	size_t len = strlen(file);

	return strncmp(file, MANIFEST_PREFIX, strlen(MANIFEST_PREFIX)) == 0 &&
	       len <= NAME_MAX && !(len > 4 && strcmp(file + len - 4, ".tmp") == 0);
}

/* A report name as a manifest writes it: '%' and control characters as
 * %XX (the rest of the line). */
static void put_name(FILE *f, const char *name)
{
	for (const unsigned char *c = (const unsigned char *)name; *c; c++)
		if (*c == '%' || *c < ' ' || *c == 0x7f)
			fprintf(f, "%%%02X", *c);
		else
			putc(*c, f);
}

/* ---- reading the earlier manifests ---- */

/* One line "report|earlier SIZE HASH NAME" into l.  Returns 0, 1 if it is
 * no entry, -1 (ENOMEM). */
static int parse_entry(char *line, struct entries *l)
{
	char kind[16];
	uint64_t size, hash;
	int used = 0;

	if (sscanf(line, "%15s %" SCNu64 " %" SCNx64 " %n", kind, &size, &hash, &used) != 3 ||
	    used == 0 || (strcmp(kind, "report") != 0 && strcmp(kind, "earlier") != 0))
		return 1;
	line[strcspn(line, "\n")] = '\0';
	inputid_unescape(line + used);
	if (line[used] == '\0' || strchr(line + used, '/') != NULL)
		return 1;
	return entries_add(l, line + used, size, hash, kind[0] == 'e') == 0 ? 0 : -1;
}

/* The script a manifest's identity line names as input 1 (its
 * "input-at 1" line: the canonical path), into path; else path is left. */
static void identity_script(const char *line, char *path, size_t size)
{
	int used = 0;

	if (sscanf(line, "identity input-at 1 %*s %*s %n", &used) == 0 && used > 0 &&
	    strlen(line + used) < size) {
		snprintf(path, size, "%s", line + used);
		inputid_unescape(path);
	}
}

/* Is the manifest with these lines the owner's?  A script's manifest
 * says its script; one without that line, written before manifests were
 * keyed, is a legacy one of this script if its identity names it. */
static int owned(const struct owner *o, int workload_ok, const char *script,
		 const char *identity_path, int *legacy)
{
	*legacy = o->script && script == NULL && strcmp(identity_path, o->script) == 0;
	if (!workload_ok)
		return 0;
	if (o->script == NULL || script == NULL)
		return o->script == NULL ? script == NULL : *legacy;
	return strcmp(script, o->script) == 0;
}

/* Read manifest `file` of the open directory: it must be whole (its end
 * line counts its entries) and the owner's (owned()).  Returns 0 with its
 * entries in l (*legacy: a legacy one), 1 if it is not one to take, -1
 * (ENOMEM). */
static int read_manifest(int dirfd, const char *file, const struct owner *o, struct entries *l,
			 int *legacy)
{
	int fd = openat(dirfd, file, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	char *line = NULL, *script = NULL, identity_path[PATH_MAX] = "";
	size_t cap = 0, lines = 0;
	long long end = -1;
	int rc = 1, ours = 0;

	if (f == NULL) {
		if (fd >= 0)
			close(fd);
		return 1;
	}
	while (getline(&line, &cap, f) > 0) {
		line[strcspn(line, "\n")] = '\0';
		if (lines++ == 0 && strcmp(line, MANIFEST_MAGIC) != 0)
			break;
		if (strncmp(line, "workload ", 9) == 0)
			ours = strcmp(line + 9, o->workload) == 0;
		else if (strncmp(line, "script ", 7) == 0 && script == NULL &&
			 (script = strdup(line + 7)) != NULL)
			inputid_unescape(script);
		else if (strncmp(line, "identity input-at 1 ", 20) == 0)
			identity_script(line, identity_path, sizeof identity_path);
		else if (sscanf(line, "end %lld", &end) == 1)
			break;
		else if (parse_entry(line, l) < 0) {
			rc = -1;
			break;
		}
	}
	if (rc != -1 && owned(o, ours, script, identity_path, legacy) && end >= 0 &&
	    (size_t)end == l->n)
		rc = 0;
	free(script);
	free(line);
	fclose(f);
	if (rc != 0)
		entries_free(l);
	return rc;
}

/* Every manifest of the owner in the open directory (another workload's
 * or another script's reports are never this one's to call stale).
 * Returns 0 or -1 (ENOMEM, or the directory cannot be read) with errno. */
static int read_earlier(int dirfd, const struct owner *o, struct earlier *r)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	int rc = 0;

	if (d == NULL) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	while (rc == 0 && (e = readdir(d)) != NULL) {
		struct entries l = { 0 };
		int legacy = 0;
		if (!is_manifest(e->d_name))
			continue;
		int got = read_manifest(dirfd, e->d_name, o, &l, &legacy);
		struct manifest *m = got == 0 ? realloc(r->m, (r->n + 1) * sizeof *m) : NULL;
		if (got < 0 || (got == 0 && m == NULL)) {
			entries_free(&l);
			rc = -1;
		} else if (got == 0) {
			r->m = m;
			snprintf(r->m[r->n].file, sizeof r->m[r->n].file, "%s", e->d_name);
			r->m[r->n].legacy = legacy;
			r->m[r->n++].list = l;
		}
	}
	closedir(d);
	return rc;
}

/* ---- hashing reports ---- */

/* Size and content hash of `name` in the open directory, a regular file
 * (never through a link).  Returns 0, or -1 with errno. */
static int hash_report(int dirfd, const char *name, uint64_t *size, uint64_t *hash)
{
	struct stat st;
	int rc = -1, fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);

	if (fd < 0)
		return -1;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
		*size = (uint64_t)st.st_size;
		rc = inputid_hash_fd(fd, *size, 0, hash);
	} else {
		errno = EINVAL;
	}
	close(fd);
	return rc;
}

/* cowrun_parallel() over a list's entries: each one's size and hash,
 * `gone` if it is not there (or not a regular file). */
struct hash_list {
	int dirfd;
	struct entries *l;
};

static int hash_entry(void *ctx, size_t i, unsigned thread)
{
	const struct hash_list *h = ctx;
	struct entry *e = &h->l->e[i];

	(void)thread;
	e->gone = hash_report(h->dirfd, e->name, &e->size, &e->hash) != 0;
	return 0;
}

static void hash_entries(int dirfd, struct entries *l)
{
	struct hash_list h = { dirfd, l };

	cowrun_parallel(l->n, hash_entry, &h);
}

/* ---- this run's reports, the stale ones ---- */

/* Is there a file `name` in the open directory (a link counts)? */
static int present(int dirfd, const char *name)
{
	struct stat st;

	return fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static int compare_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Did task k succeed, in this run or the run it resumes? */
static int succeeded(const struct batch *b, size_t k)
{
	enum reorder_state st = reorder_state(&b->reorder, k);

	return st != REORDER_WAITING && st != REORDER_EXCLUDED && st != REORDER_FAILED;
}

/* Every task's report name, sorted: what this batch writes; with
 * `delivered`, only the tasks that succeeded (what a --report-to run gave
 * its command).  *n: how many.  NULL (ENOMEM). */
static char **batch_names(const struct batch *b, int delivered, size_t *n)
{
	char **names = calloc(b->ntasks + 1, sizeof *names);

	*n = 0;
	for (size_t k = 0; names && k < b->ntasks; k++) {
		char name[REPORT_FILE_MAX] = "";
		if (delivered && !succeeded(b, k))
			continue;
		task_report_file_of(b->workload, b->state, k, name, sizeof name);
		if ((names[(*n)++] = strdup(name)) == NULL) {
			for (size_t i = 0; i < *n; i++)
				free(names[i]);
			free(names);
			return NULL;
		}
	}
	if (names)
		qsort(names, *n, sizeof *names, compare_names);
	return names;
}

static void names_free(char **names, size_t n)
{
	for (size_t k = 0; names && k < n; k++)
		free(names[k]);
	free(names);
}

static int in_batch(char *const *names, size_t n, const char *name)
{
	return bsearch(&name, names, n, sizeof *names, compare_names) != NULL;
}

/* The reports of this run: every task of its selection (a --resume's
 * journal included) that succeeded and whose report is there, in task
 * order, with its size and hash.  Returns 0 or -1 (ENOMEM). */
static int this_runs_reports(const struct batch *b, int dirfd, struct entries *mine)
{
	for (size_t k = 0; k < b->ntasks; k++) {
		char name[REPORT_FILE_MAX] = "";
		if (!succeeded(b, k))
			continue;
		task_report_file_of(b->workload, b->state, k, name, sizeof name);
		if (present(dirfd, name) && entries_add(mine, name, 0, 0, 0) != 0)
			return -1;
	}
	hash_entries(dirfd, mine);
	return 0;
}

static int compare_entries(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

/* The earlier manifests' entries that none of `names` is (`in`: that
 * one of them is), sorted by name (a name may come more than once).
 * Returns 0 or -1. */
static int named_earlier(const struct earlier *r, char *const *names, size_t nnames, int in,
			 struct entries *out)
{
	for (size_t i = 0; i < r->n; i++)
		for (size_t j = 0; j < r->m[i].list.n; j++) {
			const struct entry *e = &r->m[i].list.e[j];
			if (in_batch(names, nnames, e->name) == in &&
			    entries_add(out, e->name, e->size, e->hash, 1) != 0)
				return -1;
		}
	if (out->n > 1)
		qsort(out->e, out->n, sizeof *out->e, compare_entries);
	return 0;
}

/* The stale reports: named by an earlier manifest, written by no task of
 * this batch (`in`: by one of `names`, the reports a --report-to run
 * gave its command), still as that manifest recorded them (size and
 * hash); each name once, sorted.  Returns 0 or -1 (ENOMEM). */
static int find_stale(int dirfd, const struct earlier *r, char *const *names, size_t nnames,
		      int in, struct entries *stale)
{
	struct entries named = { 0 }, now = { 0 };
	int rc = named_earlier(r, names, nnames, in, &named);

	/* Each file looked at once, however many manifests name it. */
	for (size_t i = 0; i < named.n && rc == 0; i++)
		if (i == 0 || strcmp(named.e[i].name, named.e[i - 1].name) != 0)
			rc = entries_add(&now, named.e[i].name, 0, 0, 1);
	if (rc == 0)
		hash_entries(dirfd, &now);
	for (size_t i = 0, j = 0; i < named.n && rc == 0; i++) {
		while (strcmp(now.e[j].name, named.e[i].name) != 0)
			j++;
		const struct entry *is = &now.e[j], *was = &named.e[i];
		int taken = stale->n > 0 && strcmp(stale->e[stale->n - 1].name, is->name) == 0;
		if (!is->gone && !taken && is->size == was->size && is->hash == was->hash)
			rc = entries_add(stale, is->name, is->size, is->hash, 1);
	}
	entries_free(&now);
	entries_free(&named);
	return rc;
}

/* ---- writing this run's manifest ---- */

/* The manifest's text into f. */
static void put_manifest(FILE *f, const struct owner *o, const char *identity,
			 const struct entries *mine, const struct entries *carried,
			 const char *routed)
{
	fprintf(f, MANIFEST_MAGIC "\nworkload %s\n", o->workload);
	if (o->script) {
		fputs("script ", f);
		put_name(f, o->script);
		putc('\n', f);
	}
	for (const char *p = identity; *p;) {
		size_t n = strcspn(p, "\n");
		/* Not the run's id: reruns of the same batch write the same
		 * manifest. */
		if (strncmp(p, "run-id ", 7) != 0)
			fprintf(f, "identity %.*s\n", (int)n, p);
		p += n + (p[n] == '\n');
	}
	if (routed)
		fputs(routed, f);
	for (size_t i = 0; i < mine->n; i++)
		if (!mine->e[i].gone) {
			fprintf(f, "report %" PRIu64 " %016" PRIx64 " ", mine->e[i].size, mine->e[i].hash);
			put_name(f, mine->e[i].name);
			putc('\n', f);
		}
	for (size_t i = 0; i < carried->n; i++) {
		if (carried->e[i].gone)
			continue;
		fprintf(f, "earlier %" PRIu64 " %016" PRIx64 " ", carried->e[i].size,
			carried->e[i].hash);
		put_name(f, carried->e[i].name);
		putc('\n', f);
	}
}

static size_t count_present(const struct entries *l)
{
	size_t n = 0;

	for (size_t i = 0; i < l->n; i++)
		n += !l->e[i].gone;
	return n;
}

/* Write `file` in the open directory: a temporary name, fsync, rename.
 * Returns 0 or -1 after a message. */
static int write_manifest(const struct batch *b, const struct owner *o, int dirfd,
			  const char *file, const char *identity, const struct entries *mine,
			  const struct entries *carried, const char *routed)
{
	char temp[NAME_MAX + 64];
	FILE *f = NULL;
	int fd = create_temp_beside_at(dirfd, file, temp, sizeof temp, 0666);

	if (fd >= 0 && (f = fdopen(fd, "w")) == NULL)
		close(fd);
	if (f == NULL)
		goto fail;
	put_manifest(f, o, identity, mine, carried, routed);
	fprintf(f, "end %zu\n", count_present(mine) + count_present(carried));
	if (commit_stream_at(dirfd, f, temp, file, COMMIT_FSYNC) != 0)
		goto fail;
	return 0;
fail:
	warnx_("cannot write the manifest '%s' in output directory '%s': %s", file,
	       batch_outdir_label(b) ? batch_outdir_label(b) : "(the client's)", strerror(errno));
	return -1;
}

/* ---- --clean ---- */

/* Remove the stale reports; each one removed is marked gone. */
static void remove_stale(int dirfd, struct entries *stale)
{
	for (size_t i = 0; i < stale->n; i++)
		stale->e[i].gone = unlinkat(dirfd, stale->e[i].name, 0) == 0 || errno == ENOENT;
}

/* Is `name` one of the list's (present)? */
static int listed(const struct entries *l, const char *name)
{
	for (size_t i = 0; i < l->n; i++)
		if (!l->e[i].gone && strcmp(l->e[i].name, name) == 0)
			return 1;
	return 0;
}

/* An earlier manifest (not this run's own name) that names nothing left
 * but what this run's manifest names now is removed: every file it
 * names was removed as stale, is gone, or was written again by this run. */
static void remove_spent_manifests(int dirfd, const struct earlier *r, const char *own,
				   const struct entries *mine)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct entries *l = &r->m[i].list;
		size_t j = 0;
		if (strcmp(r->m[i].file, own) == 0)
			continue;
		while (j < l->n && (listed(mine, l->e[j].name) || !present(dirfd, l->e[j].name)))
			j++;
		if (j == l->n)
			unlinkat(dirfd, r->m[i].file, 0);
	}
}

/* The legacy manifests this run's manifest replaces, once it is written:
 * the one of the same selection (.cowrun-manifest.WORKLOAD, or its
 * .shard or .tasks name), and after a run of the whole batch every one.
 * What they named that is stale was carried into this run's. */
static void remove_replaced_legacy(int dirfd, const struct earlier *r, const char *workload,
				   const struct selection *sel)
{
	char legacy[NAME_MAX + 1];

	manifest_name(workload, NULL, sel, legacy, sizeof legacy);
	for (size_t i = 0; i < r->n; i++)
		if (r->m[i].legacy && (!selection_active(sel) || strcmp(r->m[i].file, legacy) == 0))
			unlinkat(dirfd, r->m[i].file, 0);
}

/* One line: how many are stale (or were removed), the first few names. */
static void say_stale(const struct batch *b, const struct entries *stale, int clean)
{
	char names[3 * COWRUN_NAME_MAX + 16] = "";
	size_t used = 0, shown = 0, n = 0;
	const char *dir = batch_outdir_label(b);

	for (size_t i = 0; i < stale->n; i++) {
		if (clean && !stale->e[i].gone)
			continue;
		n++;
		if (shown++ < NAMES_SHOWN)
			used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
						 used ? ", " : "", stale->e[i].name);
	}
	if (n == 0)
		return;
	if (shown > NAMES_SHOWN && used < sizeof names - 6)
		snprintf(names + used, sizeof names - used, ", ...");
	if (clean)
		warnx_("%s: removed %zu stale report%s from %s%s%s (an earlier run's: no task of "
		       "this batch writes them): %s", b->workload->name, n, n == 1 ? "" : "s",
		       dir ? "'" : "", dir ? dir : "the output directory", dir ? "'" : "", names);
	else
		warnx_("%s: %zu stale report%s in %s%s%s (an earlier run's: no task of this batch "
		       "writes them): %s; --clean removes them", b->workload->name, n,
		       n == 1 ? "" : "s", dir ? "'" : "", dir ? dir : "the output directory",
		       dir ? "'" : "", names);
}

/* One line: the earlier reports a --report-to run removed, the first few. */
static void say_superseded(const struct batch *b, const struct entries *gone)
{
	char names[3 * COWRUN_NAME_MAX + 16] = "";
	size_t used = 0, n = 0;
	const char *dir = batch_outdir_label(b);

	for (size_t i = 0; i < gone->n; i++) {
		if (!gone->e[i].gone)
			continue;
		if (n++ < NAMES_SHOWN)
			used += (size_t)snprintf(names + used, sizeof names - used, "%s%s",
						 used ? ", " : "", gone->e[i].name);
		else if (n == NAMES_SHOWN + 1 && used < sizeof names - 6)
			used += (size_t)snprintf(names + used, sizeof names - used, ", ...");
	}
	if (n > 0)
		warnx_("%s: removed %zu earlier report%s from %s%s%s (this run's went to "
		       "--report-to): %s", b->workload->name, n, n == 1 ? "" : "s",
		       dir ? "'" : "", dir ? dir : "the output directory", dir ? "'" : "", names);
}

/*
 * A --report-to run keeps no report, so an earlier run's report of a task
 * it delivered, still as an earlier manifest recorded it, is removed: it
 * is stale, this run's went to the command.  Its manifest then says so
 * ("routed HASH COUNT": the command's text hashed, how many reports went
 * to it) and carries the stale reports of other names as "earlier".
 * Only where an earlier manifest of the owner is: into a directory that
 * holds none of its reports, a --report-to run writes nothing.
 */
static int routed_finish(struct batch *b, const struct selection *sel, const char *identity,
			 int clean, int stopped, const struct owner *o, int dirfd)
{
	struct earlier r = { 0 };
	struct entries mine = { 0 }, stale = { 0 }, superseded = { 0 };
	char own[NAME_MAX + 1], **names = NULL, **sent = NULL, routed[64];
	size_t nnames = 0, nsent = 0;
	const char *text = command_text(b->route.sink);
	int rc = -1;

	manifest_name(o->workload, o->script, sel, own, sizeof own);
	if ((names = batch_names(b, 0, &nnames)) == NULL ||
	    (sent = batch_names(b, 1, &nsent)) == NULL || read_earlier(dirfd, o, &r) != 0 ||
	    find_stale(dirfd, &r, names, nnames, 0, &stale) != 0 ||
	    find_stale(dirfd, &r, sent, nsent, 1, &superseded) != 0) {
		warnx_("cannot read the manifests in output directory '%s': %s",
		       batch_outdir_label(b) ? batch_outdir_label(b) : "(the client's)",
		       strerror(errno ? errno : ENOMEM));
		goto out;
	}
	rc = 0;
	if (r.n == 0 || nsent == 0)
		goto out;
	remove_stale(dirfd, &superseded);
	if (clean && !stopped)
		remove_stale(dirfd, &stale);
	snprintf(routed, sizeof routed, "routed %016" PRIx64 " %zu\n",
		 cowrun_hash64(text, strlen(text), 0), nsent);
	if (write_manifest(b, o, dirfd, own, identity, &mine, &stale, routed) != 0) {
		rc = -1;
		goto out;
	}
	remove_replaced_legacy(dirfd, &r, o->workload, sel);
	say_superseded(b, &superseded);
	/* The stale ones are carried and said only when --clean removes
	 * them: this run wrote nothing here to set them beside. */
	if (!stopped && clean) {
		remove_spent_manifests(dirfd, &r, own, &mine);
		say_stale(b, &stale, clean);
	}
out:
	names_free(names, nnames);
	names_free(sent, nsent);
	entries_free(&stale);
	entries_free(&superseded);
	earlier_free(&r);
	return rc;
}

int manifest_finish(struct batch *b, const struct selection *sel, const char *identity,
		    int clean, int stopped)
{
	struct earlier r = { 0 };
	struct entries mine = { 0 }, stale = { 0 };
	char own[NAME_MAX + 1], **names = NULL;
	size_t nnames = 0;
	int dirfd = batch_outdir_fd(b), rc = -1;
	const struct owner o = { b->workload->name, inputs_script() };

	if (!(b->workload->flags & COWRUN_WRITES_REPORTS) || dirfd < 0)
		return 0;
	if (b->route.sink)
		return routed_finish(b, sel, identity, clean, stopped, &o, dirfd);
	manifest_name(o.workload, o.script, sel, own, sizeof own);
	if ((names = batch_names(b, 0, &nnames)) == NULL || read_earlier(dirfd, &o, &r) != 0 ||
	    find_stale(dirfd, &r, names, nnames, 0, &stale) != 0 ||
	    this_runs_reports(b, dirfd, &mine) != 0) {
		warnx_("cannot read the manifests in output directory '%s': %s",
		       batch_outdir_label(b) ? batch_outdir_label(b) : "(the client's)",
		       strerror(errno ? errno : ENOMEM));
		goto out;
	}
	if (clean && !stopped)
		remove_stale(dirfd, &stale);
	if (count_present(&mine) > 0) {
		if (write_manifest(b, &o, dirfd, own, identity, &mine, &stale, NULL) != 0)
			goto out;
		remove_replaced_legacy(dirfd, &r, o.workload, sel);
	}
	if (!stopped) {
		if (clean)
			remove_spent_manifests(dirfd, &r, own, &mine);
		say_stale(b, &stale, clean);
	}
	rc = 0;
out:
	names_free(names, nnames);
	entries_free(&mine);
	entries_free(&stale);
	earlier_free(&r);
	return rc;
}
