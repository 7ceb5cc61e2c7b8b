// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target for the cgroup.threads parser of cpu --off-cpu's seeds
 * (user/cpu/cpu_seed.c): the input is the file's text, not NUL-terminated;
 * every thread id given back is a number in it, non-zero, within 32 bits.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_seed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t *tids = NULL;
	size_t nr = 0, cap = 0, i, digits = 0;

	if (tk_cpu_seed__parse_tids((const char *)data, size, &tids, &nr, &cap))
		abort();
	for (i = 0; i < size; i++)
		digits += data[i] >= '0' && data[i] <= '9';
	/* no more ids than digits, none 0 */
	if (nr > digits || nr > cap)
		abort();
	for (i = 0; i < nr; i++)
		if (!tids[i])
			abort();
	free(tids);
	return 0;
}
