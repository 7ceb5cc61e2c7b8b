// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * One table format, two evaluators: the same stack images through the BPF
 * evaluator (bpf/unwind.bpf.h, run in the kernel by BPF_PROG_TEST_RUN over
 * this process's memory) and the user-space one (tk_unw__walk, the perf
 * fallback's), which must give the same frames, the same causes and the same
 * frame counts. Images: hand-made ones for every row kind and every cause,
 * and this process's own live stack with the real tables of this binary and
 * of Debian's libc (built without frame pointers), whose frames must also be
 * the known chain up to _start; and arm64 images (LR, frame records, x29
 * CFAs, the signal frame, PAC-signed return addresses), which unwind_check
 * walks on this x86 kernel too.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <stdarg.h>
#include <setjmp.h>
#include <cmocka.h>

#include "spawn.h"
#include "sym/symbolize.h"
#include "unwind/unwind.h"
#include "unwind/unwind_bpf.h"

#define BASE 0x100000ULL	/* where the hand-made tables' object is "mapped" */

static struct tk_unw_check *chk;
static struct unw_row *krows;	/* the BPF rows array, mapped */
static size_t kcap;

/* The user-space evaluator's reader: this process's memory, inside [lo, hi). */
struct image {
	uint64_t lo, hi;
};

static int read_image(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct image *im = ctx;

	if (addr < im->lo || addr + len > im->hi || addr + len < addr)
		return -EFAULT;
	memcpy(buf, (const void *)(uintptr_t)addr, len);
	return 0;
}

struct walk {
	uint64_t ips[UNW_MAX_FRAMES];
	int n;
	uint32_t causes;
	uint32_t frames[2];
};

/* Both evaluators on one image; they must agree in everything. */
static void both(const struct unw_proc *proc, const struct unw_row *rows, size_t nr_rows,
		 const struct tk_unw_regs *regs, const struct image *im, struct walk *k)
{
	struct walk u = {};
	int i;

	if (rows != krows)
		memcpy(krows, rows, nr_rows * sizeof(*rows));
	k->n = tk_unw_check__walk(chk, proc, regs, 0, k->ips, UNW_MAX_FRAMES, &k->causes,
				  k->frames);
	assert_true(k->n >= 0);
	u.n = tk_unw__walk(proc, rows, nr_rows, regs, read_image, (void *)im, u.ips,
			   UNW_MAX_FRAMES, &u.causes, u.frames);
	print_message("  kernel: %d frames, causes 0x%x, %u by CFI, %u by rbp; user space: %d, "
		      "0x%x, %u, %u\n", k->n, k->causes, k->frames[0], k->frames[1], u.n, u.causes,
		      u.frames[0], u.frames[1]);
	assert_int_equal(k->n, u.n);
	for (i = 0; i < k->n; i++)
		assert_int_equal(k->ips[i], u.ips[i]);
	assert_int_equal(k->causes, u.causes);
	assert_int_equal(k->frames[0], u.frames[0]);
	assert_int_equal(k->frames[1], u.frames[1]);
}

/* ---- hand-made images ------------------------------------------------------------------- */

static uint64_t stk[64];

static const struct unw_row rows[] = {
	{ .pc = 0x000, .cfa_off = 16, .kind = UNW_ROW_SP },			/* 0 */
	{ .pc = 0x100, .cfa_off = 16, .rbp_off = -2, .kind = UNW_ROW_FP },	/* 1 */
	{ .pc = 0x200, .cfa_off = 11, .kind = UNW_ROW_PLT },			/* 2 */
	{ .pc = 0x300, .cfa_off = -8, .rbp_off = -2, .kind = UNW_ROW_DEREF_FP },	/* 3 */
	{ .pc = 0x400, .kind = UNW_ROW_SIGNAL },				/* 4 */
	{ .pc = 0x500, .kind = UNW_ROW_INVALID },				/* 5: a gap */
	{ .pc = 0x600, .kind = UNW_ROW_UNSUPPORTED },				/* 6 */
	{ .pc = 0x700, .cfa_off = 8, .rbp_off = UNW_RBP_LOST, .kind = UNW_ROW_SP }, /* 7 */
	{ .pc = 0x800, .cfa_off = -8, .rbp_off = 0, .kind = UNW_ROW_DRAP },	/* 8 */
	{ .pc = 0xf00, .kind = UNW_ROW_END },					/* 9 */
};
#define NR_ROWS (sizeof(rows) / sizeof(rows[0]))

static struct unw_proc *proc_of(uint32_t extra_flags)
{
	static struct unw_proc p;

	memset(&p, 0, sizeof(p));
	p.nr = 3;
	p.maps[0] = (struct unw_map){ .start = BASE, .end = BASE + 0x1000, .bias = BASE,
				      .row_start = 0, .row_count = NR_ROWS };
	p.maps[1] = (struct unw_map){ .start = BASE + 0x10000, .end = BASE + 0x11000,
				      .flags = UNW_MAP_NO_CFI };
	p.maps[2] = (struct unw_map){ .start = BASE + 0x20000, .end = BASE + 0x21000,
				      .flags = UNW_MAP_PENDING | extra_flags };
	return &p;
}

#define A(i) ((uint64_t)(uintptr_t)&stk[i])
static const struct image stk_image = { (uintptr_t)&stk[0], (uintptr_t)&stk[64] };

/* SP → FP (rbp saved) → PLT (rip & 15 >= 11) → an object without CFI (rbp) → END */
static void test_kinds_and_fp(void **state)
{
	struct tk_unw_regs r = { .ip = BASE + 0x10, .sp = A(0), .bp = A(4) };
	struct walk k;

	NEED_ROOT();
	memset(stk, 0, sizeof(stk));
	stk[1] = BASE + 0x110;
	stk[5] = BASE + 0x20b;
	stk[4] = A(12);
	stk[7] = BASE + 0x10010;
	stk[13] = BASE + 0xf01;
	both(proc_of(0), rows, NR_ROWS, &r, &stk_image, &k);
	assert_int_equal(k.n, 5);
	assert_true(k.causes & UNW_C_END);
	assert_true(k.causes & UNW_C_FP);
}

/* PLT below its threshold, DEREF_FP (realigned stack), then a signal frame, then a pending table */
static void test_plt_deref_signal_pending(void **state)
{
	struct tk_unw_regs r = { .ip = BASE + 0x205, .sp = A(0), .bp = A(10) };
	struct walk k;

	NEED_ROOT();
	memset(stk, 0, sizeof(stk));
	/* PLT, rip & 15 == 5 < 11: CFA = sp + 8, ra at stk[0] */
	stk[0] = BASE + 0x310;
	/* DEREF_FP: CFA = *(rbp - 8) = A(16); ra at stk[15]; rbp at CFA - 16 = stk[14] */
	stk[9] = A(16);
	stk[15] = BASE + 0x401;
	stk[14] = A(40);
	/* SIGNAL at sp = A(16): the ucontext's rip, rsp, rbp */
	stk[16 + UNW_SC_RIP / 8] = BASE + 0x20010;
	stk[16 + UNW_SC_RSP / 8] = A(44);
	stk[16 + UNW_SC_RBP / 8] = A(46);
	/* PENDING: by rbp = A(46) */
	stk[47] = BASE + 0x10;
	stk[46] = A(50);
	/* then SP: ra at A(45)? sp is now A(48): CFA = A(50), ra at stk[49] */
	stk[49] = 0;
	both(proc_of(0), rows, NR_ROWS, &r, &stk_image, &k);
	assert_true(k.causes & UNW_C_NOT_LOADED);
	assert_true(k.n >= 5);
}

/* a gap (INVALID), an unsupported row, rbp lost, no mapping */
static void test_gap_unsupported_lost_nomap(void **state)
{
	struct tk_unw_regs r = { .ip = BASE + 0x510, .sp = A(0), .bp = A(2) };
	struct walk k;

	NEED_ROOT();
	memset(stk, 0, sizeof(stk));
	/* INVALID → by rbp = A(2): ra stk[3], next rbp stk[2] */
	stk[3] = BASE + 0x611;
	stk[2] = A(6);
	/* UNSUPPORTED → by rbp = A(6): ra stk[7], rbp stk[6] */
	stk[7] = BASE + 0x711;
	stk[6] = A(20);
	/* SP + 8 with rbp lost: sp = A(8); ra at stk[8] */
	stk[8] = 0x7000;	/* in no mapping: stop */
	both(proc_of(0), rows, NR_ROWS, &r, &stk_image, &k);
	assert_int_equal(k.n, 4);
	assert_true(k.causes & UNW_C_NO_ROW);
	assert_true(k.causes & UNW_C_UNSUPPORTED);
	assert_true(k.causes & UNW_C_NO_MAPPING);
}

/* no entry for the process: frame pointers all the way; a read fault; a bad frame */
static void test_no_proc_fault_bad(void **state)
{
	struct tk_unw_regs r = { .ip = BASE + 0x10, .sp = A(0), .bp = A(2) };
	struct walk k;

	NEED_ROOT();
	memset(stk, 0, sizeof(stk));
	stk[3] = BASE + 0x20;
	stk[2] = A(62);		/* ra at A(63), then rbp outside the image (a fault in user space) */
	stk[63] = BASE + 0x30;
	stk[62] = 8;		/* an address nothing maps: the kernel faults too */
	both(NULL, rows, NR_ROWS, &r, &stk_image, &k);
	assert_true(k.causes & UNW_C_NO_PROC);
	assert_true(k.causes & (UNW_C_READ_FAULT | UNW_C_BAD_FRAME));
	/* a CFA that does not go up: stopped */
	memset(stk, 0, sizeof(stk));
	r = (struct tk_unw_regs){ .ip = BASE + 0x110, .sp = A(10), .bp = A(2) };
	both(proc_of(0), rows, NR_ROWS, &r, &stk_image, &k);
	assert_true(k.causes & UNW_C_BAD_FRAME);
}

/*
 * The ip a signal interrupted is looked up as it is (not one byte before, as
 * a return address): here it starts the FP row, one byte before is the SP
 * row. And a row whose rbp slot lies below the stack pointer (an epilogue
 * past its pop) keeps rbp as it is.
 */
static void test_signal_exact_and_epilogue(void **state)
{
	struct tk_unw_regs r = { .ip = BASE + 0x410, .sp = A(0), .bp = 0 };
	struct walk k;

	NEED_ROOT();
	memset(stk, 0, sizeof(stk));
	/* SIGNAL at sp = A(0): interrupted at BASE + 0x100 (FP row), rsp A(40), rbp A(42) */
	stk[UNW_SC_RIP / 8] = BASE + 0x100;
	stk[UNW_SC_RSP / 8] = A(40);
	stk[UNW_SC_RBP / 8] = A(42);
	/* FP row: CFA = rbp + 16 = A(44); ra at stk[43]; rbp saved at CFA - 16 = stk[42] */
	stk[43] = BASE + 0x711;
	stk[42] = A(50);
	/* row 7 (SP + 8, rbp lost) at sp = A(44): ra at stk[44] */
	stk[44] = BASE + 0xf01;
	both(proc_of(0), rows, NR_ROWS, &r, &stk_image, &k);
	assert_int_equal(k.n, 4);
	assert_int_equal(k.ips[2], BASE + 0x711);
	assert_true(k.causes & UNW_C_END);

	/* the FP row with rbp saved at A(2) while sp is A(4): popped already */
	memset(stk, 0, sizeof(stk));
	r = (struct tk_unw_regs){ .ip = BASE + 0x110, .sp = A(4), .bp = A(2) };
	/* CFA = rbp + 16 = A(4)... must be above sp: use rbp = A(4): CFA = A(6), slot A(4) = sp */
	r.bp = A(6);	/* CFA = A(8), rbp slot A(6) >= sp: read */
	stk[7] = BASE + 0x10;
	stk[6] = A(30);
	both(proc_of(0), rows, NR_ROWS, &r, &stk_image, &k);
	assert_true(k.n >= 2);
	r = (struct tk_unw_regs){ .ip = BASE + 0x110, .sp = A(7), .bp = A(6) };
	/* CFA = A(8), slot A(6) < sp A(7): rbp stays A(6) */
	both(proc_of(0), rows, NR_ROWS, &r, &stk_image, &k);
	assert_true(k.n >= 2);
}

/*
 * gcc's realigned stack: CFA = *(rbp - 8), the caller's rbp where rbp points;
 * the caller then needs that rbp (an FP row).
 */
static void test_drap(void **state)
{
	struct tk_unw_regs r = { .ip = BASE + 0x810, .sp = A(0), .bp = A(8) };
	struct walk k;

	NEED_ROOT();
	memset(stk, 0, sizeof(stk));
	stk[7] = A(20);			/* *(rbp - 8): the CFA */
	stk[19] = BASE + 0x110;		/* ra at CFA - 8 */
	stk[8] = A(30);			/* the caller's rbp, at rbp + 0 */
	/* FP row at rbp A(30): CFA A(32), ra stk[31], rbp at stk[30] */
	stk[31] = BASE + 0xf01;
	both(proc_of(0), rows, NR_ROWS, &r, &stk_image, &k);
	assert_int_equal(k.n, 3);
	assert_int_equal(k.ips[2], BASE + 0xf01);
	assert_true(k.causes & UNW_C_END);
}

/* a loop of frames by rbp that never ends: the depth limit */
static void test_depth(void **state)
{
	static uint64_t deep[2 * UNW_MAX_FRAMES + 8];
	struct image im = { (uintptr_t)&deep[0], (uintptr_t)&deep[2 * UNW_MAX_FRAMES + 8] };
	struct tk_unw_regs r = { .ip = BASE + 0x10010, .sp = (uintptr_t)&deep[0],
				 .bp = (uintptr_t)&deep[0] };
	struct walk k;
	int i;

	NEED_ROOT();
	for (i = 0; i < UNW_MAX_FRAMES + 3; i++) {
		deep[2 * i] = (uintptr_t)&deep[2 * i + 2];
		deep[2 * i + 1] = BASE + 0x10010 + i;
	}
	both(proc_of(0), rows, NR_ROWS, &r, &im, &k);
	assert_int_equal(k.n, UNW_MAX_FRAMES);
	assert_true(k.causes & UNW_C_DEPTH);
}

/*
 * A table of 2^24 rows (128 MiB: --unwind-mem admits 32 times that) whose
 * row for the address is its first: 24 steps of binary search never reached
 * it (the search covered tables below 2^24 rows in every case); both
 * evaluators must find it.
 */
static void test_row_search_large_table(void **state)
{
	const size_t n = 1u << 24;
	struct tk_unw_regs r = { .ip = BASE + 0x10, .sp = A(0), .bp = 0 };
	struct tk_unw_check *big;
	struct unw_row *kr;
	static struct unw_proc p;
	struct walk k = {}, u = {};
	char why[256];
	size_t cap, i;

	NEED_ROOT();
	if (tk_unw_check__open(n, &big, why, sizeof(why)))
		fail_msg("cannot load the BPF evaluator with %zu rows: %s", n, why);
	kr = tk_unw_check__rows(big, &cap);
	assert_true(cap >= n);
	kr[0] = (struct unw_row){ .pc = 0, .cfa_off = 8, .kind = UNW_ROW_SP };
	for (i = 1; i < n; i++)
		kr[i] = (struct unw_row){ .pc = 0x100, .kind = UNW_ROW_INVALID };
	memset(&p, 0, sizeof(p));
	p.nr = 1;
	p.maps[0] = (struct unw_map){ .start = BASE, .end = BASE + 0x1000, .bias = BASE,
				      .row_start = 0, .row_count = n };
	memset(stk, 0, sizeof(stk));	/* the return address: 0, the end */
	k.n = tk_unw_check__walk(big, &p, &r, 0, k.ips, UNW_MAX_FRAMES, &k.causes, k.frames);
	u.n = tk_unw__walk(&p, kr, n, &r, read_image, (void *)&stk_image, u.ips, UNW_MAX_FRAMES,
			   &u.causes, u.frames);
	tk_unw_check__free(big);
	print_message("  kernel: %d frames, causes 0x%x, %u by CFI; user space: %d, 0x%x, %u\n",
		      k.n, k.causes, k.frames[0], u.n, u.causes, u.frames[0]);
	assert_int_equal(k.n, 1);
	assert_int_equal(k.causes, 0);
	assert_int_equal(k.frames[0], 1);
	assert_int_equal(u.n, 1);
	assert_int_equal(u.causes, 0);
	assert_int_equal(u.frames[0], 1);
}

/*
 * Rows in chunks (bpf/unwind.bpf.h's unw_chunks): the selftest's known
 * stack with its table across the first two chunks and inside the second;
 * and a table over three chunks whose row for the address is in the middle
 * one, found by both evaluators.
 */
static void test_rows_across_chunks(void **state)
{
	const uint32_t start = UNW_CHUNK_ROWS / 2, n = 2 * UNW_CHUNK_ROWS + 100;
	const uint32_t hit = UNW_CHUNK_ROWS + 123;	/* in chunk 1 */
	struct tk_unw_regs r = { .sp = A(0), .bp = 0 };
	struct tk_unw_check *chk3;
	struct unw_row *kr;
	static struct unw_proc p;
	struct walk k = {}, u = {};
	char why[256];
	size_t cap, i;

	NEED_ROOT();
	if (tk_unw_check__selftest(why, sizeof(why)))
		fail_msg("selftest: %s", why);
	if (tk_unw_check__open(4 * UNW_CHUNK_ROWS, &chk3, why, sizeof(why)))
		fail_msg("cannot load the BPF evaluator: %s", why);
	kr = tk_unw_check__rows(chk3, &cap);
	assert_true(cap >= 4 * UNW_CHUNK_ROWS);
	for (i = 0; i < n; i++)
		kr[start + i] = (struct unw_row){ .pc = 4 * i, .kind = UNW_ROW_INVALID };
	kr[hit] = (struct unw_row){ .pc = 4 * (hit - start), .cfa_off = 8, .kind = UNW_ROW_SP };
	memset(&p, 0, sizeof(p));
	p.nr = 1;
	p.maps[0] = (struct unw_map){ .start = BASE, .end = BASE + 4 * n, .bias = BASE,
				      .row_start = start, .row_count = n };
	r.ip = BASE + 4 * (hit - start) + 2;
	memset(stk, 0, sizeof(stk));	/* the return address: 0, the end */
	k.n = tk_unw_check__walk(chk3, &p, &r, 0, k.ips, UNW_MAX_FRAMES, &k.causes, k.frames);
	u.n = tk_unw__walk(&p, kr, cap, &r, read_image, (void *)&stk_image, u.ips, UNW_MAX_FRAMES,
			   &u.causes, u.frames);
	tk_unw_check__free(chk3);
	print_message("  kernel: %d frames, causes 0x%x, %u by CFI; user space: %d, 0x%x, %u\n",
		      k.n, k.causes, k.frames[0], u.n, u.causes, u.frames[0]);
	assert_int_equal(k.n, 1);
	assert_int_equal(k.causes, 0);
	assert_int_equal(k.frames[0], 1);
	assert_int_equal(u.n, 1);
	assert_int_equal(u.causes, 0);
	assert_int_equal(u.frames[0], 1);
}

/*
 * A miss (an address in no mapping) asks user space for a capture once, and
 * again once UNW_MISS_RESEND_NS passed with no capture (the entry not
 * rewritten): the ring buffer may have refused the first. An entry past
 * UNW_MAX_MAPS asks nothing.
 */
static void test_miss_resent(void **state)
{
	struct tk_unw_regs r = { .ip = 0x7000, .sp = A(0), .bp = 0 };
	struct unw_proc *p = proc_of(0);
	struct timespec ts;
	struct walk k;
	uint64_t now;

	NEED_ROOT();
	memset(stk, 0, sizeof(stk));
	k.n = tk_unw_check__walk(chk, p, &r, 0, k.ips, UNW_MAX_FRAMES, &k.causes, k.frames);
	assert_int_equal(k.n, 1);
	assert_true(k.causes & UNW_C_NO_MAPPING);
	assert_true(tk_unw_check__missed(chk));
	/* sent a second ago (bpf_ktime_get_ns is CLOCK_MONOTONIC): not again yet */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	p->miss_ns = now - 1000000000;
	k.n = tk_unw_check__walk(chk, p, &r, 0, k.ips, UNW_MAX_FRAMES, &k.causes, k.frames);
	assert_false(tk_unw_check__missed(chk));
	/* sent three seconds ago and no capture since: again */
	p->miss_ns = now - 3000000000ULL;
	k.n = tk_unw_check__walk(chk, p, &r, 0, k.ips, UNW_MAX_FRAMES, &k.causes, k.frames);
	assert_true(tk_unw_check__missed(chk));
	/* an entry that left mappings out: by rbp, counted as such, no miss */
	p->miss_ns = 0;
	p->flags = UNW_PROC_OVERFLOW;
	k.n = tk_unw_check__walk(chk, p, &r, 0, k.ips, UNW_MAX_FRAMES, &k.causes, k.frames);
	assert_true(k.causes & UNW_C_LEFT_OUT);
	assert_false(k.causes & UNW_C_NO_MAPPING);
	assert_false(tk_unw_check__missed(chk));
}

/* ---- this process's own stack, real tables ------------------------------------------------ */

static struct tk_symbolizer *sym;
static struct tk_unw_store *store;

#define NOINLINE __attribute__((noinline, noclone, optimize("omit-frame-pointer")))

static struct walk live;
static struct unw_proc self;
volatile int sink;

/* The leaf: its registers here, the frames above it live while both evaluators walk. */
NOINLINE void live_leaf(void)
{
	struct tk_unw_regs r;
	struct image im;
	size_t nr;
	const struct unw_row *all = tk_unw_store__rows(store, &nr);

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(r.ip), "=r"(r.sp), "=r"(r.bp));
	im.lo = r.sp;
	im.hi = r.sp + (1 << 20);	/* the rest of the main thread's stack */
	both(&self, all, nr, &r, &im, &live);
	sink++;
}

NOINLINE void live_mid(int n)
{
	if (n)
		live_mid(n - 1);
	else
		live_leaf();
	sink++;
}

/*
 * A realigned stack with a stack argument and a variable-length array: gcc
 * realigns it through DRAP (CFA = *(rbp - 8), rbp saved by an expression).
 */
NOINLINE void live_drap(long a, long b, long c, long d, long e, long f, long g, int n)
{
	char vla[n];
	char big[64] __attribute__((aligned(64)));

	memset(vla, (int)g, n);
	memset(big, (int)a, sizeof(big));
	__asm__ volatile("" : : "r"(vla), "r"(big) : "memory");
	live_mid(2);
	sink += b + c + d + e + f;
}

/* alloca: this one keeps its CFA by rbp, which the DRAP frame below must give back */
NOINLINE void live_alloca(int n)
{
	char *p = __builtin_alloca(n);

	memset(p, 1, n);
	__asm__ volatile("" : : "r"(p) : "memory");
	live_drap(1, 2, 3, 4, 5, 6, 7, n);
	sink++;
}

NOINLINE void live_top(void)
{
	live_alloca(100);
	sink++;
}

static void test_live_stack(void **state)
{
	const char *want[] = { "live_leaf", "live_mid",	   "live_mid", "live_mid",
			       "live_drap", "live_alloca", "live_top", "test_live_stack" };
	struct tk_symbolizer_opts so = { .sz = sizeof(so), .unwind_tables = true };
	struct tk_sym_frame f;
	bool have_main = false, have_start = false;
	size_t i;

	NEED_ROOT();
	assert_int_equal(tk_symbolizer__new(&so, &sym), 0);
	assert_int_equal(tk_symbolizer__capture(sym, getpid(), 0), 0);
	assert_int_equal(tk_unw_store__new(krows, kcap, &store), 0);
	assert_int_equal(tk_unw_store__proc(store, sym, getpid(), 0, &self), 0);
	live_top();
	for (i = 0; i < (size_t)live.n; i++) {
		int err = tk_symbolizer__user(sym, getpid(), 0, i ? live.ips[i] - 1 : live.ips[i],
					      &f);

		print_message("  #%zu %#llx %s (%s)\n", i, (unsigned long long)live.ips[i],
			      err ? "?" : f.function, f.module ? f.module : "?");
		if (i < sizeof(want) / sizeof(want[0])) {
			assert_int_equal(err, 0);
			assert_string_equal(f.function, want[i]);
		}
		if (!err && !strcmp(f.function, "main"))
			have_main = true;
		if (!err && !strcmp(f.function, "_start"))
			have_start = true;
	}
	/* through cmocka's and libc's frames (no frame pointers) to main and _start */
	assert_true(have_main);
	assert_true(have_start);
	assert_true(live.causes & UNW_C_END);
	assert_int_equal(live.frames[1], 0);	/* every frame by a row */
	tk_unw_store__free(store);
	tk_symbolizer__free(sym);
}

static int setup(void **state)
{
	char why[256];

	if (geteuid() != 0)
		return 0;
	if (tk_unw_check__open(1 << 20, &chk, why, sizeof(why))) {
		fprintf(stderr, "cannot load the BPF evaluator: %s\n", why);
		return -1;
	}
	krows = tk_unw_check__rows(chk, &kcap);
	return 0;
}

static int teardown(void **state)
{
	tk_unw_check__free(chk);
	return 0;
}

/* ---- arm64 images (bpf/unwind.h's arm64 rows; unwind_check compiles them in on x86) ------- */

#define A64R(p, k, c, r) { .pc = (p), .cfa_off = (c), .ra_off = (r), .kind = UNW_ROW_A64 | (k) }
#define PAC(a) ((a) | 0x2700000000000000ULL | 0x0015000000000000ULL)

static const struct unw_row a64_rows[] = {
	A64R(0x000, UNW_A64_RA_LR, 0, 0),			/* a leaf */
	A64R(0x100, UNW_A64_X29_PAIR, 48, -5),			/* stp x29, x30, [sp, -48]! */
	A64R(0x200, 0, 544, 1),					/* x30 at sp + 8 */
	A64R(0x300, UNW_A64_FP | UNW_A64_X29_PAIR, 16, -1),	/* CFA = x29 + 16 */
	{ .pc = 0x400, .kind = UNW_ROW_A64_SIGNAL },		/* __kernel_rt_sigreturn */
	{ .pc = 0x500, .kind = UNW_ROW_END },
};
#define A64_NR (sizeof(a64_rows) / sizeof(a64_rows[0]))

static uint64_t a64stk[1024];
#define S(off) ((uint64_t)(uintptr_t)a64stk + (off))
static const struct image a64_image = { (uintptr_t)&a64stk[0], (uintptr_t)&a64stk[1024] };

static void a64_put(uint64_t addr, uint64_t v)
{
	assert_true(addr >= S(0) && addr + 8 <= S(sizeof(a64stk)));
	memcpy((void *)(uintptr_t)addr, &v, 8);
}

static struct unw_proc *a64_proc(void)
{
	struct unw_proc *p = proc_of(0);

	p->maps[0].row_count = A64_NR;
	return p;
}

/*
 * A leaf (LR) <- a frame record frame (x30 at CFA-40, PAC-signed) <- x30 at sp+8
 * <- a CFA from x29 <- the signal trampoline <- the interrupted leaf (its LR
 * from the rt_sigframe) <- the frame record frame <- END.
 */
static void test_a64_chain(void **state)
{
	const uint64_t sp1 = S(48), sp2 = S(48 + 544), x1 = sp2 + 48, sp3 = sp2 + 64;
	const uint64_t s4 = sp3 + 640;
	const uint64_t want[] = { BASE + 0x010, BASE + 0x120, BASE + 0x210, BASE + 0x310,
				  BASE + 0x404, BASE + 0x020, BASE + 0x130, BASE + 0x504 };
	struct tk_unw_regs r = { .ip = BASE + 0x010, .sp = S(0), .bp = 0x1234,
				 .lr = PAC(BASE + 0x120), .ra_mask = UNW_A64_RA_MASK };
	struct walk k;
	size_t i;

	memset(a64stk, 0, sizeof(a64stk));
	a64_put(S(0), x1);				/* the record: the caller's x29 */
	a64_put(S(8), PAC(BASE + 0x210));
	a64_put(sp1 + 8, BASE + 0x310);
	a64_put(x1, 0x5678);				/* x29's record at CFA - 16 */
	a64_put(x1 + 8, PAC(BASE + 0x404));
	a64_put(sp3 + UNW_A64_SC_PC, BASE + 0x020);
	a64_put(sp3 + UNW_A64_SC_SP, s4);
	a64_put(sp3 + UNW_A64_SC_X29, 0x9abc);
	a64_put(sp3 + UNW_A64_SC_LR, PAC(BASE + 0x130));
	a64_put(s4, 0);
	a64_put(s4 + 8, PAC(BASE + 0x504));
	both(a64_proc(), a64_rows, A64_NR, &r, &a64_image, &k);
	assert_int_equal(k.n, sizeof(want) / sizeof(want[0]));
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_int_equal(k.ips[i], want[i]);
	assert_int_equal(k.causes, UNW_C_END);
	assert_int_equal(k.frames[0], 7);
}

/*
 * A frame without CFI (by record), then an sp row (not after a record: by
 * record again), an x29 row, an LR row above the leaf (by record), END; and
 * the same image walked as x86's (no mask): the arm64 rows do not apply.
 */
static void test_a64_records(void **state)
{
	const uint64_t want[] = { BASE + 0x10010, BASE + 0x120, BASE + 0x320, BASE + 0x030,
				  BASE + 0x504 };
	struct tk_unw_regs r = { .ip = BASE + 0x10010, .sp = S(0), .bp = S(0x40),
				 .lr = BASE + 0x999, .ra_mask = UNW_A64_RA_MASK };
	struct walk k;
	size_t i;

	memset(a64stk, 0, sizeof(a64stk));
	a64_put(S(0x40), S(0x80));
	a64_put(S(0x48), PAC(BASE + 0x120));
	a64_put(S(0x80), S(0xc0));
	a64_put(S(0x88), BASE + 0x320);
	a64_put(S(0xc0), S(0x100));			/* x29 row: CFA = S(0xd0) */
	a64_put(S(0xc8), BASE + 0x030);
	a64_put(S(0x100), 0);
	a64_put(S(0x108), PAC(BASE + 0x504));
	both(a64_proc(), a64_rows, A64_NR, &r, &a64_image, &k);
	assert_int_equal(k.n, sizeof(want) / sizeof(want[0]));
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		assert_int_equal(k.ips[i], want[i]);
	assert_int_equal(k.causes, UNW_C_FP | UNW_C_UNSUPPORTED | UNW_C_END);
	assert_int_equal(k.frames[0], 1);
	assert_int_equal(k.frames[1], 3);

	r.ip = BASE + 0x010;
	r.ra_mask = 0;
	r.bp = 0;
	both(a64_proc(), a64_rows, A64_NR, &r, &a64_image, &k);
	assert_int_equal(k.n, 1);
	assert_int_equal(k.causes, UNW_C_UNSUPPORTED);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kinds_and_fp),
		cmocka_unit_test(test_plt_deref_signal_pending),
		cmocka_unit_test(test_gap_unsupported_lost_nomap),
		cmocka_unit_test(test_no_proc_fault_bad),
		cmocka_unit_test(test_signal_exact_and_epilogue),
		cmocka_unit_test(test_drap),
		cmocka_unit_test(test_depth),
		cmocka_unit_test(test_row_search_large_table),
		cmocka_unit_test(test_rows_across_chunks),
		cmocka_unit_test(test_miss_resent),
		cmocka_unit_test(test_live_stack),
		cmocka_unit_test(test_a64_chain),
		cmocka_unit_test(test_a64_records),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
