/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Raw stacks before symbolization, aggregated in user space: both CPU
 * backends (BPF maps, perf rings) feed this table, keyed by process, thread,
 * exec generation and the exact frames, so no two stacks are ever merged.
 * Each distinct frame array is stored once, however many entries have it:
 * entries that share frames also share the pointers tk_stack_entry gives.
 */
#ifndef __TK_STACKS_H
#define __TK_STACKS_H

#include <stdbool.h>
#include <stdint.h>

#define TK_MAX_FRAMES 127	/* per side: kernel and user, as bpf_get_stack gives */

/*
 * What an entry counts. Samples (0): count is samples. Off-CPU time, by how
 * the thread left the CPU: count is nanoseconds, count2 the waits.
 */
enum tk_stack_kind {
	TK_STACK_ON_CPU = 0,
	TK_STACK_OFF_RUNNABLE,		/* preempted, or a yield */
	TK_STACK_OFF_SLEEPING,		/* an interruptible wait */
	TK_STACK_OFF_UNINTERRUPTIBLE,	/* D state */
	TK_STACK_OFF_OTHER,		/* stopped, traced, parked */
	TK_STACK_OFF_BLOCKED,		/* sleeping or uninterruptible (perf cannot tell) */
	TK_STACK_OFF_SHORT = 8,		/* or'ed: waits under the minimum, without stacks */
	TK_STACK_OFF_BEFORE = 16,	/* or'ed: a wait that began before the capture */
};
#define TK_STACK_KIND_MAX 31

struct tk_stack_entry {
	uint32_t pid;		/* process (tgid) */
	uint32_t tid;
	uint32_t gen;		/* exec generation of pid: maps differ across exec */
	enum tk_stack_kind kind;
	char comm[16];
	uint64_t count;
	uint64_t count2;	/* off-CPU: waits; else 0 */
	uint32_t nr_kernel;
	uint32_t nr_user;
	const uint64_t *kernel;	/* leaf first */
	const uint64_t *user;	/* leaf first */
	bool truncated;		/* a side hit TK_MAX_FRAMES */
};

struct tk_stacks;

struct tk_stacks *tk_stacks__new(void);
void tk_stacks__free(struct tk_stacks *t);
/*
 * Add @count to the stack (@kernel, @nr_kernel; @user, @nr_user), both leaf
 * first, at most TK_MAX_FRAMES each (more are cut and the entry marked
 * truncated). @comm may be NULL; the first non-empty one is kept.
 * Returns 0 or -ENOMEM.
 */
int tk_stacks__add(struct tk_stacks *t, uint32_t pid, uint32_t tid, uint32_t gen, const char *comm,
		   const uint64_t *kernel, uint32_t nr_kernel, const uint64_t *user,
		   uint32_t nr_user, uint64_t count, bool truncated);
/*
 * Off-CPU time: @ns nanoseconds over @waits waits of kind @kind (not
 * TK_STACK_ON_CPU), an entry of its own beside the samples of the same stack.
 * @tid must be below 2^27 (pid_max is at most 2^22). Returns 0 or -ENOMEM.
 */
int tk_stacks__add_off(struct tk_stacks *t, uint32_t pid, uint32_t tid, uint32_t gen,
		       const char *comm, const uint64_t *kernel, uint32_t nr_kernel,
		       const uint64_t *user, uint32_t nr_user, uint64_t ns, uint64_t waits,
		       enum tk_stack_kind kind, bool truncated);
typedef int (*tk_stacks_cb)(const struct tk_stack_entry *e, void *ctx);
/* Visit every entry; a non-zero return from @cb stops and is returned. */
int tk_stacks__for_each(const struct tk_stacks *t, tk_stacks_cb cb, void *ctx);
/*
 * The count of @e's stack (same process, thread, generation, kind and frames)
 * in @t, its count2 in *@count2 (may be NULL); 0 if absent.
 */
uint64_t tk_stacks__count(const struct tk_stacks *t, const struct tk_stack_entry *e,
			  uint64_t *count2);
/*
 * Add to @out what @cur counts beyond @prev (NULL: nothing), stack by stack:
 * the interval between two cumulative tables. Also a copy (@prev NULL).
 */
int tk_stacks__add_diff(struct tk_stacks *out, const struct tk_stacks *cur,
			const struct tk_stacks *prev);
uint64_t tk_stacks__total(const struct tk_stacks *t);	/* sum of the samples' counts */
size_t tk_stacks__size(const struct tk_stacks *t);	/* distinct entries */
/* The memory @t holds, in bytes: what a long capture's table costs. */
size_t tk_stacks__bytes(const struct tk_stacks *t);

#endif /* __TK_STACKS_H */
