// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* alloc_leak linked statically (flags.mk): the alloc checks in the QEMU guests (tests/vm). */
#include "alloc_leak.c"
