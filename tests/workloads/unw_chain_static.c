// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* unw_chain linked statically (flags.mk): unwinding checks in the QEMU guests (tests/vm). */
#include "unw_chain.c"
