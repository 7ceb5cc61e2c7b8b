/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * The body of fp_yes and fp_no: the same program built with and without
 * frame pointers, for the frame pointer heuristic of procinfo. It has enough
 * non-trivial functions (calling others, using the stack) to be a fair sample.
 */
#ifndef __FP_COMMON_H
#define __FP_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOINLINE __attribute__((noinline))

static volatile unsigned long sink;

NOINLINE static unsigned long hash_str(const char *s)
{
	unsigned long h = 5381;
	char buf[64];

	snprintf(buf, sizeof(buf), "%s", s);
	for (s = buf; *s; s++)
		h = h * 33 + (unsigned char)*s;
	return h;
}

#define STEP(NAME, NEXT)						\
	NOINLINE static unsigned long NAME(unsigned long x)		\
	{								\
		char buf[32];						\
									\
		snprintf(buf, sizeof(buf), #NAME "-%lu", x);		\
		sink += hash_str(buf);					\
		return NEXT(x + 1) + strlen(buf);			\
	}

NOINLINE static unsigned long leaf(unsigned long x)
{
	return x * 2654435761u;
}

STEP(step16, leaf)
STEP(step15, step16)
STEP(step14, step15)
STEP(step13, step14)
STEP(step12, step13)
STEP(step11, step12)
STEP(step10, step11)
STEP(step9, step10)
STEP(step8, step9)
STEP(step7, step8)
STEP(step6, step7)
STEP(step5, step6)
STEP(step4, step5)
STEP(step3, step4)
STEP(step2, step3)
STEP(step1, step2)

NOINLINE static void *alloc_some(size_t n)
{
	char *p = malloc(n);

	if (!p)
		exit(1);
	memset(p, 0x5a, n);
	sink += step1(n);
	return p;
}

static int fp_main(int argc, char **argv, const char *what)
{
	unsigned long i, n = 1000;

	if (argc > 1 && !strcmp(argv[1], "--help")) {
		printf("usage: %s [ITERATIONS]\n%s\n", argv[0], what);
		return 0;
	}
	if (argc > 1)
		n = strtoul(argv[1], NULL, 0);
	for (i = 0; i < n; i++)
		free(alloc_some(16 + i % 512));
	printf("%lu\n", (unsigned long)sink);
	return 0;
}

#endif /* __FP_COMMON_H */
