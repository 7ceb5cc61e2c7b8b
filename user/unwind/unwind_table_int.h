/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * Inside tk_unw_table__build(): what its parts share. unwind_table.c finds
 * an object's CFI sections and builds its table from one; unwind_cfi_scan.c
 * finds and checks every CIE and FDE of a section before libdw runs any of
 * it; unwind_cfa.c runs each FDE's program once for the rules of its rows (what libdw's
 * dwarf_cfi_addrframe gives); unwind_rows.c turns those rules into rows.
 */
#ifndef __TK_UNWIND_TABLE_INT_H
#define __TK_UNWIND_TABLE_INT_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "unwind/unwind.h"

/* What an FDE's CIE gives the CFA interpreter (unwind_cfa.c), as libdw reads it. */
struct tk_unw_cie {
	const uint8_t *prog;	/* its initial instructions (checked by program_ok) */
	const uint8_t *prog_end;
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;	/* the return address column */
	uint8_t enc;		/* FDE pointers (DW_CFA_set_loc): absptr made udata8 */
	bool signal;		/* augmentation 'S' */
};

struct fde {
	uint64_t start;
	uint64_t end;		/* exclusive */
	uint64_t cost;		/* bytes libdw runs, at most, for one query in it */
	const uint8_t *prog;	/* its instructions (checked by program_ok), NULL unknown */
	const uint8_t *prog_end;
	uint64_t code_align;	/* its CIE's code alignment factor */
	size_t cie;		/* its CIE: b->cies[cie] */
	uint64_t off;		/* its section offset */
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
	struct tk_unw_cie *cies;	/* of the FDEs collected (fde.cie) */
	size_t nr_cies, cap_cies;
	size_t nr_dropped;		/* FDEs collected and left out (not in exec, overlapping) */
	const uint8_t *sec, *sec_end;	/* the CFI section being read */
	uint64_t sec_vaddr;		/* its address, for DW_EH_PE_pcrel */
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

/*
 * Set when a build read CFI where libdw may not take the FDE we take for an address (FDEs
 * left out, an .eh_frame_hdr table that does not list exactly ours, a CIE whose FDE pointer
 * encoding libdw reads otherwise) or where libdw would read past the section (a truncated
 * operand in its last entry): there the rows of libdw and of unwind_cfa.c may differ. Only
 * the differential tests read it (they clear it before a build); one per thread.
 */
extern _Thread_local bool tk_unw_cfa_odd;

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t tk_unw_now_ns(void);

/* ---- the CFA interpreter (unwind_cfa.c) ------------------------------------------------- */

enum tk_unw_rule { TK_R_UNSPEC, TK_R_UNDEF, TK_R_SAME, TK_R_OFF, TK_R_VAL_OFF, TK_R_REG,
		   TK_R_EXPR, TK_R_VAL_EXPR };
enum tk_unw_cfa_rule { TK_CFA_UNDEF, TK_CFA_OFF, TK_CFA_EXPR, TK_CFA_INVALID };

/* One row's rules, as libdw keeps them: the CFA, and of the registers the rows use two. */
struct tk_unw_state {
	uint8_t cfa;		/* enum tk_unw_cfa_rule */
	uint64_t cfa_reg, cfa_off;
	const uint8_t *cfa_expr;	/* TK_CFA_EXPR: the expression's bytes */
	uint64_t cfa_len;
	uint8_t rule[2];	/* enum tk_unw_rule of the frame pointer, the return address */
	uint64_t val[2];	/* OFF/VAL_OFF: the offset; REG: the register */
	const uint8_t *expr[2];	/* EXPR/VAL_EXPR: the expression's length, then its bytes */
};

#define TK_UNW_CFA_DEPTH 64	/* of remember_state: program_ok's MAX_DEPTH */

/* One FDE's program being run, from its start to each location asked for, once in all. */
struct tk_unw_cfa {
	const struct builder *b;
	const struct tk_unw_cie *cie;
	const uint8_t *p, *end;	/* the FDE's instructions left */
	uint64_t loc;		/* the location the instructions at p apply to */
	uint64_t start, fde_end;
	bool pending;		/* stopped at an advance to loc, past the last location asked */
	bool failed;		/* an instruction libdw fails on: every location from here fails */
	unsigned int depth;
	struct tk_unw_state st, init;
	struct tk_unw_state saved[TK_UNW_CFA_DEPTH];
};

/*
 * The FDE pointer encoding (absptr made udata8) and signal flag of the CIE @cie as libdw
 * reads them; -1 where libdw would read past its augmentation data.
 */
int tk_unw_libdw_cie(const struct builder *b, const Dwarf_CIE *cie, uint8_t *enc, bool *signal);
/* Start @c on the FDE @fde: its CIE's initial instructions are run. */
void tk_unw_cfa_init(struct tk_unw_cfa *c, const struct builder *b, const struct fde *fde);
/*
 * The rules at @pc (at or after the last location asked for), and where they end (*@end), as
 * dwarf_cfi_addrframe() and dwarf_frame_info() give them; -1 where libdw fails.
 */
int tk_unw_cfa_at(struct tk_unw_cfa *c, uint64_t pc, const struct tk_unw_state **st,
		  uint64_t *start, uint64_t *end);
/* dwarf_frame_cfa() of @st: 0 or -1; *@ops NULL when undefined; @mem holds 9 ops. */
int tk_unw_cfa_ops(const struct tk_unw_cfa *c, const struct tk_unw_state *st, Dwarf_Op mem[9],
		   Dwarf_Op **ops, size_t *n);
/* dwarf_frame_register() of the frame pointer (@i 0) or return address (@i 1) rule of @st. */
int tk_unw_reg_ops(const struct tk_unw_cfa *c, const struct tk_unw_state *st, int i,
		   Dwarf_Op mem[3], Dwarf_Op **ops, size_t *n);

/* ---- rows (unwind_rows.c) --------------------------------------------------------------- */

/* Rows from libdw (1), from unwind_cfa.c (0), or as TK_UNW_LIBDW=1 says (-1, the default). */
void tk_unw_rows_use_libdw(int on);

/*
 * Append the rows of @fde to b->t, charging b->work; past b->lim (work or
 * time) it stops and sets b->over_limit.
 */
int tk_unw_fde_rows(struct builder *b, Dwarf_CFI *cfi, const struct fde *fde,
		    uint64_t next_start);

/* arm64: code no FDE covers, [@start, @end), as @kind says (.plt, sigreturn: unwind_rows.c). */
int tk_unw_a64_fill(struct builder *b, uint64_t start, uint64_t end, uint8_t kind);

#endif /* __TK_UNWIND_TABLE_INT_H */
