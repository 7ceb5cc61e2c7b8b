/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Growing an array by doubling, for the tables that are filled once and then searched. */
#ifndef __TK_CORE_GROW_H
#define __TK_CORE_GROW_H

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

/*
 * Make *@buf (of *@cap elements of @elem bytes) hold at least @need: the
 * capacity doubles from @first. 0, or -ENOMEM (the array is left as it was).
 */
static inline int tk_grow(void **buf, size_t *cap, size_t need, size_t elem, size_t first)
{
	size_t n = *cap ? *cap : first;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2 / elem)
			return -ENOMEM;
		n *= 2;
	}
	p = realloc(*buf, n * elem);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = n;
	return 0;
}

#endif /* __TK_CORE_GROW_H */
