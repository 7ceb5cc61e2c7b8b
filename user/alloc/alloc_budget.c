// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The cost budget of a running process's allocation profile (alloc_budget.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "alloc/alloc_budget.h"

void tk_alloc_budget__plan(struct tk_alloc_budget *b, double budget, const struct tk_caps *caps,
			   struct tk_alloc_opts *o)
{
	struct tk_alloc_rate rate = { .sz = TK_OPTS_SZ(tk_alloc_rate) };
	char why[512] = "";
	int err;

	memset(b, 0, sizeof(*b));
	b->budget = budget;
	b->forecast = -1;
	o->growth_faults_only = true;
	if (o->mode == TK_ALLOC_MODE_GROWTH) {
		snprintf(b->plan, sizeof(b->plan), "growth (page faults), as asked");
		return;
	}
	err = tk_alloc__measure(o->pid, caps, TK_ALLOC_BUDGET_MEASURE_MS, &rate, why, sizeof(why));
	if (err) {
		o->mode = TK_ALLOC_MODE_GROWTH;
		snprintf(b->plan, sizeof(b->plan), "growth (page faults): the allocation rate "
			 "could not be measured (%.200s)", why[0] ? why : strerror(-err));
		return;
	}
	b->forecast = rate.slowdown[o->mode];
	if (!rate.lower_bound && b->forecast <= budget) {
		b->guarded = true;
		b->hit_ns = (rate.alloc_hit_ns + rate.free_hit_ns) / 2;
		snprintf(b->plan, sizeof(b->plan), "%s: %.0f allocations/s, forecast %.2f %% "
			 "slowdown, within the %.1f %% budget",
			 o->mode == TK_ALLOC_MODE_FULL ? "every allocation" : "sampled",
			 rate.alloc_per_s, 100 * b->forecast, 100 * budget);
		return;
	}
	snprintf(b->plan, sizeof(b->plan), "growth (page faults): %s %s%.0f allocations/s would "
		 "cost %s%.1f %%, over the %.1f %% budget",
		 o->mode == TK_ALLOC_MODE_FULL ? "tracing" : "sampling",
		 rate.lower_bound ? "at least " : "", rate.alloc_per_s,
		 rate.lower_bound ? "more than " : "", 100 * b->forecast, 100 * budget);
	o->mode = TK_ALLOC_MODE_GROWTH;
}

bool tk_alloc_budget__check(struct tk_alloc_budget *b, struct tk_session *s, double elapsed)
{
	double dt = elapsed - b->t;
	uint64_t traps;

	if (!b->guarded || b->ended[0] || dt < 0.4)
		return false;
	traps = tk_session__traps(s);
	/* traps a second times what each costs: the share of a CPU the process loses */
	b->cost = (double)(traps - b->calls) / dt * b->hit_ns * 1e-9;
	b->calls = traps;
	b->t = elapsed;
	b->over = b->cost > b->budget ? b->over + 1 : 0;
	if (b->over < 2)
		return false;
	snprintf(b->ended, sizeof(b->ended), "ended early, at %.1f s: its allocator calls rose to "
		 "%.0f a second, and tracing them cost about %.1f %%, over the %.1f %% budget; "
		 "the profile holds what was taken until then", elapsed,
		 b->cost / (b->hit_ns * 1e-9), 100 * b->cost, 100 * b->budget);
	tk_session__stop(s);
	return true;
}
