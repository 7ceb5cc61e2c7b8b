// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Unwind tables: an object's CFI turned into the rows of bpf/unwind.h.
 *
 * The FDEs are found by walking the CFI section entry by entry with libdw's
 * dwarf_next_cfi() (every FDE, not only those a .eh_frame_hdr table lists, and
 * the same code for .debug_frame), decoding each FDE's initial location with
 * its CIE's pointer encoding (unwind_cfi_scan.c). They are sorted; an FDE that
 * overlaps one before it, or that starts outside every executable segment
 * (.debug_frame keeps FDEs of discarded functions at address 0), is left out.
 * Each FDE's rows are then made (unwind_rows.c): the rules at the FDE's start
 * give the first row and where it ends; the next query is made there, and so
 * on to the FDE's end. FDEs starting 4 GiB or more past the first are left out
 * (a __u32 pc cannot hold them); the stats have no field to count them in,
 * st.fdes counts the FDEs whose rows the table holds.
 *
 * The rules come from a CFA interpreter of our own (unwind_cfa.c) that runs
 * each FDE's program once, keeping its place between queries. Until issue 27
 * they came from libdw: dwarf_cfi_addrframe() finds the FDE again (tfind) and
 * runs the CIE's and the FDE's programs from their start at every query, so an
 * FDE of n rows cost O(n^2), and table builds were half of tracekit's own CPU
 * in a whole-system capture (libdw 35 % of it). The interpreter gives what
 * libdw 0.188 gives, quirks included (unwind_cfa.c lists them), and the tables
 * are the same byte for byte: tests/unit/test_unwind_cfa.c builds both ways
 * and compares 689 objects here (1.2M rows: libc, libstdc++, ld.so,
 * python3.11, redis, node, perl, libjvm, 297 arm64 objects, 380 .debug_frame
 * files; 2380 objects, 15.5M rows with every .so and program of the machine),
 * fuzz_unwind_table compares both on fuzzed input. TK_UNW_LIBDW=1 keeps
 * libdw's way. Build CPU, best of 7 (Debian 12, -O2, load ~15, whole builds
 * with the checks below), libdw's way -> the interpreter:
 *
 *   libc.so.6        3713 FDEs   28.3k rows    5.6 ->  2.1 ms
 *   libstdc++.so.6   4867 FDEs   34.4k rows    7.5 ->  2.8 ms
 *   python3.11      10221 FDEs   64.6k rows   14.9 ->  5.7 ms
 *   redis-server     4303 FDEs   40.0k rows    8.3 ->  2.7 ms
 *   libjvm.so (17)  43666 FDEs  191.0k rows   46.7 -> 18.4 ms
 *   node            75922 FDEs  372.0k rows   94.8 -> 32.3 ms
 *
 * What is left is the pre-scan below (program_ok, the .eh_frame_hdr check),
 * sorting, and a clock read per row for the ceiling. libdw still walks the
 * section (dwarf_next_cfi) and reads the ELF.
 *
 * Each query is still charged its FDE's size against a budget of 1024 times
 * the section's size (plus 64 MiB), as when libdw ran the program again at
 * each: past it each FDE left is one UNW_ROW_UNSUPPORTED row, where libdw's
 * way made a crafted FDE of many rows cost seconds (one FDE of 40000 rows:
 * 2.9 s). Charged the same, both ways stop at the same row.
 *
 * That budget grows with the section: a crafted file of a few hundred MB
 * would keep the caller (a collector's event thread) busy for minutes. So
 * one object's build also has an absolute ceiling (unwind.h: TK_UNW_MAX_*):
 * a CFI section over TK_UNW_MAX_CFI_BYTES is not read at all, and a build
 * that runs more than TK_UNW_MAX_WORK bytes of CFI program or lasts longer
 * than TK_UNW_MAX_BUILD_NS stops there. Such an object gets no table
 * (-E2BIG): its frames go by the frame pointer, and the symbolizer counts it
 * (unwind_cfi_over_limit). The largest objects measured stay far below: the
 * work is 18-30 times the section's size, and node takes 32 ms.
 *
 * Everything read is untrusted: before libdw or the interpreter runs anything
 * of a section, every CIE's and FDE's program in it is checked
 * (unwind_cfi_scan.c says how).
 * What is here: where an object's CFI is (its .eh_frame, else .debug_frame,
 * its own or its debug file's), its executable segments, and the build.
 */
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <linux/types.h>

#include "bpf/unwind.h"
#include "proc/elf_reader.h"
#include "profile/profile.h"
#include "unwind/unwind.h"
#include "unwind/unwind_table_int.h"

/* Bytes of CFI program a build may run: this times the section, plus a floor. */
#define WORK_PER_BYTE 1024
#define WORK_FLOOR (64ULL << 20)

/* The absolute ceiling; a test may lower it (tk_unw_table__set_limits). */
static struct tk_unw_limits limits = {
	.cfi_bytes = TK_UNW_MAX_CFI_BYTES,
	.work = TK_UNW_MAX_WORK,
	.build_ns = TK_UNW_MAX_BUILD_NS,
};

void tk_unw_table__set_limits(const struct tk_unw_limits *l)
{
	limits = l ? *l : (struct tk_unw_limits){ TK_UNW_MAX_CFI_BYTES, TK_UNW_MAX_WORK,
						  TK_UNW_MAX_BUILD_NS };
}

static uint64_t clock_reads;

uint64_t tk_unw_table__clock_reads(void)
{
	return __atomic_load_n(&clock_reads, __ATOMIC_RELAXED);
}

uint64_t tk_unw_now_ns(void)
{
	struct timespec ts;

	__atomic_fetch_add(&clock_reads, 1, __ATOMIC_RELAXED);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
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
	    tk_unw_read_encoded(&p, hdr + sizeof(hdr), hdr[1], ph.p_vaddr + 4, ph.p_vaddr, &at) ||
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
	if (s->data->d_size > b->lim.cfi_bytes)
		return -E2BIG;	/* not even scanned: its frames go by the frame pointer */
	b->nr_fdes = b->nr_offs = 0;
	b->malformed = b->unsafe = false;
	err = tk_unw_collect_fdes(b, s);
	if (err)
		return err;
	if (b->unsafe || (s->eh && !tk_unw_hdrs_ok(b, s)))
		return -EBADMSG;
	if (!b->nr_fdes)
		return b->malformed ? -EBADMSG : 0;
	if (!s->cfi)
		return -EBADMSG;	/* libdw could not read what we could */
	b->budget = WORK_FLOOR + WORK_PER_BYTE * (uint64_t)s->data->d_size;
	b->over_limit = false;
	tk_unw_sort_fdes(b);
	t->base = b->fdes[0].start;
	for (i = 0; i < b->nr_fdes; i++) {
		const struct fde *f = &b->fdes[i];

		if (f->start - t->base > UINT32_MAX)
			break;	/* this and all after it: past base + 4 GiB */
		err = tk_unw_fde_rows(b, s->cfi, f, i + 1 < b->nr_fdes ? b->fdes[i + 1].start : 0);
		if (err)
			return err;
		if (b->over_limit)
			return -E2BIG;
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

/* The object's machine, when the rows can describe it (64-bit little-endian x86-64 or AArch64). */
static int machine(Elf *e)
{
	const char *ident = elf_getident(e, NULL);
	GElf_Ehdr eh;

	if (!ident || ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB ||
	    !gelf_getehdr(e, &eh) || (eh.e_machine != EM_X86_64 && eh.e_machine != EM_AARCH64))
		return -1;
	return eh.e_machine;
}

/* arm64: rows for .plt, which has no FDE (tk_unw_a64_fill). */
static int a64_plt(struct builder *b, Elf *e)
{
	GElf_Shdr shdr;

	if (!b->t->nr || !find_section(e, ".plt", &shdr) || !(shdr.sh_flags & SHF_EXECINSTR) ||
	    shdr.sh_addr + shdr.sh_size < shdr.sh_addr)
		return 0;
	return tk_unw_a64_fill(b, shdr.sh_addr, shdr.sh_addr + shdr.sh_size,
			       UNW_ROW_A64 | UNW_A64_RA_LR);
}

/* The value of the defined .dynsym symbol @name of @e (any type: the vDSO's are NOTYPE), or 0. */
static uint64_t dynsym(Elf *e, const char *name)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr shdr;
	GElf_Sym sym;
	Elf_Data *d;
	size_t i, n;
	const char *nm;

	while ((scn = elf_nextscn(e, scn))) {
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_DYNSYM || !shdr.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		n = d ? d->d_size / shdr.sh_entsize : 0;
		for (i = 1; i < n; i++) {
			if (!gelf_getsym(d, i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			nm = elf_strptr(e, shdr.sh_link, sym.st_name);
			if (nm && !strcmp(nm, name))
				return sym.st_value;
		}
	}
	return 0;
}

/*
 * arm64's vDSO: __kernel_rt_sigreturn has no CFI on any kernel measured
 * (5.10's FDEs stop before it; 6.1+ have no .eh_frame at all), and 6.1+
 * describe none of their functions. When its code is "mov x8, #139; svc #0"
 * (rt_sigreturn: what libgcc matches too), it and the nop before it (a
 * handler's return address is the symbol: looked up a byte before) get a
 * signal row; a vDSO without CFI gets "return address in LR" over its .text:
 * its clock functions are frameless leaves (__kernel_getrandom of 6.11+ is
 * not: past its prologue the walk goes by its frame record, counted).
 */
static int a64_vdso(struct builder *b, struct tk_elf *elf)
{
	const uint32_t code[2] = { 0xd2801168, 0xd4000001 };
	Elf *e = tk_elf__libelf(elf);
	uint64_t at = dynsym(e, "__kernel_rt_sigreturn");
	uint32_t insn[2];
	GElf_Shdr shdr;

	if (at < 4 ||
	    tk_elf__read_vaddr(elf, at, insn, sizeof(insn)) != sizeof(insn) ||
	    memcmp(insn, code, sizeof(code)))
		return 0;
	if (!b->t->nr && find_section(e, ".text", &shdr) && (shdr.sh_flags & SHF_EXECINSTR) &&
	    at - 4 >= shdr.sh_addr && at + 8 <= shdr.sh_addr + shdr.sh_size &&
	    shdr.sh_size <= (1 << 20)) {
		struct tk_unw_table *t = b->t;
		const uint8_t lr = UNW_ROW_A64 | UNW_A64_RA_LR;
		const uint64_t s = shdr.sh_addr, end = s + shdr.sh_size;
		struct unw_row *rows = reallocarray(t->rows, 4, sizeof(*rows));
		size_t n = 0;

		if (!rows)
			return -ENOMEM;
		t->rows = rows;
		b->cap = 4;
		t->base = s;
		if (at - 4 > s)
			t->rows[n++] = (struct unw_row){ .pc = 0, .kind = lr };
		t->rows[n++] = (struct unw_row){ .pc = at - 4 - s, .kind = UNW_ROW_A64_SIGNAL };
		if (at + 8 < end)
			t->rows[n++] = (struct unw_row){ .pc = at + 8 - s, .kind = lr };
		t->rows[n++] = (struct unw_row){ .pc = end - s, .kind = UNW_ROW_INVALID };
		t->nr = n;
		return 0;
	}
	return tk_unw_a64_fill(b, at - 4, at + 8, UNW_ROW_A64_SIGNAL);
}

int tk_unw_table__build(struct tk_elf *elf, struct tk_elf *debug, struct tk_unw_table **out)
{
	uint64_t t0 = tk_unw_now_ns();
	struct builder b = { .lim = limits, .t0_ns = t0 };
	struct tk_unw_table *t;
	struct unw_row *rows;
	size_t i;
	int ret;

	if (!out)
		return -EINVAL;
	*out = NULL;
	if (!elf || !tk_elf__libelf(elf))
		return -EINVAL;
	ret = machine(tk_elf__libelf(elf));
	if (ret < 0 || (debug && machine(tk_elf__libelf(debug)) != ret))
		return -ENOTSUP;
	b.a64 = ret == EM_AARCH64;
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
	if (ret > 0 && b.a64)
		ret = a64_plt(&b, tk_elf__libelf(elf));
	if (ret >= 0 && b.a64) {
		ret = a64_vdso(&b, elf);
		if (!ret && t->nr && t->source == TK_UNW_SRC_NONE)
			t->source = TK_UNW_SRC_VDSO;
	}
	free(b.fdes);
	free(b.offs);
	free(b.cies);
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
		case UNW_ROW_A64_SIGNAL:
			t->st.signal++;
			break;
		case UNW_ROW_PLT:	/* arm64's .plt row: counted by tk_unw_a64_plt */
			t->st.plt++;
			break;
		case UNW_ROW_DEREF_FP:
		case UNW_ROW_DRAP:
			t->st.deref++;
			break;
		}
	}
	t->st.rows = t->nr;
	t->st.build_ns = tk_unw_now_ns() - t0;
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

	if (!t || !t->nr || !t->rows || vaddr < t->base || vaddr - t->base > UINT32_MAX)
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

void tk_unw_table__report(struct tk_profile *p, uint64_t over_limit)
{
	tk_profile__set_loss(p, "unwind_cfi_over_limit", over_limit);
}
