// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The stack table: identical keys merge and their counts add up; a key that
 * differs anywhere (pid, tid, gen, a frame, the kernel/user split, the
 * truncation flag) never merges; overlong stacks are cut and marked; comm is
 * kept; equal frame arrays are stored once, and a table of many short
 * processes on one kernel path stays small; a million adds are timed
 * (printed, not asserted).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/cpu.h"
#include "cpu/stacks.h"

struct found {
	uint32_t pid, tid, gen;
	const uint64_t *kernel;
	const uint64_t *user;
	uint32_t nr_kernel, nr_user;
	bool truncated;
	uint64_t count;
	char comm[16];
	int seen;
};

/* Find the entry with this pid/tid/gen and these frames, and copy what it says. */
static int find_cb(const struct tk_stack_entry *e, void *ctx)
{
	struct found *f = ctx;

	if (e->pid != f->pid || e->tid != f->tid || e->gen != f->gen ||
	    e->nr_kernel != f->nr_kernel || e->nr_user != f->nr_user ||
	    e->truncated != f->truncated)
		return 0;
	if (e->nr_kernel && memcmp(e->kernel, f->kernel, e->nr_kernel * 8))
		return 0;
	if (e->nr_user && memcmp(e->user, f->user, e->nr_user * 8))
		return 0;
	f->seen++;
	f->count = e->count;
	memcpy(f->comm, e->comm, sizeof(f->comm));
	return 0;
}

static uint64_t count_of(struct tk_stacks *t, uint32_t pid, uint32_t tid, uint32_t gen,
			 const uint64_t *k, uint32_t nk, const uint64_t *u, uint32_t nu,
			 bool truncated)
{
	struct found f = { pid, tid, gen, k, u, nk, nu, truncated };

	assert_int_equal(tk_stacks__for_each(t, find_cb, &f), 0);
	assert_true(f.seen <= 1);
	return f.seen ? f.count : 0;
}

static void test_merge_identical(void **state)
{
	uint64_t k[] = { 0xffffffff81000010, 0xffffffff81000020 };
	uint64_t u[] = { 0x401000, 0x401100, 0x401200 };
	struct tk_stacks *t = tk_stacks__new();

	assert_non_null(t);
	assert_int_equal(tk_stacks__add(t, 1, 2, 0, "a", k, 2, u, 3, 1, false), 0);
	assert_int_equal(tk_stacks__add(t, 1, 2, 0, "a", k, 2, u, 3, 5, false), 0);
	assert_int_equal(tk_stacks__add(t, 1, 2, 0, NULL, k, 2, u, 3, 10, false), 0);
	assert_int_equal(tk_stacks__size(t), 1);
	assert_int_equal(tk_stacks__total(t), 16);
	assert_int_equal(count_of(t, 1, 2, 0, k, 2, u, 3, false), 16);
	tk_stacks__free(t);
}

static void test_never_merges_different(void **state)
{
	uint64_t k[] = { 0xffffffff81000010, 0xffffffff81000020 };
	uint64_t u[] = { 0x401000, 0x401100, 0x401200 };
	uint64_t u2[] = { 0x401000, 0x401100, 0x401201 };
	/* the same five frames, split differently between kernel and user */
	uint64_t all[] = { 0xffffffff81000010, 0xffffffff81000020, 0x401000, 0x401100,
			   0x401200 };
	struct tk_stacks *t = tk_stacks__new();

	assert_non_null(t);
	assert_int_equal(tk_stacks__add(t, 1, 2, 0, "a", k, 2, u, 3, 1, false), 0);
	assert_int_equal(tk_stacks__add(t, 9, 2, 0, "a", k, 2, u, 3, 2, false), 0);	/* pid */
	assert_int_equal(tk_stacks__add(t, 1, 9, 0, "a", k, 2, u, 3, 3, false), 0);	/* tid */
	assert_int_equal(tk_stacks__add(t, 1, 2, 1, "a", k, 2, u, 3, 4, false), 0);	/* gen */
	/* one frame differs; one frame fewer */
	assert_int_equal(tk_stacks__add(t, 1, 2, 0, "a", k, 2, u2, 3, 5, false), 0);
	assert_int_equal(tk_stacks__add(t, 1, 2, 0, "a", k, 2, u, 2, 6, false), 0);
	assert_int_equal(tk_stacks__add(t, 1, 2, 0, "a", all, 3, all + 3, 2, 7, false), 0);
	assert_int_equal(tk_stacks__add(t, 1, 2, 0, "a", all, 5, NULL, 0, 8, false), 0);
	assert_int_equal(tk_stacks__add(t, 1, 2, 0, "a", NULL, 0, all, 5, 9, false), 0);
	assert_int_equal(tk_stacks__add(t, 1, 2, 0, "a", k, 2, u, 3, 10, true), 0);	/* cut */
	assert_int_equal(tk_stacks__add(t, 1, 2, 0, "a", NULL, 0, NULL, 0, 11, false), 0);
	assert_int_equal(tk_stacks__size(t), 11);
	assert_int_equal(tk_stacks__total(t), 66);
	assert_int_equal(count_of(t, 1, 2, 0, k, 2, u, 3, false), 1);
	assert_int_equal(count_of(t, 9, 2, 0, k, 2, u, 3, false), 2);
	assert_int_equal(count_of(t, 1, 9, 0, k, 2, u, 3, false), 3);
	assert_int_equal(count_of(t, 1, 2, 1, k, 2, u, 3, false), 4);
	assert_int_equal(count_of(t, 1, 2, 0, k, 2, u2, 3, false), 5);
	assert_int_equal(count_of(t, 1, 2, 0, k, 2, u, 2, false), 6);
	assert_int_equal(count_of(t, 1, 2, 0, all, 3, all + 3, 2, false), 7);
	assert_int_equal(count_of(t, 1, 2, 0, all, 5, NULL, 0, false), 8);
	assert_int_equal(count_of(t, 1, 2, 0, NULL, 0, all, 5, false), 9);
	assert_int_equal(count_of(t, 1, 2, 0, k, 2, u, 3, true), 10);
	assert_int_equal(count_of(t, 1, 2, 0, NULL, 0, NULL, 0, false), 11);
	tk_stacks__free(t);
}

static void test_truncation(void **state)
{
	uint64_t frames[TK_MAX_FRAMES + 10];
	struct tk_stacks *t = tk_stacks__new();
	uint32_t i;

	assert_non_null(t);
	for (i = 0; i < TK_MAX_FRAMES + 10; i++)
		frames[i] = 0x400000 + i * 16;
	/* more than TK_MAX_FRAMES: cut and marked */
	assert_int_equal(tk_stacks__add(t, 1, 1, 0, "x", NULL, 0, frames, TK_MAX_FRAMES + 10, 1,
					false), 0);
	assert_int_equal(count_of(t, 1, 1, 0, NULL, 0, frames, TK_MAX_FRAMES, true), 1);
	/* the same stack cut by the backend merges with it */
	assert_int_equal(tk_stacks__add(t, 1, 1, 0, "x", NULL, 0, frames, TK_MAX_FRAMES, 2, true),
			 0);
	assert_int_equal(count_of(t, 1, 1, 0, NULL, 0, frames, TK_MAX_FRAMES, true), 3);
	/* exactly TK_MAX_FRAMES, not cut: a different stack */
	assert_int_equal(tk_stacks__add(t, 1, 1, 0, "x", NULL, 0, frames, TK_MAX_FRAMES, 4, false),
			 0);
	assert_int_equal(count_of(t, 1, 1, 0, NULL, 0, frames, TK_MAX_FRAMES, false), 4);
	/* the kernel side is cut the same way */
	assert_int_equal(tk_stacks__add(t, 1, 1, 0, "x", frames, TK_MAX_FRAMES + 1, NULL, 0, 5,
					false), 0);
	assert_int_equal(count_of(t, 1, 1, 0, frames, TK_MAX_FRAMES, NULL, 0, true), 5);
	assert_int_equal(tk_stacks__size(t), 3);
	tk_stacks__free(t);
}

static void test_comm_first_non_empty(void **state)
{
	uint64_t u[] = { 0x401000 };
	struct found f = { 7, 7, 0, NULL, u, 0, 1, false };
	struct tk_stacks *t = tk_stacks__new();

	assert_non_null(t);
	assert_int_equal(tk_stacks__add(t, 7, 7, 0, NULL, NULL, 0, u, 1, 1, false), 0);
	assert_int_equal(tk_stacks__add(t, 7, 7, 0, "", NULL, 0, u, 1, 1, false), 0);
	assert_int_equal(tk_stacks__add(t, 7, 7, 0, "first", NULL, 0, u, 1, 1, false), 0);
	assert_int_equal(tk_stacks__add(t, 7, 7, 0, "second", NULL, 0, u, 1, 1, false), 0);
	/* longer than comm: cut to 15 characters */
	assert_int_equal(tk_stacks__add(t, 8, 8, 0, "a-very-long-command-name", NULL, 0, u, 1, 1,
					false), 0);
	assert_int_equal(tk_stacks__for_each(t, find_cb, &f), 0);
	assert_int_equal(f.seen, 1);
	assert_string_equal(f.comm, "first");
	assert_int_equal(f.count, 4);
	f.pid = f.tid = 8;
	f.seen = 0;
	assert_int_equal(tk_stacks__for_each(t, find_cb, &f), 0);
	assert_string_equal(f.comm, "a-very-long-com");
	tk_stacks__free(t);
}

static int stop_cb(const struct tk_stack_entry *e, void *ctx)
{
	return ++*(int *)ctx == 2 ? 42 : 0;
}

static void test_for_each_stops(void **state)
{
	struct tk_stacks *t = tk_stacks__new();
	uint64_t u = 1;
	int n = 0;

	assert_non_null(t);
	assert_int_equal(tk_stacks__add(t, 1, 1, 0, NULL, NULL, 0, &u, 1, 1, false), 0);
	assert_int_equal(tk_stacks__add(t, 2, 2, 0, NULL, NULL, 0, &u, 1, 1, false), 0);
	assert_int_equal(tk_stacks__add(t, 3, 3, 0, NULL, NULL, 0, &u, 1, 1, false), 0);
	assert_int_equal(tk_stacks__for_each(t, stop_cb, &n), 42);
	assert_int_equal(n, 2);
	tk_stacks__free(t);
}

/* Every entry of @pid/@tid, its frames' addresses and count. */
struct where {
	uint32_t pid, tid;
	const uint64_t *kernel, *user;
	uint64_t count;
	char comm[16];
	int seen;
};

static int where_cb(const struct tk_stack_entry *e, void *ctx)
{
	struct where *w = ctx;

	if (e->pid != w->pid || e->tid != w->tid)
		return 0;
	w->kernel = e->kernel;
	w->user = e->user;
	w->count = e->count;
	memcpy(w->comm, e->comm, sizeof(w->comm));
	w->seen++;
	return 0;
}

static struct where where_of(const struct tk_stacks *t, uint32_t pid, uint32_t tid)
{
	struct where w = { pid, tid };

	assert_int_equal(tk_stacks__for_each(t, where_cb, &w), 0);
	assert_int_equal(w.seen, 1);
	return w;
}

/*
 * Identical frame arrays are stored once: two processes on one kernel path
 * get the same kernel pointer, and still count apart; different arrays
 * (a frame, the length) are stored apart.
 */
static void test_shared_frames(void **state)
{
	uint64_t k[] = { 0xffffffff81000010, 0xffffffff81000020, 0xffffffff81000030 };
	uint64_t k2[] = { 0xffffffff81000010, 0xffffffff81000020, 0xffffffff81000031 };
	uint64_t u1[] = { 0x401000, 0x401100 }, u2[] = { 0x501000, 0x501100 };
	uint64_t copy[3];
	struct tk_stacks *t = tk_stacks__new();
	struct where a, b, c, d;

	assert_non_null(t);
	memcpy(copy, k, sizeof(k));	/* equal by content, not by address */
	assert_int_equal(tk_stacks__add(t, 1, 1, 0, "a", k, 3, u1, 2, 3, false), 0);
	assert_int_equal(tk_stacks__add(t, 2, 2, 0, "b", copy, 3, u2, 2, 5, false), 0);
	assert_int_equal(tk_stacks__add(t, 3, 3, 0, "c", k2, 3, u1, 2, 7, false), 0);
	assert_int_equal(tk_stacks__add(t, 4, 4, 0, "d", k, 2, u1, 2, 11, false), 0);
	assert_int_equal(tk_stacks__size(t), 4);
	assert_int_equal(tk_stacks__total(t), 26);
	a = where_of(t, 1, 1);
	b = where_of(t, 2, 2);
	c = where_of(t, 3, 3);
	d = where_of(t, 4, 4);
	assert_ptr_equal(a.kernel, b.kernel);
	assert_ptr_not_equal(a.user, b.user);
	assert_int_equal(a.count, 3);
	assert_int_equal(b.count, 5);
	/* a frame differs, or one fewer: stored apart, the same user stack shared */
	assert_ptr_not_equal(c.kernel, a.kernel);
	assert_ptr_not_equal(d.kernel, a.kernel);
	assert_ptr_equal(c.user, a.user);
	assert_ptr_equal(d.user, a.user);
	assert_memory_equal(c.kernel, k2, sizeof(k2));
	assert_memory_equal(d.kernel, k, 2 * sizeof(*k));
	assert_string_equal(a.comm, "a");
	assert_string_equal(d.comm, "d");
	tk_stacks__free(t);
}

/*
 * Names lie in the same pool as frames: a user stack whose two words are
 * the bytes of a name is stored once with it, and both read back right.
 */
static void test_comm_and_frames_alike(void **state)
{
	uint64_t u[2] = { 0 };
	struct tk_stacks *t = tk_stacks__new();
	struct where a;

	assert_non_null(t);
	memcpy(u, "lookalike", sizeof("lookalike"));
	assert_int_equal(tk_stacks__add(t, 1, 1, 0, "lookalike", NULL, 0, u, 2, 1, false), 0);
	assert_int_equal(tk_stacks__add(t, 2, 2, 0, NULL, NULL, 0, u, 1, 1, false), 0);
	a = where_of(t, 1, 1);
	assert_string_equal(a.comm, "lookalike");
	assert_memory_equal(a.user, u, sizeof(u));
	assert_int_equal(count_of(t, 1, 1, 0, NULL, 0, u, 2, false), 1);
	assert_int_equal(count_of(t, 2, 2, 0, NULL, 0, u, 1, false), 1);
	assert_int_equal(count_of(t, 2, 2, 0, NULL, 0, u, 2, false), 0);
	assert_string_equal(where_of(t, 2, 2).comm, "");
	tk_stacks__free(t);
}

/*
 * A whole-system capture: 20,000 short processes, each with samples on the
 * same 100-frame kernel path (exec, fault, exit) and a user stack of its
 * own. The table holds about an entry's record and index, not a copy of
 * its kernel frames each (which alone would be 800 bytes an entry).
 */
static void test_compact(void **state)
{
	struct tk_stacks *t = tk_stacks__new();
	uint64_t k[100], u[4];
	uint32_t pid, i;
	size_t bytes;

	assert_non_null(t);
	for (i = 0; i < 100; i++)
		k[i] = 0xffffffff81000000 + i * 64;
	for (pid = 1; pid <= 20000; pid++) {
		for (i = 0; i < 4; i++)
			u[i] = 0x550000000000 + (uint64_t)pid * 0x100000 + i * 16;
		assert_int_equal(tk_stacks__add(t, pid, pid, 1, "cpu_short", k, 100, u, 4, 1,
						false), 0);
		/* its second thread: another entry, the same arrays */
		assert_int_equal(tk_stacks__add(t, pid, pid + 1000000, 1, "cpu_short", k, 100, u, 4,
						2, false), 0);
	}
	assert_int_equal(tk_stacks__size(t), 40000);
	assert_int_equal(tk_stacks__total(t), 60000);
	bytes = tk_stacks__bytes(t);
	print_message("40000 entries in %zu bytes (%.0f an entry)\n", bytes, bytes / 40000.0);
	/* record 32 + index <= 32, and half of a 5-word user array + its index slot */
	assert_true(bytes < 40000 * 120);
	assert_int_equal(count_of(t, 777, 777 + 1000000, 1, k, 100,
				  (uint64_t[]){ 0x550000000000 + 777ull * 0x100000,
						0x550000000000 + 777ull * 0x100000 + 16,
						0x550000000000 + 777ull * 0x100000 + 32,
						0x550000000000 + 777ull * 0x100000 + 48 }, 4, false),
			 2);
	tk_stacks__free(t);
}

/* Colliding low hash bits are not an issue: many stacks differing in one deep frame. */
static void test_many_distinct(void **state)
{
	struct tk_stacks *t = tk_stacks__new();
	uint64_t u[40], sum = 0;
	uint32_t i;

	assert_non_null(t);
	for (i = 0; i < 40; i++)
		u[i] = 0x7f0000000000 + i * 64;
	for (i = 0; i < 100000; i++) {
		u[39] = 0x7f0000000000 + (uint64_t)i * 4096;
		assert_int_equal(tk_stacks__add(t, 100, 100, 0, "m", NULL, 0, u, 40, i + 1, false),
				 0);
		sum += i + 1;
	}
	/* again: every one found, none added */
	for (i = 0; i < 100000; i++) {
		u[39] = 0x7f0000000000 + (uint64_t)i * 4096;
		assert_int_equal(tk_stacks__add(t, 100, 100, 0, "m", NULL, 0, u, 40, 1, false), 0);
		sum++;
	}
	assert_int_equal(tk_stacks__size(t), 100000);
	assert_int_equal(tk_stacks__total(t), sum);
	u[39] = 0x7f0000000000 + 777ull * 4096;
	assert_int_equal(count_of(t, 100, 100, 0, NULL, 0, u, 40, false), 778 + 1);
	tk_stacks__free(t);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* 1M adds of 20k distinct 30-frame stacks, as a profile of a busy host would give. */
/* An interval is what a cumulative table counts beyond the previous one (tk_cpu__rotate). */
static void test_interval_diff(void **state)
{
	const uint64_t a[] = { 0x10, 0x20 }, b[] = { 0x30 }, c[] = { 0x40, 0x50, 0x60 };
	struct tk_stacks *prev = tk_stacks__new(), *cur = tk_stacks__new(), *iv = tk_stacks__new();
	struct tk_stack_entry e = { .pid = 1, .tid = 1, .user = a, .nr_user = 2 };

	assert_int_equal(tk_stacks__add(prev, 1, 1, 0, "x", NULL, 0, a, 2, 5, false), 0);
	assert_int_equal(tk_stacks__add(prev, 1, 2, 0, "x", b, 1, NULL, 0, 3, false), 0);
	/* later: a grew by 4, b did not move, c is new; a in another thread is another stack */
	assert_int_equal(tk_stacks__add(cur, 1, 1, 0, "x", NULL, 0, a, 2, 9, false), 0);
	assert_int_equal(tk_stacks__add(cur, 1, 2, 0, "x", b, 1, NULL, 0, 3, false), 0);
	assert_int_equal(tk_stacks__add(cur, 2, 2, 1, "y", c, 3, a, 2, 7, true), 0);
	assert_int_equal(tk_stacks__add(cur, 1, 3, 0, "x", NULL, 0, a, 2, 1, false), 0);
	assert_int_equal(tk_stacks__count(prev, &e, NULL), 5);
	assert_int_equal(tk_stacks__count(cur, &e, NULL), 9);
	e.tid = 7;
	assert_int_equal(tk_stacks__count(cur, &e, NULL), 0);
	assert_int_equal(tk_stacks__add_diff(iv, cur, prev), 0);
	assert_int_equal(tk_stacks__size(iv), 3);
	assert_int_equal(tk_stacks__total(iv), 4 + 7 + 1);
	e.tid = 1;
	assert_int_equal(tk_stacks__count(iv, &e, NULL), 4);
	e = (struct tk_stack_entry){ .pid = 2, .tid = 2, .gen = 1, .kernel = c, .nr_kernel = 3,
				     .user = a, .nr_user = 2, .truncated = true };
	assert_int_equal(tk_stacks__count(iv, &e, NULL), 7);
	/* with no previous table it is a copy */
	tk_stacks__free(iv);
	iv = tk_stacks__new();
	assert_int_equal(tk_stacks__add_diff(iv, cur, NULL), 0);
	assert_int_equal(tk_stacks__total(iv), tk_stacks__total(cur));
	assert_int_equal(tk_stacks__size(iv), tk_stacks__size(cur));
	tk_stacks__free(prev);
	tk_stacks__free(cur);
	tk_stacks__free(iv);
}

/*
 * Intervals of entries that share arrays: only what grew is in the
 * interval, entries known by their arrays in the previous table but not
 * there themselves count whole, and the interval shares arrays again.
 */
static void test_interval_diff_shared(void **state)
{
	const uint64_t k[] = { 0xffffffff81000010, 0xffffffff81000020 }, u[] = { 0x401000 };
	const uint64_t u4[] = { 0x402000 };
	struct tk_stacks *prev = tk_stacks__new(), *cur = tk_stacks__new(), *iv = tk_stacks__new();
	struct where b, c;

	assert_int_equal(tk_stacks__add(prev, 1, 1, 0, "x", k, 2, u, 1, 5, false), 0);
	assert_int_equal(tk_stacks__add(prev, 2, 2, 0, "x", k, 2, u, 1, 1, false), 0);
	assert_int_equal(tk_stacks__add(cur, 1, 1, 0, "x", k, 2, u, 1, 5, false), 0);
	assert_int_equal(tk_stacks__add(cur, 2, 2, 0, "x", k, 2, u, 1, 4, false), 0);
	assert_int_equal(tk_stacks__add(cur, 3, 3, 0, "x", k, 2, u, 1, 2, false), 0);
	assert_int_equal(tk_stacks__add(cur, 4, 4, 0, "x", k, 2, u4, 1, 6, false), 0);
	assert_int_equal(tk_stacks__add_diff(iv, cur, prev), 0);
	assert_int_equal(tk_stacks__size(iv), 3);
	assert_int_equal(tk_stacks__total(iv), 3 + 2 + 6);
	b = where_of(iv, 2, 2);
	c = where_of(iv, 3, 3);
	assert_int_equal(b.count, 3);
	assert_int_equal(c.count, 2);
	assert_int_equal(where_of(iv, 4, 4).count, 6);
	assert_ptr_equal(b.kernel, c.kernel);
	assert_ptr_equal(b.user, c.user);
	assert_memory_equal(b.kernel, k, sizeof(k));
	tk_stacks__free(prev);
	tk_stacks__free(cur);
	tk_stacks__free(iv);
}

/* What for_each gives back, by kind */
struct kind_seen {
	unsigned long on, off, ns, waits;
	enum tk_stack_kind kind;
	uint32_t tid;
};

static int see_kind(const struct tk_stack_entry *e, void *arg)
{
	struct kind_seen *k = arg;

	if (e->kind == TK_STACK_ON_CPU) {
		k->on += e->count;
		assert_int_equal(e->count2, 0);
	} else {
		k->off++;
		k->ns += e->count;
		k->waits += e->count2;
		k->kind = e->kind;
		k->tid = e->tid;
	}
	return 0;
}

/*
 * Off-CPU time: an entry of its own beside the samples of the same stack, its
 * kind and thread given back as they went in, nanoseconds and waits summed;
 * a diff carries both values; the samples' total leaves it out.
 */
static void test_off_cpu_entries(void **state)
{
	struct tk_stacks *t = tk_stacks__new(), *prev = tk_stacks__new(), *iv = tk_stacks__new();
	uint64_t k[2] = { 0xffffffff81000000ull, 0xffffffff81000100ull }, u[1] = { 0x401000 };
	struct kind_seen seen = { 0 };
	struct tk_stack_entry e = { .pid = 5, .tid = 6, .kind = TK_STACK_OFF_SLEEPING,
				    .kernel = k, .nr_kernel = 2, .user = u, .nr_user = 1 };
	uint64_t waits;

	assert_int_equal(tk_stacks__add(t, 5, 6, 0, "w", k, 2, u, 1, 3, false), 0);
	assert_int_equal(tk_stacks__add_off(t, 5, 6, 0, "w", k, 2, u, 1, 1000, 1,
					    TK_STACK_OFF_SLEEPING, false), 0);
	assert_int_equal(tk_stacks__add_off(t, 5, 6, 0, "w", k, 2, u, 1, 500, 2,
					    TK_STACK_OFF_SLEEPING, false), 0);
	/* another state of the same stack is another entry */
	assert_int_equal(tk_stacks__add_off(t, 5, 6, 0, "w", k, 2, u, 1, 7, 1,
					    TK_STACK_OFF_RUNNABLE, false), 0);
	assert_int_equal(tk_stacks__size(t), 3);
	assert_int_equal(tk_stacks__total(t), 3);
	assert_int_equal(tk_stacks__count(t, &e, &waits), 1500);
	assert_int_equal(waits, 3);
	/* samples are not off-CPU; a tid from 2^27 on and an unknown kind are refused */
	assert_int_equal(tk_stacks__add_off(t, 5, 6, 0, "w", k, 2, u, 1, 1, 1, TK_STACK_ON_CPU,
					    false), -EINVAL);
	assert_int_equal(tk_stacks__add_off(t, 5, 1u << 27, 0, "w", k, 2, u, 1, 1, 1,
					    TK_STACK_OFF_SLEEPING, false), -EINVAL);
	assert_int_equal(tk_stacks__add_off(t, 5, 6, 0, "w", k, 2, u, 1, 1, 1, 32, false),
			 -EINVAL);
	/* a short wait keeps its state beside the flag */
	assert_int_equal(tk_stacks__add_off(t, 5, 6, 0, "w", NULL, 0, NULL, 0, 9, 4,
					    TK_STACK_OFF_SHORT | TK_STACK_OFF_UNINTERRUPTIBLE,
					    false), 0);
	assert_int_equal(tk_stacks__for_each(t, see_kind, &seen), 0);
	assert_int_equal(seen.on, 3);
	assert_int_equal(seen.off, 3);
	assert_int_equal(seen.ns, 1500 + 7 + 9);
	assert_int_equal(seen.waits, 3 + 1 + 4);
	assert_int_equal(seen.kind, TK_STACK_OFF_SHORT | TK_STACK_OFF_UNINTERRUPTIBLE);
	assert_int_equal(seen.tid, 6);
	/* the interval since @prev: both values grow */
	assert_int_equal(tk_stacks__add_off(prev, 5, 6, 0, "w", k, 2, u, 1, 1000, 1,
					    TK_STACK_OFF_SLEEPING, false), 0);
	assert_int_equal(tk_stacks__add_diff(iv, t, prev), 0);
	assert_int_equal(tk_stacks__count(iv, &e, &waits), 500);
	assert_int_equal(waits, 2);
	tk_stacks__free(iv);
	tk_stacks__free(prev);
	tk_stacks__free(t);
}

/*
 * A wait that began before the capture is an entry of its own beside the
 * same thread's later waits of the same stack and state, and keeps both
 * flags (with the short one) and a tid as high as pid_max allows.
 */
static void test_off_cpu_before(void **state)
{
	struct tk_stacks *t = tk_stacks__new();
	uint64_t k[1] = { 0xffffffff81000000ull }, u[1] = { 0x401000 };
	struct kind_seen seen = { 0 };
	struct tk_stack_entry e = { .pid = 5, .tid = (1u << 22) - 1, .kind = TK_STACK_OFF_SLEEPING,
				    .kernel = k, .nr_kernel = 1, .user = u, .nr_user = 1 };
	uint64_t waits;

	assert_int_equal(tk_stacks__add_off(t, 5, e.tid, 0, "w", k, 1, u, 1, 3000, 1,
					    TK_STACK_OFF_SLEEPING | TK_STACK_OFF_BEFORE, false), 0);
	assert_int_equal(tk_stacks__add_off(t, 5, e.tid, 0, "w", k, 1, u, 1, 20, 2,
					    TK_STACK_OFF_SLEEPING, false), 0);
	assert_int_equal(tk_stacks__size(t), 2);
	assert_int_equal(tk_stacks__count(t, &e, &waits), 20);
	assert_int_equal(waits, 2);
	e.kind = TK_STACK_OFF_SLEEPING | TK_STACK_OFF_BEFORE;
	assert_int_equal(tk_stacks__count(t, &e, &waits), 3000);
	assert_int_equal(waits, 1);
	tk_stacks__free(t);
	t = tk_stacks__new();
	assert_int_equal(tk_stacks__add_off(t, 5, e.tid, 0, "w", NULL, 0, NULL, 0, 9, 1,
					    TK_STACK_OFF_SHORT | TK_STACK_OFF_BEFORE |
					    TK_STACK_OFF_UNINTERRUPTIBLE, false), 0);
	assert_int_equal(tk_stacks__for_each(t, see_kind, &seen), 0);
	assert_int_equal(seen.kind,
			 TK_STACK_OFF_SHORT | TK_STACK_OFF_BEFORE | TK_STACK_OFF_UNINTERRUPTIBLE);
	assert_int_equal(seen.tid, e.tid);
	assert_string_equal(tk_cpu_profile__state(seen.kind), "uninterruptible");
	tk_stacks__free(t);
}

static void test_million_adds_timing(void **state)
{
	struct tk_stacks *t = tk_stacks__new();
	uint64_t k[8], u[22];
	uint32_t i, j, x = 1;
	double t0, dt;

	assert_non_null(t);
	t0 = now_s();
	for (i = 0; i < 1000000; i++) {
		uint32_t s;

		x = x * 1103515245 + 12345;
		s = (x >> 8) % 20000;
		for (j = 0; j < 8; j++)
			k[j] = 0xffffffff81000000 + (s % 97) * 256 + j;
		for (j = 0; j < 22; j++)
			u[j] = 0x560000000000 + s * 4096 + j * 64;
		assert_int_equal(tk_stacks__add(t, 1000 + s % 50, 1000 + s % 50, 0, "w", k, 8, u,
						22, 1, false), 0);
	}
	dt = now_s() - t0;
	print_message("1M adds, %zu distinct stacks: %.1f ms (%.0f ns per add)\n",
		      tk_stacks__size(t), dt * 1e3, dt * 1e9 / 1e6);
	assert_int_equal(tk_stacks__total(t), 1000000);
	assert_true(tk_stacks__size(t) <= 20000);
	tk_stacks__free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_merge_identical),
		cmocka_unit_test(test_never_merges_different),
		cmocka_unit_test(test_truncation),
		cmocka_unit_test(test_comm_first_non_empty),
		cmocka_unit_test(test_for_each_stops),
		cmocka_unit_test(test_many_distinct),
		cmocka_unit_test(test_shared_frames),
		cmocka_unit_test(test_comm_and_frames_alike),
		cmocka_unit_test(test_compact),
		cmocka_unit_test(test_interval_diff),
		cmocka_unit_test(test_interval_diff_shared),
		cmocka_unit_test(test_off_cpu_entries),
		cmocka_unit_test(test_off_cpu_before),
		cmocka_unit_test(test_million_adds_timing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
