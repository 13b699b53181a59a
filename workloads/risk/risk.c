/*
 * risk.c - the nightly portfolio risk workload: heavy math on shared data.
 *
 * Setup (parent, once) reads daily asset returns from a CSV or generates
 * them from a factor model, estimates the mean and the covariance matrix
 * (BLAS dsyrk and dgemm, tile by tile on the setup threads), shrinks it towards its diagonal and factors it with LAPACK
 * (LAPACKE_dpotrf): Sigma = L L'.  The portfolios come from a holdings CSV or
 * are generated.  Each task is one portfolio: a Monte Carlo of one-day P&L
 * through the shared factor (scenario returns L z, BLAS dgemm), its 95% and
 * 99% value-at-risk and 97.5% and 99% expected shortfall, and the positions
 * that contribute most to the 99% shortfall; the worker writes
 * portfolio-NNNN.txt and emits the figures.  The parent merges them in task
 * order and prints the book: the sum of standalone risks against the
 * diversified book VaR, and the book's largest risk contributors.
 *
 * risk is a bundled workload: built as risk.so (the Makefile's
 * BUNDLED_WORKLOADS), so only a run of risk loads LAPACK and OpenBLAS, not
 * every cowrun.  BLAS runs on one thread: see pin_blas_threads().  Every
 * random number of task k comes from a stream seeded from (--seed, k), and
 * every sum runs in a fixed order, so the output is byte-identical in every
 * mode and at every -j.
 *
 * This file holds the options, setup and teardown and the workload's table;
 * input.c reads the returns and holdings CSVs, generate.c makes them up,
 * model.c builds the risk model, simulate.c is a task (in a worker),
 * summary.c is merge() and the book (in the parent); util.c and rng.h are
 * helpers, and risk.h is what the files share.
 */
#define _GNU_SOURCE
#include "risk.h"

#include <cblas.h>

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- options ------------------------------------------------------------ */

static const struct risk_config risk_defaults = {
	.input = NULL,
	.holdings = NULL,
	.assets = 2000,
	.days = 5040,
	.portfolios = 64,
	.positions = 100,
	.scenarios = 4000,
	.seed = 1,
	.shrinkage = 0.05,
};

static const struct cowrun_option risk_options[] = {
	{ "input", COWRUN_OPT_INPUT, offsetof(struct risk_config, input),
	  0, 0, "FILE", "read daily returns from this CSV instead of generating them" },
	{ "holdings", COWRUN_OPT_INPUT, offsetof(struct risk_config, holdings),
	  0, 0, "FILE", "read the portfolios from this CSV instead of generating them" },
	{ "assets", COWRUN_OPT_INT, offsetof(struct risk_config, assets),
	  2, MAX_ASSETS, "N", "assets to generate" },
	{ "days", COWRUN_OPT_INT, offsetof(struct risk_config, days),
	  2, 100000, "N", "days of returns to generate" },
	{ "portfolios", COWRUN_OPT_INT, offsetof(struct risk_config, portfolios),
	  1, 100000, "N", "portfolios to generate (one task each)" },
	{ "positions", COWRUN_OPT_INT, offsetof(struct risk_config, positions),
	  1, MAX_ASSETS, "N", "average positions in a generated portfolio" },
	{ "scenarios", COWRUN_OPT_INT, offsetof(struct risk_config, scenarios),
	  100, 10000000, "N", "Monte Carlo scenarios per portfolio" },
	{ "seed", COWRUN_OPT_INT, offsetof(struct risk_config, seed),
	  0, 4294967295.0, "N", "seed of the generated data and of the simulation" },
	{ "shrinkage", COWRUN_OPT_DOUBLE, offsetof(struct risk_config, shrinkage),
	  0, 1, "X", "weight of the diagonal in the shrunk covariance" },
	{ NULL, COWRUN_OPT_END, 0, 0, 0, NULL, NULL },
};

/* ---- setup ------------------------------------------------------------------------ */

/*
 * BLAS on one thread, for the whole run, set before the first BLAS call.
 *
 * - Debian's OpenBLAS (libopenblas0-pthread) starts its thread pool when
 *   the library is loaded and reads OPENBLAS_NUM_THREADS only then: a
 *   setenv() here is too late.  cowrun sets it to 1 before it loads this
 *   object (unless the user set it), so no pool thread exists when the
 *   runner forks; openblas_set_num_threads(1) covers a user's other value.
 * - Threaded BLAS and fork(): the child has only the forking thread.
 *   OpenBLAS's atfork handler shuts the pool down before fork() and each
 *   worker starts a new pool at its first threaded call, so -j N workers
 *   would run N x CPUs BLAS threads on CPUs cores: oversubscribed, and
 *   OpenBLAS threads spin while they wait.  OpenMP mode is the same: N
 *   threads, each fanning out.  One task per core, each on one BLAS
 *   thread, keeps every core busy with no BLAS synchronisation at all.
 * - A product split across threads may sum in another order.  One BLAS
 *   thread everywhere runs the same code path in every mode, so the digits
 *   are the same.  Setup's covariance runs on the setup threads
 *   (cowrun_parallel), but as fixed tiles, each one single-threaded BLAS
 *   call (model.c): the threads change who computes a tile, not its sums.
 *
 * Which kernels OpenBLAS runs is chosen when it loads, too: Debian's 0.3.21
 * does not know CPUs newer than itself (e.g. family 6 model 207) and falls
 * back to its Prescott (SSE3) kernels.  OPENBLAS_CORETYPE=Haswell or
 * SkylakeX, set before cowrun starts, selects AVX2 or AVX-512 ones (measured
 * here: tasks 1.4x faster).  Every mode and -j agree under either choice;
 * across choices the rounding may differ in the last bits (the printed
 * figures, in whole units, were the same here with all three kernels).
 */
static void pin_blas_threads(void)
{
	openblas_set_num_threads(1);
}

/* The asset names, risk model and portfolios live in the setup arena (the
 * runner frees it); the name index and the accumulator on the heap (a
 * plan's state has neither). */
static void risk_teardown(void *state)
{
	struct risk *r = state;

	if (r == NULL)
		return;
	if (r->acc) {
		free(r->acc->result);
		free(r->acc->merged);
		free(r->acc);
	}
	free(r->by_name);
	free(r);
}

/* Returns, risk model, then portfolios and the parent's accumulator. */
static int risk_build(struct risk *r)
{
	double *d = NULL;
	int rc = -1;

	if ((r->cfg.input ? risk_load_returns(r, &d) : risk_generate_returns(r, &d)) != 0)
		goto out;
	if (risk_index_names(r) != 0 || risk_estimate(r, d) != 0)
		goto out;
	free(d);
	d = NULL;
	if ((r->cfg.holdings ? risk_load_holdings(r) : risk_generate_portfolios(r)) != 0)
		goto out;
	r->acc = calloc(1, sizeof *r->acc);
	if (r->acc == NULL || (r->acc->result = calloc(r->npf, sizeof *r->acc->result)) == NULL ||
	    (r->acc->merged = calloc(r->npf, 1)) == NULL) {
		cowrun_error("out of memory for %zu results", r->npf);
		goto out;
	}
	rc = 0;
out:
	free(r->by_name); /* it served the holdings file only */
	r->by_name = NULL;
	free(d);
	return rc;
}

/* A state holding the parsed options and nothing built: what setup and
 * plan share, so that a dry run refuses what the run refuses, in the same
 * words.  NULL after one line. */
static struct risk *new_state(int argc, char **argv)
{
	struct risk *r = calloc(1, sizeof *r);

	if (r == NULL) {
		cowrun_error("out of memory");
		return NULL;
	}
	r->cfg = risk_defaults;
	if (cowrun_parse_options(argc, argv, risk_options, &r->cfg) != 0) {
		free(r);
		return NULL;
	}
	return r;
}

static void *risk_setup(int argc, char **argv)
{
	struct risk *r = new_state(argc, argv);

	if (r == NULL)
		return NULL;
	pin_blas_threads();
	if (risk_build(r) != 0) {
		risk_teardown(r);
		return NULL;
	}
	return r;
}

/* --dry-run: generated portfolios are --portfolios, whatever the returns;
 * with --holdings they are the file's, known after reading it: NULL, no
 * message.  No BLAS call, no input read. */
static void *risk_plan(int argc, char **argv)
{
	struct risk *r = new_state(argc, argv);

	if (r == NULL || r->cfg.holdings) {
		risk_teardown(r);
		return NULL;
	}
	r->npf = (size_t)r->cfg.portfolios;
	return r;
}

static size_t risk_ntasks(const void *state)
{
	return ((const struct risk *)state)->npf;
}

static void risk_task_name(const void *state, size_t k, char *buf, size_t size)
{
	(void)state;
	snprintf(buf, size, "portfolio-%04zu.txt", k);
}

const struct cowrun_workload cowrun_workload = {
	.abi_version = COWRUN_ABI_VERSION,
	.name = "risk",
	.summary = "nightly portfolio risk: Monte Carlo VaR and ES per portfolio (LAPACK)",
	.description =
		"Setup reads daily returns (--input) or generates them from a factor model,\n"
		"estimates the covariance matrix, shrinks it towards its diagonal\n"
		"(--shrinkage) and factors it with LAPACK: Sigma = L L'.  Each task is one\n"
		"portfolio: --scenarios one-day Monte Carlo scenarios through L (BLAS dgemm),\n"
		"VaR 95% and 99%, ES 97.5% and 99%, the positions contributing most to ES 99%,\n"
		"written to portfolio-NNNN.txt.  The summary compares the sum of the\n"
		"portfolios' risks with the diversified book VaR and lists the book's largest\n"
		"contributors.  BLAS runs on one thread: the workers are the parallelism.\n"
		"\n"
		"--input CSV: a header 'date,ASSET,ASSET,...' (asset names of 1-31\n"
		"characters), then one row per day: a date label, then each asset's return\n"
		"that day as a decimal fraction above -1 (0.0123 is +1.23%).  At least 2 rows;\n"
		"--assets and --days are then ignored.\n"
		"--holdings CSV: header 'portfolio,asset,value', one row per position: a\n"
		"portfolio name (1-31 characters; its rows together), an asset (a column of\n"
		"the returns, or A0001... when generated) and a non-zero market value,\n"
		"negative for a short; --portfolios and --positions are then ignored.\n"
		"Without --holdings, portfolios are generated from --seed.",
	.flags = COWRUN_WRITES_REPORTS,
	.options = risk_options,
	.defaults = &risk_defaults,
	.setup = risk_setup,
	.ntasks = risk_ntasks,
	.task_name = risk_task_name,
	.run = risk_run,
	.merge = risk_merge,
	.finish = risk_finish,
	.teardown = risk_teardown,
	.plan = risk_plan,
};
