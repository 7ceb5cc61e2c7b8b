// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Interned arrays of words: equal contents get one id, different ones
 * (a word, the length) never do; the empty array is TK_ARRAYSET_EMPTY;
 * arrays stay where they are while the set grows, one longer than a block
 * too; the memory held follows what is stored.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/arrayset.h"

static uint32_t intern(struct tk_arrayset *s, const uint64_t *w, uint32_t n)
{
	uint32_t id = UINT32_MAX;

	assert_int_equal(tk_arrayset__intern(s, w, n, tk_arrayset__hash(w, n), &id), 0);
	assert_int_not_equal(id, UINT32_MAX);
	return id;
}

static void test_equal_once(void **state)
{
	uint64_t a[] = { 1, 2, 3 }, b[] = { 1, 2, 3 }, c[] = { 1, 2, 4 };
	struct tk_arrayset s = { 0 };
	uint32_t ia, ib, ic, i2;

	ia = intern(&s, a, 3);
	ib = intern(&s, b, 3);
	ic = intern(&s, c, 3);
	i2 = intern(&s, a, 2);
	assert_int_not_equal(ia, TK_ARRAYSET_EMPTY);
	assert_int_equal(ia, ib);
	assert_int_not_equal(ia, ic);
	assert_int_not_equal(ia, i2);
	assert_int_not_equal(ic, i2);
	assert_int_equal(tk_arrayset__len(&s, ia), 3);
	assert_int_equal(tk_arrayset__len(&s, i2), 2);
	assert_memory_equal(tk_arrayset__words(&s, ic), c, sizeof(c));
	assert_true(tk_arrayset__is(&s, ia, b, 3));
	assert_false(tk_arrayset__is(&s, ia, b, 2));
	assert_false(tk_arrayset__is(&s, ia, c, 3));
	/* the empty array stores nothing, and is no other */
	assert_int_equal(intern(&s, NULL, 0), TK_ARRAYSET_EMPTY);
	assert_int_equal(tk_arrayset__len(&s, TK_ARRAYSET_EMPTY), 0);
	assert_non_null(tk_arrayset__words(&s, TK_ARRAYSET_EMPTY));
	assert_true(tk_arrayset__is(&s, TK_ARRAYSET_EMPTY, NULL, 0));
	assert_false(tk_arrayset__is(&s, ia, NULL, 0));
	tk_arrayset__free(&s);
	assert_int_equal(tk_arrayset__bytes(&s), 0);
}

/* 200,000 arrays over many blocks: the first one never moves, every one reads back. */
static void test_stable_growth(void **state)
{
	struct tk_arrayset s = { 0 };
	const uint64_t *first;
	uint64_t w[7];
	uint32_t i, j, *ids = malloc(200000 * sizeof(*ids));
	size_t one_block;

	assert_non_null(ids);
	for (j = 0; j < 7; j++)
		w[j] = 1000 + j;
	ids[0] = intern(&s, w, 7);
	first = tk_arrayset__words(&s, ids[0]);
	one_block = tk_arrayset__bytes(&s);
	for (i = 1; i < 200000; i++) {
		w[i % 7] = (uint64_t)i << 8 | (i % 7);
		ids[i] = intern(&s, w, 1 + i % 7);
	}
	assert_ptr_equal(tk_arrayset__words(&s, ids[0]), first);
	for (j = 0; j < 7; j++)
		assert_int_equal(first[j], 1000 + j);
	/* held: about the words stored (at most 8 a array here) and the index, not double */
	assert_true(tk_arrayset__bytes(&s) > 200 * one_block / 4);
	assert_true(tk_arrayset__bytes(&s) < 200000 * (8 * 8 + 32) + one_block);
	/* each found again */
	for (j = 0; j < 7; j++)
		w[j] = 1000 + j;
	for (i = 1; i < 200000; i++) {
		w[i % 7] = (uint64_t)i << 8 | (i % 7);
		assert_int_equal(intern(&s, w, 1 + i % 7), ids[i]);
	}
	free(ids);
	tk_arrayset__free(&s);
}

/* An array longer than a block gets one of its own; arrays around it are unharmed. */
static void test_longer_than_block(void **state)
{
	size_t n = TK_ARRAYSET_BLOCK * 2 + 5, i;
	uint64_t *big = malloc(n * sizeof(*big)), small[] = { 7, 8 };
	struct tk_arrayset s = { 0 };
	uint32_t ib, is1, is2, ib0;

	assert_non_null(big);
	for (i = 0; i < n; i++)
		big[i] = i * 3 + 1;
	/* in the first block (whose word 0 is not used), and later */
	ib0 = intern(&s, big, TK_ARRAYSET_BLOCK);
	is1 = intern(&s, small, 2);
	ib = intern(&s, big, n);
	is2 = intern(&s, small, 1);
	assert_int_equal(tk_arrayset__len(&s, ib0), TK_ARRAYSET_BLOCK);
	assert_int_equal(tk_arrayset__len(&s, ib), n);
	assert_memory_equal(tk_arrayset__words(&s, ib0), big, TK_ARRAYSET_BLOCK * sizeof(*big));
	assert_memory_equal(tk_arrayset__words(&s, ib), big, n * sizeof(*big));
	assert_memory_equal(tk_arrayset__words(&s, is1), small, sizeof(small));
	assert_memory_equal(tk_arrayset__words(&s, is2), small, sizeof(*small));
	assert_int_equal(intern(&s, big, n), ib);
	assert_true(tk_arrayset__bytes(&s) >= (n + TK_ARRAYSET_BLOCK) * sizeof(*big));
	free(big);
	tk_arrayset__free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_equal_once),
		cmocka_unit_test(test_stable_growth),
		cmocka_unit_test(test_longer_than_block),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
