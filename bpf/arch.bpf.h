/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the BPF programs know of the architecture they are built for
 * (-D__TARGET_ARCH_x86 or -D__TARGET_ARCH_arm64, the Makefile's ARCH): the user
 * pt_regs by 8-byte slot, for the programs that read them without CO-RE (a
 * perf_event's or a uprobe's context, a task's saved registers), and the system
 * call numbers the programs filter on. Nowhere else does a BPF program name an
 * architecture's register or number: arguments go through libbpf's PT_REGS_*
 * macros (bpf_tracing.h), which take the same -D__TARGET_ARCH_.
 *
 * The slots are the kernel's struct pt_regs, whose layout is ABI on both (x86:
 * arch/x86/include/asm/ptrace.h; arm64: arch/arm64/include/asm/ptrace.h, where
 * struct user_pt_regs is its head: regs[31], sp, pc, pstate).
 */
#ifndef __ARCH_BPF_H
#define __ARCH_BPF_H

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#if defined(__TARGET_ARCH_x86)

#define UNW_REG_BP 4		/* rbp */
#define UNW_REG_IP 16		/* rip */
#define UNW_REG_MODE 17		/* cs: its low two bits are the privilege level */
#define UNW_REG_SP 19		/* rsp */
#define UNW_REGS_SIZE (21 * 8)	/* sizeof(struct pt_regs): the top of a task's stack */
/* the registers of user code (ring 3) */
#define UNW_REGS_USER(mode) (((mode) & 3) == 3)

/* arch/x86/entry/syscalls/syscall_64.tbl */
#define TK_NR_MMAP 9
#define TK_NR_BRK 12

/* A return's stack pointer less its function's entry's: ret popped the return address */
#define TK_RET_SP_DELTA 8

/* At a function's first instruction (a uprobe there): its return address, on the stack */
static __always_inline long tk_entry_ret(struct pt_regs *ctx, __u64 *ret)
{
	return bpf_probe_read_user(ret, sizeof(*ret), (void *)PT_REGS_SP(ctx));
}

/*
 * A task's saved user registers (CO-RE): pc, sp, the frame pointer, the link register
 * (x86: none, 0: the return address is on the stack), the system call number (-1: none)
 * and its six arguments (the syscall convention: r10 for the 4th).
 */
static __always_inline void tk_core_user_regs(struct pt_regs *regs, __u64 *ip, __u64 *sp,
					      __u64 *fp, __u64 *lr, __u64 *nr, __u64 args[6])
{
	*ip = BPF_CORE_READ(regs, ip);
	*sp = BPF_CORE_READ(regs, sp);
	*fp = BPF_CORE_READ(regs, bp);
	*lr = 0;
	*nr = BPF_CORE_READ(regs, orig_ax);
	args[0] = BPF_CORE_READ(regs, di);
	args[1] = BPF_CORE_READ(regs, si);
	args[2] = BPF_CORE_READ(regs, dx);
	args[3] = BPF_CORE_READ(regs, r10);
	args[4] = BPF_CORE_READ(regs, r8);
	args[5] = BPF_CORE_READ(regs, r9);
}

#elif defined(__TARGET_ARCH_arm64)

#define UNW_REG_BP 29		/* x29, the frame pointer */
#define UNW_REG_LR 30		/* x30: the leaf's return address until it is saved */
#define UNW_REG_SP 31		/* sp */
#define UNW_REG_IP 32		/* pc */
#define UNW_REG_MODE 33		/* pstate: M[4:0] is the exception level and stack */
/*
 * sizeof(struct pt_regs): 42 slots on 5.10 (orig_addr_limit, pmr_save, stackframe[2],
 * lockdep_hardirqs, exit_rcu after syscallno) and on 6.12 (sdei_ttbr1 in orig_addr_limit's
 * place). Only kernels before 5.15 (no bpf_task_pt_regs) find the registers by it.
 */
#define UNW_REGS_SIZE (42 * 8)
/* the registers of AArch64 user code: PSR_MODE_EL0t (and not a 32-bit task's) */
#define UNW_REGS_USER(mode) (((mode) & 0x1f) == 0)

/* include/uapi/asm-generic/unistd.h */
#define TK_NR_MMAP 222
#define TK_NR_BRK 214

/* bl puts the return address in x30 and ret does not move sp */
#define TK_RET_SP_DELTA 0

/*
 * At a function's first instruction: its return address, in x30 (the link register),
 * not yet signed there (paciasp, when the function has it, comes at or after the
 * entry; a uprobe at the entry runs before it).
 */
static __always_inline long tk_entry_ret(struct pt_regs *ctx, __u64 *ret)
{
	*ret = PT_REGS_RET(ctx);
	return 0;
}

/*
 * As x86's: x0 is the first argument and the return value both, so the kernel keeps
 * the argument in orig_x0; syscallno is an int, -1 (NO_SYSCALL) outside a system call.
 */
static __always_inline void tk_core_user_regs(struct pt_regs *regs, __u64 *ip, __u64 *sp,
					      __u64 *fp, __u64 *lr, __u64 *nr, __u64 args[6])
{
	*ip = BPF_CORE_READ(regs, pc);
	*sp = BPF_CORE_READ(regs, sp);
	*fp = BPF_CORE_READ(regs, regs[29]);
	*lr = BPF_CORE_READ(regs, regs[30]);	/* a leaf's return address: no frame saved it */
	*nr = (__s64)BPF_CORE_READ(regs, syscallno);
	args[0] = BPF_CORE_READ(regs, orig_x0);
	args[1] = BPF_CORE_READ(regs, regs[1]);
	args[2] = BPF_CORE_READ(regs, regs[2]);
	args[3] = BPF_CORE_READ(regs, regs[3]);
	args[4] = BPF_CORE_READ(regs, regs[4]);
	args[5] = BPF_CORE_READ(regs, regs[5]);
}

#else
#error "bpf/arch.bpf.h: build with -D__TARGET_ARCH_x86 or -D__TARGET_ARCH_arm64"
#endif

#endif /* __ARCH_BPF_H */
