// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Unwind tables: an object's CFI turned into the rows of bpf/unwind.h.
 *
 * The FDEs are found by walking the CFI section entry by entry with libdw's
 * dwarf_next_cfi() (every FDE, not only those a .eh_frame_hdr table lists, and
 * the same code for .debug_frame), decoding each FDE's initial location with
 * its CIE's pointer encoding here. They are sorted; an FDE that overlaps one
 * before it, or that starts outside every executable segment (.debug_frame
 * keeps FDEs of discarded functions at address 0), is left out. Each FDE's rows
 * are then read from libdw: dwarf_cfi_addrframe() at the FDE's start gives the
 * first row and, through dwarf_frame_info(), where it ends; the next query is
 * made there, and so on to the FDE's end. FDEs starting 4 GiB or more past the
 * first are left out (a __u32 pc cannot hold them); the stats have no field
 * to count them in, st.fdes counts the FDEs whose rows the table holds.
 *
 * Why libdw and not a CFA interpreter of our own: dwarf_cfi_addrframe() runs
 * the FDE's program from its start again at every query, so walking an FDE
 * row by row costs O(rows^2) instructions. Measured (Debian 12, elfutils
 * 0.188, -O2, warm page cache, whole builds with the checks below, CPU time):
 *
 *   libc.so.6        3713 FDEs   28.3k rows    6-7.5 ms
 *   libstdc++.so.6   4867 FDEs   34.4k rows    8-9 ms
 *   python3.11      10221 FDEs   64.6k rows   16-19 ms
 *   redis-server     4303 FDEs   40.0k rows    9-9.5 ms
 *
 * Compilers emit short programs (a few rows per FDE), so the quadratic term
 * stays small: the bytes libdw runs are 18-30 times the section's size. An
 * interpreter of our own would save a few milliseconds per object, built once
 * per object, at the price of a second DWARF CFA implementation to keep right.
 * What the quadratic term does allow is a crafted FDE of many rows costing
 * seconds (one FDE of 40000 rows: 2.9 s): every query is charged its FDE's
 * size against a budget of 1024 times the section's size (plus 64 MiB), and
 * past it each FDE left is one UNW_ROW_UNSUPPORTED row (that FDE: 3 ms).
 *
 * Everything read is untrusted. libdw (0.188) checks the bounds of what it
 * parses, but not what it allocates: it grows a frame's register array to the
 * highest register number a program names (DW_CFA_offset_extended r100000000:
 * gigabytes, zeroed) and copies the frame for every DW_CFA_remember_state. So
 * before libdw runs anything, every CIE's and FDE's program of the section is
 * scanned here (program_ok), and every FDE offset .eh_frame_hdr's table would
 * send libdw to must be one of those FDEs; a section that fails is -EBADMSG,
 * as is one malformed before its first FDE. Real objects never fail: the
 * scan finds no register past 130 (k7) and no nesting past 2. An entry that
 * cannot be parsed is stepped over as libdw does; the pointer decoding here
 * checks its own bounds.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/types.h>

#include "bpf/unwind.h"
#include "proc/elf_reader.h"
#include "unwind/unwind.h"

#define REG_RBP 6
#define REG_RSP 7
#define REG_RA 16

/* Bytes of CFI program a build may run: this times the section, plus a floor. */
#define WORK_PER_BYTE 1024
#define WORK_FLOOR (64ULL << 20)

struct fde {
	uint64_t start;
	uint64_t end;		/* exclusive */
	uint64_t cost;		/* bytes libdw runs, at most, for one query in it */
};

/* The CIE the FDEs being read refer to. */
struct cie {
	Dwarf_Off off;		/* (Dwarf_Off)-1: none */
	Dwarf_CFI_Entry ent;
	uint8_t enc;		/* of FDE pointers */
	bool enc_ok;		/* enc is one read_encoded() reads */
	bool ok;		/* its initial instructions pass program_ok() */
};

struct range {
	uint64_t start;
	uint64_t end;
};

struct builder {
	struct tk_unw_table *t;
	size_t cap;			/* of t->rows */
	struct fde *fdes;
	size_t nr_fdes, cap_fdes;
	struct range *exec;		/* executable PT_LOAD segments of the object */
	size_t nr_exec;
	uint64_t work, budget;
	uint64_t *offs;			/* section offsets of every FDE, ascending */
	size_t nr_offs, cap_offs;
	bool malformed;			/* an entry could not be parsed */
	bool unsafe;			/* a program libdw must not run (program_ok) */
};

/* One CFI section: its bytes for dwarf_next_cfi(), where they are loaded, its libdw handle. */
struct cfi_sec {
	Elf *e;				/* the object it is read from */
	Elf_Data *data;
	uint64_t vaddr;
	bool eh;			/* .eh_frame, not .debug_frame */
	const unsigned char *ident;
	Dwarf_CFI *cfi;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

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
static int read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t field_vaddr,
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
			if (read_encoded(&p, end, penc & 0x0f, 0, 0, &skip))
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
 * MAX_REG or nests deeper than MAX_DEPTH is not run. An opcode or operand the
 * scan cannot read ends it: libdw stops with an error at the same place.
 * @enc: the FDE pointer encoding (DW_CFA_set_loc's operand).
 */
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
			if (read_leb(&p, end, false, &v))
				return true;
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
		case DW_CFA_set_loc:
			if (read_encoded(&p, end, enc & 0x0f, 0, 0, &v))
				return true;
			break;
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
			if (read_leb(&p, end, false, &v))
				return true;
			break;
		case DW_CFA_def_cfa_expression:
			if (read_leb(&p, end, false, &v) || (uint64_t)(end - p) < v)
				return true;
			p += v;
			break;
		case DW_CFA_def_cfa_register:
			if (read_leb(&p, end, false, &v))
				return true;
			break;
		case DW_CFA_restore_extended:
		case DW_CFA_undefined:
		case DW_CFA_same_value:
			if (read_leb(&p, end, false, &reg))
				return true;
			break;
		case DW_CFA_def_cfa:
		case DW_CFA_def_cfa_sf:
			if (read_leb(&p, end, false, &v) || read_leb(&p, end, false, &v))
				return true;
			break;
		case DW_CFA_offset_extended:
		case DW_CFA_register:
		case DW_CFA_offset_extended_sf:
		case DW_CFA_val_offset:
		case DW_CFA_val_offset_sf:
		case DW_CFA_GNU_negative_offset_extended:
			/* the second operand: an offset or a register, a LEB128 either way */
			if (read_leb(&p, end, false, &reg) || read_leb(&p, end, false, &v))
				return true;
			break;
		case DW_CFA_expression:
		case DW_CFA_val_expression:
			if (read_leb(&p, end, false, &reg) || read_leb(&p, end, false, &v) ||
			    (uint64_t)(end - p) < v)
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

static int add_fde(struct builder *b, uint64_t start, uint64_t len, uint64_t cost)
{
	struct fde *f;

	if (!len || start + len < start || !in_exec(b, start))
		return 0;
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
		if (read_encoded(&p, end, cie->enc,
				 s->vaddr + (p - (const uint8_t *)s->data->d_buf), 0, &loc) ||
		    read_encoded(&p, end, cie->enc & 0x0f, 0, 0, &len))
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
	return add_fde(b, loc, len, fde->end - fde->start);
unsafe:
	b->unsafe = true;
	return 0;
}

/* Make @cie the CIE at @off of @s. Returns false when there is none there. */
static bool load_cie(const struct cfi_sec *s, Dwarf_Off off, struct cie *cie)
{
	Dwarf_Off next;

	if (cie->off == off)
		return true;
	cie->off = (Dwarf_Off)-1;
	if (dwarf_next_cfi(s->ident, s->data, s->eh, off, &next, &cie->ent) ||
	    !dwarf_cfi_cie_p(&cie->ent))
		return false;
	cie->off = off;
	cie->enc = DW_EH_PE_absptr;
	cie->enc_ok = !s->eh || !cie_fde_encoding(&cie->ent.cie, &cie->enc);
	/* what read_fde() decodes: absolute or pc-relative */
	cie->enc_ok = cie->enc_ok && !(cie->enc & 0x60);
	cie->ok = cie->ent.cie.initial_instructions <= cie->ent.cie.initial_instructions_end &&
		  program_ok(cie->ent.cie.initial_instructions,
			     cie->ent.cie.initial_instructions_end, cie->enc);
	return true;
}

/*
 * Every FDE of @s into b->fdes, every FDE's offset into b->offs. As libdw's own
 * walk does, an entry that cannot be parsed but whose length can be is
 * stepped over. Returns 0 or a negative errno (-ENOMEM).
 */
static int collect_fdes(struct builder *b, const struct cfi_sec *s)
{
	struct cie cie = { .off = (Dwarf_Off)-1 };
	Dwarf_Off off = 0, next;
	Dwarf_CFI_Entry ent;
	int rc, err;

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
		if (!load_cie(s, ent.fde.CIE_pointer, &cie))
			continue;	/* libdw finds no CIE there either */
		err = read_fde(b, s, &ent.fde, &cie);
		if (err)
			return err;
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
	uint64_t v, count, i;

	if (size < 4 || hdr[0] != 1 || hdr[1] == DW_EH_PE_omit || hdr[2] == DW_EH_PE_omit)
		return true;	/* libdw takes no table from it */
	if (read_encoded(&p, end, hdr[1], hdr_vaddr + 4, hdr_vaddr, &v) ||
	    read_encoded(&p, end, hdr[2], hdr_vaddr + (p - hdr), hdr_vaddr, &count))
		return false;
	if (!count || hdr[3] == DW_EH_PE_omit || (hdr[3] & ~DW_EH_PE_signed) == DW_EH_PE_uleb128)
		return true;
	for (i = 0, table = p; i < count && p < end; i++) {
		if (read_encoded(&p, end, hdr[3], hdr_vaddr + (p - table), hdr_vaddr, &v) ||
		    read_encoded(&p, end, hdr[3], hdr_vaddr + (p - table), hdr_vaddr, &v))
			return p >= end;	/* libdw reads no further either */
		if (!is_fde_offset(b, v - eh_vaddr))
			return false;
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
static void sort_fdes(struct builder *b)
{
	size_t i, n = 0;

	qsort(b->fdes, b->nr_fdes, sizeof(*b->fdes), cmp_fde);
	for (i = 0; i < b->nr_fdes; i++) {
		if (n && b->fdes[i].start < b->fdes[n - 1].end)
			continue;
		b->fdes[n++] = b->fdes[i];
	}
	b->nr_fdes = n;
}

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
static int fde_rows(struct builder *b, Dwarf_CFI *cfi, const struct fde *fde, uint64_t next_start)
{
	uint64_t pc = fde->start;
	int err = 0;

	while (pc < fde->end) {
		Dwarf_Addr start, end;
		Dwarf_Frame *f;
		struct unw_row r;
		bool signal;
		int ra;

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

/* ---- sources --------------------------------------------------------------------------- */

static Elf_Scn *find_section(Elf *e, const char *name, GElf_Shdr *shdr)
{
	Elf_Scn *scn = NULL;
	const char *n;
	size_t shstrndx;

	if (elf_getshdrstrndx(e, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, shdr))
			continue;
		n = elf_strptr(e, shstrndx, shdr->sh_name);
		if (n && !strcmp(n, name))
			return shdr->sh_type == SHT_NOBITS ? NULL : scn;
	}
	return NULL;
}

/*
 * .eh_frame of an object without section headers: where PT_GNU_EH_FRAME's
 * eh_frame_ptr says, up to the end of the file (the entries end with a zero
 * terminator).
 */
static Elf_Data *eh_frame_by_phdr(struct tk_elf *elf, Elf *e, uint64_t *vaddr)
{
	uint8_t hdr[12];
	const uint8_t *p = hdr + 4;
	size_t i, n, size;
	uint64_t at, off;
	GElf_Phdr ph;

	if (elf_getphdrnum(e, &n))
		return NULL;
	for (i = 0; i < n; i++) {
		if (gelf_getphdr(e, i, &ph) && ph.p_type == PT_GNU_EH_FRAME)
			break;
	}
	if (i == n || tk_elf__read_vaddr(elf, ph.p_vaddr, hdr, sizeof(hdr)) < 8 || hdr[0] != 1 ||
	    read_encoded(&p, hdr + sizeof(hdr), hdr[1], ph.p_vaddr + 4, ph.p_vaddr, &at) ||
	    !elf_rawfile(e, &size))
		return NULL;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(e, i, &ph) || ph.p_type != PT_LOAD || at < ph.p_vaddr ||
		    at - ph.p_vaddr >= ph.p_filesz)
			continue;
		/* to the end of the file, as libdw reads it (it has no size either) */
		off = ph.p_offset + (at - ph.p_vaddr);
		if (off >= size)
			return NULL;
		*vaddr = at;
		return elf_getdata_rawchunk(e, off, size - off, ELF_T_BYTE);
	}
	return NULL;
}

/* Is every .eh_frame_hdr libdw may take for @s's .eh_frame one that hdr_table_ok()? */
static bool hdrs_ok(const struct builder *b, const struct cfi_sec *s)
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

/*
 * Rows from the CFI section @s. Returns 1 when it held at least one FDE (the
 * table is built from it), 0 when none, or a negative errno: -EBADMSG when it
 * is malformed before its first FDE, or holds what libdw must not be given.
 */
static int build_from(struct builder *b, struct cfi_sec *s)
{
	struct tk_unw_table *t = b->t;
	size_t i;
	int err;

	if (!s->data || !s->data->d_buf || !s->data->d_size)
		return 0;
	b->nr_fdes = b->nr_offs = 0;
	b->malformed = b->unsafe = false;
	err = collect_fdes(b, s);
	if (err)
		return err;
	if (b->unsafe || (s->eh && !hdrs_ok(b, s)))
		return -EBADMSG;
	if (!b->nr_fdes)
		return b->malformed ? -EBADMSG : 0;
	if (!s->cfi)
		return -EBADMSG;	/* libdw could not read what we could */
	b->budget = WORK_FLOOR + WORK_PER_BYTE * (uint64_t)s->data->d_size;
	sort_fdes(b);
	t->base = b->fdes[0].start;
	for (i = 0; i < b->nr_fdes; i++) {
		const struct fde *f = &b->fdes[i];

		if (f->start - t->base > UINT32_MAX)
			break;	/* this and all after it: past base + 4 GiB */
		err = fde_rows(b, s->cfi, f, i + 1 < b->nr_fdes ? b->fdes[i + 1].start : 0);
		if (err)
			return err;
	}
	t->st.fdes = i;
	return 1;
}

static int from_eh_frame(struct builder *b, struct tk_elf *elf)
{
	Elf *e = tk_elf__libelf(elf);
	struct cfi_sec s = { .e = e, .eh = true };
	GElf_Shdr shdr;
	Elf_Scn *scn;
	size_t shnum;
	int ret;

	scn = find_section(e, ".eh_frame", &shdr);
	if (scn) {
		s.data = elf_getdata(scn, NULL);
		s.vaddr = shdr.sh_addr;
	} else if (!elf_getshdrnum(e, &shnum) && shnum == 0) {
		s.data = eh_frame_by_phdr(elf, e, &s.vaddr);
	}
	if (!s.data)
		return 0;
	s.ident = (const unsigned char *)elf_getident(e, NULL);
	s.cfi = dwarf_getcfi_elf(e);
	ret = build_from(b, &s);
	if (s.cfi)
		dwarf_cfi_end(s.cfi);
	return ret;
}

static int from_debug_frame(struct builder *b, struct tk_elf *elf)
{
	Elf *e = tk_elf__libelf(elf);
	struct cfi_sec s = { .e = e, .eh = false };
	GElf_Shdr shdr;
	Elf_Scn *scn;
	Dwarf *dw;
	int ret;

	if (!find_section(e, ".debug_frame", &shdr))
		return 0;
	/* libdw decompresses the debug sections (SHF_COMPRESSED) in place as it opens them */
	dw = dwarf_begin_elf(e, DWARF_C_READ, NULL);
	if (!dw)
		return -EBADMSG;
	scn = find_section(e, ".debug_frame", &shdr);
	s.data = scn ? elf_getdata(scn, NULL) : NULL;
	s.ident = (const unsigned char *)elf_getident(e, NULL);
	s.cfi = dwarf_getcfi(dw);	/* owned by dw */
	ret = build_from(b, &s);
	dwarf_end(dw);
	return ret;
}

/* The executable PT_LOAD segments of @e: FDEs outside them describe no code of it. */
static int exec_segments(struct builder *b, Elf *e)
{
	GElf_Phdr ph;
	size_t i, n;

	if (elf_getphdrnum(e, &n) || !n)
		return 0;
	b->exec = calloc(n, sizeof(*b->exec));
	if (!b->exec)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(e, i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) ||
		    ph.p_vaddr + ph.p_memsz < ph.p_vaddr)
			continue;
		b->exec[b->nr_exec].start = ph.p_vaddr;
		b->exec[b->nr_exec++].end = ph.p_vaddr + ph.p_memsz;
	}
	/* segments, none executable: every FDE would be dropped; keep the check honest */
	if (!b->nr_exec) {
		b->exec[0].start = b->exec[0].end = 0;
		b->nr_exec = 1;
	}
	return 0;
}

static bool is_x86_64(Elf *e)
{
	const char *ident = elf_getident(e, NULL);
	GElf_Ehdr eh;

	return ident && ident[EI_CLASS] == ELFCLASS64 && ident[EI_DATA] == ELFDATA2LSB &&
	       gelf_getehdr(e, &eh) && eh.e_machine == EM_X86_64;
}

int tk_unw_table__build(struct tk_elf *elf, struct tk_elf *debug, struct tk_unw_table **out)
{
	uint64_t t0 = now_ns();
	struct builder b = { 0 };
	struct tk_unw_table *t;
	struct unw_row *rows;
	size_t i;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!elf || !tk_elf__libelf(elf))
		return -EINVAL;
	if (!is_x86_64(tk_elf__libelf(elf)) || (debug && !is_x86_64(tk_elf__libelf(debug))))
		return -ENOTSUP;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	b.t = t;
	ret = exec_segments(&b, tk_elf__libelf(elf));
	if (!ret)
		ret = from_eh_frame(&b, elf);
	if (ret > 0) {
		t->source = TK_UNW_SRC_EH_FRAME;
	} else if (!ret) {
		ret = from_debug_frame(&b, elf);
		if (!ret && debug && debug != elf)
			ret = from_debug_frame(&b, debug);
		if (ret > 0)
			t->source = TK_UNW_SRC_DEBUG_FRAME;
	}
	free(b.fdes);
	free(b.offs);
	free(b.exec);
	if (ret < 0) {
		tk_unw_table__free(t);
		return ret;
	}
	if (!t->nr) {
		/* FDEs, but no row kept of them: as no CFI */
		free(t->rows);
		t->rows = NULL;
		t->base = 0;
	} else if (t->nr < b.cap && (rows = reallocarray(t->rows, t->nr, sizeof(*rows)))) {
		t->rows = rows;
	}
	for (i = 0; i < t->nr; i++) {
		switch (t->rows[i].kind) {
		case UNW_ROW_UNSUPPORTED:
			t->st.unsupported++;
			break;
		case UNW_ROW_SIGNAL:
			t->st.signal++;
			break;
		case UNW_ROW_PLT:
			t->st.plt++;
			break;
		case UNW_ROW_DEREF_FP:
		case UNW_ROW_DRAP:
			t->st.deref++;
			break;
		}
	}
	t->st.rows = t->nr;
	t->st.build_ns = now_ns() - t0;
	*out = t;
	return 0;
}

void tk_unw_table__free(struct tk_unw_table *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t);
}

const struct unw_row *tk_unw_table__find(const struct tk_unw_table *t, uint64_t vaddr)
{
	size_t lo = 0, hi;
	uint64_t pc;

	if (!t || !t->nr || vaddr < t->base || vaddr - t->base > UINT32_MAX)
		return NULL;
	pc = vaddr - t->base;
	if (pc < t->rows[0].pc)
		return NULL;
	/* the last row with row.pc <= pc: rows[lo].pc <= pc < rows[hi].pc */
	hi = t->nr;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].pc <= pc)
			lo = mid;
		else
			hi = mid;
	}
	return &t->rows[lo];
}
