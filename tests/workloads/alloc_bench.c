// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * alloc_bench: what an allocation sampler costs a program that allocates.
 *
 *   alloc_bench --loop tight -n N   malloc and free at once, N times, sizes
 *                                   16..1024 from a cheap sequence
 *   alloc_bench --loop mixed -n N   a ring of live blocks (16 B .. 64 KiB,
 *                                   one in 512 up to 1 MiB), one replaced per
 *                                   iteration; every 8th a realloc, every
 *                                   16th a calloc
 *
 * Prints `calls=N ns_per_pair=X elapsed_s=Y`: N allocation/free pairs.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING 4096

/* The blocks escape here, so the compiler cannot delete a malloc/free pair. */
void *volatile sink;

static void usage(FILE *f)
{
	fprintf(f, "usage: alloc_bench --loop tight|mixed [-n N]\n"
		   "  tight: malloc+free at once; mixed: a ring of %d live blocks\n"
		   "  prints calls=N ns_per_pair=X elapsed_s=Y\n", RING);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static __attribute__((noinline)) void loop_tight(long n)
{
	long i;

	for (i = 0; i < n; i++) {
		void *p = malloc(16 + (size_t)(i & 63) * 16);

		sink = p;
		free(p);
	}
}

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t xorshift(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Mostly small, a power-of-two scale picked at random, sometimes big. */
static size_t mixed_size(uint64_t r)
{
	if ((r & 511) == 0)
		return 64 * 1024 + (r >> 20) % (960 * 1024);
	return 16 + ((r >> 9) & ((16u << ((r >> 40) % 13)) - 1));
}

static __attribute__((noinline)) void loop_mixed(long n)
{
	static void *ring[RING];
	long i;
	int j;

	for (i = 0; i < n; i++) {
		uint64_t r = xorshift();
		size_t k = (r >> 48) % RING, size = mixed_size(r);

		if ((i & 7) == 7 && ring[k]) {
			void *p = realloc(ring[k], size);

			if (p)
				ring[k] = p;
			sink = ring[k];
			/* a realloc is an allocation and a free */
			continue;
		}
		free(ring[k]);
		ring[k] = (i & 15) == 3 ? calloc(1, size) : malloc(size);
		sink = ring[k];
	}
	for (j = 0; j < RING; j++) {
		free(ring[j]);
		ring[j] = NULL;
	}
}

int main(int argc, char **argv)
{
	const char *loop = "tight";
	long n = 20000000;
	double t0, t;
	int i;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return EXIT_SUCCESS;
		} else if (!strcmp(argv[i], "--loop") && i + 1 < argc) {
			loop = argv[++i];
		} else if (!strcmp(argv[i], "-n") && i + 1 < argc) {
			n = atol(argv[++i]);
		} else {
			usage(stderr);
			return 2;
		}
	}
	if (n <= 0 || (strcmp(loop, "tight") && strcmp(loop, "mixed"))) {
		usage(stderr);
		return 2;
	}
	t0 = now();
	if (!strcmp(loop, "tight"))
		loop_tight(n);
	else
		loop_mixed(n);
	t = now() - t0;
	printf("calls=%ld ns_per_pair=%.2f elapsed_s=%.3f\n", n, t * 1e9 / n, t);
	return EXIT_SUCCESS;
}
