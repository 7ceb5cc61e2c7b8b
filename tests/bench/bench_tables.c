// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The user-space tables on their hot paths, timed with synthetic input (no
 * BPF, no perf events): so a change to a table can be measured before and
 * after on the same machine. Time is the thread's CPU time (time spent
 * waiting for a CPU another process holds is not counted); each case runs
 * rounds times and the fastest round is printed (the others absorb what
 * noise is left: caches shared with other processes).
 *
 *   stacks_add    tk_stacks__add: 20000 distinct stacks of 40 frames, 2M adds
 *   perf_sample   PERF_RECORD_SAMPLEs through tk_perf_rings__consume: the
 *                 thread and process tables, the callchain split, the stacks
 *   alloc_live    tk_alloc__on_alloc/on_free with 200000 objects live: the
 *                 live table and the stack index
 *   cpu_build     tk_cpu_profile__build of 20000 stacks of this program's own
 *                 text: the location cache, the symbolizer, the profile's
 *                 interning
 *   pprof_write   tk_profile__write_pprof of that profile: its string table
 *
 * make BUILD=... bench runs it; `bench_tables NAME` runs one case;
 * BENCH_ROUNDS=1 runs each once (under valgrind --tool=cachegrind, whose
 * instruction and miss counts do not depend on what else the machine runs).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloc/alloc_int.h"
#include "cpu/cpu.h"
#include "cpu/perf_ring.h"
#include "cpu/stacks.h"

static int rounds = 5;

extern char __executable_start, etext;

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next_rand(void)
{
	/* splitmix64: the same input every run */
	uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "bench_tables: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

static void report(const char *name, double best, double ops)
{
	printf("%-12s %8.1f ns/op  (%.0f ops, best of %d)\n", name, best * 1e9 / ops, ops, rounds);
}

/* ---- stacks ------------------------------------------------------------------------ */

#define NR_STACKS 20000
#define DEPTH 40

static uint64_t (*frames)[DEPTH];

static void make_frames(uint64_t lo, uint64_t hi)
{
	size_t i, j;

	frames = malloc(NR_STACKS * sizeof(*frames));
	if (!frames)
		die("malloc", ENOMEM);
	/* stacks share their outer half with a sixteenth of the others, as real ones do */
	for (i = 0; i < NR_STACKS; i++)
		for (j = 0; j < DEPTH; j++)
			frames[i][j] = j >= DEPTH / 2 && i >= 16 ? frames[i / 16][j] :
				       lo + next_rand() % (hi - lo);
}

static double bench_stacks(void)
{
	const size_t n = 2000000;
	double best = 1e9;
	int r;

	for (r = 0; r < rounds; r++) {
		struct tk_stacks *t = tk_stacks__new();
		double t0;
		size_t i;

		if (!t)
			die("tk_stacks__new", ENOMEM);
		t0 = now_s();
		for (i = 0; i < n; i++) {
			size_t k = next_rand() % NR_STACKS;
			int err = tk_stacks__add(t, 100 + k % 8, 1000 + k % 64, 0, "bench",
						 frames[k], 12, frames[k] + 12, DEPTH - 12, 1,
						 false);

			if (err)
				die("tk_stacks__add", err);
		}
		t0 = now_s() - t0;
		if (t0 < best)
			best = t0;
		tk_stacks__free(t);
	}
	report("stacks_add", best, n);
	return best;
}

/* ---- perf records ------------------------------------------------------------------- */

static size_t put_sample(uint64_t *w, uint32_t pid, uint32_t tid, uint64_t time,
			 const uint64_t *k, uint32_t nk, const uint64_t *u, uint32_t nu)
{
	struct perf_event_header *h = (void *)w;
	size_t n = 1;
	uint32_t i;

	w[n++] = 0x1000;			/* ip */
	w[n++] = pid | (uint64_t)tid << 32;
	w[n++] = time;
	w[n++] = 0;				/* cpu */
	w[n++] = 1;				/* period */
	w[n++] = 2 + nk + nu;			/* nr */
	w[n++] = (uint64_t)PERF_CONTEXT_KERNEL;
	for (i = 0; i < nk; i++)
		w[n++] = k[i];
	w[n++] = (uint64_t)PERF_CONTEXT_USER;
	for (i = 0; i < nu; i++)
		w[n++] = u[i];
	h->type = PERF_RECORD_SAMPLE;
	h->misc = 0;
	h->size = n * 8;
	return n;
}

static double bench_perf(void)
{
	const size_t per_ring = 65536, passes = 16;
	struct perf_event_mmap_page page;
	size_t words = 0, i, size;
	double best = 1e9;
	uint64_t *buf;
	int r;

	for (size = 1; size < per_ring * (8 + DEPTH) * 8; size *= 2)
		;
	buf = calloc(1, size);
	if (!buf)
		die("calloc", ENOMEM);
	for (i = 0; i < per_ring; i++) {
		size_t k = next_rand() % NR_STACKS;
		/* 256 threads in 32 processes; kernel frames only past the first */
		uint32_t tid = 1000000 + next_rand() % 256, pid = 2000000 + tid % 32;

		words += put_sample(buf + words, pid, tid, i, frames[k], 12, frames[k] + 12,
				    0);
	}
	for (r = 0; r < rounds; r++) {
		struct tk_symbolizer *sym;
		struct tk_perf_filter f = { .max_stack = 127 };
		struct tk_cpu c;
		struct tk_perf_records *rec;
		struct tk_perf_ring ring;
		double t0;
		size_t p;
		int err;

		memset(&c, 0, sizeof(c));
		c.opts.sz = sizeof(c.opts);
		c.stacks = tk_stacks__new();
		err = tk_symbolizer__new(NULL, &sym);
		if (!c.stacks || err)
			die("setup", err ? err : ENOMEM);
		c.sym = sym;
		rec = tk_perf_records__new(&c, &f);
		if (!rec)
			die("tk_perf_records__new", ENOMEM);
		t0 = now_s();
		for (p = 0; p < passes; p++) {
			memset(&page, 0, sizeof(page));
			page.data_head = words * 8;
			memset(&ring, 0, sizeof(ring));
			ring.fd = -1;
			ring.page = &page;
			ring.data = (uint8_t *)buf;
			ring.data_size = size;
			err = tk_perf_rings__consume(&ring, 1, UINT64_MAX, tk_perf_records__record, rec);
			if (err)
				die("tk_perf_rings__consume", err);
		}
		t0 = now_s() - t0;
		if (c.samples != per_ring * passes)
			die("samples", EINVAL);
		if (t0 < best)
			best = t0;
		tk_perf_records__free(rec);
		tk_symbolizer__free(sym);
		tk_stacks__free(c.stacks);
	}
	free(buf);
	report("perf_sample", best, (double)per_ring * passes);
	return best;
}

/* ---- allocation session --------------------------------------------------------------- */

static int fake_noop(struct tk_alloc *a, char *why, size_t why_sz)
{
	return 0;
}

static int fake_poll(struct tk_alloc *a, int timeout_ms)
{
	return 0;
}

static int fake_drain(struct tk_alloc *a)
{
	return 0;
}

static const struct tk_alloc_backend fake = {
	.name = "fake",
	.open = fake_noop,
	.start = fake_noop,
	.poll = fake_poll,
	.drain = fake_drain,
};

static double bench_alloc(void)
{
	enum { LIVE = 200000, OPS = 2000000, SITES = 2000, SITE_DEPTH = 24 };
	uint64_t *live = malloc(LIVE * sizeof(*live));
	uint32_t pid = getpid();
	struct tk_alloc_opts o = { .sz = sizeof(o), .mode = TK_ALLOC_MODE_FULL, .pid = pid };
	double best = 1e9;
	int r;

	if (!live)
		die("malloc", ENOMEM);
	for (r = 0; r < rounds; r++) {
		uint64_t next = 0x7f0000000000ULL;
		struct tk_alloc *a;
		double t0;
		size_t i;
		int err;

		err = tk_alloc__new_bare(&o, &fake, &a);
		if (err)
			die("tk_alloc__new_bare", err);
		t0 = now_s();
		for (i = 0; i < OPS; i++) {
			size_t site = next_rand() % SITES, slot = next_rand() % LIVE;
			struct tk_alloc_rec rec = { .pid = pid, .tid = 1, .size = 64,
						    .ips = frames[site], .nr_ips = SITE_DEPTH,
						    .comm = "bench" };

			/* the object in a random slot is freed, a new one takes its place */
			if (i >= LIVE && (err = tk_alloc__on_free(a, pid, 0, live[slot])))
				die("tk_alloc__on_free", err);
			rec.ptr = next += 48;
			live[i < LIVE ? i : slot] = rec.ptr;
			err = tk_alloc__on_alloc(a, &rec);
			if (err)
				die("tk_alloc__on_alloc", err);
		}
		t0 = now_s() - t0;
		if (t0 < best)
			best = t0;
		tk_alloc__free(a);
	}
	free(live);
	/* each op: an alloc, and (past the first LIVE) a free */
	report("alloc_live", best, OPS);
	return best;
}

/* ---- building and writing a CPU profile ------------------------------------------------ */

static double bench_build(struct tk_profile **keep)
{
	double best = 1e9;
	int r;

	for (r = 0; r < rounds; r++) {
		struct tk_stacks *t = tk_stacks__new();
		struct tk_symbolizer *sym;
		struct tk_profile *p = tk_profile__new_cpu("bench", 99);
		uint64_t unsym;
		double t0;
		size_t i;
		int err;

		err = tk_symbolizer__new(NULL, &sym);
		if (!t || !p || err)
			die("setup", err ? err : ENOMEM);
		err = tk_symbolizer__capture(sym, getpid(), 0);
		if (err)
			die("tk_symbolizer__capture", err);
		for (i = 0; i < NR_STACKS; i++) {
			err = tk_stacks__add(t, getpid(), getpid() + i % 4, 0, "bench", NULL, 0,
					     frames[i], DEPTH, 1 + i % 7, false);
			if (err)
				die("tk_stacks__add", err);
		}
		t0 = now_s();
		err = tk_cpu_profile__build(t, sym, p, &unsym, NULL);
		t0 = now_s() - t0;
		if (err)
			die("tk_cpu_profile__build", err);
		if (t0 < best)
			best = t0;
		tk_stacks__free(t);
		tk_symbolizer__free(sym);
		if (keep && !*keep)
			*keep = p;
		else
			tk_profile__free(p);
	}
	report("cpu_build", best, (double)NR_STACKS * DEPTH);
	return best;
}

static double bench_pprof(struct tk_profile *p)
{
	double best = 1e9;
	int r;

	for (r = 0; r < rounds; r++) {
		FILE *f = fopen("/dev/null", "w");
		double t0;
		int err;

		if (!f)
			die("/dev/null", errno);
		t0 = now_s();
		err = tk_profile__write_pprof(p, f);
		t0 = now_s() - t0;
		fclose(f);
		if (err)
			die("tk_profile__write_pprof", err);
		if (t0 < best)
			best = t0;
	}
	report("pprof_write", best, (double)p->nr_samples);
	return best;
}

int main(int argc, char **argv)
{
	const char *only = argc > 1 ? argv[1] : NULL;
	struct tk_profile *p = NULL;

	if (getenv("BENCH_ROUNDS") && atoi(getenv("BENCH_ROUNDS")) > 0)
		rounds = atoi(getenv("BENCH_ROUNDS"));
	make_frames((uint64_t)&__executable_start, (uint64_t)&etext);
	if (!only || !strcmp(only, "stacks_add"))
		bench_stacks();
	if (!only || !strcmp(only, "perf_sample"))
		bench_perf();
	if (!only || !strcmp(only, "alloc_live"))
		bench_alloc();
	if (!only || !strcmp(only, "cpu_build") || !strcmp(only, "pprof_write"))
		bench_build(&p);
	if (p && (!only || !strcmp(only, "pprof_write")))
		bench_pprof(p);
	tk_profile__free(p);
	free(frames);
	return 0;
}
