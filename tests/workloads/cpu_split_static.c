// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* cpu_split linked statically (flags.mk): the cpu checks in the QEMU guests (tests/vm). */
#include "cpu_split.c"
