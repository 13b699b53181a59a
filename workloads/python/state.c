/*
 * state.c - the state rule for a script: run() neither changes the state
 * nor reads what merge() writes.  A C workload's state is a frozen arena;
 * a script's cannot be frozen, so this file guards what it can and
 * detects what it cannot:
 *
 *   the guard     the numpy arrays reachable from the state (a frame's
 *                 blocks, the script's own arrays), collected once after
 *                 setup(), are read-only while run() runs: an in-place
 *                 write fails its task in one line naming the rule.
 *   the detector  a fingerprint of the state's objects (types, identities,
 *                 lengths, arrays' data and shapes), bounded, taken when a
 *                 process runs its first task (what the parent had at the
 *                 fork) and compared after each task: a change that a later
 *                 task of the same worker saw is said once, naming where.
 *
 * The script opts out with cowrun.writable(arr) (that array and its views
 * stay writable), cowrun.guard(False) (no guard) and cowrun.guard(detect=
 * False), or COWRUN_PYTHON_DETECT=0 in the environment (no detector).
 */
#define _GNU_SOURCE
#include "pyworkload.h"

#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * The walks, in Python: breadth first from the state, at most 1000
 * objects, 8 levels and 4096 items of a container; into dicts, lists,
 * tuples and the attributes of objects whose class is the script's own (or
 * a SimpleNamespace), not into a library's objects (their caches change
 * when read); a pandas frame or series by its blocks.  numpy and pandas
 * are only looked at if the script imported them.
 */
static const char state_source[] =
	"import os, sys, sysconfig, types\n"
	"from itertools import islice\n"
	"MAX_OBJECTS, MAX_DEPTH, MAX_ITEMS = 1000, 8, 4096\n"
	"ATOMS = frozenset((str, int, float, complex, bool, bytes, type(None), range))\n"
	"_walked = {}\n"
	"_libs = []\n"
	"def _own_type(t):\n"
	"    if t is types.SimpleNamespace or (t.__name__ == 'Namespace' and t.__module__ == 'argparse'):\n"
	"        return True\n"
	"    if t.__module__ == '__cowrun_script__':\n"
	"        return True\n"
	"    f = getattr(sys.modules.get(t.__module__), '__file__', None)\n"
	"    if not f or t.__module__ == 'builtins':\n"
	"        return False\n"
	"    if not _libs:\n"
	"        paths = sysconfig.get_paths()\n"
	"        _libs.extend(os.path.realpath(paths[k]) + '/' for k in\n"
	"                     ('stdlib', 'platstdlib', 'purelib', 'platlib') if paths.get(k))\n"
	"    f = os.path.realpath(f)\n"
	"    return not f.startswith(tuple(_libs)) and '-packages/' not in f\n"
	"def walks(t):\n"
	"    r = _walked.get(t)\n"
	"    if r is None:\n"
	"        r = _walked[t] = _own_type(t)\n"
	"    return r\n"
	"def _kinds():\n"
	"    np, pd = sys.modules.get('numpy'), sys.modules.get('pandas')\n"
	"    return (np.ndarray if np else None), ((pd.DataFrame, pd.Series) if pd else None)\n"
	"def _frame_arrays(mgr):\n"
	"    for b in mgr.blocks:\n"
	"        v = b.values\n"
	"        yield v\n"
	"        for attr in ('_ndarray', '_data', '_mask'):\n"
	"            a = getattr(v, attr, None)\n"
	"            if a is not None:\n"
	"                yield a\n"
	"def _data(a, ndarray):\n"
	"    \"\"\"An array's data pointer, shape and strides (_array, in C), or 0.\"\"\"\n"
	"    return _array(a) if ndarray and isinstance(a, ndarray) else 0\n"
	"def _array_slow(a):\n"
	"    return a.__array_interface__['data'][0], a.shape, a.strides\n"
	"def _container(obj, t):\n"
	"    \"\"\"(sig tail, children as (key, value) or (), how a child's step is\n"
	"    written).  _items (C): the items' identities as bytes, read without\n"
	"    touching their reference counts, and whether all are atoms.\"\"\"\n"
	"    if isinstance(obj, (dict, list, tuple)):\n"
	"        ids, atoms = _items(obj, MAX_ITEMS)\n"
	"        return (len(obj), ids), (() if atoms else obj.items() if isinstance(obj, dict)\n"
	"                                 else enumerate(obj)), '['\n"
	"    if isinstance(obj, (set, frozenset)):\n"
	"        return (len(obj),), (), ''\n"
	"    if walks(t):\n"
	"        d = getattr(obj, '__dict__', None)\n"
	"        if type(d) is dict:\n"
	"            ids, atoms = _items(d, MAX_ITEMS)\n"
	"            return (len(d), ids), (() if atoms else d.items()), '.'\n"
	"    return (), (), ''\n"
	"def walk(state, keep=False):\n"
	"    \"\"\"The fingerprint: one tuple per object reached from the state, breadth\n"
	"    first, bounded; how each was reached; and with keep the objects.\"\"\"\n"
	"    ndarray, frames = _kinds()\n"
	"    sigs, steps, objs, seen = [], [], [], set()\n"
	"    queue = [(state, -1, '', None, 0)]\n"
	"    i = 0\n"
	"    while i < len(queue) and len(sigs) < MAX_OBJECTS:\n"
	"        obj, parent, how, key, depth = queue[i]\n"
	"        i += 1\n"
	"        k = id(obj)\n"
	"        if k in seen:\n"
	"            continue\n"
	"        seen.add(k)\n"
	"        me = len(sigs)\n"
	"        steps.append((parent, how, key))\n"
	"        if keep:\n"
	"            objs.append(obj)\n"
	"        t = type(obj)\n"
	"        if ndarray and isinstance(obj, ndarray):\n"
	"            sigs.append((k, t, _data(obj, ndarray)))\n"
	"            continue\n"
	"        if frames and isinstance(obj, frames):\n"
	"            mgr = obj._mgr\n"
	"            arrays = tuple(_frame_arrays(mgr))\n"
	"            sigs.append((k, t, id(mgr), tuple(map(id, mgr.blocks)), tuple(map(id, mgr.axes)),\n"
	"                         tuple(map(id, arrays)), tuple(_data(a, ndarray) for a in arrays)))\n"
	"            continue\n"
	"        tail, items, how = _container(obj, t)\n"
	"        sigs.append((k, t) + tail)\n"
	"        if not items or depth >= MAX_DEPTH:\n"
	"            continue\n"
	"        room = MAX_OBJECTS - (len(queue) - i)\n"
	"        for key, v in islice(items, max(0, min(room, MAX_ITEMS))):\n"
	"            if type(v) not in ATOMS:\n"
	"                queue.append((v, me, how, key, depth + 1))\n"
	"    return (sigs, steps, objs) if keep else (sigs, steps)\n"
	"def fingerprint(state):\n"
	"    return walk(state)\n"
	"def _path(steps, n):\n"
	"    parts = []\n"
	"    while n > 0:\n"
	"        parent, how, key = steps[n]\n"
	"        parts.append('.%s' % key if how == '.' else '[%r]' % (key,))\n"
	"        n = parent\n"
	"    return 'state' + ''.join(reversed(parts))\n"
	"def changed(old, state):\n"
	"    \"\"\"None, or where the state differs from the fingerprint old.\"\"\"\n"
	"    sigs = walk(state)[0]\n"
	"    if sigs == old[0]:\n"
	"        return None\n"
	"    sigs, steps, objs = walk(state, keep=True)\n"
	"    a = old[0]\n"
	"    n = next((n for n in range(min(len(a), len(sigs))) if a[n] != sigs[n]), min(len(a), len(sigs)))\n"
	"    if n >= len(sigs):\n"
	"        return _path(old[1], max(0, n - 1))\n"
	"    where, obj, frames = _path(steps, n), objs[n], _kinds()[1]\n"
	"    if frames and isinstance(obj, frames):\n"
	"        o, c = (a[n], sigs[n]) if n < len(a) else ((), ())\n"
	"        axes = len(o) == len(c) == 7 and o[3] == c[3] and o[5:] == c[5:] and o[4] != c[4]\n"
	"        return where + (' (its index or columns)' if axes else ' (its blocks)')\n"
	"    tail, items, how = _container(obj, type(obj))\n"
	"    if not how or n >= len(a) or len(a[n]) != 4 or a[n][:2] != sigs[n][:2]:\n"
	"        return where\n"
	"    if a[n][2] != sigs[n][2]:\n"
	"        return '%s (%d %s%s, were %d)' % (where, sigs[n][2], 'item' if how == '[' else 'attribute',\n"
	"                                          '' if sigs[n][2] == 1 else 's', a[n][2])\n"
	"    old_ids, ids = a[n][-1], sigs[n][-1]\n"
	"    j = next((j for j in range(0, len(ids), 8) if ids[j:j + 8] != old_ids[j:j + 8]), None)\n"
	"    d = obj.__dict__ if how == '.' else obj\n"
	"    if j is not None:\n"
	"        j //= 16 if isinstance(d, dict) else 8\n"
	"        key = next(islice(d if isinstance(d, dict) else range(len(d)), j, None), None)\n"
	"        return where + ('.%s' % key if how == '.' else '[%r]' % (key,))\n"
	"    return where\n"
	"def collect(root, ndarray, frames):\n"
	"    \"\"\"The numpy arrays reachable from root (bounded, as the walk).\"\"\"\n"
	"    found, seen, queue, i = [], set(), [(root, 0)], 0\n"
	"    while i < len(queue) and i < MAX_OBJECTS:\n"
	"        obj, depth = queue[i]\n"
	"        i += 1\n"
	"        if id(obj) in seen:\n"
	"            continue\n"
	"        seen.add(id(obj))\n"
	"        if isinstance(obj, ndarray):\n"
	"            found.append(obj)\n"
	"            continue\n"
	"        if frames and isinstance(obj, frames):\n"
	"            found.extend(a for a in _frame_arrays(obj._mgr) if isinstance(a, ndarray))\n"
	"            cache = getattr(obj, '_item_cache', None)  # a frame's cached columns: views\n"
	"            if type(cache) is dict:\n"
	"                queue.extend((s, depth + 1) for s in cache.values())\n"
	"            continue\n"
	"        if depth < MAX_DEPTH and type(obj) not in ATOMS:\n"
	"            tail, items, how = _container(obj, type(obj))\n"
	"            queue.extend((v, depth + 1) for _, v in islice(items, MAX_ITEMS)\n"
	"                         if type(v) not in ATOMS)\n"
	"    return found\n"
	"def _bases(a, ndarray):\n"
	"    while isinstance(a, ndarray):\n"
	"        yield a\n"
	"        a = a.base\n"
	"def guarded(state, writable):\n"
	"    \"\"\"The arrays run() must not write: writeable ones reachable from the\n"
	"    state, but those reachable from writable and their views; owners first.\"\"\"\n"
	"    ndarray, frames = _kinds()\n"
	"    if ndarray is None:\n"
	"        return []\n"
	"    mine = {id(a) for w in writable or () for a in collect(w, ndarray, frames)}\n"
	"    out = [a for a in collect(state, ndarray, frames)\n"
	"           if a.flags.writeable and not any(id(b) in mine for b in _bases(a, ndarray))]\n"
	"    out.sort(key=lambda a: sum(1 for _ in _bases(a, ndarray)))\n"
	"    return out\n"
	"def protect(arrays):\n"
	"    for a in arrays:\n"
	"        a.flags.writeable = False\n"
	"def release(arrays):\n"
	"    for a in arrays:\n"
	"        try:\n"
	"            a.flags.writeable = True\n"
	"        except ValueError:  # run() made its base read-only itself\n"
	"            pass\n"
	"def read_only_error(exc):\n"
	"    return isinstance(exc, ValueError) and 'read-only' in str(exc)\n"
	;

static PyObject *ns;          /* state_source's namespace; NULL: not compiled */
static uint64_t spent_ns;     /* in this process, around run(): cowrun._state_seconds() */
static int guard_on = 1;      /* cowrun.guard(False) turns it off */
static int detect_on = 1;     /* cowrun.guard(detect=False), COWRUN_PYTHON_DETECT=0 */
static PyObject *writable;    /* cowrun.writable()'s arguments, a list */
static PyObject *guarded;     /* the arrays the guard protects, owners first */

/* The detector, per process: the fingerprint this process's tasks are
 * compared with, and the first change seen, said at the next task. */
static pid_t baseline_pid;
static PyObject *baseline;
static int change_seen, change_said;
static char change[512];

/* ns[fn](args...): a new reference, or NULL with the exception pending. */
static PyObject *call_ns(const char *fn, PyObject *args)
{
	PyObject *f = ns ? PyDict_GetItemString(ns, fn) : NULL; /* borrowed */
	PyObject *r = f && args ? PyObject_CallObject(f, args) : NULL;

	if (f == NULL && !PyErr_Occurred())
		PyErr_Format(PyExc_RuntimeError, "no %s in cowrun's state helpers", fn);
	Py_XDECREF(args);
	return r;
}

/* The pending exception, in one line, after "what: ". */
static void say_helper_failed(const char *what)
{
	char text[512], where[PATH_MAX + 32];

	py_describe_error(text, sizeof text, where, sizeof where, cowrun_verbosity() > 0);
	cowrun_error("%s: %s (%s): turned off", what, text, where);
}

/* Whether obj is a value the walk does not enter (the ATOMS above). */
static int is_atom(PyObject *obj)
{
	return obj == Py_None || PyUnicode_CheckExact(obj) || PyLong_CheckExact(obj) ||
	       PyFloat_CheckExact(obj) || PyBool_Check(obj) || PyBytes_CheckExact(obj) ||
	       PyComplex_CheckExact(obj) || PyRange_Check(obj);
}

/*
 * _items(obj, limit) for the walk: the identities of the first `limit`
 * items of a list or tuple (of a dict: keys and values) as bytes, and
 * whether the first ATOM_SAMPLE (values) are all atoms: then the walk
 * enters none of them.  Read through borrowed references, so a worker
 * writes no reference count and copies no page for them; in C, as 1-2 ns
 * an item against Python's 20; the sample, as looking at each item's type
 * costs a cache miss after a task (measured on the example's 5,800
 * strings: 152 us a compare, 82 us with the sample).
 */
enum { ATOM_SAMPLE = 32 };
static PyObject *items_of(PyObject *self, PyObject *args)
{
	PyObject *obj, *key, *value;
	Py_ssize_t limit, n, per, pos = 0;
	int atoms = 1;

	(void)self;
	if (!PyArg_ParseTuple(args, "On:_items", &obj, &limit))
		return NULL;
	if (!PyDict_Check(obj) && !PyList_Check(obj) && !PyTuple_Check(obj))
		return PyErr_Format(PyExc_TypeError, "_items: a %s", Py_TYPE(obj)->tp_name);
	per = PyDict_Check(obj) ? 2 : 1;
	n = PyDict_Check(obj) ? PyDict_GET_SIZE(obj) : Py_SIZE(obj);
	n = n < limit ? n : limit;
	PyObject *bytes = PyBytes_FromStringAndSize(NULL, n * per * (Py_ssize_t)sizeof(void *));
	char *out = bytes ? PyBytes_AS_STRING(bytes) : NULL;
	for (Py_ssize_t i = 0; out && i < n; i++) {
		if (per == 2 && !PyDict_Next(obj, &pos, &key, &value))
			break; /* cannot happen: n <= its size */
		if (per == 1)
			value = PyList_Check(obj) ? PyList_GET_ITEM(obj, i) : PyTuple_GET_ITEM(obj, i);
		else
			memcpy(out + (2 * i) * sizeof(void *), &key, sizeof key);
		memcpy(out + (per * i + per - 1) * sizeof(void *), &value, sizeof value);
		atoms = atoms && (i >= ATOM_SAMPLE || is_atom(value));
	}
	return bytes ? Py_BuildValue("(NO)", bytes, atoms ? Py_True : Py_False) : NULL;
}

static PyMethodDef items_def = { "_items", items_of, METH_VARARGS, NULL };

/*
 * _array(a) for the walk: a numpy array's data pointer, shape and strides
 * as bytes, through the buffer protocol (its __array_interface__ builds a
 * dict: 1 us an array warm, several after a task); an array that exports
 * no buffer goes through _array_slow in Python.
 */
static PyObject *array_of(PyObject *self, PyObject *a)
{
	Py_buffer v;

	(void)self;
	if (PyObject_GetBuffer(a, &v, PyBUF_STRIDES) != 0) {
		PyErr_Clear();
		return call_ns("_array_slow", Py_BuildValue("(O)", a));
	}
	uintptr_t words[1 + 2 * 32];
	size_t n = 0;
	words[n++] = (uintptr_t)v.buf;
	for (int d = 0; d < v.ndim && d < 32; d++) {
		words[n++] = (uintptr_t)v.shape[d];
		words[n++] = (uintptr_t)(v.strides ? v.strides[d] : 0);
	}
	PyBuffer_Release(&v);
	return PyBytes_FromStringAndSize((const char *)words, (Py_ssize_t)(n * sizeof words[0]));
}

static PyMethodDef array_def = { "_array", array_of, METH_O, NULL };

static int compile_helpers(void)
{
	PyObject *d = PyDict_New(), *code, *items = PyCFunction_New(&items_def, NULL);
	PyObject *array = PyCFunction_New(&array_def, NULL);

	if (d == NULL || items == NULL || array == NULL ||
	    PyDict_SetItemString(d, "_items", items) != 0 ||
	    PyDict_SetItemString(d, "_array", array) != 0) {
		Py_XDECREF(items);
		Py_XDECREF(array);
		Py_XDECREF(d);
		return -1;
	}
	Py_DECREF(items);
	Py_DECREF(array);
	PyDict_SetItemString(d, "__builtins__", PyEval_GetBuiltins());
	if ((code = PyRun_String(state_source, Py_file_input, d, d)) == NULL) {
		say_helper_failed("the state's guard and detector");
		Py_DECREF(d);
		return -1;
	}
	Py_DECREF(code);
	ns = d;
	return 0;
}

/* ---- cowrun.writable() and cowrun.guard(), for the script ---- */

static PyObject *cw_writable(PyObject *self, PyObject *args)
{
	(void)self;
	if (writable == NULL && (writable = PyList_New(0)) == NULL)
		return NULL;
	for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(args); i++)
		if (PyList_Append(writable, PyTuple_GET_ITEM(args, i)) != 0)
			return NULL;
	Py_RETURN_NONE;
}

static PyObject *cw_guard(PyObject *self, PyObject *args, PyObject *kwargs)
{
	static char *kw[] = { "read_only", "detect", NULL };
	int read_only = guard_on, detect = detect_on;

	(void)self;
	if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|pp:guard", kw, &read_only, &detect))
		return NULL;
	guard_on = read_only;
	detect_on = detect;
	Py_RETURN_NONE;
}

/* The seconds this process spent on the guard and the detector, for
 * compare/bench-detector (not part of the contract). */
static PyObject *cw_state_seconds(PyObject *self, PyObject *unused)
{
	(void)self;
	(void)unused;
	return PyFloat_FromDouble((double)spent_ns / 1e9);
}

static PyMethodDef state_methods[] = {
	{ "writable", cw_writable, METH_VARARGS,
	  "writable(*arrays): in setup(), arrays (numpy, or a frame's or series' blocks) that "
	  "run() may write, and their views: kept out of the read-only guard" },
	{ "guard", (PyCFunction)(void (*)(void))cw_guard, METH_VARARGS | METH_KEYWORDS,
	  "guard(read_only=True, detect=True): in setup() or the script's top level; "
	  "read_only=False: the state's arrays stay writable in run(); detect=False: no "
	  "check that run() left the state as it found it" },
	{ "_state_seconds", cw_state_seconds, METH_NOARGS,
	  "_state_seconds(): the seconds this process spent on guard() and its detector "
	  "(for compare/bench-detector)" },
	{ NULL, NULL, 0, NULL },
};

int py_state_add_functions(PyObject *module)
{
	return PyModule_AddFunctions(module, state_methods);
}

/* ---- the parent, after setup() ---- */

/* COWRUN_PYTHON_DETECT=0 or 1 overrides the default and the script. */
static void detect_from_environment(void)
{
	const char *env = getenv("COWRUN_PYTHON_DETECT");

	if (env != NULL && (strcmp(env, "0") == 0 || strcmp(env, "1") == 0))
		detect_on = env[0] == '1';
}

void py_state_setup_done(PyObject *state)
{
	detect_from_environment();
	Py_CLEAR(guarded);
	if ((!guard_on && !detect_on) || (ns == NULL && compile_helpers() != 0))
		return;
	if (guard_on) {
		guarded = call_ns("guarded", Py_BuildValue("(OO)", state,
							   writable ? writable : Py_None));
		if (guarded == NULL)
			say_helper_failed("the read-only guard of the state's arrays");
	}
	Py_CLEAR(writable);
	if (cowrun_verbosity() > 0)
		cowrun_error("the state rule: %zd array%s of the state read-only in run()%s; "
			     "changes to the state %s", guarded ? PyList_GET_SIZE(guarded) : 0,
			     guarded && PyList_GET_SIZE(guarded) == 1 ? "" : "s",
			     guard_on ? "" : " (cowrun.guard(False))",
			     detect_on ? "checked after each task" : "not checked");
}

/* ---- around each run() ---- */

/* The arrays read-only (protect) or writable again (release). */
static void guard_set(const char *fn)
{
	PyObject *r;

	if (guarded == NULL || PyList_GET_SIZE(guarded) == 0)
		return;
	if ((r = call_ns(fn, Py_BuildValue("(O)", guarded))) == NULL) {
		say_helper_failed("the read-only guard of the state's arrays");
		Py_CLEAR(guarded);
	}
	Py_XDECREF(r);
}

/* The detector failed in this process: said once, then off. */
static void detector_failed(void)
{
	say_helper_failed("the check that run() leaves the state unchanged");
	Py_CLEAR(baseline);
	change_seen = change_said = 1;
}

/* --tasks-per-worker 1: every task runs in a fresh fork of the parent,
 * so a change run() makes reaches no other task: nothing to guard or
 * detect, and a script that must change its state simply runs. */
static int fresh_fork_per_task(void)
{
	return cowrun_tasks_per_worker() == 1;
}

void py_state_before_run(PyObject *state, size_t k, PyObject *name)
{
	uint64_t start = py_now_ns();

	if (fresh_fork_per_task())
		return;

	if (ns != NULL && detect_on && baseline_pid != getpid()) {
		/* A new process (a fork of the parent): its state is the parent's. */
		Py_CLEAR(baseline);
		baseline_pid = getpid();
		change_seen = change_said = 0;
	}
	if (change_seen && !change_said) {
		change_said = 1;
		cowrun_error("%s, and this worker's later tasks saw the change (task %zu (%s) first): "
			     "the output may depend on -j.  run() must not change the state; "
			     "--tasks-per-worker 1 starts every task from the setup's state",
			     change, k, PyUnicode_AsUTF8(name));
	}
	if (ns != NULL && detect_on && baseline == NULL && !change_seen &&
	    (baseline = call_ns("fingerprint", Py_BuildValue("(O)", state))) == NULL)
		detector_failed();
	if (guard_on)
		guard_set("protect");
	spent_ns += py_now_ns() - start;
}

/* Compare the state with the baseline: a change is kept to be said. */
static void detect_change(PyObject *state, size_t k, PyObject *name)
{
	PyObject *where = call_ns("changed", Py_BuildValue("(OO)", baseline, state));

	if (where == NULL) {
		detector_failed();
		return;
	}
	if (where != Py_None) {
		change_seen = 1;
		snprintf(change, sizeof change, "run() of task %zu (%s) changed the state at %s",
			 k, PyUnicode_AsUTF8(name), PyUnicode_Check(where) ? PyUnicode_AsUTF8(where) : "?");
	}
	Py_DECREF(where);
}

void py_state_after_run(PyObject *state, size_t k, PyObject *name)
{
	PyObject *type, *value, *tb;
	uint64_t start = py_now_ns();

	if (fresh_fork_per_task())
		return;
	PyErr_Fetch(&type, &value, &tb); /* run()'s exception survives */
	if (guard_on)
		guard_set("release");
	if (baseline != NULL && !change_seen)
		detect_change(state, k, name);
	PyErr_Restore(type, value, tb);
	spent_ns += py_now_ns() - start;
}

/* merge() in a process that runs tasks (serial mode): the state changes
 * legitimately, so the next task's baseline is taken afresh. */
void py_state_merged(void)
{
	if (baseline_pid == getpid())
		Py_CLEAR(baseline);
}

int py_state_read_only(void)
{
	PyObject *type, *value, *tb, *r = NULL;

	if (!guard_on || fresh_fork_per_task() || guarded == NULL || PyList_GET_SIZE(guarded) == 0 ||
	    !PyErr_ExceptionMatches(PyExc_ValueError))
		return 0;
	PyErr_Fetch(&type, &value, &tb);
	PyErr_NormalizeException(&type, &value, &tb);
	r = call_ns("read_only_error", Py_BuildValue("(O)", value ? value : Py_None));
	int yes = r != NULL && PyObject_IsTrue(r) == 1;
	Py_XDECREF(r);
	PyErr_Clear();
	PyErr_Restore(type, value, tb);
	return yes;
}
