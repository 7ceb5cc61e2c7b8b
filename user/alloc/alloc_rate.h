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

struct tk_alloc_rate {
	double ms;			/* counted for */
	uint64_t alloc_calls;		/* counted: malloc family */
	uint64_t free_calls;		/* counted: free family */
	double alloc_per_s;		/* estimated untraced rates (see lower_bound) */
	double free_per_s;
	double uprobe_ns;		/* one uprobe hit here: the mean of the two below */
	double emulated_ns;		/* on an instruction the kernel emulates (a push) */
	double stepped_ns;		/* on one it single-steps out of line */
	double alloc_hit_ns;		/* what a hit costs on the allocating functions here */
	double free_hit_ns;		/* ... and on free */
	bool lower_bound;		/* counting took over half the process's time: rates
					   are lower bounds, slowdowns too */
	bool sessions;			/* uprobe sessions: sampled mode traps the return
					   of sampled calls only */
	/*
	 * Expected extra CPU time per second of the process's run, by mode (0.25:
	 * a quarter more), from alloc_hit_ns and free_hit_ns times the traps each
	 * mode places per call: sampled (with uprobes) 1 per call, plus 1 per allocation without
	 * sessions; full 2 per allocation and 1 per free; growth ~0.
	 */
	double slowdown[TK_ALLOC_MODE_GROWTH + 1];
	double traps_per_alloc[TK_ALLOC_MODE_GROWTH + 1];
	double traps_per_free[TK_ALLOC_MODE_GROWTH + 1];
};

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
