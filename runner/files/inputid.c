/*
 * inputid.c - the identity of an input file: looked at, hashed on the
 * setup threads, or its hash taken from the workload's own read; written
 * as lines of a results identity.  See inputid.h.
 */
#define _GNU_SOURCE
#include "inputid.h"
#include "cowrun.h"
#include "os/util.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
/* The streaming form of XXH3, compiled in as wire.c compiles the rest:
 * a block read in pieces hashes as cowrun_hash64() of the whole block. */
#define XXH_INLINE_ALL
#include <xxhash.h>

/* A block is read in pieces that stay in the cache while hashed. */
#define READ_PIECE ((size_t)256 << 10)
#define REPORTED_MAX 32

void inputid_stat(struct inputid *id, const char *given)
{
	struct stat st;

	memset(id, 0, sizeof *id);
	if (realpath(given, id->path) == NULL)
		snprintf(id->path, sizeof id->path, "%s", given);
	if (stat(given, &st) != 0) {
		id->kind = INPUT_MISSING;
		return;
	}
	id->kind = S_ISREG(st.st_mode) ? INPUT_FILE : INPUT_OTHER;
	id->dev = (uint64_t)st.st_dev;
	id->ino = (uint64_t)st.st_ino;
	if (id->kind == INPUT_FILE) {
		id->size = (uint64_t)st.st_size;
		id->mtime_s = (int64_t)st.st_mtim.tv_sec;
		id->mtime_ns = st.st_mtim.tv_nsec;
	}
}

int inputid_same_state(const struct inputid *a, const struct inputid *b)
{
	return a->kind == b->kind && a->size == b->size && a->dev == b->dev &&
	       a->ino == b->ino && a->mtime_s == b->mtime_s && a->mtime_ns == b->mtime_ns &&
	       strcmp(a->path, b->path) == 0;
}

/* ---- the content hash, on the setup threads ---- */

struct hash_job {
	int fd;
	uint64_t size;
	uint64_t *block;         /* each block's hash */
	char **piece;            /* a buffer per setup thread */
	int error;               /* errno of a failed read; EAGAIN: the file ended early */
};

/* Block i: cowrun_hash64() of its bytes, read in pieces. */
static int hash_block(void *ctx, size_t i, unsigned thread)
{
	struct hash_job *j = ctx;
	uint64_t off = (uint64_t)i * COWRUN_INPUT_BLOCK;
	uint64_t end = off + COWRUN_INPUT_BLOCK < j->size ? off + COWRUN_INPUT_BLOCK : j->size;
	XXH3_state_t state;

	XXH3_64bits_reset(&state);
	while (off < end) {
		size_t want = end - off < READ_PIECE ? (size_t)(end - off) : READ_PIECE;
		ssize_t n = pread(j->fd, j->piece[thread], want, (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			j->error = n < 0 ? errno : EAGAIN;
			return -1;
		}
		XXH3_64bits_update(&state, j->piece[thread], (size_t)n);
		off += (uint64_t)n;
	}
	j->block[i] = XXH3_64bits_digest(&state);
	return 0;
}

/* Run the job on the setup threads, or on this one.  Returns 0 or -1
 * with errno. */
static int hash_blocks(struct hash_job *j, size_t nblocks, int parallel)
{
	unsigned threads = parallel ? cowrun_setup_threads() : 1;
	int rc = -1;

	j->block = calloc(nblocks ? nblocks : 1, sizeof *j->block);
	j->piece = calloc(threads, sizeof *j->piece);
	for (unsigned t = 0; j->piece && t < threads; t++)
		if ((j->piece[t] = malloc(READ_PIECE)) == NULL)
			goto out;
	if (j->block == NULL || j->piece == NULL)
		goto out;
	if (parallel) {
		rc = cowrun_parallel(nblocks, hash_block, j);
	} else {
		rc = 0;
		for (size_t i = 0; i < nblocks && rc == 0; i++)
			rc = hash_block(j, i, 0);
	}
	if (rc != 0)
		errno = j->error;
out:
	for (unsigned t = 0; j->piece && t < threads; t++)
		free(j->piece[t]);
	free(j->piece);
	return rc;
}

int inputid_hash_fd(int fd, uint64_t size, int parallel, uint64_t *hash)
{
	struct hash_job j = { fd, size, NULL, NULL, 0 };
	size_t nblocks = (size_t)((size + COWRUN_INPUT_BLOCK - 1) / COWRUN_INPUT_BLOCK);
	int rc = hash_blocks(&j, nblocks, parallel);

	if (rc == 0)
		*hash = cowrun_hash64(j.block, nblocks * sizeof *j.block, size);
	free(j.block);
	return rc;
}

int inputid_hash(struct inputid *id, const char *given)
{
	struct inputid after;
	int rc = -1, fd = open(given, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || inputid_hash_fd(fd, id->size, 1, &id->hash) != 0) {
		if (errno == EAGAIN)
			warnx_("input '%s' changed while it was hashed (it got shorter): run again",
			       given);
		else
			warnx_("cannot read input '%s': %s", given, strerror(errno));
		goto out;
	}
	inputid_stat(&after, given);
	if (!inputid_same_state(id, &after)) {
		warnx_("input '%s' changed while it was hashed: run again", given);
		goto out;
	}
	id->hashed = 1;
	rc = 0;
out:
	if (fd >= 0)
		close(fd);
	return rc;
}

/* ---- hashes the workload handed over ---- */

static struct {
	int regular;
	uint64_t dev, ino, size;
	int64_t mtime_s;
	long mtime_ns;
	uint64_t hash;
} reported[REPORTED_MAX];
static size_t nreported;
static pthread_mutex_t reported_lock = PTHREAD_MUTEX_INITIALIZER;

void cowrun_input_hash(int fd, uint64_t hash)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return;
	pthread_mutex_lock(&reported_lock);
	if (nreported < REPORTED_MAX) {
		reported[nreported].regular = S_ISREG(st.st_mode);
		reported[nreported].dev = (uint64_t)st.st_dev;
		reported[nreported].ino = (uint64_t)st.st_ino;
		reported[nreported].size = (uint64_t)st.st_size;
		reported[nreported].mtime_s = (int64_t)st.st_mtim.tv_sec;
		reported[nreported].mtime_ns = st.st_mtim.tv_nsec;
		reported[nreported++].hash = hash;
	}
	pthread_mutex_unlock(&reported_lock);
}

int inputid_take_reported(struct inputid *id)
{
	int found = 0;

	pthread_mutex_lock(&reported_lock);
	/* The latest report of the file wins. */
	for (size_t i = nreported; i-- > 0 && !found;) {
		if (reported[i].dev != id->dev || reported[i].ino != id->ino ||
		    reported[i].regular != (id->kind == INPUT_FILE))
			continue;
		/* A regular file must still be as it was when it was hashed; a
		 * pipe's content was the one the setup read. */
		if (id->kind == INPUT_FILE &&
		    (reported[i].size != id->size || reported[i].mtime_s != id->mtime_s ||
		     reported[i].mtime_ns != id->mtime_ns))
			continue;
		id->hash = reported[i].hash;
		id->hashed = found = 1;
	}
	pthread_mutex_unlock(&reported_lock);
	return found;
}

void inputid_forget_reported(void)
{
	pthread_mutex_lock(&reported_lock);
	nreported = 0;
	pthread_mutex_unlock(&reported_lock);
}

/* ---- as lines of an identity ---- */

static const char *kind_name(enum inputid_kind kind)
{
	switch (kind) {
	case INPUT_MISSING: return "missing";
	case INPUT_FILE: return "file";
	case INPUT_OTHER: return "other";
	default: return "unknown";
	}
}

/* `path` with '%' and control characters as %XX: one line, read back. */
static void put_escaped(FILE *out, const char *path)
{
	for (const unsigned char *c = (const unsigned char *)path; *c; c++) {
		if (*c == '%' || *c < ' ' || *c == 0x7f)
			fprintf(out, "%%%02X", *c);
		else
			putc(*c, out);
	}
}

void inputid_format(FILE *out, unsigned n, const char *option, int guessed,
		    const struct inputid *id)
{
	fprintf(out, "input %u %s %s ", n, option, kind_name(id->kind));
	if (id->kind == INPUT_FILE)
		fprintf(out, "%" PRIu64, id->size);
	else
		fputc('-', out);
	if (id->hashed)
		fprintf(out, " %016" PRIx64, id->hash);
	else
		fputs(" -", out);
	fprintf(out, "%s\n", guessed ? " guessed" : "");
	if (id->kind == INPUT_UNKNOWN || id->path[0] == '\0')
		return;
	fprintf(out, "input-at %u ", n);
	if (id->kind == INPUT_FILE)
		fprintf(out, "%" PRIu64 ":%" PRIu64 " %" PRId64 ".%09ld ", id->dev, id->ino,
			id->mtime_s, id->mtime_ns);
	else
		fputs("- - ", out);
	put_escaped(out, id->path);
	fputc('\n', out);
}

static int hex_value(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10
		: c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

void inputid_unescape(char *path)
{
	char *out = path;

	for (const char *c = path; *c; c++) {
		int hi, lo;
		if (*c == '%' && (hi = hex_value(c[1])) >= 0 && (lo = hex_value(c[2])) >= 0) {
			*out++ = (char)(hi * 16 + lo);
			c += 2;
		} else {
			*out++ = *c;
		}
	}
	*out = '\0';
}
