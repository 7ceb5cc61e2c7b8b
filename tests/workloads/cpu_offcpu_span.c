// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Waits that span the capture, with a known answer: before it prints
 * "ready", one thread takes a mutex and blocks in read() on a pipe nobody
 * writes (in blocked_read()), another blocks on that mutex (in
 * blocked_lock()); neither runs again. The main thread spins in on_spin()
 * for SECONDS, then the process exits.
 *
 *   cpu_offcpu_span SECONDS
 *
 * Prints "ready pid=P reader=T1 locker=T2" once both are blocked (their
 * /proc state is S). Exits 0; 2 on a usage error, 1 when a thread never blocks.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static int pipefd[2];
static volatile int tids[2];
static volatile unsigned long sink;

__attribute__((noinline)) void blocked_read(void)
{
	char c;

	/* nobody writes: this never returns (the process exits under it) */
	while (read(pipefd[0], &c, 1) <= 0)
		;
	sink += c;
}

static void *reader(void *arg)
{
	pthread_mutex_lock(&mtx);
	tids[0] = syscall(SYS_gettid);
	blocked_read();
	pthread_mutex_unlock(&mtx);
	return NULL;
}

__attribute__((noinline)) void blocked_lock(void)
{
	pthread_mutex_lock(&mtx);
	pthread_mutex_unlock(&mtx);
}

static void *locker(void *arg)
{
	tids[1] = syscall(SYS_gettid);
	blocked_lock();
	return NULL;
}

__attribute__((noinline)) void on_spin(double until)
{
	unsigned long x = sink;
	struct timespec ts;

	do {
		for (int i = 0; i < 100000; i++)
			x = x * 2862933555777941757UL + 3037000493UL;
		clock_gettime(CLOCK_MONOTONIC, &ts);
	} while (ts.tv_sec + ts.tv_nsec / 1e9 < until);
	sink = x;
}

/* Thread @tid's state letter from /proc, or '?' */
static char state_of(int tid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", tid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

int main(int argc, char **argv)
{
	pthread_t a, b;
	struct timespec ts;
	double secs;
	int i;

	if (argc != 2 || (secs = atof(argv[1])) <= 0) {
		fprintf(stderr, "usage: cpu_offcpu_span SECONDS\n");
		return 2;
	}
	if (pipe(pipefd) || pthread_create(&a, NULL, reader, NULL))
		return 1;
	while (!tids[0])
		usleep(1000);
	if (pthread_create(&b, NULL, locker, NULL))
		return 1;
	for (i = 0; i < 2000; i++) {
		if (tids[1] && state_of(tids[0]) == 'S' && state_of(tids[1]) == 'S')
			break;
		usleep(1000);
	}
	if (i == 2000)
		return 1;
	/* settled: both have switched out for good */
	usleep(50000);
	printf("ready pid=%d reader=%d locker=%d\n", getpid(), tids[0], tids[1]);
	fflush(stdout);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	on_spin(ts.tv_sec + ts.tv_nsec / 1e9 + secs);
	_exit(0);
}
