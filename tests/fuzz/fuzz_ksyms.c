// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target for the kallsyms parser: any text parses or fails with
 * -ENOMEM, and every lookup that succeeds names a symbol at or below the
 * address, in a module whose span starts at or below it. The streaming
 * resolver (tk_ksyms__resolve_text) answers every address exactly as the
 * table does: the same error, name, module and span.
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

/* The streaming resolver against the table, at each of @n addresses. */
static void same(const struct tk_ksyms *k, const char *text, size_t len, const uint64_t *at,
		 size_t n)
{
	struct tk_ksyms_resolved *r;
	struct tk_sym_frame a, b;
	size_t i;

	if (tk_ksyms__resolve_text(text, len, at, n, &r))
		return;		/* -ENOMEM */
	if (tk_ksyms_resolved__restricted(r) != tk_ksyms__restricted(k))
		abort();
	for (i = 0; i < n; i++) {
		int ea = tk_ksyms__find(k, at[i], &a), eb = tk_ksyms_resolved__find(r, at[i], &b);

		if (ea != eb)
			abort();
		if (!ea && (strcmp(a.function, b.function) || strcmp(a.module, b.module) ||
			    a.map_start != b.map_start || a.map_limit != b.map_limit ||
			    a.module_offset != b.module_offset))
			abort();
	}
	tk_ksyms_resolved__free(r);
}

/* The hex address that begins each line of @data, and one byte either side. */
static size_t line_addrs(const uint8_t *data, size_t size, uint64_t *at, size_t max)
{
	size_t i = 0, n = 0;

	while (i < size && n + 3 <= max) {
		uint64_t a = 0;
		int d = 0, v;

		while (i < size && d < 16 && (v = data[i] >= '0' && data[i] <= '9' ? data[i] - '0' :
					      data[i] >= 'a' && data[i] <= 'f' ? data[i] - 'a' + 10 :
					      -1) >= 0) {
			a = a << 4 | v;
			i++;
			d++;
		}
		if (d) {
			at[n++] = a;
			at[n++] = a - 1;
			at[n++] = a + 1;
		}
		while (i < size && data[i] != '\n')
			i++;
		i++;
	}
	return n;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t at[256 + 3];
	struct tk_ksyms *k;
	uint64_t a = 0;
	size_t i, n;

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
	n = line_addrs(data, size, at, 256);
	at[n++] = 0;
	at[n++] = UINT64_MAX;
	at[n++] = 0xffffffff81000000;
	same(k, (const char *)data, size, at, n);
	tk_ksyms__free(k);
	return 0;
}
