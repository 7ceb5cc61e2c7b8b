// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Spends its CPU in shlib_hot() of libcpuhot.so (found through an $ORIGIN
 * rpath): a profile must name the function and the library's mapping.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void shlib_hot(unsigned long units);

int main(int argc, char **argv)
{
	struct timespec ts;
	double secs = 2, end;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("Usage: %s [SECONDS]\nBurn CPU in libcpuhot.so's shlib_hot() for "
		       "SECONDS (default 2), then exit 0.\n", argv[0]);
		return 0;
	}
	if (argc > 1)
		secs = atof(argv[1]);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	end = ts.tv_sec + ts.tv_nsec / 1e9 + secs;
	do {
		shlib_hot(50);
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < end);
	return 0;
}
