/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Frames to profile locations, with a cache: what tk_cpu_profile__build()
 * does for each frame, for collectors that walk their own stacks (alloc).
 * Return addresses (@ret) are looked up one byte back; frames nothing names
 * become "module+0xOFFSET" or "[unknown]" and are counted as unsymbolized.
 */
#ifndef __TK_PROFILE_LOCS_H
#define __TK_PROFILE_LOCS_H

#include <stdbool.h>
#include <stdint.h>

#include "profile/profile.h"
#include "sym/symbolize.h"

struct tk_locs;

struct tk_locs *tk_locs__new(struct tk_symbolizer *s, struct tk_profile *p);
/* The location of user address @addr of (@pid, @gen) into *@loc. Returns 0 or -ENOMEM. */
int tk_locs__user(struct tk_locs *b, uint32_t pid, uint32_t gen, uint64_t addr, bool ret,
		    uint64_t *loc);
int tk_locs__kernel(struct tk_locs *b, uint64_t addr, bool ret, uint64_t *loc);
/* Frames looked up so far that were left unnamed (each use counts). */
uint64_t tk_locs__unsymbolized(const struct tk_locs *b);
/* Of those, frames of JIT code that no perf map or jitdump named ("jit_unnamed_frames"). */
uint64_t tk_locs__jit_unnamed(const struct tk_locs *b);
void tk_locs__free(struct tk_locs *b);
/*
 * Write into @p what JIT code came to: the loss counter "jit_unnamed_frames"
 * (@jit_unnamed, always, 0 too) and notes of the perf maps and jitdumps @s read.
 */
void tk_locs__report_jit(struct tk_profile *p, struct tk_symbolizer *s, uint64_t jit_unnamed);

#endif /* __TK_PROFILE_LOCS_H */
