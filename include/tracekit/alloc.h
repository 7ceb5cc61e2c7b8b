/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Allocation profiling: who allocates and does not free, as a heap profile
 * (alloc_objects, alloc_space, inuse_objects, inuse_space). Run it as a
 * session (tracekit/session.h: tk_session__open_alloc).
 */
#ifndef __TRACEKIT_ALLOC_H
#define __TRACEKIT_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tracekit/common.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TK_ALLOC_DEFAULT_SAMPLE_BYTES (512 * 1024)

enum tk_alloc_mode {
	TK_ALLOC_MODE_SAMPLED = 0,	/* byte-weighted sampling, mean sample_bytes */
	TK_ALLOC_MODE_FULL,		/* every allocation and free */
	TK_ALLOC_MODE_GROWTH,		/* page faults, brk, mmap: no allocator hooks */
};

struct tk_alloc_opts {
	size_t sz;			/* TK_OPTS_SZ(tk_alloc_opts) */
	enum tk_alloc_mode mode;
	uint64_t sample_bytes;		/* mean bytes between samples; 0: the default */
	int pid;			/* -p PID; 0 with argv */
	char *const *argv;		/* -- CMD ARGS (NULL-terminated), or NULL */
	enum tk_backend backend;	/* TK_BACKEND_NONE: choose from the snapshot */
	bool no_preload;		/* -- CMD: use uprobes, not the in-process sampler */
	const char *preload_dir;	/* where libtkalloc.so and libtkagent.so are;
					   NULL: beside the executable, else installed */
	const char *proc_root;		/* default "/proc" */
	enum tk_unwind_mode unwind;	/* user stacks: CFI where possible (auto), fp, cfi */
	size_t unwind_mem;		/* bytes for unwind tables; 0: the default (16 MiB) */
	uint64_t min_age_ns;		/* sessions: objects younger than this are left out
					   of inuse_* (jemalloc's dumps cannot tell) */
	/*
	 * Growth mode: page faults only, no brk and mmap. Tracing those takes
	 * the raw_syscalls tracepoints, which put every system call of the
	 * machine on the kernel's slow path (about 12 % of a syscall-heavy
	 * server's throughput measured here); the faults alone say what made
	 * resident memory grow, at about 1 %.
	 */
	bool growth_faults_only;
	/* Do not ask JVMs for their perf maps (tk_cpu_opts.no_jit_ask says what and why). */
	bool no_jit_ask;
};

struct tk_alloc_stats {
	uint64_t allocs;		/* records (sampled or all) */
	uint64_t frees;			/* of recorded objects */
	uint64_t live;			/* recorded objects still live */
	uint64_t growth_events;
	uint64_t lost;			/* sum of loss counters (not released_at_*) */
	uint64_t calls;			/* allocator calls seen by BPF, when counted */
};

/*
 * What tracing would cost a running process, measured before tracing it: its
 * allocation rate (uprobes counting its allocator's calls for @ms), what a
 * uprobe hit costs on this machine, and so the expected slowdown of each mode.
 */
struct tk_alloc_rate {
	size_t sz;			/* TK_OPTS_SZ(tk_alloc_rate), set by the caller */
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

struct tk_caps;

/*
 * Measure process @pid for @ms milliseconds (0: 300) into @out, whose sz the
 * caller sets. @caps: a snapshot taken with that pid, or NULL. Returns 0 or a
 * negative errno, and @why.
 */
int tk_alloc__measure(int pid, const struct tk_caps *caps, int ms, struct tk_alloc_rate *out,
		      char *why, size_t why_sz);

#ifdef __cplusplus
}
#endif

#endif /* __TRACEKIT_ALLOC_H */
