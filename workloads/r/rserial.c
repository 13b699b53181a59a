/*
 * rserial.c - a task's result across the pipe: R_Serialize (binary,
 * version 3) into cowrun_emit() through a 64 KiB buffer in the worker,
 * R_Unserialize in the parent.
 *
 * Why the buffer: R's output stream writes an item at a time (a string's
 * length, then its bytes); for 1M strings that is 3M calls.  Measured on
 * this VM (issue 42): 1.18 s written straight to the pipe, 0.066 s in
 * 64 KiB pieces.
 *
 * Why the hook: R_Serialize writes an external pointer as if it were data
 * (serialize.c: it calls the persistence hook for external pointers, weak
 * references and environments, then writes the pointer's protected value
 * and tag, never its address): in the parent it is a NULL pointer, and a
 * connection, a database handle or a package's C object there is
 * unusable.  The hook fails such a task, naming the class.  An
 * environment (a closure, a formula, a fitted model) is written with all
 * it holds, perhaps the whole state: counted, and said above a size.
 */
#define _GNU_SOURCE
#include "rworkload.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define BUFFER_SIZE ((size_t)64 << 10)
/* A result this large that carries environments is said once per task. */
#define ENV_WARN_BYTES ((size_t)16 << 20)

struct out {
	struct cowrun_task *task;
	char *buf;
	size_t used, total;
	int failed;                /* cowrun_emit() ran out of memory */
	SEXP refused;              /* the first external pointer found */
	void *allowed;             /* data.table's inner self-reference */
	size_t environments;
	SEXP value;
};

static void flush_out(struct out *o)
{
	if (o->used > 0 && !o->failed && cowrun_emit(o->task, o->buf, o->used) != 0)
		o->failed = 1;
	o->total += o->used;
	o->used = 0;
}

static void out_bytes(R_outpstream_t stream, void *buf, int length)
{
	struct out *o = stream->data;
	const char *p = buf;
	size_t n = (size_t)length;

	while (n > 0) {
		size_t room = BUFFER_SIZE - o->used, take = n < room ? n : room;
		memcpy(o->buf + o->used, p, take);
		o->used += take;
		p += take;
		n -= take;
		if (o->used == BUFFER_SIZE)
			flush_out(o);
	}
}

static void out_char(R_outpstream_t stream, int c)
{
	char ch = (char)c;

	out_bytes(stream, &ch, 1);
}

/*
 * The persistence hook: R_NilValue writes the object as usual; a string
 * is written instead of it (a "persistent name"), which stops the walk
 * into a refused pointer.  data.table's ".internal.selfref" is an external
 * pointer whose address is R_NilValue, protecting another whose address
 * is the table: serialize() keeps both for data.table to rebuild, so they
 * pass.
 */
static SEXP persist_hook(SEXP s, SEXP data)
{
	struct out *o = R_ExternalPtrAddr(data);

	if (TYPEOF(s) == ENVSXP) {
		o->environments++;
		return R_NilValue;
	}
	if (TYPEOF(s) == EXTPTRSXP) {
		if (R_ExternalPtrAddr(s) == (void *)R_NilValue) {
			o->allowed = R_ExternalPtrProtected(s);
			return R_NilValue;
		}
		if ((void *)s == o->allowed)
			return R_NilValue;
	}
	if (o->refused == NULL)
		o->refused = s;
	return Rf_mkString("cowrun: refused");
}

/* "'class'" of x (its class(), or its type), into buf. */
static void class_name(SEXP x, char *buf, size_t size)
{
	SEXP c = Rf_getAttrib(x, R_ClassSymbol);
	size_t used = 0;

	buf[0] = '\0';
	for (R_xlen_t i = 0; TYPEOF(c) == STRSXP && i < XLENGTH(c) && used < size; i++)
		used += (size_t)snprintf(buf + used, size - used, "%s%s", i ? "/" : "",
					 CHAR(STRING_ELT(c, i)));
	if (buf[0] == '\0')
		snprintf(buf, size, "%s", Rf_type2char(TYPEOF(x)));
}

static SEXP serialize_body(void *data)
{
	struct out *o = data;
	struct R_outpstream_st stream;
	SEXP hook_data = PROTECT(R_MakeExternalPtr(o, R_NilValue, R_NilValue));

	R_InitOutPStream(&stream, (R_pstream_data_t)o, R_pstream_binary_format, 3, out_char,
			 out_bytes, persist_hook, hook_data);
	R_Serialize(o->value, &stream);
	UNPROTECT(1);
	return R_NilValue;
}

/* An error inside R_Serialize (R's memory exhausted): its message. */
static SEXP serialize_error(SEXP cond, void *data)
{
	(void)data;
	return cond;
}

static int refuse(struct cowrun_task *task, SEXP value, SEXP ptr)
{
	char top[160], inner[160];

	class_name(value, top, sizeof top);
	class_name(ptr, inner, sizeof inner);
	cowrun_task_error(task, "run() returned a '%s' holding %s ('%s'), which cannot leave the "
			  "worker: a connection, a database handle or a package's C object is "
			  "valid only in the process that made it; return the data it holds",
			  top, TYPEOF(ptr) == WEAKREFSXP ? "a weak reference" : "an external pointer",
			  inner);
	return -1;
}

int r_serialize_result(SEXP value, struct cowrun_task *task, size_t k, const char *name)
{
	struct out o = { .task = task, .value = value };

	if ((o.buf = malloc(BUFFER_SIZE)) == NULL) {
		cowrun_task_error(task, "out of memory for the result's buffer");
		return -1;
	}
	SEXP err = R_tryCatchError(serialize_body, &o, serialize_error, NULL);
	if (err == R_NilValue)
		flush_out(&o);
	free(o.buf);
	if (err != R_NilValue) {
		cowrun_task_error(task, "cannot serialize run()'s result: %s",
				  CHAR(STRING_ELT(VECTOR_ELT(err, 0), 0)));
		return -1;
	}
	if (o.refused != NULL)
		return refuse(task, value, o.refused);
	if (o.failed) {
		cowrun_task_error(task, "out of memory for the result (%zu bytes)", o.total);
		return -1;
	}
	if (o.environments > 0 && o.total > ENV_WARN_BYTES)
		cowrun_error("task %zu (%s): its result is %.1f MB and carries %zu environment%s "
			     "(a closure, a formula, a fitted model): each is serialized with all "
			     "it holds, perhaps the state; return the data alone", k, name,
			     o.total / 1e6, o.environments, o.environments == 1 ? "" : "s");
	return 0;
}

/* ---- the parent ---- */

struct in {
	const unsigned char *p;
	size_t left;
};

static void in_bytes(R_inpstream_t stream, void *buf, int length)
{
	struct in *i = stream->data;

	if ((size_t)length > i->left)
		Rf_error("the result record ends early");
	memcpy(buf, i->p, (size_t)length);
	i->p += length;
	i->left -= (size_t)length;
}

static int in_char(R_inpstream_t stream)
{
	unsigned char c;

	in_bytes(stream, &c, 1);
	return c;
}

static SEXP unserialize_body(void *data)
{
	struct in *i = data;
	struct R_inpstream_st stream;

	R_InitInPStream(&stream, (R_pstream_data_t)i, R_pstream_any_format, in_char, in_bytes,
			NULL, R_NilValue);
	SEXP v = PROTECT(R_Unserialize(&stream));
	SEXP box = Rf_allocVector(VECSXP, 1); /* told apart from a caught error */
	SET_VECTOR_ELT(box, 0, v);
	UNPROTECT(1);
	return box;
}

static SEXP unserialize_error(SEXP cond, void *data)
{
	*(SEXP *)data = cond;
	return R_NilValue;
}

SEXP r_unserialize(const void *bytes, size_t len, size_t k)
{
	struct in i = { .p = bytes, .left = len };
	SEXP cond = NULL;
	SEXP box = R_tryCatchError(unserialize_body, &i, unserialize_error, &cond);

	if (cond != NULL || TYPEOF(box) != VECSXP) {
		cowrun_error("task %zu's result cannot be read back: %s", k,
			     cond != NULL ? CHAR(STRING_ELT(VECTOR_ELT(cond, 0), 0)) : "?");
		return NULL;
	}
	return VECTOR_ELT(box, 0);
}
