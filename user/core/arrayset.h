/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * A set of interned arrays of 64-bit words: one copy of each distinct
 * array (a stack's frames, a sample's location ids), named by a 32-bit id,
 * for tables whose many records hold the same arrays.
 *
 * The arrays lie in fixed-size blocks that never move: the set grows a
 * block at a time, so it holds about what it stores (an array doubled by
 * realloc on the heap leaves its old copy in malloc's free lists, as much
 * again as the live size, and slack as much more), and a pointer to an
 * array stays valid until the set is freed. Zeroed, an empty set. int
 * functions return 0 or a negative errno.
 */
#ifndef __TK_ARRAYSET_H
#define __TK_ARRAYSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/hashmap.h"

#define TK_ARRAYSET_SHIFT 13			/* 8192 words (64 KiB) a block */
#define TK_ARRAYSET_BLOCK ((size_t)1 << TK_ARRAYSET_SHIFT)
#define TK_ARRAYSET_EMPTY 0			/* the id of the empty array */
#define TK_ARRAYSET_MAX ((uint32_t)1 << 31)	/* ids are below: the top bit is the caller's */

struct tk_arrayset {
	uint64_t **blocks;
	size_t nr_blocks, cap_blocks;
	size_t words;		/* allocated in all the blocks */
	size_t used;		/* the next id; 0 is never given to a stored array */
	struct tk_hashidx idx;	/* ids of the arrays */
};

/*
 * At id i, word i is the length n, words i + 1 to i + n the array. An
 * array fits in the rest of a block or starts a new one; one longer than
 * a block has a block of its own, as long as it needs.
 */
static inline const uint64_t *tk_arrayset__at(const struct tk_arrayset *s, uint32_t id)
{
	return s->blocks[id >> TK_ARRAYSET_SHIFT] + (id & (TK_ARRAYSET_BLOCK - 1));
}

/* The words of array @id: valid until the set is freed (the empty array: not NULL). */
const uint64_t *tk_arrayset__words(const struct tk_arrayset *s, uint32_t id);

static inline uint32_t tk_arrayset__len(const struct tk_arrayset *s, uint32_t id)
{
	return id == TK_ARRAYSET_EMPTY ? 0 : (uint32_t)tk_arrayset__at(s, id)[0];
}

/* Is array @id the @n words @w? */
static inline bool tk_arrayset__is(const struct tk_arrayset *s, uint32_t id, const uint64_t *w,
				   uint32_t n)
{
	const uint64_t *a;

	if (id == TK_ARRAYSET_EMPTY)
		return !n;
	a = tk_arrayset__at(s, id);
	return a[0] == n && !memcmp(a + 1, w, n * sizeof(*w));
}

/* The hash an array is interned under (core/hash.h; the length counts). */
uint64_t tk_arrayset__hash(const uint64_t *w, uint32_t n);

/*
 * The id of the @n words @w (@hash: tk_arrayset__hash() of them), stored
 * when missing; the empty array is TK_ARRAYSET_EMPTY and stores nothing.
 * 0, or -ENOMEM (also when the set would pass TK_ARRAYSET_MAX words).
 */
int tk_arrayset__intern(struct tk_arrayset *s, const uint64_t *w, uint32_t n, uint64_t hash,
			uint32_t *id);

/* The memory the set holds, in bytes. */
size_t tk_arrayset__bytes(const struct tk_arrayset *s);
void tk_arrayset__free(struct tk_arrayset *s);

#endif /* __TK_ARRAYSET_H */
