/*
 * risk.h - what the files of the risk workload share: its limits, its
 * options, the shared state that setup builds and the workers read, the
 * result record, and the functions one file calls in another.  Internal to
 * risk.so: the runner sees only cowrun_workload (risk.c).
 */
#ifndef COWRUN_RISK_H
#define COWRUN_RISK_H

#include "cowrun.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define MAX_ASSETS      10000   /* the factor alone is 800 MB there */
#define NAME_MAX_LEN    31      /* bytes in an asset or portfolio name */
#define TOP_RECORD      5       /* contributors carried to the parent */
#define Z99             2.3263478740408408 /* standard normal 99% quantile */
#define NUMBUF          40      /* bytes of a formatted number (risk_fmt_amount) */

/* ---- options ------------------------------------------------------------ */

struct risk_config {
	const char *input;      /* returns CSV, or NULL to generate */
	const char *holdings;   /* holdings CSV, or NULL to generate */
	long long assets, days, portfolios, positions, scenarios, seed;
	double shrinkage;
};

/* ---- the shared state ----------------------------------------------------- */

struct position {
	size_t asset;
	double value;           /* market value; negative: short */
};

struct portfolio {
	char name[NAME_MAX_LEN + 1];
	size_t first, count;    /* its positions: pos[first .. first + count) */
};

/* One portfolio's figures: the result record.  Only 8-byte fields, so the
 * layout has no padding; native byte order. */
struct risk_result {
	int64_t portfolio, positions;
	double gross, net, pmean, pvol, mean, sd, var95, var99, es975, es99;
	int64_t top_asset[TOP_RECORD];  /* -1 past the last position */
	double top_es[TOP_RECORD];      /* contribution to ES 99% */
};
_Static_assert(sizeof(struct risk_result) == 8 * (12 + 2 * TOP_RECORD), "record layout");

/* What merge() collects: its own allocation, written only by the parent. */
struct risk_acc {
	struct risk_result *result;
	unsigned char *merged;
	size_t nmerged;
};

/* The shared state.  asset, mu, vol, chol, pf and pos are in the setup
 * arena (read-only once setup returns); by_name and acc on the heap. */
struct risk {
	struct risk_config cfg;
	size_t n, ndays;
	char (*asset)[NAME_MAX_LEN + 1];
	size_t *by_name;        /* asset indexes sorted by name: setup only */
	char first_date[NAME_MAX_LEN + 1], last_date[NAME_MAX_LEN + 1];
	double *mu;             /* mean daily return per asset */
	double *vol;            /* daily volatility per asset (shrinkage keeps it) */
	double *chol;           /* n x n column-major: lower L, strict upper zero */
	struct portfolio *pf;
	size_t npf;
	struct position *pos;
	size_t npos;
	struct risk_acc *acc;   /* written by merge(): never in the arena */
};

/* ---- setup: input.c, generate.c, model.c ---------------------------------- */

/* Reads --input: n, ndays, dates, names (arena); *data is risk_doubles(), the caller's to free. */
int risk_load_returns(struct risk *r, double **data);

/* Generated returns: as risk_load_returns(), from the factor model of --seed. */
int risk_generate_returns(struct risk *r, double **data);

/* Sorts the asset names into r->by_name (heap; the caller frees it); two alike are an error. */
int risk_index_names(struct risk *r);

/* From the returns d (left demeaned) to r->mu, r->vol and r->chol, all in the arena. */
int risk_estimate(struct risk *r, double *d);

/* Reads --holdings into r->pf and r->pos (arena), finding assets through r->by_name. */
int risk_load_holdings(struct risk *r);

/* Generated portfolios of about --positions distinct assets into r->pf and r->pos (arena). */
int risk_generate_portfolios(struct risk *r);

/* ---- the task and the parent: simulate.c, summary.c ----------------------- */

/* Worker: portfolio k's simulation, report and result record; it only reads the state. */
int risk_run(const void *state, size_t k, struct cowrun_task *task);

/* Parent, in task order: checks portfolio k's record and keeps it in r->acc. */
int risk_merge(void *state, size_t k, const void *record, size_t len);

/* Parent: the book-wide summary of the merged records, printed on out. */
int risk_finish(void *state, FILE *out);

/* ---- helpers: util.c -------------------------------------------------------- */

/* n doubles, 64-byte aligned, freed with free(); NULL if too many or out of memory. */
double *risk_doubles(size_t n);

/* v rounded to a whole unit, "-1,234,567" ("-" if not finite), in buf (NUMBUF bytes). */
const char *risk_fmt_amount(char *buf, double v);

/* part of whole as "12.34%" ("-" if whole is 0), in buf (NUMBUF bytes). */
const char *risk_fmt_pct(char *buf, double part, double whole);

/* qsort_r order of indexes into the doubles at ctx: largest first, ties by index. */
int risk_cmp_largest(const void *a, const void *b, void *ctx);

/* Where the returns came from, in one line, into buf. */
void risk_describe_source(const struct risk *r, char *buf, size_t size);

#endif
