/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Inside tk_unw_table__build(): what its parts share. unwind_table.c finds
 * an object's CFI sections and builds its table from one; unwind_cfi_scan.c
 * finds and checks every CIE and FDE of a section before libdw runs any of
 * it; unwind_rows.c turns what libdw says of each FDE into rows.
 */
#ifndef __TK_UNWIND_TABLE_INT_H
#define __TK_UNWIND_TABLE_INT_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind/unwind.h"

struct fde {
	uint64_t start;
	uint64_t end;		/* exclusive */
	uint64_t cost;		/* bytes libdw runs, at most, for one query in it */
	const uint8_t *prog;	/* its instructions (checked by program_ok), NULL unknown */
	const uint8_t *prog_end;
	uint64_t code_align;	/* its CIE's code alignment factor */
};

/* A place in an FDE's instructions: tk_unw_next_change() reads them once, in order. */
struct tk_unw_prog {
	const uint8_t *p, *end;
	uint64_t loc;		/* the location the instructions at p apply to */
	uint64_t code_align;
	uint64_t dirty;		/* bit d: a row's rule changed since remember_state d */
	unsigned int depth;	/* of remember_state */
	bool lost;		/* an instruction it does not follow: every location counts */
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
	struct tk_unw_limits lim;	/* the absolute ceiling of one object */
	uint64_t t0_ns;			/* when the build began (tk_unw_now_ns) */
	uint64_t clock_work;		/* work at the last look at the clock */
	uint32_t clock_rows;		/* rows since */
	bool over_limit;		/* past lim: the object gets no table */
	uint64_t *offs;			/* section offsets of every FDE, ascending */
	size_t nr_offs, cap_offs;
	bool malformed;			/* an entry could not be parsed */
	bool unsafe;			/* a program libdw must not run (program_ok) */
	bool a64;			/* an AArch64 object: arm64 rows (bpf/unwind.h) */
};

/*
 * The build's time is looked at every TK_UNW_CLOCK_ROWS rows, or sooner once
 * TK_UNW_CLOCK_WORK bytes of CFI program ran since (crafted CFI makes a row
 * dear): a clock call per row was 5.6 % of a whole-system capture's CPU.
 */
#define TK_UNW_CLOCK_ROWS 256
#define TK_UNW_CLOCK_WORK (1u << 20)

/* One CFI section: its bytes for dwarf_next_cfi(), where they are loaded, its libdw handle. */
struct cfi_sec {
	Elf *e;				/* the object it is read from */
	Elf_Data *data;
	uint64_t vaddr;
	bool eh;			/* .eh_frame, not .debug_frame */
	const unsigned char *ident;
	Dwarf_CFI *cfi;
};

/* ---- the pre-scan (unwind_cfi_scan.c) --------------------------------------------------- */

/* A pointer encoded as @enc (DW_EH_PE_*) at *@p, for the sources too. */
int tk_unw_read_encoded(const uint8_t **p, const uint8_t *end, uint8_t enc, uint64_t field_vaddr,
			uint64_t datarel, uint64_t *val);
/* Every FDE of @s into b->fdes, checked, and every FDE's offset into b->offs. */
int tk_unw_collect_fdes(struct builder *b, const struct cfi_sec *s);
/* Does every .eh_frame_hdr table libdw may take for @s name only FDEs found? */
bool tk_unw_hdrs_ok(const struct builder *b, const struct cfi_sec *s);
/* Sort b->fdes and drop those that overlap one before them. */
void tk_unw_sort_fdes(struct builder *b);

/*
 * The first location at or after @from whose instructions may change a row: one that
 * touches the CFA, the return address column @ra, the frame pointer or the stack pointer
 * (x86-64 rbp/rsp, arm64 x29/sp), arm64's negate_ra_state, or a restore_state after
 * such a change since its remember_state (an epilogue's restore_state that brings back
 * only x19..x28 changes no row); an instruction it cannot follow makes every location one.
 * UINT64_MAX
 * past the last. Locations before @from are read past; @c keeps the place, so an FDE's
 * queries read its instructions once in all.
 */
uint64_t tk_unw_next_change(struct tk_unw_prog *c, uint64_t from, bool a64, int ra);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t tk_unw_now_ns(void);

/* ---- rows (unwind_rows.c) --------------------------------------------------------------- */

/*
 * Append the rows of @fde to b->t, charging b->work; past b->lim (work or
 * time) it stops and sets b->over_limit.
 */
int tk_unw_fde_rows(struct builder *b, Dwarf_CFI *cfi, const struct fde *fde,
		    uint64_t next_start);

/* arm64: code no FDE covers, [@start, @end), as @kind says (.plt, sigreturn: unwind_rows.c). */
int tk_unw_a64_fill(struct builder *b, uint64_t start, uint64_t end, uint8_t kind);

#endif /* __TK_UNWIND_TABLE_INT_H */
