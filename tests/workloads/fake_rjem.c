// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Looks, to procinfo, like a program with jemalloc linked in statically under
 * the "_rjem_" prefix, as Rust's tikv-jemallocator builds it: it defines
 * _rjem_malloc, _rjem_mallctl and a weak, NULL _rjem_malloc_conf. The
 * functions only forward to glibc.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((used, noinline, visibility("default")))

/* jemalloc's own definition: weak, so that a program can override it */
__attribute__((weak, used)) const char *_rjem_malloc_conf;

EXPORT void *_rjem_malloc(size_t size)
{
	return malloc(size);
}

EXPORT void _rjem_free(void *p)
{
	free(p);
}

EXPORT int _rjem_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen)
{
	if (!name || (oldp && !oldlenp))
		return EINVAL;
	return ENOENT;
}

int main(int argc, char **argv)
{
	void *p;

	if (argc > 1 && !strcmp(argv[1], "--help")) {
		printf("usage: %s\nDefines _rjem_malloc and _rjem_mallctl like a Rust program\n"
		       "with a statically linked, prefixed jemalloc.\n", argv[0]);
		return 0;
	}
	p = _rjem_malloc(100);
	printf("%d %s\n", _rjem_mallctl("opt.prof", NULL, NULL, NULL, 0),
	       _rjem_malloc_conf ? _rjem_malloc_conf : "(null)");
	_rjem_free(p);
	return 0;
}
