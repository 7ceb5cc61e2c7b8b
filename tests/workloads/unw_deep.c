// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Stacks deeper than an unwinder keeps (127 frames): two threads recurse
 * DEPTH frames (default 200) through functions of their own, deep_a and
 * deep_b, and allocate at the bottom:
 *
 *   main → thread_a → deep_a × DEPTH → alloc_a → malloc
 *   main → thread_b → deep_b × DEPTH → alloc_b → malloc
 *
 * Every allocation stack is cut at the depth limit; none may hold a frame of
 * the other thread's (or of any earlier sample). Between allocations each
 * thread burns a few microseconds, so a sampling allocator profiler records
 * a few hundred stacks a second. Built without frame pointers and sibling
 * calls (flags.mk).
 */
#include "unw_common.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNW_FN __attribute__((noinline, noclone))
#define BLOCK 4096

volatile unsigned long unw_sink;
static void *volatile unw_keep;		/* the blocks escape: no malloc/free pair is deleted */
static double end_s;
static int depth = 200;

static void burn(unsigned long units)
{
	unsigned long i, x = unw_sink;

	for (i = 0; i < units * 100; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	unw_sink = x;
}

UNW_FN void alloc_a(void)
{
	void *p = malloc(BLOCK);

	unw_keep = p;
	memset(p, 1, 64);
	free(unw_keep);
	unw_sink++;
}

UNW_FN void alloc_b(void)
{
	void *p = malloc(BLOCK);

	unw_keep = p;
	memset(p, 2, 64);
	free(unw_keep);
	unw_sink++;
}

UNW_FN void deep_a(int n)
{
	if (n > 0)
		deep_a(n - 1);
	else
		alloc_a();
	unw_sink++;	/* work after the call: no tail call */
}

UNW_FN void deep_b(int n)
{
	if (n > 0)
		deep_b(n - 1);
	else
		alloc_b();
	unw_sink++;
}

UNW_FN void *thread_a(void *arg)
{
	while (unw_now_s() < end_s) {
		deep_a(depth);
		burn(10);
	}
	return NULL;
}

UNW_FN void *thread_b(void *arg)
{
	while (unw_now_s() < end_s) {
		deep_b(depth);
		burn(10);
	}
	return NULL;
}

static int usage(const char *prog, int code)
{
	printf("Usage: %s [-v] [SECONDS [DEPTH]]\n"
	       "For SECONDS (default 2), two threads recurse DEPTH frames (default 200,\n"
	       "at most 1000) through deep_a and deep_b and allocate %d bytes at the\n"
	       "bottom (alloc_a, alloc_b), then burn a few microseconds. Prints\n"
	       "nothing. Exits 0; 1: no thread; 2: bad usage.\n",
	       prog, BLOCK);
	return code;
}

int main(int argc, char **argv)
{
	double args[2] = { 2, 200 };
	int i, verbose = 0;
	pthread_t a, b;

	i = unw_parse_args(argc, argv, &verbose, args, 2, 0);
	if (i)
		return usage(argv[0], i == 1 ? 0 : 2);
	if (args[1] > 1000 || args[1] != (int)args[1])
		return usage(argv[0], 2);
	depth = (int)args[1];
	end_s = unw_now_s() + args[0];
	if (pthread_create(&a, NULL, thread_a, NULL) || pthread_create(&b, NULL, thread_b, NULL))
		return 1;
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	unw_sink++;
	return 0;
}
