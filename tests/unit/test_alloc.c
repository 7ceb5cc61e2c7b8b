// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The allocation session's tables, fed records directly (no BPF): the
 * unbiased weight; the live table under inserts and frees in random order
 * against a plain reference; byte sampling simulated with a fixed seed gives
 * estimates within a few percent of the truth; the profile's four values per
 * stack, --min-age, frees, growth records with their pseudo-frames, and the
 * loss counters always present.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "alloc/alloc_int.h"
#include "cpu/cpu.h"
#include "core/internal.h"

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

static struct tk_alloc *session(enum tk_alloc_mode mode, uint64_t sample_bytes)
{
	struct tk_alloc_opts o = { .sz = sizeof(o), .mode = mode, .sample_bytes = sample_bytes,
				   .pid = getpid() };
	struct tk_alloc *a;

	assert_int_equal(tk_alloc__new_bare(&o, &fake, &a), 0);
	return a;
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next_rand(void)
{
	/* splitmix64: fixed sequence, so the statistics below cannot flake */
	uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static double uniform01(void)
{
	return ((next_rand() >> 11) + 1) * (1.0 / 9007199254740993.0);	/* (0, 1] */
}

/* Functions of this binary as "return addresses" (one byte in). */
__attribute__((noinline)) static void site_a(void)
{
	asm volatile("");
}

__attribute__((noinline)) static void site_b(void)
{
	asm volatile("");
}

static const struct tk_sample *find_sample(const struct tk_profile *p, const char *leaf)
{
	size_t i, j;

	for (i = 0; i < p->nr_samples; i++) {
		const struct tk_sample *s = &p->samples[i];
		const struct tk_location *l;

		if (!s->nr_locations)
			continue;
		l = &p->locations[s->location_ids[0] - 1];
		for (j = 0; j < p->nr_functions; j++)
			if (p->functions[j].id == l->function_id &&
			    !strcmp(p->functions[j].name, leaf))
				return s;
	}
	return NULL;
}

static void test_weight(void **state)
{
	assert_true(tk_alloc__weight(100, 0) == 1.0);
	assert_true(fabs(tk_alloc__weight(512 * 1024, 512 * 1024) - 1.0 / (1 - exp(-1))) < 1e-12);
	assert_true(fabs(tk_alloc__weight(1ULL << 40, 4096) - 1.0) < 1e-12);
	/* small objects: about mean/size, never below 1 */
	assert_true(fabs(tk_alloc__weight(16, 524288) / (524288.0 / 16) - 1) < 1e-3);
	assert_true(tk_alloc__weight(0, 4096) >= 1.0);
}

static void test_live_table_random(void **state)
{
	enum { N = 50000 };
	struct tk_alloc *a = session(TK_ALLOC_MODE_FULL, 0);
	static uint64_t ptrs[N];
	static bool freed[N];
	uint64_t ip = (uint64_t)site_a + 1;
	struct tk_alloc_stats st;
	size_t i, live = N;

	for (i = 0; i < N; i++) {
		/* clustered addresses, as an allocator hands them out */
		struct tk_alloc_rec r = { .pid = getpid(), .tid = 1, .size = 32, .ips = &ip,
					  .nr_ips = 1 };

		ptrs[i] = r.ptr = 0x7f0000000000ULL + i * 48;
		assert_int_equal(tk_alloc__on_alloc(a, &r), 0);
	}
	for (i = 0; i < 3 * N; i++) {
		size_t k = next_rand() % N;

		if (freed[k])
			continue;
		assert_int_equal(tk_alloc__on_free(a, getpid(), 0, ptrs[k]), 0);
		freed[k] = true;
		live--;
	}
	/* a free of something never recorded, or of another process, changes nothing */
	assert_int_equal(tk_alloc__on_free(a, getpid(), 0, 0x1234), 0);
	for (i = 0; i < N && freed[i]; i++)
		;
	if (i < N)
		assert_int_equal(tk_alloc__on_free(a, getpid() + 1, 0, ptrs[i]), 0);
	tk_alloc__stats(a, &st);
	assert_int_equal(st.live, live);
	assert_int_equal(st.allocs, N);
	assert_int_equal(st.frees, N - live);
	/* ... but is counted: its allocation was never seen */
	assert_int_equal(st.lost, i < N ? 2 : 1);
	/* every survivor is still found: free them all */
	for (i = 0; i < N; i++)
		if (!freed[i])
			assert_int_equal(tk_alloc__on_free(a, getpid(), 0, ptrs[i]), 0);
	tk_alloc__stats(a, &st);
	assert_int_equal(st.live, 0);
	assert_int_equal(st.frees, N);
	tk_alloc__free(a);
}

/*
 * Byte sampling simulated as the samplers do it: a countdown drawn from an
 * exponential with mean M; an allocation that crosses it is recorded. Leak
 * 64 MiB in mixed sizes beside churn that is freed: the estimates of the
 * leak's in-use bytes and of all allocated bytes lie within 5 %.
 */
static void test_sampled_estimates(void **state)
{
	const uint64_t M = 512 * 1024;
	struct tk_alloc *a = session(TK_ALLOC_MODE_SAMPLED, M);
	uint64_t ip_leak = (uint64_t)site_a + 1, ip_churn = (uint64_t)site_b + 1;
	uint64_t leaked = 0, churned = 0, ptr = 0x10000, recorded = 0;
	double left = -log(uniform01()) * M;
	const struct tk_sample *leak, *churn;
	struct tk_profile *p;

	while (leaked < (256ULL << 20)) {
		bool is_leak = next_rand() % 4 == 0;
		uint64_t size = is_leak ? 1024 + next_rand() % (128 * 1024) : 16 + next_rand() % 8192;
		struct tk_alloc_rec r = { .pid = getpid(), .tid = 7, .size = size,
					  .ips = is_leak ? &ip_leak : &ip_churn, .nr_ips = 1,
					  .comm = "sim" };

		r.ptr = ptr += 0x10;
		left -= size;
		if (left <= 0) {
			while (left <= 0)
				left += -log(uniform01()) * M;
			assert_int_equal(tk_alloc__on_alloc(a, &r), 0);
			recorded++;
			if (!is_leak)
				assert_int_equal(tk_alloc__on_free(a, getpid(), 0, r.ptr), 0);
		}
		if (is_leak)
			leaked += size;
		else
			churned += size;
	}
	assert_int_equal(tk_alloc__finish(a, 0, &p), 0);
	leak = find_sample(p, "site_a");
	churn = find_sample(p, "site_b");
	assert_non_null(leak);
	assert_non_null(churn);
	print_message("  %" PRIu64 " samples; leak %.1f MiB estimated %.1f MiB (%+.2f %%), "
		      "churn allocated %.1f MiB estimated %.1f MiB (%+.2f %%)\n", recorded,
		      leaked / 1048576.0, leak->values[3] / 1048576.0,
		      100.0 * ((double)leak->values[3] / leaked - 1), churned / 1048576.0,
		      churn->values[1] / 1048576.0, 100.0 * ((double)churn->values[1] / churned - 1));
	assert_true(fabs((double)leak->values[3] / leaked - 1) < 0.05);
	assert_true(fabs((double)leak->values[1] / leaked - 1) < 0.05);
	assert_true(fabs((double)churn->values[1] / churned - 1) < 0.05);
	assert_int_equal(churn->values[2], 0);
	assert_int_equal(churn->values[3], 0);
	assert_string_equal(p->default_sample_type, "inuse_space");
	assert_int_equal(p->period, (int64_t)M);
	tk_profile__free(p);
	tk_alloc__free(a);
}

static void test_profile_values_and_min_age(void **state)
{
	struct tk_alloc *a = session(TK_ALLOC_MODE_FULL, 0);
	uint64_t ip_a = (uint64_t)site_a + 1, ip_b = (uint64_t)site_b + 1;
	int64_t now = tk_now_ns(CLOCK_MONOTONIC);
	const struct tk_sample *sa, *sb;
	struct tk_profile *p;
	int i, found = 0;

	/* site_a: 3 objects of 100, one freed, all old; site_b: 2 of 1000, young */
	for (i = 0; i < 3; i++) {
		struct tk_alloc_rec r = { .pid = getpid(), .tid = 1, .ptr = 0x1000 + i * 0x100,
					  .size = 100, .ts_ns = now - 10000000000LL, .ips = &ip_a,
					  .nr_ips = 1 };

		assert_int_equal(tk_alloc__on_alloc(a, &r), 0);
	}
	assert_int_equal(tk_alloc__on_free(a, getpid(), 0, 0x1100), 0);
	for (i = 0; i < 2; i++) {
		struct tk_alloc_rec r = { .pid = getpid(), .tid = 1, .ptr = 0x9000 + i * 0x1000,
					  .size = 1000, .ts_ns = now, .ips = &ip_b, .nr_ips = 1 };

		assert_int_equal(tk_alloc__on_alloc(a, &r), 0);
	}
	assert_int_equal(tk_alloc__snapshot(a, 0, &p), 0);
	sa = find_sample(p, "site_a");
	sb = find_sample(p, "site_b");
	assert_non_null(sa);
	assert_non_null(sb);
	assert_int_equal(sa->values[0], 3);
	assert_int_equal(sa->values[1], 300);
	assert_int_equal(sa->values[2], 2);
	assert_int_equal(sa->values[3], 200);
	assert_int_equal(sb->values[2], 2);
	assert_int_equal(sb->values[3], 2000);
	for (i = 0; i < p->nr_losses; i++)
		found += !strcmp(p->losses[i].name, "live_map_full") ||
			 !strcmp(p->losses[i].name, "ringbuf_reserve_failed");
	assert_int_equal(found, 2);
	tk_profile__free(p);

	/* older than 5 s: site_b's young objects leave the in-use figures, not the allocated */
	assert_int_equal(tk_alloc__finish(a, 5000000000ULL, &p), 0);
	sa = find_sample(p, "site_a");
	sb = find_sample(p, "site_b");
	assert_non_null(sa);
	assert_non_null(sb);
	assert_int_equal(sa->values[3], 200);
	assert_int_equal(sb->values[1], 2000);
	assert_int_equal(sb->values[2], 0);
	assert_int_equal(sb->values[3], 0);
	tk_profile__free(p);
	tk_alloc__free(a);
}

static uint64_t loss(const struct tk_profile *p, const char *name)
{
	int i;

	for (i = 0; i < p->nr_losses; i++)
		if (!strcmp(p->losses[i].name, name))
			return p->losses[i].count;
	fail_msg("no loss counter %s", name);
	return 0;
}

/*
 * An allocation BPF could not remember (live map full) counts as allocated and
 * never as in use; a free of an object never recorded is counted.
 */
static void test_untracked_and_unknown_frees(void **state)
{
	struct tk_alloc *a = session(TK_ALLOC_MODE_FULL, 0);
	uint64_t ip = (uint64_t)site_a + 1;
	struct tk_alloc_rec r = { .pid = getpid(), .tid = 1, .ptr = 0x1000, .size = 100,
				  .ips = &ip, .nr_ips = 1 };
	const struct tk_sample *sa;
	struct tk_profile *p;
	struct tk_alloc_stats st;

	assert_int_equal(tk_alloc__on_alloc(a, &r), 0);
	r.ptr = 0x2000;
	r.untracked = true;
	assert_int_equal(tk_alloc__on_alloc(a, &r), 0);
	tk_alloc__stats(a, &st);
	assert_int_equal(st.allocs, 2);
	assert_int_equal(st.live, 1);
	/* the untracked one's free, and one of an object from before the attach */
	assert_int_equal(tk_alloc__on_free(a, getpid(), 0, 0x2000), 0);
	assert_int_equal(tk_alloc__on_free(a, getpid(), 0, 0x3000), 0);
	assert_int_equal(tk_alloc__finish(a, 0, &p), 0);
	sa = find_sample(p, "site_a");
	assert_non_null(sa);
	assert_int_equal(sa->values[0], 2);
	assert_int_equal(sa->values[1], 200);
	assert_int_equal(sa->values[2], 1);
	assert_int_equal(sa->values[3], 100);
	assert_int_equal(loss(p, "frees_of_unknown_objects"), 2);
	assert_int_equal(loss(p, "replaced_live_objects"), 0);
	tk_profile__free(p);
	tk_alloc__free(a);
}

/* Values @idx of every sample whose leaf is @leaf, summed (one per process and generation). */
static int64_t leaf_value(const struct tk_profile *p, const char *leaf, int idx)
{
	int64_t sum = 0;
	size_t i, j;

	for (i = 0; i < p->nr_samples; i++) {
		const struct tk_sample *s = &p->samples[i];
		const struct tk_location *l;

		if (!s->nr_locations)
			continue;
		l = &p->locations[s->location_ids[0] - 1];
		for (j = 0; j < p->nr_functions; j++)
			if (p->functions[j].id == l->function_id &&
			    !strcmp(p->functions[j].name, leaf))
				sum += s->values[idx];
	}
	return sum;
}

static uint64_t dropped[8];
static int nr_dropped;

static void drop(struct tk_alloc *a, uint32_t pid, uint32_t gen, uint64_t ptr)
{
	if (nr_dropped < 8)
		dropped[nr_dropped] = ptr;
	nr_dropped++;
}

/*
 * A generation's end (exec, a process's exit) takes its objects out of use,
 * counted; an address the next generation reuses is its own object, and a
 * free there is not one of the old generation's. The target's own exit (it
 * ends the capture) keeps what it held: its leak at exit.
 */
static void test_release_at_exec_and_exit(void **state)
{
	struct tk_alloc_opts o = { .sz = sizeof(o), .mode = TK_ALLOC_MODE_FULL, .pid = 1 };
	uint64_t ipa = (uint64_t)site_a + 1, ipb = (uint64_t)site_b + 1;
	struct tk_alloc_rec r = { .pid = getpid(), .gen = 5, .tid = 1, .ptr = 0x1000,
				  .size = 100, .ips = &ipa, .nr_ips = 1 };
	struct tk_alloc_stats st;
	struct tk_profile *p;
	struct tk_alloc *a;

	/* the target is pid 1: this process plays a child of it that execs, then exits */
	assert_int_equal(tk_alloc__new_bare(&o, &fake, &a), 0);
	assert_int_equal(tk_alloc__on_alloc(a, &r), 0);
	r.ptr = 0x2000;
	r.size = 200;
	assert_int_equal(tk_alloc__on_alloc(a, &r), 0);
	nr_dropped = 0;
	assert_int_equal(tk_alloc__release(a, getpid(), 5, TK_ALLOC_END_EXEC, drop), 2);
	assert_int_equal(nr_dropped, 2);
	assert_true((dropped[0] == 0x1000 && dropped[1] == 0x2000) ||
		    (dropped[0] == 0x2000 && dropped[1] == 0x1000));
	/* the new image: 0x1000 again is its own object, and a free of 0x2000 is unknown */
	r = (struct tk_alloc_rec){ .pid = getpid(), .gen = 6, .tid = 1, .ptr = 0x1000,
				   .size = 300, .ips = &ipb, .nr_ips = 1 };
	assert_int_equal(tk_alloc__on_alloc(a, &r), 0);
	assert_int_equal(tk_alloc__on_free(a, getpid(), 6, 0x2000), 0);
	tk_alloc__stats(a, &st);
	assert_int_equal(st.live, 1);
	assert_int_equal(st.frees, 0);
	assert_int_equal(st.lost, 1);
	/* nothing of another generation goes with one that ends */
	assert_int_equal(tk_alloc__release(a, getpid(), 5, TK_ALLOC_END_EXIT, NULL), 0);
	/* the target's exit ends the capture: what it held stays */
	r = (struct tk_alloc_rec){ .pid = 1, .gen = 0, .tid = 1, .ptr = 0x9000, .size = 50,
				   .ips = &ipa, .nr_ips = 1 };
	assert_int_equal(tk_alloc__on_alloc(a, &r), 0);
	assert_int_equal(tk_alloc__release(a, 1, 0, TK_ALLOC_END_EXIT, NULL), 0);
	tk_alloc__stats(a, &st);
	assert_int_equal(st.live, 2);
	/* this process's exit: the new image's object goes */
	assert_int_equal(tk_alloc__release(a, getpid(), 6, TK_ALLOC_END_EXIT, NULL), 1);
	/* released counts are no losses */
	tk_alloc__stats(a, &st);
	assert_int_equal(st.live, 1);
	assert_int_equal(st.lost, 1);
	assert_int_equal(tk_alloc__finish(a, 0, &p), 0);
	assert_int_equal(leaf_value(p, "site_a", 1), 300);	/* allocated: 100 + 200 here */
	/* in use: none of them (pid 1's frames are not named from this process's maps) */
	assert_int_equal(leaf_value(p, "site_a", 3), 0);
	assert_int_equal(leaf_value(p, "site_b", 1), 300);
	assert_int_equal(leaf_value(p, "site_b", 3), 0);
	assert_int_equal(loss(p, "released_at_exec"), 2);
	assert_int_equal(loss(p, "released_at_exec_bytes"), 300);
	assert_int_equal(loss(p, "released_at_exit"), 1);
	assert_int_equal(loss(p, "released_at_exit_bytes"), 300);
	assert_int_equal(loss(p, "frees_of_unknown_objects"), 1);
	tk_profile__free(p);
	tk_alloc__free(a);
}

static void test_growth(void **state)
{
	struct tk_alloc *a = session(TK_ALLOC_MODE_GROWTH, 0);
	uint64_t ips[2] = { (uint64_t)site_a, (uint64_t)site_b + 1 };
	const struct tk_sample *fault, *mm;
	struct tk_profile *p;

	assert_int_equal(tk_alloc__on_growth(a, TK_GROWTH_FAULT, getpid(), 0, 1, "g", ips, 2,
					     false, 10, 40960), 0);
	assert_int_equal(tk_alloc__on_growth(a, TK_GROWTH_FAULT, getpid(), 0, 1, "g", ips, 2,
					     false, 5, 20480), 0);
	assert_int_equal(tk_alloc__on_growth(a, TK_GROWTH_MMAP, getpid(), 0, 1, "g", ips, 2,
					     false, 1, 1 << 20), 0);
	assert_int_equal(tk_alloc__on_growth(a, TK_GROWTH__COUNT, getpid(), 0, 1, "g", ips, 2,
					     false, 1, 1), -EINVAL);
	assert_int_equal(tk_alloc__finish(a, 0, &p), 0);
	fault = find_sample(p, "[page fault]");
	mm = find_sample(p, "[mmap]");
	assert_non_null(fault);
	assert_non_null(mm);
	assert_int_equal(fault->values[0], 15);
	assert_int_equal(fault->values[1], 61440);
	assert_int_equal(fault->values[3], 61440);
	assert_int_equal(mm->values[1], 1 << 20);
	assert_int_equal(mm->values[3], 0);
	/* under the pseudo-frame: the faulting function itself (not a return address) */
	assert_int_equal(fault->nr_locations, 3);
	tk_profile__free(p);
	tk_alloc__free(a);
}

static void test_setenv_merges_preload(void **state)
{
	struct tk_alloc *a = session(TK_ALLOC_MODE_SAMPLED, 0);

	assert_int_equal(tk_alloc__setenv(a, "LD_PRELOAD", "/x/libtkagent.so"), 0);
	assert_int_equal(tk_alloc__setenv(a, "MALLOC_CONF", "prof:%s", "true"), 0);
	assert_int_equal(tk_alloc__setenv(a, "LD_PRELOAD", "/y/libjemalloc.so.2"), 0);
	assert_int_equal(tk_alloc__setenv(a, "MALLOC_CONF", "prof:false"), 0);
	assert_int_equal(a->nr_env, 2);
	assert_string_equal(a->env[0], "LD_PRELOAD=/x/libtkagent.so:/y/libjemalloc.so.2");
	assert_string_equal(a->env[1], "MALLOC_CONF=prof:false");
	assert_null(a->env[2]);
	tk_alloc__free(a);
}

static void test_demangle(void **state)
{
	char *s = tk_demangle("_Z13cxx_leak_siteRSt6vectorIPcSaIS0_EEm");

	assert_non_null(s);
	assert_string_equal(s, "cxx_leak_site(std::vector<char*, std::allocator<char*> >&, "
			       "unsigned long)");
	free(s);
	assert_null(tk_demangle("malloc"));
	assert_null(tk_demangle("_Zbogus"));
	assert_null(tk_demangle(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_weight),
		cmocka_unit_test(test_live_table_random),
		cmocka_unit_test(test_sampled_estimates),
		cmocka_unit_test(test_profile_values_and_min_age),
		cmocka_unit_test(test_untracked_and_unknown_frees),
		cmocka_unit_test(test_release_at_exec_and_exit),
		cmocka_unit_test(test_growth),
		cmocka_unit_test(test_setenv_merges_preload),
		cmocka_unit_test(test_demangle),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
