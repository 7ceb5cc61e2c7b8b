// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* stacks_shape linked statically (flags.mk): tracekit stacks in the QEMU guests (tests/vm). */
#include "stacks_shape.c"
