// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * A CFA interpreter that runs each FDE's program once (the build as a whole:
 * unwind_table.c; the rows: unwind_rows.c). It gives, at each location the
 * rows ask about, the rules libdw (elfutils 0.188, libdw/cfi.c) would give
 * there: the CIE's initial rules (the ABI's default program of libdw's
 * backend first, then the CIE's initial instructions), then the FDE's
 * instructions up to the first advance past the location. libdw runs all of
 * that again at every location; here the place is kept, so an FDE costs its
 * program once whatever the number of rows (the quadratic term that made
 * libdw half of tracekit's CPU in a whole-system capture).
 *
 * Only what the rows read is kept: the CFA rule, and the rules of the frame
 * pointer and the return address (x86-64 rbp and rip, arm64 x29 and x30).
 * Every instruction is decoded, checked and failed on as libdw does, quirks
 * included, so the rows stay the same byte for byte (tests/unit/
 * test_unwind_cfa.c compares both on every object of this machine; the fuzz
 * target fuzz_unwind_table on fuzzed ones):
 *  - LEB128 operands read as libdw's get_uleb128/get_sleb128 do: at most 10
 *    (9 + 1) bytes, UINT64_MAX/INT64_MAX when unterminated, and the first byte
 *    read even at the program's end (the byte after it). Past the section
 *    itself nothing is read: libdw would read out of bounds there; that is
 *    an error here, and flagged (tk_unw_cfa_odd).
 *  - register offsets are kept in 61 bits, sign-extended (libdw's bitfield);
 *  - DW_CFA_GNU_window_save on x86-64 is SPARC's: the return address saved
 *    at CFA + 0; on arm64 (negate_ra_state) nothing;
 *  - remember_state left over at the end of a CIE is dropped; advance_loc or
 *    restore in a CIE's instructions fails every FDE of it;
 *  - an expression is decoded only as far as the rows need: an operation
 *    other than those of the rules the rows accept makes the rule
 *    unsupported, as libdw's longer or failing decoding does.
 * The programs were checked by the pre-scan (unwind_cfi_scan.c: registers up
 * to 255, remember_state nesting up to 64) before anything runs.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <string.h>

#include "unwind/unwind_table_int.h"

/* The slots of struct tk_unw_state: the frame pointer, the return address. */
static int slot(const struct builder *b, uint64_t reg)
{
	if (b->a64)
		return reg == 29 ? 0 : reg == 30 ? 1 : -1;
	return reg == 6 ? 0 : reg == 16 ? 1 : -1;
}

/* One byte at *@p, which may lie past the program but must lie in the section. */
static int byte(const struct tk_unw_cfa *c, const uint8_t **p, uint8_t *v)
{
	if (*p < c->b->sec || *p >= c->b->sec_end) {
		tk_unw_cfa_odd = true;	/* libdw reads past the section */
		return -1;
	}
	*v = *(*p)++;
	return 0;
}

/* libdw's __libdw_get_uleb128(@p, @end). */
static int uleb(const struct tk_unw_cfa *c, const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	const uint8_t *p0 = *p;
	size_t max = p0 < end ? (size_t)(end - p0) : 0, i;
	uint8_t b;

	*v = 0;
	if (max > 10)
		max = 10;
	if (p0 >= end)
		tk_unw_cfa_odd = true;	/* libdw reads past the program: its quirks differ */
	if (byte(c, p, &b))
		return -1;
	*v |= (uint64_t)(b & 0x7f);
	if (!(b & 0x80))
		return 0;
	for (i = 1; i < max; i++) {
		b = *(*p)++;
		*v |= (uint64_t)(b & 0x7f) << (i * 7);
		if (!(b & 0x80))
			return 0;
	}
	*v = UINT64_MAX;
	return 0;
}

/* libdw's __libdw_get_sleb128(@p, @end). */
static int sleb(const struct tk_unw_cfa *c, const uint8_t **p, const uint8_t *end, uint64_t *v)
{
	const uint8_t *p0 = *p;
	size_t max = p0 < end ? (size_t)(end - p0) : 0, i;
	uint64_t acc = 0;
	uint8_t b;

	if (max > 9)
		max = 9;
	if (p0 >= end)
		tk_unw_cfa_odd = true;
	for (i = 0; i == 0 || i < max; i++) {
		if (i == 0) {
			if (byte(c, p, &b))
				return -1;
		} else {
			b = *(*p)++;
		}
		acc |= (uint64_t)(b & 0x7f) << (i * 7);
		if (!(b & 0x80)) {
			if (b & 0x40)
				acc |= -((uint64_t)1 << ((i + 1) * 7));
			*v = acc;
			return 0;
		}
	}
	if (*p == end) {
		*v = INT64_MAX;
		return 0;
	}
	if (byte(c, p, &b))
		return -1;
	*v = b & 0x80 ? (uint64_t)INT64_MAX : acc | (uint64_t)b << (7 * max);
	return 0;
}

/* @n bytes little-endian at *@p, within @end. */
static int fixed(const uint8_t **p, const uint8_t *end, unsigned int n, uint64_t *v)
{
	unsigned int i;

	if (*p > end || (size_t)(end - *p) < n)
		return -1;
	for (*v = 0, i = 0; i < n; i++)
		*v |= (uint64_t)(*p)[i] << (8 * i);
	*p += n;
	return 0;
}

/* DW_CFA_set_loc's operand, as libdw's read_encoded_value (absolute or pc-relative). */
static int set_loc(const struct tk_unw_cfa *c, const uint8_t **p, uint64_t *loc)
{
	const struct builder *b = c->b;
	uint8_t enc = c->cie->enc;
	uint64_t base = 0, v;

	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		break;
	case DW_EH_PE_pcrel:
		base = b->sec_vaddr + (*p - b->sec);
		break;
	default:
		return -1;	/* the pre-scan let no other FDE through */
	}
	if (enc & DW_EH_PE_indirect)
		return -1;
	switch (enc & 0x0f) {
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		if (fixed(p, b->sec_end, 2, &v))
			return -1;
		if ((enc & 0x0f) == DW_EH_PE_sdata2)
			v = (uint64_t)(int64_t)(int16_t)v;
		break;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		if (fixed(p, b->sec_end, 4, &v))
			return -1;
		if ((enc & 0x0f) == DW_EH_PE_sdata4)
			v = (uint64_t)(int64_t)(int32_t)v;
		break;
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		if (fixed(p, b->sec_end, 8, &v))
			return -1;
		break;
	case DW_EH_PE_uleb128:
		if (uleb(c, p, b->sec_end, &v))
			return -1;
		break;
	case DW_EH_PE_sleb128:
		if (sleb(c, p, b->sec_end, &v))
			return -1;
		break;
	default:
		return -1;
	}
	*loc = base + v;
	return 0;
}

/* libdw keeps a register's offset in a 61-bit signed bitfield. */
static uint64_t sext61(uint64_t v)
{
	return (uint64_t)((int64_t)(v << 3) >> 3);
}

static void set_rule(struct tk_unw_cfa *c, uint64_t reg, uint8_t rule, uint64_t val,
		     const uint8_t *expr)
{
	int i = slot(c->b, reg);

	if (i < 0)
		return;
	c->st.rule[i] = rule;
	c->st.val[i] = rule == TK_R_OFF || rule == TK_R_VAL_OFF ? sext61(val) : val;
	c->st.expr[i] = expr;
}

/* libdw's enough_registers(): register numbers past what it allocates fail. */
static bool reg_ok(uint64_t reg)
{
	return reg < INT32_MAX / 8;
}

static void require_cfa_offset(struct tk_unw_cfa *c)
{
	if (c->st.cfa != TK_CFA_OFF)
		c->st.cfa = TK_CFA_INVALID;
}

/*
 * Run the instruction at c->p (libdw's execute_cfi, one step); @cie: the CIE's own initial
 * instructions. Returns 1 after an advance (c->loc moved), 0 after any other, -1 on failure.
 */
static int step(struct tk_unw_cfa *c, bool cie)
{
	const uint8_t *end = c->end;
	uint64_t reg, off, v, caf = c->cie->code_align;
	int64_t daf = c->cie->data_align;
	const uint8_t *at;
	uint8_t op = *c->p++, b;

	switch (op & 0xc0) {
	case DW_CFA_advance_loc:
		c->loc += (uint64_t)(op & 0x3f) * caf;
		return cie ? -1 : 1;
	case DW_CFA_offset:
		if (uleb(c, &c->p, end, &off))
			return -1;
		set_rule(c, op & 0x3f, TK_R_OFF, off * (uint64_t)daf, NULL);
		return 0;
	case DW_CFA_restore:
		reg = op & 0x3f;
		goto restore;
	}
	switch (op) {
	case DW_CFA_advance_loc1:
		if (c->p >= end)
			tk_unw_cfa_odd = true;
		if (byte(c, &c->p, &b))
			return -1;
		c->loc += b * caf;
		return cie ? -1 : 1;
	case DW_CFA_advance_loc2:
	case DW_CFA_advance_loc4:
	case DW_CFA_MIPS_advance_loc8:
		if (fixed(&c->p, end, op == DW_CFA_MIPS_advance_loc8 ? 8 : 2 << (op - 3), &v))
			return -1;
		c->loc += v * caf;
		return cie ? -1 : 1;
	case DW_CFA_set_loc:
		if (set_loc(c, &c->p, &c->loc))
			return -1;
		return cie ? -1 : 1;
	case DW_CFA_def_cfa:
	case DW_CFA_def_cfa_sf:
		if (uleb(c, &c->p, end, &reg) || c->p >= end)
			return -1;
		if (op == DW_CFA_def_cfa) {
			if (uleb(c, &c->p, end, &off))
				return -1;
		} else {
			if (sleb(c, &c->p, end, &v))
				return -1;
			off = v * (uint64_t)daf;
		}
		c->st.cfa = TK_CFA_OFF;
		c->st.cfa_reg = reg;
		c->st.cfa_off = off;
		return 0;
	case DW_CFA_def_cfa_register:
		if (uleb(c, &c->p, end, &reg))
			return -1;
		require_cfa_offset(c);
		c->st.cfa_reg = reg;
		return 0;
	case DW_CFA_def_cfa_offset:
	case DW_CFA_def_cfa_offset_sf:
		if (op == DW_CFA_def_cfa_offset) {
			if (uleb(c, &c->p, end, &off))
				return -1;
		} else {
			if (sleb(c, &c->p, end, &v))
				return -1;
			off = v * (uint64_t)daf;
		}
		require_cfa_offset(c);
		c->st.cfa_off = off;
		return 0;
	case DW_CFA_def_cfa_expression:
		if (uleb(c, &c->p, end, &v) || c->p > end || v > (uint64_t)(end - c->p))
			return -1;
		c->st.cfa = TK_CFA_EXPR;
		c->st.cfa_expr = c->p;
		c->st.cfa_len = v;
		c->p += v;
		return 0;
	case DW_CFA_undefined:
	case DW_CFA_same_value:
		if (uleb(c, &c->p, end, &reg) || !reg_ok(reg))
			return -1;
		set_rule(c, reg, op == DW_CFA_undefined ? TK_R_UNDEF : TK_R_SAME, 0, NULL);
		return 0;
	case DW_CFA_offset_extended:
	case DW_CFA_val_offset:
		if (uleb(c, &c->p, end, &reg) || c->p >= end || uleb(c, &c->p, end, &off) ||
		    !reg_ok(reg))
			return -1;
		set_rule(c, reg, op == DW_CFA_val_offset ? TK_R_VAL_OFF : TK_R_OFF,
			 off * (uint64_t)daf, NULL);
		return 0;
	case DW_CFA_offset_extended_sf:
	case DW_CFA_val_offset_sf:
		if (uleb(c, &c->p, end, &reg) ||
		    (op == DW_CFA_val_offset_sf && c->p >= end) || sleb(c, &c->p, end, &v) ||
		    !reg_ok(reg))
			return -1;
		set_rule(c, reg, op == DW_CFA_val_offset_sf ? TK_R_VAL_OFF : TK_R_OFF,
			 v * (uint64_t)daf, NULL);
		return 0;
	case DW_CFA_GNU_negative_offset_extended:
		if (uleb(c, &c->p, end, &reg) || c->p >= end || uleb(c, &c->p, end, &off) ||
		    !reg_ok(reg))
			return -1;
		set_rule(c, reg, TK_R_OFF, -off * (uint64_t)daf, NULL);
		return 0;
	case DW_CFA_register:
		if (uleb(c, &c->p, end, &reg) || c->p >= end || uleb(c, &c->p, end, &v) ||
		    !reg_ok(reg))
			return -1;
		set_rule(c, reg, TK_R_REG, v, NULL);
		return 0;
	case DW_CFA_expression:
	case DW_CFA_val_expression:
		if (uleb(c, &c->p, end, &reg))
			return -1;
		at = c->p;
		if ((op == DW_CFA_expression && c->p >= end) || uleb(c, &c->p, end, &v) ||
		    c->p > end || v > (uint64_t)(end - c->p))
			return -1;
		c->p += v;
		if (!reg_ok(reg))
			return -1;
		set_rule(c, reg, op == DW_CFA_expression ? TK_R_EXPR : TK_R_VAL_EXPR, 0, at);
		return 0;
	case DW_CFA_restore_extended:
		if (uleb(c, &c->p, end, &reg))
			return -1;
restore:
		if (cie || !reg_ok(reg))
			return -1;	/* a CIE's instructions cannot restore */
		if (slot(c->b, reg) >= 0) {
			int i = slot(c->b, reg);

			c->st.rule[i] = c->init.rule[i];
			c->st.val[i] = c->init.val[i];
			c->st.expr[i] = c->init.expr[i];
		}
		return 0;
	case DW_CFA_remember_state:
		if (c->depth >= TK_UNW_CFA_DEPTH)
			return -1;	/* program_ok let none through */
		c->saved[c->depth++] = c->st;
		return 0;
	case DW_CFA_restore_state:
		if (!c->depth)
			return -1;
		c->st = c->saved[--c->depth];
		return 0;
	case DW_CFA_nop:
		return 0;
	case DW_CFA_GNU_window_save:
		/* arm64: negate_ra_state, which libdw ignores; else SPARC's register window */
		if (!c->b->a64)
			set_rule(c, 16, TK_R_OFF, 0, NULL);
		return 0;
	case DW_CFA_GNU_args_size:
		return uleb(c, &c->p, end, &v);
	default:
		return -1;
	}
}

void tk_unw_cfa_init(struct tk_unw_cfa *c, const struct builder *b, const struct fde *fde)
{
	const struct tk_unw_cie *cie = &b->cies[fde->cie];
	int r = 0;

	memset(&c->st, 0, sizeof(c->st));
	c->b = b;
	c->cie = cie;
	c->depth = 0;
	c->pending = false;
	c->failed = false;
	/* libdw's backends: x86-64 rbp and rip same value, CFA undefined; arm64 CFA = x30 + 0 */
	c->st.rule[0] = c->st.rule[1] = TK_R_SAME;
	if (b->a64) {
		c->st.cfa = TK_CFA_OFF;
		c->st.cfa_reg = 30;
	}
	c->p = cie->prog;
	c->end = cie->prog_end;
	c->loc = 0;
	while (c->p < c->end && r >= 0)
		r = step(c, true);
	c->failed = r < 0;
	c->depth = 0;		/* what the CIE remembered is dropped, its rules kept */
	c->init = c->st;
	c->p = fde->prog;
	c->end = fde->prog_end;
	c->loc = c->start = fde->start;
	c->fde_end = fde->end;
}

int tk_unw_cfa_at(struct tk_unw_cfa *c, uint64_t pc, const struct tk_unw_state **st,
		  uint64_t *start, uint64_t *end)
{
	int r;

	for (;;) {
		if (c->failed)
			return -1;
		if (c->pending) {
			if (pc < c->loc) {
				*end = c->loc;
				break;
			}
			c->start = c->loc;
			c->pending = false;
		}
		if (c->p >= c->end) {
			*end = c->fde_end;
			break;
		}
		r = step(c, false);
		if (r < 0)
			c->failed = true;
		else if (r > 0)
			c->pending = true;
	}
	*st = &c->st;
	*start = c->start;
	return 0;
}

/*
 * Decode the expression [@p, @end) into @ops after @n of them, at most @cap in all, as libdw
 * does; only the operations the rows' rules are made of: -1 at any other, or past @cap.
 */
static int expr_ops(const struct tk_unw_cfa *c, const uint8_t *p, const uint8_t *end,
		    Dwarf_Op *ops, size_t *n, size_t cap)
{
	while (p < end) {
		Dwarf_Op *o = &ops[*n];
		uint8_t op = *p++;

		if (*n == cap)
			return -1;
		memset(o, 0, sizeof(*o));
		o->atom = op;
		if (op >= DW_OP_breg0 && op <= DW_OP_breg31) {
			if (sleb(c, &p, end, &o->number))
				return -1;
		} else if (op == DW_OP_bregx) {
			if (uleb(c, &p, end, &o->number) || p >= end ||
			    sleb(c, &p, end, &o->number2))
				return -1;
		} else if (op == DW_OP_plus_uconst) {
			if (uleb(c, &p, end, &o->number))
				return -1;
		} else if (!(op >= DW_OP_lit0 && op <= DW_OP_lit31) && op != DW_OP_deref &&
			   op != DW_OP_and && op != DW_OP_ge && op != DW_OP_shl &&
			   op != DW_OP_plus) {
			return -1;
		}
		++*n;
	}
	return 0;
}

int tk_unw_cfa_ops(const struct tk_unw_cfa *c, const struct tk_unw_state *st, Dwarf_Op mem[9],
		   Dwarf_Op **ops, size_t *n)
{
	*ops = NULL;
	*n = 0;
	switch (st->cfa) {
	case TK_CFA_UNDEF:
		return 0;
	case TK_CFA_OFF:
		memset(mem, 0, sizeof(*mem));
		mem[0].atom = DW_OP_bregx;
		mem[0].number = st->cfa_reg;
		mem[0].number2 = st->cfa_off;
		*ops = mem;
		*n = 1;
		return 0;
	case TK_CFA_EXPR:
		if (!st->cfa_len)
			return 0;
		*ops = mem;
		return expr_ops(c, st->cfa_expr, st->cfa_expr + st->cfa_len, mem, n, 9);
	default:
		return -1;
	}
}

int tk_unw_reg_ops(const struct tk_unw_cfa *c, const struct tk_unw_state *st, int i,
		   Dwarf_Op mem[3], Dwarf_Op **ops, size_t *n)
{
	const uint8_t *p;
	uint64_t len;

	*ops = mem;
	*n = 0;
	switch (st->rule[i]) {
	case TK_R_UNSPEC:
	case TK_R_UNDEF:
		return 0;
	case TK_R_SAME:
		*ops = NULL;
		return 0;
	case TK_R_OFF:
	case TK_R_VAL_OFF:
		memset(mem, 0, 3 * sizeof(*mem));
		mem[(*n)++].atom = DW_OP_call_frame_cfa;
		if (st->val[i]) {
			mem[*n].atom = DW_OP_plus_uconst;
			mem[(*n)++].number = st->val[i];
		}
		if (st->rule[i] == TK_R_VAL_OFF)
			mem[(*n)++].atom = DW_OP_stack_value;
		return 0;
	case TK_R_REG:
		memset(mem, 0, sizeof(*mem));
		mem[0].atom = DW_OP_regx;
		mem[0].number = st->val[i];
		*n = 1;
		return 0;
	default:
		/* the block: its length, read to the section's end, then the operations */
		p = st->expr[i];
		if (uleb(c, &p, c->b->sec_end, &len) || p > c->b->sec_end ||
		    len > (uint64_t)(c->b->sec_end - p))
			return -1;
		if (!len)
			return 0;
		if (st->rule[i] == TK_R_VAL_EXPR)
			return -1;	/* ends with DW_OP_stack_value: no rule the rows take */
		memset(mem, 0, sizeof(*mem));
		mem[0].atom = DW_OP_call_frame_cfa;
		*n = 1;
		return expr_ops(c, p, p + len, mem, n, 2);
	}
}

/* ---- CIEs --------------------------------------------------------------------------------- */

/* The size libdw (encoded_value_size) gives a pointer encoded as @enc at @p; 0 unknown. */
static size_t libdw_enc_size(const struct builder *b, uint8_t enc, const uint8_t *p)
{
	if (enc == DW_EH_PE_omit)
		return 0;
	switch (enc & 0x07) {
	case DW_EH_PE_udata2:
		return 2;
	case DW_EH_PE_udata4:
		return 4;
	case DW_EH_PE_udata8:
	case DW_EH_PE_absptr:
		return 8;
	case DW_EH_PE_uleb128:
		/* sic: up to the first byte with its high bit set */
		for (const uint8_t *q = p; q && q >= b->sec && q < b->sec_end;)
			if (*q++ & 0x80)
				return q - p;
		return 0;
	default:
		return 0;
	}
}

/*
 * The FDE pointer encoding and the signal flag of @c as libdw reads them (intern_new_cie:
 * every letter of a 'z' augmentation, no bounds on its data; absptr made udata8). -1 when it
 * would read past the augmentation data.
 */
int tk_unw_libdw_cie(const struct builder *b, const Dwarf_CIE *c, uint8_t *enc, bool *signal)
{
	const uint8_t *d = c->augmentation_data, *end = d + c->augmentation_data_size;
	bool sized = false;

	*enc = DW_EH_PE_absptr;
	*signal = false;
	for (const char *a = c->augmentation; a && *a; a++) {
		switch (*a) {
		case 'z':
			sized = true;
			continue;
		case 'S':
			*signal = true;
			continue;
		case 'L':
		case 'R':
		case 'P':
			if (!d || d >= end)
				return -1;
			if (*a == 'R')
				*enc = *d;
			else if (*a == 'P')
				d += libdw_enc_size(b, d[0], d + 1);
			d++;
			continue;
		default:
			if (sized)
				continue;
		}
		break;
	}
	if (!(*enc & 0x0f))
		*enc |= DW_EH_PE_udata8;
	return 0;
}
