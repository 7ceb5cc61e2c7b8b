// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A short-lived process: burns 200 ms (or argv[1] ms) of CPU time in
 * short_lived_hot() and exits. A capture running meanwhile must still name its
 * frames. CPU time, not wall time: on a busy machine a process preempted for
 * its whole span would otherwise exit having run for nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void short_lived_hot(double until)
{
	struct timespec ts;
	unsigned long x = sink;

	do {
		for (int i = 0; i < 100000; i++)
			x = x * 2862933555777941757UL + 3037000493UL;
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < until);
	sink = x;
}

int main(int argc, char **argv)
{
	struct timespec ts;
	double ms = 200;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("Usage: %s [MS]\nBurn MS milliseconds (default 200) of CPU time in "
		       "short_lived_hot(), then exit 0.\n", argv[0]);
		return 0;
	}
	if (argc > 1)
		ms = atof(argv[1]);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	short_lived_hot(ts.tv_sec + ts.tv_nsec / 1e9 + ms / 1000);
	sink++;
	return 0;
}
