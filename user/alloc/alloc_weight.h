/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The unbias of byte sampling, for both ends that use it: the allocation
 * session weighs each sampled allocation (tk_alloc__weight, alloc.h), and
 * the jemalloc dump reader scales each stack's sampled counts as jeprof does
 * (tk_jeprof__unsample, jeprof.h). Both rest on the one probability here.
 */
#ifndef __TK_ALLOC_WEIGHT_H
#define __TK_ALLOC_WEIGHT_H

/*
 * The probability that byte sampling with mean @mean (a countdown drawn from
 * an exponential, as jemalloc, libtkalloc.so and the BPF sampler do) records
 * an allocation of @size bytes: 1 - exp(-size / mean), computed as
 * -expm1(-size / mean), exact where size / mean is small. @mean > 0.
 */
double tk_alloc__sampled_prob(double size, double mean);

#endif /* __TK_ALLOC_WEIGHT_H */
