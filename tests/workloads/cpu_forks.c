// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Many short children, with a known answer: forks -n N children (default
 * 5000), at most -j J alive at once (default 2), each burning -m MS
 * milliseconds of CPU (default 2) in forks_child_hot() and exiting. A
 * profile that follows children must name nearly all of them however many
 * came before: a filter that keeps every pid it ever saw fills up.
 *
 *   cpu_forks [-n N] [-j J] [-m MS]
 *
 * Prints "children=N" when all have been reaped. Exits 0; 1 when a fork or
 * a child failed; 2 on a usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

__attribute__((noinline)) void forks_child_hot(double until)
{
	unsigned long x = sink;

	do {
		for (int i = 0; i < 10000; i++)
			x = x * 2862933555777941757UL + 3037000493UL;
	} while (now_s() < until);
	sink = x;
}

static int reap(void)
{
	int status;

	if (wait(&status) < 0)
		return -1;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	long n = 5000, jobs = 2, alive = 0, i;
	double ms = 2;
	int opt, bad = 0;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("Usage: %s [-n CHILDREN] [-j AT_ONCE] [-m MS]\n", argv[0]);
		return 0;
	}
	while ((opt = getopt(argc, argv, "n:j:m:")) != -1) {
		switch (opt) {
		case 'n':
			n = atol(optarg);
			break;
		case 'j':
			jobs = atol(optarg);
			break;
		case 'm':
			ms = atof(optarg);
			break;
		default:
			return 2;
		}
	}
	if (n < 0 || jobs < 1 || ms < 0)
		return 2;
	for (i = 0; i < n; i++) {
		pid_t pid;

		if (alive == jobs) {
			bad |= reap();
			alive--;
		}
		pid = fork();
		if (pid < 0)
			return 1;
		if (!pid) {
			forks_child_hot(now_s() + ms / 1000);
			_exit(0);
		}
		alive++;
	}
	while (alive--)
		bad |= reap();
	printf("children=%ld\n", n);
	return bad ? 1 : 0;
}
