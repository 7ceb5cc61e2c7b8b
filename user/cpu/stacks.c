// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The stack table: records and their frames lie together in one growing
 * arena, indexed by core/hashmap.h over their offsets in the arena. A probe
 * that meets another stack rarely touches it (the index keeps 32 bits of its
 * hash); a hit is confirmed by comparing the whole key (pid, tid, gen,
 * truncated, both frame counts and every frame). So a lookup touches two
 * places in memory, and an add of a known stack allocates nothing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/hashmap.h"
#include "cpu/stacks.h"

struct stack_rec {
	uint64_t hash;
	uint64_t count;
	uint32_t pid;
	uint32_t tid;
	uint32_t gen;
	uint32_t nr_kernel;
	uint32_t nr_user;
	uint32_t truncated;
	char comm[16];
	uint64_t frames[];	/* kernel ones, then user ones */
};

struct tk_stacks {
	struct tk_hashidx idx;	/* offsets of records in the arena, in words */
	size_t nr;		/* records */
	uint64_t *arena;	/* records, each followed by its frames */
	size_t used;		/* words */
	size_t size;		/* words */
	uint64_t total;
};

/* What a stack is looked up by. */
struct stack_key {
	uint64_t hash;
	uint32_t pid;
	uint32_t tid;
	uint32_t gen;
	bool truncated;
	const uint64_t *kernel;
	uint32_t nr_kernel;
	const uint64_t *user;
	uint32_t nr_user;
};

#define INITIAL_RECORDS 512
#define REC_WORDS (sizeof(struct stack_rec) / sizeof(uint64_t))

static inline struct stack_rec *rec_at(const struct tk_stacks *t, size_t word)
{
	return (struct stack_rec *)(t->arena + word);
}

struct tk_stacks *tk_stacks__new(void)
{
	struct tk_stacks *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->size = 4096;
	t->arena = malloc(t->size * sizeof(*t->arena));
	if (!t->arena || tk_hashidx__reserve(&t->idx, INITIAL_RECORDS)) {
		tk_stacks__free(t);
		errno = ENOMEM;
		return NULL;
	}
	return t;
}

void tk_stacks__free(struct tk_stacks *t)
{
	if (!t)
		return;
	tk_hashidx__free(&t->idx);
	free(t->arena);
	free(t);
}

/* Every bit of every frame counts; the frame counts and the split between sides too. */
static uint64_t hash_key(const struct stack_key *k)
{
	/* (pid, tid) as it is, moved by a multiple of an odd constant per (gen, truncated) */
	uint64_t seed = ((uint64_t)k->pid << 32 | k->tid) +
			((uint64_t)k->gen << 1 | k->truncated) * 0x9e3779b97f4a7c15ULL;

	return tk_hash__words2(seed, k->kernel, k->nr_kernel, k->user, k->nr_user);
}

static inline bool rec_equal(const void *ctx, size_t word, const void *key)
{
	const struct stack_rec *r = rec_at(ctx, word);
	const struct stack_key *k = key;

	return r->hash == k->hash && r->pid == k->pid && r->tid == k->tid && r->gen == k->gen &&
	       r->truncated == k->truncated && r->nr_kernel == k->nr_kernel &&
	       r->nr_user == k->nr_user &&
	       (!k->nr_kernel ||
		!memcmp(r->frames, k->kernel, k->nr_kernel * sizeof(*k->kernel))) &&
	       (!k->nr_user ||
		!memcmp(r->frames + k->nr_kernel, k->user, k->nr_user * sizeof(*k->user)));
}

int tk_stacks__add(struct tk_stacks *t, uint32_t pid, uint32_t tid, uint32_t gen, const char *comm,
		   const uint64_t *kernel, uint32_t nr_kernel, const uint64_t *user,
		   uint32_t nr_user, uint64_t count, bool truncated)
{
	struct stack_key k;
	struct stack_rec *r;
	size_t w, words;
	int err;

	if (nr_kernel > TK_MAX_FRAMES) {
		nr_kernel = TK_MAX_FRAMES;
		truncated = true;
	}
	if (nr_user > TK_MAX_FRAMES) {
		nr_user = TK_MAX_FRAMES;
		truncated = true;
	}
	if (!kernel)
		nr_kernel = 0;
	if (!user)
		nr_user = 0;
	k = (struct stack_key){ .pid = pid, .tid = tid, .gen = gen, .truncated = truncated,
				.kernel = kernel, .nr_kernel = nr_kernel, .user = user,
				.nr_user = nr_user };
	k.hash = hash_key(&k);
	w = tk_hashidx__find(&t->idx, k.hash, rec_equal, t, &k);
	if (w != TK_HASHIDX_NONE) {
		r = rec_at(t, w);
		r->count += count;
		t->total += count;
		if (!r->comm[0] && comm && comm[0])
			strncpy(r->comm, comm, sizeof(r->comm) - 1);
		return 0;
	}

	/* a new stack, at an offset the index can hold */
	words = REC_WORDS + nr_kernel + nr_user;
	if (t->used + words > TK_HASHIDX_MAX)
		return -ENOMEM;
	if (t->used + words > t->size) {
		size_t size = t->size * 2;
		uint64_t *a;

		while (size < t->used + words)
			size *= 2;
		a = realloc(t->arena, size * sizeof(*a));
		if (!a)
			return -ENOMEM;
		t->arena = a;
		t->size = size;
	}
	err = tk_hashidx__add(&t->idx, k.hash, t->used);
	if (err)
		return err == -E2BIG ? -ENOMEM : err;
	r = rec_at(t, t->used);
	memset(r, 0, sizeof(*r));
	r->hash = k.hash;
	r->count = count;
	r->pid = pid;
	r->tid = tid;
	r->gen = gen;
	r->nr_kernel = nr_kernel;
	r->nr_user = nr_user;
	r->truncated = truncated;
	if (comm)
		strncpy(r->comm, comm, sizeof(r->comm) - 1);
	if (nr_kernel)
		memcpy(r->frames, kernel, nr_kernel * sizeof(*kernel));
	if (nr_user)
		memcpy(r->frames + nr_kernel, user, nr_user * sizeof(*user));
	t->used += words;
	t->nr++;
	t->total += count;
	return 0;
}

int tk_stacks__for_each(const struct tk_stacks *t, tk_stacks_cb cb, void *ctx)
{
	struct tk_stack_entry e;
	size_t w;
	int err;

	for (w = 0; w < t->used; w += REC_WORDS + e.nr_kernel + e.nr_user) {
		const struct stack_rec *r = rec_at(t, w);

		e.pid = r->pid;
		e.tid = r->tid;
		e.gen = r->gen;
		memcpy(e.comm, r->comm, sizeof(e.comm));
		e.count = r->count;
		e.nr_kernel = r->nr_kernel;
		e.nr_user = r->nr_user;
		e.kernel = r->frames;
		e.user = r->frames + r->nr_kernel;
		e.truncated = r->truncated;
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

uint64_t tk_stacks__count(const struct tk_stacks *t, const struct tk_stack_entry *e)
{
	struct stack_key k = {
		.pid = e->pid, .tid = e->tid, .gen = e->gen, .truncated = e->truncated,
		.kernel = e->kernel, .nr_kernel = e->nr_kernel, .user = e->user,
		.nr_user = e->nr_user,
	};
	size_t w;

	k.hash = hash_key(&k);
	w = tk_hashidx__find(&t->idx, k.hash, rec_equal, t, &k);
	return w == TK_HASHIDX_NONE ? 0 : rec_at(t, w)->count;
}

struct diff_ctx {
	struct tk_stacks *out;
	const struct tk_stacks *prev;
};

static int add_growth(const struct tk_stack_entry *e, void *arg)
{
	struct diff_ctx *d = arg;
	uint64_t before = d->prev ? tk_stacks__count(d->prev, e) : 0;

	if (e->count <= before)
		return 0;
	return tk_stacks__add(d->out, e->pid, e->tid, e->gen, e->comm, e->kernel, e->nr_kernel,
			      e->user, e->nr_user, e->count - before, e->truncated);
}

int tk_stacks__add_diff(struct tk_stacks *out, const struct tk_stacks *cur,
			const struct tk_stacks *prev)
{
	struct diff_ctx d = { out, prev };

	return tk_stacks__for_each(cur, add_growth, &d);
}
