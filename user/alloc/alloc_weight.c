// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The unbias of byte sampling (alloc_weight.h). A sampled allocation of s
 * bytes was recorded with probability p = 1 - exp(-s/M), so it stands for
 * 1/p allocations and s/p bytes: sums of these estimate the truth without
 * bias (jemalloc's prof_unbias, jeprof's AdjustSamples).
 */
#include <math.h>

#include "alloc/alloc.h"
#include "alloc/alloc_weight.h"

double tk_alloc__sampled_prob(double size, double mean)
{
	return -expm1(-(size / mean));
}

double tk_alloc__weight(uint64_t size, uint64_t mean)
{
	double p;

	if (!mean)
		return 1.0;
	/* a zero-byte request still takes a sample's countdown past an allocation */
	if (!size)
		size = 1;
	p = tk_alloc__sampled_prob((double)size, (double)mean);
	return p > 0 ? 1.0 / p : 1.0;
}
