// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The hash table of user space: what is not inline in hashmap.h (growth, deletion). */
#include <errno.h>
#include <stdlib.h>

#include "core/hash.h"
#include "core/hashmap.h"

#define MIN_SLOTS 64

/* The hash @r was stored under (without a callback, its first word holds it). */
static inline uint64_t rec_hash(const struct tk_hashmap *m, const void *r)
{
	uint64_t w;

	if (m->hash)
		return m->hash(r);
	memcpy(&w, r, sizeof(w));
	return w;
}

static inline void rec_copy(const struct tk_hashmap *m, void *dst, const void *src)
{
	/* the index's one-word slots: no call to memcpy */
	if (m->esz == sizeof(uint64_t))
		memcpy(dst, src, sizeof(uint64_t));
	else
		memcpy(dst, src, m->esz);
}

/* Rebuild with @nr slots (a power of two, more than twice the records). */
static int resize(struct tk_hashmap *m, size_t nr)
{
	uint8_t *slots = calloc(nr, m->esz);
	size_t i, j;

	if (!slots)
		return -ENOMEM;
	for (i = 0; m->slots && i <= m->mask; i++) {
		const void *r = tk_hashmap__rec(m, i);

		if (tk_hashmap__empty(r))
			continue;
		for (j = tk_hashmap__home(rec_hash(m, r), nr - 1);
		     !tk_hashmap__empty(slots + j * m->esz); j = (j + 1) & (nr - 1))
			;
		rec_copy(m, slots + j * m->esz, r);
	}
	free(m->slots);
	m->slots = slots;
	m->mask = nr - 1;
	return 0;
}

int tk_hashmap__reserve(struct tk_hashmap *m, size_t n)
{
	size_t nr = m->slots ? m->mask + 1 : MIN_SLOTS;

	if (n > (SIZE_MAX / 2) / (m->esz ? m->esz : 1))
		return -E2BIG;
	/* at most half full: probes stay short even where keys cluster */
	while (n * 2 > nr)
		nr *= 2;
	return m->slots && nr == m->mask + 1 ? 0 : resize(m, nr);
}

void tk_hashmap__del(struct tk_hashmap *m, void *rec)
{
	size_t i = ((uint8_t *)rec - m->slots) / m->esz, j, k;

	/* shift later members of the run back over the hole, so no probe stops early */
	for (j = (i + 1) & m->mask; !tk_hashmap__empty(tk_hashmap__rec(m, j));
	     j = (j + 1) & m->mask) {
		k = tk_hashmap__home(rec_hash(m, tk_hashmap__rec(m, j)), m->mask);
		/* a member whose home lies cyclically in (i, j] stays */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		rec_copy(m, tk_hashmap__rec(m, i), tk_hashmap__rec(m, j));
		i = j;
	}
	memset(tk_hashmap__rec(m, i), 0, m->esz);
	m->used--;
}

void tk_hashmap__clear(struct tk_hashmap *m)
{
	if (m->slots)
		memset(m->slots, 0, (m->mask + 1) * m->esz);
	m->used = 0;
}

void tk_hashmap__free(struct tk_hashmap *m)
{
	free(m->slots);
	m->slots = NULL;
	m->mask = 0;
	m->used = 0;
}

/* ---- an index of positions in the caller's arrays ------------------------------------ */

/* A slot keeps the upper half of its hash, all a move needs: no hash callback. */
static void idx_init(struct tk_hashidx *x)
{
	x->m.esz = sizeof(uint64_t);
	x->m.hash = NULL;
}

int tk_hashidx__reserve(struct tk_hashidx *x, size_t n)
{
	if (n > TK_HASHIDX_MAX + 1)
		return -E2BIG;
	idx_init(x);
	return tk_hashmap__reserve(&x->m, n);
}

/* The caller knows the key is new: the probe looks for the empty slot only. */
static bool idx_never(const void *ctx, const void *rec, const void *key)
{
	return false;
}

int tk_hashidx__add(struct tk_hashidx *x, uint64_t hash, size_t index)
{
	uint64_t *s;
	bool found;

	if (index > TK_HASHIDX_MAX)
		return -E2BIG;
	idx_init(x);
	s = tk_hashmap__insert(&x->m, hash, idx_never, NULL, NULL, &found);
	if (!s)
		return -errno;
	*s = (hash >> 32) << 32 | (index + 1);
	return 0;
}

void tk_hashidx__free(struct tk_hashidx *x)
{
	tk_hashmap__free(&x->m);
}

/* ---- a set of interned strings --------------------------------------------------- */

static uint64_t str_hash(const void *rec)
{
	return tk_hash__str(0, *(char *const *)rec);
}

static bool str_match(const void *ctx, const void *rec, const void *key)
{
	return !strcmp(*(char *const *)rec, key);
}

const char *tk_strset__intern(struct tk_strset *ss, const char *s)
{
	char **e;
	bool found;

	ss->m.esz = sizeof(char *);
	ss->m.hash = str_hash;
	e = tk_hashmap__insert(&ss->m, tk_hash__str(0, s), str_match, NULL, s, &found);
	if (!e || found)
		return e ? *e : NULL;
	*e = strdup(s);
	if (!*e) {
		tk_hashmap__del(&ss->m, e);
		errno = ENOMEM;
		return NULL;
	}
	return *e;
}

void tk_strset__free(struct tk_strset *ss)
{
	size_t i = 0;
	char **e;

	while ((e = tk_hashmap__next(&ss->m, &i)))
		free(*e);
	tk_hashmap__free(&ss->m);
}
