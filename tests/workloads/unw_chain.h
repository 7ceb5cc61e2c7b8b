/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A CPU workload with a known answer for unwinding by CFI, built without frame
 * pointers (and without sibling calls, so that every frame stays):
 *
 *   main → run → stage_a → stage_b → qsort(3) → compare → burn    ~75 %
 *   main → run → cold_path                                        ~25 %
 *
 * qsort is glibc's (no frame pointers): qsort itself tail-calls __qsort_r, so
 * between stage_b and compare the stack holds __qsort_r and one or more
 * msort_with_tmp frames (glibc 2.36's merge sort), never a "qsort" frame.
 * Every round sorts a jittered number of random ints; compare burns UNIT_CMP
 * units per call and cold_path then burns a third of what the round's
 * compares burnt, so the split is 3:1 whatever qsort does, and the jitter
 * keeps it from phase-locking with a sampling period (shared/notes/stacks.md).
 * A frame-pointer walk from burn or compare loses everything above them.
 *
 * The same source builds unw_chain and unw_chain_stripped (-s, module+offset).
 */
#include "unw_common.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* external linkage, no clones: the names stay as written, no ".constprop.0" */
#define UNW_FN __attribute__((noinline, noclone))
#define UNIT_CMP 1	/* burn units per comparison */

volatile unsigned long unw_sink;
static unsigned long cmp_calls;

int main(int argc, char **argv);

/* One unit is ~1 µs of dependent multiplies the compiler cannot fold. */
UNW_FN void burn(unsigned long units)
{
	unsigned long i, x = unw_sink;

	for (i = 0; i < units * 1000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	unw_sink = x;
}

UNW_FN int compare(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	burn(UNIT_CMP);
	cmp_calls++;	/* work after the call */
	return (x > y) - (x < y);
}

UNW_FN void stage_b(int *v, size_t n)
{
	qsort(v, n, sizeof(*v), compare);
	unw_sink += v[0];
}

UNW_FN void stage_a(int *v, size_t n, unsigned int *seed)
{
	size_t i;

	for (i = 0; i < n; i++)
		v[i] = rand_r(seed);
	stage_b(v, n);
	unw_sink += v[n - 1];
}

/* A third of @hot_units, in its own loop (not burn): its samples end in cold_path. */
UNW_FN void cold_path(unsigned long hot_units)
{
	unsigned long i, x = unw_sink;

	for (i = 0; i < hot_units * 1000 / 3; i++)
		x = x * 2862933555777941757UL + 3037000493UL;
	unw_sink = x;
}

/* One round: 16..63 ints sorted (hot), then a third of that work cold. */
UNW_FN void run(unsigned int *seed, unsigned long *hot_units)
{
	int v[64];
	size_t n = 16 + rand_r(seed) % 48;
	unsigned long before = cmp_calls, hot;

	stage_a(v, n, seed);
	hot = (cmp_calls - before) * UNIT_CMP;
	cold_path(hot);
	*hot_units += hot;
}

static int usage(const char *prog, int code)
{
	printf("Usage: %s [-v] [SECONDS]\n"
	       "Burn CPU for SECONDS (default 2), in a program without frame pointers:\n"
	       "  main -> run -> stage_a -> stage_b -> qsort -> compare -> burn  (75%%)\n"
	       "  main -> run -> cold_path                                      (25%%)\n"
	       "(qsort shows as glibc's __qsort_r and msort_with_tmp frames.) Prints\n"
	       "nothing; with -v, \"NAME 0xADDRESS\" per function before the run and\n"
	       "\"rounds=N hot_units=N\" after it (cold: a third). Exits 0; 2: bad usage.\n",
	       prog);
	return code;
}

static inline __attribute__((always_inline)) int unw_chain_main(int argc, char **argv)
{
	unsigned long hot = 0, rounds = 0;
	unsigned int seed = getpid();
	double secs = 2, end;
	int i, verbose = 0;

	i = unw_parse_args(argc, argv, &verbose, &secs, 1, 0);
	if (i)
		return usage(argv[0], i == 1 ? 0 : 2);
	if (verbose) {
		printf("main %p\nrun %p\nstage_a %p\nstage_b %p\nqsort %p\n"
		       "compare %p\nburn %p\ncold_path %p\n",
		       (void *)main, (void *)run, (void *)stage_a, (void *)stage_b,
		       (void *)qsort, (void *)compare, (void *)burn, (void *)cold_path);
		fflush(stdout);
	}
	end = unw_now_s() + secs;
	while (unw_now_s() < end) {
		run(&seed, &hot);
		rounds++;
	}
	if (verbose)
		printf("rounds=%lu hot_units=%lu\n", rounds, hot);
	return 0;
}
