/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The hash functions of user space, for core/hashmap.h. Every result but
 * tk_hash__u32's has all 64 bits mixed; the hash map keeps the upper half.
 *
 * A hash is built by chaining from a seed: tk_hash__u64(tk_hash__str(SEED,
 * name), id). Seeds keep the hashes of different tables apart. The values of
 * tk_hash__u64, __bytes and __str are stable: the SVG writer derives colours
 * from them, so they must not change.
 */
#ifndef __TK_HASH_H
#define __TK_HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* MurmurHash3's finalizer: every input bit flips each output bit with probability ~1/2. */
static inline uint64_t tk_hash__mix64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	x *= 0xc4ceb9fe1a85ec53ULL;
	x ^= x >> 33;
	return x;
}

/*
 * A small integer key on its own (a pid, a tid): Fibonacci hashing, one
 * multiply. Only the upper half is spread well, which is the half the hash
 * map uses; chain nothing onto it.
 */
static inline uint64_t tk_hash__u32(uint32_t v)
{
	return v * 0x9e3779b97f4a7c15ULL;
}

/* @v into @h (boost's hash_combine, then mixed). */
static inline uint64_t tk_hash__u64(uint64_t h, uint64_t v)
{
	return tk_hash__mix64(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2)));
}

/* @len bytes into @h, one at a time (FNV-1a): for short or unaligned keys. */
uint64_t tk_hash__bytes(uint64_t h, const void *data, size_t len);

/* A string into @h; NULL and "" hash differently. */
static inline uint64_t tk_hash__str(uint64_t h, const char *s)
{
	if (!s)
		return tk_hash__u64(h, 0x6e756c6cULL);
	return tk_hash__bytes(h, s, strlen(s));
}

/*
 * @na words of @a, then @nb of @b, into @h: four lanes at a time, for stacks
 * of return addresses (kernel frames, then user frames), where every bit of
 * every frame counts and a byte loop would be slow. The same words split
 * differently hash differently.
 */
uint64_t tk_hash__words2(uint64_t h, const uint64_t *a, size_t na, const uint64_t *b, size_t nb);

static inline uint64_t tk_hash__words(uint64_t h, const uint64_t *w, size_t n)
{
	return tk_hash__words2(h, w, n, NULL, 0);
}

#endif /* __TK_HASH_H */
