// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The stack table: open addressing with linear probing over a power-of-two
 * slot array. A slot holds the offset of a record and 32 bits of its hash,
 * so most probes that miss never touch the record; a hit is confirmed by
 * comparing the whole key (pid, tid, gen, truncated, both frame counts and
 * every frame). Records and their frames lie together in one growing arena:
 * a lookup touches two places in memory, and an add of a known stack
 * allocates nothing.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

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

struct stack_slot {
	uint32_t rec;		/* the record's offset in the arena in words, + 1; 0: empty */
	uint32_t hash_lo;
};

struct tk_stacks {
	struct stack_slot *slots;
	size_t cap;		/* slots, a power of two */
	size_t nr;		/* records */
	uint64_t *arena;	/* records, each followed by its frames */
	size_t used;		/* words */
	size_t size;		/* words */
	uint64_t total;
};

#define INITIAL_SLOTS 1024
#define REC_WORDS (sizeof(struct stack_rec) / sizeof(uint64_t))
#define MAX_WORDS ((size_t)UINT32_MAX - 1)

static inline struct stack_rec *rec_at(const struct tk_stacks *t, size_t word)
{
	return (struct stack_rec *)(t->arena + word);
}

struct tk_stacks *tk_stacks__new(void)
{
	struct tk_stacks *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->cap = INITIAL_SLOTS;
	t->slots = calloc(t->cap, sizeof(*t->slots));
	t->size = 4096;
	t->arena = malloc(t->size * sizeof(*t->arena));
	if (!t->slots || !t->arena) {
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
	free(t->slots);
	free(t->arena);
	free(t);
}

/*
 * xxh64's round on four independent lanes, so the multiplies of consecutive
 * frames overlap; then xxh64's avalanche. Every bit of every frame counts.
 */
#define P1 0x9e3779b185ebca87ULL
#define P2 0xc2b2ae3d27d4eb4fULL
#define P3 0x165667b19e3779f9ULL
#define P4 0x85ebca77c2b2ae63ULL

static inline uint64_t rotl64(uint64_t x, int r)
{
	return (x << r) | (x >> (64 - r));
}

static inline uint64_t round64(uint64_t acc, uint64_t v)
{
	acc += v * P2;
	return rotl64(acc, 31) * P1;
}

static uint64_t hash_key(uint32_t pid, uint32_t tid, uint32_t gen, bool truncated,
			 const uint64_t *kernel, uint32_t nr_kernel, const uint64_t *user,
			 uint32_t nr_user)
{
	uint64_t v[4] = { P1 + P2, P2, 0, -P1 }, h;
	const uint64_t *f = kernel;
	uint32_t i, n = nr_kernel, lane = 0;
	int side;

	for (side = 0; side < 2; side++) {
		for (i = 0; i + 4 <= n; i += 4) {
			v[0] = round64(v[0], f[i]);
			v[1] = round64(v[1], f[i + 1]);
			v[2] = round64(v[2], f[i + 2]);
			v[3] = round64(v[3], f[i + 3]);
		}
		for (; i < n; i++, lane = (lane + 1) & 3)
			v[lane] = round64(v[lane], f[i]);
		f = user;
		n = nr_user;
	}
	h = rotl64(v[0], 1) + rotl64(v[1], 7) + rotl64(v[2], 12) + rotl64(v[3], 18);
	h = round64(h, (uint64_t)pid << 32 | tid) * P1 + P4;
	h = round64(h, (uint64_t)gen << 32 | (uint64_t)truncated << 31 | nr_kernel) * P1 + P4;
	h = round64(h, nr_user) * P1 + P4;
	h ^= h >> 33;
	h *= P2;
	h ^= h >> 29;
	h *= P3;
	h ^= h >> 32;
	return h;
}

static bool rec_equal(const struct stack_rec *r, uint64_t hash, uint32_t pid, uint32_t tid,
		      uint32_t gen, bool truncated, const uint64_t *kernel, uint32_t nr_kernel,
		      const uint64_t *user, uint32_t nr_user)
{
	return r->hash == hash && r->pid == pid && r->tid == tid && r->gen == gen &&
	       r->truncated == truncated && r->nr_kernel == nr_kernel && r->nr_user == nr_user &&
	       (!nr_kernel || !memcmp(r->frames, kernel, nr_kernel * sizeof(*kernel))) &&
	       (!nr_user || !memcmp(r->frames + nr_kernel, user, nr_user * sizeof(*user)));
}

static int grow_slots(struct tk_stacks *t)
{
	size_t cap = t->cap * 2, mask = cap - 1, i, j;
	struct stack_slot *slots;

	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (i = 0; i < t->cap; i++) {
		if (!t->slots[i].rec)
			continue;
		j = rec_at(t, t->slots[i].rec - 1)->hash & mask;
		while (slots[j].rec)
			j = (j + 1) & mask;
		slots[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return 0;
}

int tk_stacks__add(struct tk_stacks *t, uint32_t pid, uint32_t tid, uint32_t gen, const char *comm,
		   const uint64_t *kernel, uint32_t nr_kernel, const uint64_t *user,
		   uint32_t nr_user, uint64_t count, bool truncated)
{
	size_t mask = t->cap - 1, i, words;
	struct stack_rec *r;
	uint64_t h;
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
	h = hash_key(pid, tid, gen, truncated, kernel, nr_kernel, user, nr_user);
	for (i = h & mask; t->slots[i].rec; i = (i + 1) & mask) {
		if (t->slots[i].hash_lo != (uint32_t)h)
			continue;
		r = rec_at(t, t->slots[i].rec - 1);
		if (!rec_equal(r, h, pid, tid, gen, truncated, kernel, nr_kernel, user, nr_user))
			continue;
		r->count += count;
		t->total += count;
		if (!r->comm[0] && comm && comm[0])
			strncpy(r->comm, comm, sizeof(r->comm) - 1);
		return 0;
	}

	/* a new stack; keep the load factor under 1/2 */
	words = REC_WORDS + nr_kernel + nr_user;
	if (t->used + words > MAX_WORDS)
		return -ENOMEM;
	if ((t->nr + 1) * 2 > t->cap) {
		err = grow_slots(t);
		if (err)
			return err;
		mask = t->cap - 1;
		for (i = h & mask; t->slots[i].rec; i = (i + 1) & mask)
			;
	}
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
	r = rec_at(t, t->used);
	memset(r, 0, sizeof(*r));
	r->hash = h;
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
	t->slots[i].rec = t->used + 1;
	t->slots[i].hash_lo = (uint32_t)h;
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
	size_t mask = t->cap - 1, i;
	const struct stack_rec *r;
	uint64_t h;

	h = hash_key(e->pid, e->tid, e->gen, e->truncated, e->kernel, e->nr_kernel, e->user,
		     e->nr_user);
	for (i = h & mask; t->slots[i].rec; i = (i + 1) & mask) {
		if (t->slots[i].hash_lo != (uint32_t)h)
			continue;
		r = rec_at(t, t->slots[i].rec - 1);
		if (rec_equal(r, h, e->pid, e->tid, e->gen, e->truncated, e->kernel, e->nr_kernel,
			      e->user, e->nr_user))
			return r->count;
	}
	return 0;
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
