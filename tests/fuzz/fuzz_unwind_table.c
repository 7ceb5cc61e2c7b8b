// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * libFuzzer target for the unwind-table builder: open the input as an ELF
 * image, build its table (and once more with the image as its own debug
 * file), and check what every reader of a table relies on: rows sorted, one
 * per pc, of known kinds, no two equal neighbours, stats that add up, lookups
 * that land on the row covering the address. An AArch64 image's table has
 * arm64 rows (bpf/unwind.h) and the shared kinds only, never an x86 one.
 *
 * Differential: each table is built twice, with the rules of the CFA
 * interpreter (unwind_cfa.c) and of libdw (dwarf_cfi_addrframe at each
 * row), and both must be the same row for row — unless the input is one
 * where libdw may take another FDE for an address than ours, or would read
 * past the section (tk_unw_cfa_odd: unwind_table_int.h says which). No time
 * limit here, so both stop at the same place (the work budget, the same).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#include "bpf/unwind.h"
#include "proc/elf_reader.h"
#include "unwind/unwind.h"
#include "unwind/unwind_table_int.h"

/* An arm64 kind: UNW_ROW_A64_SIGNAL, or UNW_ROW_A64 with FP/RA_LR and one x29 rule at most. */
static bool a64_kind_ok(const struct unw_row *r)
{
	const uint8_t bits = UNW_A64_FP | UNW_A64_RA_LR | UNW_A64_X29_PAIR | UNW_A64_X29_LOST;

	if (r->kind == UNW_ROW_A64_SIGNAL)
		return !r->cfa_off && !r->ra_off;
	if ((r->kind & ~bits) != UNW_ROW_A64)
		return false;
	if ((r->kind & UNW_A64_X29_PAIR) && (r->kind & (UNW_A64_X29_LOST | UNW_A64_RA_LR)))
		return false;
	return !(r->kind & UNW_A64_RA_LR) || !r->ra_off;
}

static void check(const struct tk_unw_table *t)
{
	uint64_t unsup = 0, sig = 0, plt = 0, deref = 0, a64 = 0, x86 = 0, a64_lr = 0;
	size_t i;

	if (t->st.rows != t->nr || (t->nr == 0) != (t->source == TK_UNW_SRC_NONE) ||
	    (t->nr && !t->rows))
		abort();
	for (i = 0; i < t->nr; i++) {
		const struct unw_row *r = &t->rows[i], *p = i ? &t->rows[i - 1] : NULL;

		if (r->kind & UNW_ROW_A64) {
			if (!a64_kind_ok(r))
				abort();
			a64++;
			a64_lr += r->kind == (UNW_ROW_A64 | UNW_A64_RA_LR);
		} else if (r->kind < UNW_ROW_SP || r->kind > UNW_ROW_DRAP) {
			abort();
		} else if (r->kind != UNW_ROW_END && r->kind != UNW_ROW_INVALID &&
			   r->kind != UNW_ROW_UNSUPPORTED) {
			x86++;
		}
		if (p && (p->pc >= r->pc || (p->kind == r->kind && p->cfa_off == r->cfa_off &&
					     p->rbp_off == r->rbp_off)))
			abort();
		if (r->kind == UNW_ROW_PLT && (r->cfa_off < 0 || r->cfa_off > 31))
			abort();
		if ((r->kind == UNW_ROW_SIGNAL || r->kind == UNW_ROW_END ||
		     r->kind == UNW_ROW_INVALID || r->kind == UNW_ROW_UNSUPPORTED) &&
		    (r->cfa_off || r->rbp_off))
			abort();
		if (tk_unw_table__find(t, t->base + r->pc) != r)
			abort();
		/* and the address after it, when the next row is further */
		if (i + 1 < t->nr && t->rows[i + 1].pc > r->pc + 1 &&
		    tk_unw_table__find(t, t->base + r->pc + 1) != r)
			abort();
		unsup += r->kind == UNW_ROW_UNSUPPORTED;
		sig += r->kind == UNW_ROW_SIGNAL || r->kind == UNW_ROW_A64_SIGNAL;
		plt += r->kind == UNW_ROW_PLT;
		deref += r->kind == UNW_ROW_DEREF_FP || r->kind == UNW_ROW_DRAP;
	}
	/* arm64: st.plt counts .plt ranges given an LR row (tk_unw_a64_plt): one at most */
	if (a64 && x86)
		abort();
	if (a64 && (t->st.plt > 1 || (t->st.plt && !a64_lr)))
		abort();
	if (unsup != t->st.unsupported || sig != t->st.signal || (!a64 && plt != t->st.plt) ||
	    deref != t->st.deref)
		abort();
	if (t->nr && t->base + t->rows[0].pc > 0 &&
	    tk_unw_table__find(t, t->base + t->rows[0].pc - 1))
		abort();
	if (!t->nr && tk_unw_table__find(t, t->base))
		abort();
}

static int build_one(struct tk_elf *elf, struct tk_elf *debug, int libdw, struct tk_unw_table **t)
{
	int err;

	*t = (void *)1;
	tk_unw_rows_use_libdw(libdw);
	err = tk_unw_table__build(elf, debug, t);
	if (err) {
		if (err > 0 || err < -4095 || *t)
			abort();
		return err;
	}
	if (!*t)
		abort();
	check(*t);
	return 0;
}

static void build(struct tk_elf *elf, struct tk_elf *debug)
{
	struct tk_unw_table *a = NULL, *b = NULL;
	int ea, eb;

	tk_unw_cfa_odd = false;
	ea = build_one(elf, debug, 0, &a);
	eb = build_one(elf, debug, 1, &b);
	if (!tk_unw_cfa_odd) {
		if (ea != eb)
			abort();
		if (!ea && (a->nr != b->nr || a->base != b->base || a->source != b->source ||
			    (a->nr && memcmp(a->rows, b->rows, a->nr * sizeof(*a->rows))) ||
			    a->st.unsupported != b->st.unsupported || a->st.fdes != b->st.fdes))
			abort();
	}
	tk_unw_table__free(a);
	tk_unw_table__free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* no time limit, so both builds stop at the same place: a work limit, 8 MiB of CFI run */
	static const struct tk_unw_limits lim = { TK_UNW_MAX_CFI_BYTES, 8 << 20, UINT64_MAX };
	struct tk_elf *elf, *debug;

	tk_unw_table__set_limits(&lim);
	if (tk_elf__open_mem(data, size, &elf))
		return 0;
	build(elf, NULL);
	/* the image as the debug file of itself: its .debug_frame when it has no .eh_frame */
	if (!tk_elf__open_mem(data, size, &debug)) {
		build(elf, debug);
		tk_elf__free(debug);
	}
	tk_elf__free(elf);
	return 0;
}
