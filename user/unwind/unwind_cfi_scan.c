// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The pre-scan of one CFI section, before libdw runs anything of it (the
 * build as a whole: unwind_table.c). Every entry is walked with libdw's
 * dwarf_next_cfi(); each FDE's initial location is decoded with its CIE's
 * pointer encoding here, its program checked, and the FDE kept unless it
 * starts outside every executable segment; the FDEs are then sorted, and one
 * that overlaps one before it is left out.
 *
 * Everything read is untrusted. libdw (0.188) checks the bounds of what it
 * parses, but not what it allocates: it grows a frame's register array to the
 * highest register number a program names (DW_CFA_offset_extended r100000000:
 * gigabytes, zeroed) and copies the frame for every DW_CFA_remember_state. So
 * before libdw runs anything, every CIE's and FDE's program of the section is
 * scanned here (program_ok), and every FDE offset .eh_frame_hdr's table would
 * send libdw to must be one of those FDEs; a section that fails is -EBADMSG,
 * as is one malformed before its first FDE. Real objects never fail: the
 * scan finds no register past 130 (k7), no nesting past 2 and no operand of
 * more than 10 bytes (2380 objects here). An entry that
 * cannot be parsed is stepped over as libdw does; the pointer decoding here
 * checks its own bounds.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "unwind/unwind_table_int.h"

/* The CIE the FDEs being read refer to. */
struct cie {
	Dwarf_Off off;		/* (Dwarf_Off)-1: none */
	Dwarf_CFI_Entry ent;
	uint8_t enc;		/* of FDE pointers */
	bool enc_ok;		/* enc is one tk_unw_read_encoded() reads */
	bool ok;		/* its initial instructions pass program_ok() */
	size_t idx;		/* in b->cies */
};

_Thread_local bool tk_unw_cfa_odd;

/* ---- pointers as .eh_frame encodes them ----------------------------------------------- */

/* An unsigned or (@sign) signed LEB128 number. */
static int read_leb(const uint8_t **p, const uint8_t *end, bool sign, uint64_t *val)
{
	unsigned int shift = 0;
	uint64_t v = 0;

	while (*p < end) {
		uint8_t b = *(*p)++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (sign && shift < 64 && (b & 0x40))
				v |= ~0ULL << shift;
			*val = v;
			return 0;
		}
	}
	return -EBADMSG;
}

/* Little-endian (the object is x86-64) value of @n bytes, sign-extended when @sign. */
static int read_fixed(const uint8_t **p, const uint8_t *end, unsigned int n, bool sign,
		      uint64_t *val)
{
	uint64_t v = 0;
	unsigned int i;

	if (end - *p < (long)n)
		return -EBADMSG;
	for (i = 0; i < n; i++)
		v |= (uint64_t)(*p)[i] << (8 * i);
	if (sign && n < 8 && (v >> (8 * n - 1)) & 1)
		v |= ~0ULL << (8 * n);
	*p += n;
	*val = v;
	return 0;
}

/*
 * Read a pointer encoded as @enc at *@p; @field_vaddr: the address of *@p, for
 * DW_EH_PE_pcrel; @datarel: the base of DW_EH_PE_datarel (.eh_frame_hdr's
 * address in its table), 0 where it has none. Only what x86-64 objects use:
 * absolute, pc- or data-relative, direct.
 */
int tk_unw_read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t field_vaddr,
			uint64_t datarel, uint64_t *val)
{
	int err;

	if (enc == DW_EH_PE_omit || (enc & DW_EH_PE_indirect))
		return -ENOTSUP;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:
	case DW_EH_PE_udata8:
	case DW_EH_PE_sdata8:
		err = read_fixed(p, end, 8, false, val);
		break;
	case DW_EH_PE_udata4:
	case DW_EH_PE_sdata4:
		err = read_fixed(p, end, 4, enc & DW_EH_PE_signed, val);
		break;
	case DW_EH_PE_udata2:
	case DW_EH_PE_sdata2:
		err = read_fixed(p, end, 2, enc & DW_EH_PE_signed, val);
		break;
	case DW_EH_PE_uleb128:
	case DW_EH_PE_sleb128:
		err = read_leb(p, end, enc & DW_EH_PE_signed, val);
		break;
	default:
		return -ENOTSUP;
	}
	if (err)
		return err;
	switch (enc & 0x70) {
	case DW_EH_PE_absptr:
		return 0;
	case DW_EH_PE_pcrel:
		*val += field_vaddr;
		return 0;
	case DW_EH_PE_datarel:
		if (!datarel)
			return -ENOTSUP;
		*val += datarel;
		return 0;
	default:
		return -ENOTSUP;
	}
}

/* The FDE pointer encoding a CIE's augmentation ('R') gives; absptr without one. */
static int cie_fde_encoding(const Dwarf_CIE *cie, uint8_t *enc)
{
	const uint8_t *p = cie->augmentation_data, *end;
	const char *a = cie->augmentation;
	bool have_r = false;
	uint64_t skip;
	uint8_t penc;

	*enc = DW_EH_PE_absptr;
	if (!a || !*a)
		return 0;
	if (*a != 'z' || (!p && cie->augmentation_data_size))
		return -ENOTSUP;
	end = p + cie->augmentation_data_size;
	for (a++; *a; a++) {
		switch (*a) {
		case 'R':
			if (p >= end)
				return -EBADMSG;
			*enc = *p++;
			have_r = true;
			break;
		case 'L':
			if (p >= end)
				return -EBADMSG;
			p++;
			break;
		case 'P':
			/* the personality routine's pointer: skipped */
			if (p >= end)
				return -EBADMSG;
			penc = *p++;
			if (tk_unw_read_encoded(&p, end, penc & 0x0f, 0, 0, &skip))
				return -EBADMSG;
			break;
		case 'S':
		case 'B':
			break;
		default:
			/* 'z' says how long the data is, not where an 'R' after this is */
			return have_r ? 0 : -ENOTSUP;
		}
	}
	return 0;
}

/* ---- what libdw is given ------------------------------------------------------------- */

#define MAX_REG 255		/* x86-64 CFI names registers up to 130 (k7) */
#define MAX_DEPTH 64		/* of DW_CFA_remember_state; compilers nest 1 or 2 */

/*
 * May the CFA program [@p, @end) run in libdw? libdw (0.188) grows a frame's
 * register array to the highest register the program names (one
 * DW_CFA_offset_extended r100000000 costs gigabytes, zeroed) and copies the
 * frame for each DW_CFA_remember_state; a program that names a register past
 * MAX_REG or nests deeper than MAX_DEPTH is not run, nor one with an operand
 * longer than the 10 bytes libdw reads of a LEB128 (LEB). An opcode or operand
 * the scan cannot read ends it: libdw stops there (after reading at most one
 * byte past it). The interpreter (unwind_cfa.c) runs what passed, too.
 * @enc: the FDE pointer encoding (DW_CFA_set_loc's operand).
 */
/*
 * A LEB128 operand: libdw (get_uleb128, get_sleb128) reads 10 bytes of one at most and goes
 * on with the next as an instruction, so one longer than that would make libdw run another
 * program than the one checked here (an 11-byte operand, then DW_CFA_offset_extended
 * r100000000: 800 MB): such a program is not run. A cut one ends the program, as before.
 */
#define LEB(v)                                                                                 \
	do {                                                                                   \
		const uint8_t *q_ = p;                                                         \
                                                                                               \
		if (read_leb(&p, end, false, &(v)))                                            \
			return true;                                                           \
		if (p - q_ > 10)                                                               \
			return false;                                                          \
	} while (0)

static bool program_ok(const uint8_t *p, const uint8_t *end, uint8_t enc)
{
	uint64_t reg, v;
	int depth = 0;

	while (p < end) {
		uint8_t op = *p++;

		reg = 0;
		switch (op & 0xc0) {
		case DW_CFA_advance_loc:
		case DW_CFA_restore:
			continue;	/* the register, if any, is in the low 6 bits */
		case DW_CFA_offset:
			LEB(v);
			continue;
		}
		switch (op) {
		case DW_CFA_nop:
		case DW_CFA_GNU_window_save:
			break;
		case DW_CFA_remember_state:
			if (++depth > MAX_DEPTH)
				return false;
			break;
		case DW_CFA_restore_state:
			depth -= depth > 0;
			break;
		case DW_CFA_set_loc: {
			const uint8_t *q = p;

			if (tk_unw_read_encoded(&p, end, enc & 0x0f, 0, 0, &v))
				return true;
			if (p - q > 10)
				return false;	/* a LEB128 libdw reads otherwise (LEB above) */
			break;
		}
		case DW_CFA_advance_loc1:
		case DW_CFA_advance_loc2:
		case DW_CFA_advance_loc4:
		case DW_CFA_MIPS_advance_loc8:
			v = op == DW_CFA_MIPS_advance_loc8 ? 8 : 1 << (op - DW_CFA_advance_loc1);
			if ((uint64_t)(end - p) < v)
				return true;
			p += v;
			break;
		case DW_CFA_def_cfa_offset:
		case DW_CFA_def_cfa_offset_sf:
		case DW_CFA_GNU_args_size:
			LEB(v);
			break;
		case DW_CFA_def_cfa_expression:
			LEB(v);
			if ((uint64_t)(end - p) < v)
				return true;
			p += v;
			break;
		case DW_CFA_def_cfa_register:
			LEB(v);
			break;
		case DW_CFA_restore_extended:
		case DW_CFA_undefined:
		case DW_CFA_same_value:
			LEB(reg);
			break;
		case DW_CFA_def_cfa:
		case DW_CFA_def_cfa_sf:
			LEB(v);
			LEB(v);
			break;
		case DW_CFA_offset_extended:
		case DW_CFA_register:
		case DW_CFA_offset_extended_sf:
		case DW_CFA_val_offset:
		case DW_CFA_val_offset_sf:
		case DW_CFA_GNU_negative_offset_extended:
			/* the second operand: an offset or a register, a LEB128 either way */
			LEB(reg);
			LEB(v);
			break;
		case DW_CFA_expression:
		case DW_CFA_val_expression:
			LEB(reg);
			LEB(v);
			if ((uint64_t)(end - p) < v)
				return true;
			p += v;
			break;
		default:
			return true;
		}
		if (reg > MAX_REG)
			return false;
	}
	return true;
}

/* Does a rule for register @reg change a row? */
static bool row_reg(uint64_t reg, bool a64, int ra)
{
	if (reg == (uint64_t)ra)
		return true;
	return a64 ? reg == 29 || reg == 30 || reg == 31 : reg == 6 || reg == 7 || reg == 16;
}

uint64_t tk_unw_next_change(struct tk_unw_prog *c, uint64_t from, bool a64, int ra)
{
	uint64_t reg, v, delta;
	bool change;

	if (c->lost)
		return from;
	while (c->p < c->end) {
		uint8_t op = *c->p++;

		reg = UINT64_MAX;
		delta = 0;
		change = false;
		switch (op & 0xc0) {
		case DW_CFA_advance_loc:
			delta = op & 0x3f;
			break;
		case DW_CFA_offset:
			if (read_leb(&c->p, c->end, false, &v))
				goto lost;
			reg = op & 0x3f;
			break;
		case DW_CFA_restore:
			reg = op & 0x3f;
			break;
		default:
			switch (op) {
			case DW_CFA_nop:
				break;
			case DW_CFA_remember_state:	/* changes no row by itself */
				if (++c->depth <= 64)
					c->dirty &= ~(1ULL << (c->depth - 1));
				break;
			case DW_CFA_restore_state:
				/* a change only when a rule of a row changed since the remember */
				change = !c->depth || c->depth > 64 ||
					 (c->dirty >> (c->depth - 1) & 1);
				c->depth -= c->depth > 0;
				break;
			case DW_CFA_GNU_window_save:	/* arm64: negate_ra_state */
				change = true;
				break;
			case DW_CFA_advance_loc1:
			case DW_CFA_advance_loc2:
			case DW_CFA_advance_loc4:
				v = 1 << (op - DW_CFA_advance_loc1);
				if (read_fixed(&c->p, c->end, v, false, &delta))
					goto lost;
				break;
			case DW_CFA_GNU_args_size:
				if (read_leb(&c->p, c->end, false, &v))
					goto lost;
				break;
			case DW_CFA_def_cfa_offset:
			case DW_CFA_def_cfa_offset_sf:
			case DW_CFA_def_cfa_register:
				if (read_leb(&c->p, c->end, false, &v))
					goto lost;
				change = true;
				break;
			case DW_CFA_def_cfa:
			case DW_CFA_def_cfa_sf:
				if (read_leb(&c->p, c->end, false, &v) ||
				    read_leb(&c->p, c->end, false, &v))
					goto lost;
				change = true;
				break;
			case DW_CFA_restore_extended:
			case DW_CFA_undefined:
			case DW_CFA_same_value:
				if (read_leb(&c->p, c->end, false, &reg))
					goto lost;
				break;
			case DW_CFA_offset_extended:
			case DW_CFA_register:
			case DW_CFA_offset_extended_sf:
			case DW_CFA_val_offset:
			case DW_CFA_val_offset_sf:
			case DW_CFA_GNU_negative_offset_extended:
				if (read_leb(&c->p, c->end, false, &reg) ||
				    read_leb(&c->p, c->end, false, &v))
					goto lost;
				break;
			case DW_CFA_expression:
			case DW_CFA_val_expression:
				if (read_leb(&c->p, c->end, false, &reg) ||
				    read_leb(&c->p, c->end, false, &v) ||
				    (uint64_t)(c->end - c->p) < v)
					goto lost;
				c->p += v;
				break;
			default:	/* DW_CFA_set_loc, def_cfa_expression, what else there is */
				goto lost;
			}
		}
		if (delta) {
			c->loc += delta * c->code_align;
			continue;
		}
		if (reg != UINT64_MAX && row_reg(reg, a64, ra))
			change = true;
		if (!change)
			continue;
		c->dirty = ~0ULL;	/* every state remembered before differs now */
		if (c->loc >= from)
			return c->loc;
	}
	return UINT64_MAX;
lost:
	c->lost = true;
	return from;
}

/* ---- FDEs -------------------------------------------------------------------------------- */

static bool in_exec(const struct builder *b, uint64_t addr)
{
	size_t i;

	if (!b->nr_exec)
		return true;	/* no segments (ET_REL): nothing to check against */
	for (i = 0; i < b->nr_exec; i++) {
		if (addr >= b->exec[i].start && addr < b->exec[i].end)
			return true;
	}
	return false;
}

static int add_fde(struct builder *b, uint64_t start, uint64_t len, uint64_t cost,
		   const uint8_t *prog, const uint8_t *prog_end, const struct cie *cie)
{
	struct fde *f;

	if (!len || start + len < start)
		return 0;
	if (!in_exec(b, start)) {
		b->nr_dropped++;
		return 0;
	}
	if (b->nr_fdes == b->cap_fdes) {
		size_t cap = b->cap_fdes ? 2 * b->cap_fdes : 256;

		f = reallocarray(b->fdes, cap, sizeof(*f));
		if (!f)
			return -ENOMEM;
		b->fdes = f;
		b->cap_fdes = cap;
	}
	f = &b->fdes[b->nr_fdes++];
	f->start = start;
	f->end = start + len;
	f->cost = cost + 64;	/* and the frame libdw allocates */
	f->prog = prog;
	f->prog_end = prog_end;
	f->code_align = cie->ent.cie.code_alignment_factor;
	f->cie = cie->idx;
	return 0;
}

/*
 * Decode the range of the FDE @fde, whose CIE is @cie, check its program and
 * keep it. libdw may run the program of any FDE of the section (the one it
 * finds for an address), so any FDE whose program cannot be checked, or fails
 * the check, makes the section unsafe.
 */
static int read_fde(struct builder *b, const struct cfi_sec *s, const Dwarf_FDE *fde,
		    const struct cie *cie)
{
	const uint8_t *p = fde->start, *end = fde->end;
	const char *aug = cie->ent.cie.augmentation;
	uint64_t loc, len, n;

	if (!p || !end || end < p || !cie->enc_ok)
		goto unsafe;
	if (s->eh) {
		if (tk_unw_read_encoded(&p, end, cie->enc,
					s->vaddr + (p - (const uint8_t *)s->data->d_buf), 0,
					&loc) ||
		    tk_unw_read_encoded(&p, end, cie->enc & 0x0f, 0, 0, &len))
			goto unsafe;
	} else {
		/* .debug_frame: target addresses, 8 bytes on x86-64 */
		if (read_fixed(&p, end, 8, false, &loc) || read_fixed(&p, end, 8, false, &len))
			goto unsafe;
	}
	/* the instructions, after the augmentation data */
	if (aug && aug[0] == 'z') {
		if (read_leb(&p, end, false, &n) || (uint64_t)(end - p) < n)
			goto unsafe;
		p += n;
	} else if (aug && aug[0]) {
		goto unsafe;	/* augmentation data of a size we do not know */
	}
	if (!cie->ok || !program_ok(p, end, cie->enc))
		goto unsafe;
	return add_fde(b, loc, len, fde->end - fde->start, p, end, cie);
unsafe:
	b->unsafe = true;
	return 0;
}

/*
 * Make @cie the CIE at @off of @s, and b->cies[cie->idx] its rules. Returns 1, 0 when there
 * is none there, or -ENOMEM.
 */
static int load_cie(struct builder *b, const struct cfi_sec *s, Dwarf_Off off, struct cie *cie)
{
	struct tk_unw_cie *ci;
	Dwarf_Off next;
	uint8_t enc;

	if (cie->off == off)
		return 1;
	cie->off = (Dwarf_Off)-1;
	if (dwarf_next_cfi(s->ident, s->data, s->eh, off, &next, &cie->ent) ||
	    !dwarf_cfi_cie_p(&cie->ent))
		return 0;
	if (b->nr_cies == b->cap_cies) {
		size_t cap = b->cap_cies ? 2 * b->cap_cies : 16;

		ci = reallocarray(b->cies, cap, sizeof(*ci));
		if (!ci)
			return -ENOMEM;
		b->cies = ci;
		b->cap_cies = cap;
	}
	cie->enc = DW_EH_PE_absptr;
	cie->enc_ok = !s->eh || !cie_fde_encoding(&cie->ent.cie, &cie->enc);
	/* what read_fde() decodes: absolute or pc-relative */
	cie->enc_ok = cie->enc_ok && !(cie->enc & 0x60);
	cie->ok = cie->ent.cie.initial_instructions <= cie->ent.cie.initial_instructions_end &&
		  program_ok(cie->ent.cie.initial_instructions,
			     cie->ent.cie.initial_instructions_end, cie->enc);
	ci = &b->cies[b->nr_cies];
	ci->prog = cie->ent.cie.initial_instructions;
	ci->prog_end = cie->ent.cie.initial_instructions_end;
	ci->code_align = cie->ent.cie.code_alignment_factor;
	ci->data_align = cie->ent.cie.data_alignment_factor;
	ci->ra_reg = cie->ent.cie.return_address_register;
	/* what read_fde() decoded the FDE with: where libdw reads it otherwise, odd */
	ci->enc = s->eh ? cie->enc : DW_EH_PE_absptr;
	if (!(ci->enc & 0x0f))
		ci->enc |= DW_EH_PE_udata8;
	if (tk_unw_libdw_cie(b, &cie->ent.cie, &enc, &ci->signal) || (cie->enc_ok && enc != ci->enc))
		tk_unw_cfa_odd = true;
	cie->idx = b->nr_cies++;
	cie->off = off;
	return 1;
}

/*
 * Every FDE of @s into b->fdes, every FDE's offset into b->offs. As libdw's own
 * walk does, an entry that cannot be parsed but whose length can be is
 * stepped over. Returns 0 or a negative errno (-ENOMEM).
 */
int tk_unw_collect_fdes(struct builder *b, const struct cfi_sec *s)
{
	struct cie cie = { .off = (Dwarf_Off)-1 };
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry ent;
	size_t i;
	int rc, err;

	b->sec = s->data->d_buf;
	b->sec_end = b->sec + s->data->d_size;
	b->sec_vaddr = s->vaddr;
	b->nr_cies = b->nr_dropped = 0;
	for (;;) {
		Dwarf_Off at = off;

		next = off;
		rc = dwarf_next_cfi(s->ident, s->data, s->eh, off, &next, &ent);
		if (rc < 0)
			b->malformed = true;
		if (rc > 0 || next <= at)
			break;
		off = next;
		if (rc < 0 || dwarf_cfi_cie_p(&ent))
			continue;
		if (b->nr_offs == b->cap_offs) {
			size_t cap = b->cap_offs ? 2 * b->cap_offs : 256;
			uint64_t *offs = reallocarray(b->offs, cap, sizeof(*offs));

			if (!offs)
				return -ENOMEM;
			b->offs = offs;
			b->cap_offs = cap;
		}
		b->offs[b->nr_offs++] = at;
		err = load_cie(b, s, ent.fde.CIE_pointer, &cie);
		if (err < 0)
			return err;
		if (!err)
			continue;	/* libdw finds no CIE there either */
		i = b->nr_fdes;
		err = read_fde(b, s, &ent.fde, &cie);
		if (err)
			return err;
		if (b->nr_fdes > i)
			b->fdes[i].off = at;
	}
	return 0;
}

static bool is_fde_offset(const struct builder *b, uint64_t off)
{
	size_t lo = 0, hi = b->nr_offs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->offs[mid] == off)
			return true;
		if (b->offs[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* Is the FDE at section offset @off one collected, starting at @start? (b->fdes: by offset) */
static bool hdr_entry_ours(const struct builder *b, uint64_t start, uint64_t off)
{
	size_t lo = 0, hi = b->nr_fdes;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (b->fdes[mid].off == off)
			return b->fdes[mid].start == start;
		if (b->fdes[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/*
 * libdw looks FDEs up through the .eh_frame_hdr @hdr (@size bytes at @hdr_vaddr)
 * when it has a table, and reads an entry at whatever offset of .eh_frame (at
 * @eh_vaddr) the table says: each must be an FDE the walk found and checked.
 * The table is decoded as libdw decodes it (pc-relative to the table's start).
 */
static bool hdr_table_ok(const struct builder *b, const uint8_t *hdr, size_t size,
			 uint64_t hdr_vaddr, uint64_t eh_vaddr)
{
	const uint8_t *p = hdr + 4, *end = hdr + size, *table;
	uint64_t v, at, count, i, prev = 0;

	if (size < 4 || hdr[0] != 1 || hdr[1] == DW_EH_PE_omit || hdr[2] == DW_EH_PE_omit)
		return true;	/* libdw takes no table from it */
	if (tk_unw_read_encoded(&p, end, hdr[1], hdr_vaddr + 4, hdr_vaddr, &v) ||
	    tk_unw_read_encoded(&p, end, hdr[2], hdr_vaddr + (p - hdr), hdr_vaddr, &count))
		return false;
	if (!count || hdr[3] == DW_EH_PE_omit || (hdr[3] & ~DW_EH_PE_signed) == DW_EH_PE_uleb128)
		return true;
	for (i = 0, table = p; i < count && p < end; i++) {
		if (tk_unw_read_encoded(&p, end, hdr[3], hdr_vaddr + (p - table), hdr_vaddr, &at) ||
		    tk_unw_read_encoded(&p, end, hdr[3], hdr_vaddr + (p - table), hdr_vaddr, &v)) {
			tk_unw_cfa_odd = true;
			return p >= end;	/* libdw reads no further either */
		}
		if (!is_fde_offset(b, v - eh_vaddr))
			return false;
		/* libdw finds the FDE we take for an address only when the table lists ours */
		if (!hdr_entry_ours(b, at, v - eh_vaddr) || (i && at <= prev))
			tk_unw_cfa_odd = true;
		prev = at;
	}
	if (i != b->nr_fdes)
		tk_unw_cfa_odd = true;
	return true;
}

/* Is every .eh_frame_hdr libdw may take for @s's .eh_frame one that hdr_table_ok()? */
bool tk_unw_hdrs_ok(const struct builder *b, const struct cfi_sec *s)
{
	Elf_Scn *scn = NULL;
	const char *name;
	size_t shstrndx, i, n;
	GElf_Shdr shdr;
	GElf_Phdr ph;
	Elf_Data *d;

	if (!elf_getshdrnum(s->e, &n) && n) {
		if (elf_getshdrstrndx(s->e, &shstrndx))
			return true;	/* no names: libdw finds no .eh_frame_hdr either */
		while ((scn = elf_nextscn(s->e, scn))) {
			if (!gelf_getshdr(scn, &shdr) || shdr.sh_type == SHT_NOBITS)
				continue;
			name = elf_strptr(s->e, shstrndx, shdr.sh_name);
			if (!name || strcmp(name, ".eh_frame_hdr"))
				continue;
			d = elf_rawdata(scn, NULL);
			if (d && d->d_buf &&
			    !hdr_table_ok(b, d->d_buf, d->d_size, shdr.sh_addr, s->vaddr))
				return false;
		}
		return true;
	}
	if (elf_getphdrnum(s->e, &n))
		return true;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(s->e, i, &ph) || ph.p_type != PT_GNU_EH_FRAME)
			continue;
		d = elf_getdata_rawchunk(s->e, ph.p_offset, ph.p_filesz, ELF_T_BYTE);
		return !d || !d->d_buf || hdr_table_ok(b, d->d_buf, d->d_size, ph.p_vaddr, s->vaddr);
	}
	return true;
}

static int cmp_fde(const void *a, const void *b)
{
	const struct fde *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	/* the longer first: of FDEs at one address the longest is kept */
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;
	return 0;
}

/* Sort the FDEs and drop those that overlap one before them. */
void tk_unw_sort_fdes(struct builder *b)
{
	size_t i, n = 0;

	qsort(b->fdes, b->nr_fdes, sizeof(*b->fdes), cmp_fde);
	for (i = 0; i < b->nr_fdes; i++) {
		if (n && b->fdes[i].start < b->fdes[n - 1].end)
			continue;
		b->fdes[n++] = b->fdes[i];
	}
	b->nr_dropped += b->nr_fdes - n;
	b->nr_fdes = n;
	/* an FDE left out may be the one libdw finds for an address */
	if (b->nr_dropped)
		tk_unw_cfa_odd = true;
}

