/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the unwinding workloads (unw_*.c) share: the clock, and their command
 * line — [-v] then up to @max numbers of seconds.
 */
#ifndef __UNW_COMMON_H
#define __UNW_COMMON_H

#include <stdlib.h>
#include <string.h>
#include <time.h>

static inline double unw_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * -h/--help: 1; a bad argument: 2; else 0 with *verbose set by -v and up to
 * @max seconds (0 < s <= 3600; 0 allowed with @zero_ok) in @secs (those not
 * given keep their defaults).
 */
static inline int unw_parse_args(int argc, char **argv, int *verbose, double *secs, int max,
				 int zero_ok)
{
	int i, n = 0;
	char *e;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
			return 1;
		if (!strcmp(argv[i], "-v")) {
			*verbose = 1;
			continue;
		}
		if (n == max)
			return 2;
		secs[n] = strtod(argv[i], &e);
		if (*e || secs[n] < 0 || (!zero_ok && secs[n] == 0) || secs[n] > 3600)
			return 2;
		n++;
	}
	return 0;
}

#endif /* __UNW_COMMON_H */
