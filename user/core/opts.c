// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Option structs with their size in .sz (core/opts.h). */
#include <errno.h>
#include <string.h>

#include "core/opts.h"

int tk_opts__copy(void *dst, size_t dst_sz, const void *src)
{
	const unsigned char *s = src;
	size_t sz, i;

	memset(dst, 0, dst_sz);
	if (src) {
		memcpy(&sz, src, sizeof(sz));
		if (sz < sizeof(size_t))
			return -EINVAL;
		for (i = dst_sz; i < sz; i++)
			if (s[i])
				return -EINVAL;
		memcpy(dst, src, sz < dst_sz ? sz : dst_sz);
	}
	memcpy(dst, &dst_sz, sizeof(dst_sz));
	return 0;
}
