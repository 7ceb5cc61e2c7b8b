// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* cpu_offcpu linked statically (flags.mk): the off-CPU checks in the QEMU guests (tests/vm). */
#include "cpu_offcpu.c"
