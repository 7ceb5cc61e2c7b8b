// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What finding CPython's frames takes per architecture (user/runtime/py_arch.c):
 * glibc's struct pthread layout, its size below arm64's thread pointer read from
 * pthread_self's code (bookworm's libc6:arm64 as it is, and the shapes around it), the
 * pthread key's place in _PyRuntime read from the code of Debian's arm64 interpreters
 * (3.9, 3.11, 3.13, 3.14: the instruction words as those binaries have them), and the
 * interpreter loop's jumps on both architectures.
 */
#include <elf.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "runtime/py_int.h"

#define NR(a) (sizeof(a) / sizeof((a)[0]))

static size_t put(uint8_t *buf, const uint32_t *w, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		buf[4 * i] = w[i];
		buf[4 * i + 1] = w[i] >> 8;
		buf[4 * i + 2] = w[i] >> 16;
		buf[4 * i + 3] = w[i] >> 24;
	}
	return 4 * n;
}

static void test_glibc_layout(void **state)
{
	struct tk_py_glibc g;

	(void)state;
	assert_int_equal(tk_py__glibc_layout(EM_X86_64, &g), 0);
	assert_int_equal(g.tsd_off, 0x318);
	assert_int_equal(g.tsd_stride, 16);
	assert_int_equal(g.tid_off, 0x2d0);
	assert_int_equal(tk_py__glibc_layout(EM_AARCH64, &g), 0);
	/* libc6:arm64 2.36: getspecific tp - 0x630 + 8 with pthread_self tp - 0x740 */
	assert_int_equal(g.tsd_off, 0x740 - 0x630 + 8);
	assert_int_equal(g.tid_off, 208);	/* pthread_getcpuclockid: ldr w0, [x0, #208] */
	assert_int_equal(tk_py__glibc_layout(EM_386, &g), -ENOTSUP);
}

/* pthread_self: bookworm's, with branch protection's hints, and shapes that are not it. */
static void test_tp_off(void **state)
{
	static const uint32_t bookworm[] = { 0xd53bd040, 0xd11d0000, 0xd65f03c0 };
	/* bti c; mrs x1, tpidr_el0; sub x0, x1, #0x7c0; ret */
	static const uint32_t bti[] = { 0xd503245f, 0xd53bd041, 0xd11f0020, 0xd65f03c0 };
	/* paciasp; mrs; sub x0, x0, #1, lsl #12; autiasp; ret */
	static const uint32_t pac[] = { 0xd503233f, 0xd53bd040, 0xd1400400, 0xd50323bf,
					0xd65f03c0 };
	/* add instead of sub (variant II would be above), sub into x1, mrs of tpidr2 */
	static const uint32_t add[] = { 0xd53bd040, 0x911d0000, 0xd65f03c0 };
	static const uint32_t other_rd[] = { 0xd53bd040, 0xd11d0001, 0xd65f03c0 };
	static const uint32_t other_rn[] = { 0xd53bd041, 0xd11d0000, 0xd65f03c0 };
	static const uint32_t tpidr2[] = { 0xd53bd0a0, 0xd11d0000, 0xd65f03c0 };
	static const uint32_t small[] = { 0xd53bd040, 0xd1004000, 0xd65f03c0 };	/* #0x10 */
	static const uint32_t no_ret[] = { 0xd53bd040, 0xd11d0000, 0xd503201f };
	uint8_t b[32];
	uint32_t off = 0;
	size_t n;

	(void)state;
	n = put(b, bookworm, NR(bookworm));
	assert_int_equal(tk_py__a64_tp_off(b, n, &off), 0);
	assert_int_equal(off, 0x740);
	/* cut short: never read past */
	for (size_t k = 0; k < n; k++)
		assert_int_equal(tk_py__a64_tp_off(b, k, &off), -ENOTSUP);
	n = put(b, bti, NR(bti));
	assert_int_equal(tk_py__a64_tp_off(b, n, &off), 0);
	assert_int_equal(off, 0x7c0);
	n = put(b, pac, NR(pac));
	assert_int_equal(tk_py__a64_tp_off(b, n, &off), 0);
	assert_int_equal(off, 0x1000);
	off = 1;
	assert_int_equal(tk_py__a64_tp_off(b, put(b, add, 3), &off), -ENOTSUP);
	assert_int_equal(tk_py__a64_tp_off(b, put(b, other_rd, 3), &off), -ENOTSUP);
	assert_int_equal(tk_py__a64_tp_off(b, put(b, other_rn, 3), &off), -ENOTSUP);
	assert_int_equal(tk_py__a64_tp_off(b, put(b, tpidr2, 3), &off), -ENOTSUP);
	assert_int_equal(tk_py__a64_tp_off(b, put(b, small, 3), &off), -ENOTSUP);
	assert_int_equal(tk_py__a64_tp_off(b, put(b, no_ret, 3), &off), -ENOTSUP);
	assert_int_equal(off, 1);
}

/* The host's libc6:arm64 (tools/install-deps.sh --arm64), read as a process's libc is. */
static void test_tp_off_libc(void **state)
{
	const char *libc = "/usr/lib/aarch64-linux-gnu/libc.so.6";
	char why[200] = "";
	uint32_t off = 0;

	(void)state;
	if (access(libc, R_OK)) {
		print_message("skip: no %s (tools/install-deps.sh --arm64)\n", libc);
		skip();
	}
	assert_int_equal(tk_py__libc_tp_off(libc, &off, why, sizeof(why)), 0);
	/* bookworm's 2.36: 0x740; another glibc may differ, but never below its head */
	print_message("%s: struct pthread 0x%x bytes below tpidr_el0\n", libc, off);
	assert_true(off >= 0x200 && off < 0x2000);
	/* an x86-64 libc has another pthread_self: not taken for arm64's */
	if (!access("/lib/x86_64-linux-gnu/libc.so.6", R_OK)) {
		assert_int_equal(tk_py__libc_tp_off("/lib/x86_64-linux-gnu/libc.so.6", &off, why,
						    sizeof(why)),
				 -ENOTSUP);
		assert_non_null(strstr(why, "pthread_self"));
	}
	assert_int_not_equal(tk_py__libc_tp_off("/nonexistent/libc.so.6", &off, why, sizeof(why)),
			     0);
}

/* PyGILState_GetThisThreadState of Debian's arm64 interpreters: the key's Py_tss_t. */
static void test_tss_addr(void **state)
{
	static const struct {
		const char *what;
		uint64_t pc, runtime;
		uint32_t w[9];
		uint32_t tss;		/* its offset in _PyRuntime */
	} fx[] = {
		{ "3.9.2-1 (bullseye)", 0x473880, 0x918890,
		  { 0xb0002520, 0x91220002, 0x91004043, 0xf9413041, 0xb4000061, 0xb9425c60,
		    0x17feb1c2, 0xd2800000, 0xd65f03c0 }, 600 },
		{ "3.11.2-6+deb12u9 (bookworm)", 0x4714a4, 0xa35ff8,
		  { 0x90002e20, 0x913fe000, 0xf9412c01, 0xb4000061, 0xb9426400, 0x17feb9aa,
		    0xd2800000, 0xd65f03c0, 0xd10383ff }, 608 },
		{ "3.13.18-1 (sid)", 0x495640, 0xab78a8,
		  { 0xd503245f, 0xd0003100, 0x9122a000, 0xb9487001, 0x34000061, 0xb9487400,
		    0x17fe2d9e, 0xd2800000, 0xd65f03c0 }, 2160 },
		{ "3.14.10-1 (sid)", 0x425658, 0xb4bd80,
		  { 0xd503245f, 0xf0003920, 0xb946a000, 0x34000080, 0xf0003920, 0x911a8000,
		    0x14023e06, 0xd2800000, 0xd65f03c0 }, 2336 },
	};
	struct tk_py_offsets o;
	uint8_t b[64];
	uint64_t addr;
	size_t n;

	(void)state;
	for (size_t i = 0; i < NR(fx); i++) {
		n = put(b, fx[i].w, NR(fx[i].w));
		addr = 0;
		assert_int_equal(tk_py__a64_tss_addr(b, n, fx[i].pc, &addr), 0);
		if (addr - fx[i].runtime != fx[i].tss)
			fail_msg("%s: autoTSSkey at _PyRuntime + %lld, want %u", fx[i].what,
				 (long long)(addr - fx[i].runtime), fx[i].tss);
		/*
		 * x86-64's table is not arm64's up to 3.11: _PyRuntime embeds two pthread
		 * mutexes before the key (40 bytes each there, 48 here): 3.9 584, 3.11 592
		 */
		assert_int_equal(tk_py_offsets__table(i == 0 ? 9 : i == 1 ? 11 : i == 2 ? 13 : 14,
						      &o), 0);
		assert_int_equal(o.rt_tss + (i < 2 ? 16 : 0), fx[i].tss);
		/* the same code elsewhere: adrp is relative to its page */
		assert_int_equal(tk_py__a64_tss_addr(b, n, fx[i].pc + 0x10000, &addr), 0);
		assert_int_equal(addr - fx[i].runtime, fx[i].tss + 0x10000);
		/* cut before the call: not found */
		for (size_t k = 0; k < n; k += 4) {
			uint64_t a = 0;
			int err = tk_py__a64_tss_addr(b, k, fx[i].pc, &a);

			if (!err && k < 4 * 6)
				fail_msg("%s: found from %zu bytes", fx[i].what, k);
		}
	}
	/* an unknown instruction (a store), or a call with no address in x0 or w0 */
	{
		static const uint32_t store[] = { 0x90002e20, 0xf9000001, 0x17feb9aa };
		static const uint32_t none[] = { 0xd503245f, 0x17feb9aa };
		static const uint32_t ret[] = { 0x90002e20, 0xd65f03c0 };
		/* adrp into xzr, add into sp, ldr into xzr (31 is no register to follow: the
		   fuzzer's first find) */
		static const uint32_t xzr[] = { 0x9000001f, 0x910003ff, 0xb940001f, 0x17feb9aa };

		assert_int_equal(tk_py__a64_tss_addr(b, put(b, store, 3), 0x4714a4, &addr),
				 -ENOTSUP);
		assert_int_equal(tk_py__a64_tss_addr(b, put(b, none, 2), 0x4714a4, &addr),
				 -ENOTSUP);
		assert_int_equal(tk_py__a64_tss_addr(b, put(b, ret, 2), 0x4714a4, &addr),
				 -ENOTSUP);
		assert_int_equal(tk_py__a64_tss_addr(b, put(b, xzr, 4), 0x4714a4, &addr),
				 -ENOTSUP);
	}
}

/* arm64's jumps: b, b.cond, cbz/cbnz, tbz/tbnz, backwards and forwards; not bl nor br. */
static void test_jumps_a64(void **state)
{
	static const uint32_t w[] = {
		0x94000010,	/* bl +0x40: a call */
		0x14000400,	/* 0x04: b +0x1000 */
		0xd61f0200,	/* br x16 */
		0x54ffffe1,	/* 0x0c: b.ne -4 */
		0xb4000061,	/* 0x10: cbz x1, +0xc */
		0x35fffe00,	/* 0x14: cbnz w0, -0x40 */
		0x37080040,	/* 0x18: tbnz w0, #1, +8 */
		0x17ffffff,	/* 0x1c: b -4 */
	};
	static const uint64_t want[] = { 0x10004 + 0x1000, 0x1000c - 4, 0x10010 + 0xc,
					 0x10014 - 0x40, 0x10018 + 8, 0x1001c - 4 };
	uint8_t b[64];
	uint64_t tgt;
	size_t n = put(b, w, NR(w)), at = 0, k = 0;

	(void)state;
	while (tk_py__next_jump(EM_AARCH64, b, n, &at, 0x10000, &tgt)) {
		assert_true(k < NR(want));
		assert_int_equal(tgt, want[k]);
		k++;
	}
	assert_int_equal(k, NR(want));
	/* x86's bytes e9/0f 8x inside arm64 words are no jumps there */
	{
		static const uint32_t x86ish[] = { 0x000010e9, 0x85000f80 };

		n = put(b, x86ish, NR(x86ish));
		at = 0;
		assert_false(tk_py__next_jump(EM_AARCH64, b, n, &at, 0x10000, &tgt));
		at = 0;
		assert_true(tk_py__next_jump(EM_X86_64, b, n, &at, 0x10000, &tgt));
	}
}

/* x86-64's: jmp rel32, jcc rel32, found at any byte. */
static void test_jumps_x86(void **state)
{
	const uint8_t code[] = { 0x90, 0xe9, 0x10, 0x00, 0x00, 0x00,	/* 1: jmp +0x10 */
				 0x0f, 0x85, 0xf0, 0xff, 0xff, 0xff,	/* 6: jne -0x10 */
				 0x90, 0x90, 0x90, 0x90, 0x90 };
	uint64_t tgt;
	size_t at = 0;

	(void)state;
	assert_true(tk_py__next_jump(EM_X86_64, code, sizeof(code), &at, 0x1000, &tgt));
	assert_int_equal(tgt, 0x1000 + 1 + 5 + 0x10);
	assert_true(tk_py__next_jump(EM_X86_64, code, sizeof(code), &at, 0x1000, &tgt));
	assert_int_equal(tgt, 0x1000 + 6 + 6 - 0x10);
	assert_false(tk_py__next_jump(EM_X86_64, code, sizeof(code), &at, 0x1000, &tgt));
	at = 0;
	assert_false(tk_py__next_jump(EM_386, code, sizeof(code), &at, 0x1000, &tgt));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_glibc_layout),
		cmocka_unit_test(test_tp_off),
		cmocka_unit_test(test_tp_off_libc),
		cmocka_unit_test(test_tss_addr),
		cmocka_unit_test(test_jumps_a64),
		cmocka_unit_test(test_jumps_x86),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
