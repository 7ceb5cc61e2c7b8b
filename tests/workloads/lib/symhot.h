/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* libsymhot.so: a shared library with a known hot function, for sym_shlib. */
#ifndef __SYMHOT_H
#define __SYMHOT_H

#include <stdio.h>

/* Burn CPU in the library: @rounds rounds of its inner loop. */
unsigned long symhot_spin(unsigned long rounds);
/* Print "NAME 0xADDRESS" for the library's functions, the static one too. */
void symhot_report(FILE *f);

#endif /* __SYMHOT_H */
