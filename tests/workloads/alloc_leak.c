// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * An allocation workload with a known answer: main → leak_site() allocates
 * --leak-bytes in blocks of --leak-block bytes, spread over -d SECONDS, and
 * never frees them; main → churn() allocates and frees at once all the while
 * (its pointer escapes to a volatile global first, so the compiler cannot
 * delete the pair: shared/notes/stacks.md). A heap profile taken at the end
 * must put the leaked bytes on leak_site and ~nothing in use on churn.
 *
 * With --dump[=FILE] it asks jemalloc for a heap profile dump just before
 * exit (mallctl("prof.dump"), found with dlsym, so the same source runs
 * without jemalloc and says so). alloc_leak_je is this file linked with
 * -ljemalloc. Built with frame pointers and no sibling calls.
 *
 * Prints "leaked=BYTES usable=BYTES blocks=N churned=BYTES churn_calls=N"
 * (usable: malloc_usable_size of the leaked blocks, what an allocator's
 * profile counts) and, with --dump, "dump=FILE" or "dump=none reason=...".
 * Exits 0; 2 on a usage error; 3 when a requested dump could not be made.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NOINLINE __attribute__((noinline))

typedef int (*mallctl_fn)(const char *name, void *oldp, size_t *oldlenp, void *newp,
			  size_t newlen);

static volatile void *escape;
static volatile unsigned long sink;
static int touch = 1;

struct leaks {
	void **blocks;
	size_t nr;
	size_t usable;
};

/* The leak: one block, kept in a list that is never freed. */
NOINLINE void leak_site(struct leaks *l, size_t size)
{
	char *p = malloc(size);

	if (!p)
		abort();
	if (touch) {
		/*
		 * Page by page, here: a page fault must happen in leak_site itself
		 * (in a memset without a frame pointer, the walk would skip us).
		 */
		volatile char *v = p;
		size_t i;

		for (i = 0; i < size; i += 4096)
			v[i] = 0x5a;
		v[size - 1] = 0x5a;
	} else {
		p[0] = 1;
	}
	l->blocks[l->nr++] = p;
	l->usable += malloc_usable_size(p);
	sink++;
}

/* Allocated and freed at once: nothing stays in use. */
NOINLINE size_t churn(unsigned int *seed)
{
	size_t size = 16 + rand_r(seed) % 4096;
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
	printf("Usage: %s [-d SECONDS] [--leak-bytes N] [--leak-block N] [--threads N]\n"
	       "       [--no-touch] [--hold SECONDS] [--dump[=FILE]]\n"
	       "Leak N bytes (default 8388608) from leak_site() in blocks of --leak-block\n"
	       "bytes (default 65536) spread over SECONDS (default 1), while churn()\n"
	       "allocates and frees at once. Prints what was leaked and churned.\n"
	       "--dump: ask jemalloc for a heap profile at the end (prof.dump; to FILE,\n"
	       "or jemalloc's own prof_prefix name); exit 3 when it cannot.\n"
	       "--threads: N threads share the leak and each churns. --no-touch: write\n"
	       "one byte of each leaked block, not all. --hold: sleep SECONDS before exit.\n",
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

/* Ask jemalloc for a heap profile dump; 0, or -errno with @why set. */
static int dump(const char *file, const char **why)
{
	mallctl_fn mallctl = (mallctl_fn)dlsym(RTLD_DEFAULT, "mallctl");
	size_t sz = sizeof(_Bool);
	_Bool active = 0;
	int err;

	if (!mallctl) {
		*why = "no-jemalloc";
		return -ENOSYS;
	}
	if (mallctl("prof.active", &active, &sz, NULL, 0) || !active) {
		*why = "profiling-off";
		return -ENOTSUP;
	}
	if (file)
		err = mallctl("prof.dump", NULL, NULL, &file, sizeof(file));
	else
		err = mallctl("prof.dump", NULL, NULL, NULL, 0);
	if (err) {
		*why = "prof.dump-failed";
		return -err;
	}
	return 0;
}

struct worker {
	struct leaks l;
	size_t nr_blocks, block, churned, calls;
	double secs;
	unsigned int seed;
};

/* Leak block k once k/nr_blocks of the time has passed; churn between. */
static void *work(void *arg)
{
	struct worker *w = arg;
	double start = now_s(), end = start + w->secs, t;

	do {
		t = now_s();
		while (w->l.nr < w->nr_blocks &&
		       (w->secs == 0 || (double)w->l.nr < (t - start) / w->secs * w->nr_blocks))
			leak_site(&w->l, w->block);
		w->churned += churn(&w->seed);
		w->calls++;
	} while (t < end || w->l.nr < w->nr_blocks);
	return NULL;
}

int main(int argc, char **argv)
{
	size_t leak_bytes = 8 << 20, block = 64 << 10, nr_blocks, churned = 0, calls = 0;
	const char *dump_file = NULL, *why = NULL;
	struct leaks l = {};
	double secs = 1, hold = 0;
	unsigned int seed = getpid();
	int want_dump = 0, i, err, nr_threads = 1;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			return usage(argv[0], 0);
		} else if (!strcmp(a, "-d") && i + 1 < argc) {
			char *e;

			secs = strtod(argv[++i], &e);
			if (*e || secs < 0 || secs > 3600)
				return usage(argv[0], 2);
		} else if (!strcmp(a, "--leak-bytes") && i + 1 < argc) {
			if (parse_size(argv[++i], &leak_bytes))
				return usage(argv[0], 2);
		} else if (!strcmp(a, "--leak-block") && i + 1 < argc) {
			if (parse_size(argv[++i], &block) || !block || block > (1 << 30))
				return usage(argv[0], 2);
		} else if (!strcmp(a, "--threads") && i + 1 < argc) {
			nr_threads = atoi(argv[++i]);
			if (nr_threads < 1 || nr_threads > 64)
				return usage(argv[0], 2);
		} else if (!strcmp(a, "--no-touch")) {
			touch = 0;
		} else if (!strcmp(a, "--hold") && i + 1 < argc) {
			char *e;

			hold = strtod(argv[++i], &e);
			if (*e || hold < 0 || hold > 3600)
				return usage(argv[0], 2);
		} else if (!strcmp(a, "--dump")) {
			want_dump = 1;
		} else if (!strncmp(a, "--dump=", 7) && a[7]) {
			want_dump = 1;
			dump_file = a + 7;
		} else {
			return usage(argv[0], 2);
		}
	}
	nr_blocks = leak_bytes / block;
	if (nr_blocks > (64u << 20))
		return usage(argv[0], 2);
	l.blocks = calloc(nr_blocks ? nr_blocks : 1, sizeof(*l.blocks));
	if (!l.blocks)
		return 1;

	if (nr_threads > 1) {
		pthread_t th[64];
		struct worker w[64];
		int k;

		for (k = 0; k < nr_threads; k++) {
			w[k] = (struct worker){ .nr_blocks = nr_blocks / nr_threads, .block = block,
						.secs = secs, .seed = seed + k };
			w[k].l.blocks = l.blocks + k * (nr_blocks / nr_threads);
			if (pthread_create(&th[k], NULL, work, &w[k]))
				return 1;
		}
		for (k = 0; k < nr_threads; k++) {
			pthread_join(th[k], NULL);
			l.nr += w[k].l.nr;
			l.usable += w[k].l.usable;
			churned += w[k].churned;
			calls += w[k].calls;
		}
	} else {
		struct worker w = { .l = l, .nr_blocks = nr_blocks, .block = block, .secs = secs,
				    .seed = seed };

		work(&w);
		l = w.l;
		churned = w.churned;
		calls = w.calls;
	}

	printf("leaked=%zu usable=%zu blocks=%zu churned=%zu churn_calls=%zu\n", l.nr * block,
	       l.usable, l.nr, churned, calls);
	if (want_dump) {
		err = dump(dump_file, &why);
		if (err)
			printf("dump=none reason=%s\n", why);
		else
			printf("dump=%s\n", dump_file ? dump_file : "prof_prefix");
		fflush(stdout);
		if (err)
			return 3;
	}
	fflush(stdout);
	if (hold > 0) {
		struct timespec ts = { (time_t)hold, (long)((hold - (time_t)hold) * 1e9) };

		nanosleep(&ts, NULL);
	}
	return 0;
}
