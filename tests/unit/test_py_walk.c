// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The user-space walk of a thread's Python frames (user/runtime/py_walk.c), over
 * frame chains laid out in a fake memory with each version's offsets: activations
 * split as the kernel's walk splits them (<= 3.10 one frame each, 3.11 is_entry,
 * 3.12+ the C-stack shim inside its native frame's [sp, cfa)), the instruction index
 * of each lasti form, 3.14's tagged f_executable, and every cause: no thread state,
 * an unreadable frame, a chain that ends early or is left over, a cycle cut at the
 * depth limit. The chain is another process's memory: any bytes.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "runtime/py.h"

#define BASE 0x100000ULL
#define MEM (64 * 1024)

static uint8_t mem[MEM];
static struct tk_py_offsets off;
static struct unw_py upy;

static int rd(void *ctx, uint64_t addr, void *buf, size_t len)
{
	(void)ctx;
	if (addr < BASE || addr - BASE > MEM || len > MEM - (addr - BASE))
		return -EFAULT;
	memcpy(buf, mem + (addr - BASE), len);
	return 0;
}

static void put64(uint64_t addr, uint64_t v)
{
	memcpy(mem + (addr - BASE), &v, 8);
}

static void put32(uint64_t addr, uint32_t v)
{
	memcpy(mem + (addr - BASE), &v, 4);
}

static void setup_minor(int minor)
{
	memset(mem, 0, sizeof(mem));
	assert_int_equal(tk_py_offsets__table(minor, &off), 0);
	memset(&upy, 0, sizeof(upy));
	tk_py_offsets__to_bpf(&off, &upy);
}

#define TSTATE (BASE + 0x100)
#define CFRAME (BASE + 0x400)
#define FRAME(i) (BASE + 0x1000 + 0x100 * (uint64_t)(i))
#define CODE(i) (BASE + 0x8000 + 0x400 * (uint64_t)(i))

/* Frame @i runs code @c at unit @idx (-1: not started), its previous frame @prev (-1 none). */
static void frame(int i, int c, int idx, int prev)
{
	uint64_t f = FRAME(i), code = CODE(c);

	put64(f + off.fr_prev, prev < 0 ? 0 : FRAME(prev));
	put64(f + off.fr_code, code | (off.exec_tag ? 1 : 0));
	if (upy.lasti == UNW_PY_LASTI_PTR)
		put64(f + off.fr_instr, idx < 0 ? code + off.co_code - 2 :
						  code + off.co_code + 2 * (uint64_t)idx);
	else
		put32(f + off.fr_instr, idx < 0 ? (uint32_t)-1 :
					upy.lasti == UNW_PY_LASTI_BYTES ? 2 * (uint32_t)idx :
									  (uint32_t)idx);
}

/* The thread state's newest frame is @i. */
static void top(int i)
{
	if (upy.via_cframe) {
		put64(TSTATE + off.ts_frame, CFRAME);
		put64(CFRAME + off.cf_current, FRAME(i));
	} else {
		put64(TSTATE + off.ts_frame, FRAME(i));
	}
}

/* One activation: its frames' code objects (CODE(k) → k) and indexes. */
static int act(struct tk_py_walk *w, uint64_t sp, uint64_t cfa, int *codes, uint32_t *idx)
{
	struct tk_py_wframe f[64];
	int n = tk_py_walk__activation(w, sp, cfa, f, 64);

	for (int i = 0; i < n; i++) {
		codes[i] = (int)((f[i].code - CODE(0)) / 0x400);
		assert_int_equal(f[i].code, CODE(codes[i]));
		idx[i] = f[i].idx;
	}
	return n;
}

/* <= 3.10: one frame per interpreter activation, newest first; both lasti forms. */
static void test_frameobj(void **state)
{
	for (int minor = 9; minor <= 10; minor++) {
		struct tk_py_walk w;
		int codes[64];
		uint32_t idx[64];

		setup_minor(minor);
		frame(0, 3, 7, 1);
		frame(1, 2, -1, 2);
		frame(2, 1, 40, -1);
		top(0);
		tk_py_walk__begin(&w, &upy, rd, NULL, TSTATE, 64);
		assert_int_equal(act(&w, 0, ~0ULL, codes, idx), 1);
		assert_int_equal(codes[0], 3);
		assert_int_equal(idx[0], 7);
		assert_int_equal(act(&w, 0, ~0ULL, codes, idx), 1);
		assert_int_equal(codes[0], 2);
		assert_int_equal(idx[0], UNW_PY_IDX_START);
		assert_int_equal(act(&w, 0, ~0ULL, codes, idx), 1);
		assert_int_equal(codes[0], 1);
		assert_int_equal(idx[0], 40);
		/* a fourth interpreter frame: the chain is done (the kernel parks nothing) */
		assert_int_equal(act(&w, 0, ~0ULL, codes, idx), 0);
		assert_int_equal(tk_py_walk__end(&w, true), UNW_PY_C_FRAMES);
	}
}

/* 3.11: the frames up to and with is_entry are one activation; the cframe's current frame. */
static void test_entryflag(void **state)
{
	struct tk_py_walk w;
	int codes[64];
	uint32_t idx[64];

	setup_minor(11);
	frame(0, 5, 3, 1);
	frame(1, 4, 9, 2);
	mem[FRAME(2) - BASE + off.fr_entry] = 0;
	frame(2, 3, -1, 3);
	mem[FRAME(2) - BASE + off.fr_entry] = 1;
	frame(3, 2, 1, -1);
	mem[FRAME(3) - BASE + off.fr_entry] = 1;
	top(0);
	tk_py_walk__begin(&w, &upy, rd, NULL, TSTATE, 64);
	assert_int_equal(act(&w, 0, ~0ULL, codes, idx), 3);
	assert_int_equal(codes[0], 5);
	assert_int_equal(codes[1], 4);
	assert_int_equal(codes[2], 3);
	assert_int_equal(idx[0], 3);
	assert_int_equal(idx[1], 9);
	assert_int_equal(idx[2], UNW_PY_IDX_START);
	assert_int_equal(act(&w, 0, ~0ULL, codes, idx), 1);
	assert_int_equal(codes[0], 2);
	assert_int_equal(tk_py_walk__end(&w, true), UNW_PY_C_FRAMES);
}

/*
 * 3.12-3.14: the shim ends an activation when it lies in the native frame's stack; one
 * outside it leaves the activation empty and misaligned. 3.14's tag is cleared.
 */
static void test_shim(void **state)
{
	for (int minor = 12; minor <= 14; minor++) {
		struct tk_py_walk w;
		int codes[64];
		uint32_t idx[64];

		setup_minor(minor);
		/* newest: 0, 1, shim 2 | 3, shim 4 */
		frame(0, 7, 2, 1);
		frame(1, 6, 5, 2);
		frame(2, 0, 0, 3);
		mem[FRAME(2) - BASE + off.fr_owner] = off.cstack_owner;
		frame(3, 5, 11, 4);
		frame(4, 0, 0, -1);
		mem[FRAME(4) - BASE + off.fr_owner] = off.cstack_owner;
		top(0);
		tk_py_walk__begin(&w, &upy, rd, NULL, TSTATE, 64);
		/* the first interpreter frame's stack holds shim 2 */
		assert_int_equal(act(&w, FRAME(2) - 8, FRAME(2) + 0x80, codes, idx), 2);
		assert_int_equal(codes[0], 7);
		assert_int_equal(codes[1], 6);
		assert_int_equal(idx[0], 2);
		assert_int_equal(idx[1], 5);
		/* the next frame's stack does not hold shim 4: no frames, misaligned... */
		assert_int_equal(act(&w, FRAME(5), FRAME(6), codes, idx), 1);
		assert_int_equal(codes[0], 5);
		assert_int_equal(w.causes & UNW_PY_C_MISALIGNED, UNW_PY_C_MISALIGNED);
		/* ...and the shim is still the next: an outer frame whose stack holds it ends it */
		assert_int_equal(act(&w, FRAME(4), FRAME(4) + 0x100, codes, idx), 0);
		assert_int_equal(w.cur, 0);
		assert_int_equal(tk_py_walk__end(&w, true),
				 UNW_PY_C_FRAMES | UNW_PY_C_MISALIGNED);
	}
}

/* No thread state; an unreadable newest frame; frames left over at the end of a whole walk. */
static void test_causes(void **state)
{
	struct tk_py_walk w;
	int codes[64];
	uint32_t idx[64];

	setup_minor(11);
	tk_py_walk__begin(&w, &upy, rd, NULL, 0, 64);
	assert_int_equal(act(&w, 0, ~0ULL, codes, idx), 0);
	assert_int_equal(tk_py_walk__end(&w, true), UNW_PY_C_TSTATE);

	put64(TSTATE + off.ts_frame, BASE + MEM + 0x1000);	/* the cframe unreadable */
	tk_py_walk__begin(&w, &upy, rd, NULL, TSTATE, 64);
	assert_int_equal(tk_py_walk__end(&w, true), UNW_PY_C_READ_FAULT);

	put64(TSTATE + off.ts_frame, CFRAME);
	put64(CFRAME + off.cf_current, 0x10);			/* a frame unreadable */
	tk_py_walk__begin(&w, &upy, rd, NULL, TSTATE, 64);
	assert_int_equal(act(&w, 0, ~0ULL, codes, idx), 0);
	assert_int_equal(act(&w, 0, ~0ULL, codes, idx), 0);
	assert_int_equal(tk_py_walk__end(&w, true), UNW_PY_C_READ_FAULT);

	/* two activations in the chain, one interpreter frame in the native stack */
	frame(0, 2, 1, 1);
	mem[FRAME(0) - BASE + off.fr_entry] = 1;
	frame(1, 1, 1, -1);
	mem[FRAME(1) - BASE + off.fr_entry] = 1;
	top(0);
	tk_py_walk__begin(&w, &upy, rd, NULL, TSTATE, 64);
	assert_int_equal(act(&w, 0, ~0ULL, codes, idx), 1);
	assert_int_equal(tk_py_walk__end(&w, true), UNW_PY_C_FRAMES | UNW_PY_C_MISALIGNED);
	/* the same, the native walk cut: no claim */
	tk_py_walk__begin(&w, &upy, rd, NULL, TSTATE, 64);
	assert_int_equal(act(&w, 0, ~0ULL, codes, idx), 1);
	assert_int_equal(tk_py_walk__end(&w, false), UNW_PY_C_FRAMES);
}

/* A chain that loops on itself (memory another process wrote) stops at the limit. */
static void test_cycle(void **state)
{
	struct tk_py_walk w;
	int codes[64], total = 0, n;
	uint32_t idx[64];

	setup_minor(12);
	frame(0, 1, 1, 1);
	frame(1, 2, 1, 0);
	top(0);
	tk_py_walk__begin(&w, &upy, rd, NULL, TSTATE, 40);
	for (int i = 0; i < 10 && (n = act(&w, 0, ~0ULL, codes, idx)); i++)
		total += n;
	assert_int_equal(total, 40);
	assert_int_equal(tk_py_walk__end(&w, true), UNW_PY_C_FRAMES | UNW_PY_C_DEPTH);
	/* and the per-activation room: 64 */
	tk_py_walk__begin(&w, &upy, rd, NULL, TSTATE, 1000);
	assert_int_equal(act(&w, 0, ~0ULL, codes, idx), 64);
	assert_true(w.causes & UNW_PY_C_DEPTH);
	assert_int_equal(act(&w, 0, ~0ULL, codes, idx), 0);
}

/* Random frames: whatever the bytes, the walk stays in bounds and ends. */
static void test_random(void **state)
{
	srand(25);
	for (int round = 0; round < 2000; round++) {
		struct tk_py_walk w;
		struct tk_py_wframe f[16];
		int n = 0;

		setup_minor(9 + round % 6);
		for (size_t i = 0; i < 0x3000; i++)
			mem[0x100 + i] = rand();
		/* pointers that land in the frames now and then */
		for (int i = 0; i < 24; i++)
			put64(FRAME(rand() % 24) + off.fr_prev, rand() % 3 ? FRAME(rand() % 24) :
							       (uint64_t)rand());
		top(rand() % 24);
		tk_py_walk__begin(&w, &upy, rd, NULL, TSTATE, 128);
		for (int i = 0; i < 64; i++)
			n += tk_py_walk__activation(&w, FRAME(0), FRAME(24), f, 16);
		assert_true(n <= 128);
		tk_py_walk__end(&w, true);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_frameobj),
		cmocka_unit_test(test_entryflag),
		cmocka_unit_test(test_shim),
		cmocka_unit_test(test_causes),
		cmocka_unit_test(test_cycle),
		cmocka_unit_test(test_random),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
