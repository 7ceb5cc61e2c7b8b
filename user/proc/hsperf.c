// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * HotSpot's performance data file (/tmp/hsperfdata_USER/PID, what jps and
 * jcmd read; proc/jvm.h): a prologue, then entries of a name and a value.
 * From HotSpot's perfMemory.hpp:
 *
 *   prologue  u32 magic 0xcafec0c0 (bytes ca fe c0 c0), u8 byte_order
 *             (1: little-endian), u8 major, u8 minor, u8 accessible, s32 used,
 *             s32 overflow, s64 mod_time_stamp, s32 entry_offset,
 *             s32 num_entries                                       (32 bytes)
 *   entry     s32 entry_length, s32 name_offset, s32 vector_length,
 *             u8 data_type ('B' bytes, 'J' long ...), u8 flags, u8 units,
 *             u8 variability, s32 data_offset                       (20 bytes)
 *
 * Names and offsets are relative to their entry; a string is a 'B' vector
 * holding a NUL-terminated text. The file is the JVM's own writing, read as
 * its user (proc/jvm.c): every offset and length is checked against the
 * entry and the bytes used, and the walk stops at the first entry that does
 * not fit.
 */
#include <errno.h>
#include <string.h>

#include "proc/jvm.h"

#define PROLOGUE 32
#define ENTRY 20

static int32_t s32_at(const unsigned char *p)
{
	int32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

int tk_hsperf__string(const void *buf, size_t len, const char *name, char *out, size_t out_sz)
{
	const unsigned char *b = buf;
	size_t nlen = strlen(name), off, end;
	int32_t used, first, n, i;

	if (out_sz)
		out[0] = '\0';
	if (len < PROLOGUE || memcmp(b, "\xca\xfe\xc0\xc0", 4) || b[4] != 1)
		return -EINVAL;
	used = s32_at(b + 8);
	first = s32_at(b + 24);
	n = s32_at(b + 28);
	if (used < PROLOGUE || n < 0 || first < PROLOGUE)
		return -EINVAL;
	end = (size_t)used < len ? (size_t)used : len;
	off = first;
	for (i = 0; i < n && off < end && end - off >= ENTRY; i++) {
		const unsigned char *e = b + off;
		int32_t elen = s32_at(e), noff = s32_at(e + 4), vlen = s32_at(e + 8);
		int32_t doff = s32_at(e + 16);
		const unsigned char *nul, *v;
		size_t k;

		if (elen < ENTRY || (size_t)elen > end - off)
			return -ENOENT;	/* the rest cannot be found */
		off += elen;
		if (noff < ENTRY || noff >= elen || doff < ENTRY || doff > elen || vlen < 0)
			continue;
		nul = memchr(e + noff, '\0', elen - noff);
		if (!nul || (size_t)(nul - (e + noff)) != nlen || memcmp(e + noff, name, nlen))
			continue;
		if (e[12] != 'B' || vlen > elen - doff)
			return -ENOENT;
		v = e + doff;
		for (k = 0; k < (size_t)vlen && v[k] && k + 1 < out_sz; k++)
			out[k] = v[k] < 0x20 || v[k] == 0x7f ? '?' : v[k];
		if (out_sz)
			out[k] = '\0';
		return 0;
	}
	return -ENOENT;
}
