// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A leak whose pages are first touched by malloc itself, in a program
 * without frame pointers: main → grow → leak_4k → malloc(4096), in a loop,
 * --leak-bytes spread over -d SECONDS. The program never writes the leaked
 * blocks; glibc's malloc carves each from the top chunk and writes the header
 * of the chunk after it, so the page faults of the leak happen inside
 * _int_malloc, under malloc under leak_4k. A frame-pointer walk from there
 * loses leak_4k (libc has no frame pointers, and neither has this program);
 * a CFI walk must name it, page fault by page fault.
 *
 * main → churn() allocates 16..1024 bytes and frees at once all the while
 * (pointer escaped to a volatile global: shared/notes/stacks.md). Those
 * sizes stay in glibc's tcache, and each size is warmed up before the leak
 * starts, so churn never takes memory from the top chunk the leak grows into
 * and its own page faults are over before the leak's begin.
 *
 * Prints "leaked=BYTES usable=BYTES blocks=N churned=BYTES churn_calls=N" at
 * the end (as alloc_leak does). Exits 0; 2 on a usage error.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline, noclone))
#define BLOCK 4096
#define CHURN_MIN 16
#define CHURN_MAX 1024	/* glibc's tcache takes chunks up to 1032 bytes */

static volatile void *escape;
static volatile unsigned long sink;

struct leaks {
	void **blocks;
	size_t nr, want;
	size_t usable;
};

/* The leak: @n blocks of 4096 bytes, never written here, never freed. */
NOINLINE void leak_4k(struct leaks *l, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		void *p = malloc(BLOCK);

		if (!p)
			abort();
		l->blocks[l->nr++] = p;
		l->usable += malloc_usable_size(p);	/* reads the header malloc wrote */
	}
	sink++;	/* work after the call: no tail call */
}

/* Leak what is due once @frac of the time has passed. */
NOINLINE void grow(struct leaks *l, double frac)
{
	size_t due = frac >= 1 ? l->want : (size_t)(frac * l->want);

	if (due > l->nr)
		leak_4k(l, due - l->nr);
	sink++;
}

/* Allocated and freed at once: nothing stays in use. */
NOINLINE size_t churn(size_t size)
{
	char *p = malloc(size);

	if (!p)
		abort();
	p[0] = 1;
	p[size - 1] = 2;
	escape = p;
	free(p);
	sink++;
	return size;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int usage(const char *prog, int code)
{
	printf("Usage: %s [-d SECONDS] [--leak-bytes N] [--hold SECONDS]\n"
	       "Leak N bytes (default 8388608) in blocks of 4096 bytes from\n"
	       "main -> grow -> leak_4k -> malloc, spread over SECONDS (default 1),\n"
	       "never writing them: their pages are first touched inside glibc's\n"
	       "malloc. Meanwhile churn() allocates and frees 16..1024 bytes at once.\n"
	       "--hold: sleep SECONDS before exit. Prints what was leaked and churned\n"
	       "at the end.\n",
	       prog);
	return code;
}

/* Parse a non-negative size; 0 on success. */
static int parse_size(const char *s, size_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || !*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

static int parse_secs(const char *s, double *out)
{
	char *e;

	*out = strtod(s, &e);
	return *e || e == s || *out < 0 || *out > 3600 ? -EINVAL : 0;
}

int main(int argc, char **argv)
{
	size_t leak_bytes = 8 << 20, churned = 0, calls = 0, size;
	unsigned int seed = getpid();
	double secs = 1, hold = 0, start, t;
	struct leaks l = {};
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--help") || !strcmp(a, "-h"))
			return usage(argv[0], 0);
		else if (!strcmp(a, "-d") && i + 1 < argc && !parse_secs(argv[i + 1], &secs))
			i++;
		else if (!strcmp(a, "--leak-bytes") && i + 1 < argc &&
			 !parse_size(argv[i + 1], &leak_bytes))
			i++;
		else if (!strcmp(a, "--hold") && i + 1 < argc && !parse_secs(argv[i + 1], &hold))
			i++;
		else
			return usage(argv[0], 2);
	}
	l.want = leak_bytes / BLOCK;
	if (l.want > (64u << 20))
		return usage(argv[0], 2);
	/* the list of blocks is touched here, so that leak_4k's faults are malloc's */
	l.blocks = malloc((l.want ? l.want : 1) * sizeof(*l.blocks));
	if (!l.blocks)
		return 1;
	memset(l.blocks, 0, (l.want ? l.want : 1) * sizeof(*l.blocks));
	/* every churn size in the tcache before the leak starts */
	for (size = CHURN_MIN; size <= CHURN_MAX; size += 16)
		churn(size);

	start = now_s();
	do {
		t = now_s();
		grow(&l, secs > 0 ? (t - start) / secs : 1);
		size = CHURN_MIN + rand_r(&seed) % (CHURN_MAX - CHURN_MIN + 1);
		churned += churn(size);
		calls++;
	} while (t < start + secs || l.nr < l.want);

	printf("leaked=%zu usable=%zu blocks=%zu churned=%zu churn_calls=%zu\n",
	       l.nr * (size_t)BLOCK, l.usable, l.nr, churned, calls);
	fflush(stdout);
	if (hold > 0) {
		struct timespec ts = { (time_t)hold, (long)((hold - (time_t)hold) * 1e9) };

		nanosleep(&ts, NULL);
	}
	return 0;
}
