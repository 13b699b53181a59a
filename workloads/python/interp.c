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
	"import importlib.machinery, importlib.util, os, random, sys, traceback\n"
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
	"        [p for p in sys.path if p], getattr(sys, 'base_prefix', '')\n";

static char script_path[PATH_MAX]; /* absolute, for where() */

/* ---- fork ---- */

/* Did this thread call PyOS_BeforeFork() for the fork under way? */
static __thread int forking;

/* -v: name the threads besides this one once, at the first fork that
 * finds any (a BLAS or numexpr pool the script started). */
static void name_threads_at_fork(void)
{
	static int said;
	char list[512] = "", path[300], comm[32];
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
	if (n > 0) {
		said = 1;
		cowrun_error("%zu thread%s besides the main one alive at fork: %s (a forked worker "
			     "has none of them; a lock one held stays held there)", n,
			     n == 1 ? "" : "s", list);
	}
}

/* Every fork the runner makes (pool, standby, watchdog, serve's leaders)
 * goes through glibc's fork(), and so through these.  Only the thread
 * that runs Python may do Python's part. */
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

/* The Python version a virtualenv's pyvenv.cfg says ("3.11"), or "". */
static void venv_version(const char *venv, char *buf, size_t size)
{
	char path[PATH_MAX], line[256];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof path, "%s/pyvenv.cfg", venv);
	if ((f = fopen(path, "re")) == NULL)
		return;
	while (fgets(line, sizeof line, f)) {
		unsigned major, minor;
		if (sscanf(line, "version = %u.%u", &major, &minor) == 2 ||
		    sscanf(line, "version_info = %u.%u", &major, &minor) == 2) {
			snprintf(buf, size, "%u.%u", major, minor);
			break;
		}
	}
	fclose(f);
}

/*
 * The executable the interpreter takes its prefix from (its standard
 * library, Debian's dist-packages): Debian's python3.X, wherever cowrun is
 * installed (from the binary's own path it would look in the wrong
 * place), or the active virtualenv's python when it is of this version.
 */
static const char *python_executable(char *buf, size_t size)
{
	const char *venv = getenv("VIRTUAL_ENV");
	char version[32], ours[32];

	if (venv == NULL || venv[0] == '\0')
		return COWRUN_PYTHON_EXECUTABLE;
	snprintf(ours, sizeof ours, "%d.%d", PY_MAJOR_VERSION, PY_MINOR_VERSION);
	venv_version(venv, version, sizeof version);
	snprintf(buf, size, "%s/bin/python3", venv);
	if (strcmp(version, ours) == 0 && access(buf, X_OK) == 0)
		return buf;
	cowrun_error("VIRTUAL_ENV '%s' is %s%s, not Python %s as this workload: not used, "
		     "modules come from %s", venv, version[0] ? "Python " : "no virtualenv (no pyvenv.cfg version)",
		     version, ours, COWRUN_PYTHON_EXECUTABLE);
	return COWRUN_PYTHON_EXECUTABLE;
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

	PyConfig_InitPythonConfig(&config);
	config.install_signal_handlers = 0;
	config.parse_argv = 0;
	/* Set and dict orders repeat from run to run (and so do names a
	 * script takes from a set): the hash seed is the run seed's, not
	 * a random one (PYTHONHASHSEED is not read). */
	config.use_hash_seed = 1;
	config.hash_seed = (unsigned long)(cowrun_seed_mix(cowrun_run_seed(), UINT64_MAX) &
					   0xffffffffu);
	status = PyConfig_SetBytesString(&config, &config.program_name,
					 python_executable(exe, sizeof exe));
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
