// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* alloc_leak with jemalloc linked statically into the executable (flags.mk). */
#include "alloc_leak.c"
