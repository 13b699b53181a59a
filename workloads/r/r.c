/*
 * r.c - `cowrun r SCRIPT.R [ARGS]`: an R script's functions as a cowrun
 * workload, each called here: setup(), tasks(), run(), merge(), finish(),
 * plan(), merge_context() and merge_setup().  What a script must do is
 * contract.R, beside this file (a working script); the guide is docs/r.md.
 *
 * Each function is called as the contract writes it, run(state, i, name),
 * in an environment binding those names (its parent the global
 * environment, where the script lives), so that an error names the call
 * as written, never a do.call() of deparsed values.
 */
#define _GNU_SOURCE
#include "rworkload.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

struct rjob {
	SEXP env;                  /* where the calls are evaluated; preserved */
	SEXP state;                /* what setup() (merge_setup()) returned; preserved */
	SEXP merge, finish;        /* the script's, or R_NilValue */
	char **name;               /* the task names */
	size_t ntasks;
	SEXP context;              /* merge_context()'s raw vector; preserved */
	SEXP args;                 /* the script's ARGS; preserved */
	struct held **held;        /* results not merged yet, in task order */
	size_t nheld, cap;
};

/* A task's result record, copied: merge() runs after the task phase. */
struct held {
	size_t k, len;
	unsigned char bytes[];
};

/* The script and its arguments from the workload's argv: argv[1] is the
 * script; a "--" right after it is dropped (`cowrun r report.R --
 * --help` is the script's help, not the runner's). */
static int script_args(int argc, char **argv, const char **script, SEXP *args)
{
	if (argc < 2 || argv[1][0] == '\0') {
		cowrun_error("no script: cowrun [RUNNER OPTIONS] r SCRIPT.R [SCRIPT ARGS] "
			     "(cowrun r --help)");
		return -1;
	}
	*script = argv[1];
	int skip = argc > 2 && strcmp(argv[2], "--") == 0;
	int n = argc - 2 - skip;
	if (r_start(*script) != 0)
		return -1;
	*args = Rf_allocVector(STRSXP, n);
	R_PreserveObject(*args);
	for (int i = 0; i < n; i++)
		SET_STRING_ELT(*args, i, Rf_mkChar(argv[i + 2 + skip]));
	return 0;
}

static void release(SEXP *x)
{
	if (*x != NULL && *x != R_NilValue)
		R_ReleaseObject(*x);
	*x = NULL;
}

static void job_free(struct rjob *job)
{
	if (job == NULL)
		return;
	for (size_t k = 0; job->name && k < job->ntasks; k++)
		free(job->name[k]);
	free(job->name);
	for (size_t h = 0; h < job->nheld; h++)
		free(job->held[h]);
	free(job->held);
	release(&job->env);
	release(&job->state);
	release(&job->context);
	release(&job->args);
	free(job);
}

static void bind(struct rjob *job, const char *name, SEXP value)
{
	PROTECT(value);
	Rf_defineVar(Rf_install(name), value, job->env);
	UNPROTECT(1);
}

/* The script's function `fn` called with the arguments named in `argn`
 * (bound in job->env), or R_NilValue if it has none and `optional`.
 * Returns the outcome, protected (*nprot), or NULL after one line. */
static SEXP call(struct rjob *job, const char *fn, const char *const *argn, int optional,
		 int *nprot)
{
	int bad = 0;
	SEXP f = r_function(fn, &bad);

	if (bad)
		return NULL;
	if (f == R_NilValue) {
		if (!optional)
			cowrun_error("%s defines no %s(): see cowrun r --help", r_script(), fn);
		return optional ? R_NilValue : NULL;
	}
	SEXP args = R_NilValue;
	int n = 0;
	while (argn[n] != NULL)
		n++;
	for (int i = n - 1; i >= 0; i--)
		args = Rf_lcons(Rf_install(argn[i]), args);
	PROTECT(args);
	SEXP c = PROTECT(Rf_lcons(Rf_install(fn), args));
	bind(job, fn, f);
	r_seed_restore(); /* every function but run() draws from the process's own stream */
	SEXP out = r_eval(c, job->env, nprot);
	UNPROTECT(3);
	PROTECT(out); /* r_eval's protection went with the UNPROTECT above */
	if (!r_ok(out)) {
		r_say_failed(out, fn);
		return NULL;
	}
	char label[64];
	snprintf(label, sizeof label, "%s()", fn);
	r_say_warnings(out, label);
	return out;
}

/* A task name the runner can use as a file name, or why not. */
static const char *bad_name(SEXP s, const char **text)
{
	if (s == NA_STRING)
		return "is NA";
	*text = Rf_translateCharUTF8(s);
	size_t len = strlen(*text);
	if (len == 0 || strcmp(*text, ".") == 0 || strcmp(*text, "..") == 0)
		return "is no file name";
	if (len >= COWRUN_NAME_MAX)
		return "is longer than 127 bytes";
	if (strchr(*text, '/') != NULL)
		return "holds a '/'";
	return NULL;
}

/* The names `fn` (tasks or plan) returned, checked and copied. */
static int take_names(struct rjob *job, SEXP names, const char *fn)
{
	if (TYPEOF(names) != STRSXP) {
		cowrun_error("%s: %s() returned a %s, not a character vector of task names",
			     r_script(), fn, Rf_type2char(TYPEOF(names)));
		return -1;
	}
	job->ntasks = (size_t)XLENGTH(names);
	job->name = calloc(job->ntasks ? job->ntasks : 1, sizeof *job->name);
	if (job->name == NULL) {
		cowrun_error("out of memory");
		return -1;
	}
	for (size_t k = 0; k < job->ntasks; k++) {
		const char *text = NULL, *why = bad_name(STRING_ELT(names, (R_xlen_t)k), &text);
		if (why) {
			cowrun_error("%s: %s(): task %zu's name %s%s%s%s", r_script(), fn, k, why,
				     text ? " ('" : "", text ? text : "", text ? "')" : "");
			return -1;
		}
		if ((job->name[k] = strdup(text)) == NULL) {
			cowrun_error("out of memory");
			return -1;
		}
	}
	return 0;
}

/* Start R, load the script (for setup(): the files it sources are
 * inputs): a job holding its functions, or NULL. */
static struct rjob *job_load(int argc, char **argv, int for_setup)
{
	struct rjob *job = calloc(1, sizeof *job);
	const char *script;
	int bad = 0;

	if (job == NULL) {
		cowrun_error("out of memory");
		return NULL;
	}
	if (script_args(argc, argv, &script, &job->args) != 0 || r_load_script(for_setup) != 0)
		goto fail;
	job->env = R_NewEnv(R_GlobalEnv, TRUE, 17);
	R_PreserveObject(job->env);
	job->merge = r_function("merge", &bad);
	job->finish = r_function("finish", &bad);
	if (bad)
		goto fail;
	bind(job, "args", job->args);
	return job;
fail:
	job_free(job);
	return NULL;
}

/* setup(), plan() or merge_setup() gave no state: this process runs no
 * more R (run.c and dryrun.c exit, serve's generation _exits), and
 * nothing calls teardown without a state.  R is ended here all the same,
 * so that the session's tempdir() (a /tmp/RtmpXXXXXX that a nightly run
 * failing every night would leave each time) goes with it:
 * Rf_endEmbeddedR() calls R_CleanTempDir() (src/unix/Rembedded.c). */
static void *given_up(struct rjob *job)
{
	job_free(job);
	r_end();   /* its tempdir() goes with it */
	return NULL;
}

static void set_state(struct rjob *job, SEXP state)
{
	R_PreserveObject(state);
	release(&job->state);
	job->state = state;
	bind(job, "state", state);
}

static const char *const ARGS[] = { "args", NULL };
static const char *const STATE[] = { "state", NULL };

/* After setup() or merge_setup(): tasks(state), the names taken. */
static int with_tasks(struct rjob *job)
{
	int nprot = 0;
	SEXP out = call(job, "tasks", STATE, 0, &nprot);
	int rc = out != NULL ? take_names(job, r_value(out), "tasks") : -1;

	UNPROTECT(nprot);
	return rc;
}

static void *r_setup(int argc, char **argv)
{
	struct rjob *job = job_load(argc, argv, 1);
	int nprot = 0, bad = 0, rc;

	if (job == NULL)
		return given_up(NULL);
	if (r_function("run", &bad) == R_NilValue) {
		if (!bad)
			cowrun_error("%s defines no run(state, i, name): see cowrun r --help", r_script());
		goto fail;
	}
	r_set_phase(R_PHASE_SETUP);
	SEXP out = call(job, "setup", ARGS, 0, &nprot);
	r_set_phase(R_PHASE_OTHER);
	if (out == NULL)
		goto fail;
	set_state(job, r_value(out));
	UNPROTECT(nprot);
	nprot = 0;
	/* What tasks() sources counts too (still within the runner's setup). */
	r_set_phase(R_PHASE_SETUP);
	rc = with_tasks(job);
	r_set_phase(R_PHASE_OTHER);
	r_source_unwrap();
	if (rc != 0)
		goto fail;
	/* Compiled once here, not by the JIT in every worker. */
	r_compile_script();
	r_full_gc();
	return job;
fail:
	UNPROTECT(nprot);
	return given_up(job);
}

static size_t r_ntasks(const void *state)
{
	return ((const struct rjob *)state)->ntasks;
}

static void r_task_name(const void *state, size_t k, char *buf, size_t size)
{
	snprintf(buf, size, "%s", ((const struct rjob *)state)->name[k]);
}

static SEXP index_value(size_t k)
{
	return k <= INT_MAX ? Rf_ScalarInteger((int)k) : Rf_ScalarReal((double)k);
}

/* run(state, i, name) in a worker (or serial mode's process): its report
 * committed if it returns, its value the result merge() receives. */
static int r_run(const void *state, size_t k, struct cowrun_task *task)
{
	static const char *const argn[] = { "state", "i", "name" };
	const struct rjob *job = state;
	char label[COWRUN_NAME_MAX + 32];
	int nprot = 0, rc = 0, closed;

	r_worker_start();
	r_seed_task(cowrun_task_seed(task));
	snprintf(label, sizeof label, "task %zu (%s)", k, job->name[k]);
	SEXP c = PROTECT(Rf_lang4(Rf_install("run"), Rf_install(argn[0]), Rf_install(argn[1]),
				  Rf_install(argn[2])));
	bind((struct rjob *)job, "i", index_value(k));
	bind((struct rjob *)job, "name", Rf_ScalarString(Rf_mkCharCE(job->name[k], CE_UTF8)));
	r_set_task(task, k, job->name[k]);
	r_set_phase(R_PHASE_RUN);
	SEXP out = r_eval(c, job->env, &nprot);
	r_set_phase(R_PHASE_OTHER);
	r_say_warnings(out, label);
	if (!r_ok(out)) {
		r_close_report(NULL);
		rc = r_run_failed(task, out, label);
	} else if ((closed = r_close_report(task)) != 0) {
		rc = closed < 0 ? -1 : 0; /* 1: the runner names the command's failed input */
	} else if (job->merge != R_NilValue) {
		rc = r_serialize_result(r_value(out), task, k, job->name[k]);
	}
	r_set_task(NULL, 0, NULL);
	UNPROTECT(nprot + 1);
	return rc;
}

static int grow_held(struct rjob *job)
{
	size_t cap = job->cap ? job->cap * 2 : 64;
	struct held **p = realloc(job->held, cap * sizeof *p);

	if (p == NULL)
		return -1;
	job->held = p;
	job->cap = cap;
	return 0;
}

/* "list", or "data.frame" (class()'s first), of x into buf. */
static const char *kind(SEXP x)
{
	SEXP c = Rf_getAttrib(x, R_ClassSymbol);

	return TYPEOF(c) == STRSXP && XLENGTH(c) > 0 ? CHAR(STRING_ELT(c, 0)) : Rf_type2char(TYPEOF(x));
}

/* merge() returns the new state: NULL, or a value of another class than
 * the state's (an assignment's value: `state$total <- state$total + x`
 * returns the number), is refused in one line. */
static int check_merged(const struct rjob *job, SEXP v, size_t k)
{
	if (v == R_NilValue) {
		cowrun_error("%s: merge() returned NULL for task %zu (%s): it returns the new state "
			     "(end it with `state`)", r_script(), k, job->name[k]);
		return -1;
	}
	if (TYPEOF(v) != TYPEOF(job->state) ||
	    !R_compute_identical(Rf_getAttrib(v, R_ClassSymbol),
				 Rf_getAttrib(job->state, R_ClassSymbol), 16)) {
		cowrun_error("%s: merge() returned a %s for task %zu (%s), but the state is a %s: it "
			     "returns the new state (an assignment's value is not: end merge() "
			     "with `state`)", r_script(), kind(v), k, job->name[k], kind(job->state));
		return -1;
	}
	return 0;
}

/* merge(state, i, name, result) for task k's record, now. */
static int merge_now(struct rjob *job, size_t k, const void *record, size_t len)
{
	static const char *const argn[] = { "state", "i", "name", "result", NULL };
	int nprot = 0, rc = -1;

	SEXP result = r_unserialize(record, len, k);
	if (result == NULL)
		return -1;
	bind(job, "result", result);
	bind(job, "i", index_value(k));
	bind(job, "name", Rf_ScalarString(Rf_mkCharCE(job->name[k], CE_UTF8)));
	SEXP out = call(job, "merge", argn, 0, &nprot);
	if (out != NULL && check_merged(job, r_value(out), k) == 0) {
		set_state(job, r_value(out));
		rc = 0;
	}
	bind(job, "result", R_NilValue);
	UNPROTECT(nprot);
	return rc;
}

/* Task k's record kept for merge_held(), in the order the runner merges
 * (task order).  Why not merge at once: R's full garbage collection
 * writes a mark into every object's header, so one in the parent while
 * the workers live copies the whole setup (5M rows with a string column,
 * 2M rows measured: the parent's Private_Dirty from 12 MB to 404 MB as
 * merge() ran gc(full = TRUE) at -j 2; R starts such collections itself
 * as merge() allocates).  Held, the parent runs no R until the workers
 * are gone, and a worker forked late (a retry, a replacement) sees the
 * setup's state exactly. */
static int hold(struct rjob *job, size_t k, const void *record, size_t len)
{
	struct held *h = malloc(sizeof *h + len);

	if (h == NULL || (job->nheld == job->cap && grow_held(job) != 0)) {
		free(h);
		cowrun_error("out of memory holding task %zu's result (%zu bytes)", k, len);
		return -1;
	}
	h->k = k;
	h->len = len;
	memcpy(h->bytes, record, len);
	job->held[job->nheld++] = h;
	return 0;
}

static int r_merge(void *state, size_t k, const void *record, size_t len)
{
	struct rjob *job = state;

	if (job->merge == R_NilValue)
		return 0;
	return hold(job, k, record, len);
}

/* The held results merged, in order, before finish(): 0, or -1 at the
 * first merge() that failed (no summary). */
static int merge_held(struct rjob *job)
{
	int rc = 0;

	for (size_t h = 0; h < job->nheld; h++) {
		if (rc == 0 && merge_now(job, job->held[h]->k, job->held[h]->bytes,
					 job->held[h]->len) != 0)
			rc = -1;
		free(job->held[h]);
	}
	job->nheld = 0;
	return rc;
}

/* finish(state, out): out a connection writing to the summary, and R's
 * console too while it runs (print() without a file).  What it wrote is
 * printed only if it returns (the runner's rule). */
static int r_finish(void *state, FILE *out)
{
	static const char *const argn[] = { "state", "out", NULL };
	struct rjob *job = state;
	int nprot = 0;

	if (merge_held(job) != 0) {
		cowrun_error("%s: no summary: a result could not be merged", r_script());
		return -1;
	}
	if (job->finish == R_NilValue)
		return 0;
	struct r_sink *sink;
	SEXP con = PROTECT(r_connection_new(out, "summary", 0, &sink));
	bind(job, "out", con);
	r_console_to(out);
	SEXP r = call(job, "finish", argn, 0, &nprot);
	r_console_to(NULL);
	int failed = r_connection_end(con, sink);
	bind(job, "out", R_NilValue);
	UNPROTECT(nprot + 1);
	if (r != NULL && failed)
		cowrun_error("%s: finish(): cannot write the summary: %s", r_script(), strerror(failed));
	return r != NULL && !failed ? 0 : -1;
}

/* The process that ran finish() (or merged, or planned) ends R here. */
static void r_teardown(void *state)
{
	job_free(state);
	r_end();
}

/* --dry-run: plan(args)'s names, or NULL (no plan(): known after setup). */
static void *r_plan(int argc, char **argv)
{
	struct rjob *job = job_load(argc, argv, 0);
	int nprot = 0;
	SEXP out = job ? call(job, "plan", ARGS, 1, &nprot) : NULL;

	if (out == NULL || out == R_NilValue || take_names(job, r_value(out), "plan") != 0) {
		UNPROTECT(nprot);
		return given_up(job);
	}
	UNPROTECT(nprot);
	return job;
}

/* Saved results carry merge_context()'s raw vector, if the script has it. */
static const void *r_merge_context(const void *state, size_t *len)
{
	struct rjob *job = (struct rjob *)state;
	int nprot = 0;

	*len = 0;
	if (job->context == NULL) {
		SEXP out = call(job, "merge_context", STATE, 1, &nprot);
		SEXP v = out != NULL && out != R_NilValue ? r_value(out) : R_NilValue;
		if (v != R_NilValue && TYPEOF(v) != RAWSXP)
			cowrun_error("%s: merge_context() returned a %s, not a raw vector "
				     "(serialize(x, NULL)): results saved without it", r_script(),
				     kind(v));
		job->context = TYPEOF(v) == RAWSXP ? v : R_NilValue;
		if (job->context != R_NilValue)
			R_PreserveObject(job->context);
		UNPROTECT(nprot);
	}
	if (job->context == R_NilValue)
		return NULL;
	*len = (size_t)XLENGTH(job->context);
	return RAW(job->context);
}

/* --merge: merge_setup(args, context) instead of setup(). */
static void *r_merge_setup(int argc, char **argv, const void *context, size_t len)
{
	static const char *const argn[] = { "args", "context", NULL };
	struct rjob *job = job_load(argc, argv, 0);
	int nprot = 0;

	if (job == NULL)
		return given_up(NULL);
	SEXP raw = Rf_allocVector(RAWSXP, (R_xlen_t)len);
	if (len > 0)
		memcpy(RAW(raw), context, len);
	bind(job, "context", raw);
	r_set_phase(R_PHASE_MERGE_SETUP);
	SEXP out = call(job, "merge_setup", argn, 0, &nprot);
	r_set_phase(R_PHASE_OTHER);
	if (out != NULL)
		set_state(job, r_value(out));
	UNPROTECT(nprot);
	if (out == NULL || with_tasks(job) != 0)
		return given_up(job);
	return job;
}

const struct cowrun_workload cowrun_workload = {
	.abi_version = COWRUN_ABI_VERSION,
	.name = "r",
	.summary = "an R script's setup, tasks and reports (cowrun r SCRIPT.R [ARGS])",
	.description =
		"Usage: cowrun [RUNNER OPTIONS] r SCRIPT.R [SCRIPT ARGS]\n"
		"\n"
		"Runs an R script as a nightly batch in Debian's embedded R: its setup(args)\n"
		"once in the parent, each task's run(state, i, name) in a forked worker that\n"
		"reads the setup's objects copy-on-write, merge(state, i, name, result) (which\n"
		"returns the new state) and finish(state, out) in the parent.  i counts from\n"
		"0, as cowrun's --tasks and messages do.\n"
		"\n"
		"The contract, in one place, is a working script: contract.R (in cowrun's\n"
		"source, workloads/r/contract.R; installed, share/cowrun/r/).  It says\n"
		"every function the script defines, the cowrun interface (cowrun_report(),\n"
		"cowrun_input(), cowrun_task() ...), and what each error does.  Run it:\n"
		"cowrun r contract.R --count 5\n"
		"\n"
		"R prints to stderr (stdout is the summary's); finish() writes with\n"
		"cat(..., file = out).  cowrun's options come before `r`; the script's own\n"
		"are after it (a \"--\" right after SCRIPT is dropped).  The guide: docs/r.md.",
	.flags = COWRUN_WRITES_REPORTS | COWRUN_OWN_ARGV | COWRUN_NO_THREADS |
		 COWRUN_NOT_THREAD_SAFE,
	.options = NULL,
	.defaults = NULL,
	.setup = r_setup,
	.ntasks = r_ntasks,
	.task_name = r_task_name,
	.run = r_run,
	.merge = r_merge,
	.finish = r_finish,
	.teardown = r_teardown,
	.merge_context = r_merge_context,
	.merge_setup = r_merge_setup,
	.plan = r_plan,
};
