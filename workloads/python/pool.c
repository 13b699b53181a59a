/*
 * pool.c - cowrun.parallel(fn, items): fn(item) for each item in forked
 * children of the setup, min(cowrun_setup_threads(), len(items)) of them,
 * the results back in item order.  A script's setup on every core.
 *
 * Forks, not threads: Python runs on one thread, and a fork needs no
 * pickling of fn or the items (a lambda, a closure, the script's own
 * objects all work).  Each fork is made here, from C, on the Python
 * thread with the GIL held: the workload's pthread_atfork handlers
 * (interp.c) run PyOS_BeforeFork(), PyOS_AfterFork_Parent() and
 * PyOS_AfterFork_Child() once per fork, so the script's register_at_fork
 * hooks run once per child, as under os.fork().
 *
 * The parent hands out item indexes in increasing order, one at a time,
 * through a pipe per child; a child sends back each result pickled
 * (protocol 5) through a pipe of its own.  Once an item fails, no item
 * above it starts (those running are killed), while every item below it
 * still runs: the failure reported is always the lowest item's, so the
 * message is the same at every -j.  With one setup thread one child runs
 * every item in order.
 *
 * A child: stdout is stderr, random and numpy are seeded from the run's
 * seed and the item's index, cowrun.input() and nesting are refused, it
 * dies with the parent (PR_SET_PDEATHSIG), leaves SIGINT and SIGTERM at
 * their default (the parent's setup handler ends the run: issue 38), and
 * ends by flushing its stdio and _exit().  The call reaps its own
 * children (waitpid on their pids, never -1: serve's generations reap
 * with -1 around it).
 */
#define _GNU_SOURCE
#include "pyworkload.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A result's header on the child's pipe; then `len` bytes: the pickle,
 * or (failed) "line\0where\0traceback". */
struct msg {
	uint64_t index;
	uint32_t failed;
	// cppcheck-suppress unusedStructMember
	uint32_t pad;             /* explicit: no uninitialised bytes go down the pipe */
	uint64_t len;
	uint64_t ns;              /* fn(item) */
	uint64_t pickle_ns;       /* pickling the result */
};

struct child {
	pid_t pid;
	int cmd;                  /* the parent's end: item indexes */
	int res;                  /* the parent's end: results */
	Py_ssize_t item;          /* the item it runs, or -1 */
	struct msg head;
	size_t head_got;
	PyObject *payload;        /* bytes being read */
	size_t got;
};

struct pool {
	PyObject *fn, *items, *results;
	Py_ssize_t n, next, failed;   /* failed: the lowest failing item, or n */
	PyObject *failure;            /* its payload */
	unsigned nchildren;
	struct child *c;
	double *seconds;              /* fn(item), each item */
	uint64_t pickle_ns, unpickle_ns, bytes;
};

static PyObject *pickle_loads;

/* The signals that end a run, and where the parent's on_ending() finds
 * the children to kill and reap (below). */
static const int ending[] = { SIGINT, SIGTERM, SIGHUP };
static struct sigaction before[3];
/* SIGPIPE's disposition before the call: ignored during it, so that a
 * write to a child that died fails with EPIPE (its item is then reported)
 * instead of killing the run. */
static struct sigaction pipe_before;
static struct child *volatile live;
static volatile unsigned nlive;

static int write_all(int fd, const void *p, size_t n)
{
	const char *b = p;

	while (n > 0) {
		ssize_t w = write(fd, b, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		b += w;
		n -= (size_t)w;
	}
	return 0;
}

/* ---- the child ---- */

/* The item's seed: its own stream of the run's seed, apart from the
 * tasks' (cowrun_task_seed() is cowrun_seed_mix(run seed, k)). */
static uint64_t item_seed(Py_ssize_t i)
{
	return cowrun_seed_mix(cowrun_seed_mix(cowrun_run_seed(), UINT64_MAX - 1), (uint64_t)i);
}

/* The pending exception as "line\0where\0traceback" bytes (traceback
 * text only; the parent prints the lowest failure's under -v). */
static PyObject *failure_payload(const char *prefix)
{
	char what[600], where[PATH_MAX + 32], line[700];
	PyObject *type, *exc, *tb, *text = NULL;

	PyErr_Fetch(&type, &exc, &tb);
	PyErr_NormalizeException(&type, &exc, &tb);
	if (tb != NULL && exc != NULL)
		PyException_SetTraceback(exc, tb);
	PyObject *tbmod = PyImport_ImportModule("traceback");
	PyObject *lines = tbmod && exc ? PyObject_CallMethod(tbmod, "format_exception", "O", exc) : NULL;
	PyObject *empty = PyUnicode_FromString("");
	text = lines && empty ? PyUnicode_Join(empty, lines) : NULL;
	Py_XDECREF(tbmod);
	Py_XDECREF(lines);
	Py_XDECREF(empty);
	PyErr_Clear();
	PyErr_Restore(type, exc, tb);
	py_describe_error(what, sizeof what, where, sizeof where, 0);
	snprintf(line, sizeof line, "%s%s", prefix, what);
	const char *tbtext = text ? PyUnicode_AsUTF8(text) : NULL;
	PyErr_Clear();
	size_t a = strlen(line) + 1, b = strlen(where) + 1, c = tbtext ? strlen(tbtext) : 0;
	PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(a + b + c));
	if (out != NULL) {
		memcpy(PyBytes_AS_STRING(out), line, a);
		memcpy(PyBytes_AS_STRING(out) + a, where, b);
		if (c)
			memcpy(PyBytes_AS_STRING(out) + a + b, tbtext, c);
	}
	Py_XDECREF(text);
	return out;
}

/* fn(items[i]) in the child, its result sent.  0, or -1: the pipe is gone. */
static int child_item(struct pool *p, Py_ssize_t i, int res)
{
	struct msg m = { .index = (uint64_t)i };
	PyObject *payload = NULL;
	uint64_t t0 = py_now_ns();

	py_set_item_seed(item_seed(i));
	PyObject *r = py_reseed(item_seed(i)) == 0
		? PyObject_CallOneArg(p->fn, PyList_GET_ITEM(p->items, i)) : NULL;
	m.ns = py_now_ns() - t0;
	if (r == NULL) {
		payload = failure_payload("");
	} else {
		t0 = py_now_ns();
		payload = py_pickle(r);
		m.pickle_ns = py_now_ns() - t0;
		if (payload == NULL) {
			char prefix[200];
			snprintf(prefix, sizeof prefix, "fn returned a %.80s, which cannot be pickled: ",
				 Py_TYPE(r)->tp_name);
			payload = failure_payload(prefix);
			m.failed = 1;
		}
	}
	m.failed |= r == NULL;
	Py_XDECREF(r);
	py_flush_stdio();
	if (payload == NULL) {
		PyErr_Clear();
		payload = PyBytes_FromString("out of memory");
		m.failed = 1;
	}
	m.len = payload ? (uint64_t)PyBytes_GET_SIZE(payload) : 0;
	int rc = write_all(res, &m, sizeof m) == 0 && payload &&
		 write_all(res, PyBytes_AS_STRING(payload), (size_t)m.len) == 0 ? 0 : -1;
	Py_XDECREF(payload);
	return rc;
}

/* Leave a signal at its default unless it is ignored (nohup). */
static void default_signal(int sig)
{
	struct sigaction old;

	if (sigaction(sig, NULL, &old) == 0 && old.sa_handler != SIG_IGN)
		signal(sig, SIG_DFL);
}

static void __attribute__((noreturn)) child_main(struct pool *p, unsigned me, pid_t parent)
{
	int cmd = p->c[me].cmd, res = p->c[me].res;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
		_exit(1);
	default_signal(SIGINT);
	default_signal(SIGTERM);
	default_signal(SIGHUP);
	signal(SIGPIPE, SIG_DFL);
	live = NULL;
	nlive = 0;
	sigset_t block;
	sigemptyset(&block);
	for (size_t k = 0; k < 3; k++)
		sigaddset(&block, ending[k]);
	sigprocmask(SIG_UNBLOCK, &block, NULL);
	/* The other children's pipes: a write end held here would keep a
	 * sibling from ever seeing its end of work. */
	for (unsigned k = 0; k < me; k++) {
		close(p->c[k].cmd);
		close(p->c[k].res);
	}
	dup2(STDERR_FILENO, STDOUT_FILENO);
	py_set_in_child(1);
	uint64_t index;
	for (;;) {
		ssize_t r = read(cmd, &index, sizeof index);
		if (r < 0 && errno == EINTR)
			continue;
		if (r != (ssize_t)sizeof index || index >= (uint64_t)p->n ||
		    child_item(p, (Py_ssize_t)index, res) != 0)
			break;
	}
	py_flush_stdio();
	_exit(0);
}

/* ---- the parent ---- */

/* While the children run, a signal that ends the run (the runner's setup
 * handler: SIGINT, SIGTERM, SIGHUP end it at once, exit 128 + sig) first
 * kills and reaps them here, then goes on to that handler: a Ctrl-C
 * leaves no child, not even one for init to reap.  Async-signal-safe. */

static void on_ending(int sig)
{
	int saved = errno;

	for (unsigned k = 0; live && k < nlive; k++)
		if (live[k].pid > 0)
			kill(live[k].pid, SIGKILL);
	for (unsigned k = 0; live && k < nlive; k++)
		if (live[k].pid > 0)
			while (waitpid(live[k].pid, NULL, 0) < 0 && errno == EINTR)
				;
	for (size_t i = 0; i < 3; i++)
		if (ending[i] == sig) {
			sigaction(sig, &before[i], NULL);
			if (before[i].sa_handler == SIG_DFL)
				raise(sig);
			else if (before[i].sa_handler != SIG_IGN)
				before[i].sa_handler(sig);
		}
	errno = saved;
}

/* Route the ending signals through on_ending() (watch), or back. */
static void watch_signals(struct pool *p, int watch)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_ending;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	for (size_t i = 0; i < 3; i++) {
		if (watch) {
			sigaction(ending[i], NULL, &before[i]);
			if (before[i].sa_handler != SIG_IGN)
				sigaction(ending[i], &sa, NULL);
		} else {
			sigaction(ending[i], &before[i], NULL);
		}
	}
	if (watch) {
		struct sigaction ignore;

		memset(&ignore, 0, sizeof ignore);
		ignore.sa_handler = SIG_IGN;
		sigaction(SIGPIPE, &ignore, &pipe_before);
	} else {
		sigaction(SIGPIPE, &pipe_before, NULL);
	}
	nlive = watch ? p->nchildren : 0;
	live = watch ? p->c : NULL;
}

/* Fork the children, each with its two pipes (the parent's ends kept:
 * cmd to write, res to read, non-blocking).  0, or -1 with the
 * exception set (the children forked so far are the caller's to end). */
static int start_children(struct pool *p)
{
	pid_t parent = getpid();

	fflush(stdout);
	for (unsigned i = 0; i < p->nchildren; i++) {
		int cmd[2], res[2];
		if (pipe2(cmd, O_CLOEXEC) != 0)
			return PyErr_SetFromErrno(PyExc_OSError), -1;
		if (pipe2(res, O_CLOEXEC) != 0) {
			close(cmd[0]);
			close(cmd[1]);
			return PyErr_SetFromErrno(PyExc_OSError), -1;
		}
		p->c[i] = (struct child){ .pid = -1, .cmd = cmd[1], .res = res[0], .item = -1 };
		/* Blocked until its pid is kept: on_ending() kills every child. */
		sigset_t block, old;
		sigemptyset(&block);
		for (size_t k = 0; k < 3; k++)
			sigaddset(&block, ending[k]);
		sigprocmask(SIG_BLOCK, &block, &old);
		pid_t pid = fork();
		if (pid != 0) {   /* the child's stay blocked until child_main() resets them */
			p->c[i].pid = pid;
			sigprocmask(SIG_SETMASK, &old, NULL);
		}
		if (pid == 0) {
			close(cmd[1]);
			close(res[0]);
			p->c[i].cmd = cmd[0];
			p->c[i].res = res[1];
			child_main(p, i, parent);
		}
		close(cmd[0]);
		close(res[1]);
		if (pid < 0)
			return PyErr_SetFromErrno(PyExc_OSError), -1;
		fcntl(res[0], F_SETFL, O_NONBLOCK);
	}
	return 0;
}

/* Give child c the next item, if one may start: none above a failure. */
static void hand_out(struct pool *p, struct child *c)
{
	uint64_t index = (uint64_t)p->next;

	if (c->cmd >= 0 && p->next < p->n && p->next < p->failed &&
	    write_all(c->cmd, &index, sizeof index) == 0) {
		c->item = p->next++;
		return;
	}
	if (c->cmd >= 0)
		close(c->cmd);   /* its end of work: it exits */
	c->cmd = -1;
}

/* Item i failed with `payload` (a new reference, stolen): kept if it is
 * the lowest failure yet, and the children running items above it
 * stopped (their results would be dropped). */
static void item_failed(struct pool *p, Py_ssize_t i, PyObject *payload)
{
	if (i >= p->failed) {
		Py_XDECREF(payload);
		return;
	}
	p->failed = i;
	Py_XSETREF(p->failure, payload);
	for (unsigned k = 0; k < p->nchildren; k++)
		if (p->c[k].item > i && p->c[k].pid > 0)
			kill(p->c[k].pid, SIGKILL);
}

/* A whole message from child c: the result in its place. */
static void take_message(struct pool *p, struct child *c)
{
	Py_ssize_t i = (Py_ssize_t)c->head.index;
	PyObject *payload = c->payload;

	c->payload = NULL;
	c->head_got = c->got = 0;
	c->item = -1;
	if (i < 0 || i >= p->n)
		return;
	p->seconds[i] = (double)c->head.ns / 1e9;
	p->pickle_ns += c->head.pickle_ns;
	p->bytes += c->head.len;
	if (c->head.failed) {
		item_failed(p, i, payload);
		payload = NULL;   /* item_failed() took it */
	} else if (i < p->failed) {
		uint64_t t0 = py_now_ns();
		PyObject *r = PyObject_CallOneArg(pickle_loads, payload);
		p->unpickle_ns += py_now_ns() - t0;
		if (r == NULL)
			item_failed(p, i, failure_payload("its result could not be unpickled here: "));
		else
			PyList_SetItem(p->results, i, r); /* steals r */
	}
	Py_XDECREF(payload);
	hand_out(p, c);
}

/* Read what child c has sent.  Returns 1 at its end (EOF), else 0. */
static int read_child(struct pool *p, struct child *c)
{
	for (;;) {
		char *to;
		size_t want;
		if (c->head_got < sizeof c->head) {
			to = (char *)&c->head + c->head_got;
			want = sizeof c->head - c->head_got;
		} else {
			to = PyBytes_AS_STRING(c->payload) + c->got;
			want = (size_t)c->head.len - c->got;
		}
		ssize_t r = want ? read(c->res, to, want) : 0;
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN)
			return 0;
		if (r <= 0 && want > 0)
			return 1;
		if (c->head_got < sizeof c->head) {
			c->head_got += (size_t)r;
			if (c->head_got == sizeof c->head &&
			    (c->payload = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)c->head.len)) == NULL)
				return PyErr_Clear(), 1;
		} else {
			c->got += (size_t)r;
		}
		if (c->head_got == sizeof c->head && c->got == c->head.len)
			take_message(p, c);
	}
}

/* Child c's pipe ended: reap it; an item it was running failed. */
static void child_ended(struct pool *p, struct child *c)
{
	int st = 0;

	close(c->res);
	c->res = -1;
	if (c->cmd >= 0)
		close(c->cmd);
	c->cmd = -1;
	while (waitpid(c->pid, &st, 0) < 0 && errno == EINTR)
		;
	c->pid = -1;
	Py_CLEAR(c->payload);
	if (c->item < 0)
		return;
	char line[200];
	if (WIFSIGNALED(st))
		snprintf(line, sizeof line, "its child was killed by signal %d (%s)%c%c",
			 WTERMSIG(st), strsignal(WTERMSIG(st)), 0, 0);
	else
		snprintf(line, sizeof line, "its child exited with status %d before it returned "
			 "(os._exit()?)%c%c", WEXITSTATUS(st), 0, 0);
	item_failed(p, c->item, PyBytes_FromStringAndSize(line, (Py_ssize_t)(strlen(line) + 2)));
	c->item = -1;
}

/* Until every child has ended: read, hand out, reap.  0, or -1 after a
 * Python error of the poll itself. */
static int drive(struct pool *p)
{
	struct pollfd pf[p->nchildren];
	unsigned alive = p->nchildren;

	for (unsigned k = 0; k < p->nchildren; k++)
		hand_out(p, &p->c[k]);
	while (alive > 0) {
		nfds_t n = 0;
		unsigned who[p->nchildren];
		for (unsigned k = 0; k < p->nchildren; k++)
			if (p->c[k].res >= 0) {
				pf[n] = (struct pollfd){ .fd = p->c[k].res, .events = POLLIN };
				who[n++] = k;
			}
		int ready;
		Py_BEGIN_ALLOW_THREADS   /* a thread allow_threads_at_fork() let through runs on */
		ready = poll(pf, n, -1);
		Py_END_ALLOW_THREADS
		if (ready < 0) {
			if (errno == EINTR)
				continue;
			PyErr_SetFromErrno(PyExc_OSError);
			return -1;
		}
		for (nfds_t j = 0; j < n; j++)
			if (pf[j].revents && read_child(p, &p->c[who[j]])) {
				child_ended(p, &p->c[who[j]]);
				alive--;
			}
	}
	return 0;
}

/* The children left (an error before drive() ended them): killed, reaped. */
static void end_children(struct pool *p)
{
	for (unsigned k = 0; k < p->nchildren; k++) {
		struct child *c = &p->c[k];
		if (c->pid > 0) {
			kill(c->pid, SIGKILL);
			while (waitpid(c->pid, NULL, 0) < 0 && errno == EINTR)
				;
		}
		if (c->cmd >= 0)
			close(c->cmd);
		if (c->res >= 0)
			close(c->res);
		Py_CLEAR(c->payload);
		c->pid = c->cmd = c->res = -1;
	}
}

/* The item named for a message: a CSV part by its file and first line. */
static void item_name(PyObject *item, Py_ssize_t i, char *buf, size_t size)
{
	char where[PATH_MAX + 64];

	if (py_csv_part_where(item, where, sizeof where))
		snprintf(buf, size, "item %zd (%s)", i, where);
	else
		snprintf(buf, size, "item %zd", i);
}

/* The lowest failure as the call's exception: one line, the same at
 * every -j; its traceback first under -v. */
static void raise_failure(struct pool *p)
{
	const char *line = PyBytes_AS_STRING(p->failure);
	size_t len = (size_t)PyBytes_GET_SIZE(p->failure), a = strnlen(line, len);
	const char *where = a + 1 < len ? line + a + 1 : "";
	size_t b = a + 1 < len ? strnlen(where, len - a - 1) : 0;
	const char *tb = a + b + 2 < len ? where + b + 1 : "";
	char name[PATH_MAX + 96];

	item_name(PyList_GET_ITEM(p->items, p->failed), p->failed, name, sizeof name);
	if (cowrun_verbosity() > 0 && tb[0] != '\0')
		fprintf(stderr, "%.*s", (int)(len - (size_t)(tb - line)), tb);
	PyErr_Format(py_parallel_error(), "cowrun.parallel(): %s failed: %s%s%s%s", name, line,
		     where[0] ? " (" : "", where, where[0] ? ")" : "");
}

/* -v: the children, and each item's time. */
static void say_items(const struct pool *p, uint64_t ns)
{
	char times[2048];
	size_t used = 0;

	for (Py_ssize_t i = 0; i < p->n && used < sizeof times; i++)
		used += (size_t)(p->seconds[i] < 0
			? snprintf(times + used, sizeof times - used, "%s-", i ? " " : "")
			: snprintf(times + used, sizeof times - used, "%s%.3f", i ? " " : "",
				   p->seconds[i]));
	cowrun_error("cowrun.parallel(): %zd item%s on %u child process%s in %.3f s; each item "
		     "(s, - not run): %s; results %.1f MB pickled (%.3f s in the children, %.3f s unpickling "
		     "here)", p->n, p->n == 1 ? "" : "s", p->nchildren, p->nchildren == 1 ? "" : "es",
		     ns / 1e9, times, p->bytes / 1e6, p->pickle_ns / 1e9, p->unpickle_ns / 1e9);
}

static int pool_init(struct pool *p, PyObject *fn, PyObject *items)
{
	if (pickle_loads == NULL) {
		PyObject *m = PyImport_ImportModule("pickle");
		pickle_loads = m ? PyObject_GetAttrString(m, "loads") : NULL;
		Py_XDECREF(m);
		if (pickle_loads == NULL)
			return -1;
	}
	if (!PyCallable_Check(fn)) {
		PyErr_Format(PyExc_TypeError, "cowrun.parallel(fn, items): fn is a %s, not callable",
			     Py_TYPE(fn)->tp_name);
		return -1;
	}
	p->fn = fn;
	if ((p->items = PySequence_List(items)) == NULL)
		return -1;
	p->n = p->failed = PyList_GET_SIZE(p->items);
	unsigned threads = cowrun_setup_threads();
	p->nchildren = (size_t)p->n < threads ? (unsigned)p->n : threads;
	p->results = PyList_New(p->n);
	p->c = calloc(p->nchildren ? p->nchildren : 1, sizeof *p->c);
	p->seconds = calloc(p->n ? (size_t)p->n : 1, sizeof *p->seconds);
	if (p->results == NULL || p->c == NULL || p->seconds == NULL) {
		PyErr_NoMemory();
		return -1;
	}
	for (Py_ssize_t i = 0; i < p->n; i++) {
		PyList_SET_ITEM(p->results, i, Py_NewRef(Py_None));
		p->seconds[i] = -1;   /* not run: "-" under -v */
	}
	for (unsigned k = 0; k < p->nchildren; k++)
		p->c[k] = (struct child){ .pid = -1, .cmd = -1, .res = -1, .item = -1 };
	return 0;
}

/* Threads alive now would be missing from every child, a lock one holds
 * held there: refused as at the runner's forks (unless allowed). */
static int threads_refused(void)
{
	char names[512];
	Py_ssize_t n = py_thread_names(names, sizeof names);

	if (n <= 0 || py_threads_allowed())
		return 0;
	PyErr_Format(PyExc_RuntimeError, "cowrun.parallel(): %zd thread%s alive: %s: a fork copies "
		     "only this one, and a lock %s holds would stay held in every child; end %s "
		     "first (thread.join(), executor.shutdown()), or call "
		     "cowrun.allow_threads_at_fork() if %s no lock", n, n == 1 ? "" : "s", names,
		     n == 1 ? "it" : "one", n == 1 ? "it" : "them", n == 1 ? "it holds" : "they hold");
	return -1;
}

PyObject *py_parallel(PyObject *self, PyObject *args)
{
	PyObject *fn, *items, *r = NULL;
	struct pool p = { 0 };

	(void)self;
	if (!PyArg_ParseTuple(args, "OO:parallel", &fn, &items))
		return NULL;
	if (py_parallel_refused("parallel") != 0 || threads_refused() != 0 ||
	    pool_init(&p, fn, items) != 0)
		goto out;
	uint64_t t0 = py_now_ns();
	watch_signals(&p, 1);
	int failed = p.n > 0 && (start_children(&p) != 0 || drive(&p) != 0);
	if (failed)
		end_children(&p);
	watch_signals(&p, 0);
	if (failed)
		goto out;
	cowrun_setup_forked(p.nchildren);
	if (cowrun_verbosity() > 0 && p.n > 0)
		say_items(&p, py_now_ns() - t0);
	if (p.failure != NULL)
		raise_failure(&p);
	else
		r = Py_NewRef(p.results);
out:
	Py_XDECREF(p.items);
	Py_XDECREF(p.results);
	Py_XDECREF(p.failure);
	free(p.c);
	free(p.seconds);
	return r;
}
