// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The main thread leaves with pthread_exit() while a worker burns CPU in
 * orphan_worker_hot() for SECONDS (default 2): the process lives on without
 * its leader, and its samples must still be named.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;
static double secs = 2;

__attribute__((noinline)) void orphan_worker_hot(double until)
{
	struct timespec ts;
	unsigned long x = sink;

	do {
		for (int i = 0; i < 100000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < until);
	sink = x;
}

static void *worker(void *arg)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	orphan_worker_hot(ts.tv_sec + ts.tv_nsec / 1e9 + secs);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("Usage: %s [SECONDS]\nThe main thread exits at once; a worker burns CPU in "
		       "orphan_worker_hot() for SECONDS (default 2); exit 0.\n", argv[0]);
		return 0;
	}
	if (argc > 1)
		secs = atof(argv[1]);
	if (pthread_create(&th, NULL, worker, NULL))
		return 1;
	pthread_exit(NULL);
}
