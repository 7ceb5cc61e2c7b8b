// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target for the user-space walk of a thread's Python frames
 * (user/runtime/py_walk.c, tracekit stacks): the frame chain is another
 * process's memory, any bytes. Input: minor version (byte 0), the number of
 * interpreter frames in the native stack (byte 1, low 5 bits; its top bit:
 * the native walk was whole), then a memory image laid at BASE, where the
 * thread state is. Each interpreter frame's [sp, cfa) is a slice of the
 * image. The walk must end,
 * hand out at most its limit of frames, read only through its reader, and
 * say a cause or frames for whatever it saw.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/py.h"

#define BASE 0x7f0000000000ULL
#define LIMIT 128

struct img {
	const uint8_t *d;
	size_t n;
};

static int rd(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct img *m = ctx;

	if (addr < BASE || addr - BASE > m->n || len > m->n - (addr - BASE))
		return -EFAULT;
	memcpy(buf, m->d + (addr - BASE), len);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tk_py_wframe f[LIMIT];
	struct tk_py_offsets o;
	struct tk_py_walk w;
	struct unw_py u;
	struct img m;
	int loops, total = 0, n;
	uint32_t c;

	if (size < 2)
		return 0;
	if (tk_py_offsets__table(9 + data[0] % 6, &o))
		abort();
	memset(&u, 0, sizeof(u));
	tk_py_offsets__to_bpf(&o, &u);
	loops = 1 + data[1] % 32;
	m.d = data + 2;
	m.n = size - 2;
	tk_py_walk__begin(&w, &u, rd, &m, BASE, LIMIT);
	for (int i = 0; i < loops; i++) {
		uint64_t sp = BASE + (m.n ? (uint64_t)i * 64 % m.n : 0);

		n = tk_py_walk__activation(&w, sp, sp + 256, f, LIMIT - total);
		if (n < 0 || n > LIMIT - total)
			abort();
		total += n;
	}
	c = tk_py_walk__end(&w, data[1] & 0x80);
	if (total > LIMIT || (total && !(c & UNW_PY_C_FRAMES)) || (!total && (c & UNW_PY_C_FRAMES)))
		abort();
	return 0;
}
