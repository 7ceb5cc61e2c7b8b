// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libunwlate.so for the unw_dlopen workload, which dlopen()s it only after a
 * first phase: mapped late, so an unwinder must learn of it while it runs.
 * Built without frame pointers and without sibling calls (flags.mk):
 * late_outer → late_hot, both here.
 */
volatile unsigned long unwlate_sink;

/* Static: reached without a PLT stub, and named by .symtab only. */
__attribute__((noinline, noclone)) static void late_hot(unsigned long units)
{
	unsigned long i, x = unwlate_sink;

	for (i = 0; i < units * 1000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	unwlate_sink = x;
}

__attribute__((noinline, noclone)) void late_outer(unsigned long units)
{
	late_hot(units);
	unwlate_sink++;	/* work after the call: no tail call */
}
