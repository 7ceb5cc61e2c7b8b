/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Inside a NUMA migration session: what numa_session.c shares with its backends. */
#ifndef __TK_NUMA_INT_H
#define __TK_NUMA_INT_H

#include "numa/numa_report.h"
#include "sym/symbolize.h"

struct tk_numa;

struct tk_numa_backend {
	const char *name;			/* "bpf", "vmstat" */
	/* Prepare; @why gets the reason of a failure. */
	int (*open)(struct tk_numa *n, char *why, size_t why_sz);
	/* Attach (bpf) or take the first counter snapshot (vmstat). */
	int (*start)(struct tk_numa *n, char *why, size_t why_sz);
	int (*poll)(struct tk_numa *n, int timeout_ms);
	/*
	 * Fill @r (initialized by the session with the backend's name and the
	 * node count) with everything since the start: cumulative. The session
	 * derives intervals from consecutive totals.
	 */
	int (*collect)(struct tk_numa *n, struct tk_numa_report *r);
	/* --stacks; NULL when the backend cannot: then tk_numa__stacks says -ENOTSUP. */
	int (*stacks)(struct tk_numa *n, struct tk_profile **out);
	void (*free)(struct tk_numa *n);
};

/*
 * @out = @total - @prev, field by field (counts, reasons, pairs, processes,
 * latency buckets, sched, vmstat, numastat; a counter that went backwards
 * gives 0), for the interval between two cumulative reports of one session.
 * @out is initialized here; missing[] and attach come from @total. Returns 0
 * or -ENOMEM.
 */
int tk_numa_report__diff(struct tk_numa_report *out, const struct tk_numa_report *total,
			 const struct tk_numa_report *prev);
/* A deep copy (its own procs); @dst initialized here. Returns 0 or -ENOMEM. */
int tk_numa_report__copy(struct tk_numa_report *dst, const struct tk_numa_report *src);

extern const struct tk_numa_backend tk_numa_backend_bpf;
extern const struct tk_numa_backend tk_numa_backend_vmstat;

struct tk_numa {
	struct tk_numa_opts opts;
	const struct tk_caps *caps;
	const struct tk_numa_backend *be;
	void *priv;				/* the backend's */
	/*
	 * With the bpf backend, the vmstat backend runs beside it for the
	 * machine's counters (hint faults, promotions, numastat): its state,
	 * swapped into priv around its calls (numa_session.c).
	 */
	void *vmstat_priv;
	bool with_vmstat;
	struct tk_symbolizer *sym;		/* --stacks */
	struct tk_numa_report last;		/* the total at the previous collect */
	bool have_last;
	int64_t start_ns;			/* CLOCK_REALTIME */
	int64_t start_mono_ns;
	int64_t last_mono_ns;			/* of the previous collect */
	int nr_nodes;
	int cpu_node[1024];			/* CPU → node, -1 unknown (from caps->numa) */
};

/*
 * numa_vmstat.c's parsers, for tests and fuzzing: NUL-terminated /proc/vmstat
 * and numastat texts (either may be NULL). Fills up to @nr counters into
 * @vals (pgdemote_* summed) and @node's fields; returns how many of the
 * counters tracekit reads the vmstat text had.
 */
int tk_numa_vmstat__parse(const char *vmstat, const char *numastat, uint64_t *vals, size_t nr,
			  struct tk_numa_nodestat *node);

#endif /* __TK_NUMA_INT_H */
