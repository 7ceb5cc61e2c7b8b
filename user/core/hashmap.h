/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The hash table of user space: open addressing with linear probing over a
 * power-of-two array of the caller's fixed-size records, kept at most half
 * full, deletion by backward shift (no tombstones).
 *
 * The records are the caller's: a struct whose first 8 bytes are never all
 * zero in a stored record (a pointer, a non-zero id, a flag), since an empty
 * slot is one whose first word is 0. A lookup compares records with a match
 * callback; the table needs the hash a record was stored under only to move
 * it (growth, deletion), and asks the hash callback given at init. Lookups
 * are inline: with constant callbacks the probe loop is the caller's own, as
 * fast as a table written out by hand, and a hit touches one record.
 *
 * On it, struct tk_hashidx: an index of positions in the caller's own arrays
 * (dense arrays, an arena), one word per slot, the upper half of the key's
 * hash and the position + 1. A probe that meets another key's slot rarely
 * reads that key: its hash fragment differs, and the caller's equality
 * callback is asked only on a match. The home slot comes from the fragment,
 * so the index grows without reading a key.
 *
 * And struct tk_strset, interned strings: one copy of each, for names that
 * many records point at.
 *
 * The table and the index do not hash keys: callers use core/hash.h, whose results are mixed in
 * every bit (the home slot comes from the upper half). int functions return
 * 0 or a negative errno; pointer returns are NULL with errno set.
 */
#ifndef __TK_HASHMAP_H
#define __TK_HASHMAP_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct tk_hashmap {
	uint8_t *slots;		/* mask + 1 records of esz bytes; first word 0: empty */
	size_t mask;		/* slots - 1 (a power of two), or 0 before the first insert */
	size_t used;
	size_t esz;		/* record size, a multiple of 8 */
	/* the hash @rec was stored under; NULL: the upper half of its first word is */
	uint64_t (*hash)(const void *rec);
};

/* An empty table of @type records, which @hash_fn hashes. */
#define TK_HASHMAP_INIT(type, hash_fn) { .esz = sizeof(type), .hash = (hash_fn) }

/* Is @rec the record of @key? (@ctx: the caller's, passed through.) */
typedef bool (*tk_hashmap_match_fn)(const void *ctx, const void *rec, const void *key);

/* The slot a hash starts probing at: a Fibonacci hash of its upper half. */
static inline size_t tk_hashmap__home(uint64_t hash, size_t mask)
{
	return (size_t)(((hash >> 32) * 0x9e3779b97f4a7c15ULL) >> 32) & mask;
}

static inline void *tk_hashmap__rec(const struct tk_hashmap *m, size_t i)
{
	return m->slots + i * m->esz;
}

static inline bool tk_hashmap__empty(const void *rec)
{
	uint64_t w;

	memcpy(&w, rec, sizeof(w));
	return !w;
}

/*
 * Probe for @key under @hash (the table has slots): its slot and true, or
 * the empty slot that ends its run and false.
 */
static inline bool tk_hashmap__probe(const struct tk_hashmap *m, uint64_t hash,
				     tk_hashmap_match_fn match, const void *ctx, const void *key,
				     size_t *slot)
{
	size_t i;

	for (i = tk_hashmap__home(hash, m->mask);; i = (i + 1) & m->mask) {
		const void *r = tk_hashmap__rec(m, i);

		if (tk_hashmap__empty(r)) {
			*slot = i;
			return false;
		}
		if (match(ctx, r, key)) {
			*slot = i;
			return true;
		}
	}
}

/* The record of @key, or NULL. Valid until the next insert or delete. */
static inline void *tk_hashmap__find(const struct tk_hashmap *m, uint64_t hash,
				     tk_hashmap_match_fn match, const void *ctx, const void *key)
{
	size_t i;

	if (!m->slots || !tk_hashmap__probe(m, hash, match, ctx, key, &i))
		return NULL;
	return tk_hashmap__rec(m, i);
}

/* Room for @n records in all without growing. Returns 0, -ENOMEM or -E2BIG. */
int tk_hashmap__reserve(struct tk_hashmap *m, size_t n);

/*
 * The record of @key (*@found), or else the empty slot it goes in (all
 * zeros), counted as used: the caller fills it in (its first word not 0, its hash @hash)
 * before anything else uses @m, or gives it back with tk_hashmap__del().
 * NULL with errno ENOMEM. The table may grow first: pointers into it from
 * before are stale.
 */
static inline void *tk_hashmap__insert(struct tk_hashmap *m, uint64_t hash,
				       tk_hashmap_match_fn match, const void *ctx, const void *key,
				       bool *found)
{
	size_t i;
	int err;

	if (!m->slots || (m->used + 1) * 2 > m->mask + 1) {
		err = tk_hashmap__reserve(m, m->used + 1);
		if (err) {
			errno = -err;
			return NULL;
		}
	}
	*found = tk_hashmap__probe(m, hash, match, ctx, key, &i);
	if (!*found)
		m->used++;
	return tk_hashmap__rec(m, i);
}

/*
 * Remove @rec, a record of @m (or a slot tk_hashmap__insert() gave and that
 * was not filled in). Later records of its run move back over it: pointers
 * into @m are stale after, and an iteration must look at the same slot again.
 */
void tk_hashmap__del(struct tk_hashmap *m, void *rec);

/* Iterate: for (i = 0; (r = tk_hashmap__next(m, &i));) visits every record once. */
static inline void *tk_hashmap__next(const struct tk_hashmap *m, size_t *i)
{
	for (; m->slots && *i <= m->mask; (*i)++) {
		void *r = tk_hashmap__rec(m, *i);

		if (!tk_hashmap__empty(r)) {
			(*i)++;
			return r;
		}
	}
	return NULL;
}

/* Forget every record; the slots stay allocated. */
void tk_hashmap__clear(struct tk_hashmap *m);
void tk_hashmap__free(struct tk_hashmap *m);

/* ---- an index of positions in the caller's arrays ------------------------------------ */

/* Zeroed, an empty index. */
struct tk_hashidx {
	struct tk_hashmap m;	/* of uint64_t: hash >> 32 << 32 | (position + 1) */
};

/* Is the entry at @index the one @key names? */
typedef bool (*tk_hashidx_eq_fn)(const void *ctx, size_t index, const void *key);

#define TK_HASHIDX_NONE ((size_t)-1)
#define TK_HASHIDX_MAX ((size_t)UINT32_MAX - 1)	/* positions are at most this */

/*
 * The position stored for a key equal to @key, or TK_HASHIDX_NONE. The probe
 * of tk_hashmap__probe() for one-word slots, written out so that @eq, a
 * constant at the call, is inlined here (through a record match it would
 * stay a call) and a slot's address needs no multiply.
 */
static inline size_t tk_hashidx__find(const struct tk_hashidx *x, uint64_t hash,
				      tk_hashidx_eq_fn eq, const void *ctx, const void *key)
{
	const uint64_t *slots = (const uint64_t *)x->m.slots;
	size_t i, mask = x->m.mask;
	uint64_t s;

	if (!slots)
		return TK_HASHIDX_NONE;
	for (i = tk_hashmap__home(hash, mask); (s = slots[i]); i = (i + 1) & mask) {
		if (s >> 32 == hash >> 32 && eq(ctx, (uint32_t)s - 1, key))
			return (uint32_t)s - 1;
	}
	return TK_HASHIDX_NONE;
}

/*
 * Store @index (at most TK_HASHIDX_MAX) under @hash; the caller knows no
 * equal key is stored. Returns 0, -ENOMEM or -E2BIG.
 */
int tk_hashidx__add(struct tk_hashidx *x, uint64_t hash, size_t index);
/* Room for @n positions without growing. Returns 0, -ENOMEM or -E2BIG. */
int tk_hashidx__reserve(struct tk_hashidx *x, size_t n);
void tk_hashidx__free(struct tk_hashidx *x);

/* ---- a set of interned strings --------------------------------------------------- */

/* Zeroed, an empty set. Strings are copied in, and live until the set is freed. */
struct tk_strset {
	struct tk_hashmap m;	/* of char *: one pointer per slot */
};

/* The set's copy of @s, made when missing. NULL with errno ENOMEM. */
const char *tk_strset__intern(struct tk_strset *ss, const char *s);
void tk_strset__free(struct tk_strset *ss);

#endif /* __TK_HASHMAP_H */
