// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Frees of objects allocated before a tracer attached, with a known answer:
 * prefree_site() allocates -n N blocks of 64 bytes (default 1000) at start,
 * the process waits -w MS milliseconds (default 1000: time to attach to its
 * pid), frees them all, and lives on for -d SECONDS (default 2). A full-mode
 * capture attached during the wait sees N frees of objects it never saw
 * allocated.
 *
 *   alloc_prefree [-n N] [-w MS] [-d SECONDS]
 *
 * Prints "freed=N" once they are freed. Exits 0; 2 on a usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *volatile *blocks;

__attribute__((noinline)) void prefree_site(long n)
{
	long i;

	for (i = 0; i < n; i++) {
		blocks[i] = malloc(64);
		if (!blocks[i])
			abort();
	}
}

int main(int argc, char **argv)
{
	long n = 1000, wait_ms = 1000, secs = 2, i;
	int opt;

	if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("Usage: %s [-n BLOCKS] [-w MS] [-d SECONDS]\n", argv[0]);
		return 0;
	}
	while ((opt = getopt(argc, argv, "n:w:d:")) != -1) {
		switch (opt) {
		case 'n':
			n = atol(optarg);
			break;
		case 'w':
			wait_ms = atol(optarg);
			break;
		case 'd':
			secs = atol(optarg);
			break;
		default:
			return 2;
		}
	}
	if (n < 1 || wait_ms < 0 || secs < 0)
		return 2;
	blocks = calloc(n, sizeof(*blocks));
	if (!blocks)
		return 2;
	prefree_site(n);
	usleep(wait_ms * 1000);
	for (i = 0; i < n; i++)
		free(blocks[i]);
	printf("freed=%ld\n", n);
	fflush(stdout);
	sleep(secs);
	return 0;
}
