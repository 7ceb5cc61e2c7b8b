/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* The frame pointer check of one x86-64 function, for the procinfo heuristic. */
#ifndef __TK_X86_PROLOGUE_H
#define __TK_X86_PROLOGUE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Does the code at @code (the first @len bytes of a function) do
 * "push %rbp" and then "mov %rsp,%rbp" before touching the stack otherwise?
 * An endbr64 first, instructions the compiler scheduled in between, and
 * early-exit branches before the push (shrink-wrapping) are allowed.
 */
bool tk_x86__sets_frame_pointer(const unsigned char *code, size_t len);

#endif /* __TK_X86_PROLOGUE_H */
