/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A CPU workload with a known answer: main → caller → hot and main → caller →
 * cold, where hot does 3 units of work for every 1 of cold, so a profile must
 * show hot ≈ 75 % and cold ≈ 25 % of the samples, both under caller under
 * main. Each round's length is jittered so the split cannot phase-lock with
 * the sampling period (see shared/notes/stacks.md). Built with frame pointers
 * and no sibling-call optimisation so the chain is whole. The same source
 * builds cpu_split (symbols) and cpu_stripped (stripped: module+offset).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;

/* About 1 µs-scale units of pure CPU work, not foldable by the compiler. */
NOINLINE static void spin(unsigned long units)
{
	unsigned long i, x = sink;

	for (i = 0; i < units * 1000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

NOINLINE void hot(unsigned long units)
{
	spin(3 * units);
	sink++;
}

NOINLINE void cold(unsigned long units)
{
	spin(units);
	sink++;
}

NOINLINE void caller(unsigned long units)
{
	hot(units);
	cold(units);
	sink++;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int usage(const char *prog, int code)
{
	printf("Usage: %s [SECONDS]\n"
	       "Burn CPU for SECONDS (default 2): main -> caller -> hot (75%%) and\n"
	       "main -> caller -> cold (25%%). Prints nothing; exits 0.\n",
	       prog);
	return code;
}

int main(int argc, char **argv)
{
	double secs = 2, end;
	unsigned int seed = getpid();

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return usage(argv[0], 0);
	if (argc > 1 && (secs = atof(argv[1])) <= 0)
		return usage(argv[0], 2);
	end = now_s() + secs;
	while (now_s() < end)
		caller(20 + rand_r(&seed) % 40);	/* jitter: 20..59 units a round */
	return 0;
}
