/*
 * rmodule.c - the R interface a script calls, in an environment attached
 * to R's search path as "cowrun", the connection type under the task's
 * report, its command and finish()'s summary, and R's random numbers set
 * for each task.
 *
 *   cowrun_report(binary = FALSE)
 *       in run(): a connection open on the task's report file OUTDIR/NAME
 *       (text, UTF-8; or binary, for writeBin()).  It is written under a
 *       temporary name and committed (flushed, fsynced, renamed) only when
 *       run() returns without an error; the workload closes it after
 *       run() (close() from the script is harmless).  A second call in
 *       the same task returns the same connection (a helper that writes
 *       a part of the report may call it again); asked the other way
 *       (binary), or after the script closed it, it fails in one line.
 *   cowrun_command(cmd, to = c("report", "stderr"), binary = FALSE)
 *       in run(): cmd started by cowrun_command() (its {/} {#} {%}, {}
 *       and '|' refused), and a connection writing to its standard input.
 *       to = "report": its output is the task's report; "stderr": it goes
 *       to standard error.  After run() the workload closes the connection
 *       and the runner waits for cmd: the task fails if it fails or stops
 *       reading.  One command per task.  If it cannot start: an error of
 *       class "cowrun_command_error"; uncaught, the task fails with the
 *       runner's line saying why.
 *   cowrun_input(path)
 *       as the script loads, or in setup(): path is an input of the run
 *       (cowrun_input()): --resume refuses it changed.  Nothing in
 *       plan(), merge_setup(), merge() and finish(); an error in run().
 *   cowrun_task()
 *       in run(): list(index = i, name = name); NULL elsewhere.
 *   cowrun_seed()
 *       the task's seed in run() (cowrun_task_seed()), the run's
 *       elsewhere (--seed), as a string of its decimal digits: a 64-bit
 *       number, which a double cannot hold exactly.
 *   cowrun_verbosity()
 *       0, or 1 under cowrun -v.
 *
 * Random numbers: before each run() R's generator is L'Ecuyer-CMRG
 * (normal.kind "Inversion", sample.kind "Rejection"), its .Random.seed
 * built from the task's 64-bit seed (r_seed_task()); merge() and finish()
 * go on from the state the process had before its first run().
 *
 * The functions are R closures calling C entry points registered on the
 * embedding's DllInfo (R_getEmbeddingDllInfo(), as "Writing R Extensions"
 * 8.1 says for an embedding program) and called with .Call.
 */
#define _GNU_SOURCE
#include "rworkload.h"

#include <R_ext/Connections.h>
#include <R_ext/Parse.h>
#include <R_ext/Rdynload.h>

#include <errno.h>
#include <iconv.h>
#include <inttypes.h>
#include <langinfo.h>
#include <stdlib.h>
#include <string.h>

#if R_CONNECTIONS_VERSION != 1
#error "R's connection API changed (R_ext/Connections.h): this file is written for version 1"
#endif

static enum r_phase phase = R_PHASE_OTHER;
static struct cowrun_task *task;
static size_t task_index;
static const char *task_name;
static SEXP module_env;

/* A connection given to run(), preserved while the task runs. */
struct stream {
	SEXP con;                  /* NULL: none in this task */
	struct r_sink *sink;       /* under it */
	int binary;
};
static struct stream report, command;
static int command_to_report;  /* command's output is the report */
static int sinks_before;       /* sink.number() when run() opened a stream */

void r_set_phase(enum r_phase p)
{
	phase = p;
}

void r_set_task(struct cowrun_task *t, size_t index, const char *name)
{
	task = t;
	task_index = index;
	task_name = name;
}

SEXP r_module_env(void)
{
	return module_env;
}

/* ---- the connection ---- */

/* What a connection writes to: the FILE while it is ours, NULL after
 * r_connection_end(); whether a write failed.  Two owners, R (the
 * connection's destroy(), on close() or when R drops it) and cowrun
 * (r_connection_end()): the second to let go frees it.  A text
 * connection converts what R writes from the locale's character set to
 * UTF-8 when that set is another (R writes strings in the native
 * encoding: cat() translates a "latin1" or "UTF-8" string to it). */
struct r_sink {
	FILE *f;
	iconv_t to_utf8;           /* (iconv_t)-1: bytes pass as they are */
	char carry[8];             /* an incomplete character, until the next write */
	size_t ncarry;
	int failed;                /* an errno */
	int destroyed, ended;
};

static int put(struct r_sink *s, const char *p, size_t n)
{
	errno = 0;
	if (n > 0 && fwrite(p, 1, n, s->f) != n) {
		s->failed = errno ? errno : EIO;
		return -1;
	}
	return 0;
}

/* n bytes of the locale's set written as UTF-8; a byte that is no
 * character of it passes as it is (useBytes = TRUE wrote it on purpose). */
static int put_converted(struct r_sink *s, const char *in, size_t n)
{
	char out[4096];

	while (n > 0) {
		char *o = out;
		size_t room = sizeof out;
		size_t r = iconv(s->to_utf8, (char **)&in, &n, &o, &room);
		int err = errno;
		if (put(s, out, (size_t)(o - out)) != 0)
			return -1;
		if (r != (size_t)-1 || err == E2BIG)
			continue;
		if (err == EINVAL && n < sizeof s->carry) {
			memcpy(s->carry, in, n);
			s->ncarry = n;
			return 0;
		}
		if (put(s, in, 1) != 0)
			return -1;
		in++;
		n--;
	}
	return 0;
}

static size_t sink_write(const void *ptr, size_t size, size_t n, Rconnection con)
{
	struct r_sink *s = con->private;
	size_t len = size * n;

	if (s == NULL || s->f == NULL || s->failed)
		return 0;
	if (s->to_utf8 == (iconv_t)-1)
		return put(s, ptr, len) == 0 ? n : 0;
	if (s->ncarry > 0) {   /* the rest of a character a write split */
		char *joined = malloc(s->ncarry + len);
		if (joined == NULL) {
			s->failed = ENOMEM;
			return 0;
		}
		memcpy(joined, s->carry, s->ncarry);
		memcpy(joined + s->ncarry, ptr, len);
		len += s->ncarry;
		s->ncarry = 0;
		int rc = put_converted(s, joined, len);
		free(joined);
		return rc == 0 ? n : 0;
	}
	return put_converted(s, ptr, len) == 0 ? n : 0;
}

/* close() from R: the FILE is the runner's (it commits it after run()):
 * nothing to close. */
static void sink_close(Rconnection con)
{
	con->isopen = FALSE;
}

static void sink_free(struct r_sink *s)
{
	if (s->to_utf8 != (iconv_t)-1)
		iconv_close(s->to_utf8);
	free(s);
}

static void sink_destroy(Rconnection con)
{
	struct r_sink *s = con->private;

	con->private = NULL;
	if (s == NULL)
		return;
	s->destroyed = 1;
	if (s->ended)
		sink_free(s);
}

static Rboolean sink_open(Rconnection con)
{
	struct r_sink *s = con->private;

	if (s == NULL || s->f == NULL)
		return FALSE;
	con->isopen = TRUE;
	return TRUE;
}

static int sink_fflush(Rconnection con)
{
	struct r_sink *s = con->private;

	return s != NULL && s->f != NULL ? fflush(s->f) : 0;
}

/* The conversion a text connection needs: none in a UTF-8 locale (and
 * none in C's ASCII, where R itself writes what it lacks as <U+00E9>). */
static iconv_t utf8_conversion(int binary)
{
	const char *set = nl_langinfo(CODESET);

	if (binary || strcmp(set, "UTF-8") == 0 || strcmp(set, "ANSI_X3.4-1968") == 0)
		return (iconv_t)-1;
	return iconv_open("UTF-8", set);
}

SEXP r_connection_new(FILE *f, const char *description, int binary, struct r_sink **sink)
{
	Rconnection con;
	struct r_sink *s = calloc(1, sizeof *s);

	if (s == NULL) {
		Rf_error("out of memory");
		return R_NilValue; /* not reached: Rf_error() jumps */
	}
	s->to_utf8 = utf8_conversion(binary);
	SEXP c = PROTECT(R_new_custom_connection(description, binary ? "wb" : "w", "cowrun", &con));
	s->f = f;
	con->private = s;
	con->text = binary ? FALSE : TRUE;
	con->canread = FALSE;
	con->canwrite = TRUE;
	con->canseek = FALSE;
	con->blocking = TRUE;
	con->isopen = TRUE;
	con->open = sink_open;
	con->close = sink_close;
	con->destroy = sink_destroy;
	con->write = sink_write;
	con->fflush = sink_fflush;
	UNPROTECT(1);
	*sink = s;
	return c;
}

int r_connection_end(SEXP c, struct r_sink *s)
{
	if (s->f != NULL && s->ncarry > 0 && !s->failed)
		put(s, s->carry, s->ncarry);   /* a truncated character, as it came */
	int failed = s->failed;

	s->f = NULL;
	s->ended = 1;
	if (s->destroyed) {
		sink_free(s);
	} else {
		/* close(con) in R, so that its slot in R's table of 128 is
		 * free again (serial mode runs every task in one session). */
		SEXP call = PROTECT(Rf_lang2(Rf_install("close"), c));
		int err;
		R_tryEvalSilent(call, R_BaseEnv, &err);
		UNPROTECT(1);
	}
	return failed;
}

/* ---- the task's streams ---- */

/* An R expression of this module's, evaluated silently in its
 * environment: its value, or R_NilValue if it failed. */
static SEXP module_eval(SEXP call)
{
	int err = 0;

	PROTECT(call);
	SEXP v = R_tryEvalSilent(call, module_env, &err);
	UNPROTECT(1);
	return err ? R_NilValue : v;
}

/* A stream handed to run(): preserved until r_close_report().  The
 * first one notes the sinks alive, so that a sink(con) run() leaves is
 * ended before its connection is (R refuses to close a sink's). */
static SEXP stream_open(struct stream *st, FILE *f, int binary)
{
	if (report.con == NULL && command.con == NULL)
		sinks_before = Rf_asInteger(module_eval(Rf_lang1(Rf_install("sink.number"))));
	st->con = r_connection_new(f, task_name, binary, &st->sink);
	st->binary = binary;
	R_PreserveObject(st->con);
	return st->con;
}

/* The stream let go: the errno of a write that failed, or 0. */
static int stream_close(struct stream *st)
{
	if (st->con == NULL)
		return 0;
	int failed = r_connection_end(st->con, st->sink);
	R_ReleaseObject(st->con);
	st->con = NULL;
	st->sink = NULL;
	return failed;
}

int r_close_report(struct cowrun_task *t)
{
	if (report.con == NULL && command.con == NULL)
		return 0;
	SEXP unsink = PROTECT(Rf_lang2(Rf_install(".unsink"), Rf_ScalarInteger(sinks_before)));
	module_eval(unsink);
	UNPROTECT(1);
	int report_failed = stream_close(&report);
	int command_failed = stream_close(&command);
	if (t == NULL)
		return 0;
	if (report_failed != 0) {
		cowrun_task_error(t, "cannot write the report: %s", strerror(report_failed));
		return -1;
	}
	/* The runner's wait names a command's broken input (ferror() on its
	 * stream: a write failed while SIGPIPE was held), after the
	 * command's own failure if it has one. */
	return command_failed != 0 ? 1 : 0;
}

/* ---- random numbers ---- */

static SEXP merge_side;        /* the merging side's .Random.seed, preserved */
static int merge_side_kept;    /* between a run() and the next merge()/finish() */

/* L'Ecuyer-CMRG's moduli (R's RNG.c, after L'Ecuyer 1999): the state is
 * three numbers below m1, then three below m2, neither triple all zero. */
#define LECUYER_M1 4294967087u
#define LECUYER_M2 4294944443u
/* .Random.seed[1]: kind L'Ecuyer-CMRG (7) + 100 * normal.kind Inversion
 * (4) + 10000 * sample.kind Rejection (1), as RNGkind() codes it. */
#define LECUYER_CODE 10407

void r_seed_task(uint64_t seed)
{
	SEXP sym = Rf_install(".Random.seed");

	if (!merge_side_kept) {
		SEXP now = Rf_findVarInFrame(R_GlobalEnv, sym);
		merge_side = now;
		if (now != R_UnboundValue)
			R_PreserveObject(now);
		merge_side_kept = 1;
	}
	SEXP s = PROTECT(Rf_allocVector(INTSXP, 7));
	INTEGER(s)[0] = LECUYER_CODE;
	for (int j = 0; j < 6; j++) {
		uint32_t m = j < 3 ? LECUYER_M1 : LECUYER_M2;
		uint32_t v = (uint32_t)(cowrun_seed_mix(seed, (uint64_t)j) % m);
		if (j % 3 == 0 && v == 0)
			v = 1;   /* no triple all zero (odds 2^-96, but R refuses it) */
		INTEGER(s)[j + 1] = (int)v;
	}
	Rf_defineVar(sym, s, R_GlobalEnv);
	UNPROTECT(1);
}

void r_seed_restore(void)
{
	SEXP sym = Rf_install(".Random.seed");

	if (!merge_side_kept)
		return;
	merge_side_kept = 0;
	if (merge_side == R_UnboundValue) {
		R_removeVarFromFrame(sym, R_GlobalEnv);
		return;
	}
	Rf_defineVar(sym, merge_side, R_GlobalEnv);
	R_ReleaseObject(merge_side);
	merge_side = NULL;
}

/* ---- the entry points ---- */

static SEXP c_report(SEXP binary)
{
	int bin = Rf_asLogical(binary) == TRUE;

	if (phase != R_PHASE_RUN || task == NULL)
		Rf_error("cowrun_report() is only for run()");
	if (command.con != NULL && command_to_report)
		Rf_error("cowrun_report() after cowrun_command(to = \"report\"): the command's "
			 "output is the report");
	if (report.con != NULL) {
		if (report.sink->destroyed)
			Rf_error("this task's report was closed: a task writes its report through "
				 "one connection (close() it at the end, or not at all)");
		if (report.binary != bin)
			Rf_error("binary = %s: this task's report is already open %s: a task "
				 "writes it one way", bin ? "TRUE" : "FALSE", bin ? "as text" : "binary");
		return report.con;
	}
	FILE *f = cowrun_report(task);
	if (f == NULL)
		Rf_error("cannot create the report of task %zu (%s): %s", task_index, task_name,
			 strerror(errno));
	return stream_open(&report, f, bin);
}

/* NULL when cmd did not start: the closure signals a
 * "cowrun_command_error" (uncaught, the task fails with the runner's own
 * line, which cowrun_command() gave cowrun_task_error()). */
static SEXP c_command(SEXP cmd, SEXP to_report, SEXP binary)
{
	int bin = Rf_asLogical(binary) == TRUE, to_rep = Rf_asLogical(to_report) == TRUE;

	if (TYPEOF(cmd) != STRSXP || XLENGTH(cmd) != 1 || STRING_ELT(cmd, 0) == NA_STRING)
		Rf_error("cmd is one string");
	if (phase != R_PHASE_RUN || task == NULL)
		Rf_error("cowrun_command() is only for run()");
	if (command.con != NULL)
		Rf_error("cowrun_command() was already called in this task: one command per task");
	if (to_rep && report.con != NULL)
		Rf_error("cowrun_command(to = \"report\") after cowrun_report(): the report is "
			 "written by one of them");
	FILE *f = cowrun_command(task, Rf_translateChar(STRING_ELT(cmd, 0)),
				 to_rep ? COWRUN_TO_REPORT : COWRUN_TO_STDERR);
	if (f == NULL)
		return R_NilValue;
	command_to_report = to_rep;
	return stream_open(&command, f, bin);
}

static SEXP c_input(SEXP path)
{
	if (TYPEOF(path) != STRSXP || XLENGTH(path) != 1 || STRING_ELT(path, 0) == NA_STRING)
		Rf_error("cowrun_input(path): path is one file name");
	if (phase == R_PHASE_RUN)
		Rf_error("cowrun_input() is for setup() (and the script's top level), not run()");
	/* plan(), merge_setup(), merge(), finish(): the inputs are known
	 * (--merge takes them as the results saved them): nothing to do. */
	if (phase != R_PHASE_SETUP && phase != R_PHASE_LOAD)
		return R_NilValue;
	if (cowrun_input(R_ExpandFileName(Rf_translateChar(STRING_ELT(path, 0)))) != 0)
		Rf_error("cowrun_input('%s') refused (see the line above)",
			 Rf_translateChar(STRING_ELT(path, 0)));
	return R_NilValue;
}

/* cowrun_input() as a script calls it: setup() only (the top level's
 * phase is the source() wrapper's, rinterp.c). */
static SEXP c_input_setup(SEXP path)
{
	if (phase != R_PHASE_SETUP)
		Rf_error("cowrun_input() is only for setup()");
	return c_input(path);
}

static SEXP c_task(void)
{
	if (phase != R_PHASE_RUN || task == NULL)
		return R_NilValue;
	SEXP l = PROTECT(Rf_allocVector(VECSXP, 2));
	SEXP names = PROTECT(Rf_allocVector(STRSXP, 2));
	SET_VECTOR_ELT(l, 0, task_index <= INT32_MAX ? Rf_ScalarInteger((int)task_index)
						     : Rf_ScalarReal((double)task_index));
	SET_VECTOR_ELT(l, 1, Rf_ScalarString(Rf_mkCharCE(task_name, CE_UTF8)));
	SET_STRING_ELT(names, 0, Rf_mkChar("index"));
	SET_STRING_ELT(names, 1, Rf_mkChar("name"));
	Rf_setAttrib(l, R_NamesSymbol, names);
	UNPROTECT(2);
	return l;
}

static SEXP c_seed(void)
{
	char buf[32];
	uint64_t seed = phase == R_PHASE_RUN && task != NULL ? cowrun_task_seed(task)
							     : cowrun_run_seed();

	snprintf(buf, sizeof buf, "%" PRIu64, seed);
	return Rf_mkString(buf);
}

static SEXP c_verbosity(void)
{
	return Rf_ScalarInteger(cowrun_verbosity());
}

#define ENTRY(name, fn, n) { name, (DL_FUNC)(void (*)(void))fn, n }
static const R_CallMethodDef call_methods[] = {
	ENTRY("cowrun_r_report", c_report, 1),
	ENTRY("cowrun_r_command", c_command, 3),
	ENTRY("cowrun_r_input", c_input, 1),
	ENTRY("cowrun_r_input_setup", c_input_setup, 1),
	ENTRY("cowrun_r_task", c_task, 0),
	ENTRY("cowrun_r_seed", c_seed, 0),
	ENTRY("cowrun_r_verbosity", c_verbosity, 0),
	{ NULL, NULL, 0 },
};

/* The R side: what a script calls.  Errors name the function as the
 * script called it (call. = FALSE on the closure's own stop()). */
static const char module_source[] =
	"cowrun_report <- function(binary = FALSE) .Call('cowrun_r_report', isTRUE(binary))\n"
	"cowrun_command <- function(cmd, to = c('report', 'stderr'), binary = FALSE) {\n"
	"  to <- match.arg(to)\n"
	"  con <- .Call('cowrun_r_command', cmd, to == 'report', isTRUE(binary))\n"
	"  if (is.null(con))\n"
	"    stop(structure(class = c('cowrun_command_error', 'error', 'condition'),\n"
	"      list(message = paste0('cowrun_command(): \\'', cmd, '\\' did not start'),\n"
	"           call = sys.call())))\n"
	"  con\n"
	"}\n"
	"cowrun_input <- function(path) {\n"
	"  .Call('cowrun_r_input_setup', path)\n"
	"  invisible(path)\n"
	"}\n"
	"cowrun_task <- function() .Call('cowrun_r_task')\n"
	"cowrun_seed <- function() .Call('cowrun_r_seed')\n"
	"cowrun_verbosity <- function() .Call('cowrun_r_verbosity')\n"
	".unsink <- function(n) while (sink.number() > n) sink()\n";

int r_module_attach(void)
{
	ParseStatus status;
	int err = 0;

	R_registerRoutines(R_getEmbeddingDllInfo(), NULL, call_methods, NULL, NULL);
	SEXP call = PROTECT(Rf_lang1(Rf_install("attach")));
	SETCDR(call, Rf_list2(R_NilValue, Rf_mkString("cowrun")));
	SET_TAG(CDDR(call), Rf_install("name"));
	module_env = R_tryEvalSilent(call, R_GlobalEnv, &err);
	UNPROTECT(1);
	if (err || TYPEOF(module_env) != ENVSXP) {
		cowrun_error("cannot attach the cowrun environment: %s", R_curErrorBuf());
		return -1;
	}
	R_PreserveObject(module_env);
	SEXP text = PROTECT(Rf_mkString(module_source));
	SEXP exprs = PROTECT(R_ParseVector(text, -1, &status, R_NilValue));
	err = status != PARSE_OK;
	for (R_xlen_t i = 0; !err && i < XLENGTH(exprs); i++)
		R_tryEvalSilent(VECTOR_ELT(exprs, i), module_env, &err);
	UNPROTECT(2);
	if (err) {
		cowrun_error("cannot define the cowrun functions: %s", R_curErrorBuf());
		return -1;
	}
	return 0;
}
