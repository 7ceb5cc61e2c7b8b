// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Interned arrays of words (core/arrayset.h): the blocks, the index over ids. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/arrayset.h"
#include "core/grow.h"
#include "core/hash.h"

#define ARRAYSET_SEED 0x61727273ULL

static const uint64_t no_words[1];

const uint64_t *tk_arrayset__words(const struct tk_arrayset *s, uint32_t id)
{
	return id == TK_ARRAYSET_EMPTY ? no_words : tk_arrayset__at(s, id) + 1;
}

uint64_t tk_arrayset__hash(const uint64_t *w, uint32_t n)
{
	return tk_hash__words(ARRAYSET_SEED + n, w, n);
}

struct array_key {
	const uint64_t *w;
	uint32_t n;
};

static inline bool array_equal(const void *ctx, size_t id, const void *key)
{
	const struct array_key *k = key;

	return tk_arrayset__is(ctx, id, k->w, k->n);
}

/*
 * A block that starts with an array of @need words (after the unused word
 * 0 in the first block); 0 or -ENOMEM.
 */
static int new_block(struct tk_arrayset *s, size_t need)
{
	size_t words = need + 1 > TK_ARRAYSET_BLOCK ? need + 1 : TK_ARRAYSET_BLOCK;
	uint64_t *b;
	int err;

	err = tk_grow((void **)&s->blocks, &s->cap_blocks, s->nr_blocks + 1, sizeof(*s->blocks),
		      16);
	if (err)
		return err;
	b = malloc(words * sizeof(*b));
	if (!b)
		return -ENOMEM;
	s->blocks[s->nr_blocks++] = b;
	s->words += words;
	return 0;
}

int tk_arrayset__intern(struct tk_arrayset *s, const uint64_t *w, uint32_t n, uint64_t hash,
			uint32_t *id)
{
	struct array_key k = { w, n };
	size_t at, need = (size_t)n + 1;
	uint64_t *a;
	int err;

	if (!n) {
		*id = TK_ARRAYSET_EMPTY;
		return 0;
	}
	at = tk_hashidx__find(&s->idx, hash, array_equal, s, &k);
	if (at != TK_HASHIDX_NONE) {
		*id = at;
		return 0;
	}
	/* the rest of the last block, or a new one */
	at = s->used;
	if (!s->nr_blocks || (at & (TK_ARRAYSET_BLOCK - 1)) + need > TK_ARRAYSET_BLOCK)
		at = s->nr_blocks << TK_ARRAYSET_SHIFT;
	/* the last block's ids are never reached: every array fits below the limit */
	if (at >= TK_ARRAYSET_MAX - TK_ARRAYSET_BLOCK)
		return -ENOMEM;
	if (at >> TK_ARRAYSET_SHIFT == s->nr_blocks) {
		err = new_block(s, need);
		if (err)
			return err;
		if (at == TK_ARRAYSET_EMPTY)
			at = 1;
	}
	s->used = at;
	err = tk_hashidx__add(&s->idx, hash, at);
	if (err)
		return err == -E2BIG ? -ENOMEM : err;
	a = s->blocks[at >> TK_ARRAYSET_SHIFT] + (at & (TK_ARRAYSET_BLOCK - 1));
	a[0] = n;
	memcpy(a + 1, w, n * sizeof(*w));
	/* after an array as long as its own block, the next one starts the next block */
	s->used = need >= TK_ARRAYSET_BLOCK ? (s->nr_blocks << TK_ARRAYSET_SHIFT) : at + need;
	*id = at;
	return 0;
}

size_t tk_arrayset__bytes(const struct tk_arrayset *s)
{
	size_t bytes = s->words * sizeof(uint64_t) + s->cap_blocks * sizeof(*s->blocks);

	if (s->idx.m.slots)
		bytes += (s->idx.m.mask + 1) * s->idx.m.esz;
	return bytes;
}

void tk_arrayset__free(struct tk_arrayset *s)
{
	size_t i;

	for (i = 0; i < s->nr_blocks; i++)
		free(s->blocks[i]);
	free(s->blocks);
	tk_hashidx__free(&s->idx);
	memset(s, 0, sizeof(*s));
}
