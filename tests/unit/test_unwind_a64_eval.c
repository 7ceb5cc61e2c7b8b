// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The user-space evaluator (tk_unw__walk) on arm64 stacks: synthetic stack
 * images walked with hand-made arm64 rows, one test per rule: the leaf's
 * return address in LR, saved at CFA - n (a frame record beside it), saved
 * against sp in a big frame, a CFA from x29, a signal frame (whose
 * interrupted frame is a leaf again: LR), pointer-authenticated return
 * addresses stripped, an LR row where LR is no longer the frame's, an sp
 * row after a frame record (which does not give the caller's sp on arm64),
 * and an x86 walk (no mask) that meets arm64 rows.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <string.h>

#include "unwind/unwind.h"

#define STACK 0x7ffd00000000ULL
#define STACK_SZ 16384

static uint8_t stack_mem[STACK_SZ];

static int img_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	if (addr < STACK || addr - STACK > STACK_SZ || len > STACK_SZ - (addr - STACK))
		return -EFAULT;
	memcpy(buf, stack_mem + (addr - STACK), len);
	return 0;
}

static void put(uint64_t addr, uint64_t v)
{
	assert_true(addr >= STACK && addr + 8 <= STACK + STACK_SZ);
	memcpy(stack_mem + (addr - STACK), &v, 8);
}

#define EXE 0x400000ULL
#define NOCFI 0x7f1000000000ULL
/* a pointer authentication code in bits 54..48 and 63..56 (bit 55: 0, a user address) */
#define PAC(a) ((a) | 0x3a00000000000000ULL | 0x002b000000000000ULL)
#define S(off) (STACK + 0x1000 + (off))

enum {
	F_LEAF = 0x1000,	/* a leaf: never saves LR */
	F_STP = 0x1100,		/* stp x29, x30, [sp, #-48]!: x29 at CFA-48, x30 at CFA-40 */
	F_BIG = 0x1200,		/* 8 KiB of locals, x30 at sp + 8 (CFA - 8216) */
	F_FP = 0x1300,		/* CFA = x29 + 16, the frame record at CFA - 16 */
	F_SIG = 0x1400,		/* __kernel_rt_sigreturn */
	F_START = 0x1500,	/* _start: return address undefined */
	F_LOST = 0x1600,	/* x30 at CFA-8, x29 saved where the rows cannot say */
	F_END = 0x2000,
};

#define A64 UNW_ROW_A64
#define ROW(p, k, c, r) { .pc = (p), .cfa_off = (c), .ra_off = (r), .kind = (k) }

static const struct unw_row rows[] = {
	ROW(F_LEAF, A64 | UNW_A64_RA_LR, 0, 0),
	ROW(F_STP, A64 | UNW_A64_RA_LR, 0, 0),
	ROW(F_STP + 4, A64 | UNW_A64_X29_PAIR, 48, -5),
	ROW(F_BIG, A64 | UNW_A64_RA_LR, 0, 0),
	ROW(F_BIG + 8, A64, 8224, 1),
	ROW(F_FP, A64 | UNW_A64_RA_LR, 0, 0),
	ROW(F_FP + 4, A64 | UNW_A64_X29_PAIR, 16, -1),
	ROW(F_FP + 8, A64 | UNW_A64_FP | UNW_A64_X29_PAIR, 16, -1),
	ROW(F_SIG, UNW_ROW_A64_SIGNAL, 0, 0),
	ROW(F_START, UNW_ROW_END, 0, 0),
	ROW(F_LOST, A64 | UNW_A64_X29_LOST, 32, -1),
	ROW(F_END, UNW_ROW_INVALID, 0, 0),
};

static struct unw_proc proc;

static int setup(void **state)
{
	memset(&proc, 0, sizeof(proc));
	memset(stack_mem, 0, sizeof(stack_mem));
	proc.maps[0] = (struct unw_map){ .start = EXE + 0x1000, .end = EXE + 0x3000, .bias = EXE,
					 .row_count = sizeof(rows) / sizeof(rows[0]) };
	proc.maps[1] = (struct unw_map){ .start = NOCFI, .end = NOCFI + 0x1000, .bias = NOCFI,
					 .flags = UNW_MAP_NO_CFI };
	proc.nr = 2;
	return 0;
}

struct result {
	uint64_t ips[16];
	int n;
	uint32_t causes;
	uint32_t frames[2];
};

static void walk(uint64_t ip, uint64_t sp, uint64_t x29, uint64_t lr, struct result *r)
{
	struct tk_unw_regs regs = { .ip = ip, .sp = sp, .bp = x29, .lr = lr,
				    .ra_mask = UNW_A64_RA_MASK };

	r->n = tk_unw__walk(&proc, rows, sizeof(rows) / sizeof(rows[0]), &regs, img_read, NULL,
			    r->ips, 16, &r->causes, r->frames);
}

/* The leaf's caller is in LR (signed: stripped); the caller saved x29/x30 at CFA-48/-40. */
static void test_leaf_lr_then_stp(void **state)
{
	struct result r;

	/* F_STP's frame: sp = S(0), CFA = S(48); _start's above it */
	put(S(0), S(0x200));			/* x29 of _start's frame */
	put(S(8), PAC(EXE + F_START + 8));	/* signed with paciasp */
	walk(EXE + F_LEAF + 8, S(0), S(0x100), PAC(EXE + F_STP + 0x20), &r);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.ips[0], EXE + F_LEAF + 8);
	assert_int_equal(r.ips[1], EXE + F_STP + 0x20);
	assert_int_equal(r.ips[2], EXE + F_START + 8);
	assert_int_equal(r.causes, UNW_C_END);
	assert_int_equal(r.frames[0], 2);
	assert_int_equal(r.frames[1], 0);
}

/*
 * An x86 walk (no mask) whose pc lies in an AArch64 object (qemu-user runs
 * one on x86): the arm64 rows do not apply, the frame goes by the frame pointer.
 */
static void test_x86_walk_ignores_a64_rows(void **state)
{
	struct tk_unw_regs regs = { .ip = EXE + F_LEAF + 8, .sp = S(0), .bp = 0,
				    .lr = EXE + F_STP + 0x20 };
	uint64_t ips[8];
	uint32_t causes;
	int n;

	n = tk_unw__walk(&proc, rows, sizeof(rows) / sizeof(rows[0]), &regs, img_read, NULL, ips,
			 8, &causes, NULL);
	assert_int_equal(n, 1);
	assert_int_equal(causes, UNW_C_UNSUPPORTED);
}

/* 8 KiB of locals: x30 at sp + 8 (ra_off against sp), the CFA 8224 above. */
static void test_big_frame(void **state)
{
	struct result r;

	put(S(8), EXE + F_START + 4);
	walk(EXE + F_BIG + 0x40, S(0), 0x1234, 0, &r);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.ips[1], EXE + F_START + 4);
	assert_int_equal(r.causes, UNW_C_END);
}

/* CFA from x29: sp moved (alloca) but x29 holds; the caller's x29 from the frame record. */
static void test_cfa_from_x29(void **state)
{
	struct result r;

	/* x29 = S(0x40): record {caller x29, x30} at S(0x40), CFA = S(0x50); sp far below */
	put(S(0x40), S(0x300));
	put(S(0x48), PAC(EXE + F_STP + 0x10));
	/* F_STP's frame at S(0x50): x29 at S(0x50), x30 at S(0x58), CFA S(0x80) */
	put(S(0x50), S(0x400));
	put(S(0x58), EXE + F_START + 8);
	walk(EXE + F_FP + 0x20, S(0), S(0x40), 0, &r);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.ips[1], EXE + F_STP + 0x10);
	assert_int_equal(r.ips[2], EXE + F_START + 8);
	assert_int_equal(r.causes, UNW_C_END);
}

/*
 * A signal interrupted a leaf: __kernel_rt_sigreturn's rt_sigframe gives its
 * pc, sp, x29 and LR, and the leaf's caller comes from that LR.
 */
static void test_signal_frame_then_leaf(void **state)
{
	uint64_t frame = S(0);
	struct result r;

	put(frame + UNW_A64_SC_PC, EXE + F_LEAF + 0x10);
	put(frame + UNW_A64_SC_SP, S(0x800));
	put(frame + UNW_A64_SC_X29, S(0x900));
	put(frame + UNW_A64_SC_LR, PAC(EXE + F_STP + 0x30));
	/* F_STP's frame at S(0x800): x30 at S(0x808) */
	put(S(0x800), S(0x900));
	put(S(0x808), EXE + F_START + 8);
	/*
	 * The handler (F_FP's rows, x29 = S(-0x10)) returns into the trampoline,
	 * whose frame is looked up at ip - 1; the rt_sigframe is at its sp.
	 */
	put(S(-0x10), S(0x900));
	put(S(-0x8), EXE + F_SIG + 4);
	walk(EXE + F_FP + 0x20, S(-0x40), S(-0x10), 0, &r);
	assert_int_equal(r.n, 5);
	assert_int_equal(r.ips[1], EXE + F_SIG + 4);
	assert_int_equal(r.ips[2], EXE + F_LEAF + 0x10);
	assert_int_equal(r.ips[3], EXE + F_STP + 0x30);
	assert_int_equal(r.ips[4], EXE + F_START + 8);
	assert_int_equal(r.causes, UNW_C_END);
	assert_int_equal(r.frames[0], 4);
}

/*
 * A return address into code whose row says "in LR" (a function that never
 * saves it, calling a noreturn function): LR is not this frame's, the frame
 * goes by its frame record, and that is counted.
 */
static void test_lr_row_not_leaf(void **state)
{
	struct result r;

	put(S(0), S(0x100));
	put(S(8), EXE + F_LEAF + 0x14);		/* F_STP's caller: "a leaf" */
	put(S(0x100), 0);
	put(S(0x108), EXE + F_START + 8);
	walk(EXE + F_STP + 0x20, S(0), S(0x100), EXE + 0x9999, &r);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.ips[1], EXE + F_LEAF + 0x14);
	/* not LR (0x9999): by the record at x29 = S(0x100) */
	assert_int_equal(r.ips[2], EXE + F_START + 8);
	assert_true(r.causes & UNW_C_UNSUPPORTED);
	assert_int_equal(r.frames[1], 1);
}

/*
 * A frame without CFI goes by its frame record, which on arm64 sits at the
 * bottom of the caller's frame: the sp it gives is not the caller's, so the
 * caller's sp row is not used (by record again, counted); an x29 row is.
 */
static void test_sp_row_after_frame_record(void **state)
{
	struct result r;

	/* NOCFI leaf: x29 = S(0x20), record {S(0x100), RA into F_STP} */
	put(S(0x20), S(0x100));
	put(S(0x28), EXE + F_STP + 0x20);
	/* F_STP (sp row): not used; its record at x29 = S(0x100) → F_FP */
	put(S(0x100), S(0x200));
	put(S(0x108), EXE + F_FP + 0x20);
	/* F_FP: CFA = x29 + 16 = S(0x210), x30 at S(0x208), caller x29 at S(0x200) */
	put(S(0x200), 0);
	put(S(0x208), EXE + F_START + 8);
	walk(NOCFI + 0x10, S(0), S(0x20), EXE + 0x9999, &r);
	assert_int_equal(r.n, 4);
	assert_int_equal(r.ips[1], EXE + F_STP + 0x20);
	assert_int_equal(r.ips[2], EXE + F_FP + 0x20);
	assert_int_equal(r.ips[3], EXE + F_START + 8);
	assert_int_equal(r.causes, UNW_C_FP | UNW_C_UNSUPPORTED | UNW_C_END);
	assert_int_equal(r.frames[0], 1);
	assert_int_equal(r.frames[1], 2);
}

/* x29 saved where the rows cannot say: the caller's x29 is 0, its x29 row stops there. */
static void test_x29_lost(void **state)
{
	struct result r;

	put(S(0x18), EXE + F_FP + 0x20);	/* CFA = S(0x20), x30 at CFA - 8 */
	walk(EXE + F_LOST + 8, S(0), S(0x500), 0, &r);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.ips[1], EXE + F_FP + 0x20);
	assert_true(r.causes & UNW_C_BAD_FRAME);
}

/*
 * The PAC mask the kernel reports (NT_ARM_PAC_MASK's insn_mask, GENMASK(54, vabits)): the
 * strip keeps the bits below it. On a 52-bit VA kernel (Debian's 6.12 on a CPU with LVA:
 * 0x0070000000000000) code may lie above 2^48, where a 48-bit strip cuts its addresses.
 */
static void test_pac_mask(void **state)
{
	const uint64_t high = 0x0004000000000000ULL;	/* 2^50, as a64_high_code maps it */
	const uint64_t m52 = tk_unw_ra_mask_of(0x0070000000000000ULL);
	struct tk_unw_regs regs = { .ip = EXE + F_LEAF + 8, .sp = S(0), .bp = S(0),
				    .lr = (high + 0x10) | 0x3a50000000000000ULL };
	struct result r;
	const char *how = "";

	assert_int_equal(tk_unw_ra_mask_of(0x007f000000000000ULL), (1ULL << 48) - 1);
	assert_int_equal(m52, (1ULL << 52) - 1);
	assert_int_equal(tk_unw_ra_mask_of(0x007e000000000000ULL), (1ULL << 49) - 1);
	/* not GENMASK(54, b) with b >= 32: no mask */
	assert_int_equal(tk_unw_ra_mask_of(0), 0);
	assert_int_equal(tk_unw_ra_mask_of(0x00ff000000000000ULL), 0);	/* bit 55 */
	assert_int_equal(tk_unw_ra_mask_of(0x0050000000000000ULL), 0);	/* a hole */
	assert_int_equal(tk_unw_ra_mask_of(0x003f000000000000ULL), 0);	/* not up to 54 */
	assert_int_equal(tk_unw_ra_mask_of(0x007fffffff000000ULL), 0);	/* below bit 32 */
#if !defined(__aarch64__)
	/* x86-64: no mask, nothing said */
	assert_int_equal(tk_unw_ra_mask(&how), 0);
	assert_null(how);
#endif
	/* the leaf's LR into code of no CFI at 2^50, its frame record to _start */
	proc.maps[2] = (struct unw_map){ .start = high, .end = high + 0x1000, .bias = high,
					 .flags = UNW_MAP_NO_CFI };
	proc.nr = 3;
	put(S(0), 0);
	/* a 52-bit kernel's PAC: bits 54..52 (and the top byte) */
	put(S(8), (EXE + F_START + 8) | 0x3a50000000000000ULL);
	regs.ra_mask = m52;
	r.n = tk_unw__walk(&proc, rows, sizeof(rows) / sizeof(rows[0]), &regs, img_read, NULL,
			   r.ips, 16, &r.causes, r.frames);
	assert_int_equal(r.n, 3);
	assert_int_equal(r.ips[1], high + 0x10);
	assert_int_equal(r.ips[2], EXE + F_START + 8);
	assert_true(r.causes & UNW_C_END);
	/* 48 bits: the frame at 2^50 is cut to an address of nothing */
	regs.ra_mask = UNW_A64_RA_MASK;
	r.n = tk_unw__walk(&proc, rows, sizeof(rows) / sizeof(rows[0]), &regs, img_read, NULL,
			   r.ips, 16, &r.causes, r.frames);
	assert_true(r.n >= 2);
	assert_int_equal(r.ips[1], 0x10);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_leaf_lr_then_stp, setup),
		cmocka_unit_test_setup(test_x86_walk_ignores_a64_rows, setup),
		cmocka_unit_test_setup(test_big_frame, setup),
		cmocka_unit_test_setup(test_cfa_from_x29, setup),
		cmocka_unit_test_setup(test_signal_frame_then_leaf, setup),
		cmocka_unit_test_setup(test_lr_row_not_leaf, setup),
		cmocka_unit_test_setup(test_sp_row_after_frame_record, setup),
		cmocka_unit_test_setup(test_x29_lost, setup),
		cmocka_unit_test_setup(test_pac_mask, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
