// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target for the perf map parser (/tmp/perf-PID.map, written by the
 * profiled program): any text parses or fails with -ENOMEM, whole or fed in
 * two pieces split where the input's first byte says; every name found covers
 * the address, is not empty and holds no control character; the entries are
 * within the limits.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sym/symbolize.h"

static void check(struct tk_perfmap *m, uint64_t addr)
{
	uint64_t start = 0, size = 0;
	const char *name = tk_perfmap__find(m, addr, &start, &size);
	const char *c;

	if (!name)
		return;
	if (!size || start > addr || addr - start >= size || !name[0] ||
	    strlen(name) >= TK_PERFMAP_MAX_LINE)
		abort();
	for (c = name; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			abort();
}

static void check_all(struct tk_perfmap *m, const uint8_t *data, size_t size)
{
	struct tk_perfmap_stats st;
	uint64_t a = 0, lo, hi;
	size_t i;

	/* addresses made of the input's bytes, and the edges */
	for (i = 0; i < size && i < 64; i++) {
		a = a << 8 | data[i];
		check(m, a);
		check(m, a - 1);
	}
	check(m, 0);
	check(m, UINT64_MAX);
	tk_perfmap__span(m, &lo, &hi);
	tk_perfmap__stats(m, &st);
	if (st.entries > TK_PERFMAP_MAX_ENTRIES || st.entries > st.lines ||
	    st.entries + st.bad > st.lines || (st.entries && lo >= hi))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tk_perfmap *m;
	size_t split, used, used2;

	if (!tk_perfmap__parse((const char *)data, size, &m)) {
		check_all(m, data, size);
		tk_perfmap__free(m);
	}

	/* fed as a growing file is read: a first piece, then what was not used and the rest */
	split = size ? data[0] % (size + 1) : 0;
	m = tk_perfmap__new();
	if (!m)
		return 0;
	if (tk_perfmap__feed(m, (const char *)data, split, false, &used) || used > split)
		goto out;
	check_all(m, data, size);
	if (tk_perfmap__feed(m, (const char *)data + used, size - used, true, &used2))
		goto out;
	if (used2 != size - used)
		abort();
	check_all(m, data, size);
out:
	tk_perfmap__free(m);
	return 0;
}
