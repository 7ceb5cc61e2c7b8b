// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Fixed CPU work for the overhead benchmark: N units (default 20) of 1e8
 * multiply-add steps on each of T threads (default 1). Always the same work,
 * so its wall time under a tracer against without one is the tracer's cost.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile unsigned long sink;
static long units = 20;

__attribute__((noinline)) static void work_unit(void)
{
	unsigned long x = sink;

	for (long i = 0; i < 100000000; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

static void *run(void *arg)
{
	for (long u = 0; u < units; u++)
		work_unit();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[64];
	long threads = 1, i;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("Usage: %s [UNITS [THREADS]]\nDo UNITS (default 20) x 1e8 multiply-add "
		       "steps on each of THREADS (default 1) threads, then exit 0.\n", argv[0]);
		return 0;
	}
	if (argc > 1)
		units = atol(argv[1]);
	if (argc > 2)
		threads = atol(argv[2]);
	if (units < 1 || threads < 1 || threads > 64) {
		fprintf(stderr, "bench_work: bad arguments\n");
		return 2;
	}
	for (i = 0; i < threads; i++)
		pthread_create(&th[i], NULL, run, NULL);
	for (i = 0; i < threads; i++)
		pthread_join(th[i], NULL);
	return 0;
}
