/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Records and keys shared by bpf/cpu_sample.bpf.c and user/cpu/cpu_sample.c. */
#ifndef __CPU_SAMPLE_H
#define __CPU_SAMPLE_H

#include "rec_arch.h"

#define CPU_MAX_FRAMES 127

/* A stack, stored once under the 64-bit hash of its frames. */
struct cpu_stack {
	__u32 nr;
	__u32 pad;
	__u64 ips[CPU_MAX_FRAMES];	/* leaf first */
};

/* Hash value meaning "no stack": none taken, or it was lost (see flags). */
#define CPU_NO_STACK 0

/*
 * A stack's key in its map: the hash of its frames and the epoch it was
 * stored in. User space drains a finished epoch's counts and stacks while
 * sampling goes on into the current one (cpu_sample.c), so the maps hold
 * what a few drain intervals bring, not the whole capture.
 */
struct cpu_stack_key {
	__u64 hash;
	__u32 epoch;
	__u32 pad;
};

enum cpu_key_flags {
	CPU_KSTACK_TRUNCATED = 1 << 0,
	CPU_USTACK_TRUNCATED = 1 << 1,
	CPU_KSTACK_LOST = 1 << 2,	/* stacks map full, or bpf_get_stack failed */
	CPU_USTACK_LOST = 1 << 3,
};

struct cpu_key {
	__u32 pid;			/* tgid */
	__u32 tid;
	__u32 gen;			/* exec generation of pid */
	__u32 flags;			/* enum cpu_key_flags */
	__u64 kstack;			/* hash into the stacks map, or CPU_NO_STACK */
	__u64 ustack;
	char comm[16];
	__u32 epoch;			/* the stacks' epoch too (struct cpu_stack_key) */
	__u32 state;			/* off-CPU counts: enum cpu_off_state; samples: 0 */
};

/*
 * Off-CPU time (off_switch): how a thread left the CPU. Preempted (or a
 * yield) leaves it runnable; sleeping is an interruptible wait (and a kernel
 * thread's idle wait); uninterruptible is D state (disk, some locks).
 */
enum cpu_off_state {
	CPU_OFF_RUNNABLE = 1,
	CPU_OFF_SLEEPING,
	CPU_OFF_UNINTERRUPTIBLE,
	CPU_OFF_OTHER,			/* stopped, traced, parked */
	CPU_OFF_SHORT = 8,		/* or'ed: waits under off_cpu_min_ns, without stacks */
	CPU_OFF_BEFORE = 16,		/* or'ed: a wait that began before the capture (seed) */
};

/*
 * Waits that span the capture (off_seed, a task iterator run once right
 * after sched_switch is attached): each in-scope thread off the CPU then
 * gets an offstart entry timestamped now, its kernel stack taken from the
 * task, its user stack under CPU_SEED_USTACK(tid), which user space walks
 * from the registers below and stores in ustacks under that hash.
 */
#define CPU_SEED_TAG 0x5eed000000000000ULL
#define CPU_SEED_USTACK(tid) (CPU_SEED_TAG | (__u32)(tid))

enum cpu_seed_flags {
	CPU_SEED_REGS = 1 << 0,		/* ip, sp, bp (arm64: lr) read */
};

/* One seeded thread, as the iterator writes it (bpf_seq_write). */
struct cpu_seed {
	__u64 key;			/* its offstart key */
	__u64 ts;			/* the entry's ts (bpf_ktime_get_ns) */
	__u64 ip, sp, bp;		/* user registers (CPU_SEED_REGS) */
	__u64 last_arrival;		/* sched_info.last_arrival: rq clock at its last switch-in */
	__u64 sum_exec;			/* se.sum_exec_runtime */
	__u64 prev_sum_exec;		/* se.prev_sum_exec_runtime */
	__u64 ustack;			/* CPU_SEED_USTACK(tid), or CPU_NO_STACK */
	__u32 pid, tid, gen, epoch;
	__u32 state;			/* enum cpu_off_state, CPU_OFF_BEFORE or'ed */
	__u32 flags;			/* enum cpu_seed_flags */
#if TK_ARCH_ARM64
	__u64 lr;			/* x30 (CPU_SEED_REGS): a leaf's return address */
#endif
};

/* A thread switched out: its key (stacks taken then) and when. */
struct cpu_off_start {
	struct cpu_key key;
	__u64 ts;			/* bpf_ktime_get_ns */
	__u32 weight;			/* the switch-outs it stands for (thinning) */
	__u32 pad;
};

/*
 * Off-CPU per CPU (off_weight): its switch-outs in the current thinning
 * window, and in all, and those not taken. A cache line each: every switch
 * writes it, and two CPUs sharing a line would bounce it at every switch.
 */
struct cpu_off_rate {
	__u64 start;
	__u32 n;
	__u32 w;			/* the window's weight */
	__u64 switches;
	__u64 thinned;
	__u64 pad2[4];
};

struct cpu_off_val {
	__u64 ns;
	__u64 n;			/* waits */
};

struct cpu_proc {
	__u32 gen;
	__u16 announced;		/* user space was told about (pid, gen) */
	__u16 leader_exited;		/* its main thread has exited */
};

enum cpu_event_type {
	CPU_EV_SAMPLED = 1,		/* first sample of (pid, gen): capture its maps now */
	CPU_EV_EXEC,
	CPU_EV_EXIT,
	CPU_EV_UNWIND_MISS,		/* an address in no mapping user space described: look again */
	CPU_EV_GONE,			/* the last thread of (pid, gen) exited: its procs entry may go */
};

struct cpu_event {
	__u32 type;			/* enum cpu_event_type */
	__u32 pid;
	__u32 gen;
	__u32 prev_gen;			/* CPU_EV_EXEC: the generation it ended; else 0 */
	__u64 time;			/* CLOCK_MONOTONIC ns (bpf_ktime_get_ns) */
	char comm[16];
};

/* Counters in .bss, one slot per CPU (index & (CPU_MAX_CPUS - 1)). */
#define CPU_MAX_CPUS 256

/*
 * The pids filter: the -p processes and, with cpu_follow, their children.
 * Preallocated (a perf_event program's hash map is, before 6.1): 32768
 * entries are about 2 MiB. Entries leave when their process's last thread
 * exits, so the map holds the processes alive at once, not all ever forked.
 */
#define CPU_PIDS_MAX 32768

enum cpu_counter {
	CPU_CNT_SAMPLES = 0,
	CPU_CNT_IDLE,			/* samples of the idle task, not profiled */
	CPU_CNT_FILTERED,		/* samples of other processes */
	CPU_CNT_RINGBUF_FULL,
	CPU_CNT_STACK_MAP_FULL,
	CPU_CNT_COUNT_MAP_FULL,
	CPU_CNT_PROC_MAP_FULL,		/* no room to track a process: samples keep gen 0 */
	CPU_CNT_STACK_ERRORS,
	CPU_CNT_TRUNCATED,
	CPU_CNT_OFF_START_FULL,		/* no room to remember a switch-out: its wait is lost */
	CPU_CNT_OFF_COUNT_FULL,		/* no room to count a wait: lost */
	CPU_CNT_OFF_SHORT,		/* waits under off_cpu_min_ns: counted without stacks */
	CPU_CNT_OFF_SEEDED,		/* threads off the CPU at the start, given an entry */
	CPU_CNT_OFF_SEED_RACED,		/* ... that ran while it was made: taken back */
	CPU_CNT_OFF_SEED_STACK,		/* ... whose kernel stack could not be read */
	CPU_CNT__COUNT,
};

#endif /* __CPU_SAMPLE_H */
