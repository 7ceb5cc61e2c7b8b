/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Option structs, the libbpf way: each starts with `size_t sz`, the size the
 * caller was compiled with (TK_OPTS_SZ). A caller built against an older
 * header passes a smaller struct: the fields it does not know read as zero. A
 * caller built against a newer header may pass a larger one: accepted only
 * when every byte this library does not know is zero (otherwise it asked for
 * something this version cannot do).
 */
#ifndef __TK_CORE_OPTS_H
#define __TK_CORE_OPTS_H

#include <stddef.h>

/*
 * Copy the caller's @src (NULL: all defaults) into @dst, @dst_sz bytes that
 * this library knows, zero-filled past what the caller gave. dst's sz becomes
 * @dst_sz. Returns 0, or -EINVAL when src's sz is smaller than the sz field
 * itself or it sets fields unknown here.
 */
int tk_opts__copy(void *dst, size_t dst_sz, const void *src);

#define TK_OPTS_COPY(dst, src) tk_opts__copy((dst), sizeof(*(dst)), (src))

#endif /* __TK_CORE_OPTS_H */
