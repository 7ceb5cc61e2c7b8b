// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A host program embedding the tracekit sidecar: known CPU work (example_hot
 * about 3/4 of it, example_cold 1/4, in the main thread and in a worker
 * started after the sidecar), profiled by the sidecar into a directory of its
 * own when, and only when, that is asked for. Whatever the sidecar answers,
 * the program does its work and exits 0: the sidecar never stands in the way.
 *
 * With --heap it also asks the sidecar for heap profiles (they need jemalloc
 * with profiling on: LD_PRELOAD=.../libjemalloc.so.2 MALLOC_CONF=prof:true)
 * and leaks a known amount at a known site: example_leak() keeps --leak-bytes
 * (default 8 MiB) in blocks of 64 KiB, allocated before the work starts;
 * example_churn() allocates and frees at once all along.
 *
 * It is built against libtracekit with -DTK_EMBED (tests/workloads/flags.mk);
 * without it the program still builds and runs, and says it has no sidecar.
 */
#include <errno.h>
#include <stdbool.h>
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef TK_EMBED
#include "tracekit/sidecar.h"
#endif

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Burn @ms milliseconds of CPU; calls out, so frame-pointer walks keep its caller. */
NOINLINE static void spin(double ms)
{
	double until = now() + ms / 1000;
	unsigned long x = sink;
	int i;

	do {
		for (i = 0; i < 20000; i++)
			x = x * 6364136223846793005UL + 1442695040888963407UL;
	} while (now() < until);
	sink = x;
}

NOINLINE static void example_hot(void)
{
	spin(3);
	sink++;
}

NOINLINE static void example_cold(void)
{
	spin(1);
	sink++;
}

#define LEAK_BLOCK (64 * 1024)

static void *volatile escape;

/* The heap's known answer: @bytes kept for good, in LEAK_BLOCK blocks. */
NOINLINE static void **example_leak(size_t bytes)
{
	size_t i, n = bytes / LEAK_BLOCK;
	void **blocks = calloc(n + 1, sizeof(*blocks));

	for (i = 0; blocks && i < n; i++) {
		blocks[i] = malloc(LEAK_BLOCK);
		if (blocks[i])
			memset(blocks[i], 0x5a, LEAK_BLOCK);
	}
	sink++;
	return blocks;
}

/* Allocated and freed at once: nothing stays in use. */
NOINLINE static void example_churn(void)
{
	char *p = malloc(LEAK_BLOCK);

	escape = p;
	if (p)
		p[0] = 1;
	free(p);
	sink++;
}

/* 3 ms hot, 1 ms cold (and a churned block), until @seconds have passed. */
NOINLINE static void work(double seconds)
{
	double until = now() + seconds;

	while (now() < until) {
		example_hot();
		example_cold();
		example_churn();
	}
	sink++;
}

static void *worker(void *arg)
{
	work(*(double *)arg);
	return NULL;
}

static void usage(FILE *f, const char *argv0)
{
	fprintf(f,
		"Usage: %s [-d SECONDS] [--sidecar DIR] [-F HZ] [--period SECONDS]\n"
		"          [--heap] [--leak-bytes N]\n"
		"Do known CPU work for SECONDS (default 5): example_hot ~75 %%, example_cold\n"
		"~25 %%, in the main thread and in a worker thread started afterwards.\n"
		"\n"
		"The tracekit sidecar profiles this process only when enabled, by --sidecar DIR\n"
		"or the environment variable TRACEKIT_SIDECAR_DIR=DIR: one pprof file per\n"
		"period (-P/--period, default 60 s; -F HZ, default 99) in DIR, the last one\n"
		"written at exit. The program exits 0 whatever the sidecar's status.\n"
		"\n"
		"--heap (or TRACEKIT_SIDECAR_HEAP=1) asks for heap profiles too, which need\n"
		"jemalloc with profiling on; example_leak keeps --leak-bytes (default 8 MiB),\n"
		"example_churn allocates and frees all along. Prints \"leaked=BYTES\" and\n"
		"\"heap: STATUS[: WHY]\" at the end.\n",
		argv0);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "sidecar", required_argument, NULL, 's' },
		{ "period", required_argument, NULL, 'P' },
		{ "duration", required_argument, NULL, 'd' },
		{ "freq", required_argument, NULL, 'F' },
		{ "heap", no_argument, NULL, 'H' },
		{ "leak-bytes", required_argument, NULL, 'L' },
		{},
	};
	const char *dir = getenv("TRACEKIT_SIDECAR_DIR");
	double seconds = 5;
	const char *heap_env = getenv("TRACEKIT_SIDECAR_HEAP");
	bool heap = heap_env && !strcmp(heap_env, "1");
	size_t leak_bytes = 8 << 20;
	int freq = 0, period = 0, opt;
	void **leaked = NULL;
	pthread_t th;

	while ((opt = getopt_long(argc, argv, "hs:P:d:F:", longopts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			usage(stdout, argv[0]);
			return 0;
		case 's':
			dir = optarg;
			break;
		case 'P':
			period = atoi(optarg);
			break;
		case 'd':
			seconds = atof(optarg);
			break;
		case 'F':
			freq = atoi(optarg);
			break;
		case 'H':
			heap = true;
			break;
		case 'L':
			leak_bytes = strtoull(optarg, NULL, 0);
			break;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}

#ifdef TK_EMBED
	struct tk_sidecar_opts so = {
		.sz = sizeof(so),
		.enabled = dir && *dir,
		.dir = dir,
		.freq_hz = freq,
		.period_s = period,
		.heap = heap,
	};
	struct tk_sidecar *sc = NULL;
	enum tk_sidecar_status status;
	char why[256];

	status = tk_sidecar__start(&so, &sc, why, sizeof(why));
	fprintf(stderr, "sidecar: %s%s%s\n", tk_sidecar_status__name(status), *why ? ": " : "",
		why);
#else
	(void)freq;
	(void)period;
	(void)heap;
	if (dir && *dir)
		fprintf(stderr, "sidecar: not built in (needs -DTK_EMBED and libtracekit)\n");
#endif

	if (heap) {
		leaked = example_leak(leak_bytes);
		printf("leaked=%zu\n", leaked ? leak_bytes / LEAK_BLOCK * LEAK_BLOCK : 0);
	}
	if (pthread_create(&th, NULL, worker, &seconds)) {
		perror("pthread_create");
		return 1;
	}
	work(seconds);
	pthread_join(th, NULL);

#ifdef TK_EMBED
	if (sc) {
		struct tk_sidecar_stats st;

		tk_sidecar__stats(sc, &st);
		tk_sidecar__stop(sc);
		if (heap)
			printf("heap: %s%s%s\n", tk_sidecar_heap__name(st.heap),
			       st.heap_why[0] ? ": " : "", st.heap_why);
		fprintf(stderr, "sidecar: stopped; profiles are in %s\n", dir);
	}
#endif
	printf("done: %.1f s of work in 2 threads\n", seconds);
	escape = leaked;
	return 0;
}
