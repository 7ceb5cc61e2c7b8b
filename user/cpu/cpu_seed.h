/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Waits that span the capture (bpf backend, --off-cpu): the threads in scope
 * that are off the CPU when sched_switch is attached, and may never switch
 * during the window, are given their off-CPU entry by a task iterator
 * (bpf/cpu_sample.bpf.c off_seed); their user stacks are walked here, from
 * the registers the iterator read, over their memory (/proc/PID/mem).
 */
#ifndef __TK_CPU_SEED_H
#define __TK_CPU_SEED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct tk_cpu;
struct cpu_sample_bpf;
struct tk_unw_bpf;
struct ring_buffer;

/* A thread that was off the CPU at the start, and for how long before it. */
struct tk_cpu_seed_thread {
	uint32_t pid, tid;
	int64_t before_ns;	/* off the CPU this long before the capture; -1: unknown */
};

/*
 * How long a thread had been off the CPU at @now (ns, the scheduler's clock
 * as bpf_ktime_get_ns approximates it): since its last switch-in
 * (sched_info.last_arrival, @arrival) plus the slice it then ran
 * (se.sum_exec_runtime @sum − se.prev_sum_exec_runtime @prev_sum). -1 when
 * the kernel does not tell (no CONFIG_SCHED_INFO: @arrival 0) or the fields
 * do not add up (a clock ahead of @now, a slice longer than the time since).
 */
int64_t tk_cpu_seed__before_ns(uint64_t now, uint64_t arrival, uint64_t sum, uint64_t prev_sum);

/*
 * The thread ids in @len bytes of @text (a cgroup.threads file: decimal
 * numbers; anything else, 0 and numbers past 2^32 - 1 skipped), appended to
 * *@tids. 0 or -ENOMEM.
 */
int tk_cpu_seed__parse_tids(const char *text, size_t len, uint32_t **tids, size_t *nr,
			    size_t *cap);
/*
 * The threads of cgroup v2 directory @dir and every cgroup below it (their
 * cgroup.threads), appended to *@tids (*@nr of them, *@cap allocated).
 * Returns 0 or a negative errno (-ENOENT: @dir has no cgroup.threads).
 */
int tk_cpu_seed__cgroup_tids(const char *dir, uint32_t **tids, size_t *nr, size_t *cap);

/*
 * A stack image for tk_unw__walk: up to TK_SEED_IMAGE bytes of the thread's
 * memory from its sp read at once, further addresses read from @fd
 * (/proc/PID/mem) as the walk asks for them.
 */
#define TK_SEED_IMAGE 16384
struct tk_seed_image {
	int fd;
	uint64_t base;		/* the address buf[0] holds */
	size_t len;		/* bytes of buf read */
	uint64_t reads;		/* preads made */
	uint8_t buf[TK_SEED_IMAGE];
};
/* Fill @img from @fd at @sp; 0, or a negative errno when not a byte there is readable. */
int tk_seed_image__load(struct tk_seed_image *img, int fd, uint64_t sp);
/* tk_unw_read_fn over an image */
int tk_seed_image__read(void *ctx, uint64_t addr, void *buf, size_t len);

/*
 * Before load: the iterator's offsets from the kernel's BTF and its scope,
 * and autoload on when it can work; else c->seed_note says what is not seen.
 * @key_tid: offstart keyed by tid (off_switch_btf), else by task address.
 */
void tk_cpu_seed__prepare(struct tk_cpu *c, struct cpu_sample_bpf *skel, bool key_tid);
/*
 * After sched_switch is attached: run the iterator, walk the user stacks of
 * the threads it seeded and store them where their counts will look. A
 * failure leaves the capture running without seeds, and the profile says so.
 */
void tk_cpu_seed__run(struct tk_cpu *c, struct cpu_sample_bpf *skel, struct tk_unw_bpf *unw,
		      struct ring_buffer *rb);
/* The seeded thread @tid of @pid, or NULL. */
const struct tk_cpu_seed_thread *tk_cpu_seed__find(const struct tk_cpu *c, uint32_t pid,
						   uint32_t tid);
void tk_cpu_seed__free(struct tk_cpu *c);

#endif /* __TK_CPU_SEED_H */
