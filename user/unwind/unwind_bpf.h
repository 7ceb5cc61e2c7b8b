/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The user-space side of bpf/unwind.bpf.h, for every BPF collector that
 * includes it: open → tk_unw_bpf__prepare → load → tk_unw_bpf__open → for each
 * captured process tk_unw_bpf__update → tk_unw_bpf__sum of its counters.
 */
#ifndef __TK_UNWIND_BPF_H
#define __TK_UNWIND_BPF_H

#include <stdbool.h>
#include <stdint.h>

#include <bpf/libbpf.h>

#include "core/arch.h"
#include "unwind/unwind.h"

/* The unwinder's variables and maps in one skeleton. */
struct tk_unw_bpf_vars {
	bool *enabled;			/* rodata unw_enabled */
	__u32 *task_regs;		/* rodata unw_task_regs */
	__u32 *task_stack_off;		/* rodata unw_task_stack_off */
	__u32 *thread_size;		/* rodata unw_thread_size */
	struct bpf_map *chunks;		/* unw_chunks: the rows, in chunks */
	struct bpf_map *procs;		/* unw_procs */
	__u32 *fsbase_off;		/* rodata unw_fsbase_off (Python frames) */
	struct bpf_map *py_procs;	/* unw_py_procs */
	struct bpf_map *py_codes;	/* unw_py_codes */
	struct bpf_map *py_events;	/* unw_py_events */
	__u64 *ra_mask;			/* rodata unw_ra_mask (arm64 objects); NULL */
};

#if TK_PERF_REG_LR >= 0
#define TK_UNW_BPF_RA_MASK(skel) &(skel)->rodata->unw_ra_mask
#else
#define TK_UNW_BPF_RA_MASK(skel) NULL
#endif

#define TK_UNW_BPF_VARS(skel) {						\
	.enabled = &(skel)->rodata->unw_enabled,			\
	.task_regs = &(skel)->rodata->unw_task_regs,			\
	.task_stack_off = &(skel)->rodata->unw_task_stack_off,		\
	.thread_size = &(skel)->rodata->unw_thread_size,		\
	.chunks = (skel)->maps.unw_chunks,				\
	.procs = (skel)->maps.unw_procs,				\
	.fsbase_off = &(skel)->rodata->unw_fsbase_off,			\
	.py_procs = (skel)->maps.unw_py_procs,				\
	.py_codes = (skel)->maps.unw_py_codes,				\
	.py_events = (skel)->maps.unw_py_events,			\
	.ra_mask = TK_UNW_BPF_RA_MASK(skel),				\
}

struct tk_unw_bpf_opts {
	enum tk_unwind_mode mode;
	size_t rows;			/* the rows' ceiling; 0: 2M rows (16 MiB) */
	size_t procs;			/* processes with an entry at once; 0: 1024 */
	bool no_python;			/* no Python frames (TK_UNWIND_FP has none either) */
	enum bpf_prog_type prog_type;	/* of the programs that unwind */
};

/*
 * Before load: size the maps, set the switches. Unwinding stays off (and
 * the maps minimal) with TK_UNWIND_FP, or when this kernel offers no way to
 * find a task's user registers: then @why says so, and the return is 0 in
 * auto mode, a negative errno with TK_UNWIND_CFI.
 */
int tk_unw_bpf__prepare(const struct tk_unw_bpf_vars *v, const struct tk_unw_bpf_opts *o,
			char *why, size_t why_sz);

/*
 * After a failed load with the unwinder on: true when @mode is auto, so the
 * caller loads again with TK_UNWIND_FP; @note says why the stacks then go by
 * frame pointer (with TK_UNWIND_CFI: why the load failed).
 */
bool tk_unw_bpf__refused(const struct tk_unw_bpf_vars *v, enum tk_unwind_mode mode, int err,
			 char *note, size_t note_sz);

struct tk_unw_bpf;

/* After load; *out stays NULL (and 0 is returned) when unwinding is off. */
int tk_unw_bpf__open(const struct tk_unw_bpf_vars *v, struct tk_unw_bpf **out);
void tk_unw_bpf__free(struct tk_unw_bpf *u);
/* Write (@pid, @gen)'s entry from the symbolizer's capture. NULL @u: nothing to do. */
int tk_unw_bpf__update(struct tk_unw_bpf *u, struct tk_symbolizer *sym, uint32_t pid,
		       uint32_t gen);
void tk_unw_bpf__forget(struct tk_unw_bpf *u, uint32_t pid);
/* A miss event of (@pid, @gen): capture it again at a tk_unw_bpf__retry (rate-limited). */
void tk_unw_bpf__miss(struct tk_unw_bpf *u, uint32_t pid, uint32_t gen);
/* At every poll: capture again, and describe anew, the processes whose misses are due. */
void tk_unw_bpf__retry(struct tk_unw_bpf *u, struct tk_symbolizer *sym);
/*
 * Hand the ring buffer of new Python code ids to the collector's own @rb,
 * so its poll wakes for them at once: names are read while the process
 * lives, before the next poll's timeout. 0 or a negative errno.
 */
int tk_unw_bpf__add_ring(struct tk_unw_bpf *u, struct ring_buffer *rb);
/* Sum the per-CPU unw_counters of a skeleton's .bss. */
void tk_unw_bpf__sum(const __u64 (*counters)[UNW_CNT__COUNT], int nr_cpus,
		     uint64_t out[UNW_CNT__COUNT]);
void tk_unw_bpf__stats(struct tk_unw_bpf *u, struct tk_unw_info *info);

/*
 * The processes that missed, waiting to be captured again (tk_unw_bpf__miss,
 * __retry): a slot per process, freed when its process needs nothing more
 * (no miss waits and its rate limit is over), ends, or is forgotten. As many
 * slots as a session has process entries by default: a process holds one
 * slot at most, so processes that miss all the time (JIT code) cannot crowd
 * the others out below that.
 */
#define TK_UNW_MAX_MISSES 1024

struct tk_unw_misses {
	struct tk_unw_miss {
		uint32_t pid, gen;
		int64_t due_ns;		/* not captured again before (CLOCK_MONOTONIC) */
		bool pending;		/* a miss waits */
	} slot[TK_UNW_MAX_MISSES];
	int nr;
	int64_t gone_due_ns;		/* full: ask which processes ended, not before */
	uint64_t dropped;		/* misses that found every slot taken */
	uint64_t pruned;		/* slots freed */
};

/*
 * A miss of (@pid, @gen) at @now_ns: false (and counted) when every slot is
 * taken by a process that waits or is rate-limited; @gone (may be NULL) says
 * whether a pid has ended, asked only when the table is full, once a second.
 */
bool tk_unw_misses__add(struct tk_unw_misses *t, uint32_t pid, uint32_t gen, int64_t now_ns,
			bool (*gone)(uint32_t pid, void *ctx), void *ctx);
/* The next process due at @now_ns: true with *@pid, *@gen; then not before @interval_ns. */
bool tk_unw_misses__next_due(struct tk_unw_misses *t, int64_t now_ns, int64_t interval_ns,
			     uint32_t *pid, uint32_t *gen);
void tk_unw_misses__forget(struct tk_unw_misses *t, uint32_t pid);

/*
 * The rows as mapped (one flat view of every chunk made), and how many are
 * mapped: reading past them faults.
 */
struct unw_row *tk_unw_bpf__rows(struct tk_unw_bpf *u, size_t *cap);
/* Make and map the chunks for rows [0, @rows) now: 0 or a negative errno. */
int tk_unw_bpf__reserve(struct tk_unw_bpf *u, size_t rows);

/* ---- the BPF evaluator run on demand (unwind_check.c) ----------------------------------- */

struct tk_unw_check;

/* Load the evaluator with room for @rows rows; @why says what failed. */
int tk_unw_check__open(size_t rows, struct tk_unw_check **out, char *why, size_t why_sz);
void tk_unw_check__free(struct tk_unw_check *c);
/* Its rows array, to fill (mapped: what is written is what BPF reads). */
struct unw_row *tk_unw_check__rows(struct tk_unw_check *c, size_t *cap);
/*
 * Walk, in the kernel, the stack image in this process's memory from @regs
 * with @proc as this process's entry (NULL: none): tk_unw__walk's contract,
 * plus @skip. Returns the frame count or a negative errno.
 */
int tk_unw_check__walk(struct tk_unw_check *c, const struct unw_proc *proc,
		       const struct tk_unw_regs *regs, uint32_t skip, uint64_t *ips, int max,
		       uint32_t *causes, uint32_t frames[2]);
/* Whether the last tk_unw_check__walk asked user space to capture the process again. */
bool tk_unw_check__missed(const struct tk_unw_check *c);
/* Walk a stack whose frames are known: 0 when the kernel walked it right; @msg says. */
int tk_unw_check__selftest(char *msg, size_t msg_sz);

#endif /* __TK_UNWIND_BPF_H */
