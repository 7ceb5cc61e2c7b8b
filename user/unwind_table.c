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
 * made there, and so on to the FDE's end.
 *
 * Why libdw and not an interpreter of our own: dwarf_cfi_addrframe() re-runs
 * the FDE's program from its start at every query, so walking an FDE row by
 * row costs O(rows^2) in instructions. Measured on this machine (Debian 12,
 * elfutils 0.188, -O2, warm page cache), whole builds:
 *
 *   libc.so.6        3713 FDEs   25.2k rows   ~8 ms
 *   libstdc++.so.6   4867 FDEs   30.9k rows  ~11 ms
 *   python3.11      10221 FDEs   61.4k rows  ~21 ms
 *   redis-server     see the unit test's output; same order
 *
 * Compilers emit short programs (a few rows per FDE, rarely a hundred), so the
 * quadratic term stays small and an interpreter of our own would save a few
 * milliseconds per object, built once per object, at the price of a second
 * DWARF CFA implementation to keep correct. What the quadratic term does
 * allow is a crafted FDE of many rows costing seconds: every query is charged
 * its FDE's size against a budget proportional to the section's size (real
 * objects use under 1/20 of it) and an FDE past the budget ends in an
 * UNW_ROW_UNSUPPORTED row.
 *
 * Everything read is untrusted: libdw checks the bounds of the entries it
 * parses and of the programs it runs; the pointer decoding here checks its
 * own. A malformed entry ends the walk: the FDEs before it are kept.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/types.h>

#include "../bpf/unwind.h"	/* user/unwind.h's own #include "unwind.h" finds itself */
#include "elf_reader.h"
#include "unwind.h"

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
	uint64_t dropped;		/* rows past base + 4 GiB */
	bool malformed;			/* an entry could not be parsed */
};

/* One CFI section: its bytes for dwarf_next_cfi(), where they are loaded, its libdw handle. */
struct cfi_sec {
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

static int read_uleb(const uint8_t **p, const uint8_t *end, uint64_t *val)
{
	uint64_t v = 0;
	unsigned int shift = 0;

	while (*p < end) {
		uint8_t b = *(*p)++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			*val = v;
			return 0;
		}
	}
	return -EBADMSG;
}

static int read_sleb(const uint8_t **p, const uint8_t *end, uint64_t *val)
{
	uint64_t v = 0;
	unsigned int shift = 0;

	while (*p < end) {
		uint8_t b = *(*p)++;

		if (shift < 64)
			v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
		if (!(b & 0x80)) {
			if (shift < 64 && (b & 0x40))
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
 * DW_EH_PE_pcrel. Only what x86-64 objects use: absolute or pc-relative, direct.
 */
static int read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t field_vaddr,
			uint64_t *val)
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
		err = read_uleb(p, end, val);
		break;
	case DW_EH_PE_sleb128:
		err = read_sleb(p, end, val);
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
	default:
		return -ENOTSUP;
	}
}

/* The FDE pointer encoding a CIE's augmentation ('R') gives; absptr without one. */
static int cie_fde_encoding(const Dwarf_CIE *cie, uint8_t *enc)
{
	const uint8_t *p = cie->augmentation_data, *end;
	const char *a = cie->augmentation;
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
			if (read_encoded(&p, end, penc & ~DW_EH_PE_indirect, 0, &skip))
				return -EBADMSG;
			break;
		case 'S':
		case 'B':
			break;
		default:
			/* 'z' says how long the data is, not where an 'R' after this is */
			return -ENOTSUP;
		}
	}
	return 0;
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

/* Decode the range of the FDE @fde, whose CIE is @cie, and keep it. */
static int read_fde(struct builder *b, const struct cfi_sec *s, const Dwarf_FDE *fde,
		    const Dwarf_CIE *cie)
{
	const uint8_t *p = fde->start, *end = fde->end;
	uint64_t loc, len;
	uint8_t enc;

	if (!p || !end || end < p)
		return -EBADMSG;
	if (s->eh) {
		if (cie_fde_encoding(cie, &enc))
			return 0;	/* an encoding we do not read: this FDE only */
		if (read_encoded(&p, end, enc,
				 s->vaddr + (p - (const uint8_t *)s->data->d_buf), &loc) ||
		    read_encoded(&p, end, enc & 0x0f, 0, &len))
			return 0;
	} else {
		/* .debug_frame: target addresses, 8 bytes on x86-64 */
		if (read_fixed(&p, end, 8, false, &loc) || read_fixed(&p, end, 8, false, &len))
			return 0;
	}
	return add_fde(b, loc, len, fde->end - fde->start);
}

/* Every FDE of @s into b->fdes. Returns 0 or a negative errno (-ENOMEM). */
static int collect_fdes(struct builder *b, const struct cfi_sec *s)
{
	Dwarf_Off off = 0, next, cie_off = (Dwarf_Off)-1;
	Dwarf_CFI_Entry ent, cie;
	int rc, err;

	while ((rc = dwarf_next_cfi(s->ident, s->data, s->eh, off, &next, &ent)) == 0) {
		if (next <= off)
			break;
		off = next;
		if (dwarf_cfi_cie_p(&ent))
			continue;
		if (ent.fde.CIE_pointer != cie_off) {
			Dwarf_Off dummy;

			if (dwarf_next_cfi(s->ident, s->data, s->eh, ent.fde.CIE_pointer, &dummy,
					   &cie) ||
			    !dwarf_cfi_cie_p(&cie)) {
				cie_off = (Dwarf_Off)-1;
				continue;
			}
			cie_off = ent.fde.CIE_pointer;
		}
		err = read_fde(b, s, &ent.fde, &cie.cie);
		if (err == -ENOMEM)
			return err;
	}
	if (rc < 0)
		b->malformed = true;
	return 0;
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

enum reg_rule { REG_SAME, REG_UNDEFINED, REG_AT_CFA, REG_OTHER };

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
}

static bool same_row(const struct unw_row *a, const struct unw_row *b)
{
	return a->kind == b->kind && a->cfa_off == b->cfa_off && a->rbp_off == b->rbp_off;
}

/* Append the row @r at @vaddr: it replaces a row at the same pc, merges into an equal one. */
static int emit(struct builder *b, uint64_t vaddr, struct unw_row r)
{
	struct tk_unw_table *t = b->t;

	if (vaddr < t->base || vaddr - t->base > UINT32_MAX) {
		b->dropped++;
		return 0;
	}
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
		if (!gelf_getshdr(scn, shdr) || shdr->sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(e, shstrndx, shdr->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/*
 * .eh_frame of an object without section headers: where PT_GNU_EH_FRAME's
 * eh_frame_ptr says, up to the end of the segment holding it (the entries
 * end with a zero terminator, or at the end).
 */
static Elf_Data *eh_frame_by_phdr(struct tk_elf *elf, Elf *e, uint64_t *vaddr)
{
	uint8_t hdr[12];
	const uint8_t *p = hdr + 4;
	GElf_Phdr ph;
	uint64_t at;
	size_t i, n;

	if (elf_getphdrnum(e, &n))
		return NULL;
	for (i = 0; i < n; i++) {
		if (gelf_getphdr(e, i, &ph) && ph.p_type == PT_GNU_EH_FRAME)
			break;
	}
	if (i == n || tk_elf__read_vaddr(elf, ph.p_vaddr, hdr, sizeof(hdr)) < 8 || hdr[0] != 1 ||
	    read_encoded(&p, hdr + sizeof(hdr), hdr[1], ph.p_vaddr + 4, &at))
		return NULL;
	for (i = 0; i < n; i++) {
		if (!gelf_getphdr(e, i, &ph) || ph.p_type != PT_LOAD || at < ph.p_vaddr ||
		    at - ph.p_vaddr >= ph.p_filesz)
			continue;
		*vaddr = at;
		return elf_getdata_rawchunk(e, ph.p_offset + (at - ph.p_vaddr),
					    ph.p_filesz - (at - ph.p_vaddr), ELF_T_BYTE);
	}
	return NULL;
}

/*
 * Rows from the CFI section @s. Returns 1 when it held at least one FDE (the
 * table is built from it), 0 when none, or a negative errno.
 */
static int build_from(struct builder *b, struct cfi_sec *s)
{
	struct tk_unw_table *t = b->t;
	size_t i;
	int err;

	if (!s->data || !s->data->d_buf || !s->data->d_size)
		return 0;
	err = collect_fdes(b, s);
	if (err)
		return err;
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
			break;
		err = fde_rows(b, s->cfi, f, i + 1 < b->nr_fdes ? b->fdes[i + 1].start : 0);
		if (err)
			return err;
	}
	for (; i < b->nr_fdes; i++)
		b->dropped++;	/* FDEs past base + 4 GiB: at least a row each */
	t->st.fdes = b->nr_fdes;
	return 1;
}

static int from_eh_frame(struct builder *b, struct tk_elf *elf)
{
	Elf *e = tk_elf__libelf(elf);
	struct cfi_sec s = { .eh = true };
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
	struct cfi_sec s = { .eh = false };
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
