// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The stack table, built to stay small over a long whole-system capture.
 *
 * Frame arrays are interned (core/arrayset.h): each distinct array (a
 * kernel stack, a user stack, a command name as its two words) is stored
 * once, and an entry names its arrays by their ids. Every short process
 * takes the same kernel paths through exec, page faults and exit, and the
 * threads of a process share user stacks under different kernel ones: an
 * entry per (pid, tid, gen, stack) is what the profile needs, a copy of its
 * frames per entry is not. Entries are fixed 40-byte records, in blocks
 * that never move, as the arrays' (so the table holds about what it
 * stores, and no doubling copy of it is ever made).
 *
 * The records are indexed by core/hashmap.h over their positions. An entry
 * is hashed from (pid, tid, gen, truncated) and its frames, and a hit is
 * confirmed on the whole key: the four fields, then
 * each array's length and every frame, read where the record points. So no
 * two different stacks merge, and an add of a known stack (most adds)
 * probes one index and allocates nothing; only a new entry looks its
 * arrays up in the set.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/arrayset.h"
#include "core/grow.h"
#include "core/hash.h"
#include "core/hashmap.h"
#include "cpu/stacks.h"

#define REC_SHIFT 11			/* 2048 records (64 KiB) a record block */
#define REC_BLOCK ((size_t)1 << REC_SHIFT)
#define EMPTY TK_ARRAYSET_EMPTY
#define REC_SEED 0x73746b73ULL

#define KIND_SHIFT 27			/* tid | kind << KIND_SHIFT */

struct stack_rec {
	uint64_t count;
	uint64_t count2;	/* off-CPU: waits */
	uint32_t pid;
	uint32_t tid;		/* with the kind in its top bits */
	uint32_t gen;
	uint32_t kernel;	/* ids of the frame arrays in the pool */
	uint32_t user;
	uint32_t comm;		/* id of the name (EMPTY: none yet) << 1 | truncated */
};

struct tk_stacks {
	struct tk_arrayset pool;	/* frame arrays and names */
	struct stack_rec **blocks;
	size_t nr_blocks, cap_blocks;
	size_t nr;		/* records */
	struct tk_hashidx idx;	/* positions of the records */
	uint64_t total;
};

/* An array a key names. */
struct array_key {
	const uint64_t *w;
	uint32_t n;
};

/* What a record is looked up by. */
struct rec_key {
	uint64_t hash;
	uint32_t pid;
	uint32_t tid;		/* with the kind, as stored */
	uint32_t gen;
	bool truncated;
	struct array_key kernel;
	struct array_key user;
};

static inline struct stack_rec *rec_at(const struct tk_stacks *t, size_t i)
{
	return &t->blocks[i >> REC_SHIFT][i & (REC_BLOCK - 1)];
}

static inline bool array_is(const struct tk_arrayset *p, uint32_t id, const struct array_key *k)
{
	return tk_arrayset__is(p, id, k->w, k->n);
}

/* @comm as the pool stores it: two words, cut to 15 bytes and zero-padded. */
static void comm_words(const char *comm, uint64_t w[2])
{
	char buf[16] = { 0 };

	strncpy(buf, comm, sizeof(buf) - 1);
	memcpy(w, buf, sizeof(buf));
}

/*
 * @k's hash: every bit of every frame, the lengths and the split between
 * the sides, from (pid, tid) moved by a multiple of an odd constant per
 * (gen, truncated). One pass over the frames, as a hit needs no more; the
 * arrays' own hashes are made only for a new entry.
 */
static uint64_t hash_rec(const struct rec_key *k)
{
	uint64_t seed = ((uint64_t)k->pid << 32 | k->tid) +
			((uint64_t)k->gen << 1 | k->truncated) * 0x9e3779b97f4a7c15ULL;

	return tk_hash__words2(seed, k->kernel.w, k->kernel.n, k->user.w, k->user.n);
}

static inline bool rec_equal(const void *ctx, size_t i, const void *key)
{
	const struct tk_stacks *t = ctx;
	const struct stack_rec *r = rec_at(t, i);
	const struct rec_key *k = key;

	return r->pid == k->pid && r->tid == k->tid && r->gen == k->gen &&
	       (r->comm & 1) == k->truncated && array_is(&t->pool, r->kernel, &k->kernel) &&
	       array_is(&t->pool, r->user, &k->user);
}

/* @k for the stack given (a side without frames: none), its hash set. */
static void make_key(struct rec_key *k, uint32_t pid, uint32_t tid, uint32_t gen, bool truncated,
		     const uint64_t *kernel, uint32_t nr_kernel, const uint64_t *user,
		     uint32_t nr_user)
{
	*k = (struct rec_key){ .pid = pid, .tid = tid, .gen = gen, .truncated = truncated,
			       .kernel = { kernel, kernel ? nr_kernel : 0 },
			       .user = { user, user ? nr_user : 0 } };
	k->hash = hash_rec(k);
}

struct tk_stacks *tk_stacks__new(void)
{
	return calloc(1, sizeof(struct tk_stacks));
}

void tk_stacks__free(struct tk_stacks *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nr_blocks; i++)
		free(t->blocks[i]);
	free(t->blocks);
	tk_hashidx__free(&t->idx);
	tk_arrayset__free(&t->pool);
	free(t);
}

/* A new record at the end; NULL with errno ENOMEM. */
static struct stack_rec *rec_new(struct tk_stacks *t, uint64_t hash)
{
	int err;

	if (t->nr >= TK_HASHIDX_MAX) {
		errno = ENOMEM;
		return NULL;
	}
	if (t->nr >> REC_SHIFT == t->nr_blocks) {
		err = tk_grow((void **)&t->blocks, &t->cap_blocks, t->nr_blocks + 1,
			      sizeof(*t->blocks), 16);
		if (err || !(t->blocks[t->nr_blocks] = malloc(REC_BLOCK * sizeof(**t->blocks)))) {
			errno = ENOMEM;
			return NULL;
		}
		t->nr_blocks++;
	}
	err = tk_hashidx__add(&t->idx, hash, t->nr);
	if (err) {
		errno = ENOMEM;
		return NULL;
	}
	return rec_at(t, t->nr++);
}

static int add(struct tk_stacks *t, uint32_t pid, uint32_t tid, uint32_t gen, const char *comm,
	       const uint64_t *kernel, uint32_t nr_kernel, const uint64_t *user, uint32_t nr_user,
	       uint64_t count, uint64_t count2, enum tk_stack_kind kind, bool truncated)
{
	uint32_t name = EMPTY, koff, uoff;
	struct stack_rec *r;
	struct rec_key k;
	uint64_t w[2];
	size_t i;
	int err;

	if (nr_kernel > TK_MAX_FRAMES) {
		nr_kernel = TK_MAX_FRAMES;
		truncated = true;
	}
	if (nr_user > TK_MAX_FRAMES) {
		nr_user = TK_MAX_FRAMES;
		truncated = true;
	}
	if (tid >> KIND_SHIFT || (unsigned int)kind > TK_STACK_KIND_MAX)
		return -EINVAL;
	tid |= (uint32_t)kind << KIND_SHIFT;
	make_key(&k, pid, tid, gen, truncated, kernel, nr_kernel, user, nr_user);
	i = tk_hashidx__find(&t->idx, k.hash, rec_equal, t, &k);
	if (i != TK_HASHIDX_NONE) {
		r = rec_at(t, i);
		r->count += count;
		r->count2 += count2;
		if (kind == TK_STACK_ON_CPU)
			t->total += count;
		if (r->comm >> 1 == EMPTY && comm && comm[0]) {
			comm_words(comm, w);
			if (!tk_arrayset__intern(&t->pool, w, 2, tk_arrayset__hash(w, 2), &name))
				r->comm |= name << 1;
		}
		return 0;
	}
	/*
	 * Arrays interned for an entry that then finds no memory stay in the
	 * pool unused until it is freed: a failed add is the end of the capture.
	 */
	err = tk_arrayset__intern(&t->pool, k.kernel.w, k.kernel.n,
				  tk_arrayset__hash(k.kernel.w, k.kernel.n), &koff);
	if (!err)
		err = tk_arrayset__intern(&t->pool, k.user.w, k.user.n,
					  tk_arrayset__hash(k.user.w, k.user.n), &uoff);
	if (!err && comm && comm[0]) {
		comm_words(comm, w);
		err = tk_arrayset__intern(&t->pool, w, 2, tk_arrayset__hash(w, 2), &name);
	}
	if (err)
		return err;
	r = rec_new(t, k.hash);
	if (!r)
		return -ENOMEM;
	*r = (struct stack_rec){ .count = count, .count2 = count2, .pid = pid, .tid = tid,
				 .gen = gen, .kernel = koff, .user = uoff,
				 .comm = name << 1 | truncated };
	if (kind == TK_STACK_ON_CPU)
		t->total += count;
	return 0;
}

int tk_stacks__add(struct tk_stacks *t, uint32_t pid, uint32_t tid, uint32_t gen, const char *comm,
		   const uint64_t *kernel, uint32_t nr_kernel, const uint64_t *user,
		   uint32_t nr_user, uint64_t count, bool truncated)
{
	return add(t, pid, tid, gen, comm, kernel, nr_kernel, user, nr_user, count, 0,
		   TK_STACK_ON_CPU, truncated);
}

int tk_stacks__add_off(struct tk_stacks *t, uint32_t pid, uint32_t tid, uint32_t gen,
		       const char *comm, const uint64_t *kernel, uint32_t nr_kernel,
		       const uint64_t *user, uint32_t nr_user, uint64_t ns, uint64_t waits,
		       enum tk_stack_kind kind, bool truncated)
{
	if (kind == TK_STACK_ON_CPU)
		return -EINVAL;
	return add(t, pid, tid, gen, comm, kernel, nr_kernel, user, nr_user, ns, waits, kind,
		   truncated);
}

int tk_stacks__for_each(const struct tk_stacks *t, tk_stacks_cb cb, void *ctx)
{
	struct tk_stack_entry e;
	size_t i;
	int err;

	for (i = 0; i < t->nr; i++) {
		const struct stack_rec *r = rec_at(t, i);
		uint32_t name = r->comm >> 1;

		e.pid = r->pid;
		e.tid = r->tid & (((uint32_t)1 << KIND_SHIFT) - 1);
		e.kind = r->tid >> KIND_SHIFT;
		e.gen = r->gen;
		if (name == EMPTY)
			memset(e.comm, 0, sizeof(e.comm));
		else
			memcpy(e.comm, tk_arrayset__words(&t->pool, name), sizeof(e.comm));
		e.count = r->count;
		e.count2 = r->count2;
		e.kernel = tk_arrayset__words(&t->pool, r->kernel);
		e.nr_kernel = tk_arrayset__len(&t->pool, r->kernel);
		e.user = tk_arrayset__words(&t->pool, r->user);
		e.nr_user = tk_arrayset__len(&t->pool, r->user);
		e.truncated = r->comm & 1;
		err = cb(&e, ctx);
		if (err)
			return err;
	}
	return 0;
}

uint64_t tk_stacks__total(const struct tk_stacks *t)
{
	return t->total;
}

size_t tk_stacks__size(const struct tk_stacks *t)
{
	return t->nr;
}

size_t tk_stacks__bytes(const struct tk_stacks *t)
{
	return sizeof(*t) + t->nr_blocks * REC_BLOCK * sizeof(**t->blocks) +
	       t->cap_blocks * sizeof(*t->blocks) +
	       (t->idx.m.slots ? (t->idx.m.mask + 1) * t->idx.m.esz : 0) +
	       tk_arrayset__bytes(&t->pool);
}

uint64_t tk_stacks__count(const struct tk_stacks *t, const struct tk_stack_entry *e,
			  uint64_t *count2)
{
	struct rec_key k;
	size_t i;

	make_key(&k, e->pid, e->tid | (uint32_t)e->kind << KIND_SHIFT, e->gen, e->truncated,
		 e->kernel, e->nr_kernel, e->user, e->nr_user);
	i = tk_hashidx__find(&t->idx, k.hash, rec_equal, t, &k);
	if (count2)
		*count2 = i == TK_HASHIDX_NONE ? 0 : rec_at(t, i)->count2;
	return i == TK_HASHIDX_NONE ? 0 : rec_at(t, i)->count;
}

struct diff_ctx {
	struct tk_stacks *out;
	const struct tk_stacks *prev;
};

static int add_growth(const struct tk_stack_entry *e, void *arg)
{
	struct diff_ctx *d = arg;
	uint64_t before2 = 0, before = d->prev ? tk_stacks__count(d->prev, e, &before2) : 0;

	if (e->count <= before && e->count2 <= before2)
		return 0;
	return add(d->out, e->pid, e->tid, e->gen, e->comm, e->kernel, e->nr_kernel, e->user,
		   e->nr_user, e->count > before ? e->count - before : 0,
		   e->count2 > before2 ? e->count2 - before2 : 0, e->kind, e->truncated);
}

int tk_stacks__add_diff(struct tk_stacks *out, const struct tk_stacks *cur,
			const struct tk_stacks *prev)
{
	struct diff_ctx d = { out, prev };

	return tk_stacks__for_each(cur, add_growth, &d);
}
