// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* cpu_offcpu_span linked statically (flags.mk): waits that span the capture in the QEMU guests. */
#include "cpu_offcpu_span.c"
