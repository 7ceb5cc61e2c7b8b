/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What hooking a running process's allocator would cost it, measured before
 * doing it: its allocator call rate (counted with uprobes for a moment) and
 * the cost of one uprobe hit on this machine (calibrated on a function of
 * our own), so the CLI can print the expected slowdown first.
 */
#ifndef __TK_ALLOC_RATE_H
#define __TK_ALLOC_RATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "alloc/alloc.h"

/* struct tk_alloc_rate: include/tracekit/alloc.h */


/*
 * Count the allocator calls of @pid for @ms milliseconds (its allocator as
 * procinfo finds it; @caps->proc is used when @caps->pid is @pid) and
 * calibrate the uprobe cost. Returns 0, or a negative errno with @why set.
 */
int tk_alloc__measure_rate(int pid, const struct tk_caps *caps, int ms, struct tk_alloc_rate *out,
			   char *why, size_t why_sz);

/* The cost of one uprobe hit in ns, measured on a function of tracekit's own. */
int tk_alloc__uprobe_cost(double *ns);

#endif /* __TK_ALLOC_RATE_H */
