// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The user-space evaluator of unwind rows (tk_unw__walk): synthetic stack
 * images (a buffer standing for memory at a chosen address) walked with
 * hand-made rows and process entries, one test per row kind and per cause,
 * then frames by row and by frame pointer mixed on one stack; and a real
 * stack: a known chain of functions of this very program, captured in its
 * leaf and walked with the rows tk_unw_table__build makes of the .eh_frame
 * of every object mapped here, up to the outermost frame, and the same
 * through a signal handler. The cost of a walk is printed, not asserted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <elf.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proc/elf_reader.h"
#include "unwind/unwind.h"

/* ---- a stack image --------------------------------------------------------------- */

#define STACK 0x7ffd00000000ULL		/* where the image stands in memory */
#define STACK_SZ 4096

struct image {
	uint64_t base;
	size_t len;
	uint8_t *mem;
	int reads;
};

static uint8_t stack_mem[STACK_SZ];
static struct image img = { STACK, STACK_SZ, stack_mem };

static int img_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct image *im = ctx;

	im->reads++;
	if (addr < im->base || addr - im->base > im->len || len > im->len - (addr - im->base))
		return -EFAULT;
	memcpy(buf, im->mem + (addr - im->base), len);
	return 0;
}

/* The u64 at stack address @addr. */
static void put(uint64_t addr, uint64_t v)
{
	assert_true(addr >= STACK && addr + 8 <= STACK + STACK_SZ);
	memcpy(stack_mem + (addr - STACK), &v, 8);
}

/* ---- code: two objects with rows, and mappings without ------------------------------ */

#define EXE 0x400000ULL			/* an executable mapped at its link address */
#define LIB 0x7f0000000000ULL		/* a library, its table's pcs from 0 */
#define NOCFI 0x7f1000000000ULL		/* an object without CFI */
#define PEND 0x7f2000000000ULL		/* an object whose table is not loaded yet */
#define EMPTY 0x7f3000000000ULL		/* a table with no rows (and no flag) */
#define ANON 0x7f4000000000ULL		/* JIT code: in no mapping */

/* The executable's functions, by row pc (= address - EXE). */
enum {
	F_SP = 0x1000,		/* sub $16, %rsp at 0x1000, body from 0x1004: CFA rsp+24 */
	F_FP = 0x1100,		/* push %rbp; mov %rsp, %rbp: body from 0x1104 */
	F_DRAP = 0x1200,	/* realigned: CFA = *(rbp - 8) */
	F_PLT = 0x1300,		/* 16-byte PLT entries: push at 6, jmp at 11 */
	F_SIG = 0x1400,		/* __restore_rt at 0x1401; its FDE starts a byte early */
	F_START = 0x1500,	/* _start: return address undefined */
	F_GAP = 0x1600,		/* no FDE */
	F_ODD = 0x1700,		/* CFI the rows cannot express */
	F_LOST = 0x1800,	/* CFA rsp+16, rbp not recoverable */
	F_BAD = 0x1900,		/* a corrupt row: CFA rsp+0 */
	F_UNKNOWN = 0x1a00,	/* a row of a kind this evaluator does not know */
	F_END = 0x2000,		/* past the last FDE */
};

#define ROW(p, k, c, b) { .pc = (p), .cfa_off = (c), .rbp_off = (b), .kind = UNW_ROW_##k }

static const struct unw_row rows[] = {
	/* the executable: rows 0..17 */
	ROW(F_SP, SP, 8, 0),
	ROW(F_SP + 4, SP, 24, 0),
	ROW(F_FP, SP, 8, 0),
	ROW(F_FP + 1, SP, 16, -2),
	ROW(F_FP + 4, FP, 16, -2),
	ROW(F_DRAP, DEREF_FP, -8, -2),
	ROW(F_PLT, PLT, 11, 0),
	ROW(F_SIG, SIGNAL, 0, 0),
	ROW(F_SIG + 0x10, SP, 8, 0),
	ROW(F_START, END, 0, 0),
	ROW(F_GAP, INVALID, 0, 0),
	ROW(F_ODD, UNSUPPORTED, 0, 0),
	ROW(F_LOST, SP, 16, UNW_RBP_LOST),
	ROW(F_BAD, SP, 0, 0),
	{ .pc = F_UNKNOWN, .cfa_off = 8, .kind = 42 },
	ROW(F_UNKNOWN + 0x10, SP, 8, 0),
	ROW(F_END, INVALID, 0, 0),
	ROW(F_END + 0x100, INVALID, 0, 0),
	/* the library: rows 18..19, a function at 0x100 with CFA rsp+32 */
	ROW(0x100, SP, 32, 0),
	ROW(0x200, INVALID, 0, 0),
};

#define EXE_ROWS 18
#define LIB_ROWS 2

static struct unw_proc proc;

static void add_map(uint64_t start, uint64_t end, uint64_t bias, uint32_t row_start,
		    uint32_t row_count, uint32_t flags)
{
	struct unw_map *m = &proc.maps[proc.nr++];

	m->start = start;
	m->end = end;
	m->bias = bias;
	m->row_start = row_start;
	m->row_count = row_count;
	m->flags = flags;
}

static int setup(void **state)
{
	memset(&proc, 0, sizeof(proc));
	add_map(EXE + 0x1000, EXE + 0x3000, EXE, 0, EXE_ROWS, 0);
	/* a library's text mapped 0x1000 into its load address: bias = load address */
	add_map(LIB + 0x1000, LIB + 0x2000, LIB + 0x1000, EXE_ROWS, LIB_ROWS, 0);
	add_map(NOCFI, NOCFI + 0x1000, NOCFI, 0, 0, UNW_MAP_NO_CFI);
	add_map(PEND, PEND + 0x1000, PEND, 0, 0, UNW_MAP_PENDING);
	add_map(EMPTY, EMPTY + 0x1000, EMPTY, 0, 0, 0);
	memset(stack_mem, 0, sizeof(stack_mem));
	img.reads = 0;
	return 0;
}

/* ---- the walk ---------------------------------------------------------------------- */

struct result {
	int nr;
	uint64_t ips[UNW_MAX_FRAMES];
	uint32_t causes;
	uint32_t frames[2];
};

static struct result walk_max(const struct unw_proc *p, uint64_t ip, uint64_t sp, uint64_t bp,
			      int max)
{
	struct tk_unw_regs regs = { ip, sp, bp };
	struct result r;

	memset(&r, 0xa5, sizeof(r));
	r.nr = tk_unw__walk(p, rows, sizeof(rows) / sizeof(rows[0]), &regs, img_read, &img, r.ips,
			    max, &r.causes, r.frames);
	assert_true(r.nr >= 0 && r.nr <= max);
	return r;
}

static struct result walk(uint64_t ip, uint64_t sp, uint64_t bp)
{
	return walk_max(&proc, ip, sp, bp, UNW_MAX_FRAMES);
}

static void expect(const struct result *r, uint32_t causes, uint32_t by_row, uint32_t by_fp,
		   int nr, ...)
{
	va_list ap;
	int i;

	if (r->causes != causes)
		fail_msg("causes 0x%x, expected 0x%x", r->causes, causes);
	assert_int_equal(r->nr, nr);
	assert_int_equal(r->frames[0], by_row);
	assert_int_equal(r->frames[1], by_fp);
	va_start(ap, nr);
	for (i = 0; i < nr; i++) {
		uint64_t want = va_arg(ap, uint64_t);

		if (r->ips[i] != want)
			fail_msg("frame %d: 0x%llx, expected 0x%llx", i,
				 (unsigned long long)r->ips[i], (unsigned long long)want);
	}
	va_end(ap);
}

/* A return into _start: the outermost frame, the stack is whole. */
#define RET_START (EXE + F_START + 0x10)

/* ---- one row kind at a time ---------------------------------------------------------- */

static void test_sp_row(void **state)
{
	uint64_t sp = STACK + 0x100;
	struct result r;

	/* in F_SP's body: the return address at rsp + 16, rbp kept */
	put(sp + 16, RET_START);
	r = walk(EXE + F_SP + 8, sp, 0x1234);
	expect(&r, UNW_C_END, 1, 0, 2, EXE + F_SP + 8, RET_START);

	/* at its first instruction: the return address at rsp */
	put(sp, RET_START);
	r = walk(EXE + F_SP, sp, 0);
	expect(&r, UNW_C_END, 1, 0, 2, EXE + F_SP, RET_START);
}

/* F_FP's body (CFA rbp+16) returning into F_FP's push row, then _start. */
static void test_fp_row(void **state)
{
	uint64_t sp = STACK + 0x100, bp = STACK + 0x140, sp2 = bp + 16;
	struct result r;

	put(bp, STACK + 0x400);			/* the caller's rbp */
	put(bp + 8, EXE + F_FP + 2);		/* returns right after a push %rbp */
	/* F_FP + 1: CFA rsp+16, rbp at CFA-16 = rsp: what that push saved */
	put(sp2, STACK + 0x800);
	put(sp2 + 8, RET_START);
	r = walk(EXE + F_FP + 0x20, sp, bp);
	expect(&r, UNW_C_END, 2, 0, 3, EXE + F_FP + 0x20, EXE + F_FP + 2, RET_START);
}

/* The caller's rbp is read where the row says: check it by a frame-pointer step after. */
static void test_rbp_restored(void **state)
{
	uint64_t sp = STACK + 0x100, cfa = sp + 16, bp2 = STACK + 0x300;
	struct result r;

	put(sp, bp2);				/* pushed rbp, at CFA-16 */
	put(cfa - 8, NOCFI + 0x10);
	put(bp2, 0);				/* the end of the frame-pointer chain */
	put(bp2 + 8, NOCFI + 0x20);
	r = walk(EXE + F_FP + 1, sp, 0xdead);
	expect(&r, UNW_C_FP, 1, 1, 3, EXE + F_FP + 1, NOCFI + 0x10, NOCFI + 0x20);
}

/* gcc's stack realignment: CFA = *(rbp - 8), the caller's rbp at CFA-16 by the row. */
static void test_deref_fp_row(void **state)
{
	uint64_t sp = STACK + 0x40, bp = STACK + 0x100, cfa = STACK + 0x180;
	struct result r;

	put(bp - 8, cfa);
	put(cfa - 8, RET_START);
	put(cfa - 16, STACK + 0x900);
	r = walk(EXE + F_DRAP + 0x30, sp, bp);
	expect(&r, UNW_C_END, 1, 0, 2, EXE + F_DRAP + 0x30, RET_START);

	/* *(rbp - 8) unreadable */
	r = walk(EXE + F_DRAP + 0x30, sp, STACK + STACK_SZ + 0x100);
	expect(&r, UNW_C_READ_FAULT, 0, 0, 1, EXE + F_DRAP + 0x30);
}

/* rsp + 8 before the push of the PLT entry (rip & 15 < 11), rsp + 16 from the jmp on. */
static void test_plt_row(void **state)
{
	uint64_t sp = STACK + 0x100, entry = EXE + F_PLT + 0x20;
	struct result r;

	put(sp, RET_START);
	put(sp + 8, EXE + F_START + 0x20);
	r = walk(entry + 6, sp, 0);
	expect(&r, UNW_C_END, 1, 0, 2, entry + 6, RET_START);
	r = walk(entry + 10, sp, 0);
	expect(&r, UNW_C_END, 1, 0, 2, entry + 10, RET_START);
	r = walk(entry + 11, sp, 0);
	expect(&r, UNW_C_END, 1, 0, 2, entry + 11, EXE + F_START + 0x20);
	r = walk(entry + 15, sp, 0);
	expect(&r, UNW_C_END, 1, 0, 2, entry + 15, EXE + F_START + 0x20);
}

/*
 * A signal handler (in the library) returns to __restore_rt, whose ucontext
 * holds the interrupted registers: the walk goes on at the interrupted ip.
 */
static void test_signal_frame(void **state)
{
	uint64_t sp = STACK + 0x80, uc = sp + 32, isp = STACK + 0x600, ibp = STACK + 0x700;
	uint64_t restore = EXE + F_SIG + 1;
	struct result r;

	put(sp + 24, restore);			/* the handler's return address: CFA rsp+32 */
	put(uc + UNW_SC_RIP, EXE + F_FP + 0x40);
	put(uc + UNW_SC_RSP, isp);
	put(uc + UNW_SC_RBP, ibp);
	put(ibp, 0);
	put(ibp + 8, RET_START);
	r = walk(LIB + 0x1000 + 0x150, sp, 0);
	expect(&r, UNW_C_END, 3, 0, 4, LIB + 0x1150, restore, EXE + F_FP + 0x40, RET_START);

	/* a ucontext past the end of the image */
	sp = STACK + STACK_SZ - 64;
	put(sp + 24, restore);
	r = walk(LIB + 0x1150, sp, 0);
	expect(&r, UNW_C_READ_FAULT, 1, 0, 2, LIB + 0x1150, restore);
}

static void test_end_row(void **state)
{
	struct result r = walk(EXE + F_START + 4, STACK + 0x100, 0);

	expect(&r, UNW_C_END, 0, 0, 1, EXE + F_START + 4);
}

/* A return address just past a call that ended its function is looked up a byte back. */
static void test_return_address_looked_up_before(void **state)
{
	uint64_t sp = STACK + 0x100;
	struct result r;

	/* in F_FP's push row; returns to F_FP itself, the byte after F_SP's last call */
	put(sp, 0);
	put(sp + 8, EXE + F_FP);
	put(sp + 16 + 16, RET_START);		/* by F_SP's body row: CFA rsp+24 */
	r = walk(EXE + F_FP + 1, sp, 0);
	expect(&r, UNW_C_END, 2, 0, 3, EXE + F_FP + 1, EXE + F_FP, RET_START);
}

/* ---- frames taken by the frame pointer, and why -------------------------------------- */

/* A chain of frame-pointer frames from @bp: n return addresses @ras, the last rbp 0. */
static void fp_chain(uint64_t bp, int n, const uint64_t *ras)
{
	int i;

	for (i = 0; i < n; i++) {
		put(bp, i == n - 1 ? 0 : bp + 0x40);
		put(bp + 8, ras[i]);
		bp += 0x40;
	}
}

static void test_gap_by_fp(void **state)
{
	uint64_t ras[] = { RET_START };
	struct result r;

	fp_chain(STACK + 0x200, 1, ras);
	r = walk(EXE + F_GAP + 8, STACK + 0x100, STACK + 0x200);
	expect(&r, UNW_C_NO_ROW | UNW_C_END, 0, 1, 2, EXE + F_GAP + 8, RET_START);

	/* in the mapping but below the table's first row */
	{
		struct unw_proc p = { .nr = 1 };

		p.maps[0] = proc.maps[0];
		p.maps[0].start = EXE + 0x800;
		r = walk_max(&p, EXE + 0xff8, STACK + 0x100, STACK + 0x200, UNW_MAX_FRAMES);
		expect(&r, UNW_C_NO_ROW | UNW_C_END, 0, 1, 2, EXE + 0xff8, RET_START);
	}
}

static void test_pending_by_fp(void **state)
{
	uint64_t ras[] = { RET_START };
	struct result r;

	fp_chain(STACK + 0x200, 1, ras);
	r = walk(PEND + 0x10, STACK + 0x100, STACK + 0x200);
	expect(&r, UNW_C_NOT_LOADED | UNW_C_END, 0, 1, 2, PEND + 0x10, RET_START);
}

static void test_no_cfi_by_fp(void **state)
{
	uint64_t ras[] = { RET_START };
	struct result r;

	fp_chain(STACK + 0x200, 1, ras);
	r = walk(NOCFI + 0x10, STACK + 0x100, STACK + 0x200);
	expect(&r, UNW_C_FP | UNW_C_END, 0, 1, 2, NOCFI + 0x10, RET_START);
	/* a table without rows, flagged or not, is the same */
	r = walk(EMPTY + 0x10, STACK + 0x100, STACK + 0x200);
	expect(&r, UNW_C_FP | UNW_C_END, 0, 1, 2, EMPTY + 0x10, RET_START);
}

static void test_unsupported_by_fp(void **state)
{
	uint64_t ras[] = { RET_START };
	struct result r;

	fp_chain(STACK + 0x200, 1, ras);
	r = walk(EXE + F_ODD + 8, STACK + 0x100, STACK + 0x200);
	expect(&r, UNW_C_UNSUPPORTED | UNW_C_END, 0, 1, 2, EXE + F_ODD + 8, RET_START);
	/* a kind this evaluator does not know is the same */
	r = walk(EXE + F_UNKNOWN + 8, STACK + 0x100, STACK + 0x200);
	expect(&r, UNW_C_UNSUPPORTED | UNW_C_END, 0, 1, 2, EXE + F_UNKNOWN + 8, RET_START);
}

/* A table that does not lie inside the rows array: no row. */
static void test_table_out_of_rows(void **state)
{
	uint64_t ras[] = { RET_START };
	struct unw_proc p = { .nr = 1 };
	struct result r;

	p.maps[0] = proc.maps[0];
	p.maps[0].row_start = sizeof(rows) / sizeof(rows[0]) - 2;
	p.maps[0].row_count = 3;
	fp_chain(STACK + 0x200, 1, ras);
	r = walk_max(&p, EXE + F_SP + 8, STACK + 0x100, STACK + 0x200, UNW_MAX_FRAMES);
	/* _start too is by rbp, which is 0 there: the end of the chain */
	expect(&r, UNW_C_NO_ROW, 0, 1, 2, EXE + F_SP + 8, RET_START);
}

/* rbp lost by a row: a frame-pointer step after it ends the walk, no cause. */
static void test_rbp_lost(void **state)
{
	uint64_t sp = STACK + 0x100;
	struct result r;

	put(sp, STACK + 0x300);			/* not taken: the row says rbp is lost */
	put(sp + 8, NOCFI + 0x10);
	put(STACK + 0x300 + 8, NOCFI + 0x20);
	r = walk(EXE + F_LOST, sp, STACK + 0x300);
	expect(&r, UNW_C_FP, 1, 0, 2, EXE + F_LOST, NOCFI + 0x10);
}

/*
 * An address in no mapping of the entry (JIT code, a library loaded since
 * the capture): a frame-pointer step, counted, and the walk goes on.
 */
static void test_no_mapping_by_fp(void **state)
{
	uint64_t sp = STACK + 0x100, bp = STACK + 0x200;
	struct result r;

	/* JIT code with a frame: its caller by rbp, then F_SP's row, then _start */
	put(bp, 0);
	put(bp + 8, EXE + F_SP + 8);
	put(bp + 16 + 16, RET_START);		/* F_SP's CFA = rsp + 24 */
	r = walk(ANON + 0x10, sp, bp);
	expect(&r, UNW_C_NO_MAPPING | UNW_C_END, 1, 1, 3, ANON + 0x10, EXE + F_SP + 8, RET_START);

	/* returning into JIT code whose rbp ends the chain */
	put(sp + 16, ANON + 0x20);
	r = walk(EXE + F_SP + 8, sp, 0);
	expect(&r, UNW_C_NO_MAPPING, 1, 0, 2, EXE + F_SP + 8, ANON + 0x20);

	/* garbage in rbp (below the stack pointer): the walk ends there, counted */
	r = walk(ANON + 0x10, sp, sp - 0x40);
	expect(&r, UNW_C_NO_MAPPING | UNW_C_BAD_FRAME, 0, 0, 1, ANON + 0x10);

	/* a process entry with no mappings at all */
	{
		struct unw_proc empty = { .nr = 0 };

		r = walk_max(&empty, EXE + F_SP + 8, sp, 0, UNW_MAX_FRAMES);
		expect(&r, UNW_C_NO_MAPPING, 0, 0, 1, EXE + F_SP + 8);
	}
}

/*
 * An entry that could not hold every mapping: an address in one it left
 * out is a frame-pointer step counted as such, not as code of no file.
 */
static void test_left_out_by_fp(void **state)
{
	uint64_t sp = STACK + 0x100, bp = STACK + 0x200;
	struct result r;

	proc.flags = UNW_PROC_OVERFLOW;
	proc.left_out = 200;
	put(bp, 0);
	put(bp + 8, EXE + F_SP + 8);
	put(bp + 16 + 16, RET_START);
	r = walk(ANON + 0x10, sp, bp);
	expect(&r, UNW_C_LEFT_OUT | UNW_C_END, 1, 1, 3, ANON + 0x10, EXE + F_SP + 8, RET_START);
}

/* No process entry: frame pointers all the way, to the end of the chain. */
static void test_no_proc_all_fp(void **state)
{
	uint64_t ras[] = { EXE + F_SP + 0x30, ANON + 0x20, EXE + F_START + 0x10 };
	struct result r;

	fp_chain(STACK + 0x200, 3, ras);
	r = walk_max(NULL, EXE + F_SP + 8, STACK + 0x100, STACK + 0x200, UNW_MAX_FRAMES);
	/* _start is not known without the rows: the walk ends where rbp is 0 */
	expect(&r, UNW_C_NO_PROC, 0, 3, 4, EXE + F_SP + 8, ras[0], ras[1], ras[2]);
	/* a leaf without rbp */
	r = walk_max(NULL, EXE + F_SP + 8, STACK + 0x100, 0, UNW_MAX_FRAMES);
	expect(&r, UNW_C_NO_PROC, 0, 0, 1, EXE + F_SP + 8);
}

static void test_read_fault(void **state)
{
	uint64_t sp = STACK + STACK_SZ - 8;
	struct result r;

	/* the return address at rsp + 16 is past the image */
	r = walk(EXE + F_SP + 8, sp, 0);
	expect(&r, UNW_C_READ_FAULT, 0, 0, 1, EXE + F_SP + 8);
	/* the frame pointer past the image */
	r = walk(NOCFI + 0x10, sp, STACK + STACK_SZ);
	expect(&r, UNW_C_FP | UNW_C_READ_FAULT, 0, 0, 1, NOCFI + 0x10);
	/* a fault after frames were found keeps them */
	put(STACK + 0x100 + 16, EXE + F_FP + 0x21);
	r = walk(EXE + F_SP + 8, STACK + 0x100, STACK + STACK_SZ + 0x10);
	expect(&r, UNW_C_READ_FAULT, 1, 0, 2, EXE + F_SP + 8, EXE + F_FP + 0x21);
}

static void test_depth_limit(void **state)
{
	uint64_t ras[8];
	struct result r;
	int i;

	for (i = 0; i < 8; i++)
		ras[i] = NOCFI + 0x100 + i;
	fp_chain(STACK + 0x200, 8, ras);
	r = walk_max(&proc, NOCFI + 0x10, STACK + 0x100, STACK + 0x200, 5);
	expect(&r, UNW_C_FP | UNW_C_DEPTH, 0, 5, 5, NOCFI + 0x10, ras[0], ras[1], ras[2], ras[3]);
	/* nine frames fit exactly: the chain ends, no truncation */
	r = walk_max(&proc, NOCFI + 0x10, STACK + 0x100, STACK + 0x200, 9);
	expect(&r, UNW_C_FP, 0, 8, 9, NOCFI + 0x10, ras[0], ras[1], ras[2], ras[3], ras[4],
	       ras[5], ras[6], ras[7]);
	/* a recursion deeper than UNW_MAX_FRAMES: cut there */
	for (i = 0; i < 200; i++) {
		put(STACK + 0x100 + 16 * i, STACK + 0x100 + 16 * (i + 1));
		put(STACK + 0x100 + 16 * i + 8, NOCFI + 0x200);
	}
	r = walk(NOCFI + 0x10, STACK + 0x80, STACK + 0x100);
	assert_int_equal(r.nr, UNW_MAX_FRAMES);
	assert_int_equal(r.causes, UNW_C_FP | UNW_C_DEPTH);
	assert_int_equal(r.frames[1], UNW_MAX_FRAMES);
	assert_true(r.ips[UNW_MAX_FRAMES - 1] == NOCFI + 0x200);
	/* frames may be NULL */
	{
		struct tk_unw_regs regs = { NOCFI + 0x10, STACK + 0x100, STACK + 0x200 };
		uint64_t ips[4];
		uint32_t causes;

		assert_int_equal(tk_unw__walk(&proc, rows, 1, &regs, img_read, &img, ips, 4,
					      &causes, NULL), 4);
		assert_int_equal(causes, UNW_C_FP | UNW_C_DEPTH);
	}
}

/* A CFA at or below rsp, or a frame pointer below rsp or misaligned: stop. */
static void test_bad_frame(void **state)
{
	uint64_t sp = STACK + 0x100;
	struct result r;

	r = walk(EXE + F_BAD + 4, sp, 0);
	expect(&r, UNW_C_BAD_FRAME, 0, 0, 1, EXE + F_BAD + 4);
	/* CFA rbp+16 with rbp far below rsp */
	r = walk(EXE + F_FP + 0x20, sp, sp - 0x40);
	expect(&r, UNW_C_BAD_FRAME, 0, 0, 1, EXE + F_FP + 0x20);
	r = walk(EXE + F_FP + 0x20, sp, sp - 16);
	expect(&r, UNW_C_BAD_FRAME, 0, 0, 1, EXE + F_FP + 0x20);
	/* by the frame pointer: below rsp, then misaligned */
	r = walk(NOCFI + 0x10, sp, sp - 8);
	expect(&r, UNW_C_FP | UNW_C_BAD_FRAME, 0, 0, 1, NOCFI + 0x10);
	r = walk(NOCFI + 0x10, sp, sp + 0x44);
	expect(&r, UNW_C_FP | UNW_C_BAD_FRAME, 0, 0, 1, NOCFI + 0x10);
	/* a frame pointer that points at itself is below rsp after one step */
	put(sp + 0x40, sp + 0x40);
	put(sp + 0x48, NOCFI + 0x20);
	r = walk(NOCFI + 0x10, sp, sp + 0x40);
	expect(&r, UNW_C_FP | UNW_C_BAD_FRAME, 0, 1, 2, NOCFI + 0x10, NOCFI + 0x20);
	/* rbp == rsp is a frame (an empty one) */
	put(sp, 0);
	put(sp + 8, RET_START);
	r = walk(NOCFI + 0x10, sp, sp);
	expect(&r, UNW_C_FP | UNW_C_END, 0, 1, 2, NOCFI + 0x10, RET_START);
}

/* A return address of 0 ends the walk, as bpf_get_stack's does. */
static void test_zero_return_address(void **state)
{
	uint64_t sp = STACK + 0x100;
	struct result r;

	put(sp + 16, 0);
	r = walk(EXE + F_SP + 8, sp, 0);
	expect(&r, 0, 1, 0, 1, EXE + F_SP + 8);
}

/*
 * One stack of everything: the library's function (row) → a frame without
 * CFI (rbp) → F_SP's body (row) → F_FP's body (row, rbp from the stack) →
 * a gap (rbp) → _start.
 */
static void test_mixed_stack(void **state)
{
	uint64_t sp0 = STACK + 0x100, sp1 = sp0 + 32, bp1 = sp1 + 0x30, sp2 = bp1 + 16;
	uint64_t sp3 = sp2 + 24, bp3 = sp3 + 0x20, sp4 = bp3 + 16, bp4 = sp4 + 0x40;
	struct result r;

	put(sp0 + 24, NOCFI + 0x40);		/* lib: CFA rsp+32, rbp kept */
	put(bp1, bp3);				/* no CFI: by rbp */
	put(bp1 + 8, EXE + F_SP + 0x21);
	put(sp2 + 16, EXE + F_FP + 0x31);	/* F_SP's body: CFA rsp+24, rbp kept */
	put(bp3, bp4);				/* F_FP's body: CFA rbp+16, rbp at CFA-16 */
	put(bp3 + 8, EXE + F_GAP + 0x11);
	put(bp4, 0);				/* the gap: by rbp */
	put(bp4 + 8, RET_START);
	r = walk(LIB + 0x1000 + 0x120, sp0, bp1);
	expect(&r, UNW_C_FP | UNW_C_NO_ROW | UNW_C_END, 3, 2, 6, LIB + 0x1120, NOCFI + 0x40,
	       EXE + F_SP + 0x21, EXE + F_FP + 0x31, EXE + F_GAP + 0x11, RET_START);
}

/* ---- a real stack -------------------------------------------------------------------- */

/*
 * real_top → real_mid → real_leaf, none inlined, each with work after its call
 * so no call becomes a jump; each records its return address, and the leaf its
 * ip, sp and rbp and a copy of the stack above sp.
 */
struct capture {
	uint64_t ip, sp, bp;
	uint64_t ret[3];	/* into real_mid, real_top, the test */
	uint64_t base;		/* the copy's address */
	size_t len;
	uint8_t *mem;
};

static struct capture cap;
static volatile int real_sink;

/* A plain word-by-word copy: ASan must not see the stack's redzones being read. */
__attribute__((noinline, no_sanitize_address)) static void copy_stack(uint64_t from, uint64_t to)
{
	volatile const uint64_t *src = (const uint64_t *)from;
	uint64_t *dst = (uint64_t *)cap.mem;
	size_t i;

	cap.base = from;
	cap.len = to - from;
	for (i = 0; i < cap.len / 8; i++)
		dst[i] = src[i];
}

static uint64_t stack_top(void)
{
	pthread_attr_t a;
	size_t size = 0;
	void *addr = NULL;

	assert_int_equal(pthread_getattr_np(pthread_self(), &a), 0);
	assert_int_equal(pthread_attr_getstack(&a, &addr, &size), 0);
	pthread_attr_destroy(&a);
	return (uint64_t)addr + size;
}

__attribute__((noinline)) static void real_leaf(void)
{
	uint64_t ip, sp, bp;

	__asm__ volatile("lea 0(%%rip), %0\n\tmov %%rsp, %1\n\tmov %%rbp, %2"
			 : "=r"(ip), "=r"(sp), "=r"(bp));
	cap.ip = ip;
	cap.sp = sp;
	cap.bp = bp;
	cap.ret[0] = (uint64_t)__builtin_return_address(0);
	copy_stack(sp, stack_top());
	real_sink++;
}

__attribute__((noinline)) static void real_mid(void)
{
	cap.ret[1] = (uint64_t)__builtin_return_address(0);
	real_leaf();
	real_sink++;
}

__attribute__((noinline)) static void real_top(void)
{
	cap.ret[2] = (uint64_t)__builtin_return_address(0);
	real_mid();
	real_sink++;
}

/* The same through a signal: real_sig_top → raise → (signal) → real_handler → real_leaf. */
__attribute__((noinline)) static void real_handler(int sig)
{
	cap.ret[1] = (uint64_t)__builtin_return_address(0);	/* __restore_rt */
	real_leaf();
	real_sink++;
}

__attribute__((noinline)) static void real_sig_top(void)
{
	cap.ret[2] = (uint64_t)__builtin_return_address(0);
	raise(SIGUSR1);
	real_sink++;
}

/* The executable mappings of this process and their tables, as a store would lay them out. */
struct real_tables {
	struct unw_proc proc;
	struct unw_row *rows;
	size_t nr_rows;
	int objects, with_cfi;
};

static int add_object(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct real_tables *rt = ctx;
	const char *path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "/proc/self/exe";
	struct tk_unw_table *t = NULL;
	struct tk_elf *elf = NULL;
	uint32_t row_start = rt->nr_rows;
	int i, err;

	if (strstr(path, "linux-vdso"))
		return 0;	/* no file: nothing of ours runs there */
	err = tk_elf__open(path, &elf);
	if (err)
		fail_msg("%s: %s", path, strerror(-err));
	err = tk_unw_table__build(elf, NULL, &t);
	if (err)
		fail_msg("tk_unw_table__build %s: %s", path, strerror(-err));
	rt->objects++;
	rt->with_cfi += t->nr > 0;
	if (t->nr) {
		struct unw_row *n = realloc(rt->rows, (rt->nr_rows + t->nr) * sizeof(*n));

		assert_non_null(n);
		memcpy(n + rt->nr_rows, t->rows, t->nr * sizeof(*n));
		rt->rows = n;
		rt->nr_rows += t->nr;
	}
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		struct unw_map *m;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		assert_true(rt->proc.nr < UNW_MAX_MAPS);
		m = &rt->proc.maps[rt->proc.nr++];
		m->start = info->dlpi_addr + ph->p_vaddr;
		m->end = m->start + ph->p_memsz;
		m->bias = info->dlpi_addr + t->base;
		m->row_start = row_start;
		m->row_count = t->nr;
		m->flags = t->nr ? 0 : UNW_MAP_NO_CFI;
	}
	tk_unw_table__free(t);
	tk_elf__free(elf);
	return 0;
}

static int cmp_map(const void *a, const void *b)
{
	const struct unw_map *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static int cap_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct capture *c = ctx;

	if (addr < c->base || addr - c->base > c->len || len > c->len - (addr - c->base))
		return -EFAULT;
	memcpy(buf, c->mem + (addr - c->base), len);
	return 0;
}

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static struct real_tables *real_tables(void)
{
	struct real_tables *rt = calloc(1, sizeof(*rt));

	assert_non_null(rt);
	cap.mem = malloc(1 << 20);
	assert_non_null(cap.mem);
	dl_iterate_phdr(add_object, rt);
	qsort(rt->proc.maps, rt->proc.nr, sizeof(rt->proc.maps[0]), cmp_map);
	assert_true(rt->with_cfi >= 2);		/* this program and libc at least */
	return rt;
}

static void real_tables_free(struct real_tables *rt)
{
	free(rt->rows);
	free(rt);
	free(cap.mem);
	cap.mem = NULL;
}

static void test_real_stack(void **state)
{
	struct real_tables *rt = real_tables();
	struct tk_unw_regs regs;
	uint64_t ips[UNW_MAX_FRAMES];
	uint32_t causes = 0, frames[2] = {}, c2, f2[2];
	double t0, dt;
	int nr, i, n, rounds = 20000;

	real_top();
	real_sink++;
	assert_true(cap.len > 64 && cap.len <= (1 << 20));
	regs = (struct tk_unw_regs){ cap.ip, cap.sp, cap.bp };
	nr = tk_unw__walk(&rt->proc, rt->rows, rt->nr_rows, &regs, cap_read, &cap, ips,
			  UNW_MAX_FRAMES, &causes, frames);
	print_message("real stack: %d frames (%u by rows, %u by rbp), causes 0x%x; %d objects, "
		      "%zu rows, %zu bytes of stack\n", nr, frames[0], frames[1], causes,
		      rt->objects, rt->nr_rows, cap.len);
	assert_true(nr >= 5);
	assert_true(ips[0] == cap.ip);
	for (i = 0; i < 3; i++)
		if (ips[i + 1] != cap.ret[i])
			fail_msg("frame %d: 0x%llx, expected 0x%llx", i + 1,
				 (unsigned long long)ips[i + 1], (unsigned long long)cap.ret[i]);
	/* every object mapped here has CFI: the walk reaches _start (or a thread's start) */
	assert_int_equal(causes, UNW_C_END);
	assert_int_equal(frames[0], nr - 1);

	/* the cost of one walk, printed */
	t0 = now_ns();
	for (n = 0; n < rounds; n++)
		tk_unw__walk(&rt->proc, rt->rows, rt->nr_rows, &regs, cap_read, &cap, ips,
			     UNW_MAX_FRAMES, &c2, f2);
	dt = now_ns() - t0;
	print_message("walk of %d frames: %.0f ns (%.1f ns a frame)\n", nr, dt / rounds,
		      dt / rounds / nr);
	real_tables_free(rt);
}

/*
 * A stack captured in a signal handler: through glibc's __restore_rt (its
 * SIGNAL row) to the registers the signal interrupted in raise(), and on
 * up to the outermost frame.
 */
static void test_real_signal_stack(void **state)
{
	struct real_tables *rt = real_tables();
	struct sigaction sa = { .sa_handler = real_handler }, old;
	uint64_t ips[UNW_MAX_FRAMES];
	uint32_t causes = 0, frames[2] = {};
	struct tk_unw_regs regs;
	int nr, i, top = -1;

	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	real_sig_top();
	real_sink++;
	assert_int_equal(sigaction(SIGUSR1, &old, NULL), 0);
	regs = (struct tk_unw_regs){ cap.ip, cap.sp, cap.bp };
	nr = tk_unw__walk(&rt->proc, rt->rows, rt->nr_rows, &regs, cap_read, &cap, ips,
			  UNW_MAX_FRAMES, &causes, frames);
	for (i = 0; i < nr; i++)
		if (ips[i] == cap.ret[2])
			top = i;
	print_message("signal stack: %d frames (%u by rows, %u by rbp), causes 0x%x; "
		      "real_sig_top's caller at frame %d\n", nr, frames[0], frames[1], causes, top);
	assert_true(ips[0] == cap.ip && ips[1] == cap.ret[0]);
	assert_true(ips[2] == cap.ret[1]);	/* __restore_rt: its row takes the ucontext */
	assert_true(top > 3);			/* raise's frames, real_sig_top, its caller */
	assert_int_equal(causes, UNW_C_END);
	real_tables_free(rt);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_sp_row, setup),
		cmocka_unit_test_setup(test_fp_row, setup),
		cmocka_unit_test_setup(test_rbp_restored, setup),
		cmocka_unit_test_setup(test_deref_fp_row, setup),
		cmocka_unit_test_setup(test_plt_row, setup),
		cmocka_unit_test_setup(test_signal_frame, setup),
		cmocka_unit_test_setup(test_end_row, setup),
		cmocka_unit_test_setup(test_return_address_looked_up_before, setup),
		cmocka_unit_test_setup(test_gap_by_fp, setup),
		cmocka_unit_test_setup(test_pending_by_fp, setup),
		cmocka_unit_test_setup(test_no_cfi_by_fp, setup),
		cmocka_unit_test_setup(test_unsupported_by_fp, setup),
		cmocka_unit_test_setup(test_table_out_of_rows, setup),
		cmocka_unit_test_setup(test_rbp_lost, setup),
		cmocka_unit_test_setup(test_no_mapping_by_fp, setup),
		cmocka_unit_test_setup(test_left_out_by_fp, setup),
		cmocka_unit_test_setup(test_no_proc_all_fp, setup),
		cmocka_unit_test_setup(test_read_fault, setup),
		cmocka_unit_test_setup(test_depth_limit, setup),
		cmocka_unit_test_setup(test_bad_frame, setup),
		cmocka_unit_test_setup(test_zero_return_address, setup),
		cmocka_unit_test_setup(test_mixed_stack, setup),
		cmocka_unit_test(test_real_stack),
		cmocka_unit_test(test_real_signal_stack),
	};

	return cmocka_run_group_tests_name("unwind_eval", tests, NULL, NULL);
}
