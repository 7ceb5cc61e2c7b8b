// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The hash functions that are loops (hash.h has the rest). */
#include "core/hash.h"

uint64_t tk_hash__bytes(uint64_t h, const void *data, size_t len)
{
	const unsigned char *b = data;
	uint64_t f = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < len; i++) {
		f ^= b[i];
		f *= 0x100000001b3ULL;
	}
	return tk_hash__u64(h, f ^ len);
}

/*
 * xxh64's round on four lanes, so the multiplies of neighbouring words
 * overlap, and its join; the seed enters one lane only, so that with fewer
 * than four words (the other lanes constant) nothing of it is lost. A word
 * left over after the blocks of four goes into the first lane and the lanes
 * turn, so the next segment goes on where this one stopped.
 */
#define P1 0x9e3779b185ebca87ULL
#define P2 0xc2b2ae3d27d4eb4fULL

static inline uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t round64(uint64_t acc, uint64_t v)
{
	acc += v * P2;
	return rotl64(acc, 31) * P1;
}

uint64_t tk_hash__words2(uint64_t h, const uint64_t *a, size_t na, const uint64_t *b, size_t nb)
{
	/* in scalars, not an array: the lanes stay in registers */
	uint64_t v0 = h + P1 + P2, v1 = P2, v2 = 0, v3 = -P1, t;
	const uint64_t *w = a;
	size_t i, n = na;
	int seg;

	for (seg = 0; seg < 2; seg++, w = b, n = nb) {
		for (i = 0; i + 4 <= n; i += 4) {
			v0 = round64(v0, w[i]);
			v1 = round64(v1, w[i + 1]);
			v2 = round64(v2, w[i + 2]);
			v3 = round64(v3, w[i + 3]);
		}
		for (; i < n; i++) {
			t = round64(v0, w[i]);
			v0 = v1;
			v1 = v2;
			v2 = v3;
			v3 = t;
		}
	}
	/* xxh64's join (its merge rounds left out: the mix below avalanches) */
	h = rotl64(v0, 1) + rotl64(v1, 7) + rotl64(v2, 12) + rotl64(v3, 18);
	/* the lengths: a run of zero words is not the empty run, nor a split elsewhere */
	return tk_hash__u64(h, (uint64_t)na << 32 ^ nb);
}
