/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What user space asks of the architecture it is built for (x86-64 or arm64: the
 * Makefile's ARCH). The perf_event user registers the unwinders read: by bit
 * number, which is the order a sample carries them in, the frame pointer, the
 * stack pointer and the program counter on both (x86: bp 6, sp 7, ip 8; arm64:
 * x29 29, sp 31, pc 32); arm64 adds LR (x30, bit 30: the leaf's return
 * address until it is saved), so a sample carries TK_PERF_REGS_NR words in
 * the order TK_PERF_REG_* say.
 */
#ifndef __TK_CORE_ARCH_H
#define __TK_CORE_ARCH_H

#include <asm/perf_regs.h>

#if defined(__x86_64__)
#define TK_PERF_REGS_USER                                                            \
	((1ULL << PERF_REG_X86_BP) | (1ULL << PERF_REG_X86_SP) | (1ULL << PERF_REG_X86_IP))
#define TK_PERF_REGS_NR 3
#define TK_PERF_REG_BP 0
#define TK_PERF_REG_SP 1
#define TK_PERF_REG_IP 2
#define TK_PERF_REG_LR (-1)		/* none */
/* the programs this build reads (ELF e_machine EM_X86_64) */
#define TK_ARCH_ELF_MACHINE 62
/* task_struct's thread pointer (glibc's pthread_t: CPython's thread_id), by BTF path */
#define TK_ARCH_TP_MEMBER "thread.fsbase"
#elif defined(__aarch64__)
#define TK_PERF_REGS_USER                                                            \
	((1ULL << PERF_REG_ARM64_X29) | (1ULL << PERF_REG_ARM64_LR) |                  \
	 (1ULL << PERF_REG_ARM64_SP) | (1ULL << PERF_REG_ARM64_PC))
#define TK_PERF_REGS_NR 4
#define TK_PERF_REG_BP 0
#define TK_PERF_REG_LR 1
#define TK_PERF_REG_SP 2
#define TK_PERF_REG_IP 3
/* EM_AARCH64 */
#define TK_ARCH_ELF_MACHINE 183
/* TPIDR_EL0 as saved at each switch: glibc's struct pthread lies below it */
#define TK_ARCH_TP_MEMBER "thread.uw.tp_value"
#else
#error "tracekit builds for x86-64 and arm64"
#endif

#endif /* __TK_CORE_ARCH_H */
