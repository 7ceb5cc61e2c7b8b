// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* The batched drain of cpu_sample's maps (cpu_drain.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "cpu/cpu_drain.h"
#include "cpu/map_batch.h"
#include "core/grow.h"
#include "core/hash.h"

#define COUNTS_CHUNK 1024	/* 56 + 8 bytes an entry */
#define STACKS_CHUNK 64		/* 16 + 1024 bytes an entry: 66 KiB a read */

/* A stack read: its frames at arena[pos - 1 ..] (pos never 0: an empty slot's first word is) */
struct stack_rec {
	uint64_t pos;
	uint64_t hash;
	uint32_t epoch;
	uint32_t nr;
};

static uint64_t stack_hash(uint64_t hash, uint32_t ep)
{
	return tk_hash__mix64(hash ^ (uint64_t)ep * 0x9e3779b97f4a7c15ULL);
}

static uint64_t stack_rec_hash(const void *rec)
{
	const struct stack_rec *r = rec;

	return stack_hash(r->hash, r->epoch);
}

static bool stack_rec_match(const void *ctx, const void *rec, const void *key)
{
	const struct stack_rec *r = rec, *k = key;

	return r->hash == k->hash && r->epoch == k->epoch;
}

static int push(struct tk_cpu_drain_keys *k, const void *v)
{
	if (tk_grow(&k->v, &k->cap, k->n + 1, k->sz, 256))
		return -ENOMEM;
	memcpy((char *)k->v + k->n++ * k->sz, v, k->sz);
	return 0;
}

static int take_count(const void *key, const void *val, void *ctx)
{
	struct tk_cpu_drain *d = ctx;
	const struct cpu_key *k = key;

	if (!d->take(d->ctx, k->epoch))
		return 0;
	return push(&d->keys[d->side], key) ?: push(&d->vals[d->side], val);
}

static int take_stack(const void *key, const void *val, void *ctx)
{
	struct tk_cpu_drain *d = ctx;
	const struct cpu_stack_key *k = key;
	const struct cpu_stack *s = val;
	struct stack_rec r = { .hash = k->hash, .epoch = k->epoch }, *slot;
	uint32_t nr = s->nr > CPU_MAX_FRAMES ? CPU_MAX_FRAMES : s->nr;
	bool found;

	if (!d->take(d->ctx, k->epoch))
		return 0;
	if (push(&d->skeys[d->side], key))
		return -ENOMEM;
	slot = tk_hashmap__insert(&d->idx[d->side], stack_hash(r.hash, r.epoch), stack_rec_match,
				  NULL, &r, &found);
	if (!slot)
		return -ENOMEM;
	if (found)
		return 0;
	if (tk_grow((void **)&d->arena, &d->arena_cap, d->arena_n + nr + 1, sizeof(*d->arena),
		    4096)) {
		tk_hashmap__del(&d->idx[d->side], slot);
		return -ENOMEM;
	}
	memcpy(d->arena + d->arena_n, s->ips, nr * sizeof(*d->arena));
	r.pos = d->arena_n + 1;
	r.nr = nr;
	d->arena_n += nr;
	*slot = r;
	return 0;
}

int tk_cpu_drain__read(struct tk_cpu_drain *d, int counts_fd, int offcounts_fd, int kfd, int ufd,
		       bool (*take)(const void *ctx, __u32 epoch), const void *ctx,
		       bool stacks_always)
{
	int fds[2] = { counts_fd, offcounts_fd }, sfds[2] = { kfd, ufd }, err;

	memset(d, 0, sizeof(*d));
	d->take = take;
	d->ctx = ctx;
	for (d->side = 0; d->side < 2; d->side++) {
		d->keys[d->side].sz = sizeof(struct cpu_key);
		d->vals[d->side].sz = d->side ? sizeof(struct cpu_off_val) : sizeof(__u64);
		d->skeys[d->side].sz = sizeof(struct cpu_stack_key);
		d->idx[d->side] = (struct tk_hashmap)TK_HASHMAP_INIT(struct stack_rec,
								     stack_rec_hash);
	}
	/* the counts first: a stack is written before the count naming it */
	for (d->side = 0; d->side < 2; d->side++) {
		if (fds[d->side] < 0)
			continue;
		err = tk_map_batch__walk(fds[d->side], d->keys[d->side].sz, d->vals[d->side].sz,
					 COUNTS_CHUNK, take_count, d, &d->calls);
		if (err)
			return err;
	}
	if (!stacks_always && !d->keys[0].n && !d->keys[1].n)
		return 0;
	for (d->side = 0; d->side < 2; d->side++) {
		err = tk_map_batch__walk(sfds[d->side], sizeof(struct cpu_stack_key),
					 sizeof(struct cpu_stack), STACKS_CHUNK, take_stack, d,
					 &d->calls);
		if (err)
			return err;
	}
	return 0;
}

int tk_cpu_drain__stack(const struct tk_cpu_drain *d, int side, __u64 hash, __u32 ep,
			const __u64 **ips)
{
	struct stack_rec k = { .hash = hash, .epoch = ep };
	const struct stack_rec *r;

	*ips = NULL;
	if (hash == CPU_NO_STACK)
		return 0;
	r = tk_hashmap__find(&d->idx[side], stack_hash(hash, ep), stack_rec_match, NULL, &k);
	if (!r)
		return -1;
	*ips = d->arena + r->pos - 1;
	return r->nr;
}

void tk_cpu_drain__delete(struct tk_cpu_drain *d, int fd, const void *keys, size_t n, size_t ksz)
{
	size_t i;

	if (!n || tk_map_batch__delete(fd, keys, n, ksz, &d->calls) != -EOPNOTSUPP)
		return;
	for (i = 0; i < n; i++, d->calls++)
		bpf_map_delete_elem(fd, (const char *)keys + i * ksz);
}

void tk_cpu_drain__free(struct tk_cpu_drain *d)
{
	int i;

	for (i = 0; i < 2; i++) {
		free(d->keys[i].v);
		free(d->vals[i].v);
		free(d->skeys[i].v);
		tk_hashmap__free(&d->idx[i]);
	}
	free(d->arena);
	memset(d, 0, sizeof(*d));
}
