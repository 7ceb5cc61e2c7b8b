// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libunwfp.so for the unw_mixed workload: built WITH frame pointers
 * (flags.mk), between frames of a program built without them:
 * main → outer (no fp) → lib_middle (fp, here) → callback_inner (no fp) → burn.
 */
#include "unwfp.h"

volatile unsigned long unwfp_sink;

__attribute__((noinline, noclone)) void lib_middle(unwfp_cb cb, unsigned long units)
{
	cb(units);
	unwfp_sink++;	/* work after the call: no tail call */
}
