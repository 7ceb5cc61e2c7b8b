/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The architecture the records BPF and user space share are laid out for: a BPF
 * object says it with -D__TARGET_ARCH_ (the Makefile's ARCH), user space by its
 * compiler; both halves of a build are for the same ARCH. A field only one
 * architecture has (arm64's LR) is under TK_ARCH_ARM64, so x86's records, and its
 * BPF instructions, stay as they were.
 */
#ifndef __TK_REC_ARCH_H
#define __TK_REC_ARCH_H

#if defined(__TARGET_ARCH_arm64) || (!defined(__bpf__) && defined(__aarch64__))
#define TK_ARCH_ARM64 1
#else
#define TK_ARCH_ARM64 0
#endif

#endif /* __TK_REC_ARCH_H */
