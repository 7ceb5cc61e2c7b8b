/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What user space asks of the architecture it is built for (x86-64 or arm64: the
 * Makefile's ARCH). The perf_event user registers the unwinders read: by bit
 * number, which is the order a sample carries them in, the frame pointer, the
 * stack pointer and the program counter on both (x86: bp 6, sp 7, ip 8; arm64:
 * x29 29, sp 31, pc 32), so a sample's three registers mean the same on both.
 */
#ifndef __TK_CORE_ARCH_H
#define __TK_CORE_ARCH_H

#include <asm/perf_regs.h>

#if defined(__x86_64__)
#define TK_PERF_REGS_USER                                                            \
	((1ULL << PERF_REG_X86_BP) | (1ULL << PERF_REG_X86_SP) | (1ULL << PERF_REG_X86_IP))
#elif defined(__aarch64__)
#define TK_PERF_REGS_USER                                                            \
	((1ULL << PERF_REG_ARM64_X29) | (1ULL << PERF_REG_ARM64_SP) |                  \
	 (1ULL << PERF_REG_ARM64_PC))
#else
#error "tracekit builds for x86-64 and arm64"
#endif

#endif /* __TK_CORE_ARCH_H */
