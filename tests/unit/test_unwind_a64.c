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

#define A64_LIBC "/usr/lib/aarch64-linux-gnu/libc.so.6"
#define A64_CC "aarch64-linux-gnu-gcc"

#define FX(call) assert_int_equal((call), 0)

static struct fx *fx;

static int group_setup(void **state)
{
	fx = fx_new();
	return fx ? 0 : -1;
}

static int group_teardown(void **state)
{
	fx_free(fx);
	return 0;
}

static void run(const char *cmd)
{
	int status = system(cmd);

	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("%s failed (status %#x)", cmd, status);
}

static void need(const char *tool, const char *file)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
	if (system(cmd) || (file && access(file, R_OK))) {
		print_message("skip: no %s (tools/install-deps.sh --arm64)\n", file ? file : tool);
		skip();
	}
}

/* No frame pointer: a qsort callback, a signal handler, a big frame, calls through the PLT. */
static const char prog_src[] =
	"#include <signal.h>\n"
	"#include <stdio.h>\n"
	"#include <stdlib.h>\n"
	"#include <string.h>\n"
	"static volatile int sink;\n"
	"__attribute__((noinline)) int leaf(int a)\n"
	"{\n"
	"	for (int i = 0; i < 1000; i++)\n"
	"		sink += a * i;\n"
	"	return sink;\n"
	"}\n"
	"__attribute__((noinline)) int cmp(const void *a, const void *b)\n"
	"{\n"
	"	int x = *(const int *)a, y = *(const int *)b;\n"
	"	leaf(x);\n"
	"	return (x > y) - (x < y);\n"
	"}\n"
	"__attribute__((noinline)) int sort(int n)\n"
	"{\n"
	"	int v[64];\n"
	"	for (int i = 0; i < 64; i++)\n"
	"		v[i] = (i * 7919) % n;\n"
	"	qsort(v, 64, sizeof(int), cmp);\n"
	"	return v[0];\n"
	"}\n"
	"__attribute__((noinline)) int big(int n)\n"
	"{\n"
	"	char buf[8192];\n"
	"	memset(buf, n, sizeof(buf));\n"
	"	__asm__ volatile(\"\" :: \"r\"(buf) : \"memory\");\n"
	"	return buf[n] + puts(buf);\n"
	"}\n"
	"static void handler(int sig)\n"
	"{\n"
	"	sink += leaf(sig);\n"
	"}\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	signal(SIGALRM, handler);\n"
	"	return sort(argc + 60) + big(argc);\n"
	"}\n";

/* Cross-compile prog_src with @flags into the fixture as @name (once); its path in @out. */
static void build_prog(const char *name, const char *flags, char *out, size_t size)
{
	char src[PATH_MAX], cmd[3 * PATH_MAX];

	need(A64_CC, NULL);
	FX(fx_path(fx, name, out, size));
	if (!access(out, R_OK))
		return;
	if (!fx_exists(fx, "prog.c"))
		FX(fx_write(fx, "prog.c", prog_src));
	FX(fx_path(fx, "prog.c", src, sizeof(src)));
	snprintf(cmd, sizeof(cmd), A64_CC " -O2 -fomit-frame-pointer %s -o '%s' '%s' 2>&1", flags,
		 out, src);
	run(cmd);
}

static struct tk_unw_table *build(const char *path)
{
	struct tk_elf *elf;
	struct tk_unw_table *t;

	FX(tk_elf__open(path, &elf));
	FX(tk_unw_table__build(elf, NULL, &t));
	tk_elf__free(elf);
	assert_non_null(t);
	return t;
}

/* ---- the oracle: readelf --debug-dump=frames-interp ---------------------------------- */

struct orow {
	uint64_t loc;
	char cfa[32], x29[32], ra[32];
};

struct ofde {
	uint64_t start, end;
	bool other_ra;			/* its CIE's return address column is not x30 */
	size_t row, nr;			/* its rows in oracle.rows */
};

struct oracle {
	struct ofde *fdes;
	size_t nr_fdes;
	struct orow *rows;
	size_t nr_rows;
};

#define GROW(arr, nr)                                                                          \
	do {                                                                                   \
		if (!((nr) & ((nr) - 1))) {                                                    \
			(arr) = reallocarray((arr), (nr) ? 2 * (nr) : 1, sizeof(*(arr)));      \
			assert_non_null(arr);                                                  \
		}                                                                              \
	} while (0)

/*
 * The .eh_frame FDEs of @path and their rows; columns other than CFA, x29 and
 * ra ignored. An FDE readelf prints no row for keeps its CIE's initial row.
 */
static void oracle_read(struct oracle *o, const char *path)
{
	char line[4096], cmd[PATH_MAX + 64], cols[64][32];
	int ncols = 0, x29_col = -1, ra_col = -1, ra;
	struct orow cie_row = { 0 };
	uint64_t cie_offs[64];
	bool cie_other[64];
	size_t nr_cies = 0, k;
	struct ofde *f = NULL;
	bool in = false, in_cie = false;
	FILE *p;

	memset(o, 0, sizeof(*o));
	assert_null(strchr(path, '\''));
	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=frames-interp '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		uint64_t off, len, id, cie, start, end, loc;
		struct orow row;
		char *tok, *save;
		int n;

		if (!strncmp(line, "Contents of the ", 16)) {
			in = !strncmp(line, "Contents of the .eh_frame section", 33);
			continue;
		}
		if (!in)
			continue;
		if (sscanf(line, "%" SCNx64 " %" SCNx64 " %" SCNx64 " FDE cie=%" SCNx64
				 " pc=%" SCNx64 "..%" SCNx64, &off, &len, &id, &cie, &start,
			   &end) == 6) {
			if (f && !f->nr) {
				GROW(o->rows, o->nr_rows);
				o->rows[o->nr_rows++] = cie_row;
				o->rows[o->nr_rows - 1].loc = f->start;
				f->nr = 1;
			}
			GROW(o->fdes, o->nr_fdes);
			f = &o->fdes[o->nr_fdes++];
			*f = (struct ofde){ .start = start, .end = end, .row = o->nr_rows };
			for (k = 0; k < nr_cies; k++)
				f->other_ra |= cie_offs[k] == cie && cie_other[k];
			ncols = 0;
			in_cie = false;
			continue;
		}
		if (strstr(line, " CIE ") || strstr(line, "ZERO terminator")) {
			if (f && !f->nr) {
				GROW(o->rows, o->nr_rows);
				o->rows[o->nr_rows++] = cie_row;
				o->rows[o->nr_rows - 1].loc = f->start;
				f->nr = 1;
			}
			f = NULL;
			ncols = 0;
			in_cie = !!strstr(line, " CIE ");
			tok = strstr(line, " ra=");
			if (in_cie && tok && sscanf(tok, " ra=%d", &ra) == 1 &&
			    sscanf(line, "%" SCNx64, &off) == 1) {
				assert_true(nr_cies < 64);
				cie_offs[nr_cies] = off;
				cie_other[nr_cies++] = ra != 30;
			}
			continue;
		}
		if (strstr(line, "LOC") && strstr(line, "CFA")) {
			ncols = 0;
			x29_col = ra_col = -1;
			for (tok = strtok_r(line, " \n", &save); tok && ncols < 64;
			     tok = strtok_r(NULL, " \n", &save)) {
				if (!strcmp(tok, "x29"))
					x29_col = ncols;
				if (!strcmp(tok, "ra"))
					ra_col = ncols;
				ncols++;
			}
			continue;
		}
		if (!ncols || (!f && !in_cie) || sscanf(line, "%" SCNx64 " ", &loc) != 1)
			continue;
		n = 0;
		for (tok = strtok_r(line, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
			/* "r15 (x15)": one column */
			if (tok[0] == '(' && n) {
				size_t have = strlen(cols[n - 1]);

				strncat(cols[n - 1], tok, sizeof(cols[0]) - have - 1);
				continue;
			}
			if (n == 64)
				break;
			snprintf(cols[n++], sizeof(cols[0]), "%s", tok);
		}
		if (n < 2 || n != ncols)
			fail_msg("%s: row %s has %d columns, the header %d", path, cols[0], n,
				 ncols);
		row = (struct orow){ .loc = loc };
		snprintf(row.cfa, 32, "%s", cols[1]);
		snprintf(row.x29, 32, "%s", x29_col > 0 ? cols[x29_col] : "u");
		snprintf(row.ra, 32, "%s", ra_col > 0 ? cols[ra_col] : "u");
		if (!f) {
			cie_row = row;
			continue;
		}
		GROW(o->rows, o->nr_rows);
		o->rows[o->nr_rows++] = row;
		f->nr++;
	}
	pclose(p);
	assert_true(o->nr_fdes > 0);
}

static void oracle_free(struct oracle *o)
{
	free(o->fdes);
	free(o->rows);
}

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
static uint64_t sym_addr(const char *path, const char *name)
{
	char cmd[PATH_MAX + 64], line[512], type, sym[256];
	uint64_t addr, found = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "nm '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		if (sscanf(line, "%" SCNx64 " %c %255s", &addr, &type, sym) == 3 &&
		    !strcmp(sym, name))
			found = addr;
	}
	pclose(p);
	return found;
}

/* The address and size of section @name of @path (readelf -S), false when absent. */
static bool section(const char *path, const char *name, uint64_t *addr, uint64_t *size)
{
	char cmd[PATH_MAX + 64], line[512], sec[64], type[32];
	uint64_t off;
	bool found = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -SW '%s' 2>/dev/null", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		const char *b = strchr(line, ']');

		if (b &&
		    sscanf(b + 1, "%63s %31s %" SCNx64 " %" SCNx64 " %" SCNx64, sec, type, addr,
			   &off, size) == 5 && !strcmp(sec, name))
			found = true;
		if (found)
			break;
	}
	pclose(p);
	return found;
}

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

static struct tk_unw_table *build_vdso(const unsigned char *img, size_t len)
{
	struct tk_unw_table *t;
	struct tk_elf *elf;

	FX(tk_elf__open_mem(img, len, &elf));
	FX(tk_unw_table__build(elf, NULL, &t));
	tk_elf__free(elf);
	assert_non_null(t);
	return t;
}

/*
 * The vDSO: __kernel_rt_sigreturn (no CFI on any kernel) is a signal row from
 * the nop before it (a handler returns to the symbol: looked up a byte
 * before); 6.12's, with no .eh_frame at all, is "return address in LR"
 * elsewhere (frameless clock functions); 5.10's keeps its FDEs.
 */
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

/* ---- walks of synthesised stacks --------------------------------------------------- */

/*
 * A stack image made from a program's CFI as readelf reads it (not from the
 * table under test): frame i runs at pc[i]; its CFA, where it keeps x30 and
 * x29, from the readelf row in force there; the return addresses are signed
 * (a PAC in the high bits), as paciasp leaves them.
 */
#define STK 0x7ffc00000000ULL
#define STK_SZ 65536
#define PAC(a) ((a) ? (a) | 0x1500000000000000ULL | 0x0042000000000000ULL : 0)

static uint8_t stk[STK_SZ];

static int stk_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	if (addr < STK || addr - STK > STK_SZ || len > STK_SZ - (addr - STK))
		return -EFAULT;
	memcpy(buf, stk + (addr - STK), len);
	return 0;
}

static void stk_put(uint64_t addr, uint64_t v)
{
	assert_true(addr >= STK && addr + 8 <= STK + STK_SZ);
	memcpy(stk + (addr - STK), &v, 8);
}

/* The readelf row in force at @addr (an FDE's last row at or below it), or NULL. */
static const struct orow *oracle_row(const struct oracle *o, uint64_t addr)
{
	const struct orow *found = NULL;
	size_t i, j;

	for (i = 0; i < o->nr_fdes; i++) {
		if (addr < o->fdes[i].start || addr >= o->fdes[i].end)
			continue;
		for (j = 0; j < o->fdes[i].nr; j++) {
			if (o->rows[o->fdes[i].row + j].loc <= addr)
				found = &o->rows[o->fdes[i].row + j];
		}
	}
	return found;
}

/* The address after the first call in function @fn to @callee ("blr": the first blr). */
static uint64_t call_site(const char *dis, const char *fn, const char *callee)
{
	char head[128], want[128], line[512];
	uint64_t at = 0, a;
	bool in = false;
	FILE *f = fopen(dis, "r");

	assert_non_null(f);
	snprintf(head, sizeof(head), " <%s>:", fn);
	snprintf(want, sizeof(want), "\tbl\t%%*x <%s>", callee);
	while (!at && fgets(line, sizeof(line), f)) {
		if (strstr(line, ">:"))
			in = !!strstr(line, head);
		if (!in || sscanf(line, " %" SCNx64 ":", &a) != 1)
			continue;
		if (!strcmp(callee, "blr") ? !!strstr(line, "\tblr\t") :
		    (strstr(line, "\tbl\t") && strstr(line, callee) &&
		     strstr(strchr(line, '<'), callee) == strchr(line, '<') + 1 &&
		     strchr(line, '<')[1 + strlen(callee)] == '>'))
			at = a + 4;
	}
	fclose(f);
	if (!at)
		fail_msg("%s: no call to %s in %s", dis, callee, fn);
	return at;
}

/*
 * Lay out frames running at @pc[0..n) (the leaf first; the object loaded
 * @load above its link addresses) from sp @sp, the outermost returning to
 * @ret_last; the leaf's registers into @regs. Returns the outermost's CFA.
 */
static uint64_t lay_out(const struct oracle *o, uint64_t load, const uint64_t *pc, int n,
			uint64_t sp, uint64_t ret_last, struct tk_unw_regs *regs)
{
	uint64_t cfa[16], x29[17], sps[16];
	long off[16], ra[16], fp[16];
	bool by_x29[16], ra_saved[16], fp_saved[16];
	char reg[8], c;
	int i;

	assert_true(n <= 16);
	for (i = 0; i < n; i++) {
		/* a caller's row is the one at its call: the return address - 4 */
		const struct orow *r = oracle_row(o, (i ? pc[i] - 4 : pc[i]) - load);

		if (!r || sscanf(r->cfa, "%7[a-z0-9]%ld%c", reg, &off[i], &c) != 2)
			fail_msg("%#" PRIx64 ": no CFA rule readelf can say", pc[i]);
		by_x29[i] = !strcmp(reg, "x29");
		ra_saved[i] = sscanf(r->ra, "c%ld", &ra[i]) == 1;
		fp_saved[i] = sscanf(r->x29, "c%ld", &fp[i]) == 1;
		/* saved but by the leaf (in LR) and _start (none) */
		assert_true(i == 0 || i == n - 1 || ra_saved[i]);
		sps[i] = sp;
		/* an x29 CFA: the frame spans 512 bytes, x29 where the CFA rule says */
		cfa[i] = by_x29[i] ? sp + 512 : sp + off[i];
		sp = cfa[i];
	}
	/* x29 from the outermost frame in */
	x29[n] = 0;
	for (i = n - 1; i >= 0; i--) {
		if (fp_saved[i])
			stk_put(cfa[i] + fp[i], x29[i + 1]);
		if (by_x29[i])
			x29[i] = cfa[i] - off[i];
		else
			x29[i] = fp_saved[i] ? 0x5a5a0000ULL + (uint64_t)i : x29[i + 1];
		assert_true(fp_saved[i] || !by_x29[i] || x29[i] == x29[i + 1]);
		if (ra_saved[i])
			stk_put(cfa[i] + ra[i], PAC(i + 1 < n ? pc[i + 1] : ret_last));
	}
	regs->ip = pc[0];
	regs->sp = sps[0];
	regs->bp = x29[0];
	regs->lr = ra_saved[0] ? 0x1111 : PAC(n > 1 ? pc[1] : ret_last);
	regs->ra_mask = UNW_A64_RA_MASK;
	return cfa[n - 1];
}

/* One mapping of @t at its link address (a static program). */
static void one_map(struct unw_proc *p, const struct tk_unw_table *t, uint64_t end)
{
	memset(p, 0, sizeof(*p));
	p->nr = 1;
	p->maps[0] = (struct unw_map){ .start = t->base, .end = end, .bias = t->base,
				       .row_count = t->nr };
}

/* The qsort chain of the static program: who calls whom, from the leaf's caller to _start. */
static const char *const qsort_chain[][2] = {
	{ "cmp", "leaf" },
	{ "msort_with_tmp.part.0", "blr" },	/* the callback */
	{ "msort_with_tmp.part.0", "msort_with_tmp.part.0" },
	{ "__qsort_r", "msort_with_tmp.part.0" },
	{ "sort", "qsort" },			/* qsort tail-calls __qsort_r */
	{ "main", "sort" },
	{ "__libc_start_call_main", "blr" },
	{ "__libc_start_main", "__libc_start_call_main" },
	{ "_start", "__libc_start_main" },
};
#define QSORT_N (1 + (int)(sizeof(qsort_chain) / sizeof(qsort_chain[0])))

/* The static program, its disassembly and CFI; @pc[0..QSORT_N): leaf + @leaf_off, its callers. */
static void static_prog(char *st, char *dis, struct oracle *o, uint64_t leaf_off, uint64_t *pc)
{
	char cmd[3 * PATH_MAX];
	int i;

	need("aarch64-linux-gnu-objdump", A64_LIBC);
	build_prog("prog-static", "-static", st, PATH_MAX);
	FX(fx_path(fx, "prog-static.dis", dis, PATH_MAX));
	if (access(dis, R_OK)) {
		snprintf(cmd, sizeof(cmd),
			 "aarch64-linux-gnu-objdump -d --no-show-raw-insn '%s' > '%s'", st, dis);
		run(cmd);
	}
	oracle_read(o, st);
	pc[0] = sym_addr(st, "leaf") + leaf_off;
	for (i = 1; i < QSORT_N; i++)
		pc[i] = call_site(dis, qsort_chain[i - 1][0], qsort_chain[i - 1][1]);
}

/* Walk from @regs and expect @want[0..n), then END (or @causes when not 0). */
static void expect_walk(const struct unw_proc *proc, const struct unw_row *rows, size_t nr_rows,
			const struct tk_unw_regs *regs, const uint64_t *want, int n,
			uint32_t want_causes)
{
	uint32_t causes, frames[2];
	uint64_t ips[32];
	int i, got;

	got = tk_unw__walk(proc, rows, nr_rows, regs, stk_read, NULL, ips, 32, &causes, frames);
	for (i = 0; i < got && i < n; i++) {
		if (ips[i] != want[i])
			fail_msg("frame %d: %#" PRIx64 ", not %#" PRIx64, i, ips[i], want[i]);
	}
	assert_int_equal(got, n);
	assert_int_equal(causes, want_causes);
	assert_int_equal(frames[1], 0);		/* none by frame record */
}

/*
 * A leaf called by qsort's callback (through libc's msort: the callback by
 * blr, its recursion), from main, up to _start: every frame by a row, END.
 */
static void test_walk_qsort_chain(void **state)
{
	char st[PATH_MAX], dis[PATH_MAX];
	struct tk_unw_regs regs;
	struct tk_unw_table *t;
	uint64_t pc[QSORT_N];
	struct unw_proc proc;
	struct oracle o;

	static_prog(st, dis, &o, 8, pc);
	memset(stk, 0, sizeof(stk));
	lay_out(&o, 0, pc, QSORT_N, STK + 0x100, 0, &regs);
	t = build(st);
	one_map(&proc, t, t->base + t->rows[t->nr - 1].pc);
	expect_walk(&proc, t->rows, t->nr, &regs, pc, QSORT_N, UNW_C_END);
	tk_unw_table__free(t);
	oracle_free(&o);
}

#define VDSO 0x7fff00000000ULL
#define SIGTRAMP (VDSO + 0x820)		/* 6.12's __kernel_rt_sigreturn */

/* @rows: the program's table, then the vDSO's (6.12's) mapped at VDSO; the entry of both. */
static struct unw_row *with_vdso(const struct tk_unw_table *t, struct unw_proc *proc,
				 size_t *nr)
{
	struct tk_unw_table *v = build_vdso(vdso612, vdso612_len);
	struct unw_row *rows = calloc(t->nr + v->nr, sizeof(*rows));

	assert_non_null(rows);
	memcpy(rows, t->rows, t->nr * sizeof(*rows));
	memcpy(rows + t->nr, v->rows, v->nr * sizeof(*rows));
	one_map(proc, t, t->base + t->rows[t->nr - 1].pc);
	proc->maps[1] = (struct unw_map){ .start = VDSO, .end = VDSO + 0x1000,
					  .bias = VDSO + v->base, .row_start = t->nr,
					  .row_count = v->nr };
	proc->nr = 2;
	*nr = t->nr + v->nr;
	tk_unw_table__free(v);
	return rows;
}

/*
 * SIGALRM in leaf, deep in the qsort chain: leaf <- handler <- the vDSO's
 * __kernel_rt_sigreturn <- (the rt_sigframe) leaf again, whose caller is in
 * the LR the signal frame saved <- cmp <- ... <- _start.
 */
static void test_walk_signal(void **state)
{
	char st[PATH_MAX], dis[PATH_MAX];
	struct tk_unw_regs regs, in;
	struct unw_row *rows;
	struct tk_unw_table *t;
	uint64_t pc[QSORT_N], want[QSORT_N + 3], h[2], frame;
	struct unw_proc proc;
	struct oracle o;
	size_t nr;
	int i;

	static_prog(st, dis, &o, 0x10, pc);
	memset(stk, 0, sizeof(stk));
	/* the interrupted stack high up, the handler's below it, the rt_sigframe between */
	lay_out(&o, 0, pc, QSORT_N, STK + 0x8000, 0, &in);
	h[0] = sym_addr(st, "leaf") + 8;
	h[1] = call_site(dis, "handler", "leaf");
	frame = lay_out(&o, 0, h, 2, STK + 0x100, SIGTRAMP, &regs);
	assert_true(frame + UNW_A64_SC_PC + 8 < STK + 0x8000);
	stk_put(frame + UNW_A64_SC_PC, in.ip);
	stk_put(frame + UNW_A64_SC_SP, in.sp);
	stk_put(frame + UNW_A64_SC_X29, in.bp);
	stk_put(frame + UNW_A64_SC_LR, in.lr);
	t = build(st);
	rows = with_vdso(t, &proc, &nr);
	want[0] = h[0];
	want[1] = h[1];
	want[2] = SIGTRAMP;
	for (i = 0; i < QSORT_N; i++)
		want[3 + i] = pc[i];
	expect_walk(&proc, rows, nr, &regs, want, QSORT_N + 3, UNW_C_END);
	free(rows);
	tk_unw_table__free(t);
	oracle_free(&o);
}

/* A sample in the vDSO's __kernel_clock_gettime (no CFI on 6.12): its caller from LR. */
static void test_walk_vdso_leaf(void **state)
{
	char st[PATH_MAX], dis[PATH_MAX];
	uint64_t pc[QSORT_N], want[QSORT_N];
	struct tk_unw_regs regs;
	struct tk_unw_table *t;
	struct unw_row *rows;
	struct unw_proc proc;
	struct oracle o;
	size_t nr;
	int i;

	static_prog(st, dis, &o, 8, pc);
	memset(stk, 0, sizeof(stk));
	/* cmp called the vDSO instead of leaf: cmp's frame and up, the vDSO's sp the same */
	lay_out(&o, 0, pc + 1, QSORT_N - 1, STK + 0x100, 0, &regs);
	regs.ip = VDSO + 0x340 + 0x40;
	regs.lr = PAC(pc[1]);
	t = build(st);
	rows = with_vdso(t, &proc, &nr);
	want[0] = regs.ip;
	for (i = 1; i < QSORT_N; i++)
		want[i] = pc[i];
	expect_walk(&proc, rows, nr, &regs, want, QSORT_N, UNW_C_END);
	free(rows);
	tk_unw_table__free(t);
	oracle_free(&o);
}

/*
 * A PIE loaded at 0xaaaa00000000, stopped in a .plt stub (puts@plt) called by
 * big (8 KiB of locals: x30 against sp) from main: the stub's caller from LR.
 */
static void test_walk_plt(void **state)
{
	const uint64_t load = 0xaaaa00000000ULL;
	char pie[PATH_MAX], dis[PATH_MAX], cmd[3 * PATH_MAX];
	struct tk_unw_regs regs;
	struct tk_unw_table *t;
	struct unw_proc proc;
	uint64_t pc[3], plt, size;
	struct oracle o;

	need("aarch64-linux-gnu-objdump", A64_LIBC);
	build_prog("prog-pie", "-pie", pie, sizeof(pie));
	FX(fx_path(fx, "prog-pie.dis", dis, sizeof(dis)));
	snprintf(cmd, sizeof(cmd), "aarch64-linux-gnu-objdump -d --no-show-raw-insn '%s' > '%s'",
		 pie, dis);
	run(cmd);
	oracle_read(&o, pie);
	assert_true(section(pie, ".plt", &plt, &size));
	pc[1] = load + call_site(dis, "big", "puts@plt");
	pc[2] = load + call_site(dis, "main", "big");
	/* the stub puts@plt calls, 8 bytes in (after adrp, ldr) */
	{
		FILE *f = fopen(dis, "r");
		char line[512];
		uint64_t a = 0;

		assert_non_null(f);
		while (fgets(line, sizeof(line), f) && !strstr(line, " <puts@plt>:"))
			;
		assert_true(sscanf(line, "%" SCNx64, &a) == 1 && a >= plt && a < plt + size);
		fclose(f);
		pc[0] = load + a + 8;
	}
	memset(stk, 0, sizeof(stk));
	/* the stub has no readelf row: lay out big and main, the stub's sp is big's */
	lay_out(&o, load, pc + 1, 2, STK + 0x100, 0, &regs);
	regs.lr = PAC(pc[1]);
	regs.ip = pc[0];
	t = build(pie);
	memset(&proc, 0, sizeof(proc));
	proc.nr = 1;
	proc.maps[0] = (struct unw_map){ .start = load + plt, .end = load + 0x10000,
					 .bias = load + t->base, .row_count = t->nr };
	/* main's return address: 0, the end of the walk */
	expect_walk(&proc, t->rows, t->nr, &regs, pc, 3, 0);
	tk_unw_table__free(t);
	oracle_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_libc_readelf),
		cmocka_unit_test(test_prog_readelf),
		cmocka_unit_test(test_plt_start_gap),
		cmocka_unit_test(test_machines),
		cmocka_unit_test(test_walk_qsort_chain),
		cmocka_unit_test(test_vdso_rows),
		cmocka_unit_test(test_walk_signal),
		cmocka_unit_test(test_walk_vdso_leaf),
		cmocka_unit_test(test_walk_plt),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
