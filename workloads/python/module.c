/*
 * module.c - the `cowrun` module a script imports, and the sink under the
 * stream its finish() prints the summary to.
 *
 *   cowrun.report(mode="w", encoding="utf-8", errors=None, newline=None)
 *       in run(): the task's report file OUTDIR/NAME, opened as open()
 *       opens one ("w" text, "wb" bytes).  It is written under a temporary
 *       name and committed (flushed, fsynced, renamed) only when run()
 *       returns without an exception; the workload closes it after run().
 *   cowrun.command(cmd, to="report", mode="w", encoding="utf-8", ...)
 *       in run(): start CMD as cowrun_command() does and return a file
 *       writing to its standard input.  to="report": its output is the
 *       task's report; to="stderr": it goes to standard error.  The
 *       workload closes the file after run(), and the runner waits for
 *       CMD: the task fails if it fails.  CommandError if it cannot start.
 *   cowrun.input(path)
 *       in setup(): path is an input of the run (cowrun_input()).
 *   cowrun.task()
 *       in run(): (index, name) of the task; None elsewhere.
 *   cowrun.seed()
 *       in run(): the task's seed (cowrun_task_seed()), which random and
 *       numpy's global generator were seeded with; elsewhere the run's
 *       (--seed).
 *   cowrun.verbosity()
 *       0, or 1 under cowrun -v.
 *   cowrun.writable(*arrays), cowrun.guard(read_only=True, detect=True)
 *       the state rule's opt-outs: state.c.
 *   cowrun.allow_threads_at_fork()
 *       in setup(): the threads alive when setup() returns hold no lock;
 *       the run goes on with a warning naming them, not refused.
 *   cowrun.parallel(fn, items), cowrun.csv_parts(path)
 *       in setup() and merge_setup(): pool.c and csvparts.c.
 */
#define _GNU_SOURCE
#include "pyworkload.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <unistd.h>

static enum py_phase phase = PY_PHASE_OTHER;
static struct cowrun_task *task;
static size_t task_index;
static PyObject *task_name;   /* borrowed from the workload's list */
static PyObject *report_file; /* what report() opened in this task */
static PyObject *command_file; /* what command() started in this task */
static FILE *command_feed;     /* the runner's end of that command's input */
static int command_feeds_report; /* command(to="report") */
static int command_broken;      /* its input's pipe broke under the script */
static PyObject *command_error; /* cowrun.CommandError */
static PyObject *parallel_error; /* cowrun.ParallelError */
static int in_child;            /* a cowrun.parallel() child */
static uint64_t child_seed;     /* its item's seed */

void py_set_phase(enum py_phase p)
{
	phase = p;
}

void py_set_task(struct cowrun_task *t, size_t index, PyObject *name)
{
	task = t;
	task_index = index;
	task_name = name;
}

/* Raised when a call comes at the wrong time. */
static PyObject *wrong_phase(const char *call, const char *where)
{
	PyErr_Format(PyExc_RuntimeError, "cowrun.%s() is only for %s", call, where);
	return NULL;
}

static int is_write_mode(const char *mode)
{
	const char *ok[] = { "w", "wt", "tw", "wb", "bw" };

	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
		if (strcmp(mode, ok[i]) == 0)
			return 1;
	return 0;
}

/* A Python file over its own descriptor on one of the runner's streams,
 * as open() makes one: mode "w" text (UTF-8 unless told) or "wb" bytes.
 * A new reference, or NULL with the exception pending. */
static PyObject *python_file_on(FILE *f, const char *mode, const char *encoding,
				const char *errors, const char *newline)
{
	int fd = fcntl(fileno(f), F_DUPFD_CLOEXEC, 0);
	if (fd < 0)
		return PyErr_SetFromErrno(PyExc_OSError);
	int binary = strchr(mode, 'b') != NULL;
	PyObject *io = PyImport_ImportModule("io");
	PyObject *file = io ? PyObject_CallMethod(io, "open", "isizzzi", fd, mode, -1,
						  binary ? NULL : (encoding ? encoding : "utf-8"),
						  errors, newline, 1)
			    : NULL;
	Py_XDECREF(io);
	if (file == NULL)
		close(fd);
	return file;
}

static PyObject *cw_report(PyObject *self, PyObject *args, PyObject *kwargs)
{
	static char *keywords[] = { "mode", "encoding", "errors", "newline", NULL };
	const char *mode = "w", *encoding = NULL, *errors = NULL, *newline = NULL;

	(void)self;
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|szzz", keywords, &mode, &encoding,
					 &errors, &newline))
		return NULL;
	if (phase != PY_PHASE_RUN)
		return wrong_phase("report", "run()");
	if (!is_write_mode(mode))
		return PyErr_Format(PyExc_ValueError, "cowrun.report(): mode '%s': a report is "
				    "written from its start, \"w\" (text) or \"wb\" (bytes)", mode);
	if (report_file != NULL)
		return PyErr_Format(PyExc_RuntimeError, "cowrun.report() was already called in "
				    "this task: a task writes one report");
	if (command_file != NULL && command_feeds_report)
		return PyErr_Format(PyExc_RuntimeError, "cowrun.report() after cowrun.command(to="
				    "\"report\"): the command's output is the report");
	FILE *f = cowrun_report(task);
	if (f == NULL)
		return PyErr_Format(PyExc_OSError, "cannot create the report of task %zu: %s",
				    task_index, strerror(errno));
	/* The script writes through its own descriptor on the runner's open
	 * file: the runner's FILE stays empty, and its commit fsyncs what the
	 * script wrote, then renames it. */
	report_file = python_file_on(f, mode, encoding, errors, newline);
	return report_file ? Py_NewRef(report_file) : NULL;
}

/* Whether the command's input is a pipe its command no longer reads: a
 * pipe's write end polls POLLERR once no reader is left. */
static int command_pipe_broken(void)
{
	struct pollfd p = { .fd = command_feed ? fileno(command_feed) : -1, .events = POLLOUT };

	return p.fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & POLLERR);
}

/* Whether the pending exception is the broken pipe of the command's
 * input (its command stopped reading): if so, it is cleared, and
 * remembered for py_close_command().  The runner still fails the task:
 * the write that broke raised SIGPIPE, held on this thread while the
 * command runs, and the runner's wait finds it pending (or the command's
 * own failure, which it names first). */
static int command_broke(void)
{
	if (!PyErr_Occurred() || !PyErr_ExceptionMatches(PyExc_BrokenPipeError) ||
	    !command_pipe_broken())
		return 0;
	PyErr_Clear();
	command_broken = 1;
	return 1;
}

static PyObject *cw_command(PyObject *self, PyObject *args, PyObject *kwargs)
{
	static char *keywords[] = { "cmd", "to", "mode", "encoding", "errors", "newline", NULL };
	const char *cmd, *to = "report", *mode = "w", *encoding = NULL, *errors = NULL,
		   *newline = NULL;

	(void)self;
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "s|sszzz", keywords, &cmd, &to, &mode,
					 &encoding, &errors, &newline))
		return NULL;
	if (phase != PY_PHASE_RUN)
		return wrong_phase("command", "run()");
	int to_report = strcmp(to, "report") == 0;
	if (!to_report && strcmp(to, "stderr") != 0)
		return PyErr_Format(PyExc_ValueError, "cowrun.command(): to='%s': \"report\" (its "
				    "output is the task's report) or \"stderr\"", to);
	if (!is_write_mode(mode))
		return PyErr_Format(PyExc_ValueError, "cowrun.command(): mode '%s': \"w\" (text) "
				    "or \"wb\" (bytes)", mode);
	if (command_file != NULL)
		return PyErr_Format(PyExc_RuntimeError, "cowrun.command() was already called in "
				    "this task: one command per task");
	if (to_report && report_file != NULL)
		return PyErr_Format(PyExc_RuntimeError, "cowrun.command(to=\"report\") after "
				    "cowrun.report(): the report is written by one of them");
	FILE *f = cowrun_command(task, cmd, to_report ? COWRUN_TO_REPORT : COWRUN_TO_STDERR);
	if (f == NULL)  /* cowrun_task_error() said why: the task fails with that */
		return PyErr_Format(command_error, "cowrun.command(): '%s' did not start", cmd);
	command_file = python_file_on(f, mode, encoding, errors, newline);
	if (command_file == NULL)
		return NULL;   /* the runner kills the command when run() fails */
	command_feed = f;
	command_feeds_report = to_report;
	return Py_NewRef(command_file);
}

/* Close a file the script was given, and drop it.  Returns 0, or -1 with
 * the close's exception pending (the file is dropped all the same). */
static int close_file(PyObject **file)
{
	if (*file == NULL)
		return 0;
	PyObject *r = PyObject_CallMethod(*file, "close", NULL);
	Py_CLEAR(*file);
	Py_XDECREF(r);
	return r ? 0 : -1;
}

int py_close_report(void)
{
	return close_file(&report_file);
}

int py_command_broke(void)
{
	return command_file != NULL && command_broke();
}

int py_close_command(void)
{
	if (command_file == NULL)
		return 0;
	int rc = close_file(&command_file);
	if (rc != 0 && (command_broke() || command_broken)) {
		PyErr_Clear();   /* the flush of what the pipe refused */
		rc = 0;
	}
	rc = command_broken ? 1 : rc;
	command_feed = NULL;
	command_broken = 0;
	return rc;
}

int py_command_refused(void)
{
	return PyErr_Occurred() && PyErr_ExceptionMatches(command_error);
}

void py_set_in_child(int yes)
{
	in_child = yes;
}

void py_set_item_seed(uint64_t seed)
{
	child_seed = seed;
}

PyObject *py_parallel_error(void)
{
	return parallel_error;
}

int py_parallel_refused(const char *call)
{
	if (in_child) {
		PyErr_Format(PyExc_RuntimeError, "cowrun.%s() inside a cowrun.parallel() item: "
			     "no nesting (the items already run on every setup thread)", call);
		return -1;
	}
	if (phase != PY_PHASE_SETUP && phase != PY_PHASE_MERGE_SETUP) {
		PyErr_Format(PyExc_RuntimeError, "cowrun.%s() is only for setup() and "
			     "merge_setup() (not the script's top level, plan(), run(), merge() "
			     "or finish())", call);
		return -1;
	}
	return 0;
}

int py_declare_input(const char *path)
{
	if (phase != PY_PHASE_SETUP || cowrun_input(path) == 0)
		return 0;
	PyErr_Format(PyExc_RuntimeError, "cowrun.csv_parts('%s'): refused as an input (see the "
		     "line above)", path);
	return -1;
}

static PyObject *cw_input(PyObject *self, PyObject *arg)
{
	PyObject *path = NULL;

	(void)self;
	if (in_child)
		return PyErr_Format(PyExc_RuntimeError, "cowrun.input() inside a cowrun.parallel() "
				    "item: declare the run's inputs in setup(), before the call");
	if (phase != PY_PHASE_SETUP)
		return wrong_phase("input", "setup()");
	if (!PyUnicode_FSConverter(arg, &path))
		return NULL;
	int rc = cowrun_input(PyBytes_AS_STRING(path));
	Py_DECREF(path);
	if (rc != 0)
		return PyErr_Format(PyExc_RuntimeError, "cowrun.input(): refused (see the line above)");
	Py_RETURN_NONE;
}

static PyObject *cw_task(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	if (phase != PY_PHASE_RUN || task_name == NULL)
		Py_RETURN_NONE;
	return Py_BuildValue("(nO)", (Py_ssize_t)task_index, task_name);
}

/* The task's seed in run(), the run's elsewhere: what a script seeds
 * its own generators with (numpy.random.default_rng(cowrun.seed())). */
static PyObject *cw_seed(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	if (phase == PY_PHASE_RUN && task != NULL)
		return PyLong_FromUnsignedLongLong(cowrun_task_seed(task));
	if (in_child)
		return PyLong_FromUnsignedLongLong(child_seed);
	return PyLong_FromUnsignedLongLong(cowrun_run_seed());
}

static int threads_allowed;

int py_threads_allowed(void)
{
	return threads_allowed;
}

static PyObject *cw_allow_threads_at_fork(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	if (phase != PY_PHASE_SETUP)
		return wrong_phase("allow_threads_at_fork", "setup()");
	threads_allowed = 1;
	Py_RETURN_NONE;
}

static PyObject *cw_verbosity(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	return PyLong_FromLong(cowrun_verbosity());
}

static PyMethodDef cowrun_methods[] = {
	{ "report", (PyCFunction)(void (*)(void))cw_report, METH_VARARGS | METH_KEYWORDS,
	  "report(mode='w', encoding='utf-8', errors=None, newline=None): this task's report "
	  "file, committed only if run() returns" },
	{ "command", (PyCFunction)(void (*)(void))cw_command, METH_VARARGS | METH_KEYWORDS,
	  "command(cmd, to='report', mode='w', encoding='utf-8', errors=None, newline=None): "
	  "start cmd; a file writing to its input.  to='report': its output is this task's "
	  "report; to='stderr': standard error.  The task fails if cmd fails" },
	{ "input", cw_input, METH_O,
	  "input(path): in setup(), declare a file the results depend on" },
	{ "task", cw_task, METH_NOARGS, "task(): (index, name) in run(), else None" },
	{ "seed", cw_seed, METH_NOARGS,
	  "seed(): in run(), this task's seed (from --seed and the task's index: the same at "
	  "every -j and on a retry); elsewhere the run's seed, --seed (0 unless given)" },
	{ "verbosity", cw_verbosity, METH_NOARGS, "verbosity(): 1 under cowrun -v, else 0" },
	{ "parallel", py_parallel, METH_VARARGS,
	  "parallel(fn, items): in setup() or merge_setup(), [fn(item) for item in items] in "
	  "forked children, one per setup thread at most; results pickled back in item order; "
	  "the lowest failing item raises cowrun.ParallelError" },
	{ "csv_parts", (PyCFunction)(void (*)(void))py_csv_parts, METH_VARARGS | METH_KEYWORDS,
	  "csv_parts(path, *, blocks=1, encoding='utf-8', escapechar=None, compression=None, "
	  "header=0): in setup(), the CSV's parts, fixed by the file alone; part.open() is a "
	  "binary file, the header line first, for pd.read_csv()" },
	{ "allow_threads_at_fork", cw_allow_threads_at_fork, METH_NOARGS,
	  "allow_threads_at_fork(): in setup(), the threads alive when it returns hold no "
	  "lock: warn of them instead of refusing the run" },
	{ NULL, NULL, 0, NULL },
};

static struct PyModuleDef cowrun_module = {
	PyModuleDef_HEAD_INIT, "cowrun",
	"What a script run by `cowrun python` calls: report(), command(), input(), task(), "
	"seed(), verbosity(), allow_threads_at_fork(), parallel(), csv_parts().  The contract: workloads/python/contract.py.",
	-1, cowrun_methods, NULL, NULL, NULL, NULL,
};

PyObject *py_cowrun_module_init(void)
{
	PyObject *m = PyModule_Create(&cowrun_module);

	if (m == NULL)
		return NULL;
	if (py_state_add_functions(m) != 0) {
		Py_DECREF(m);
		return NULL;
	}
	parallel_error = PyErr_NewException("cowrun.ParallelError", PyExc_RuntimeError, NULL);
	if (parallel_error == NULL || PyModule_AddObjectRef(m, "ParallelError", parallel_error) != 0) {
		Py_DECREF(m);
		return NULL;
	}
	command_error = PyErr_NewException("cowrun.CommandError", PyExc_OSError, NULL);
	if (command_error == NULL || PyModule_AddObjectRef(m, "CommandError", command_error) != 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}

/* ---- the sink under the summary's stream ---- */

struct sink {
	PyObject_HEAD
	FILE *out;                /* NULL once closed */
	int drop;                 /* closed: writes are dropped, not refused */
};

static PyObject *sink_write(PyObject *self, PyObject *arg)
{
	struct sink *s = (struct sink *)self;
	Py_buffer b;

	if (PyObject_GetBuffer(arg, &b, PyBUF_SIMPLE) != 0)
		return NULL;
	Py_ssize_t len = b.len;
	int failed = 0;
	if (s->out == NULL && !s->drop) {
		PyBuffer_Release(&b);
		return PyErr_Format(PyExc_ValueError, "the summary is finished: finish() has "
				    "returned, and its out takes no more");
	}
	if (s->out != NULL && fwrite(b.buf, 1, (size_t)len, s->out) != (size_t)len)
		failed = 1;
	PyBuffer_Release(&b);
	if (failed)
		return PyErr_SetFromErrno(PyExc_OSError);
	return PyLong_FromSsize_t(len);
}

static PyObject *sink_flush(PyObject *self, PyObject *unused)
{
	struct sink *s = (struct sink *)self;

	(void)unused;
	if (s->out != NULL && fflush(s->out) != 0)
		return PyErr_SetFromErrno(PyExc_OSError);
	Py_RETURN_NONE;
}

static PyMethodDef sink_methods[] = {
	{ "write", sink_write, METH_O, "write(bytes): append to the summary" },
	{ "flush", sink_flush, METH_NOARGS, "flush()" },
	{ NULL, NULL, 0, NULL },
};

static PyType_Slot sink_slots[] = {
	{ Py_tp_methods, sink_methods },
	{ Py_tp_doc, (void *)"where the summary's bytes go: the runner's FILE" },
	{ 0, NULL },
};

static PyType_Spec sink_spec = {
	"cowrun.SummarySink", sizeof(struct sink), 0, Py_TPFLAGS_DEFAULT, sink_slots,
};

PyObject *py_sink_new(FILE *out)
{
	static PyObject *type;

	if (type == NULL && (type = PyType_FromSpec(&sink_spec)) == NULL)
		return NULL;
	struct sink *s = PyObject_New(struct sink, (PyTypeObject *)type);
	if (s != NULL) {
		s->out = out;
		s->drop = 0;
	}
	return (PyObject *)s;
}

void py_sink_close(PyObject *sink, int drop)
{
	struct sink *s = (struct sink *)sink;

	s->out = NULL;
	s->drop = drop;
}
