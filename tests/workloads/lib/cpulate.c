// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libcpulate.so for the cpu_dlopen workload, which dlopen()s it only after
 * sleeping: a library no capture at the start can know. cpulate_burn →
 * cpulate_hot, both here, with frame pointers (flags.mk).
 */
volatile unsigned long cpulate_sink;

/* Static: reached without a PLT stub, and named by .symtab only. */
__attribute__((noinline)) static void cpulate_hot(unsigned long units)
{
	unsigned long i, x = cpulate_sink;

	for (i = 0; i < units * 1000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	cpulate_sink = x;
}

__attribute__((noinline)) void cpulate_burn(unsigned long units)
{
	cpulate_hot(units);
	cpulate_sink++;	/* work after the call: no tail call */
}
