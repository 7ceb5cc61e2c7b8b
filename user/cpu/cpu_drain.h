/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A batched drain of cpu_sample's maps (cpu_sample.c's walk_counts): the
 * counts of the epochs taken, read a thousand at a time, then the stacks of
 * those epochs, read and indexed here (a hash map's batch read cannot be
 * narrowed to the keys wanted), so that a count finds its stacks without a
 * bpf(2) call; then the batched deletes. A few dozen calls per drain where
 * one by one took a get_next_key, a lookup and a delete per entry and two
 * lookups per count (35-53k calls in a 10 s capture at 999 Hz).
 */
#ifndef __TK_CPU_DRAIN_H
#define __TK_CPU_DRAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "bpf/cpu_sample.h"
#include "core/hashmap.h"

struct tk_cpu_drain_keys {
	void *v;
	size_t n, cap, sz;
};

struct tk_cpu_drain {
	/* filled by tk_cpu_drain__read: [0] on-CPU counts (__u64), [1] off-CPU (cpu_off_val) */
	struct tk_cpu_drain_keys keys[2];	/* struct cpu_key */
	struct tk_cpu_drain_keys vals[2];
	struct tk_cpu_drain_keys skeys[2];	/* stack keys taken: [0] kstacks, [1] ustacks */
	struct tk_hashmap idx[2];		/* (hash, epoch) → frames in the arena */
	__u64 *arena;
	size_t arena_n, arena_cap;
	bool (*take)(const void *ctx, __u32 epoch);
	const void *ctx;
	int side;
	uint64_t calls;				/* bpf(2) calls made */
};

/*
 * Read the counts of @counts_fd (and @offcounts_fd unless < 0) whose epoch
 * @take selects, then, when any was or @stacks_always (the last drain: a
 * stack whose count was never written goes too; before it, such a stack
 * waits for a drain that takes counts), the stacks of those epochs in @kfd
 * and @ufd. 0; -EOPNOTSUPP when the kernel has no batch
 * lookups (nothing read or changed: walk one by one); -ENOMEM.
 */
int tk_cpu_drain__read(struct tk_cpu_drain *d, int counts_fd, int offcounts_fd, int kfd, int ufd,
		       bool (*take)(const void *ctx, __u32 epoch), const void *ctx,
		       bool stacks_always);

/*
 * The frames of stack @hash of epoch @ep read from side @side (0 kernel, 1
 * user): *@ips and their number (0 for CPU_NO_STACK); -1 when it was not
 * in the map.
 */
int tk_cpu_drain__stack(const struct tk_cpu_drain *d, int side, __u64 hash, __u32 ep,
			const __u64 **ips);

/* Delete @n keys of @ksz bytes from @fd: batched, else one by one. */
void tk_cpu_drain__delete(struct tk_cpu_drain *d, int fd, const void *keys, size_t n, size_t ksz);

void tk_cpu_drain__free(struct tk_cpu_drain *d);

#endif /* __TK_CPU_DRAIN_H */
