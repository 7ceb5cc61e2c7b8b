// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Realloc pairs from one frame, with a known answer: realloc_site() grows
 * two blocks side by side — a = realloc(a, n); b = realloc(b, n); — from
 * --step bytes to --block bytes, for --pairs pairs, and keeps them all. The
 * two calls come from the same thread, stack pointer and size: a tracer that
 * takes the second for a tail call of the first drops it, and with it the
 * free of b's old block. Everything grown stays in use at realloc_site:
 * 2 × pairs × block bytes (malloc_usable_size may round each block up).
 *
 *   alloc_realloc [--pairs N] [--block BYTES] [--step BYTES] [-d SECONDS] [--wait-signal]
 *
 * The growing starts once a second has passed (time to attach to its pid),
 * or with --wait-signal once SIGUSR1 came (at most 30 s: a tracer says it is
 * attached), then the process holds its blocks for -d seconds (default 3).
 * Prints "ready" when it starts growing and "held=BYTES blocks=N" when done.
 * Exits 0; 2 on a usage error.
 */
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;

/* Both of one pair grow here, a then b, by the same size each step. */
NOINLINE void realloc_site(void **a, void **b, size_t step, size_t block)
{
	size_t n;

	for (n = step; n <= block; n += step) {
		void *x = realloc(*a, n);
		void *y = realloc(*b, n);

		if (!x || !y)
			abort();
		*a = x;
		*b = y;
		sink += (unsigned long)x ^ (unsigned long)y;
	}
}

static int usage(const char *argv0)
{
	fprintf(stderr, "usage: %s [--pairs N] [--block BYTES] [--step BYTES] [-d SECONDS] "
		"[--wait-signal]\n", argv0);
	return 2;
}

/* Until SIGUSR1 (blocked, then waited for: none is lost), or 30 s. */
static void wait_go(void)
{
	struct timespec limit = { .tv_sec = 30 };
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigtimedwait(&set, NULL, &limit);
}

int main(int argc, char **argv)
{
	size_t pairs = 200, block = 65536, step = 4096, i;
	unsigned int secs = 3;
	bool wait_signal = false;
	void **blocks;
	sigset_t set;
	int k;

	/* blocked from the start, so a SIGUSR1 sent early waits for sigtimedwait */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	for (k = 1; k < argc; k++) {
		if (!strcmp(argv[k], "-h") || !strcmp(argv[k], "--help")) {
			usage(argv[0]);
			return 0;
		}
		if (!strcmp(argv[k], "--wait-signal")) {
			wait_signal = true;
			continue;
		}
		if (k + 1 >= argc)
			return usage(argv[0]);
		if (!strcmp(argv[k], "--pairs"))
			pairs = strtoul(argv[++k], NULL, 0);
		else if (!strcmp(argv[k], "--block"))
			block = strtoul(argv[++k], NULL, 0);
		else if (!strcmp(argv[k], "--step"))
			step = strtoul(argv[++k], NULL, 0);
		else if (!strcmp(argv[k], "-d"))
			secs = strtoul(argv[++k], NULL, 0);
		else
			return usage(argv[0]);
	}
	if (!pairs || !step || block < step)
		return usage(argv[0]);
	blocks = calloc(2 * pairs, sizeof(*blocks));
	if (!blocks)
		return 1;
	if (wait_signal)
		wait_go();
	else
		sleep(1);
	printf("ready\n");
	fflush(stdout);
	for (i = 0; i < pairs; i++)
		realloc_site(&blocks[2 * i], &blocks[2 * i + 1], step, block);
	printf("held=%zu blocks=%zu\n", 2 * pairs * (block / step * step), 2 * pairs);
	fflush(stdout);
	sleep(secs);
	return 0;
}
