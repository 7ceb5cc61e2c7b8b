/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Reading and deleting a BPF hash map's entries many at a time
 * (BPF_MAP_LOOKUP_BATCH, BPF_MAP_DELETE_BATCH: 5.6+) instead of a
 * get_next_key, a lookup and a delete per entry. A kernel without them
 * answers the first call with -EINVAL (an unknown command) or -ENOTSUPP /
 * -EOPNOTSUPP (a map type without them): the walk then reports
 * -EOPNOTSUPP having delivered nothing, and the caller takes the old path.
 * TK_KFEAT_OFF=map_batch (tests) makes this process act as such a kernel.
 */
#ifndef __TK_CPU_MAP_BATCH_H
#define __TK_CPU_MAP_BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* May this process use the batch commands (not switched off by TK_KFEAT_OFF)? */
bool tk_map_batch__allowed(void);

typedef int (*tk_map_batch_fn)(const void *key, const void *val, void *ctx);

/*
 * Every entry of hash map @fd (keys of @ksz, values of @vsz bytes), @chunk at
 * a time, to @fn (which stops the walk by returning non-zero: that is
 * returned). 0 at the end; -EOPNOTSUPP when the kernel has no batch
 * lookups (nothing delivered). *@calls counts the bpf(2) calls made.
 */
int tk_map_batch__walk(int fd, size_t ksz, size_t vsz, uint32_t chunk, tk_map_batch_fn fn,
		       void *ctx, uint64_t *calls);

/*
 * Delete the @n keys of @ksz bytes at @keys from @fd; a key no longer there
 * is passed over. *@calls counts the bpf(2) calls made. 0, or -EOPNOTSUPP
 * when the kernel has no batch deletes (nothing deleted: delete one by one).
 */
int tk_map_batch__delete(int fd, const void *keys, size_t n, size_t ksz, uint64_t *calls);

#endif /* __TK_CPU_MAP_BATCH_H */
