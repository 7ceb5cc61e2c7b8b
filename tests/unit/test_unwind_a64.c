// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * arm64 unwind tables against binutils: every row `readelf
 * --debug-dump=frames-interp` prints for the AArch64 libc (libc6:arm64) and
 * for a program cross-built here (aarch64-linux-gnu-gcc -O2
 * -fomit-frame-pointer: a qsort callback, a signal handler, a frame of 8 KiB,
 * PLT calls; as a PIE and static) must be what the table says at that address:
 * the CFA from sp or x29, the return address in LR or at CFA - n with n from
 * the CFI, x29 unchanged, beside it or lost. Then what a walk relies on: the
 * .plt (no FDE) is "return address in LR", _start is an END row, an address
 * between FDEs is INVALID. Skips without the cross compiler or libc6:arm64
 * (tools/install-deps.sh --arm64 installs both).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/types.h>

#include "bpf/unwind.h"
#include "../lib/fixture.h"
#include "proc/elf_reader.h"
#include "unwind/unwind.h"
#include "test_unwind_a64_vdso.h"
#include "test_unwind_a64.h"

/* ---- what a row says ---------------------------------------------------------------- */

/*
 * Does the table's row @r say what readelf's @o says? Returns NULL, or why
 * not. A rule the rows can express must be expressed; one they cannot must
 * be UNSUPPORTED.
 */
static const char *row_matches(const struct unw_row *r, const struct orow *o)
{
	static char why[160];
	long cfa_off, ra = 0, x29 = 0, slot;
	bool ra_lr, fp, x29_saved, expressible;
	char reg[8], c;

	if (!r)
		return "no row";
	if (sscanf(o->cfa, "%7[a-z0-9]%ld%c", reg, &cfa_off, &c) != 2 ||
	    (strcmp(reg, "sp") && strcmp(reg, "x29")))
		return r->kind == UNW_ROW_UNSUPPORTED ? NULL : "CFA not sp/x29: not UNSUPPORTED";
	fp = !strcmp(reg, "x29");
	ra_lr = !strcmp(o->ra, "u") || !strcmp(o->ra, "s");
	if (!ra_lr && (sscanf(o->ra, "c%ld%c", &ra, &c) != 1))
		return r->kind == UNW_ROW_UNSUPPORTED ? NULL : "RA rule not c-N: not UNSUPPORTED";
	x29_saved = strcmp(o->x29, "u") && strcmp(o->x29, "s");
	if (x29_saved && sscanf(o->x29, "c%ld%c", &x29, &c) != 1)
		x29 = 1;	/* not at CFA + N: lost */
	/* readelf prints DW_CFA_undefined as a register never saved (END rows: counted) */
	if (ra_lr && r->kind == UNW_ROW_END)
		return NULL;
	slot = cfa_off + ra;	/* against the base register */
	expressible = cfa_off >= INT16_MIN && cfa_off <= INT16_MAX &&
		      (ra_lr || (ra < 0 && !(ra % 8) &&
				 (ra / 8 >= -128 || (slot >= 0 && slot / 8 <= 127))));
	if (!expressible)
		return r->kind == UNW_ROW_UNSUPPORTED ? NULL : "inexpressible: not UNSUPPORTED";
	if ((r->kind & ~(UNW_A64_FP | UNW_A64_RA_LR | UNW_A64_X29_PAIR | UNW_A64_X29_LOST)) !=
	    UNW_ROW_A64)
		snprintf(why, sizeof(why), "kind %#x, not an arm64 CFA row", r->kind);
	else if (!!(r->kind & UNW_A64_FP) != fp || r->cfa_off != cfa_off)
		snprintf(why, sizeof(why), "CFA %s+%d, readelf %s",
			 r->kind & UNW_A64_FP ? "x29" : "sp", r->cfa_off, o->cfa);
	else if (!!(r->kind & UNW_A64_RA_LR) != ra_lr)
		snprintf(why, sizeof(why), "RA in LR %d, readelf %s", !!(r->kind & UNW_A64_RA_LR),
			 o->ra);
	else if (!ra_lr &&
		 (slot = r->ra_off < 0 ? 8L * r->ra_off : 8L * r->ra_off - r->cfa_off) != ra)
		snprintf(why, sizeof(why), "RA at CFA%+ld, readelf %s", slot, o->ra);
	else if (!x29_saved && (r->kind & (UNW_A64_X29_PAIR | UNW_A64_X29_LOST)))
		snprintf(why, sizeof(why), "x29 saved (kind %#x), readelf %s", r->kind, o->x29);
	else if (x29_saved && !ra_lr && x29 == ra - 8 && !(r->kind & UNW_A64_X29_PAIR))
		snprintf(why, sizeof(why), "x29 not beside RA (kind %#x), readelf %s", r->kind,
			 o->x29);
	else if (x29_saved && (ra_lr || x29 != ra - 8) && !(r->kind & UNW_A64_X29_LOST))
		snprintf(why, sizeof(why), "x29 not lost (kind %#x), readelf %s", r->kind, o->x29);
	else
		return NULL;
	return why;
}

struct counts {
	size_t rows, sp, fp, lr, base_rel, pair, lost, unsupported, end;
};

/* How many DW_CFA_undefined r30 the CFI of @path holds. */
static size_t undefined_ra(const char *path)
{
	char cmd[PATH_MAX + 128], line[256];
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p))
		n += !!strstr(line, "DW_CFA_undefined: r30");
	pclose(p);
	return n;
}

/*
 * Every row readelf prints against the table of @path; the END rows are as
 * many as the DW_CFA_undefined r30 in its CFI.
 */
static void check_against_readelf(const char *path, struct counts *n)
{
	struct tk_unw_table *t = build(path);
	struct oracle o;
	size_t i, j, bad = 0, end = 0;

	memset(n, 0, sizeof(*n));
	oracle_read(&o, path);
	assert_int_equal(t->source, TK_UNW_SRC_EH_FRAME);
	for (i = 0; i < o.nr_fdes; i++) {
		const struct ofde *f = &o.fdes[i];

		for (j = 0; j < f->nr; j++) {
			const struct orow *orow = &o.rows[f->row + j];
			const struct unw_row *r = tk_unw_table__find(t, orow->loc);
			const char *why = row_matches(r, orow);

			/* hand-written glibc assembly names x15 its return address column */
			if (f->other_ra)
				why = r && r->kind == UNW_ROW_UNSUPPORTED ? NULL : "other RA";

			n->rows++;
			if (why && bad++ < 20)
				print_message("%s %#" PRIx64 ": %s (CFA %s x29 %s ra %s)\n", path,
					      orow->loc, why, orow->cfa, orow->x29, orow->ra);
			if (!r || why)
				continue;
			n->sp += (r->kind & (UNW_ROW_A64 | UNW_A64_FP)) == UNW_ROW_A64;
			n->fp += !!(r->kind & UNW_A64_FP);
			n->lr += (r->kind & UNW_A64_RA_LR) && r->kind != UNW_ROW_END;
			n->base_rel += (r->kind & UNW_ROW_A64) && !(r->kind & UNW_A64_RA_LR) &&
				       r->ra_off >= 0;
			n->pair += !!(r->kind & UNW_A64_X29_PAIR);
			n->lost += !!(r->kind & UNW_A64_X29_LOST);
			n->unsupported += r->kind == UNW_ROW_UNSUPPORTED;
		}
	}
	assert_int_equal(bad, 0);
	for (i = 0; i < t->nr; i++)
		end += t->rows[i].kind == UNW_ROW_END;
	assert_int_equal(end, undefined_ra(path));
	assert_true(end > 0);
	oracle_free(&o);
	tk_unw_table__free(t);
}

/* ---- tests ------------------------------------------------------------------------- */

static void test_libc_readelf(void **state)
{
	struct counts n;

	need("readelf", A64_LIBC);
	check_against_readelf(A64_LIBC, &n);
	print_message("arm64 libc: %zu rows: sp %zu x29 %zu LR %zu base-relative %zu pair %zu "
		      "x29 lost %zu unsupported %zu\n", n.rows, n.sp, n.fp, n.lr, n.base_rel,
		      n.pair, n.lost, n.unsupported);
	/* bookworm's libc: CFA from sp and from x29, RA at CFA - n for many n */
	assert_true(n.sp > 1000 && n.fp > 100 && n.pair > 1000 && n.lr > 1000);
}

/* The address of symbol @name in @path (nm), 0 when absent. */
static void test_prog_readelf(void **state)
{
	char pie[PATH_MAX], st[PATH_MAX];
	struct counts n;

	need("readelf", A64_LIBC);
	build_prog("prog-pie", "-pie", pie, sizeof(pie));
	check_against_readelf(pie, &n);
	print_message("prog (PIE): %zu rows, base-relative %zu\n", n.rows, n.base_rel);
	/* big()'s 8 KiB frame: its RA slot is 8 KiB below the CFA, a few bytes above sp */
	assert_true(n.base_rel > 0);
	build_prog("prog-static", "-static", st, sizeof(st));
	check_against_readelf(st, &n);
	print_message("prog (static): %zu rows: sp %zu x29 %zu LR %zu base-relative %zu pair %zu "
		      "lost %zu unsupported %zu\n", n.rows, n.sp, n.fp, n.lr, n.base_rel, n.pair,
		      n.lost, n.unsupported);
}

/*
 * _start is END past its first instruction; .plt, which has no FDE, is "RA in
 * LR, CFA = sp"; a gap is INVALID.
 */
static void test_plt_start_gap(void **state)
{
	const uint8_t lr_row = UNW_ROW_A64 | UNW_A64_RA_LR;
	const struct unw_row *r;
	struct tk_unw_table *t;
	uint64_t plt, size, start, a;
	char pie[PATH_MAX];
	struct oracle o;
	size_t i;

	need("readelf", A64_LIBC);
	build_prog("prog-pie", "-pie", pie, sizeof(pie));
	t = build(pie);
	/* glibc's _start: .cfi_undefined x30 after its first instruction */
	start = sym_addr(pie, "_start");
	assert_true(start);
	r = tk_unw_table__find(t, start + 4);
	assert_non_null(r);
	assert_int_equal(r->kind, UNW_ROW_END);
	assert_true(section(pie, ".plt", &plt, &size));
	assert_true(size >= 32);
	for (a = plt; a < plt + size; a += 4) {
		r = tk_unw_table__find(t, a);
		assert_non_null(r);
		assert_int_equal(r->kind, lr_row);
		assert_int_equal(r->cfa_off, 0);
	}
	r = tk_unw_table__find(t, plt + size);
	assert_true(r && r->kind != lr_row);
	assert_int_equal(t->st.plt, 1);
	/* before the .plt: nothing; between FDEs: INVALID */
	assert_null(tk_unw_table__find(t, plt - 1));
	oracle_read(&o, pie);
	for (i = 0; i + 1 < o.nr_fdes; i++) {
		if (o.fdes[i].end == o.fdes[i + 1].start)
			continue;
		r = tk_unw_table__find(t, o.fdes[i].end);
		assert_non_null(r);
		assert_int_equal(r->kind, UNW_ROW_INVALID);
	}
	oracle_free(&o);
	tk_unw_table__free(t);

	/* libc's .plt (0x27200 in bookworm's): below its first FDE, the table rebased to it */
	assert_true(section(A64_LIBC, ".plt", &plt, &size));
	t = build(A64_LIBC);
	assert_int_equal(t->base, plt);
	r = tk_unw_table__find(t, plt + size - 4);
	assert_true(r && r->kind == lr_row);
	tk_unw_table__free(t);
}

/* An x86-64 object still builds x86 rows only; a 32-bit ARM one is refused. */
static void test_machines(void **state)
{
	struct tk_unw_table *t;
	struct tk_elf *elf;
	size_t i;

	t = build("/proc/self/exe");
	assert_true(t->nr > 0);
	for (i = 0; i < t->nr; i++)
		assert_false(t->rows[i].kind & UNW_ROW_A64);
	tk_unw_table__free(t);
	if (access("/usr/arm-linux-gnueabihf/lib/libc.so.6", R_OK))
		return;
	FX(tk_elf__open("/usr/arm-linux-gnueabihf/lib/libc.so.6", &elf));
	assert_int_equal(tk_unw_table__build(elf, NULL, &t), -ENOTSUP);
	tk_elf__free(elf);
}

static void test_vdso_rows(void **state)
{
	const uint8_t lr = UNW_ROW_A64 | UNW_A64_RA_LR;
	struct tk_unw_table *t;

	t = build_vdso(vdso612, vdso612_len);
	assert_int_equal(t->source, TK_UNW_SRC_VDSO);
	assert_int_equal(tk_unw_table__find(t, 0x340 + 0x40)->kind, lr);	/* clock_gettime */
	assert_int_equal(tk_unw_table__find(t, 0x820 - 1)->kind, UNW_ROW_A64_SIGNAL);
	assert_int_equal(tk_unw_table__find(t, 0x824)->kind, UNW_ROW_A64_SIGNAL);
	assert_int_equal(tk_unw_table__find(t, 0x828)->kind, lr);		/* getrandom */
	assert_int_equal(tk_unw_table__find(t, 0x340 + 0x97c)->kind, UNW_ROW_INVALID);
	assert_null(tk_unw_table__find(t, 0x33f));
	assert_int_equal(t->st.signal, 1);
	tk_unw_table__free(t);

	t = build_vdso(vdso510, vdso510_len);
	assert_int_equal(t->source, TK_UNW_SRC_EH_FRAME);
	assert_int_equal(tk_unw_table__find(t, 0x310 + 0x20)->kind, lr);
	assert_int_equal(tk_unw_table__find(t, 0x7e0 - 1)->kind, UNW_ROW_A64_SIGNAL);
	assert_int_equal(tk_unw_table__find(t, 0x7e4)->kind, UNW_ROW_A64_SIGNAL);
	assert_int_equal(tk_unw_table__find(t, 0x7e8)->kind, UNW_ROW_INVALID);
	assert_int_equal(tk_unw_table__find(t, 0x7d8)->kind, lr);
	assert_int_equal(t->st.signal, 1);
	tk_unw_table__free(t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_libc_readelf),
		cmocka_unit_test(test_prog_readelf),
		cmocka_unit_test(test_plt_start_gap),
		cmocka_unit_test(test_machines),
		cmocka_unit_test(test_vdso_rows),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
