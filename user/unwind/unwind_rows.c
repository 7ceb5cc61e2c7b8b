// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The rows of one FDE, from libdw (the build as a whole: unwind_table.c):
 * dwarf_cfi_addrframe() at the FDE's start gives the first row and, through
 * dwarf_frame_info(), where it ends; the next query is made there, and so on
 * to the FDE's end. Each query is charged against the build's budget (why:
 * unwind_table.c); past it, the rest of the FDE is one UNW_ROW_UNSUPPORTED row.
 * Each frame libdw gives becomes one row of bpf/unwind.h; what the rows cannot
 * express is UNW_ROW_UNSUPPORTED.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdlib.h>

#include <linux/types.h>

#include "bpf/unwind.h"
#include "unwind/unwind.h"
#include "unwind/unwind_table_int.h"

#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16

/* ---- rows -------------------------------------------------------------------------------- */

static bool fits_s16(int64_t v)
{
	return v >= INT16_MIN && v <= INT16_MAX;
}

/* The CFA rule of @f as a row kind and offset; false when the rows cannot express it. */
static bool cfa_rule(Dwarf_Frame *f, struct unw_row *r)
{
	Dwarf_Op *ops;
	size_t n, i;
	int64_t off;

	if (dwarf_frame_cfa(f, &ops, &n) || !ops || !n)
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
static enum reg_rule reg_rule(Dwarf_Frame *f, int reg, int64_t *off)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t n = 0;

	if (dwarf_frame_register(f, reg, mem, &ops, &n))
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
static int8_t rbp_rule(Dwarf_Frame *f)
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
static void frame_row(Dwarf_Frame *f, int ra_reg, bool signal, struct unw_row *r)
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

/* The rows of the FDE @fde; an INVALID row at its end when @next_start is not there. */
int tk_unw_fde_rows(struct builder *b, Dwarf_CFI *cfi, const struct fde *fde, uint64_t next_start)
{
	uint64_t pc = fde->start;
	int err = 0;

	while (pc < fde->end) {
		Dwarf_Addr start, end;
		Dwarf_Frame *f;
		struct unw_row r;
		bool signal;
		int ra;

		if (b->work > b->lim.work || tk_unw_now_ns() - b->t0_ns > b->lim.build_ns) {
			b->over_limit = true;
			return 0;
		}
		if (b->work > b->budget) {
			err = emit(b, pc, row_unsupported);
			break;
		}
		b->work += fde->cost;
		if (dwarf_cfi_addrframe(cfi, pc, &f)) {
			err = emit(b, pc, row_unsupported);
			break;
		}
		ra = dwarf_frame_info(f, &start, &end, &signal);
		if (ra < 0 || end <= pc || start > pc) {
			free(f);
			err = emit(b, pc, row_unsupported);
			break;
		}
		frame_row(f, ra, signal, &r);
		free(f);
		err = emit(b, pc, r);
		if (err)
			return err;
		pc = end < fde->end ? end : fde->end;
	}
	if (!err && next_start != fde->end)
		err = emit(b, fde->end, row_invalid);
	return err;
}

