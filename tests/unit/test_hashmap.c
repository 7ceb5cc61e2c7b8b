// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The hash table of user space (core/hashmap.h) and its hash functions. The
 * table of records: empty finds nothing; 200000 keys, and keys that share a
 * whole hash or one of eight, are all found while it grows, at most half
 * full; inserts and deletes in random order agree with a plain reference
 * (also in a run that wraps around the end of the slots, and deleting while
 * iterating); reserve means no growth. The index of positions: works
 * zeroed, tells keys of one hash apart with the caller's callback, which it
 * asks only when the stored fragment matches; its limits. The hashes the
 * profile writers use (SVG colours) keep their values; the frame hash keeps
 * near-identical stacks apart in the bits the index stores.
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

#include "core/hash.h"
#include "core/hashmap.h"

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next_rand(void)
{
	/* splitmix64: a fixed sequence */
	uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* Hashes of a key: a good one, and two that collide on purpose. */
static uint64_t hash_good(uint64_t key)
{
	return tk_hash__u64(1, key);
}

/* Every key under one hash: only the comparison tells them apart. */
static uint64_t hash_same(uint64_t key)
{
	return 0x1234567800000000ULL;
}

/* Eight hashes: long runs of slots whose members come from few homes. */
static uint64_t hash_few(uint64_t key)
{
	return (key % 8) << 40;
}

/* ---- the table of records ----------------------------------------------------------- */

struct rec {
	uint64_t key;		/* never 0 */
	uint64_t val;
};

static uint64_t rec_hash_good(const void *r)
{
	return hash_good(((const struct rec *)r)->key);
}

static uint64_t rec_hash_same(const void *r)
{
	return hash_same(((const struct rec *)r)->key);
}

static uint64_t rec_hash_few(const void *r)
{
	return hash_few(((const struct rec *)r)->key);
}

static size_t match_calls;

static bool rec_match(const void *ctx, const void *r, const void *key)
{
	match_calls++;
	return ((const struct rec *)r)->key == *(const uint64_t *)key;
}

static struct rec *rec_find(const struct tk_hashmap *m, uint64_t key)
{
	return tk_hashmap__find(m, m->hash(&(struct rec){ .key = key }), rec_match, NULL, &key);
}

static struct rec *rec_insert(struct tk_hashmap *m, uint64_t key, bool *found)
{
	struct rec *r = tk_hashmap__insert(m, m->hash(&(struct rec){ .key = key }), rec_match,
					   NULL, &key, found);

	assert_non_null(r);
	if (!*found) {
		assert_int_equal(r->key, 0);
		assert_int_equal(r->val, 0);
		r->key = key;
	}
	return r;
}

static void test_empty(void **state)
{
	struct tk_hashmap m = TK_HASHMAP_INIT(struct rec, rec_hash_good);
	size_t i = 0;

	assert_null(rec_find(&m, 42));
	assert_null(tk_hashmap__next(&m, &i));
	tk_hashmap__clear(&m);
	tk_hashmap__free(&m);
	tk_hashmap__free(&m);
}

/* Insert @n keys, checking all of them after each doubling, then iterate. */
static void add_many(size_t n, uint64_t (*hash)(const void *r))
{
	struct tk_hashmap m = TK_HASHMAP_INIT(struct rec, hash);
	uint64_t *keys = malloc(n * sizeof(*keys));
	size_t i, j, seen = 0;
	struct rec *r;
	bool found;

	assert_non_null(keys);
	for (i = 0; i < n; i++) {
		keys[i] = next_rand() | 1;
		assert_null(rec_find(&m, keys[i]));
		r = rec_insert(&m, keys[i], &found);
		assert_false(found);
		r->val = i;
		assert_true(m.mask + 1 >= 2 * m.used);
		if (!(i & (i + 1)))
			for (j = 0; j <= i; j++)
				assert_int_equal(rec_find(&m, keys[j])->val, j);
	}
	for (j = 0; j < n; j++) {
		r = rec_insert(&m, keys[j], &found);
		assert_true(found);
		assert_int_equal(r->val, j);
	}
	assert_int_equal(m.used, n);
	assert_null(rec_find(&m, 2));	/* keys are odd */
	i = 0;
	while ((r = tk_hashmap__next(&m, &i)))
		seen++;
	assert_int_equal(seen, n);
	tk_hashmap__free(&m);
	free(keys);
}

static void test_many_keys(void **state)
{
	add_many(200000, rec_hash_good);
}

static void test_collisions(void **state)
{
	add_many(2000, rec_hash_same);
	add_many(5000, rec_hash_few);
}

/* Random inserts and deletes against a plain array of what is in. */
static void churn(uint64_t (*hash)(const void *r), size_t n, size_t rounds)
{
	struct tk_hashmap m = TK_HASHMAP_INIT(struct rec, hash);
	bool *in = calloc(n, sizeof(*in));
	size_t r, k, live = 0;
	struct rec *e;
	bool found;

	assert_non_null(in);
	for (r = 0; r < rounds; r++) {
		k = next_rand() % n;
		if (!in[k]) {
			e = rec_insert(&m, k + 1, &found);
			assert_false(found);
			e->val = k * 3;
			in[k] = true;
			live++;
		} else {
			e = rec_find(&m, k + 1);
			assert_non_null(e);
			assert_int_equal(e->val, k * 3);
			tk_hashmap__del(&m, e);
			assert_null(rec_find(&m, k + 1));
			in[k] = false;
			live--;
		}
		assert_int_equal(m.used, live);
		if (!(r % 997))
			for (k = 0; k < n; k++)
				assert_true(!rec_find(&m, k + 1) == !in[k]);
	}
	/* delete while iterating: every other record; the slot is looked at again */
	k = 0;
	for (r = 0; (e = tk_hashmap__next(&m, &r));) {
		if (k++ % 2)
			continue;
		in[e->key - 1] = false;
		tk_hashmap__del(&m, e);
		live--;
		r--;
	}
	assert_int_equal(m.used, live);
	for (k = 0; k < n; k++)
		assert_true(!rec_find(&m, k + 1) == !in[k]);
	tk_hashmap__free(&m);
	free(in);
}

static void test_delete_random(void **state)
{
	churn(rec_hash_good, 3000, 60000);
	churn(rec_hash_few, 300, 6000);
	churn(rec_hash_same, 100, 2000);
}

/* Keys whose home is the slot chosen, for the run below. */
static uint64_t wrap_hash_of[64];

static uint64_t rec_hash_wrap(const void *r)
{
	return wrap_hash_of[((const struct rec *)r)->key];
}

/* A run that starts in the last slot wraps to the first; deleting in it keeps it whole. */
static void test_delete_wraps(void **state)
{
	struct tk_hashmap m = TK_HASHMAP_INIT(struct rec, rec_hash_wrap);
	size_t nt = 0, i, j;
	uint64_t h;
	bool found;

	assert_int_equal(tk_hashmap__reserve(&m, 8), 0);
	/* keys 1..5 at home in the last slot, 6..8 in the first */
	for (h = 1ULL << 32; nt < 8; h += 1ULL << 32)
		if (tk_hashmap__home(h, m.mask) == (nt < 5 ? m.mask : 0))
			wrap_hash_of[++nt] = h;
	for (i = 1; i <= 8; i++) {
		struct rec *r;

		r = tk_hashmap__insert(&m, wrap_hash_of[i], rec_match, NULL, &i, &found);

		r->key = i;
	}
	/* the run: the last slot, then slots 0..6 */
	assert_int_equal(((struct rec *)tk_hashmap__rec(&m, m.mask))->key, 1);
	for (i = 0; i < 7; i++)
		assert_int_equal(((struct rec *)tk_hashmap__rec(&m, i))->key, i + 2);
	/* take each out in turn and put it back: the others stay findable */
	for (i = 1; i <= 8; i++) {
		struct rec *r = tk_hashmap__find(&m, wrap_hash_of[i], rec_match, NULL, &i);

		assert_non_null(r);
		tk_hashmap__del(&m, r);
		for (j = 1; j <= 8; j++) {
			r = tk_hashmap__find(&m, wrap_hash_of[j], rec_match, NULL, &j);
			assert_true(j == i ? !r : r && r->key == j);
		}
		r = tk_hashmap__insert(&m, wrap_hash_of[i], rec_match, NULL, &i, &found);
		assert_false(found);
		r->key = i;
	}
	assert_int_equal(m.used, 8);
	tk_hashmap__free(&m);
}

static void test_reserve_clear(void **state)
{
	struct tk_hashmap m = TK_HASHMAP_INIT(struct rec, rec_hash_good);
	uint8_t *slots;
	size_t i;
	bool found;

	assert_int_equal(tk_hashmap__reserve(&m, 1000), 0);
	slots = m.slots;
	assert_true(m.mask + 1 >= 2000);
	for (i = 1; i <= 1000; i++)
		rec_insert(&m, i, &found);
	assert_ptr_equal(m.slots, slots);
	tk_hashmap__clear(&m);
	assert_int_equal(m.used, 0);
	assert_null(rec_find(&m, 1));
	assert_int_equal(tk_hashmap__reserve(&m, SIZE_MAX / 4), -E2BIG);
	tk_hashmap__free(&m);
}

/* ---- the index of positions ------------------------------------------------------------ */

struct keys {
	uint64_t *key;
	uint64_t (*hash)(uint64_t key);
	size_t eq_calls;
};

static bool key_eq(const void *ctx, size_t i, const void *key)
{
	struct keys *k = (struct keys *)ctx;

	k->eq_calls++;
	return k->key[i] == *(const uint64_t *)key;
}

static size_t idx_find(const struct tk_hashidx *x, struct keys *k, uint64_t key)
{
	return tk_hashidx__find(x, k->hash(key), key_eq, k, &key);
}

static void index_many(size_t n, uint64_t (*hash)(uint64_t key))
{
	struct tk_hashidx x = { 0 };	/* zeroed: empty */
	struct keys k = { .hash = hash };
	size_t i, j;

	k.key = malloc(n * sizeof(*k.key));
	assert_non_null(k.key);
	assert_int_equal(idx_find(&x, &k, 1), TK_HASHIDX_NONE);
	for (i = 0; i < n; i++) {
		k.key[i] = next_rand();
		assert_int_equal(idx_find(&x, &k, k.key[i]), TK_HASHIDX_NONE);
		assert_int_equal(tk_hashidx__add(&x, hash(k.key[i]), i), 0);
		if (!(i & (i + 1)))
			for (j = 0; j <= i; j++)
				assert_int_equal(idx_find(&x, &k, k.key[j]), j);
	}
	for (j = 0; j < n; j++)
		assert_int_equal(idx_find(&x, &k, k.key[j]), j);
	tk_hashidx__free(&x);
	free(k.key);
}

static void test_index(void **state)
{
	index_many(100000, hash_good);
	index_many(2000, hash_same);
	index_many(3000, hash_few);
}

/* With distinct fragments the callback is asked about the key found, and nothing else. */
static void test_index_eq_only_on_fragment(void **state)
{
	enum { N = 50000 };
	struct tk_hashidx x = { 0 };
	struct keys k = { .hash = hash_good };
	size_t i;

	k.key = malloc(N * sizeof(*k.key));
	assert_non_null(k.key);
	assert_int_equal(tk_hashidx__reserve(&x, N), 0);
	for (i = 0; i < N; i++) {
		k.key[i] = i * 4096;	/* clustered, as addresses are */
		assert_int_equal(tk_hashidx__add(&x, hash_good(k.key[i]), i), 0);
	}
	for (i = 0; i < N; i++)
		assert_int_equal(idx_find(&x, &k, k.key[i]), i);
	/* 32-bit fragments: a false match in 50000 probes is unlikely, a handful impossible */
	assert_true(k.eq_calls - N <= 2);
	k.eq_calls = 0;
	for (i = 0; i < N; i++)
		assert_int_equal(idx_find(&x, &k, i * 4096 + 1), TK_HASHIDX_NONE);
	assert_true(k.eq_calls <= 2);
	tk_hashidx__free(&x);
	free(k.key);
}

static void test_index_limits(void **state)
{
	struct tk_hashidx x = { 0 };

	assert_int_equal(tk_hashidx__add(&x, 1ULL << 32, TK_HASHIDX_MAX + 1), -E2BIG);
	assert_int_equal(tk_hashidx__add(&x, 1ULL << 32, TK_HASHIDX_MAX), 0);
	assert_int_equal(tk_hashidx__reserve(&x, TK_HASHIDX_MAX + 2), -E2BIG);
	tk_hashidx__free(&x);
}

/* ---- hash functions -------------------------------------------------------------------- */

static void test_hash_values(void **state)
{
	uint64_t a[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 }, b[9], zeros[8] = { 0 };
	size_t i;

	/* pinned: the SVG writer's colours come from these */
	assert_true(tk_hash__str(7, "main") == 0x76bc9ed6e225d662ULL);
	assert_true(tk_hash__str(9, NULL) == 0xa05812227a76b73eULL);
	assert_true(tk_hash__str(9, "") == 0x59b94d0113612d7ULL);
	assert_true(tk_hash__u64(tk_hash__u64(8, 1), 2) == 0x27e0e7e1accb4bf2ULL);
	assert_true(tk_hash__bytes(0, "\0\1\2", 3) == 0x72e63c887066fc4dULL);
	assert_true(tk_hash__str(9, NULL) != tk_hash__str(9, ""));

	/* every word and its place count; so does the length of a run of zeros */
	for (i = 0; i < 9; i++) {
		memcpy(b, a, sizeof(b));
		b[i] ^= 1ULL << (i * 7);
		assert_true(tk_hash__words(0, a, 9) != tk_hash__words(0, b, 9));
	}
	b[0] = a[1];
	b[1] = a[0];
	memcpy(b + 2, a + 2, 7 * sizeof(*b));
	assert_true(tk_hash__words(0, a, 9) != tk_hash__words(0, b, 9));
	for (i = 0; i < 8; i++)
		assert_true(tk_hash__words(0, zeros, i) != tk_hash__words(0, zeros, i + 1));
	assert_true(tk_hash__words(0, a, 9) != tk_hash__words(1, a, 9));
	/* the upper half, which the index keeps, varies with the lowest input bit */
	assert_true(tk_hash__words(0, a, 1) >> 32 != tk_hash__words(0, a + 1, 1) >> 32);
	assert_true(tk_hash__u64(0, 2) >> 32 != tk_hash__u64(0, 3) >> 32);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Equal upper halves among @n hashes (what the index keeps); ~n^2/2^33 by chance. */
static size_t tag_collisions(uint64_t *h, size_t n)
{
	size_t i, c = 0;

	for (i = 0; i < n; i++)
		h[i] >>= 32;
	qsort(h, n, sizeof(*h), cmp_u64);
	for (i = 1; i < n; i++)
		c += h[i] == h[i - 1];
	return c;
}

/*
 * Distinct stacks that differ little (in the seed only, one word, the split
 * between the two runs) have distinct fragments: 100000 of them collide about
 * once by chance, and a flaw that loses bits collides thousands of times.
 */
static void test_hash_spread(void **state)
{
	enum { N = 100000 };
	uint64_t *h = malloc(N * sizeof(*h)), w[40];
	size_t i, j;

	assert_non_null(h);
	for (j = 0; j < 40; j++)
		w[j] = 0x7f0000400000ULL + j * 0x1234;
	/* pid/tid seeds, no frames or the same frames */
	for (i = 0; i < N; i++)
		h[i] = tk_hash__words2((uint64_t)(2000000 + i % 32) << 32 | i, NULL, 0, NULL, 0);
	assert_true(tag_collisions(h, N) <= 8);
	for (i = 0; i < N; i++)
		h[i] = tk_hash__words2((uint64_t)(2000000 + i % 32) << 32 | i, w, 12, NULL, 0);
	assert_true(tag_collisions(h, N) <= 8);
	/* one word changed, anywhere in a kernel + user pair of runs */
	for (i = 0; i < N; i++) {
		uint64_t g[40];

		memcpy(g, w, sizeof(g));
		g[i % 40] ^= i / 40 + 1;
		h[i] = tk_hash__words2(7, g, 12, g + 12, 28);
	}
	assert_true(tag_collisions(h, N) <= 8);
	/* addresses 16 apart, one word */
	for (i = 0; i < N; i++) {
		w[0] = 0x400000 + i * 16;
		h[i] = tk_hash__words(0, w, 1);
	}
	assert_true(tag_collisions(h, N) <= 8);
	/* the same zero words, split every way */
	memset(w, 0, sizeof(w));
	for (i = 0; i < 41 * 41; i++)
		h[i] = tk_hash__words2(0, w, i / 41, w, i % 41);
	assert_int_equal(tag_collisions(h, 41 * 41), 0);
	free(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_empty),
		cmocka_unit_test(test_many_keys),
		cmocka_unit_test(test_collisions),
		cmocka_unit_test(test_delete_random),
		cmocka_unit_test(test_delete_wraps),
		cmocka_unit_test(test_reserve_clear),
		cmocka_unit_test(test_index),
		cmocka_unit_test(test_index_eq_only_on_fragment),
		cmocka_unit_test(test_index_limits),
		cmocka_unit_test(test_hash_values),
		cmocka_unit_test(test_hash_spread),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
