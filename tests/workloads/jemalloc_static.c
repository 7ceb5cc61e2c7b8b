// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A program with Debian's libjemalloc.a (built with --enable-prof) linked in,
 * and profiling switched on by its compiled-in malloc_conf.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jemalloc/jemalloc.h>

const char *malloc_conf = "prof:true,prof_active:true,lg_prof_sample:19";

int main(int argc, char **argv)
{
	bool prof = false;
	size_t sz = sizeof(prof);
	void *p;

	if (argc > 1 && !strcmp(argv[1], "--help")) {
		printf("usage: %s\nStatically linked jemalloc with malloc_conf \"%s\";\n"
		       "prints opt.prof.\n", argv[0], malloc_conf);
		return 0;
	}
	p = malloc(4096);
	if (mallctl("opt.prof", &prof, &sz, NULL, 0))
		return 1;
	printf("opt.prof=%d\n", prof);
	free(p);
	return 0;
}
