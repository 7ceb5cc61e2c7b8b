/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The jemalloc backend of `tracekit alloc` (alloc_je.c): what the front end
 * may ask of it beyond struct tk_alloc_backend. Its file-level helpers are
 * jedump.h's.
 */
#ifndef __TK_ALLOC_JE_H
#define __TK_ALLOC_JE_H

struct tk_alloc;

/*
 * Why the last build failed, for people ("no heap dump from 1234 yet:
 * jemalloc writes them at ..."), or NULL. Valid until the next build or
 * tk_alloc__free(); only for a session on the jemalloc backend.
 */
const char *tk_alloc_je__error(const struct tk_alloc *a);

#endif /* __TK_ALLOC_JE_H */
