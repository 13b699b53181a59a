/*
 * rmodule.c - the R interface a script calls, in an environment attached
 * to R's search path as "cowrun", and the connection type under the task's
 * report and finish()'s summary.
 *
 *   cowrun_report(binary = FALSE)
 *       in run(): a connection open on the task's report file OUTDIR/NAME
 *       (text, UTF-8; or binary, for writeBin()).  It is written under a
 *       temporary name and committed (flushed, fsynced, renamed) only when
 *       run() returns without an error; the workload closes it after
 *       run() (close() from the script is harmless).  A second call in
 *       the same task returns the same connection.
 *   cowrun_input(path)
 *       as the script loads, or in setup(): path is an input of the run
 *       (cowrun_input()): --resume refuses it changed.
 *   cowrun_task()
 *       in run(): list(index = i, name = name); NULL elsewhere.
 *   cowrun_verbosity()
 *       0, or 1 under cowrun -v.
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
static SEXP report_con = NULL; /* the task's report connection, preserved */
static struct r_sink *report_sink; /* under it */
static int report_binary;

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
 * (r_connection_end()): the second to let go frees it. */
struct r_sink {
	FILE *f;
	int failed;                /* an errno */
	int destroyed, ended;
};

static size_t sink_write(const void *ptr, size_t size, size_t n, Rconnection con)
{
	struct r_sink *s = con->private;

	if (s == NULL || s->f == NULL || s->failed)
		return 0;
	errno = 0;
	if (fwrite(ptr, size, n, s->f) != n) {
		s->failed = errno ? errno : EIO;
		return 0;
	}
	return n;
}

/* close() from R: the FILE is the runner's (it commits it after run()):
 * nothing to close. */
static void sink_close(Rconnection con)
{
	con->isopen = FALSE;
}

static void sink_destroy(Rconnection con)
{
	struct r_sink *s = con->private;

	con->private = NULL;
	if (s == NULL)
		return;
	s->destroyed = 1;
	if (s->ended)
		free(s);
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

SEXP r_connection_new(FILE *f, const char *description, int binary, struct r_sink **sink)
{
	Rconnection con;
	struct r_sink *s = calloc(1, sizeof *s);

	if (s == NULL)
		Rf_error("out of memory");
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
	int failed = s->failed;

	s->f = NULL;
	s->ended = 1;
	if (s->destroyed) {
		free(s);
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

int r_close_report(struct cowrun_task *t)
{
	int failed;

	if (report_con == NULL)
		return 0;
	failed = r_connection_end(report_con, report_sink);
	R_ReleaseObject(report_con);
	report_con = NULL;
	report_sink = NULL;
	if (failed != 0 && t != NULL) {
		cowrun_task_error(t, "cannot write the report: %s", strerror(failed));
		return -1;
	}
	return 0;
}

/* ---- the entry points ---- */

static SEXP c_report(SEXP binary)
{
	int bin = Rf_asLogical(binary) == TRUE;

	if (phase != R_PHASE_RUN || task == NULL)
		Rf_error("cowrun_report() is only for run()");
	if (report_con != NULL) {
		if (report_sink->destroyed)
			Rf_error("cowrun_report(): this task's report was closed: a task writes its "
				 "report through one connection (close() it at the end, or not at all)");
		if (report_binary != bin)
			Rf_error("cowrun_report(binary = %s): this task's report is already open %s",
				 bin ? "TRUE" : "FALSE", bin ? "as text" : "binary");
		return report_con;
	}
	FILE *f = cowrun_report(task);
	if (f == NULL)
		Rf_error("cannot create the report of task %zu (%s)", task_index, task_name);
	report_con = r_connection_new(f, task_name, bin, &report_sink);
	report_binary = bin;
	R_PreserveObject(report_con);
	return report_con;
}

static SEXP c_input(SEXP path)
{
	if (TYPEOF(path) != STRSXP || XLENGTH(path) != 1 || STRING_ELT(path, 0) == NA_STRING)
		Rf_error("cowrun_input(path): path is one file name");
	if (phase != R_PHASE_SETUP && phase != R_PHASE_LOAD)
		Rf_error("cowrun_input() is only for setup() (and the script's top level)");
	if (cowrun_input(R_ExpandFileName(Rf_translateChar(STRING_ELT(path, 0)))) != 0)
		Rf_error("cowrun_input('%s') refused (see the line above)",
			 Rf_translateChar(STRING_ELT(path, 0)));
	return R_NilValue;
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

static SEXP c_verbosity(void)
{
	return Rf_ScalarInteger(cowrun_verbosity());
}

static const R_CallMethodDef call_methods[] = {
	{ "cowrun_r_report", (DL_FUNC)(void (*)(void))c_report, 1 },
	{ "cowrun_r_input", (DL_FUNC)(void (*)(void))c_input, 1 },
	{ "cowrun_r_task", (DL_FUNC)(void (*)(void))c_task, 0 },
	{ "cowrun_r_verbosity", (DL_FUNC)(void (*)(void))c_verbosity, 0 },
	{ NULL, NULL, 0 },
};

/* The R side: what a script calls. */
static const char module_source[] =
	"cowrun_report <- function(binary = FALSE) .Call('cowrun_r_report', isTRUE(binary))\n"
	"cowrun_input <- function(path) invisible(.Call('cowrun_r_input', path))\n"
	"cowrun_task <- function() .Call('cowrun_r_task')\n"
	"cowrun_verbosity <- function() .Call('cowrun_r_verbosity')\n";

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
