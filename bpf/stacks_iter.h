/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The per-thread record of bpf/stacks_iter.bpf.c, read by user/stacks/stacks_iter.c. */
#ifndef __STACKS_ITER_H
#define __STACKS_ITER_H

#include "rec_arch.h"

#define STK_KFRAMES 64			/* kernel frames of one thread */
#define STK_CHUNK (16 * 1024)		/* bytes of user stack copied from sp (sleepable only) */
#define STK_MAX_PIDS 4096		/* processes of one snapshot (the pids map) */
#define STK_KNAME 48			/* bytes of one kernel frame's name ("%ps") */

/* The state classes of enum tk_stacks_state (include/tracekit/stacks.h), one bit each. */
enum stk_class {
	STK_R = 1 << 0,
	STK_S = 1 << 1,
	STK_D = 1 << 2,
	STK_T = 1 << 3,
	STK_I = 1 << 4,
	STK_Z = 1 << 5,
};

enum stk_flags {
	STK_F_ON_CPU = 1 << 0,		/* on a CPU when read: saved registers stale */
	STK_F_KTHREAD = 1 << 1,		/* a kernel thread: no user stack */
	STK_F_REGS = 1 << 2,		/* ip, sp, bp (arm64: lr) and the syscall are the task's
					   saved ones */
	STK_F_TORN = 1 << 3,		/* switched (or got on a CPU) while it was read */
	STK_F_MMAP_BUSY = 1 << 4,	/* its mm's mmap_lock write-held: no copy tried */
	STK_F_SLEEPABLE = 1 << 5,	/* read by the sleepable program (copies user stacks) */
	STK_F_KNAMES = 1 << 6,		/* the kernel frames' names follow the record */
};

/*
 * In the seq file: the record, then (STK_F_KNAMES) kn / 8 names of STK_KNAME bytes,
 * NUL-terminated, named by the kernel's own kallsyms (bpf_snprintf "%ps", 5.13+: reading
 * all of /proc/kallsyms costs ~100 ms here), then copy_len bytes of user stack.
 */
struct stk_rec {
	__u32 size;			/* this record and what follows it */
	__u32 tid, tgid, ns_tid;
	char comm[16];
	__u32 state;			/* task_struct.__state (state before 5.14) */
	__u32 exit_state;
	__u32 cls;			/* enum stk_class */
	__u32 flags;			/* enum stk_flags */
	__u64 now;			/* bpf_ktime_get_ns() */
	__u64 last_arrival;		/* sched_info.last_arrival: when it last got a CPU */
	__u64 sum_exec, prev_sum;	/* se.sum_exec_runtime, se.prev_sum_exec_runtime */
	__u64 switches;			/* nvcsw + nivcsw before the registers were read */
	__u64 ip, sp, bp, orig_ax;	/* bp: the frame pointer; orig_ax: the system call's
					   number (arm64: syscallno) */
	__u64 args[6];			/* di, si, dx, r10, r8, r9 (arm64: orig_x0, x1-x5) */
	__s64 kn;			/* bytes of k[] or bpf_get_task_stack's error */
	__u64 k[STK_KFRAMES];
	__s64 copy_err;			/* the first copy's error; 0 */
	__u32 copy_len;			/* bytes of user stack at the end, from sp */
	__u32 knames_len;		/* bytes of names after the record */
	__u64 fsbase;			/* thread.fsbase: its pthread_t (CPython's thread_id) */
#if TK_ARCH_ARM64
	__u64 lr;			/* x30 (STK_F_REGS): a leaf's return address (a libc
					   system call wrapper saves no frame) */
#endif
};

#endif /* __STACKS_ITER_H */
