// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target for the kallsyms parser: any text parses or fails with
 * -ENOMEM, and every lookup that succeeds names a symbol at or below the
 * address, in a module whose span starts at or below it.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sym/symbolize.h"

static void check(const struct tk_ksyms *k, uint64_t addr)
{
	struct tk_sym_frame f;
	int err = tk_ksyms__find(k, addr, &f);

	if (err == -ESRCH) {
		if (f.function || f.module)
			abort();
		return;
	}
	if (err || !f.function || !f.module || f.module[0] != '[' || f.map_start > addr ||
	    f.module_offset != addr - f.map_start || !f.function[0])
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tk_ksyms *k;
	uint64_t a = 0;
	size_t i;

	if (tk_ksyms__parse((const char *)data, size, &k))
		return 0;
	if (tk_ksyms__restricted(k) && tk_ksyms__count(k))
		abort();
	/* addresses made of the input's bytes, and the edges */
	for (i = 0; i < size && i < 64; i++) {
		a = a << 8 | data[i];
		check(k, a);
	}
	check(k, 0);
	check(k, UINT64_MAX);
	check(k, 0xffffffff81000000);
	tk_ksyms__free(k);
	return 0;
}
