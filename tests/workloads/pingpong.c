// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A context-switch-heavy load: two threads pass one byte back and forth over
 * two pipes, ROUNDS round trips (default 200000), each a blocking read, so
 * every hop switches a thread out and another in. Prints the wall time and
 * the rate: "rounds=N seconds=S switches_per_s=R" (two switches a hop at
 * least). The off-CPU benchmark (tools/bench-offcpu.sh) times it.
 *
 *   pingpong [ROUNDS [WORK_US]]
 *
 * WORK_US (default 0): each side computes about that many microseconds before
 * each hop (a loop of a fixed count, calibrated at start), for a lighter
 * switch rate with work between switches, as a server's threads do.
 *
 * Exits 0; 1 when a read or write fails; 2 on a usage error.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int ping[2], pong[2];
static long rounds = 200000;
static unsigned long work_iters;	/* the loop's count for WORK_US */
static volatile unsigned long sink;

__attribute__((noinline)) static void work(void)
{
	unsigned long i, x = sink;

	for (i = 0; i < work_iters; i++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	sink = x;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static int pong_side(void)
{
	char c;
	long i;

	for (i = 0; i < rounds; i++) {
		if (read(ping[0], &c, 1) != 1)
			return 1;
		work();
		if (write(pong[1], &c, 1) != 1)
			return 1;
	}
	return 0;
}

static void *ponger(void *arg)
{
	return (void *)(long)pong_side();
}

__attribute__((noinline)) static int ping_side(void)
{
	char c = 'x';
	long i;

	for (i = 0; i < rounds; i++) {
		work();
		if (write(ping[1], &c, 1) != 1 || read(pong[0], &c, 1) != 1)
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	double t0, t, work_us = 0;
	pthread_t th;
	void *ret;
	int err;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: pingpong [ROUNDS [WORK_US]]: two threads pass a byte over two pipes "
		       "ROUNDS times (default 200000), each side computing about WORK_US "
		       "microseconds (default 0) before each hop; prints rounds=, seconds=, "
		       "switches_per_s=\n");
		return 0;
	}
	if (argc > 3 || (argc >= 2 && (rounds = atol(argv[1])) <= 0) ||
	    (argc == 3 && ((work_us = atof(argv[2])) < 0 || work_us > 1e6))) {
		fprintf(stderr, "usage: pingpong [ROUNDS [WORK_US]]\n");
		return 2;
	}
	if (work_us > 0) {
		/* calibrate: the best of 5 timings of a 2^20 count */
		double best = 1e9, a;
		int k;

		work_iters = 1UL << 20;
		for (k = 0; k < 5; k++) {
			a = now_s();
			work();
			a = now_s() - a;
			if (a < best)
				best = a;
		}
		work_iters = (unsigned long)(work_us * 1e-6 / best * (1UL << 20));
	}
	if (pipe(ping) || pipe(pong) || pthread_create(&th, NULL, ponger, NULL))
		return 1;
	t0 = now_s();
	err = ping_side();
	pthread_join(th, &ret);
	t = now_s() - t0;
	if (err || ret)
		return 1;
	printf("rounds=%ld seconds=%.3f switches_per_s=%.0f\n", rounds, t, 2 * rounds / t);
	return 0;
}
