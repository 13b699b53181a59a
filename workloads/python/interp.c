/*
 * interp.c - the embedded interpreter: started once per process, kept
 * consistent across the runner's forks, and its errors said in one line.
 */
#define _GNU_SOURCE
#include "pyworkload.h"

#include <dlfcn.h>
#include <errno.h>
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef COWRUN_PYTHON_EXECUTABLE
#error "COWRUN_PYTHON_EXECUTABLE (Debian's python3.X, whose prefix the interpreter takes) comes from the Makefile"
#endif

static int started;
static pthread_t python_thread;
static PyObject *helpers; /* the namespace of helper_source below */
static PyObject *pickle_dumps, *pickle_loads;

/*
 * What is easier said in Python: loading the script as a module under a
 * fixed name (whatever the file is called, and so that pickle finds the
 * classes it defines), finding where an exception was raised, and the
 * random generators' seeds.  reseed() seeds them for a task, keeping
 * the states merge() and finish() go on from (once per process until
 * restore() gives them back: a worker that only runs tasks pays for one
 * save); restore() runs before merge() and finish().  `random` reseeds
 * itself from the system in every forked child (its own at-fork hook):
 * the hook registered after it here gives the child the parent's state
 * back, so that merge() and finish() draw the same in the watchdog's
 * child (serial mode) as in the parent (fork mode).
 */
static const char helper_source[] =
	"import importlib.machinery, importlib.util, io, os, random, sys, threading, traceback\n"
	"def load(path):\n"
	"    name = '__cowrun_script__'\n"
	"    loader = importlib.machinery.SourceFileLoader(name, path)\n"
	"    spec = importlib.util.spec_from_loader(name, loader)\n"
	"    module = importlib.util.module_from_spec(spec)\n"
	"    sys.modules[name] = module\n"
	"    loader.exec_module(module)\n"
	"    return module\n"
	"def where(exc, script):\n"
	"    if isinstance(exc, SyntaxError) and exc.filename and exc.lineno:\n"
	"        return '%s:%d' % (exc.filename, exc.lineno)\n"
	"    frames = traceback.extract_tb(exc.__traceback__)\n"
	"    ours = [f for f in frames if os.path.abspath(f.filename) == script]\n"
	"    f = (ours or frames or [None])[-1]\n"
	"    return '%s:%d' % (f.filename, f.lineno) if f else script\n"
	"def one_line(exc):\n"
	"    text = str(exc).strip().splitlines()\n"
	"    return type(exc).__name__ + (': ' + text[0] if text else '')\n"
	"def note_startup():\n"
	"    global startup\n"
	"    startup = set(sys.modules)\n"
	"def own_modules(script):\n"
	"    import site\n"
	"    roots = [sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix]\n"
	"    try:\n"
	"        roots += site.getsitepackages() + [site.getusersitepackages()]\n"
	"    except Exception:\n"
	"        pass\n"
	"    roots = [os.path.join(os.path.realpath(r), '') for r in roots if r]\n"
	"    found = set()\n"
	"    for name, m in list(sys.modules.items()):\n"
	"        f = getattr(m, '__file__', None) if name not in startup else None\n"
	"        if not isinstance(f, str) or not f:\n"
	"            continue\n"
	"        f = os.path.realpath(f)\n"
	"        parts = f.split(os.sep)\n"
	"        if f == script or 'site-packages' in parts or 'dist-packages' in parts or \\\n"
	"                any(f.startswith(r) for r in roots) or not os.path.isfile(f):\n"
	"            continue\n"
	"        found.add(f)\n"
	"    here = os.path.join(os.path.dirname(script), '')\n"
	"    return sorted(found, key=lambda f: (not f.startswith(here), f))\n"
	"fork_state = None\n"
	"def keep_random_state():\n"
	"    global fork_state\n"
	"    fork_state = random.getstate()\n"
	"def take_random_state():\n"
	"    global fork_state\n"
	"    random.setstate(fork_state)\n"
	"    fork_state = None\n"
	"os.register_at_fork(before=keep_random_state, after_in_child=take_random_state)\n"
	"merge_side = None\n"
	"def reseed(seed):\n"
	"    global merge_side\n"
	"    npr = sys.modules.get('numpy.random')\n"
	"    if merge_side is None:\n"
	"        merge_side = random.getstate(), npr.get_state() if npr else None\n"
	"    random.seed(seed)\n"
	"    if npr is not None:\n"
	"        npr.seed(seed % 2**32)\n"
	"def restore():\n"
	"    global merge_side\n"
	"    if merge_side is not None:\n"
	"        saved, merge_side = merge_side, None\n"
	"        random.setstate(saved[0])\n"
	"        if saved[1] is not None:\n"
	"            sys.modules['numpy.random'].set_state(saved[1])\n"
	"def describe():\n"
	"    return sys.version.split()[0], sys.executable, sys.prefix, \\\n"
	"        [p for p in sys.path if p], getattr(sys, 'base_prefix', '')\n"
	/* Threads: those besides this one, by name; by native id for -v. */
	"def others():\n"
	"    me = threading.current_thread()\n"
	"    return [t for t in threading.enumerate() if t is not me]\n"
	"def thread_list():\n"
	"    ts = others()\n"
	"    return len(ts), ', '.join(repr(t.name) + ('' if t.daemon else ' (not a daemon)')\n"
	"                              for t in ts)\n"
	"def thread_names():\n"
	"    return {t.native_id: t.name for t in others() if t.native_id is not None}\n"
	/* threading._shutdown() waits for every non-daemon thread, as long
	 * as they run: run on a daemon helper, it is waited for `seconds`
	 * at most, then never called again (the interpreter's end calls
	 * it).  The non-daemon threads it left alive, by name. */
	"def end_threads(seconds):\n"
	"    if not others():\n"
	"        return ''\n"
	"    done = threading.Event()\n"
	/* _shutdown() joins every non-daemon thread's lock, the main
	 * thread's among them, which only the main thread releases: called
	 * from the helper it would wait out the whole bound whenever any
	 * thread was alive.  The main thread's lock is taken out of its
	 * list first (the main thread is waiting here, not ending). */
	"    def shut():\n"
	"        try:\n"
	"            main_lock = getattr(threading.main_thread(), '_tstate_lock', None)\n"
	"            with threading._shutdown_locks_lock:\n"
	"                threading._shutdown_locks.discard(main_lock)\n"
	"            threading._shutdown()\n"
	"        finally:\n"
	"            done.set()\n"
	"    helper = threading.Thread(target=shut, name='cowrun-shutdown', daemon=True)\n"
	"    helper.start()\n"
	"    ended = done.wait(seconds)\n"
	"    threading._shutdown = lambda: None\n"
	"    return '' if ended else ', '.join(repr(t.name) for t in others()\n"
	"                                      if t is not helper and not t.daemon)\n"
	/* finish()'s `out`: a text stream over the runner's FILE (the
	 * sink, module.c), with no descriptor of its own. */
	"class SummaryRaw(io.RawIOBase):\n"
	"    name = '<cowrun summary>'\n"
	"    def __init__(self, sink):\n"
	"        self.sink = sink\n"
	"    def writable(self):\n"
	"        return True\n"
	"    def write(self, b):\n"
	"        return self.sink.write(b)\n"
	"    def flush(self):\n"
	"        io.RawIOBase.flush(self)\n"
	"        self.sink.flush()\n"
	"    def fileno(self):\n"
	"        raise io.UnsupportedOperation('fileno(): the summary has no file descriptor: '\n"
	"            'cowrun buffers what finish() writes and prints it when finish() returns; '\n"
	"            'write to out (print(..., file=out), out.write(), out.buffer.write())')\n"
	"def summary(sink):\n"
	"    return io.TextIOWrapper(io.BufferedWriter(SummaryRaw(sink)), encoding='utf-8',\n"
	"                            errors='strict', newline='\\n', write_through=True)\n";

static char script_path[PATH_MAX]; /* absolute, for where() */

/* ---- fork ---- */

/* Did this thread call PyOS_BeforeFork() for the fork under way? */
static __thread int forking;

/* helpers[name](args...): a new reference, or NULL with the exception
 * pending. */
static PyObject *call_helper_object(const char *name, PyObject *args)
{
	PyObject *fn = PyDict_GetItemString(helpers, name); /* borrowed */

	if (fn == NULL) {
		PyErr_Format(PyExc_RuntimeError, "no helper %s", name);
		Py_XDECREF(args);
		return NULL;
	}
	PyObject *r = PyObject_CallObject(fn, args);
	Py_XDECREF(args);
	return r;
}

/* The Python name of the thread whose kernel id is `tid` (Thread's
 * native_id), if `names` knows it, into buf; else the empty string. */
static void python_name_of(PyObject *names, long tid, char *buf, size_t size)
{
	PyObject *key = PyLong_FromLong(tid);
	PyObject *name = names && key ? PyDict_GetItemWithError(names, key) : NULL; /* borrowed */
	const char *text = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;

	snprintf(buf, size, "%s", text ? text : "");
	Py_XDECREF(key);
	PyErr_Clear();
}

/* -v: name the threads besides this one once, at the first fork that
 * finds any (a BLAS or numexpr pool the script started, or a Python
 * thread cowrun.allow_threads_at_fork() let through): a Python thread by
 * its name in `threading`, another by its comm, each with its id. */
static void name_threads_at_fork(void)
{
	static int said;
	char list[512] = "", path[300], comm[64];
	size_t used = 0, n = 0;
	DIR *d;

	if (said || (d = opendir("/proc/self/task")) == NULL)
		return;
	PyObject *names = call_helper_object("thread_names", NULL);
	PyErr_Clear();
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (e->d_name[0] == '.' || atoi(e->d_name) == gettid())
			continue;
		python_name_of(names, atol(e->d_name), comm, sizeof comm);
		int python = comm[0] != '\0';
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		FILE *f = python ? NULL : fopen(path, "re");
		if (!python && f == NULL)
			continue;
		if (f != NULL && fgets(comm, sizeof comm, f) == NULL)
			snprintf(comm, sizeof comm, "?");
		if (f != NULL)
			fclose(f);
		comm[strcspn(comm, "\n")] = '\0';
		n++;
		if (used < sizeof list)
			used += (size_t)snprintf(list + used, sizeof list - used, "%s%s%s%s (%s)",
						 n > 1 ? ", " : "", python ? "'" : "", comm,
						 python ? "'" : "", e->d_name);
	}
	closedir(d);
	Py_XDECREF(names);
	if (n > 0) {
		said = 1;
		cowrun_error("%zu thread%s besides the main one alive at fork: %s (a forked worker "
			     "has none of them; a lock one held stays held there)", n,
			     n == 1 ? "" : "s", list);
	}
}

/* Every fork the runner makes (pool, standby, watchdog, serve's leaders)
 * goes through glibc's fork(), and so through these.  Only the thread
 * that runs Python may do Python's part, and only while the interpreter
 * lives: pthread_atfork() cannot be undone, so py_end() makes them
 * no-ops (a fork made as the interpreter ends is a plain one). */
static void before_fork(void)
{
	if (!started || !pthread_equal(pthread_self(), python_thread))
		return;
	py_flush_stdio();
	if (cowrun_verbosity() > 0)
		name_threads_at_fork();
	PyOS_BeforeFork();
	forking = 1;
}

static void after_fork_parent(void)
{
	if (forking) {
		forking = 0;
		PyOS_AfterFork_Parent();
	}
}

static void after_fork_child(void)
{
	if (forking) {
		forking = 0;
		PyOS_AfterFork_Child();
	}
}

Py_ssize_t py_thread_names(char *buf, size_t size)
{
	PyObject *t = call_helper_object("thread_list", NULL);
	Py_ssize_t n = 0;
	const char *list = "";

	if (t == NULL || !PyArg_ParseTuple(t, "ns", &n, &list))
		n = 0;
	snprintf(buf, size, "%s", list);
	PyErr_Clear();
	Py_XDECREF(t);
	return n;
}

int py_check_threads(const char *script, int allowed)
{
	PyObject *t = call_helper_object("thread_list", NULL);
	Py_ssize_t n = 0;
	const char *list = "";

	if (t == NULL || !PyArg_ParseTuple(t, "ns", &n, &list)) {
		PyErr_Clear();
		Py_XDECREF(t);
		return 0; /* threading cannot say: the forks go on as before */
	}
	if (n > 0 && allowed)
		cowrun_error("%s: %zd thread%s alive at the fork, allowed by "
			     "cowrun.allow_threads_at_fork(): %s (no worker has %s; a lock %s "
			     "holds stays held there)", script, n, n == 1 ? "" : "s", list,
			     n == 1 ? "it" : "them", n == 1 ? "it" : "one");
	else if (n > 0)
		cowrun_error("%s: %zd thread%s alive when setup() returned: %s: a lock %s holds "
			     "would stay held in every worker (a fork copies only the main thread); "
			     "end %s before setup() returns (thread.join(), executor.shutdown(), "
			     "listener.stop()), or call cowrun.allow_threads_at_fork() in setup() "
			     "if %s no lock; no task ran", script, n, n == 1 ? "" : "s", list,
			     n == 1 ? "it" : "one", n == 1 ? "it" : "them",
			     n == 1 ? "it holds" : "they hold");
	Py_DECREF(t);
	return n > 0 && !allowed ? -1 : 0;
}

/* ---- the end ---- */

static int ended;

/* How long the interpreter's end waits for threads that are not daemons
 * (threading._shutdown()): COWRUN_PYTHON_THREADS_WAIT_S, default 10 s. */
static double threads_wait_s(void)
{
	const char *text = getenv("COWRUN_PYTHON_THREADS_WAIT_S");
	char *end;
	double s = text ? strtod(text, &end) : 0;

	return text && end != text && *end == '\0' && s >= 0 && s <= 86400 ? s : 10.0;
}

/* threading._shutdown() with a deadline: a thread that never ends is
 * named, then left (it ends with the process, as a daemon would). */
static void end_threads(void)
{
	double wait = threads_wait_s();
	PyObject *left = call_helper_object("end_threads", Py_BuildValue("(d)", wait));
	const char *names = left ? PyUnicode_AsUTF8(left) : NULL;

	if (names != NULL && names[0] != '\0')
		cowrun_error("%s: at the interpreter's end, thread %s had not ended after %g s: "
			     "left running (it ends with the process; what it had still to do "
			     "is lost): end it, or join it, before finish() returns",
			     script_path, names, wait);
	else if (names == NULL)
		PyErr_Print();
	Py_XDECREF(left);
}

int py_end(void)
{
	if (!started || ended || !pthread_equal(pthread_self(), python_thread))
		return 0;
	py_flush_stdio();
	end_threads();
	started = 0; /* the fork handlers, py_flush_stdio(): no-ops from here */
	ended = 1;
	Py_CLEAR(pickle_dumps);
	Py_CLEAR(pickle_loads);
	Py_CLEAR(helpers);
	if (Py_FinalizeEx() != 0) {
		cowrun_error("%s: the interpreter's end failed: a buffered write of sys.stdout or "
			     "sys.stderr could not be flushed (see the lines above)", script_path);
		return -1;
	}
	return 0;
}

/* ---- starting ---- */

/*
 * numpy's extension modules link against libpython's symbols without
 * naming the library, and a plugin loaded RTLD_LOCAL hides them ("undefined
 * symbol: PyExc_..."; CPython bpo-21536).  The libpython this plugin links
 * is made global; the other plugins stay local.
 */
static int make_libpython_global(void)
{
	Dl_info info;

	if (dladdr((void *)Py_InitializeFromConfig, &info) == 0 || info.dli_fname == NULL) {
		cowrun_error("cannot find the libpython this workload links (dladdr)");
		return -1;
	}
	if (dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL) == NULL) {
		cowrun_error("cannot make '%s' global: %s", info.dli_fname, dlerror());
		return -1;
	}
	return 0;
}

/* What a virtualenv's pyvenv.cfg says of the Python it was made from:
 * `home` (its directory), `executable` or `base-executable` (the file),
 * and its version ("3.11"). */
struct venv_base {
	char home[PATH_MAX], executable[PATH_MAX], base_executable[PATH_MAX];
	char version[32];
	int found;                 /* pyvenv.cfg could be read */
};

/* "key = value" into buf if `line` sets `key`. */
static void venv_value(const char *line, const char *key, char *buf, size_t size)
{
	size_t n = strlen(key);

	if (strncmp(line, key, n) != 0)
		return;
	line += n;
	line += strspn(line, " \t");
	if (*line != '=')
		return;
	line += 1 + strspn(line + 1, " \t");
	snprintf(buf, size, "%.*s", (int)strcspn(line, "\r\n"), line);
	for (size_t len = strlen(buf); len > 0 && (buf[len - 1] == ' ' || buf[len - 1] == '\t');)
		buf[--len] = '\0';
}

static void venv_read(const char *venv, struct venv_base *v)
{
	char path[PATH_MAX], line[PATH_MAX + 64], version[64] = "";
	FILE *f;

	memset(v, 0, sizeof *v);
	snprintf(path, sizeof path, "%s/pyvenv.cfg", venv);
	if ((f = fopen(path, "re")) == NULL)
		return;
	v->found = 1;
	while (fgets(line, sizeof line, f)) {
		venv_value(line, "home", v->home, sizeof v->home);
		venv_value(line, "executable", v->executable, sizeof v->executable);
		venv_value(line, "base-executable", v->base_executable, sizeof v->base_executable);
		venv_value(line, "version", version, sizeof version);
		venv_value(line, "version_info", version, sizeof version);
	}
	fclose(f);
	unsigned major, minor;
	if (sscanf(version, "%u.%u", &major, &minor) == 2)
		snprintf(v->version, sizeof v->version, "%u.%u", major, minor);
}

/* Whether `path` resolves to `want` (both through realpath()). */
static int resolves_to(const char *path, const char *want)
{
	char real[PATH_MAX];

	return path[0] != '\0' && realpath(path, real) != NULL && strcmp(real, want) == 0;
}

/* Why the virtualenv is not one of the embedded interpreter (into buf),
 * or NULL: every one of home, executable and base-executable that
 * pyvenv.cfg sets resolves to the embedded Python's directory or file,
 * at least one is set, and its version is this one. */
static const char *venv_mismatch(const struct venv_base *v, char *buf, size_t size)
{
	char exe[PATH_MAX], dir[PATH_MAX], ours[32];
	const char *names[] = { "executable", "base-executable" };
	const char *files[] = { v->executable, v->base_executable };

	snprintf(ours, sizeof ours, "%d.%d", PY_MAJOR_VERSION, PY_MINOR_VERSION);
	if (realpath(COWRUN_PYTHON_EXECUTABLE, exe) == NULL)
		snprintf(exe, sizeof exe, "%s", COWRUN_PYTHON_EXECUTABLE);
	snprintf(dir, sizeof dir, "%s", exe);
	*strrchr(dir, '/') = '\0';
	if (!v->found)
		return "it has no pyvenv.cfg: no virtualenv";
	if (!v->home[0] && !v->executable[0] && !v->base_executable[0])
		return "its pyvenv.cfg names no home or executable: the Python it was made from is unknown";
	if (v->home[0] && !resolves_to(v->home, dir)) {
		snprintf(buf, size, "it was made from the Python in %s (pyvenv.cfg's home)", v->home);
		return buf;
	}
	for (size_t i = 0; i < 2; i++)
		if (files[i][0] && !resolves_to(files[i], exe)) {
			snprintf(buf, size, "it was made from %s (pyvenv.cfg's %s)", files[i], names[i]);
			return buf;
		}
	if (v->version[0] && strcmp(v->version, ours) != 0) {
		snprintf(buf, size, "it is Python %s (pyvenv.cfg's version)", v->version);
		return buf;
	}
	return NULL;
}

/*
 * The executable the interpreter takes its prefix from (its standard
 * library, Debian's dist-packages): Debian's python3.X, wherever cowrun is
 * installed (from the binary's own path it would look in the wrong
 * place), or the active virtualenv's python.  A virtualenv is used only
 * if it was made from that same python3.X: one of another build, even of
 * the same version, has extension modules built for another libpython
 * ("undefined symbol" in setup), so it is refused, naming both; NULL.
 */
static const char *python_executable(char *buf, size_t size)
{
	const char *venv = getenv("VIRTUAL_ENV");
	struct venv_base v;
	char why[PATH_MAX + 96];
	const char *wrong;

	if (venv == NULL || venv[0] == '\0')
		return COWRUN_PYTHON_EXECUTABLE;
	venv_read(venv, &v);
	snprintf(buf, size, "%s/bin/python3", venv);
	if ((wrong = venv_mismatch(&v, why, sizeof why)) == NULL && access(buf, X_OK) != 0)
		wrong = "it has no bin/python3";
	if (wrong == NULL)
		return buf;
	cowrun_error("VIRTUAL_ENV '%s' is not a virtualenv of the Python this workload embeds, "
		     "%s: %s; make one with %s -m venv (--system-site-packages keeps Debian's "
		     "modules), or unset VIRTUAL_ENV", venv, COWRUN_PYTHON_EXECUTABLE, wrong,
		     COWRUN_PYTHON_EXECUTABLE);
	return NULL;
}

/* Say which interpreter runs and where its modules come from (-v). */
static void describe_interpreter(void)
{
	PyObject *d = PyDict_GetItemString(helpers, "describe"); /* borrowed */
	PyObject *t = d ? PyObject_CallNoArgs(d) : NULL;
	PyObject *comma = PyUnicode_FromString(", ");
	const char *version, *exe, *prefix, *base;
	PyObject *path;

	if (t == NULL || !PyArg_ParseTuple(t, "sssOs", &version, &exe, &prefix, &path, &base)) {
		PyErr_Clear();
	} else {
		PyObject *joined = comma ? PyUnicode_Join(comma, path) : NULL;
		cowrun_error("Python %s (%s, prefix %s%s%s); modules from: %s", version, exe, prefix,
			     strcmp(base, prefix) ? ", a virtualenv of " : "",
			     strcmp(base, prefix) ? base : "",
			     joined ? PyUnicode_AsUTF8(joined) : "?");
		Py_XDECREF(joined);
		PyErr_Clear();
	}
	Py_XDECREF(t);
	Py_XDECREF(comma);
}

/* sys.argv = [script, args...], and nothing of it read as Python's own
 * options; no signal handlers: SIGINT and SIGTERM keep the runner's
 * meaning (a KeyboardInterrupt would be a task's failure instead). */
static int init_interpreter(const char *script, int argc, char **argv)
{
	PyConfig config;
	PyStatus status;
	char exe[PATH_MAX];

	const char *program = python_executable(exe, sizeof exe);

	if (program == NULL)
		return -1;
	PyConfig_InitPythonConfig(&config);
	config.install_signal_handlers = 0;
	config.parse_argv = 0;
	/* Set and dict orders repeat from run to run (and so do names a
	 * script takes from a set): the hash seed is the run seed's, not
	 * a random one (PYTHONHASHSEED is not read). */
	config.use_hash_seed = 1;
	config.hash_seed = (unsigned long)(cowrun_seed_mix(cowrun_run_seed(), UINT64_MAX) &
					   0xffffffffu);
	status = PyConfig_SetBytesString(&config, &config.program_name, program);
	if (!PyStatus_Exception(status))
		status = PyConfig_SetBytesArgv(&config, argc, argv);
	if (!PyStatus_Exception(status))
		status = Py_InitializeFromConfig(&config);
	PyConfig_Clear(&config);
	if (PyStatus_Exception(status)) {
		cowrun_error("%s: cannot start Python: %s%s%s", script,
			     status.func ? status.func : "", status.func ? ": " : "",
			     status.err_msg ? status.err_msg : "failed");
		return -1;
	}
	return 0;
}

/* The helpers, pickle, and the script's directory first on sys.path (as
 * `python3 script.py` puts it: the script imports its neighbours). */
static int prepare_namespace(const char *script)
{
	PyObject *main_dict = PyDict_New(), *code = NULL, *pickle = NULL, *path = NULL, *first;
	char dir[PATH_MAX];
	int inserted;

	if (main_dict == NULL)
		return -1;
	PyDict_SetItemString(main_dict, "__builtins__", PyEval_GetBuiltins());
	code = PyRun_String(helper_source, Py_file_input, main_dict, main_dict);
	pickle = PyImport_ImportModule("pickle");
	if (code == NULL || pickle == NULL)
		goto fail;
	helpers = main_dict;
	pickle_dumps = PyObject_GetAttrString(pickle, "dumps");
	pickle_loads = PyObject_GetAttrString(pickle, "loads");
	snprintf(dir, sizeof dir, "%s", script);
	*strrchr(dir, '/') = '\0';
	path = PySys_GetObject("path"); /* borrowed */
	first = PyUnicode_DecodeFSDefault(dir[0] ? dir : "/");
	inserted = path != NULL && first != NULL && PyList_Insert(path, 0, first) == 0;
	Py_XDECREF(first);
	if (pickle_dumps == NULL || pickle_loads == NULL || !inserted)
		goto fail;
	Py_DECREF(code);
	/* What the interpreter imported as it started (Debian's
	 * sitecustomize in /etc) is no module of the script's. */
	if ((code = PyRun_String("note_startup()", Py_eval_input, main_dict, main_dict)) == NULL)
		goto fail;
	Py_DECREF(code);
	Py_DECREF(pickle);
	return 0;
fail:
	PyErr_Print();
	Py_XDECREF(code);
	Py_XDECREF(pickle);
	return -1;
}

int py_start(const char *script, int argc, char **argv)
{
	if (started)
		return 0;
	if (realpath(script, script_path) == NULL) {
		cowrun_error("cannot read the script '%s': %s", script, strerror(errno));
		return -1;
	}
	if (make_libpython_global() != 0)
		return -1;
	if (PyImport_AppendInittab("cowrun", py_cowrun_module_init) != 0) {
		cowrun_error("cannot add the cowrun module to Python");
		return -1;
	}
	if (init_interpreter(script, argc, argv) != 0)
		return -1;
	python_thread = pthread_self();
	started = 1;
	int err = pthread_atfork(before_fork, after_fork_parent, after_fork_child);
	if (err != 0) {
		cowrun_error("pthread_atfork: %s", strerror(err));
		return -1;
	}
	if (prepare_namespace(script_path) != 0)
		return -1;
	if (cowrun_verbosity() > 0)
		describe_interpreter();
	return 0;
}

/* ---- random generators ---- */

int py_reseed(uint64_t seed)
{
	PyObject *fn = PyDict_GetItemString(helpers, "reseed"); /* borrowed */
	PyObject *r = fn ? PyObject_CallFunction(fn, "K", (unsigned long long)seed) : NULL;

	Py_XDECREF(r);
	return r ? 0 : -1;
}

int py_restore_generators(void)
{
	PyObject *fn = PyDict_GetItemString(helpers, "restore"); /* borrowed */
	PyObject *r = fn ? PyObject_CallNoArgs(fn) : NULL;

	Py_XDECREF(r);
	return r ? 0 : -1;
}

/* ---- the script ---- */

PyObject *py_load_script(const char *script)
{
	PyObject *load = PyDict_GetItemString(helpers, "load"); /* borrowed */
	PyObject *module = load ? PyObject_CallFunction(load, "s", script_path) : NULL;
	char what[512], where[PATH_MAX + 32];
	int status;

	if (module != NULL)
		return module;
	if (py_system_exit(&status)) {
		cowrun_error("%s: the script called exit(%d) as it was loaded: no batch ran",
			     script, status);
		return NULL;
	}
	py_describe_error(what, sizeof what, where, sizeof where, cowrun_verbosity() > 0);
	cowrun_error("%s: %s (loading the script)", where, what);
	return NULL;
}

PyObject *py_function(PyObject *module, const char *name, int *bad)
{
	PyObject *f = PyObject_GetAttrString(module, name);

	if (f == NULL) {
		PyErr_Clear();
		return NULL;
	}
	if (!PyCallable_Check(f)) {
		cowrun_error("%s: '%s' is a %s, not a function", script_path, name,
			     Py_TYPE(f)->tp_name);
		*bad = 1;
		Py_DECREF(f);
		return NULL;
	}
	return f;
}

/* ---- the script's own modules ---- */

int py_declare_own_modules(void)
{
	PyObject *fn = PyDict_GetItemString(helpers, "own_modules"); /* borrowed */
	PyObject *list = fn ? PyObject_CallFunction(fn, "s", script_path) : NULL;
	Py_ssize_t n = list ? PyList_GET_SIZE(list) : 0, i = 0;

	if (list == NULL) {
		char what[512], where[PATH_MAX + 32];
		py_describe_error(what, sizeof what, where, sizeof where, 0);
		cowrun_error("%s: cannot list the script's own modules: %s", script_path, what);
		return -1;
	}
	/* Those beside the script come first: past cowrun_input()'s limit
	 * (its line says so) the rest are named as not recorded. */
	for (; i < n; i++) {
		const char *path = PyUnicode_AsUTF8(PyList_GET_ITEM(list, i));
		if (path == NULL || cowrun_input(path) != 0)
			break;
	}
	PyErr_Clear();
	if (i < n)
		cowrun_error("%s: %zd of the script's %zd own modules are not recorded as inputs: "
			     "--resume and --merge cannot see them change", script_path, n - i, n);
	Py_DECREF(list);
	return 0;
}

/* ---- errors ---- */

/* helpers[name](args...) as a C string into buf; "?" if that fails. */
static void call_helper(const char *name, PyObject *args, char *buf, size_t size)
{
	PyObject *fn = PyDict_GetItemString(helpers, name);
	PyObject *r = fn ? PyObject_CallObject(fn, args) : NULL;
	const char *text = r ? PyUnicode_AsUTF8(r) : NULL;

	snprintf(buf, size, "%s", text ? text : "?");
	Py_XDECREF(r);
	PyErr_Clear();
}

void py_describe_error(char *buf, size_t size, char *where, size_t wsize, int print_traceback)
{
	PyObject *type, *exc, *tb;

	PyErr_Fetch(&type, &exc, &tb);
	if (type == NULL) {
		snprintf(buf, size, "failed without an exception");
		snprintf(where, wsize, "%s", script_path);
		return;
	}
	PyErr_NormalizeException(&type, &exc, &tb);
	if (tb != NULL)
		PyException_SetTraceback(exc, tb);
	if (print_traceback) {
		PyErr_Display(type, exc, tb);
		py_flush_stdio();
	}
	PyObject *args = Py_BuildValue("(O)", exc);
	PyObject *args2 = Py_BuildValue("(Os)", exc, script_path);
	call_helper("one_line", args, buf, size);
	call_helper("where", args2, where, wsize);
	Py_XDECREF(args);
	Py_XDECREF(args2);
	Py_XDECREF(type);
	Py_XDECREF(exc);
	Py_XDECREF(tb);
}

int py_system_exit(int *status)
{
	if (!PyErr_ExceptionMatches(PyExc_SystemExit))
		return 0;
	PyObject *type, *exc, *tb;
	PyErr_Fetch(&type, &exc, &tb);
	PyErr_NormalizeException(&type, &exc, &tb);
	PyObject *code = exc ? PyObject_GetAttrString(exc, "code") : NULL;
	*status = code == NULL || code == Py_None ? 0 : PyLong_Check(code) ? (int)PyLong_AsLong(code) : 1;
	Py_XDECREF(code);
	Py_XDECREF(type);
	Py_XDECREF(exc);
	Py_XDECREF(tb);
	PyErr_Clear();
	return 1;
}

/* ---- stdio and pickles ---- */

void py_flush_stdio(void)
{
	const char *names[] = { "stdout", "stderr" };

	if (!started)
		return;
	PyObject *type, *value, *tb;
	PyErr_Fetch(&type, &value, &tb); /* a pending exception survives */
	for (size_t i = 0; i < 2; i++) {
		PyObject *f = PySys_GetObject(names[i]); /* borrowed */
		PyObject *r = f && f != Py_None ? PyObject_CallMethod(f, "flush", NULL) : NULL;
		Py_XDECREF(r);
		PyErr_Clear();
	}
	PyErr_Restore(type, value, tb);
}

PyObject *py_pickle(PyObject *obj)
{
	return PyObject_CallFunction(pickle_dumps, "Oi", obj, 5);
}

PyObject *py_unpickle(const void *bytes, size_t len)
{
	PyObject *b = PyBytes_FromStringAndSize(bytes, (Py_ssize_t)len);
	PyObject *r = b ? PyObject_CallOneArg(pickle_loads, b) : NULL;

	Py_XDECREF(b);
	return r;
}

/* ---- finish()'s stream ---- */

static PyObject *summary_sink; /* the sink under the stream now open */

PyObject *py_summary_new(FILE *out)
{
	PyObject *sink = py_sink_new(out);
	PyObject *stream = sink ? call_helper_object("summary", Py_BuildValue("(O)", sink)) : NULL;

	if (stream == NULL) {
		Py_XDECREF(sink);
		return NULL;
	}
	Py_XSETREF(summary_sink, sink);
	return stream;
}

int py_summary_end(PyObject *out, int keep)
{
	if (summary_sink != NULL && !keep)
		py_sink_close(summary_sink, 1); /* what out holds goes nowhere */
	PyObject *r = PyObject_CallMethod(out, "close", NULL);
	if (summary_sink != NULL)
		py_sink_close(summary_sink, 0);
	Py_CLEAR(summary_sink);
	Py_XDECREF(r);
	if (r == NULL && !keep)
		PyErr_Clear();
	return r != NULL || !keep ? 0 : -1;
}
