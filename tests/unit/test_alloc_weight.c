// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The unbias of byte sampling, shared by the allocation session and the
 * jemalloc dump reader (alloc_weight.h): the sampling probability at its
 * known points and limits, exact for tiny sizes; the session's weight is its
 * inverse (1 without sampling, a zero-byte request counted as one byte);
 * jeprof's scaling of a stack's counts is the weight of the stack's mean
 * size applied to the counts, rounded; and the weights of a simulated
 * sampler's records add up to what was allocated.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <math.h>
#include <stdlib.h>

#include "alloc/alloc.h"
#include "alloc/alloc_weight.h"
#include "alloc/jeprof.h"

static void test_probability(void **state)
{
	const double M = 524288;
	double prev = 0, s;

	assert_true(fabs(tk_alloc__sampled_prob(M, M) - (1 - exp(-1))) < 1e-15);
	/* tiny sizes: s/M to full precision, where 1 - exp(-x) would lose digits */
	assert_true(fabs(tk_alloc__sampled_prob(1, M) / (1 / M) - 1) < 1e-6);
	assert_true(tk_alloc__sampled_prob(1, 1e18) > 0);
	assert_true(fabs(tk_alloc__sampled_prob(1, 1e18) * 1e18 - 1) < 1e-12);
	/* huge sizes are always sampled */
	assert_true(tk_alloc__sampled_prob(64 * M, M) == 1.0);
	/* grows with the size, within (0, 1] */
	for (s = 1; s < 100 * M; s *= 1.5) {
		double p = tk_alloc__sampled_prob(s, M);

		assert_true(prev < 1.0 ? p > prev : p == 1.0);
		assert_true(p <= 1.0);
		prev = p;
	}
}

static void test_weight_is_inverse(void **state)
{
	const uint64_t M = 65536;
	uint64_t s;

	for (s = 1; s < 1u << 24; s = s * 3 + 1)
		assert_true(tk_alloc__weight(s, M) == 1.0 / tk_alloc__sampled_prob(s, M));
	/* no sampling: every allocation was recorded */
	assert_true(tk_alloc__weight(123, 0) == 1.0);
	/* a zero-byte request weighs as one byte */
	assert_true(tk_alloc__weight(0, M) == tk_alloc__weight(1, M));
	/* always sampled: weight 1 */
	assert_true(tk_alloc__weight(1ULL << 40, M) == 1.0);
}

/* jeprof's unsampling is the weight of the pair's mean size, times its counts. */
static void test_jeprof_uses_the_weight(void **state)
{
	static const struct {
		uint64_t period, objs, bytes;
	} pairs[] = {
		{ 524288, 1, 48 }, { 524288, 10, 480 }, { 524288, 3, 3 * 1048576 },
		{ 4096, 7, 7 * 100 }, { 1 << 20, 1000, 1000 * 64 }, { 524288, 2, 2 * 524288 },
	};
	size_t i;

	for (i = 0; i < sizeof(pairs) / sizeof(pairs[0]); i++) {
		double w = tk_alloc__weight(pairs[i].bytes / pairs[i].objs, pairs[i].period);
		int64_t o, b;

		assert_int_equal(tk_jeprof__unsample(pairs[i].period, pairs[i].objs, pairs[i].bytes,
						     &o, &b), 0);
		assert_int_equal(o, (int64_t)(pairs[i].objs * w + 0.5));
		assert_int_equal(b, (int64_t)(pairs[i].bytes * w + 0.5));
	}
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static double uniform01(void)
{
	/* splitmix64: a fixed sequence, so the sum below cannot flake */
	uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	z ^= z >> 31;
	return ((z >> 11) + 1) * (1.0 / 9007199254740993.0);
}

/*
 * A sampler as jemalloc's: a countdown drawn from an exponential with mean M,
 * an allocation that crosses it is recorded. The weights of what was
 * recorded add up to the allocations and bytes made, within 2 % (sizes
 * that are sampled often enough for that: a 16-byte allocation is recorded
 * once in 4096 under this mean).
 */
static void test_simulated_sampler(void **state)
{
	const uint64_t M = 65536, sizes[] = { 4096, 16384, 100000 };
	double left = -log(uniform01()) * M, objs = 0, bytes = 0, true_bytes = 0;
	size_t i, n = 300000;

	for (i = 0; i < n; i++) {
		uint64_t size = sizes[i % 3];

		true_bytes += size;
		left -= size;
		if (left > 0)
			continue;
		while (left <= 0)
			left += -log(uniform01()) * M;
		objs += tk_alloc__weight(size, M);
		bytes += tk_alloc__weight(size, M) * size;
	}
	assert_true(fabs(objs / n - 1) < 0.02);
	assert_true(fabs(bytes / true_bytes - 1) < 0.02);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_probability),
		cmocka_unit_test(test_weight_is_inverse),
		cmocka_unit_test(test_jeprof_uses_the_weight),
		cmocka_unit_test(test_simulated_sampler),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
