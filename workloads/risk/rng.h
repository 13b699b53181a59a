/*
 * rng.h - the risk workload's random numbers: xoshiro256**, seeded with
 * splitmix64, one stream per (seed, stream) pair.  static inline: the
 * generator (generate.c) and every task (simulate.c) draw from them.
 */
#ifndef COWRUN_RISK_RNG_H
#define COWRUN_RISK_RNG_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

struct rng {
	uint64_t s[4];
};

static inline uint64_t splitmix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Stream `stream` of seed `seed`: the generator uses stream 0 (the assets),
 * 2^62 + b (block b of days) and 2^63 (the portfolios), task k the stream
 * k + 1, so no number depends on which thread or worker draws it. */
static inline void rng_seed(struct rng *r, uint64_t seed, uint64_t stream)
{
	uint64_t x = seed ^ (stream * 0xd1342543de82ef95ULL);

	for (int i = 0; i < 4; i++)
		r->s[i] = splitmix(&x);
}

static inline uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t rng_next(struct rng *r)
{
	uint64_t *s = r->s, result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return result;
}

/* Uniform in [0, 1). */
static inline double rng_uniform(struct rng *r)
{
	return (double)(rng_next(r) >> 11) * 0x1.0p-53;
}

/* n standard normals into z (Marsaglia's polar method, both values used). */
static inline void rng_normals(struct rng *r, double *z, size_t n)
{
	size_t i = 0;

	while (i < n) {
		double u = 2.0 * rng_uniform(r) - 1.0, v = 2.0 * rng_uniform(r) - 1.0;
		double q = u * u + v * v;
		if (q >= 1.0 || q == 0.0)
			continue;
		double f = sqrt(-2.0 * log(q) / q);
		z[i++] = u * f;
		if (i < n)
			z[i++] = v * f;
	}
}

#endif
