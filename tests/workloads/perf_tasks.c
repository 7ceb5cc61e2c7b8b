// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Threads, children, exec and deep stacks for the perf backend's tests
 * (tests/integration/test_cpu_perf.c). Each mode waits WAIT_MS (300) first,
 * so a test can attach to the process as it was started, then burns SECONDS
 * (or MS) of CPU time (not wall time: a busy machine makes the run longer,
 * not the profile thinner) in functions named after what they show:
 *   threads SECONDS       thread "early" (started at once) in task_early_spin,
 *                         thread "late" (started after the wait) in task_late_spin
 *   fork SECONDS          a child in task_child_spin, the parent in task_parent_spin
 *   forkshort MS N        N children one after the other, each MS ms in
 *                         task_fork_child and gone; the parent only waits
 *   exec SECONDS PROG ARG...  task_before_exec, then exec PROG ARG...
 *   deep SECONDS DEPTH    task_deep recursing DEPTH frames, task_deep_leaf at the bottom
 * Built with frame pointers (the pragma below: the default workload flags have
 * none), and every spinning function calls out, so frame-pointer walks keep
 * its caller (shared/notes/stacks.md).
 */
#pragma GCC optimize("no-omit-frame-pointer", "no-optimize-sibling-calls", "no-inline")
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))
#define WAIT_MS 300

static volatile unsigned long sink;

/* CPU time of the calling thread: a busy machine stretches the run, not the samples */
static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

NOINLINE static void burn(double seconds)
{
	double until = cpu_now() + seconds;
	unsigned long x = sink;
	int i;

	do {
		for (i = 0; i < 20000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
	} while (cpu_now() < until);
	sink = x;
}

NOINLINE void task_early_spin(double s)
{
	burn(s);
	sink++;
}

NOINLINE void task_late_spin(double s)
{
	burn(s);
	sink++;
}

NOINLINE void task_child_spin(double s)
{
	burn(s);
	sink++;
}

NOINLINE void task_parent_spin(double s)
{
	burn(s);
	sink++;
}

NOINLINE void task_fork_child(double s)
{
	burn(s);
	sink++;
}

NOINLINE void task_before_exec(double s)
{
	burn(s);
	sink++;
}

NOINLINE void task_deep_leaf(double s)
{
	burn(s);
	sink++;
}

NOINLINE void task_deep(int depth, double s)
{
	if (depth > 1)
		task_deep(depth - 1, s);
	else
		task_deep_leaf(s);
	sink++;
}

static double seconds;

static void *early(void *arg)
{
	prctl(PR_SET_NAME, "early");
	task_early_spin(seconds + WAIT_MS / 1000.0);
	return NULL;
}

static void *late(void *arg)
{
	prctl(PR_SET_NAME, "late");
	task_late_spin(seconds);
	return NULL;
}

static int usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"Usage: %s threads SECONDS | fork SECONDS | forkshort MS N |\n"
		"          exec SECONDS PROG [ARG...] | deep SECONDS DEPTH\n"
		"Threads, children, exec and deep stacks for the perf backend's tests;\n"
		"every mode first waits %d ms. See the comment at the top of the source.\n",
		argv0, WAIT_MS);
	return f == stdout ? 0 : 2;
}

int main(int argc, char **argv)
{
	pthread_t a, b;
	pid_t pid;
	int i, n;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return usage(stdout, argv[0]);
	if (argc < 3)
		return usage(stderr, argv[0]);
	seconds = atof(argv[2]);

	if (!strcmp(argv[1], "threads")) {
		if (pthread_create(&a, NULL, early, NULL))
			return 1;
		usleep(WAIT_MS * 1000);
		if (pthread_create(&b, NULL, late, NULL))
			return 1;
		pthread_join(a, NULL);
		pthread_join(b, NULL);
		return 0;
	}
	usleep(WAIT_MS * 1000);
	if (!strcmp(argv[1], "fork")) {
		pid = fork();
		if (pid < 0)
			return 1;
		if (pid == 0) {
			task_child_spin(seconds);
			_exit(0);
		}
		task_parent_spin(seconds);
		return waitpid(pid, NULL, 0) == pid ? 0 : 1;
	}
	if (!strcmp(argv[1], "forkshort") && argc > 3) {
		n = atoi(argv[3]);
		for (i = 0; i < n; i++) {
			pid = fork();
			if (pid < 0)
				return 1;
			if (pid == 0) {
				task_fork_child(seconds / 1000);
				_exit(0);
			}
			if (waitpid(pid, NULL, 0) != pid)
				return 1;
		}
		return 0;
	}
	if (!strcmp(argv[1], "exec") && argc > 3) {
		task_before_exec(seconds);
		execv(argv[3], argv + 3);
		perror(argv[3]);
		return 1;
	}
	if (!strcmp(argv[1], "deep") && argc > 3) {
		task_deep(atoi(argv[3]), seconds);
		return 0;
	}
	return usage(stderr, argv[0]);
}
