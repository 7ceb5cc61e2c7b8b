/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Allocation profiling sessions: open (choose a backend and a mode) → start →
 * poll until done → finish (a heap profile: alloc_objects, alloc_space,
 * inuse_objects, inuse_space).
 *
 * Backends deliver records to the session (tk_alloc__on_alloc/on_free/
 * on_growth); the session keeps the live table and per-stack sums, weighs
 * sampled allocations by their unbiased weight, and builds the profile. A
 * backend that has its own profile (jemalloc's dumps) builds it itself.
 */
#ifndef __TK_ALLOC_H
#define __TK_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind/unwind.h"
#include "profile/profile.h"
#include "sym/symbolize.h"
#include "caps/caps.h"
#include "tracekit/alloc.h"

#define TK_ALLOC_MAX_FRAMES 127


/* How allocations reach BPF (bpf backend) */
enum tk_alloc_hook {
	TK_ALLOC_HOOK_NONE = 0,		/* growth mode, jemalloc backend */
	TK_ALLOC_HOOK_UPROBES,		/* uprobes on the allocator's functions */
	TK_ALLOC_HOOK_PRELOAD,		/* libtkalloc.so samples in-process; uprobes on its
					   two marker functions only */
};


/* Growth records (growth mode) */
enum tk_growth_kind {
	TK_GROWTH_FAULT = 0,		/* a user page fault: a page made resident */
	TK_GROWTH_BRK,			/* brk() moved the break up by bytes */
	TK_GROWTH_MMAP,			/* an anonymous or private mmap() of bytes */
	TK_GROWTH__COUNT,
};

/* One allocation as a backend saw it. */
struct tk_alloc_rec {
	uint32_t pid;
	uint32_t gen;			/* pid's exec generation (0: the only one known) */
	uint32_t tid;
	uint64_t ptr;			/* the address returned */
	uint64_t size;			/* bytes asked for */
	uint64_t ts_ns;			/* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	const uint64_t *ips;		/* user stack, leaf first: the first frame is the
					   return address into the allocator's caller */
	uint32_t nr_ips;		/* <= TK_ALLOC_MAX_FRAMES */
	bool truncated;
	bool untracked;			/* BPF could not remember it (live map full): counted
					   as allocated, never kept as in use */
	const char *comm;		/* may be NULL */
};

/* Losses every alloc profile carries (by index; names in alloc.c) */
enum tk_alloc_loss {
	TK_ALOSS_RINGBUF = 0,		/* "ringbuf_reserve_failed" */
	TK_ALOSS_STACK_MAP_FULL,	/* "stack_map_full" */
	TK_ALOSS_LIVE_MAP_FULL,		/* "live_map_full": a sampled object BPF could not
					   remember (its free will not be seen) */
	TK_ALOSS_PENDING_MAP_FULL,	/* "pending_map_full": entry/return pairing lost */
	TK_ALOSS_TRUNCATED,		/* "truncated_stacks" */
	TK_ALOSS_STACK_ERRORS,		/* "stack_errors" */
	TK_ALOSS_UNSYMBOLIZED,		/* "unsymbolized_frames" */
	TK_ALOSS_UNKNOWN_FREE,		/* "frees_of_unknown_objects": frees whose object is
					   not known: in full mode, allocated before the
					   attach (or its allocation was lost); any mode,
					   a free record whose allocation record was lost */
	TK_ALOSS_LIVE_REPLACED,		/* "replaced_live_objects": an address allocated
					   again while still live: its free was not seen */
	TK_ALOSS_PROC_MAP_FULL,		/* "proc_map_full": a process BPF had no room to
					   follow: its records keep generation 0, and its
					   exec and exit release nothing */
	TK_ALOSS_FOLLOW_MAP_FULL,	/* "follow_map_full": samples of a process (a child
					   of the command) the pids map had no room for: its
					   exec and exit are then seen only through the
					   entry its first record made in procs, and not at
					   all when that was full too (proc_map_full) */
	TK_ALOSS_BRK_MAP_FULL,		/* "brk_map_full": brk calls whose growth was not
					   counted (more threads in brk at once than the
					   brk_old map holds) */
	/*
	 * Not losses: what left the in-use figures because its process ended
	 * (tk_alloc__release), in their units (estimates when sampled).
	 */
	TK_ALOSS_RELEASED_EXEC,		/* "released_at_exec": objects */
	TK_ALOSS_RELEASED_EXEC_BYTES,	/* "released_at_exec_bytes" */
	TK_ALOSS_RELEASED_EXIT,		/* "released_at_exit": objects */
	TK_ALOSS_RELEASED_EXIT_BYTES,	/* "released_at_exit_bytes" */
	TK_ALOSS__COUNT,
};
const char *tk_alloc_loss__name(enum tk_alloc_loss l);


struct tk_alloc;

/*
 * Choose the backend (opts->backend, or the snapshot's choice for the alloc
 * collector) and the hook, and prepare them. With argv, the command is
 * started now but held before exec (its environment is prepared for the
 * backend: LD_PRELOAD of libtkalloc.so or libtkagent.so, MALLOC_CONF) and
 * runs from tk_alloc__start(). On failure @why says what stood in the way.
 */
int tk_alloc__open(const struct tk_alloc_opts *opts, const struct tk_caps *caps,
		   struct tk_alloc **out, char *why, size_t why_sz);
/* Attach, then release the command. */
int tk_alloc__start(struct tk_alloc *a, char *why, size_t why_sz);
/* Process what has arrived; waits at most @timeout_ms. Returns 0 or -errno. */
int tk_alloc__poll(struct tk_alloc *a, int timeout_ms);
/* Ask JVMs for their perf maps (tk_symbolizer__set_jit_ask), or not. */
void tk_alloc__set_jit_ask(struct tk_alloc *a, bool on, tk_sym_note_fn note, void *ctx);
void tk_alloc__stats(const struct tk_alloc *a, struct tk_alloc_stats *st);
/* "bpf", "jemalloc" */
const char *tk_alloc__backend(const struct tk_alloc *a);
/* "uprobes on glibc malloc ... in /usr/lib/...libc.so.6", for the notes and -v */
const char *tk_alloc__describe(const struct tk_alloc *a);
/* The command's pid (argv), or opts->pid. */
int tk_alloc__pid(const struct tk_alloc *a);
/*
 * The profile so far, without stopping (for -i): objects younger than
 * @min_age_ns are left out of inuse_*. The caller frees it.
 */
int tk_alloc__snapshot(struct tk_alloc *a, uint64_t min_age_ns, struct tk_profile **out);
/* Stop, collect everything, and build the profile. */
int tk_alloc__finish(struct tk_alloc *a, uint64_t min_age_ns, struct tk_profile **out);
void tk_alloc__free(struct tk_alloc *a);

/* ---- the session, for the backends ------------------------------------------------ */

int tk_alloc__on_alloc(struct tk_alloc *a, const struct tk_alloc_rec *r);
/*
 * A free of @ptr in (@pid, @gen); counted as frees_of_unknown_objects unless
 * it is in the live table.
 */
int tk_alloc__on_free(struct tk_alloc *a, uint32_t pid, uint32_t gen, uint64_t ptr);
/* @count events adding @bytes at a stack (growth mode). */
int tk_alloc__on_growth(struct tk_alloc *a, enum tk_growth_kind kind, uint32_t pid, uint32_t gen,
			uint32_t tid, const char *comm, const uint64_t *ips, uint32_t nr_ips,
			bool truncated, uint64_t count, uint64_t bytes);
void tk_alloc__add_loss(struct tk_alloc *a, enum tk_alloc_loss l, uint64_t n);
/* Mapping changes seen (exec, dlopen): capture (@pid, @gen)'s maps again. */
void tk_alloc__refresh_maps(struct tk_alloc *a, uint32_t pid, uint32_t gen);

enum tk_alloc_end {
	TK_ALLOC_END_EXEC,		/* the process exec'd: its heap is new */
	TK_ALLOC_END_EXIT,		/* its last thread exited */
};

/*
 * Generation @gen of @pid ended: nobody holds its live objects any more.
 * They leave the live table (so the in-use figures), counted as
 * released_at_exec or released_at_exit; @drop, when not NULL, is called with
 * each one's address first (the backend forgets it too). The number of
 * objects released.
 */
typedef void (*tk_alloc_drop_fn)(struct tk_alloc *a, uint32_t pid, uint32_t gen, uint64_t ptr);
size_t tk_alloc__release(struct tk_alloc *a, uint32_t pid, uint32_t gen, enum tk_alloc_end why,
			 tk_alloc_drop_fn drop);

/*
 * The unbiased weight of an allocation of @size bytes under byte sampling
 * with mean @mean: 1 / (1 - exp(-size / mean)); 1 when @mean is 0 (every
 * allocation recorded).
 */
double tk_alloc__weight(uint64_t size, uint64_t mean);

#endif /* __TK_ALLOC_H */
