/*
 * python.c - `cowrun python SCRIPT.py [ARGS]`: a script's functions as a
 * cowrun workload, each called here: setup(), tasks(), run(), merge(),
 * finish(), plan(), merge_context() and merge_setup().  What a script
 * must do is contract.py, beside this file (a working script); the guide
 * is docs/python.md.
 */
#define _GNU_SOURCE
#include "pyworkload.h"

#include <stdlib.h>
#include <string.h>

struct pyjob {
	PyObject *script;          /* the module */
	PyObject *state;           /* what setup() (or merge_setup()) returned */
	PyObject *run, *merge, *finish;
	PyObject *names;           /* a list of str */
	char **name;               /* the same names, for task_name() */
	size_t ntasks;
	PyObject *context;         /* merge_context()'s bytes, kept */
};

/* The script and its arguments, from the workload's argv: argv[1] is
 * the script; a "--" right after it is dropped (it keeps --help from the
 * runner: `cowrun python report.py -- --help` is the script's help). */
struct script_args {
	const char *path;
	int argc;                  /* sys.argv: the script, then its ARGS */
	char **argv;
};

static int script_args(int argc, char **argv, struct script_args *a)
{
	if (argc < 2 || argv[1][0] == '\0') {
		cowrun_error("no script: cowrun [RUNNER OPTIONS] python SCRIPT.py [SCRIPT ARGS] "
			     "(cowrun python --help)");
		return -1;
	}
	a->path = argv[1];
	int skip = argc > 2 && strcmp(argv[2], "--") == 0;
	a->argc = argc - 1 - skip;
	a->argv = malloc(sizeof *a->argv * (size_t)(a->argc + 1));
	if (a->argv == NULL) {
		cowrun_error("out of memory");
		return -1;
	}
	a->argv[0] = argv[1];
	for (int i = 1; i < a->argc; i++)
		a->argv[i] = argv[i + 1 + skip];
	a->argv[a->argc] = NULL;
	return 0;
}

/* ARGS as a Python list of str (the file system's encoding). */
static PyObject *args_list(const struct script_args *a)
{
	PyObject *list = PyList_New(a->argc - 1);

	for (int i = 1; list && i < a->argc; i++) {
		PyObject *s = PyUnicode_DecodeFSDefault(a->argv[i]);
		if (s == NULL) {
			Py_CLEAR(list);
			break;
		}
		PyList_SET_ITEM(list, i - 1, s);
	}
	return list;
}

/* The pending exception of the script's function `fn`, in one line. */
static void say_failed(const char *fn)
{
	char what[512], where[PATH_MAX + 32];
	int status;

	if (py_system_exit(&status)) {
		cowrun_error("the script exited with status %d in %s() (its --help, or sys.exit()): no batch ran", status, fn);
		return;
	}
	py_describe_error(what, sizeof what, where, sizeof where, cowrun_verbosity() > 0);
	cowrun_error("%s: in %s(): %s", where, fn, what);
}

static void job_free(struct pyjob *job)
{
	if (job == NULL)
		return;
	for (size_t k = 0; job->name && k < job->ntasks; k++)
		free(job->name[k]);
	free(job->name);
	Py_XDECREF(job->script);
	Py_XDECREF(job->state);
	Py_XDECREF(job->run);
	Py_XDECREF(job->merge);
	Py_XDECREF(job->finish);
	Py_XDECREF(job->names);
	Py_XDECREF(job->context);
	free(job);
}

/* A task name the runner can use as a file name, or NULL and why. */
static const char *bad_name(PyObject *item, const char **text)
{
	Py_ssize_t len;

	if (!PyUnicode_Check(item))
		return "is not a str";
	if ((*text = PyUnicode_AsUTF8AndSize(item, &len)) == NULL) {
		PyErr_Clear();
		return "cannot be encoded as UTF-8";
	}
	if (len == 0 || strcmp(*text, ".") == 0 || strcmp(*text, "..") == 0)
		return "is no file name";
	if ((size_t)len >= COWRUN_NAME_MAX)
		return "is longer than 127 bytes";
	if (strchr(*text, '/') != NULL || strlen(*text) != (size_t)len)
		return "holds a '/' or a NUL";
	return NULL;
}

/* The names `fn` (tasks or plan) returned, checked and copied. */
static int take_names(struct pyjob *job, PyObject *returned, const char *fn)
{
	PyObject *list = returned ? PySequence_List(returned) : NULL;

	if (list == NULL) {
		if (returned != NULL)
			cowrun_error("%s() returned a %s, not a list of task names", fn,
				     Py_TYPE(returned)->tp_name);
		else
			say_failed(fn);
		PyErr_Clear();
		return -1;
	}
	job->names = list;
	job->ntasks = (size_t)PyList_GET_SIZE(list);
	job->name = calloc(job->ntasks ? job->ntasks : 1, sizeof *job->name);
	if (job->name == NULL) {
		cowrun_error("out of memory");
		return -1;
	}
	for (size_t k = 0; k < job->ntasks; k++) {
		const char *text = NULL, *why = bad_name(PyList_GET_ITEM(list, (Py_ssize_t)k), &text);
		if (why) {
			cowrun_error("%s(): task %zu's name %s%s%s%s", fn, k, why, text ? " ('" : "",
				     text ? text : "", text ? "')" : "");
			return -1;
		}
		if ((job->name[k] = strdup(text)) == NULL) {
			cowrun_error("out of memory");
			return -1;
		}
	}
	return 0;
}

/* Start Python and load the script: a job holding it, or NULL. */
static struct pyjob *job_load(int argc, char **argv, struct script_args *a)
{
	struct pyjob *job = calloc(1, sizeof *job);
	int bad = 0;

	if (job == NULL) {
		cowrun_error("out of memory");
		return NULL;
	}
	if (script_args(argc, argv, a) != 0)
		goto fail;
	if (py_start(a->path, a->argc, a->argv) != 0 ||
	    (job->script = py_load_script(a->path)) == NULL)
		goto fail;
	job->run = py_function(job->script, "run", &bad);
	job->merge = py_function(job->script, "merge", &bad);
	job->finish = py_function(job->script, "finish", &bad);
	if (bad)
		goto fail;
	return job;
fail:
	job_free(job);
	return NULL;
}

/* Call the script's function `fn` with `args` (a tuple, stolen).  A new
 * reference, or NULL after one line (or, if `optional`, when the script
 * has no such function: *absent set). */
static PyObject *call(struct pyjob *job, const char *fn, PyObject *args, int optional,
		      int *absent)
{
	int bad = 0;
	PyObject *f = py_function(job->script, fn, &bad), *r = NULL;

	if (f == NULL && !bad && optional)
		*absent = 1;
	else if (f == NULL && !bad)
		cowrun_error("the script defines no %s()", fn);
	else if (f != NULL && args != NULL && (r = PyObject_CallObject(f, args)) == NULL)
		say_failed(fn);
	Py_XDECREF(f);
	Py_XDECREF(args);
	py_flush_stdio();
	return r;
}

/* After setup() or merge_setup() (job->state NULL if it failed): the
 * job with its task names, or NULL.  Frees a's argv either way. */
static struct pyjob *job_with_tasks(struct pyjob *job, struct script_args *a)
{
	int absent = 0, rc = -1;

	free(a->argv);
	a->argv = NULL;
	if (job->state != NULL) {
		PyObject *names = call(job, "tasks", Py_BuildValue("(O)", job->state), 0, &absent);
		rc = names ? take_names(job, names, "tasks") : -1;
		Py_XDECREF(names);
	}
	if (rc == 0)
		return job;
	job_free(job);
	return NULL;
}

static void *py_setup(int argc, char **argv)
{
	struct script_args a = { 0 };
	struct pyjob *job = job_load(argc, argv, &a);
	int absent = 0;

	if (job == NULL)
		goto fail;
	if (job->run == NULL) {
		cowrun_error("%s defines no run(state, i, name): see cowrun python --help", a.path);
		goto fail;
	}
	py_set_phase(PY_PHASE_SETUP);
	job->state = call(job, "setup", Py_BuildValue("(N)", args_list(&a)), 0, &absent);
	py_set_phase(PY_PHASE_OTHER);
	/* The modules tasks() imports count too: recorded after it.  A thread
	 * alive now would be missing from every fork, a lock it holds held
	 * there forever: refused before the first task. */
	if ((job = job_with_tasks(job, &a)) != NULL &&
	    (py_declare_own_modules() != 0 || py_check_threads(a.path, py_threads_allowed()) != 0)) {
		job_free(job);
		return NULL;
	}
	if (job != NULL)
		py_state_setup_done(job->state);
	return job;
fail:
	free(a.argv);
	job_free(job);
	return NULL;
}

static size_t py_ntasks(const void *state)
{
	return ((const struct pyjob *)state)->ntasks;
}

static void py_task_name(const void *state, size_t k, char *buf, size_t size)
{
	snprintf(buf, size, "%s", ((const struct pyjob *)state)->name[k]);
}

/* run()'s exception, or a report that could not be closed: the task's
 * error, with its traceback once on stderr. */
static int task_failed(struct cowrun_task *task, const char *during)
{
	char what[512], where[PATH_MAX + 32];

	py_describe_error(what, sizeof what, where, sizeof where, 1);
	cowrun_task_error(task, "%s (%s%s)", what, where, during);
	return -1;
}

/* run() wrote to an array the guard made read-only: one line naming the
 * rule and the ways out (the traceback only under -v: the line names the
 * script's line that wrote). */
static int guard_failed(struct cowrun_task *task)
{
	char what[512], where[PATH_MAX + 32];

	py_describe_error(what, sizeof what, where, sizeof where, cowrun_verbosity() > 0);
	cowrun_task_error(task, "%s (%s): run() wrote to an array of the state, which cowrun's "
			  "guard makes read-only in run(): run() must not change the state (a "
			  "worker's later tasks would see the change); write to a copy, keep a "
			  "scratch array writable with cowrun.writable(arr) in setup(), or run "
			  "with --tasks-per-worker 1 (a fresh fork per task: no guard)",
			  what, where);
	return -1;
}

/* run() failed: close what the script opened, whatever that raises. */
static void close_streams_quietly(void)
{
	if (py_close_report() != 0)
		PyErr_Clear();
	if (py_close_command() < 0)
		PyErr_Clear();
}

static int py_run(const void *state, size_t k, struct cowrun_task *task)
{
	const struct pyjob *job = state;
	PyObject *name = PyList_GET_ITEM(job->names, (Py_ssize_t)k);
	int rc = 0, command;

	if (py_reseed(cowrun_task_seed(task)) != 0)
		return task_failed(task, ", seeding its random generators");
	py_set_task(task, k, name);
	py_state_before_run(job->state, k, name);
	py_set_phase(PY_PHASE_RUN);
	PyObject *result = PyObject_CallFunction(job->run, "OnO", job->state, (Py_ssize_t)k, name);
	py_set_phase(PY_PHASE_OTHER);
	py_state_after_run(job->state, k, name);
	if (result == NULL) {
		/* A command that stopped reading: the runner's wait names it. */
		if (!py_command_broke())
			rc = py_command_refused() ? -1 : py_state_read_only() ? guard_failed(task)
			     : task_failed(task, "");
		PyErr_Clear();
		close_streams_quietly(); /* the runner removes what they wrote */
	} else if (py_close_report() != 0) {
		rc = task_failed(task, ", closing the report");
		close_streams_quietly();
	} else if ((command = py_close_command()) < 0) {
		rc = task_failed(task, ", closing the command's input");
		PyErr_Clear();
	} else if (command == 0) {
		PyObject *bytes = py_pickle(result);
		if (bytes == NULL) {
			char what[512], where[PATH_MAX + 32];
			py_describe_error(what, sizeof what, where, sizeof where, 0);
			cowrun_task_error(task, "run() returned a %s, which cannot be pickled: %s",
					  Py_TYPE(result)->tp_name, what);
			rc = -1;
		} else if (cowrun_emit(task, PyBytes_AS_STRING(bytes),
				       (size_t)PyBytes_GET_SIZE(bytes)) != 0) {
			cowrun_task_error(task, "out of memory for the result");
			rc = -1;
		}
		Py_XDECREF(bytes);
	}
	Py_XDECREF(result);
	py_set_task(NULL, 0, NULL);
	py_flush_stdio();
	return rc;
}

static int py_merge(void *state, size_t k, const void *record, size_t len)
{
	struct pyjob *job = state;
	PyObject *name = PyList_GET_ITEM(job->names, (Py_ssize_t)k);

	if (job->merge == NULL)
		return 0;
	if (py_restore_generators() != 0) {
		say_failed("merge");
		return -1;
	}
	py_state_merged();
	PyObject *result = py_unpickle(record, len);
	if (result == NULL) {
		say_failed("merge");
		return -1;
	}
	PyObject *r = PyObject_CallFunction(job->merge, "OnOO", job->state, (Py_ssize_t)k, name,
					    result);
	Py_DECREF(result);
	if (r == NULL)
		say_failed("merge");
	Py_XDECREF(r);
	py_flush_stdio();
	return r ? 0 : -1;
}

/* finish(state, out), with sys.stdout the summary too while it runs, so
 * that print() without file= lands in order.  `out` is a text stream
 * over the FILE; what it holds reaches the FILE when finish() returns,
 * and nothing of it when finish() raises. */
static int py_finish(void *state, FILE *out)
{
	struct pyjob *job = state;
	PyObject *stream, *saved, *r = NULL;

	if (job->finish == NULL)
		return 0;
	if (py_restore_generators() != 0 || (stream = py_summary_new(out)) == NULL) {
		say_failed("finish");
		return -1;
	}
	saved = PySys_GetObject("stdout"); /* borrowed */
	Py_XINCREF(saved);
	py_flush_stdio();
	PySys_SetObject("stdout", stream);
	r = PyObject_CallFunction(job->finish, "OO", job->state, stream);
	PySys_SetObject("stdout", saved);
	Py_XDECREF(saved);
	if (r == NULL)
		say_failed("finish");
	int kept = py_summary_end(stream, r != NULL);
	Py_DECREF(stream);
	if (r != NULL && kept != 0)
		say_failed("finish");
	Py_XDECREF(r);
	return r && kept == 0 ? 0 : -1;
}

/* The process that ran finish() (or merged, or planned) ends the
 * interpreter here, after the manifest and the joblog are committed: the
 * script's atexit handlers, logging's last flush and its files left open
 * happen once, as under python3.  An end that fails: one line, exit 254. */
static void py_teardown(void *state)
{
	py_flush_stdio();
	job_free(state);
	if (py_end() != 0) {
		fflush(stdout);
		exit(254);
	}
}

/* --dry-run: plan(argv)'s names, or NULL (no plan(): known after setup). */
static void *py_plan(int argc, char **argv)
{
	struct script_args a = { 0 };
	struct pyjob *job = job_load(argc, argv, &a);
	int absent = 0;
	PyObject *names = job ? call(job, "plan", Py_BuildValue("(N)", args_list(&a)), 1, &absent)
			      : NULL;

	free(a.argv);
	if (names == NULL || take_names(job, names, "plan") != 0) {
		Py_XDECREF(names);
		job_free(job);
		return NULL;
	}
	Py_DECREF(names);
	return job;
}

/* Saved results carry merge_context()'s bytes, if the script has it. */
static const void *py_merge_context(const void *state, size_t *len)
{
	struct pyjob *job = (struct pyjob *)state;
	int absent = 0;

	*len = 0;
	if (job->context == NULL) {
		job->context = call(job, "merge_context", Py_BuildValue("(O)", job->state), 1, &absent);
		if (job->context != NULL && !PyBytes_Check(job->context)) {
			cowrun_error("merge_context() returned a %s, not bytes: results saved without it",
				     Py_TYPE(job->context)->tp_name);
			Py_CLEAR(job->context);
		}
		PyErr_Clear();
	}
	if (job->context == NULL)
		return NULL;
	*len = (size_t)PyBytes_GET_SIZE(job->context);
	return PyBytes_AS_STRING(job->context);
}

/* --merge: merge_setup(argv, context) instead of setup(). */
static void *py_merge_setup(int argc, char **argv, const void *context, size_t len)
{
	struct script_args a = { 0 };
	struct pyjob *job = job_load(argc, argv, &a);
	int absent = 0;

	if (job == NULL)
		goto fail;
	PyObject *args = Py_BuildValue("(Ny#)", args_list(&a), (const char *)context, (Py_ssize_t)len);
	py_set_phase(PY_PHASE_MERGE_SETUP);
	job->state = call(job, "merge_setup", args, 0, &absent);
	py_set_phase(PY_PHASE_OTHER);
	return job_with_tasks(job, &a);
fail:
	free(a.argv);
	job_free(job);
	return NULL;
}

const struct cowrun_workload cowrun_workload = {
	.abi_version = COWRUN_ABI_VERSION,
	.name = "python",
	.summary = "a Python script's setup, tasks and reports (cowrun python SCRIPT.py [ARGS])",
	.description =
		"Usage: cowrun [RUNNER OPTIONS] python SCRIPT.py [SCRIPT ARGS]\n"
		"\n"
		"Runs a Python script as a nightly batch: its setup(argv) once in the parent,\n"
		"each task's run(state, i, name) in a forked worker that reads the setup's\n"
		"objects copy-on-write, merge() and finish(state, out) in the parent.\n"
		"\n"
		"The contract, in one place, is a working script: contract.py (in cowrun's\n"
		"source, workloads/python/contract.py; installed, share/cowrun/python/).  It\n"
		"says every function the script defines, the cowrun module (cowrun.report(),\n"
		"cowrun.command(), cowrun.input() ...), what each error does, threads, and\n"
		"how the interpreter ends.  Run it: cowrun python contract.py --count 5\n"
		"\n"
		"run() must not change the state: the state's numpy arrays are read-only in\n"
		"run(), and a change a worker's later tasks saw is said in one line; a script\n"
		"that must change it runs with cowrun --tasks-per-worker 1.\n"
		"\n"
		"cowrun's options come before `python`; the script's own help is\n"
		"cowrun python SCRIPT.py -- --help (a \"--\" right after SCRIPT is dropped).\n"
		"The guide: docs/python.md.",
	.flags = COWRUN_WRITES_REPORTS | COWRUN_OWN_ARGV | COWRUN_NO_THREADS |
		 COWRUN_NOT_THREAD_SAFE,
	.options = NULL,
	.defaults = NULL,
	.setup = py_setup,
	.ntasks = py_ntasks,
	.task_name = py_task_name,
	.run = py_run,
	.merge = py_merge,
	.finish = py_finish,
	.teardown = py_teardown,
	.merge_context = py_merge_context,
	.merge_setup = py_merge_setup,
	.plan = py_plan,
};
