/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* libunwfp.so (built with frame pointers): calls @cb back with @units. */
#ifndef __UNWFP_H
#define __UNWFP_H

typedef void (*unwfp_cb)(unsigned long units);

void lib_middle(unwfp_cb cb, unsigned long units);

#endif /* __UNWFP_H */
