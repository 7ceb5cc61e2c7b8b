// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * alloc_steady: allocates and frees at a steady pace and says, every 100 ms,
 * what the in-process sampler (libtkalloc.so) did meanwhile.
 *
 *   alloc_steady [-d SECONDS] [-n PAIRS]
 *
 * Each round times -n (default 20000) malloc(4096)/free pairs, then prints
 *   "round=R allocs=A off=O mean=M ns=N"
 * A: the alloc marker's calls so far, O: 1 once the sampler turned itself
 * off, M: the mean it samples with (0: nothing), from tk_alloc_test_log
 * (TK_ALLOC_TEST_COUNTS=1 under libtkalloc.so; without it, or without the
 * library, A, O and M are -1), N: nanoseconds per pair in this round. It
 * runs -d seconds (default 30), or until a signal ends it. Line-buffered, so
 * a pipe reads each round as it ends.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tkalloc_test.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	struct tk_alloc_test_log *log = dlsym(RTLD_DEFAULT, TK_ALLOC_TEST_LOG);
	double seconds = 30, t0, a, b;
	long pairs = 20000, i, round;
	int c;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: %s [-d SECONDS] [-n PAIRS]\n"
		       "malloc(4096)/free PAIRS times a round (default 20000), a round every\n"
		       "100 ms for SECONDS (default 30); each round prints\n"
		       "\"round=R allocs=A off=O mean=M ns=N\" (libtkalloc.so's test log under\n"
		       "TK_ALLOC_TEST_COUNTS=1, else -1; N ns a pair)\n", argv[0]);
		return 0;
	}
	while ((c = getopt(argc, argv, "d:n:")) != -1) {
		if (c == 'd')
			seconds = atof(optarg);
		else if (c == 'n')
			pairs = atol(optarg);
		else
			return 2;
	}
	if (!(seconds > 0) || pairs <= 0)
		return 2;
	setvbuf(stdout, NULL, _IOLBF, 0);
	t0 = now();
	for (round = 0; now() - t0 < seconds; round++) {
		a = now();
		for (i = 0; i < pairs; i++) {
			/* through a volatile: the compiler may not drop the pair */
			void *volatile p = malloc(4096);

			free(p);
		}
		b = now();
		printf("round=%ld allocs=%lld off=%lld mean=%lld ns=%.1f\n", round,
		       log ? (long long)__atomic_load_n(&log->nr_alloc, __ATOMIC_RELAXED) : -1,
		       log ? (long long)__atomic_load_n(&log->off, __ATOMIC_ACQUIRE) : -1,
		       log ? (long long)log->sample_bytes : -1, (b - a) * 1e9 / pairs);
		usleep(100 * 1000);
	}
	return 0;
}
