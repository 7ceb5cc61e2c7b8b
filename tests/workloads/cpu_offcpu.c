// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Off-CPU time with a known answer: for SECONDS, the main thread waits in
 * turn 30 ms in off_long() and 10 ms in off_short() (both nanosleep, through
 * Debian's libc, which keeps no frame pointers), so 3/4 of its off-CPU time
 * is under off_long; a second thread spins in on_spin() the whole time. With
 * "d", each turn also waits 20 ms in off_vfork(): the parent of a vfork()
 * sleeps uninterruptibly (killable: D state) until the child exits.
 *
 *   cpu_offcpu SECONDS [d]
 *
 * Prints "turns=N long_ms=L short_ms=S vfork_ms=V" at the end: the wall time it
 * spent in each (on a loaded machine a vfork child is scheduled late, and the
 * parent's D wait grows: a test compares with these, not with 30:10:20).
 * Exits 0; 2 on a usage error.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static volatile int done;
static volatile unsigned long sink;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts))
		;
}

__attribute__((noinline)) void off_long(void)
{
	sleep_ms(30);
}

__attribute__((noinline)) void off_short(void)
{
	sleep_ms(10);
}

/* The child sleeps 20 ms and exits; until then the parent waits in D state. */
__attribute__((noinline)) void off_vfork(void)
{
	struct timespec ts = { 0, 20000000L };
	pid_t pid = vfork();

	if (pid == 0) {
		nanosleep(&ts, NULL);
		_exit(0);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
}

__attribute__((noinline)) void on_spin(void)
{
	unsigned long x = sink;

	while (!done)
		for (int i = 0; i < 10000; i++)
			x = x * 2862933555777941757UL + 3037000493UL;
	sink = x;
}

static void *spinner(void *arg)
{
	on_spin();
	return NULL;
}

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 0, end, in_long = 0, in_short = 0, in_vfork = 0;
	bool dstate = argc > 2 && !strcmp(argv[2], "d");
	unsigned long turns = 0;
	pthread_t t;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: cpu_offcpu SECONDS [d]: waits 30 ms in off_long and 10 ms in "
		       "off_short in turn (and 20 ms in off_vfork, D state, with d) while a "
		       "thread spins in on_spin\n");
		return 0;
	}
	if (secs <= 0 || argc > 3 || (argc > 2 && !dstate)) {
		fprintf(stderr, "usage: cpu_offcpu SECONDS [d]\n");
		return 2;
	}
	if (pthread_create(&t, NULL, spinner, NULL))
		return 1;
	end = now_s() + secs;
	while (now_s() < end) {
		double t0 = now_s(), t1, t2;

		off_long();
		t1 = now_s();
		off_short();
		t2 = now_s();
		if (dstate)
			off_vfork();
		in_long += t1 - t0;
		in_short += t2 - t1;
		in_vfork += now_s() - t2;
		turns++;
	}
	done = 1;
	pthread_join(t, NULL);
	printf("turns=%lu long_ms=%.1f short_ms=%.1f vfork_ms=%.1f\n", turns, 1e3 * in_long,
	       1e3 * in_short, 1e3 * in_vfork);
	return 0;
}
