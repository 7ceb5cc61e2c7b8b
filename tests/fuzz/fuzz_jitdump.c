// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target for the jitdump parser (jit-PID.dump, written by the
 * profiled program): any bytes parse or fail with -ENOMEM, fed whole and in
 * pieces where the input's first bytes say (what a piece did not use is given
 * again with the next, as a growing file is read); both ways find the same
 * names; every name found covers the address, is not empty and holds no
 * control character; the counters agree with each other.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sym/symbolize.h"

static void check(struct tk_jitdump *d, struct tk_jitdump *e, uint64_t addr)
{
	uint64_t start = 0, size = 0;
	const char *name = tk_jitdump__find(d, addr, &start, &size), *other, *c;

	other = tk_jitdump__find(e, addr, NULL, NULL);
	if (!name != !other || (name && strcmp(name, other)))
		abort();
	if (!name)
		return;
	if (!size || start > addr || addr - start >= size || !name[0] ||
	    strlen(name) >= TK_PERFMAP_MAX_LINE)
		abort();
	for (c = name; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			abort();
}

static int feed_pieces(struct tk_jitdump *d, const uint8_t *data, size_t size)
{
	size_t off = 0, end = 0, used, step = size ? data[0] % 97 + 1 : 1;

	while (end < size) {
		end = end + step < size ? end + step : size;
		if (tk_jitdump__feed(d, data + off, end - off, &used))
			return -1;
		if (used > end - off)
			abort();
		off += used;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tk_jitdump *d = tk_jitdump__new(0), *e = tk_jitdump__new(0);
	struct tk_jitdump_stats st, st2;
	uint64_t a = 0, lo, hi;
	size_t used, i;

	if (!d || !e)
		goto out;
	if (tk_jitdump__feed(d, data, size, &used) || used > size)
		goto out;
	if (feed_pieces(e, data, size))
		goto out;
	/* addresses made of the input's bytes, and the edges */
	for (i = 0; i < size && i < 128; i++) {
		a = a << 8 | data[i];
		check(d, e, a);
		check(d, e, a - 1);
	}
	check(d, e, 0);
	check(d, e, UINT64_MAX);
	tk_jitdump__span(d, &lo, &hi);
	tk_jitdump__stats(d, &st);
	tk_jitdump__stats(e, &st2);
	if (st.entries > st.loads + st.moves || st.loads + st.moves > st.records ||
	    (st.entries && lo >= hi) || st.records != st2.records || st.broken != st2.broken)
		abort();
out:
	tk_jitdump__free(d);
	tk_jitdump__free(e);
	return 0;
}
