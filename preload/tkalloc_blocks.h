/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * libtkalloc.so: the blocks it must know. The bootstrap arena serves dlsym's
 * own allocations while the next definitions are resolved; the sampled
 * blocks are kept in a counting filter (read without a lock by every free)
 * and an exact set under a mutex, held across fork.
 *
 * Part of libtkalloc.so's one translation unit: preload/tkalloc.c includes
 * it once, after the macros and the state it uses; it is no header for
 * anything else. One unit, so that the fast paths inline what they read and
 * jump straight to their slow paths. Its definitions stay static, not
 * inline: inline would change the compiler's inlining hints, and so the code.
 */
#ifndef __TK_ALLOC_BLOCKS_H
#define __TK_ALLOC_BLOCKS_H

/* ---- the bootstrap arena: dlsym's own allocations while we resolve -------- */

#define TK_ARENA_SIZE (256 << 10)
#define TK_ARENA_HDR 16
static char arena[TK_ARENA_SIZE] __attribute__((aligned(4096)));
static size_t arena_used;

static bool in_arena(const void *ptr)
{
	return (uintptr_t)ptr - (uintptr_t)arena < TK_ARENA_SIZE;
}

/* ---- the filter: one byte per hash bucket, read without a lock ------------ */

#define TK_FILTER_BITS 15
#define TK_FILTER_STICKY 255		/* saturated: never decremented again */
static uint8_t filter[1 << TK_FILTER_BITS];

TK_INLINE size_t filter_hash(const void *ptr)
{
	return ((uintptr_t)ptr * 0x9e3779b97f4a7c15ull) >> (64 - TK_FILTER_BITS);
}

TK_INLINE bool filter_maybe(const void *ptr)
{
	return __atomic_load_n(&filter[filter_hash(ptr)], __ATOMIC_RELAXED);
}

/* Under set_lock, or for the sticky arena marks (a store of a constant). */
static void filter_add(const void *ptr, bool sticky)
{
	uint8_t *c = &filter[filter_hash(ptr)];
	uint8_t v = __atomic_load_n(c, __ATOMIC_RELAXED);

	if (v != TK_FILTER_STICKY)
		__atomic_store_n(c, sticky ? TK_FILTER_STICKY : v + 1, __ATOMIC_RELAXED);
}

static void filter_del(const void *ptr)
{
	uint8_t *c = &filter[filter_hash(ptr)];
	uint8_t v = __atomic_load_n(c, __ATOMIC_RELAXED);

	if (v && v != TK_FILTER_STICKY)
		__atomic_store_n(c, v - 1, __ATOMIC_RELAXED);
}

static void *arena_alloc(size_t size, size_t align)
{
	size_t off, start;

	if (align < TK_ARENA_HDR)
		align = TK_ARENA_HDR;
	if (align & (align - 1) || align > 4096) {
		errno = EINVAL;
		return NULL;
	}
	off = __atomic_load_n(&arena_used, __ATOMIC_RELAXED);
	do {
		start = (off + TK_ARENA_HDR + align - 1) & ~(align - 1);
		if (size > TK_ARENA_SIZE || start + size > TK_ARENA_SIZE) {
			errno = ENOMEM;
			return NULL;
		}
	} while (!__atomic_compare_exchange_n(&arena_used, &off, start + size, false,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	memcpy(arena + start - sizeof(size_t), &size, sizeof(size));
	/* its free and realloc leave the fast path and are never forwarded */
	filter_add(arena + start, true);
	return arena + start;
}

static size_t arena_size(const void *ptr)
{
	size_t size;

	memcpy(&size, (const char *)ptr - sizeof(size_t), sizeof(size));
	return size;
}

static void tk_free_boot(void *ptr)
{
	/* before tk_init() every pointer came from the arena: nothing to do */
}

/* ---- the exact set of sampled pointers, under set_lock --------------------- */

struct tk_slot {
	uintptr_t ptr;			/* 0: empty */
	size_t size;
};

static pthread_mutex_t set_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tk_slot *set_slots;
static size_t set_cap;			/* a power of two, or 0 */
static size_t set_nr;
static unsigned int set_shift;

static size_t set_home(uintptr_t ptr)
{
	return (ptr * 0x9e3779b97f4a7c15ull) >> set_shift;
}

/* The slot of @ptr, or the empty one where it would go. */
static struct tk_slot *set_probe(uintptr_t ptr)
{
	size_t mask = set_cap - 1, i = set_home(ptr);

	while (set_slots[i].ptr && set_slots[i].ptr != ptr)
		i = (i + 1) & mask;
	return &set_slots[i];
}

/* mmap, not malloc: this runs inside malloc. */
static bool set_grow(void)
{
	size_t cap = set_cap ? set_cap * 2 : 4096, old_cap = set_cap, i;
	struct tk_slot *old = set_slots, *slots;

	slots = mmap(NULL, cap * sizeof(*slots), PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (slots == MAP_FAILED)
		return false;
	set_slots = slots;
	set_cap = cap;
	set_shift = 64 - __builtin_ctzl(cap);
	for (i = 0; i < old_cap; i++)
		if (old[i].ptr)
			*set_probe(old[i].ptr) = old[i];
	if (old)
		munmap(old, old_cap * sizeof(*old));
	return true;
}

/* Remember a sampled block; false when there is no memory to (not sampled then). */
static TK_COLD bool tk_remember(void *ptr, size_t size)
{
	int saved = errno;
	struct tk_slot *s;
	bool ok = true;

	pthread_mutex_lock(&set_lock);
	if ((set_nr + 1) * 2 > set_cap && !set_grow()) {
		ok = false;
		goto out;
	}
	s = set_probe((uintptr_t)ptr);
	if (!s->ptr) {
		/* else a free we did not see: the new block takes its place */
		s->ptr = (uintptr_t)ptr;
		set_nr++;
		filter_add(ptr, false);
	}
	s->size = size;
out:
	pthread_mutex_unlock(&set_lock);
	errno = saved;
	return ok;
}

enum { TK_PLAIN, TK_SAMPLED, TK_IN_ARENA };

/* After a maybe from the filter: was @ptr sampled? It is forgotten then. */
static TK_COLD int tk_forget(void *ptr, size_t *size)
{
	size_t mask, i, j, home;
	struct tk_slot *s;
	int ret = TK_PLAIN;

	if (!ptr)
		return TK_PLAIN;
	if (in_arena(ptr))
		return TK_IN_ARENA;
	pthread_mutex_lock(&set_lock);
	if (!set_nr)
		goto out;
	s = set_probe((uintptr_t)ptr);
	if (!s->ptr)
		goto out;
	if (size)
		*size = s->size;
	ret = TK_SAMPLED;
	filter_del(ptr);
	set_nr--;
	/* backward-shift deletion keeps every probe chain unbroken */
	mask = set_cap - 1;
	i = s - set_slots;
	for (j = (i + 1) & mask; set_slots[j].ptr; j = (j + 1) & mask) {
		home = set_home(set_slots[j].ptr);
		/* slot j may move to i when its home is not within (i, j] */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			set_slots[i] = set_slots[j];
			i = j;
		}
	}
	set_slots[i].ptr = 0;
out:
	pthread_mutex_unlock(&set_lock);
	return ret;
}

static void tk_fork_prepare(void)
{
	pthread_mutex_lock(&set_lock);
}

static void tk_fork_parent(void)
{
	pthread_mutex_unlock(&set_lock);
}

static void tk_fork_child(void)
{
	pthread_mutex_unlock(&set_lock);
	/* the child keeps every sampled block; it draws its own points from here */
	tk_thr.left = 0;
	tk_thr.rng = 0;
}

#endif /* __TK_ALLOC_BLOCKS_H */
