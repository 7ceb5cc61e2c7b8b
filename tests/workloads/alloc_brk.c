// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * alloc_brk: threads in brk(2) at once, for a tracer's brk bookkeeping.
 *
 *   alloc_brk [-t THREADS] [-d SECONDS] [-m MIB]
 *
 * -t threads (default 4) each call brk(0) (the raw system call: it moves
 * nothing, so malloc's own use of the break is undisturbed) in a loop for -d
 * seconds (default 1). brk takes the address space's lock for writing, so
 * the threads queue inside the call: several are in it at once. That alone
 * needs them on CPUs at the same moment (a kernel without preemption does
 * not switch a task out inside brk); so one more thread maps -m MiB
 * (default 64) with MAP_POPULATE and unmaps it, in a loop: the unmapping
 * holds the lock for milliseconds, and every brk thread waits inside the
 * call meanwhile, on any machine. Prints "calls=N" at the end. Exits 0; 1
 * when a thread cannot start; 2 on a usage error.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>

static double seconds = 1;
static size_t map_bytes = 64ul << 20;
static atomic_ulong calls;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *loop(void *arg)
{
	double t0 = now();
	unsigned long n = 0;

	while (now() - t0 < seconds) {
		for (int i = 0; i < 256; i++)
			syscall(SYS_brk, 0);
		n += 256;
	}
	atomic_fetch_add(&calls, n);
	return NULL;
}

/* Holds the address space's lock for a while, over and over */
static void *churn(void *arg)
{
	double t0 = now();

	while (now() - t0 < seconds) {
		void *p = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);

		if (p != MAP_FAILED)
			munmap(p, map_bytes);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th[65];
	int c, n = 4, i;
	long mib;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: %s [-t THREADS] [-d SECONDS] [-m MIB]\n"
		       "THREADS (default 4) call brk(0) in a loop for SECONDS (default 1) while\n"
		       "another maps and unmaps MIB MiB (default 64); prints calls=N\n", argv[0]);
		return 0;
	}
	while ((c = getopt(argc, argv, "t:d:m:")) != -1) {
		if (c == 't') {
			n = atoi(optarg);
		} else if (c == 'd') {
			seconds = atof(optarg);
		} else if (c == 'm') {
			mib = atol(optarg);
			if (mib < 1 || mib > 4096)
				return 2;
			map_bytes = (size_t)mib << 20;
		} else {
			return 2;
		}
	}
	if (n < 1 || n > 64 || !(seconds > 0))
		return 2;
	for (i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, loop, NULL))
			return 1;
	if (pthread_create(&th[n], NULL, churn, NULL))
		return 1;
	for (i = 0; i <= n; i++)
		pthread_join(th[i], NULL);
	printf("calls=%lu\n", atomic_load(&calls));
	return 0;
}
