/*
 * model.c - the risk model, built in setup: each asset's mean return and
 * volatility, the sample covariance (BLAS dsyrk and dgemm on fixed tiles,
 * on the setup threads), shrunk towards its diagonal, and its Cholesky
 * factor L (LAPACK dpotrf) that every task simulates through.
 */
#define _GNU_SOURCE
#include "risk.h"

#include <cblas.h>
#include <lapacke.h>

#include <math.h>
#include <string.h>

/* ---- the risk model: covariance and its Cholesky factor ------------------------- */

/* mu = the mean return of each asset; then d holds deviations from it.
 * Fixed loop order: the same sums in every run. */
static void demean(double *d, size_t n, size_t days, double *mu)
{
	memset(mu, 0, n * sizeof *mu);
	for (size_t t = 0; t < days; t++)
		for (size_t a = 0; a < n; a++)
			mu[a] += d[t * n + a];
	for (size_t a = 0; a < n; a++)
		mu[a] /= (double)days;
	for (size_t t = 0; t < days; t++)
		for (size_t a = 0; a < n; a++)
			d[t * n + a] -= mu[a];
}

/* Every asset's returns must vary: a constant one has no variance, and its
 * demeaned sum is rounding noise, not zero.  Checked exactly, on the data. */
static int check_varies(const struct risk *r, const double *d)
{
	for (size_t a = 0; a < r->n; a++) {
		size_t t = 1;
		while (t < r->ndays && d[t * r->n + a] == d[a])
			t++;
		if (t == r->ndays) {
			cowrun_error("%s: asset %s has the same return every day: no risk model can use it",
				     r->cfg.input ? r->cfg.input : "generated data", r->asset[a]);
			return -1;
		}
	}
	return 0;
}

/* Covariance tiles: TILE x TILE blocks of the lower triangle (smaller at
 * the edges), one cowrun_parallel() block each.  The tiling depends only
 * on the number of assets, and each tile is one single-threaded BLAS call
 * (OpenBLAS built with pthreads is safe to call from several threads at
 * once with one BLAS thread each, its buffers taken under a lock), so
 * every element is summed by the same code in the same order at every
 * thread count. */
#define TILE 128

struct cov {
	struct risk *r;
	const double *d;        /* demeaned returns: n x ndays, column-major */
	size_t ntiles;          /* tiles per side */
};

/* Setup thread: tile `block` of the covariance, numbered down each column
 * of tiles in turn: (0,0), (1,0) .. (nt-1,0), (1,1), ... */
static int cov_tile(void *ctx, size_t block, unsigned thread)
{
	const struct cov *c = ctx;
	size_t n = c->r->n, days = c->r->ndays, ti = 0, tj = 0;
	double alpha = 1.0 / (double)(days - 1);

	(void)thread;
	while (block >= c->ntiles - tj)
		block -= c->ntiles - tj++;
	ti = tj + block;
	size_t i0 = ti * TILE, j0 = tj * TILE;
	size_t rows = n - i0 < TILE ? n - i0 : TILE, cols = n - j0 < TILE ? n - j0 : TILE;
	double *out = c->r->chol + i0 + j0 * n;
	if (ti == tj)
		cblas_dsyrk(CblasColMajor, CblasLower, CblasNoTrans, (blasint)rows,
			    (blasint)days, alpha, c->d + i0, (blasint)n, 0.0, out, (blasint)n);
	else
		cblas_dgemm(CblasColMajor, CblasNoTrans, CblasTrans, (blasint)rows,
			    (blasint)cols, (blasint)days, alpha, c->d + i0, (blasint)n,
			    c->d + j0, (blasint)n, 0.0, out, (blasint)n);
	return 0;
}

/* The sample covariance of the demeaned d into the lower triangle of
 * r->chol (the strict upper triangle stays zero). */
static void covariance(struct risk *r, const double *d)
{
	struct cov c = { r, d, (r->n + TILE - 1) / TILE };

	cowrun_parallel(c.ntiles * (c.ntiles + 1) / 2, cov_tile, &c);
}

/* Shrink the covariance (lower triangle) towards its diagonal, keeping
 * the variances: with fewer days than assets the sample covariance is
 * singular, and a shrunk one is positive definite. */
static int shrink(struct risk *r)
{
	size_t n = r->n;
	double keep = 1.0 - r->cfg.shrinkage;

	for (size_t c = 0; c < n; c++) {
		double var = r->chol[c + c * n];
		if (!(var > 0.0)) {
			cowrun_error("asset %s: its returns never vary: no risk model can use it",
				     r->asset[c]);
			return -1;
		}
		r->vol[c] = sqrt(var);
		for (size_t row = c + 1; row < n; row++)
			r->chol[row + c * n] *= keep;
	}
	return 0;
}

/* Sigma = L L' with LAPACK; then zero the strict upper triangle, which
 * dpotrf leaves as it was, so L can go to dgemm as a full matrix. */
static int factor(struct risk *r)
{
	size_t n = r->n;
	lapack_int info = LAPACKE_dpotrf(LAPACK_COL_MAJOR, 'L', (lapack_int)n, r->chol,
					 (lapack_int)n);

	if (info > 0) {
		cowrun_error("the covariance matrix is not positive definite (at asset %s, column %d): "
			     "give more days than assets, or a --shrinkage above 0",
			     r->asset[info - 1], (int)info);
		return -1;
	}
	if (info < 0) {
		cowrun_error("LAPACKE_dpotrf refused argument %d", (int)-info);
		return -1;
	}
	for (size_t c = 1; c < n; c++)
		memset(r->chol + c * n, 0, c * sizeof *r->chol);
	return 0;
}

/* From the returns d (consumed: left demeaned) to mu, vol and the factor. */
int risk_estimate(struct risk *r, double *d)
{
	size_t n = r->n;

	r->mu = cowrun_alloc_aligned(n * sizeof *r->mu, 64);
	r->vol = cowrun_alloc_aligned(n * sizeof *r->vol, 64);
	r->chol = cowrun_alloc_aligned(n * n * sizeof *r->chol, 64);
	if (r->mu == NULL || r->vol == NULL || r->chol == NULL) {
		cowrun_error("out of memory for the covariance of %zu assets", n);
		return -1;
	}
	if (check_varies(r, d) != 0)
		return -1;
	demean(d, n, r->ndays, r->mu);
	covariance(r, d);
	if (shrink(r) != 0)
		return -1;
	return factor(r);
}
