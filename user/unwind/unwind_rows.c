// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The rows of one FDE (the build as a whole: unwind_table.c): the rules at the
 * FDE's start give the first row and where it ends; the next query is made
 * there, and so on to the FDE's end. The rules come from unwind_cfa.c, which
 * runs the FDE's program once, or (TK_UNW_LIBDW=1, and the tests comparing
 * both) from libdw: dwarf_cfi_addrframe() and dwarf_frame_info() at each
 * query. Each query is charged against the build's budget (why:
 * unwind_table.c); past it, the rest of the FDE is one UNW_ROW_UNSUPPORTED row.
 * Each row's rules become one row of bpf/unwind.h; what the rows cannot
 * express is UNW_ROW_UNSUPPORTED.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#include "bpf/unwind.h"
#include "unwind/unwind.h"
#include "unwind/unwind_table_int.h"

#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16

/* arm64's DWARF numbers: x29 (the frame pointer), x30 (LR, the return address column), sp */
#define A64_X29 29
#define A64_LR 30
#define A64_SP 31

/* ---- rules: from libdw's frame, or from unwind_cfa.c ------------------------------------- */

/* Where a row's rules come from: libdw's frame @f, or the state @st of the interpreter @c. */
struct rules {
	Dwarf_Frame *f;
	const struct tk_unw_cfa *c;
	const struct tk_unw_state *st;
};

/* dwarf_frame_cfa() */
static int rules_cfa(const struct rules *q, Dwarf_Op mem[9], Dwarf_Op **ops, size_t *n)
{
	if (q->f)
		return dwarf_frame_cfa(q->f, ops, n);
	return tk_unw_cfa_ops(q->c, q->st, mem, ops, n);
}

/* dwarf_frame_register() of @reg: the frame pointer or the return address column */
static int rules_reg(const struct rules *q, int reg, Dwarf_Op mem[3], Dwarf_Op **ops, size_t *n)
{
	if (q->f)
		return dwarf_frame_register(q->f, reg, mem, ops, n);
	return tk_unw_reg_ops(q->c, q->st, reg == REG_RA || reg == A64_LR, mem, ops, n);
}

/* ---- rows -------------------------------------------------------------------------------- */

static bool fits_s16(int64_t v)
{
	return v >= INT16_MIN && v <= INT16_MAX;
}

/* The CFA rule of @f as a row kind and offset; false when the rows cannot express it. */
static bool cfa_rule(const struct rules *f, struct unw_row *r)
{
	Dwarf_Op mem[9], *ops = NULL;
	size_t n, i;
	int64_t off;

	if (rules_cfa(f, mem, &ops, &n) || !ops || !n)
		return false;
	/* reg + offset: libdw gives DW_OP_bregx reg, off; an expression may say DW_OP_bregN off */
	if (n == 1 || (n == 2 && ops[1].atom == DW_OP_deref)) {
		unsigned int reg;

		if (ops[0].atom == DW_OP_bregx) {
			reg = ops[0].number > 255 ? 255 : ops[0].number;
			off = (int64_t)ops[0].number2;
		} else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
			reg = ops[0].atom - DW_OP_breg0;
			off = (int64_t)ops[0].number;
		} else {
			return false;
		}
		if (!fits_s16(off))
			return false;
		r->cfa_off = off;
		if (n == 2) {
			/* DW_OP_breg6 N; DW_OP_deref: gcc's realigned stack (DRAP) */
			r->kind = UNW_ROW_DEREF_FP;
			return reg == REG_RBP;
		}
		r->kind = reg == REG_RSP ? UNW_ROW_SP : UNW_ROW_FP;
		return reg == REG_RSP || reg == REG_RBP;
	}
	/*
	 * The PLT rule binutils emits for .plt: DW_OP_breg7 8; DW_OP_breg16 0; DW_OP_lit15;
	 * DW_OP_and; DW_OP_litK; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus.
	 */
	if (n == 9) {
		static const uint8_t plt[9] = { DW_OP_breg7, DW_OP_breg16, DW_OP_lit15, DW_OP_and,
						0, DW_OP_ge, DW_OP_lit3, DW_OP_shl, DW_OP_plus };

		for (i = 0; i < 9; i++) {
			if (i != 4 && ops[i].atom != plt[i])
				return false;
		}
		if (ops[0].number != 8 || ops[1].number != 0 || ops[4].atom < DW_OP_lit0 ||
		    ops[4].atom > DW_OP_lit31)
			return false;
		r->kind = UNW_ROW_PLT;
		r->cfa_off = ops[4].atom - DW_OP_lit0;
		return true;
	}
	return false;
}

enum reg_rule { REG_SAME, REG_UNDEFINED, REG_AT_CFA, REG_AT_RBP, REG_OTHER };

/*
 * How the caller's @reg is found in @f; REG_AT_CFA: saved at CFA + *off. libdw
 * says "at CFA + N" as DW_OP_call_frame_cfa; DW_OP_plus_uconst N (or without
 * the second op when N is 0), and DW_CFA_expression rules as
 * DW_OP_call_frame_cfa followed by the expression.
 */
static enum reg_rule reg_rule(const struct rules *f, int reg, int64_t *off)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t n = 0;

	if (rules_reg(f, reg, mem, &ops, &n))
		return REG_OTHER;
	if (!ops)
		return REG_SAME;
	if (!n)
		return REG_UNDEFINED;
	if (ops[0].atom != DW_OP_call_frame_cfa)
		return REG_OTHER;
	if (n == 1) {
		*off = 0;
		return REG_AT_CFA;
	}
	/* DW_CFA_expression r: DW_OP_breg6 N, gcc's realigned stack: saved at rbp + N */
	if (n == 2 && ops[1].atom == DW_OP_breg6) {
		*off = (int64_t)ops[1].number;
		return REG_AT_RBP;
	}
	if (n != 2 || ops[1].atom != DW_OP_plus_uconst)
		return REG_OTHER;
	*off = (int64_t)ops[1].number;
	return REG_AT_CFA;
}

/*
 * The caller's rbp: 0 unchanged (same value: libdw's x86-64 ABI rule for an rbp
 * the CFI does not touch), N: at CFA + 8 * N, or UNW_RBP_LOST.
 */
static int8_t rbp_rule(const struct rules *f)
{
	int64_t off = 0;

	switch (reg_rule(f, REG_RBP, &off)) {
	case REG_SAME:
		return 0;
	case REG_AT_CFA:
		/* at CFA + 0 would read as "unchanged": never emitted, and lost */
		if (off && !(off % 8) && off / 8 >= -127 && off / 8 <= 127)
			return off / 8;
		return UNW_RBP_LOST;
	default:
		return UNW_RBP_LOST;
	}
}

/* The row @f describes; @ra_reg and @signal as dwarf_frame_info() gave them. */
static void frame_row(const struct rules *f, int ra_reg, bool signal, struct unw_row *r)
{
	enum reg_rule ra;
	int64_t off = 0;

	r->cfa_off = 0;
	r->rbp_off = 0;
	r->kind = UNW_ROW_UNSUPPORTED;
	if (signal) {
		r->kind = UNW_ROW_SIGNAL;
		return;
	}
	if (ra_reg != REG_RA)
		return;
	ra = reg_rule(f, REG_RA, &off);
	if (ra == REG_UNDEFINED) {
		r->kind = UNW_ROW_END;
		return;
	}
	if (ra != REG_AT_CFA || off != -8 || !cfa_rule(f, r)) {
		r->kind = UNW_ROW_UNSUPPORTED;
		r->cfa_off = 0;
		return;
	}
	r->rbp_off = rbp_rule(f);
	/* a realigned stack saves rbp where rbp points (push %rbp; mov %rsp,%rbp) */
	if (r->kind == UNW_ROW_DEREF_FP && reg_rule(f, REG_RBP, &off) == REG_AT_RBP &&
	    !(off % 8) && off / 8 >= -127 && off / 8 <= 127) {
		r->kind = UNW_ROW_DRAP;
		r->rbp_off = off / 8;
	}
}

/*
 * arm64's CFA rule: DW_OP_bregx 31 (sp) or 29 (x29), off; false when it is anything else.
 * Sets the UNW_A64_FP bit of r->kind.
 */
static bool a64_cfa_rule(const struct rules *f, struct unw_row *r)
{
	Dwarf_Op mem[9], *ops = NULL;
	unsigned int reg;
	size_t n;
	int64_t off;

	if (rules_cfa(f, mem, &ops, &n) || !ops || n != 1)
		return false;
	if (ops[0].atom == DW_OP_bregx) {
		reg = ops[0].number > 255 ? 255 : ops[0].number;
		off = (int64_t)ops[0].number2;
	} else if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31) {
		reg = ops[0].atom - DW_OP_breg0;
		off = (int64_t)ops[0].number;
	} else {
		return false;
	}
	if (!fits_s16(off) || (reg != A64_SP && reg != A64_X29))
		return false;
	r->cfa_off = off;
	if (reg == A64_X29)
		r->kind |= UNW_A64_FP;
	return true;
}

/*
 * The arm64 row @f describes (bpf/unwind.h): the return address in LR, or at
 * CFA + @ra (libdw's offset), written as ra_off against the CFA when it is
 * within 1 KiB of it, else against the base register (gcc keeps it at the
 * bottom of the frame); the caller's x29 unchanged, beside it, or lost.
 */
static void a64_frame_row(const struct rules *f, int ra_reg, bool signal, struct unw_row *r)
{
	int64_t ra = 0, fp = 0, base;
	enum reg_rule ra_rule, fp_rule;

	r->cfa_off = 0;
	r->ra_off = 0;
	r->kind = UNW_ROW_UNSUPPORTED;
	if (signal) {
		r->kind = UNW_ROW_A64_SIGNAL;
		return;
	}
	if (ra_reg != A64_LR)
		return;
	ra_rule = reg_rule(f, A64_LR, &ra);
	if (ra_rule == REG_UNDEFINED) {
		r->kind = UNW_ROW_END;
		return;
	}
	r->kind = UNW_ROW_A64;
	if (!a64_cfa_rule(f, r))
		goto unsupported;
	fp_rule = reg_rule(f, A64_X29, &fp);
	if (ra_rule == REG_SAME) {
		r->kind |= UNW_A64_RA_LR;
		if (fp_rule != REG_SAME)
			r->kind |= UNW_A64_X29_LOST;
		return;
	}
	if (ra_rule != REG_AT_CFA || ra >= 0 || ra % 8)
		goto unsupported;
	base = r->cfa_off + ra;		/* the slot against sp or x29 */
	if (ra / 8 >= -128)
		r->ra_off = ra / 8;
	else if (base >= 0 && base / 8 <= 127)
		r->ra_off = base / 8;
	else
		goto unsupported;
	if (fp_rule == REG_AT_CFA && fp == ra - 8)
		r->kind |= UNW_A64_X29_PAIR;
	else if (fp_rule != REG_SAME)
		r->kind |= UNW_A64_X29_LOST;
	return;
unsupported:
	r->kind = UNW_ROW_UNSUPPORTED;
	r->cfa_off = 0;
	r->ra_off = 0;
}

static bool same_row(const struct unw_row *a, const struct unw_row *b)
{
	return a->kind == b->kind && a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off;
}

/* Append the row @r at @vaddr: it replaces a row at the same pc, merges into an equal one. */
static int emit(struct builder *b, uint64_t vaddr, struct unw_row r)
{
	struct tk_unw_table *t = b->t;

	if (vaddr < t->base || vaddr - t->base > UINT32_MAX)
		return 0;	/* past base + 4 GiB: a __u32 pc cannot say where */
	r.pc = vaddr - t->base;
	if (t->nr && t->rows[t->nr - 1].pc >= r.pc) {
		if (t->rows[t->nr - 1].pc > r.pc)
			return 0;	/* not in order: cannot happen with sorted FDEs */
		t->nr--;
	}
	if (t->nr && same_row(&t->rows[t->nr - 1], &r))
		return 0;
	if (t->nr == b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 1024;
		struct unw_row *rows = reallocarray(t->rows, cap, sizeof(*rows));

		if (!rows)
			return -ENOMEM;
		t->rows = rows;
		b->cap = cap;
	}
	t->rows[t->nr++] = r;
	return 0;
}

static const struct unw_row row_invalid = { .kind = UNW_ROW_INVALID };
static const struct unw_row row_unsupported = { .kind = UNW_ROW_UNSUPPORTED };

static int libdw_forced = -1;	/* tk_unw_rows_use_libdw() */
static int libdw_env = -1;	/* TK_UNW_LIBDW=1, read once */

void tk_unw_rows_use_libdw(int on)
{
	libdw_forced = on;
}

static bool use_libdw(void)
{
	const char *v;

	if (libdw_forced >= 0)
		return libdw_forced;
	if (libdw_env < 0) {
		v = getenv("TK_UNW_LIBDW");
		libdw_env = v && !strcmp(v, "1");
	}
	return libdw_env;
}

/*
 * The row at @pc of the FDE @fde, and where it ends (*@end), from libdw (@run NULL) or from
 * the interpreter @run; *@ra the return address column. -1 where libdw fails.
 */
static int row_at(struct builder *b, Dwarf_CFI *cfi, struct tk_unw_cfa *run,
		  const struct fde *fde, uint64_t pc, struct unw_row *r, uint64_t *end, int *ra)
{
	struct rules q = { .c = run };
	Dwarf_Addr start, e;
	bool signal;

	if (run) {
		if (tk_unw_cfa_at(run, pc, &q.st, &start, &e))
			return -1;
		/* dwarf_frame_info() returns the CIE's column as an int */
		*ra = (int)b->cies[fde->cie].ra_reg;
		signal = b->cies[fde->cie].signal;
	} else {
		if (dwarf_cfi_addrframe(cfi, pc, &q.f))
			return -1;
		*ra = dwarf_frame_info(q.f, &start, &e, &signal);
	}
	if (*ra < 0 || e <= pc || start > pc) {
		free(q.f);
		return -1;
	}
	if (b->a64)
		a64_frame_row(&q, *ra, signal, r);
	else
		frame_row(&q, *ra, signal, r);
	free(q.f);
	*end = e;
	return 0;
}

/* The rows of the FDE @fde; an INVALID row at its end when @next_start is not there. */
int tk_unw_fde_rows(struct builder *b, Dwarf_CFI *cfi, const struct fde *fde, uint64_t next_start)
{
	struct tk_unw_prog c = { .p = fde->prog, .end = fde->prog_end, .loc = fde->start,
				 .code_align = fde->code_align, .lost = !fde->prog };
	struct tk_unw_cfa run, *cfa = NULL;
	uint64_t pc = fde->start, next;
	int err = 0;

	if (!use_libdw() && fde->prog) {
		cfa = &run;
		tk_unw_cfa_init(cfa, b, fde);
	}
	while (pc < fde->end) {
		uint64_t end;
		struct unw_row r;
		int ra;

		if (b->work > b->lim.work) {
			b->over_limit = true;
			return 0;
		}
		if (++b->clock_rows >= TK_UNW_CLOCK_ROWS ||
		    b->work - b->clock_work >= TK_UNW_CLOCK_WORK) {
			b->clock_rows = 0;
			b->clock_work = b->work;
			if (tk_unw_now_ns() - b->t0_ns > b->lim.build_ns) {
				b->over_limit = true;
				return 0;
			}
		}
		if (b->work > b->budget) {
			err = emit(b, pc, row_unsupported);
			break;
		}
		b->work += fde->cost;
		if (row_at(b, cfi, cfa, fde, pc, &r, &end, &ra)) {
			err = emit(b, pc, row_unsupported);
			break;
		}
		err = emit(b, pc, r);
		if (err)
			return err;
		/*
		 * libdw runs the program from its start for each query: a query at every
		 * location made an FDE of thousands quadratic (trixie's arm64 python3.13:
		 * 8385 locations in one FDE, most saving x19..x28 only; 567 ms for the whole
		 * object, 3.11's 58). The next query is where the row may change; the
		 * interpreter (unwind_cfa.c) is asked at the same places, so its rows are
		 * libdw's.
		 */
		next = tk_unw_next_change(&c, end, b->a64, ra);
		pc = next < fde->end ? next : fde->end;
	}
	if (!err && next_start != fde->end)
		err = emit(b, fde->end, row_invalid);
	return err;
}

/*
 * arm64 code no FDE covers, [@start, @end), given the row kind @kind (cfa_off
 * and ra_off 0): .plt (binutils: adrp, ldr, add, br x17), a stub that has not
 * touched sp, x29 or LR yet ("CFA = sp, return address in LR"); the vDSO's
 * __kernel_rt_sigreturn (UNW_ROW_A64_SIGNAL). When the rows say nothing of
 * that range (no row, or INVALID ones), it gets the one row, and the row in
 * force at @end is kept. The table may be rebased down to @start; an empty
 * table gets the range and INVALID after it. Returns 0 or -ENOMEM.
 */
int tk_unw_a64_fill(struct builder *b, uint64_t start, uint64_t end, uint8_t kind)
{
	struct tk_unw_table *t = b->t;
	struct unw_row at_end = row_invalid, *rows;
	size_t i, lo, hi, keep, nr;
	uint64_t shift = 0;

	if (start >= end || end - start > UINT32_MAX)
		return 0;
	if (!t->nr) {
		rows = reallocarray(t->rows, 2, sizeof(*rows));
		if (!rows)
			return -ENOMEM;
		t->rows = rows;
		b->cap = 2;
		t->base = start;
		t->rows[0] = (struct unw_row){ .pc = 0, .kind = kind };
		t->rows[1] = (struct unw_row){ .pc = end - start, .kind = UNW_ROW_INVALID };
		t->nr = 2;
		t->st.plt += kind == (UNW_ROW_A64 | UNW_A64_RA_LR);
		return 0;
	}
	if (start < t->base) {
		shift = t->base - start;
		if (t->rows[t->nr - 1].pc + shift > UINT32_MAX)
			return 0;
	} else if (end - t->base > UINT32_MAX) {
		return 0;
	}
	for (i = 0; i < t->nr; i++)
		t->rows[i].pc += shift;
	t->base -= shift;
	start -= t->base;
	end -= t->base;
	/* rows[lo..hi) lie in [start, end); the row before lo covers start, if any */
	for (lo = 0; lo < t->nr && t->rows[lo].pc < start; lo++)
		;
	for (hi = lo; hi < t->nr && t->rows[hi].pc < end; hi++) {
		if (t->rows[hi].kind != UNW_ROW_INVALID)
			return 0;	/* CFI of its own: kept */
	}
	/* the row covering start: rows[lo] when it is at start, else the one before */
	if (lo && (lo == t->nr || t->rows[lo].pc > start) &&
	    t->rows[lo - 1].kind != UNW_ROW_INVALID)
		return 0;
	if (hi > lo)
		at_end = t->rows[hi - 1];
	else if (lo)
		at_end = t->rows[lo - 1];
	/* one row at start, one at end unless a row is there already: 2 - (hi - lo) more */
	keep = hi < t->nr && t->rows[hi].pc == end;
	nr = t->nr - (hi - lo) + 1 + !keep;
	if (nr > b->cap) {
		rows = reallocarray(t->rows, nr, sizeof(*rows));
		if (!rows)
			return -ENOMEM;
		t->rows = rows;
		b->cap = nr;
	}
	memmove(&t->rows[lo + 1 + !keep], &t->rows[hi], (t->nr - hi) * sizeof(*t->rows));
	t->rows[lo] = (struct unw_row){ .pc = start, .kind = kind };
	if (!keep) {
		at_end.pc = end;
		t->rows[lo + 1] = at_end;
	}
	t->nr = nr;
	t->st.plt += kind == (UNW_ROW_A64 | UNW_A64_RA_LR);
	/* a neighbour may now say the same (an FDE's first row at @end: LR too): merged */
	keep = lo ? lo - 1 : 0;
	for (i = keep + 1; i < t->nr; i++) {
		if (!same_row(&t->rows[keep], &t->rows[i]))
			t->rows[++keep] = t->rows[i];
	}
	t->nr = keep + 1;
	return 0;
}
