// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Batched reads and deletes of BPF hash maps (map_batch.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>

#include "cpu/map_batch.h"

#ifndef ENOTSUPP
#define ENOTSUPP 524		/* the kernel's own, not in the C library's errno.h */
#endif

/* The answers of a kernel (or a map type) without the batch commands. */
static bool unsupported(int err)
{
	return err == -EINVAL || err == -ENOTSUPP || err == -EOPNOTSUPP;
}

bool tk_map_batch__allowed(void)
{
	const char *s = getenv("TK_KFEAT_OFF");

	while (s && *s) {
		if (!strncmp(s, "map_batch", 9) && (s[9] == ',' || !s[9]))
			return false;
		s = strchr(s, ',');
		if (s)
			s++;
	}
	return true;
}

int tk_map_batch__walk(int fd, size_t ksz, size_t vsz, uint32_t chunk, tk_map_batch_fn fn,
		       void *ctx, uint64_t *calls)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	char *keys = NULL, *vals = NULL;
	__u64 in = 0, out = 0;	/* the hash map's cursor: a bucket index (__u32) */
	bool first = true, last = false;
	uint32_t i, n;
	int err = 0;

	if (!tk_map_batch__allowed())
		return -EOPNOTSUPP;
	while (!last) {
		if (!keys) {
			keys = malloc((size_t)chunk * ksz);
			vals = malloc((size_t)chunk * vsz);
			if (!keys || !vals) {
				err = -ENOMEM;
				break;
			}
		}
		n = chunk;
		(*calls)++;
		err = bpf_map_lookup_batch(fd, first ? NULL : &in, &out, keys, vals, &n, &opts);
		err = err < 0 ? -errno : 0;
		if (err == -ENOSPC && chunk < (1u << 20)) {
			/* a bucket holds more entries than @chunk: again, bigger */
			free(keys);
			free(vals);
			keys = vals = NULL;
			chunk *= 2;
			err = 0;
			continue;
		}
		if (err == -ENOENT) {
			last = true;	/* the end: @n may still hold entries */
			err = 0;
		}
		if (err) {
			if (!first || !unsupported(err))
				err = 0;	/* as get_next_key's walk: ends where it fails */
			else
				err = -EOPNOTSUPP;
			break;
		}
		first = false;
		in = out;
		for (i = 0; i < n && !err; i++)
			err = fn(keys + (size_t)i * ksz, vals + (size_t)i * vsz, ctx);
		if (err)
			break;
	}
	free(keys);
	free(vals);
	return err;
}

int tk_map_batch__delete(int fd, const void *keys, size_t n, size_t ksz, uint64_t *calls)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	const char *k = keys;
	bool first = true;
	__u32 count;
	int err;

	if (!tk_map_batch__allowed())
		return -EOPNOTSUPP;
	while (n) {
		count = n > (1u << 16) ? 1u << 16 : (__u32)n;
		(*calls)++;
		err = bpf_map_delete_batch(fd, k, &count, &opts);
		err = err < 0 ? -errno : 0;
		if (err && first && !count && unsupported(err))
			return -EOPNOTSUPP;
		first = false;
		if (count > n)
			count = n;
		/* stopped at a key it could not delete (gone already): pass over it */
		if (err && count < n)
			count++;
		k += (size_t)count * ksz;
		n -= count;
	}
	return 0;
}
