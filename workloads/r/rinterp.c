/*
 * rinterp.c - embedded R: started once per process, kept consistent across
 * the runner's forks, every evaluation made safe and its error said in one
 * line, and R's end in the one process that ran finish().
 *
 * R's sources cited (wch/r-source, branch R-4-2-branch, Debian 12's R
 * 4.2.2): src/unix/Rembedded.c (Rf_initEmbeddedR, Rf_endEmbeddedR),
 * src/unix/system.c (Rf_initialize_R: the console's files, R_Interactive),
 * src/unix/sys-std.c (Rstd_CleanUp, what q() reaches), src/main/main.c
 * (do_quit: "If it gives an error, will drop back to main loop"),
 * src/library/parallel/src/fork.c (mcfork: R_isForkedChild = 1 in the
 * child).
 */
#define _GNU_SOURCE
#define R_INTERFACE_PTRS
#include "rworkload.h"

#include <Rembedded.h>
#include <Rinterface.h>
#include <R_ext/Parse.h>
#include <R_ext/RStartup.h>

#include <dlfcn.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <locale.h>
#include <malloc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if !defined(COWRUN_R_HOME) || !defined(COWRUN_R_SHARE_DIR)
#error "COWRUN_R_HOME, COWRUN_R_INCLUDE_DIR, COWRUN_R_SHARE_DIR, COWRUN_R_DOC_DIR come from the Makefile (r_CFLAGS)"
#endif

/* Exported by libR.so but declared only in R's internal Defn.h; parallel's
 * fork.c (mcfork) sets it in every child it forks: graphics devices and
 * Tcl/Tk's event loop then leave the parent's windows alone. */
extern Rboolean R_isForkedChild;

static int started, ended;
static pid_t owner;            /* the process that started R */
static pthread_t r_thread;     /* the thread R runs on */
static const char *script_path; /* as given */
static SEXP helpers;            /* the environment of helper_source */
static FILE *console_out;       /* finish()'s stream while it runs */

/*
 * What is easier said in R.  outcome(): evaluate a call, catching its
 * error as a condition (so that R prints nothing of its own), with the
 * calls alive when it was signalled (the traceback; the script's line
 * from their source references), and the warnings it gave, muffled
 * (said once by cowrun, naming the task).  load(): the script's top
 * level, one expression after another, so that an error there names the
 * line of the expression that failed.  The wrapper of source() that
 * declares each file sourced as the script loads an input.
 */
static const char helper_source[] =
	"script <- ''\n"
	"at <- NULL\n"
	"srcline <- function(ref) {\n"
	"  if (is.null(ref)) return(script)\n"
	"  f <- attr(ref, 'srcfile')\n"
	"  name <- if (is.environment(f) && !is.null(f$filename)) f$filename else script\n"
	"  paste0(name, ':', ref[1L])\n"
	"}\n"
	"where <- function(calls) {\n"
	"  any <- NULL\n"
	"  for (k in rev(seq_along(calls))) {\n"
	"    ref <- attr(calls[[k]], 'srcref')\n"
	"    if (is.null(ref)) next\n"
	"    f <- attr(ref, 'srcfile')\n"
	"    if (is.environment(f) && identical(f$filename, script)) return(srcline(ref))\n"
	"    if (is.null(any)) any <- ref\n"
	"  }\n"
	"  srcline(if (!is.null(any)) any else at)\n"
	"}\n"
	"trim <- function(calls, expr) {\n"
	"  k <- Position(function(c) identical(c, expr), calls)\n"
	"  if (is.na(k)) k <- 1L\n"
	"  calls <- calls[seq.int(k, length.out = max(0L, length(calls) - k))]\n"
	"  n <- length(calls)\n"
	"  if (n > 0L && identical(calls[[n]][[1L]], quote(.handleSimpleError))) calls <- calls[-n]\n"
	"  calls\n"
	"}\n"
	"traceback_lines <- function(calls) {\n"
	"  vapply(seq_along(calls), function(k) {\n"
	"    c <- calls[[k]]\n"
	"    ref <- attr(c, 'srcref')\n"
	"    paste0(k, ': ', deparse(c, nlines = 1L)[1L], if (!is.null(ref)) paste0(' at ', srcline(ref)) else '')\n"
	"  }, '')\n"
	"}\n"
	"one_line <- function(x) {\n"
	"  x <- strsplit(x, '\\n', fixed = TRUE)[[1L]]\n"
	"  x <- trimws(x[nzchar(trimws(x))])\n"
	"  if (length(x)) x[1L] else ''\n"
	"}\n"
	"outcome <- function(expr, env) {\n"
	"  trace <- NULL\n"
	"  warns <- character()\n"
	"  nwarn <- 0L\n"
	"  keep <- getOption('nwarnings', 50L)\n"
	"  tryCatch(withCallingHandlers(\n"
	"      list(ok = TRUE, value = eval(expr, env), warnings = warns, nwarnings = nwarn),\n"
	"      warning = function(w) {\n"
	"        nwarn <<- nwarn + 1L\n"
	"        if (nwarn <= keep) {\n"
	"          call <- conditionCall(w)\n"
	"          warns <<- c(warns, paste0(one_line(conditionMessage(w)),\n"
	"            if (!is.null(call)) paste0(' (in ', deparse(call, nlines = 1L)[1L], ')') else '',\n"
	"            ' at ', where(sys.calls())))\n"
	"        }\n"
	"        invokeRestart('muffleWarning')\n"
	"      },\n"
	"      error = function(e) trace <<- sys.calls()),\n"
	"    error = function(e) {\n"
	"      calls <- trim(trace, expr)\n"
	"      call <- conditionCall(e)\n"
	"      list(ok = FALSE, message = one_line(conditionMessage(e)),\n"
	"           call = if (is.null(call)) '' else deparse(call, nlines = 1L)[1L],\n"
	"           where = where(calls), trace = traceback_lines(calls), warnings = warns,\n"
	"           nwarnings = nwarn, class = class(e)[1L])\n"
	"    })\n"
	"}\n"
	"load <- function(path, env) {\n"
	"  keep <- options(keep.source = TRUE)\n"
	"  on.exit(options(keep), add = TRUE)\n"
	"  exprs <- parse(path, keep.source = TRUE)\n"
	"  refs <- attr(exprs, 'srcref')\n"
	"  for (k in seq_along(exprs)) {\n"
	"    at <<- refs[[k]]\n"
	"    eval(exprs[[k]], env)\n"
	"  }\n"
	"  at <<- NULL\n"
	"  invisible(NULL)\n"
	"}\n"
	/* A file source() reads as the script loads is an input of the run:
	 * masked in the attached cowrun environment (the search path has it
	 * before base), removed once the script has loaded. */
	"wrap_source <- function(where) {\n"
	"  assign('source', function(file, ...) {\n"
	"    if (is.character(file) && length(file) == 1L && file.exists(file))\n"
	"      .Call('cowrun_r_input', file)\n"
	"    base::source(file, ...)\n"
	"  }, envir = where)\n"
	"}\n"
	"unwrap_source <- function(where) if (exists('source', envir = where, inherits = FALSE)) rm('source', envir = where)\n"
	"compile_script <- function(env) suppressWarnings(for (n in ls(env, all.names = TRUE)) {\n"
	"  f <- get(n, envir = env)\n"
	"  if (typeof(f) != 'closure') next\n"
	"  g <- tryCatch(compiler::cmpfun(f), error = function(e) NULL)\n"
	"  if (!is.null(g)) assign(n, g, envir = env)\n"
	"})\n"
	"describe <- function() c(R.version.string, R.home(), paste(.libPaths(), collapse = ', '))\n";

/* ---- the console ---- */

/* Everything R prints (print(), cat() without a file, message(), its
 * warnings) goes to stderr: stdout carries the summary only.  While
 * finish() runs, its ordinary output (otype 0) is the summary's. */
/* While r_full_gc() watches R's collections: their reports (gc(verbose =
 * TRUE)) are read for "(level 2)", not printed. */
static int watching_gc, saw_full_gc;

static void console_write(const char *buf, int len, int otype)
{
	FILE *to = otype == 0 && console_out != NULL ? console_out : stderr;

	if (watching_gc) {
		if (len > 0 && memmem(buf, (size_t)len, "(level 2)", 9) != NULL)
			saw_full_gc = 1;
		return;
	}
	if (len > 0)
		fwrite(buf, 1, (size_t)len, to);
}

static void console_flush(void)
{
	fflush(stderr);
}

void r_console_to(FILE *out)
{
	console_out = out;
}

/* ---- q() ---- */

/*
 * q() reaches R_CleanUp, whose default (Rstd_CleanUp) runs .Last,
 * deletes the session's temporary directory and exits: the directory is
 * the parent's and every worker's (they are forks of one session), and
 * an exit skips cowrun's own cleanup.  A script ends through its
 * functions' returns, so q() is an error there, in any process: in run()
 * the task fails, in setup() the run.  do_quit() allows it ("If it gives
 * an error, will drop back to main loop").  A fatal error of R's own
 * (R_Suicide, SA_SUICIDE) ends the process: a worker's task fails by its
 * exit status; only the process that owns R removes the directory.
 */
static void cleanup_hook(SA_TYPE saveact, int status, int run_last)
{
	(void)run_last;
	if (saveact == SA_SUICIDE) {
		fflush(stderr);
		if (getpid() == owner && !R_isForkedChild)
			R_CleanTempDir();
		_exit(status ? status : 2);
	}
	Rf_error("q(status = %d) was called: a cowrun r script ends by returning from its "
		 "functions (stop() fails a task, an error in setup() the run); R's session "
		 "and its tempdir() stay", status);
}

/* ---- fork ---- */

/* Did this thread prepare the fork under way? */
static __thread int forking;

/* libgomp after fork: a child inherits the parent's thread team in name
 * only, and its first parallel region waits for threads that are not
 * there.  One thread per worker avoids the team.  Through dlsym: libR
 * links libgomp (Debian's does), so it is in the process whenever R is;
 * without it (an R built without OpenMP) there is nothing to set. */
static void omp_threads(int n)
{
	void (*set)(int) = (void (*)(int))dlsym(RTLD_DEFAULT, "omp_set_num_threads");

	if (set != NULL)
		set(n);
}

static void name_threads_at_fork(void);

/* Every fork the runner makes (pool, standby, watchdog, serve's leaders)
 * goes through glibc's fork(), and so through these; only on R's thread,
 * and only while R lives (pthread_atfork() cannot be undone). */
static void before_fork(void)
{
	if (!started || ended || !pthread_equal(pthread_self(), r_thread))
		return;
	R_FlushConsole();
	fflush(stdout);
	fflush(stderr);
	if (cowrun_verbosity() > 0)
		name_threads_at_fork();
	forking = 1;
}

static void after_fork_parent(void)
{
	forking = 0;
}

/* As parallel's mcfork() does its children (fork.c). */
static void after_fork_child(void)
{
	if (!forking)
		return;
	forking = 0;
	R_isForkedChild = TRUE;
	omp_threads(1);
}

static int r_do(const char *code);

/*
 * R's JIT off in a forked worker, as parallel's mcfork() turns it off in
 * every child it forks (src/library/parallel/R/unix/mcfork.R:
 * compiler::enableJIT(0) in the child).  With it on, each worker
 * byte-compiles again every closure run() reaches that the parent never
 * called (the script's helpers), and throws the work away at its exit:
 * the example at 500k rows, -j 2, spent 0.17 to 0.28 s more CPU in its
 * workers' run() than with it off (1.28-1.46 s against 1.11-1.23 s,
 * measured with proc.time() around run()).  run() itself comes compiled
 * from the parent (r_compiled()); serial mode, one process for every
 * task, keeps the JIT, as lapply() does.
 */
void r_worker_start(void)
{
	static int done;
	int fd;

	if (done || getpid() == owner)
		return;
	done = 1;
	if ((fd = open("/dev/null", O_RDONLY | O_CLOEXEC)) >= 0) {
		dup2(fd, STDIN_FILENO);
		close(fd);
	}
	r_do("invisible(compiler::enableJIT(0))");
}

/* -v: the threads besides this one, once, at the first fork that finds
 * any (OpenMP's team from the setup, a BLAS pool): by comm and id. */
static void name_threads_at_fork(void)
{
	static int said;
	char list[512] = "", path[300], comm[64];
	size_t used = 0, n = 0;
	DIR *d;

	if (said || (d = opendir("/proc/self/task")) == NULL)
		return;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (e->d_name[0] == '.' || atoi(e->d_name) == gettid())
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		FILE *f = fopen(path, "re");
		if (f == NULL)
			continue;
		if (fgets(comm, sizeof comm, f) == NULL)
			snprintf(comm, sizeof comm, "?");
		fclose(f);
		comm[strcspn(comm, "\n")] = '\0';
		n++;
		if (used < sizeof list)
			used += (size_t)snprintf(list + used, sizeof list - used, "%s%s (%s)",
						 n > 1 ? ", " : "", comm, e->d_name);
	}
	closedir(d);
	said = 1;
	if (n > 0)
		cowrun_error("%zu thread%s besides R's alive at fork: %s (a forked worker has none "
			     "of them; OpenMP is set to one thread there)", n, n == 1 ? "" : "s", list);
	else
		cowrun_error("no thread besides R's alive at fork");
}

/* ---- starting ---- */

/* R's environment as Debian's /usr/lib/R/bin/R exports it (R_HOME,
 * R_SHARE_DIR, R_INCLUDE_DIR, R_DOC_DIR: the last three are not under
 * R_HOME on Debian, and R.home("share") is wrong without them), each
 * kept when the environment already sets it. */
static void r_environment(void)
{
	setenv("R_HOME", COWRUN_R_HOME, 0);
	setenv("R_SHARE_DIR", COWRUN_R_SHARE_DIR, 0);
	setenv("R_INCLUDE_DIR", COWRUN_R_INCLUDE_DIR, 0);
	setenv("R_DOC_DIR", COWRUN_R_DOC_DIR, 0);
}

/* The count a thread variable starts with ("4"; OpenMP's "4,2" nests):
 * 0 if none, which cowrun_setup_threaded() leaves unsaid. */
static unsigned leading_count(const char *s)
{
	char *end;
	unsigned long v = strtoul(s, &end, 10);

	return end == s || v > UINT_MAX ? 0 : (unsigned)v;
}

/*
 * The setup's threads follow cowrun's setup thread count (-j, the CPUs
 * this process may use, its cgroup; one in serial mode), as a C setup's
 * cowrun_parallel() does: data.table's (R_DATATABLE_NUM_THREADS, read
 * when the package loads; its own default is half the CPUs, so fread()
 * ran on one thread of two: 0.86 s against 0.57 s on two, 5M rows) and
 * OpenMP's (libgomp read OMP_NUM_THREADS when libR loaded it: its count
 * is set directly).  A count the environment gives is the user's word.
 * Each worker runs one thread (after_fork_child(); data.table's own fork
 * handler does the same for its count).  The wider of the two is the
 * runner's to know (cowrun_setup_threaded()): its -v line says the setup
 * ran on them, not on one thread that never called cowrun_parallel().
 */
/* The setup's threads (fread's, forder's) allocate with malloc, each in a
 * glibc arena of its own unless told otherwise, and what a thread frees
 * stays resident in its arena, into the fork: one arena for every thread.
 * Measured on the example, 5M rows, -j 2, interleaved pairs against
 * MALLOC_ARENA_MAX=16: the setup's peak Pss 386.2 MiB against 387.3-387.5
 * (psswatch every 10 ms, 2 pairs); peak RSS 398.0-398.5 MB against
 * 399.1-399.4, setup 2.04-2.23 s against 2.03-2.16 (time -v, 3 pairs).
 * MALLOC_ARENA_MAX or GLIBC_TUNABLES, if set, are the user's word. */
static void one_malloc_arena(void)
{
	if (getenv("MALLOC_ARENA_MAX") == NULL && getenv("GLIBC_TUNABLES") == NULL)
		mallopt(M_ARENA_MAX, 1);
}

static void setup_threads(void)
{
	unsigned n = cowrun_setup_threads();
	char count[16];

	if (n > 1)
		one_malloc_arena();

	snprintf(count, sizeof count, "%u", n);
	setenv("R_DATATABLE_NUM_THREADS", count, 0);
	if (getenv("OMP_NUM_THREADS") == NULL)
		omp_threads((int)n);
	const char *dt = getenv("R_DATATABLE_NUM_THREADS");
	const char *omp = getenv("OMP_NUM_THREADS") ? getenv("OMP_NUM_THREADS") : count;
	unsigned dt_n = leading_count(dt), omp_n = leading_count(omp);

	cowrun_setup_threaded(dt_n > omp_n ? dt_n : omp_n);
	if (cowrun_verbosity() > 0)
		cowrun_error("the setup's threads: data.table %s, OpenMP %s", dt, omp);
}

/* R in the C locale writes a UTF-8 string as "<U+00E9>", and takes a
 * script's non-ASCII bytes for unknown ones: a report is UTF-8 text, so a
 * C or POSIX character type, or one this system does not have, becomes
 * C.UTF-8 (as Python coerces it, PEP 538); LC_ALL, if set, is the user's
 * word. */
static void utf8_ctype(void)
{
	const char *all = getenv("LC_ALL");
	const char *got;

	if (all && *all)
		return;
	got = setlocale(LC_CTYPE, "");
	if (got == NULL || strcmp(got, "C") == 0 || strcmp(got, "POSIX") == 0)
		setenv("LC_CTYPE", "C.UTF-8", 1);
	setlocale(LC_CTYPE, "C");
}

/* Rf_initEmbeddedR() split at its seam (Rembedded.c): between
 * Rf_initialize_R() and setup_Rmainloop() the console is set to stderr
 * and R_Interactive to FALSE, so that the profiles, which
 * setup_Rmainloop() reads (Rprofile.site, then the project's or the
 * user's .Rprofile, as Rscript reads them), run as under Rscript and
 * print nowhere but stderr. */
static int init_r(void)
{
	char *argv[] = { "cowrun-r", "--gui=none", "--no-save", "--no-restore", "--silent",
			 "--no-echo", NULL };

	r_environment();
	setup_threads();
	utf8_ctype();
	/* SIGINT, SIGTERM and SIGPIPE keep the runner's meaning: R installs
	 * no handler of its own (R_SignalHandlers, read in setup_Rmainloop). */
	R_SignalHandlers = 0;
	if (Rf_initialize_R((int)(sizeof argv / sizeof argv[0]) - 1, argv) != 0) {
		cowrun_error("cannot start R (R_HOME %s)", getenv("R_HOME"));
		return -1;
	}
	R_Interactive = FALSE;
	R_Outputfile = NULL;
	R_Consolefile = NULL;
	ptr_R_WriteConsole = NULL;
	ptr_R_WriteConsoleEx = console_write;
	ptr_R_FlushConsole = console_flush;
	ptr_R_CleanUp = cleanup_hook;
	setup_Rmainloop();
	/* R sets the locale from the environment (LC_NUMERIC stays "C"):
	 * cowrun's own numbers, and the order sort() gives task names, must
	 * not depend on it: collation is C's, as R CMD check's and
	 * data.table's. */
	setlocale(LC_NUMERIC, "C");
	return 0;
}

/* helper_source into its own environment, kept for the process's life. */
static int prepare_helpers(void)
{
	ParseStatus status;
	SEXP text = PROTECT(Rf_mkString(helper_source));
	SEXP exprs = PROTECT(R_ParseVector(text, -1, &status, R_NilValue));
	int err = status != PARSE_OK;

	helpers = R_NewEnv(R_BaseEnv, TRUE, 29);
	R_PreserveObject(helpers);
	for (R_xlen_t i = 0; !err && i < XLENGTH(exprs); i++)
		R_tryEvalSilent(VECTOR_ELT(exprs, i), helpers, &err);
	UNPROTECT(2);
	if (err) {
		cowrun_error("cannot prepare R's helpers: %s", R_curErrorBuf());
		return -1;
	}
	Rf_defineVar(Rf_install("script"), Rf_mkString(script_path), helpers);
	return 0;
}

/* An R expression of our own, evaluated silently in the global
 * environment: 0, or -1 after one line. */
static int r_do(const char *code)
{
	ParseStatus status;
	SEXP text = PROTECT(Rf_mkString(code));
	SEXP exprs = PROTECT(R_ParseVector(text, -1, &status, R_NilValue));
	int err = status != PARSE_OK;

	for (R_xlen_t i = 0; !err && i < XLENGTH(exprs); i++)
		R_tryEvalSilent(VECTOR_ELT(exprs, i), R_GlobalEnv, &err);
	UNPROTECT(2);
	if (err)
		cowrun_error("R: %s failed: %s", code, R_curErrorBuf());
	return err ? -1 : 0;
}

/* -v: which R, where it lives, where its packages come from. */
static void describe_r(void)
{
	SEXP call = PROTECT(Rf_lang1(Rf_install("describe")));
	int err = 0;
	SEXP d = PROTECT(R_tryEvalSilent(call, helpers, &err));

	if (!err && TYPEOF(d) == STRSXP && XLENGTH(d) == 3)
		cowrun_error("%s, R_HOME %s; packages from: %s", CHAR(STRING_ELT(d, 0)),
			     CHAR(STRING_ELT(d, 1)), CHAR(STRING_ELT(d, 2)));
	UNPROTECT(2);
}

int r_start(const char *script)
{
	if (started)
		return 0;
	script_path = script;
	if (access(script, R_OK) != 0) {
		cowrun_error("cannot read the script '%s': %s", script, strerror(errno));
		return -1;
	}
	if (init_r() != 0)
		return -1;
	owner = getpid();
	r_thread = pthread_self();
	started = 1;
	int err = pthread_atfork(before_fork, after_fork_parent, after_fork_child);
	if (err != 0) {
		cowrun_error("pthread_atfork: %s", strerror(err));
		return -1;
	}
	if (prepare_helpers() != 0 || r_module_attach() != 0 ||
	    r_do("invisible(Sys.setlocale('LC_COLLATE', 'C'))") != 0)
		return -1;
	if (cowrun_verbosity() > 0)
		describe_r();
	return 0;
}

const char *r_script(void)
{
	return script_path;
}

/* ---- evaluating ---- */

/* helpers$fn(args...) evaluated: the outcome's list or value, or
 * R_NilValue with *err set (only if the helper itself failed). */
static SEXP call_helper(SEXP call, int *err)
{
	*err = 0;
	return R_tryEvalSilent(call, helpers, err);
}

SEXP r_eval(SEXP call, SEXP env, int *nprot)
{
	SEXP quoted = PROTECT(Rf_lang2(Rf_install("quote"), call));
	SEXP c = PROTECT(Rf_lang3(Rf_install("outcome"), quoted, env));
	int err;
	SEXP out = call_helper(c, &err);

	UNPROTECT(2);
	if (err) { /* an interrupt, or R out of memory inside the helper */
		out = Rf_allocVector(VECSXP, 0);
	}
	PROTECT(out);
	(*nprot)++;
	return out;
}

/* An element of a named list, or R_NilValue. */
static SEXP get(SEXP list, const char *name)
{
	SEXP names = Rf_getAttrib(list, R_NamesSymbol);

	for (R_xlen_t i = 0; TYPEOF(list) == VECSXP && i < XLENGTH(list); i++)
		if (strcmp(CHAR(STRING_ELT(names, i)), name) == 0)
			return VECTOR_ELT(list, i);
	return R_NilValue;
}

/* A string element, or "". */
static const char *text(SEXP list, const char *name)
{
	SEXP s = get(list, name);

	return TYPEOF(s) == STRSXP && XLENGTH(s) > 0 ? Rf_translateCharUTF8(STRING_ELT(s, 0)) : "";
}

int r_ok(SEXP outcome)
{
	SEXP ok = get(outcome, "ok");

	return TYPEOF(ok) == LGLSXP && XLENGTH(ok) == 1 && LOGICAL(ok)[0] == TRUE;
}

SEXP r_value(SEXP outcome)
{
	return get(outcome, "value");
}

/* "MESSAGE (in CALL)", or MESSAGE when the call is the function's own
 * (fn(...) as cowrun called it), into buf. */
static void message_line(SEXP outcome, const char *fn, char *buf, size_t size)
{
	const char *msg = text(outcome, "message"), *call = text(outcome, "call");
	size_t n = strlen(fn);

	if (get(outcome, "message") == R_NilValue)
		msg = "R failed (an interrupt, or R's memory exhausted)";
	if (call[0] == '\0' || (strncmp(call, fn, n) == 0 && call[n] == '('))
		snprintf(buf, size, "%s", msg);
	else
		snprintf(buf, size, "%s (in %s)", msg, call);
}

void r_say_failed(SEXP outcome, const char *fn)
{
	char line[1024];
	const char *where = text(outcome, "where");

	message_line(outcome, fn, line, sizeof line);
	cowrun_error("%s: in %s(): %s", where[0] ? where : script_path, fn, line);
}

/* The first getOption("nwarnings") (50) warnings are kept, as R keeps
 * them: a loop that warns 10^5 times costs a count, not 10^5 lines.  A
 * run of equal ones is one line, "(N times)". */
void r_say_warnings(SEXP outcome, const char *label)
{
	SEXP w = get(outcome, "warnings"), total = get(outcome, "nwarnings");
	R_xlen_t n = TYPEOF(w) == STRSXP ? XLENGTH(w) : 0;

	for (R_xlen_t i = 0, same; i < n; i += same) {
		for (same = 1; i + same < n && STRING_ELT(w, i + same) == STRING_ELT(w, i);)
			same++;  /* one CHARSXP per string: R caches them */
		if (same > 1)
			cowrun_error("%s: warning: %s (%ld times)", label,
				     Rf_translateCharUTF8(STRING_ELT(w, i)), (long)same);
		else
			cowrun_error("%s: warning: %s", label, Rf_translateCharUTF8(STRING_ELT(w, i)));
	}
	int more = TYPEOF(total) == INTSXP && XLENGTH(total) == 1 ? INTEGER(total)[0] - (int)n : 0;
	if (more > 0)
		cowrun_error("%s: %d more warning%s, not shown (options(nwarnings = %ld) "
			     "keeps the first)", label, more, more == 1 ? "" : "s", (long)n);
}

/*
 * run()'s error, as R says one: "Error in CALL: MESSAGE (SCRIPT:LINE)"
 * is the task's line (the joblog's, the run's last lines), CALL the
 * condition's call (run(state, i, name) as cowrun called it, never a
 * do.call() of deparsed values), "Error: MESSAGE" when it has none; the
 * traceback goes once to stderr, in one write, named by the task,
 * innermost call last as R's traceback() lists it.  A command that did not
 * start (a "cowrun_command_error" the script did not catch) keeps the
 * runner's own line.
 */
int r_run_failed(struct cowrun_task *task, SEXP outcome, const char *label)
{
	const char *where = text(outcome, "where"), *msg = text(outcome, "message");
	const char *call = text(outcome, "call");
	SEXP trace = get(outcome, "trace");

	if (strcmp(text(outcome, "class"), "cowrun_command_error") == 0)
		return -1;
	if (get(outcome, "message") == R_NilValue)
		msg = "R failed (an interrupt, or R's memory exhausted)";
	if (TYPEOF(trace) == STRSXP && XLENGTH(trace) > 0) {
		char *tb = NULL;
		size_t size = 0;
		FILE *f = open_memstream(&tb, &size);
		if (f != NULL) {
			/* cowrun_error() would make the lines one */
			fprintf(f, "cowrun: r: %s: traceback, innermost last:\n", label);
			for (R_xlen_t i = 0; i < XLENGTH(trace); i++)
				fprintf(f, "  %s\n", Rf_translateCharUTF8(STRING_ELT(trace, i)));
			if (fclose(f) == 0)
				fwrite(tb, 1, size, stderr);
			free(tb);
		}
	}
	cowrun_task_error(task, "Error%s%s: %s (%s)", call[0] ? " in " : "", call, msg,
			  where[0] ? where : script_path);
	return -1;
}

/* ---- the script ---- */

void r_source_unwrap(void)
{
	SEXP unwrap = PROTECT(Rf_lang2(Rf_install("unwrap_source"), r_module_env()));
	int err;

	call_helper(unwrap, &err);
	UNPROTECT(1);
}

int r_load_script(int for_setup)
{
	SEXP wrap = PROTECT(Rf_lang2(Rf_install("wrap_source"), r_module_env()));
	SEXP load = PROTECT(Rf_lang3(Rf_install("load"), Rf_mkString(script_path), R_GlobalEnv));
	int err, nprot = 2;

	call_helper(wrap, &err);
	r_set_phase(for_setup ? R_PHASE_LOAD : R_PHASE_OTHER);
	SEXP out = r_eval(load, helpers, &nprot);
	r_set_phase(R_PHASE_OTHER);
	if (!for_setup)
		r_source_unwrap();
	int ok = r_ok(out);
	if (!ok) {
		char line[1024];
		const char *where = text(out, "where");
		message_line(out, "load", line, sizeof line);
		/* A parse error's message starts with "FILE:LINE:COL:". */
		const char *msg = text(out, "message");
		if (strncmp(msg, script_path, strlen(script_path)) == 0 &&
		    msg[strlen(script_path)] == ':')
			cowrun_error("%s (parsing the script)", msg);
		else
			cowrun_error("%s: %s (loading the script)", where[0] ? where : script_path, line);
	} else {
		r_say_warnings(out, script_path);
	}
	UNPROTECT(nprot);
	return ok ? 0 : -1;
}

SEXP r_function(const char *name, int *bad)
{
	SEXP f = Rf_findVarInFrame(R_GlobalEnv, Rf_install(name));

	if (f == R_UnboundValue)
		return R_NilValue;
	if (TYPEOF(f) == PROMSXP) {
		int err = 0;
		f = R_tryEvalSilent(f, R_GlobalEnv, &err);
		if (err)
			f = R_NilValue;
	}
	if (!Rf_isFunction(f)) {
		cowrun_error("%s: '%s' is a %s, not a function", script_path, name,
			     Rf_type2char(TYPEOF(f)));
		*bad = 1;
		return R_NilValue;
	}
	return f;
}

/*
 * A full collection before the fork, and as far from the next as R's
 * counters allow.  Measured with --stats (5M rows, a factor, a double and
 * 5M distinct strings; 4 tasks per worker at -j 2): each worker's
 * Private_Dirty at its exit 197 MB with a full collection, 806-918 MB
 * without (the worker's own collections wrote into the setup's young
 * objects), the run 38.9 s against 54.6 s.  A full collection leaves the
 * setup in R's oldest generation, which a worker's minor collections do
 * not visit.
 *
 * But a worker inherits R's collection counters too: every 21st
 * collection is a level 1 and every 126th a level 2, a full one
 * (memory.c: LEVEL_0_FREQ 20, LEVEL_1_FREQ 5, each counted down past
 * zero; gc(full = TRUE) leaves the counters as they were).  A worker whose count reaches that full
 * collection marks every object of the setup, copying the pages: on the
 * example (5M rows) a worker that ran 68 tasks or more had 52-55 MiB
 * private against 20 MiB up to 66, and under a busy CPU one worker does
 * take 68 of 120.  So the parent runs minor collections (cheap: the young
 * generation is all but empty) until R makes one a full collection
 * itself, which restarts both counters: a worker then has 126
 * collections before its first full one (100 tasks of the example at 22
 * MiB).  gc(full = TRUE) only if none came within a cycle.
 */
#define GC_CYCLE 126
void r_full_gc(void)
{
	struct timespec t0, t1;
	int minor = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	watching_gc = 1;
	saw_full_gc = 0;
	while (minor < GC_CYCLE && !saw_full_gc &&
	       r_do("invisible(gc(verbose = TRUE, full = FALSE))") == 0)
		minor++;
	watching_gc = 0;
	if (!saw_full_gc && r_do("invisible(gc(full = TRUE))") == 0)
		minor++;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (cowrun_verbosity() > 0)
		cowrun_error("before the fork: %d collection%s, the last %s (%.3f s)", minor,
			     minor == 1 ? "" : "s", saw_full_gc ? "R's own full one: a worker's "
			     "first full one comes after 126 of its own" : "forced full",
			     (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
}

void r_compile_script(void)
{
	SEXP call = PROTECT(Rf_lang2(Rf_install("compile_script"), R_GlobalEnv));
	int err;

	call_helper(call, &err);
	UNPROTECT(1);
}

/* ---- the end ---- */

/* As Rf_endEmbeddedR(0) ends R (Rembedded.c): finalizers marked to run at
 * exit, graphics devices closed, the session's temporary directory
 * removed, pending warnings printed.  The process that ran finish() is
 * the one left with R: a fork-mode parent, or serial mode's watched
 * child (its parent only watches: run.c never tears down there). */
void r_end(void)
{
	if (!started || ended || !pthread_equal(pthread_self(), r_thread))
		return;
	ended = 1;
	R_FlushConsole();
	Rf_endEmbeddedR(0);
	fflush(stderr);
}
