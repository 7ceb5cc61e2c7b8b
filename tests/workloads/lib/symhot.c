// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libsymhot.so for the sym_shlib workload: an exported hot function, and a
 * static one that only the library's .symtab names.
 */
#include "symhot.h"

static volatile unsigned long symhot_sink;

__attribute__((noinline, noclone)) static unsigned long symhot_inner(unsigned long x)
{
	unsigned long i;

	for (i = 0; i < 1000; i++)
		x = x * 2862933555777941757UL + 3037000493UL;
	symhot_sink += x;
	return x;
}

unsigned long symhot_spin(unsigned long rounds)
{
	unsigned long i, x = symhot_sink;

	for (i = 0; i < rounds; i++)
		x += symhot_inner(x);
	symhot_sink = x;
	return x;
}

void symhot_report(FILE *f)
{
	fprintf(f, "symhot_spin %p\n", (void *)symhot_spin);
	fprintf(f, "symhot_inner %p\n", (void *)symhot_inner);
}
