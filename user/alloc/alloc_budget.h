/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A budget for a running process's allocation profile, shared by `tracekit
 * record` (-p) and `tracekit serve` (/debug/pprof/heap): before the session
 * opens, its allocator calls are counted for a moment (tk_alloc__measure) and
 * the sampled mode is taken only when the forecast of its cost fits the budget,
 * else growth (page faults: about free). While a sampled profile runs, the
 * guard compares the calls its uprobes trapped, times what a trap costs here,
 * with the budget, and ends the profile (keeping what it has) after two checks
 * over it in a row: the forecast may have been taken at a quiet moment.
 */
#ifndef __TK_ALLOC_BUDGET_H
#define __TK_ALLOC_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#include "tracekit/tracekit.h"

#define TK_ALLOC_BUDGET_MEASURE_MS 300

struct tk_alloc_budget {
	double budget;		/* the slowdown allowed (0.02: 2 % of a CPU) */
	double forecast;	/* sampled mode's forecast slowdown; -1: not measured */
	double hit_ns;		/* what one trap costs here (measured) */
	bool guarded;		/* sampled within the budget: tk_alloc_budget__check */
	char plan[320];		/* what was chosen and why, in words */
	char ended[320];	/* "" or why the profile was ended early */
	/* the guard's state */
	uint64_t calls;		/* traps at the last check */
	double t;		/* the last check's time (seconds into the run) */
	double cost;		/* the share of a CPU the traps cost at the last check */
	int over;		/* checks over the budget in a row */
};

/*
 * Choose @o->mode for the running process @pid (with @o->pid set) within
 * @budget: sampled when the forecast fits (the guard then runs), else growth by
 * page faults only (@o->growth_faults_only: the raw_syscalls tracepoints that
 * brk and mmap need would tax every system call of the machine). Growth too
 * when the rate cannot be measured. @caps: the snapshot (NULL: one is taken).
 * Fills @b; never fails. With an @o->mode of growth asked for, only says so.
 */
void tk_alloc_budget__plan(struct tk_alloc_budget *b, double budget, const struct tk_caps *caps,
			   struct tk_alloc_opts *o);

/*
 * The guard, on the session's own thread about twice a second (an on_tick
 * callback): true when it ended the session just now (@b->ended says why).
 */
bool tk_alloc_budget__check(struct tk_alloc_budget *b, struct tk_session *s, double elapsed);

#endif /* __TK_ALLOC_BUDGET_H */
