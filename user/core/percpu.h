/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Per-CPU counters as the BPF programs keep them: a [cpus][counters] array of
 * u64 in the skeleton's .bss (each CPU writes its own row, no atomics), summed
 * here when user space reads them.
 */
#ifndef __TK_CORE_PERCPU_H
#define __TK_CORE_PERCPU_H

#include <stdint.h>
#include <string.h>

/* @out[i] = the sum over @nr_cpus rows of @nr counters at @rows. */
static inline void tk_percpu__sum(const void *rows, int nr_cpus, int nr, uint64_t *out)
{
	const uint64_t *v = rows;
	int cpu, i;

	memset(out, 0, nr * sizeof(*out));
	for (cpu = 0; cpu < nr_cpus; cpu++)
		for (i = 0; i < nr; i++)
			out[i] += v[(size_t)cpu * nr + i];
}

#endif /* __TK_CORE_PERCPU_H */
