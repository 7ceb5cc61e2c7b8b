// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* libcpuhot.so: the hot function of cpu_shlib lives in a shared library. */
volatile unsigned long cpuhot_sink;

__attribute__((noinline)) void shlib_hot(unsigned long units)
{
	unsigned long i, x = cpuhot_sink;

	for (i = 0; i < units * 1000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	cpuhot_sink = x;
}
