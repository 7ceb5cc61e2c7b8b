// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The unwind-table builder against binutils: every row `readelf
 * --debug-dump=frames-interp` prints for libc, libstdc++, ld.so, python3,
 * redis-server (those present) and programs built here (-O2
 * -fomit-frame-pointer, with a realigned stack, a frame too big for the rows
 * and a frame pointer) must be what the table says at that address, and
 * every address readelf's FDEs leave uncovered an INVALID row. Then what a
 * user relies on: __restore_rt (found through sigaction) is a SIGNAL row, a
 * PIE's PLT a PLT row, _start an END row; an object without CFI has no rows;
 * .debug_frame (own or a separate debug file's) is used when .eh_frame is
 * gone. A hand-made .eh_frame pins each conversion rule; it and a real
 * program, cut short and corrupted byte by byte, must not crash the builder.
 * Build times are printed, not asserted.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>

#include "bpf/unwind.h"
#include "../lib/fixture.h"
#include "proc/elf_reader.h"
#include "unwind/unwind.h"
#include "unwind/unwind_table_int.h"

#define LIBC "/usr/lib/x86_64-linux-gnu/libc.so.6"
#define LIBSTDCXX "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"
#define LDSO "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
#define PYTHON "/usr/bin/python3.11"
#define REDIS "/usr/bin/redis-server"
#define MAX_SHOWN 20

#define FX(call) assert_int_equal((call), 0)

/* ---- helpers ---------------------------------------------------------------------- */

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

static void need_tool(const char *tool)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", tool);
	if (system(cmd)) {
		print_message("skip: no %s\n", tool);
		skip();
	}
}

/* A program with a realigned stack (DRAP), a frame over 32 KiB, a frame pointer, a PLT. */
static const char prog_src[] =
	"#include <stdio.h>\n"
	"#include <string.h>\n"
	"__attribute__((noinline)) int drap(int n)\n"
	"{\n"
	"	char vla[n];\n"
	"	int __attribute__((aligned(64))) a[16];\n"
	"	memset(vla, n, n);\n"
	"	for (int i = 0; i < 16; i++)\n"
	"		a[i] = vla[i % n] + i;\n"
	"	__asm__ volatile(\"\" :: \"r\"(a) : \"memory\");\n"
	"	return a[n & 15] + puts(vla);\n"
	"}\n"
	"__attribute__((noinline)) int big(int n)\n"
	"{\n"
	"	char buf[40000];\n"
	"	memset(buf, n, sizeof(buf));\n"
	"	__asm__ volatile(\"\" :: \"r\"(buf) : \"memory\");\n"
	"	return buf[n] + puts(buf);\n"
	"}\n"
	"__attribute__((noinline, optimize(\"no-omit-frame-pointer\"))) int fp(int n)\n"
	"{\n"
	"	char *p = __builtin_alloca(n);\n"
	"	memset(p, 1, n);\n"
	"	return puts(p) + p[n - 1];\n"
	"}\n"
	"int main(int argc, char **argv)\n"
	"{\n"
	"	return drap(argc + 20) + big(argc) + fp(argc + 5);\n"
	"}\n";

/* Compile prog_src with @flags into the fixture as @name (once); its path in @out. */
static void build_prog(const char *name, const char *flags, char *out, size_t size)
{
	char src[PATH_MAX], cmd[3 * PATH_MAX];

	need_tool("gcc");
	FX(fx_path(fx, name, out, size));
	if (!access(out, R_OK))
		return;
	if (!fx_exists(fx, "prog.c"))
		FX(fx_write(fx, "prog.c", prog_src));
	FX(fx_path(fx, "prog.c", src, sizeof(src)));
	snprintf(cmd, sizeof(cmd), "gcc %s -o '%s' '%s' 2>&1", flags, out, src);
	run(cmd);
}

static struct tk_unw_table *build(const char *path, const char *debug_path)
{
	struct tk_elf *elf, *debug = NULL;
	struct tk_unw_table *t;

	FX(tk_elf__open(path, &elf));
	if (debug_path)
		FX(tk_elf__open(debug_path, &debug));
	FX(tk_unw_table__build(elf, debug, &t));
	tk_elf__free(debug);
	tk_elf__free(elf);
	assert_non_null(t);
	return t;
}

static const char *kind_name(unsigned int kind)
{
	static const char *const names[] = { "?", "SP", "FP", "DEREF_FP", "PLT", "SIGNAL",
					     "END", "INVALID", "UNSUPPORTED" };

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : "?";
}

/* Sorted, one row per pc, known kinds, no two equal neighbours, stats that add up. */
static void check_invariants(const struct tk_unw_table *t)
{
	uint64_t unsup = 0, sig = 0, plt = 0, deref = 0;
	size_t i;

	assert_int_equal(t->st.rows, t->nr);
	assert_true((t->nr == 0) == (t->source == TK_UNW_SRC_NONE));
	for (i = 0; i < t->nr; i++) {
		const struct unw_row *r = &t->rows[i];

		assert_in_range(r->kind, UNW_ROW_SP, UNW_ROW_DRAP);
		if (i) {
			const struct unw_row *p = &t->rows[i - 1];

			assert_true(p->pc < r->pc);
			assert_false(p->kind == r->kind && p->cfa_off == r->cfa_off &&
				     p->rbp_off == r->rbp_off);
		}
		assert_ptr_equal(tk_unw_table__find(t, t->base + r->pc), r);
		unsup += r->kind == UNW_ROW_UNSUPPORTED;
		sig += r->kind == UNW_ROW_SIGNAL;
		plt += r->kind == UNW_ROW_PLT;
		deref += r->kind == UNW_ROW_DEREF_FP || r->kind == UNW_ROW_DRAP;
	}
	assert_int_equal(t->st.unsupported, unsup);
	assert_int_equal(t->st.signal, sig);
	assert_int_equal(t->st.plt, plt);
	assert_int_equal(t->st.deref, deref);
	if (t->nr) {
		/* (the last row is INVALID unless an FDE reaches past base + 4 GiB) */
		if (t->base + t->rows[0].pc)
			assert_null(tk_unw_table__find(t, t->base + t->rows[0].pc - 1));
	}
}

/* ---- the oracle: readelf --debug-dump=frames-interp ---------------------------------- */

enum xclass { X_NONE, X_PLT, X_DEREF, X_OTHER, X_MIXED };

struct ofde {
	uint64_t off;			/* of the FDE in its section */
	uint64_t start, end;
	uint64_t cie;			/* its CIE's offset */
	bool signal;			/* its CIE's augmentation has 'S' */
	enum xclass x;			/* of its DW_CFA_def_cfa_expression rules */
	int xval;			/* PLT: K; DEREF: the offset */
	size_t row, nr;			/* its rows in oracle.rows */
	bool skip;			/* overlaps another */
};

struct orow {
	uint64_t loc;
	char cfa[32], rbp[32], ra[32];
};

struct ocie {
	uint64_t off;
	bool signal;
	struct orow init;
};

struct oracle {
	struct ofde *fdes;
	size_t nr_fdes;
	struct orow *rows;
	size_t nr_rows;
	struct ocie *cies;
	size_t nr_cies;
};

/* Room for one more in @arr of @nr: it doubles whenever @nr reaches a power of two. */
#define GROW(arr, nr)                                                                          \
	do {                                                                                   \
		if (!((nr) & ((nr) - 1))) {                                                    \
			(arr) = reallocarray((arr), (nr) ? 2 * (nr) : 1, sizeof(*(arr)));      \
			assert_non_null(arr);                                                  \
		}                                                                              \
	} while (0)

static FILE *readelf(const char *what, const char *path)
{
	char cmd[PATH_MAX + 64];
	FILE *p;

	if (strchr(path, '\''))
		fail_msg("cannot quote %s for the shell", path);
	snprintf(cmd, sizeof(cmd), "readelf --debug-dump=%s '%s' 2>/dev/null", what, path);
	p = popen(cmd, "r");
	if (!p)
		fail_msg("popen %s: %s", cmd, strerror(errno));
	return p;
}

/* "Contents of the .eh_frame section ...": is it @sec's? */
static bool section_line(const char *line, const char *sec, bool *in)
{
	char want[64];

	if (strncmp(line, "Contents of the ", 16))
		return false;
	snprintf(want, sizeof(want), "Contents of the %s section", sec);
	*in = !strncmp(line, want, strlen(want));
	return true;
}

static bool fde_line(const char *line, uint64_t *off, uint64_t *cie, uint64_t *start,
		     uint64_t *end)
{
	uint64_t len, id;

	return sscanf(line, "%" SCNx64 " %" SCNx64 " %" SCNx64 " FDE cie=%" SCNx64 " pc=%" SCNx64
			    "..%" SCNx64, off, &len, &id, cie, start, end) == 6;
}

static enum xclass classify(const char *expr, int *val)
{
	static const char plt[] = "(DW_OP_breg7 (rsp): 8; DW_OP_breg16 (rip): 0; DW_OP_lit15; "
				  "DW_OP_and; DW_OP_lit";
	int n;
	char c;

	if (!strncmp(expr, plt, strlen(plt)) &&
	    sscanf(expr + strlen(plt), "%d; DW_OP_ge; DW_OP_lit3; DW_OP_shl; DW_OP_plus%c", val,
		   &c) == 2 && c == ')')
		return X_PLT;
	if (sscanf(expr, "(DW_OP_breg6 (rbp): %d; DW_OP_deref%c", &n, &c) == 2 && c == ')') {
		*val = n;
		return X_DEREF;
	}
	return X_OTHER;
}

/* The raw dump: what kind of CFA expressions each FDE uses. */
static void parse_raw(struct oracle *o, const char *path, const char *sec)
{
	char line[4096];
	struct ofde *f = NULL;
	bool in = false;
	FILE *p = readelf("frames", path);

	while (fgets(line, sizeof(line), p)) {
		uint64_t off, cie, start, end;
		const char *e;
		enum xclass x;
		int val = 0;

		if (section_line(line, sec, &in) || !in)
			continue;
		if (fde_line(line, &off, &cie, &start, &end)) {
			GROW(o->fdes, o->nr_fdes);
			f = &o->fdes[o->nr_fdes++];
			memset(f, 0, sizeof(*f));
			f->off = off;
			continue;
		}
		if (strstr(line, " CIE") && isxdigit((unsigned char)line[0])) {
			f = NULL;
			continue;
		}
		e = strstr(line, "DW_CFA_def_cfa_expression ");
		if (!f || !e)
			continue;
		x = classify(e + 26, &val);
		if (f->x == X_NONE) {
			f->x = x;
			f->xval = val;
		} else if (f->x != x || f->xval != val) {
			f->x = X_MIXED;
		}
	}
	pclose(p);
}

static struct ofde *fde_by_off(struct oracle *o, uint64_t off)
{
	size_t lo = 0, hi = o->nr_fdes;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (o->fdes[mid].off == off)
			return &o->fdes[mid];
		if (o->fdes[mid].off < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* Split a row into words; "r9 (r9)" is one word. */
static int words(char *line, char **w, int max)
{
	int n = 0;
	char *s, *save = NULL;

	for (s = strtok_r(line, " \t\n", &save); s; s = strtok_r(NULL, " \t\n", &save)) {
		if (*s == '(' && n) {
			s[-1] = ' ';	/* glue to the word before */
			continue;
		}
		if (n < max)
			w[n++] = s;
	}
	return n;
}

static void copy_word(char *dst, const char *src)
{
	snprintf(dst, 32, "%s", src ? src : "u");
}

static struct ocie *cie_by_off(struct oracle *o, uint64_t off)
{
	size_t i;

	for (i = 0; i < o->nr_cies; i++) {
		if (o->cies[i].off == off)
			return &o->cies[i];
	}
	return NULL;
}

/* One row of the dump, by the columns of the last "LOC CFA ..." line. */
static void read_row(char **w, int n, int rbp_col, int ra_col, struct orow *r)
{
	r->loc = strtoull(w[0], NULL, 16);
	copy_word(r->cfa, w[1]);
	copy_word(r->rbp, rbp_col >= 0 && rbp_col < n ? w[rbp_col] : NULL);
	copy_word(r->ra, ra_col >= 0 && ra_col < n ? w[ra_col] : NULL);
}

/* The interpreted dump: every row of every FDE; FDEs without rows get their CIE's. */
static void parse_interp(struct oracle *o, const char *path, const char *sec)
{
	int ncols = 0, rbp_col = -1, ra_col = -1;
	char line[4096], *w[64];
	struct ocie *cie = NULL;
	struct ofde *f = NULL;
	bool in = false;
	FILE *p = readelf("frames-interp", path);
	size_t i;

	while (fgets(line, sizeof(line), p)) {
		uint64_t off, cie_off, start, end, len, id;
		const char *q;
		int n, c;

		if (section_line(line, sec, &in) || !in)
			continue;
		if (fde_line(line, &off, &cie_off, &start, &end)) {
			f = fde_by_off(o, off);
			assert_non_null(f);
			f->start = start;
			f->end = end;
			f->cie = cie_off;
			f->row = o->nr_rows;
			cie = NULL;
			ncols = 0;
			continue;
		}
		if (sscanf(line, "%" SCNx64 " %" SCNx64 " %" SCNx64 " CIE", &off, &len, &id) == 3 &&
		    strstr(line, " CIE")) {
			GROW(o->cies, o->nr_cies);
			cie = &o->cies[o->nr_cies++];
			memset(cie, 0, sizeof(*cie));
			cie->off = off;
			/* the augmentation: CIE "zRS" */
			q = strchr(line, '"');
			cie->signal = q && strchr(q + 1, 'S') &&
				      strchr(q + 1, 'S') < strrchr(line, '"');
			f = NULL;
			ncols = 0;
			continue;
		}
		if (strstr(line, "   LOC ")) {
			n = words(line, w, 64);
			rbp_col = ra_col = -1;
			for (c = 2; c < n; c++) {
				if (!strcmp(w[c], "rbp"))
					rbp_col = c;
				if (!strcmp(w[c], "ra"))
					ra_col = c;
			}
			ncols = n;
			continue;
		}
		if (!ncols || !isxdigit((unsigned char)line[0]))
			continue;
		n = words(line, w, 64);
		/* a row starts with its 16-digit LOC ("00000130 ZERO terminator" does not) */
		if (n < 2 || strlen(w[0]) != 16 || strspn(w[0], "0123456789abcdef") != 16)
			continue;
		if (f) {
			GROW(o->rows, o->nr_rows);
			read_row(w, n, rbp_col, ra_col, &o->rows[o->nr_rows++]);
			f->nr++;
		} else if (cie) {
			read_row(w, n, rbp_col, ra_col, &cie->init);
		}
	}
	pclose(p);
	for (i = 0; i < o->nr_fdes; i++) {
		struct ofde *d = &o->fdes[i];

		cie = cie_by_off(o, d->cie);
		assert_non_null(cie);
		d->signal = cie->signal;
		if (d->nr)
			continue;
		/* readelf prints no rows for an FDE of nops: its CIE's initial row holds */
		GROW(o->rows, o->nr_rows);
		o->rows[o->nr_rows] = cie->init;
		o->rows[o->nr_rows].loc = d->start;
		d->row = o->nr_rows++;
		d->nr = 1;
	}
}

static int cmp_ofde(const void *a, const void *b)
{
	const struct ofde *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->end > y->end ? -1 : x->end < y->end;
}

static void oracle_load(struct oracle *o, const char *path, const char *sec)
{
	size_t i;

	memset(o, 0, sizeof(*o));
	need_tool("readelf");
	parse_raw(o, path, sec);
	parse_interp(o, path, sec);
	/* by address; an FDE overlapping the one before is not checked (the builder drops it) */
	qsort(o->fdes, o->nr_fdes, sizeof(*o->fdes), cmp_ofde);
	for (i = 1; i < o->nr_fdes; i++) {
		size_t j = i;

		while (j > 0 && o->fdes[j - 1].skip)
			j--;
		if (j > 0 && o->fdes[i].start < o->fdes[j - 1].end)
			o->fdes[i].skip = true;
	}
}

static void oracle_free(struct oracle *o)
{
	free(o->fdes);
	free(o->rows);
	free(o->cies);
}

/* ---- what the table must say ---------------------------------------------------------- */

struct want {
	unsigned int kinds;		/* bit per acceptable kind */
	bool exact;			/* cfa_off and rbp_off must be these too */
	int cfa_off, rbp_off;
};

static bool reg_plus(const char *s, const char *reg, long *off)
{
	size_t n = strlen(reg);
	char *end;

	if (strncmp(s, reg, n) || (s[n] != '+' && s[n] != '-'))
		return false;
	*off = strtol(s + n, &end, 10);
	return *end == '\0';
}

static int rbp_want(const char *rbp)
{
	long off;

	if (!strcmp(rbp, "u") || !strcmp(rbp, "s"))
		return 0;
	if (reg_plus(rbp, "c", &off) && off && !(off % 8) && off / 8 >= -127 && off / 8 <= 127)
		return off / 8;
	return UNW_RBP_LOST;
}

static struct want expect(const struct ofde *f, const struct orow *r)
{
	struct want w = { 0 };
	long off;

	if (f->signal) {
		w.kinds = 1u << UNW_ROW_SIGNAL;
		return w;
	}
	if (!strcmp(r->ra, "u")) {
		w.kinds = 1u << UNW_ROW_END;
		return w;
	}
	w.kinds = 1u << UNW_ROW_UNSUPPORTED;
	if (strcmp(r->ra, "c-8"))
		return w;
	w.rbp_off = rbp_want(r->rbp);
	if (!strcmp(r->cfa, "exp")) {
		switch (f->x) {
		case X_PLT:
			w.kinds = 1u << UNW_ROW_PLT;
			w.cfa_off = f->xval;
			w.exact = true;
			break;
		case X_DEREF:
			/* rbp by an expression ("exp"): where rbp points, in a DRAP row */
			w.kinds = 1u << (strcmp(r->rbp, "exp") ? UNW_ROW_DEREF_FP : UNW_ROW_DRAP);
			w.cfa_off = f->xval;
			w.exact = strcmp(r->rbp, "exp") != 0;
			break;
		case X_MIXED:
			w.kinds |= 1u << UNW_ROW_PLT | 1u << UNW_ROW_DEREF_FP | 1u << UNW_ROW_DRAP;
			break;
		default:
			break;
		}
		return w;
	}
	if (reg_plus(r->cfa, "rsp", &off) && off >= INT16_MIN && off <= INT16_MAX)
		w.kinds = 1u << UNW_ROW_SP;
	else if (reg_plus(r->cfa, "rbp", &off) && off >= INT16_MIN && off <= INT16_MAX)
		w.kinds = 1u << UNW_ROW_FP;
	else
		return w;
	w.cfa_off = off;
	w.exact = true;
	return w;
}

static bool row_ok(const struct unw_row *row, const struct want *w)
{
	if (!row || !(w->kinds & (1u << row->kind)))
		return false;
	return !w->exact || (row->cfa_off == w->cfa_off && row->rbp_off == w->rbp_off);
}

struct cmp_result {
	size_t rows, checked, bad;
};

static void mismatch(struct cmp_result *res, const char *name, uint64_t at, const char *what,
		     const struct unw_row *row)
{
	if (res->bad++ < MAX_SHOWN)
		print_message("  %s: %#" PRIx64 ": readelf %s; table %s cfa_off %d rbp_off %d\n",
			      name, at, what, row ? kind_name(row->kind) : "(none)",
			      row ? row->cfa_off : 0, row ? row->rbp_off : 0);
}

/*
 * Every row of @o against @t: the table rows from each readelf row's LOC up
 * to the next LOC must all say what readelf says; every FDE end no FDE
 * starts at must be INVALID; every table row must lie in an FDE or be INVALID.
 */
static struct cmp_result compare(const char *name, const struct tk_unw_table *t,
				 const struct oracle *o)
{
	struct cmp_result res = { 0 };
	size_t i, j;

	for (i = 0; i < o->nr_fdes; i++) {
		const struct ofde *f = &o->fdes[i];

		if (f->skip)
			continue;
		for (j = 0; j < f->nr; j++) {
			const struct orow *r = &o->rows[f->row + j];
			uint64_t next = j + 1 < f->nr ? o->rows[f->row + j + 1].loc : f->end;
			const struct unw_row *row = tk_unw_table__find(t, r->loc);
			struct want w = expect(f, r);
			char what[128];

			if (r->loc >= f->end)
				continue;
			snprintf(what, sizeof(what), "CFA %s rbp %s ra %s%s", r->cfa, r->rbp, r->ra,
				 f->signal ? " (signal frame)" : "");
			res.rows++;
			if (!row_ok(row, &w)) {
				mismatch(&res, name, r->loc, what, row);
				continue;
			}
			/* and no other row until the next LOC */
			for (row++; row < t->rows + t->nr && t->base + row->pc < next; row++) {
				if (!row_ok(row, &w)) {
					mismatch(&res, name, t->base + row->pc, what, row);
					break;
				}
			}
			res.checked++;
		}
		if (i + 1 == o->nr_fdes || o->fdes[i + 1].start != f->end) {
			const struct unw_row *row = tk_unw_table__find(t, f->end);

			if (!row || row->kind != UNW_ROW_INVALID)
				mismatch(&res, name, f->end, "no FDE here", row);
		}
	}
	/* rows outside every FDE */
	for (i = 0, j = 0; i < t->nr; i++) {
		uint64_t at = t->base + t->rows[i].pc;

		while (j < o->nr_fdes && o->fdes[j].end <= at)
			j++;
		if (t->rows[i].kind == UNW_ROW_INVALID)
			continue;
		if (j == o->nr_fdes || at < o->fdes[j].start)
			mismatch(&res, name, at, "no FDE here", &t->rows[i]);
	}
	return res;
}

/* Build @path's table, compare it with readelf's reading of @sec; no mismatch allowed. */
static void against_readelf(const char *name, const char *path, const char *debug,
			    const char *sec, enum tk_unw_source source)
{
	struct tk_unw_table *t;
	struct cmp_result res;
	struct oracle o;

	t = build(path, debug);
	check_invariants(t);
	assert_int_equal(t->source, source);
	assert_int_equal(t->rows[t->nr - 1].kind, UNW_ROW_INVALID);
	oracle_load(&o, debug ? debug : path, sec);
	res = compare(name, t, &o);
	print_message("  %-16s %6zu FDEs %7zu readelf rows: %zu agree, %zu mismatches; "
		      "table %zu rows (%" PRIu64 " unsupported, %" PRIu64 " plt, %" PRIu64
		      " signal, %" PRIu64 " deref) in %.2f ms\n",
		      name, o.nr_fdes, res.rows, res.checked, res.bad, t->nr, t->st.unsupported,
		      t->st.plt, t->st.signal, t->st.deref, t->st.build_ns / 1e6);
	assert_true(o.nr_fdes > 0);
	assert_int_equal(res.bad, 0);
	assert_int_equal(res.checked, res.rows);
	oracle_free(&o);
	tk_unw_table__free(t);
}

static void against_readelf_if(const char *name, const char *path)
{
	if (access(path, R_OK)) {
		print_message("  %s: no %s, not compared\n", name, path);
		return;
	}
	against_readelf(name, path, NULL, ".eh_frame", TK_UNW_SRC_EH_FRAME);
}

/* ---- tests ------------------------------------------------------------------------------ */

static void test_libc_readelf(void **state)
{
	against_readelf("libc.so.6", LIBC, NULL, ".eh_frame", TK_UNW_SRC_EH_FRAME);
}

static void test_system_objects_readelf(void **state)
{
	against_readelf_if("libstdc++.so.6", LIBSTDCXX);
	against_readelf_if("ld.so", LDSO);
	against_readelf_if("python3.11", PYTHON);
	against_readelf_if("redis-server", REDIS);
}

static void test_prog_readelf(void **state)
{
	char path[PATH_MAX];
	struct tk_unw_table *t;

	build_prog("prog", "-O2 -fomit-frame-pointer", path, sizeof(path));
	against_readelf("prog -O2", path, NULL, ".eh_frame", TK_UNW_SRC_EH_FRAME);
	t = build(path, NULL);
	/* drap(): the realigned stack; big(): CFA rsp+40016 does not fit */
	assert_true(t->st.deref > 0);
	assert_true(t->st.unsupported > 0);
	tk_unw_table__free(t);
	build_prog("prog-O0", "-O0", path, sizeof(path));
	against_readelf("prog -O0", path, NULL, ".eh_frame", TK_UNW_SRC_EH_FRAME);
}

/* The object this process has mapped at @addr: its path, and @addr as its ELF vaddr. */
struct find_obj {
	uintptr_t addr;
	char path[PATH_MAX];
	uint64_t vaddr;
	bool found;
};

static int find_obj_cb(struct dl_phdr_info *info, size_t size, void *ctx)
{
	struct find_obj *fo = ctx;
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || fo->addr < start || fo->addr - start >= ph->p_memsz)
			continue;
		snprintf(fo->path, sizeof(fo->path), "%s", info->dlpi_name);
		fo->vaddr = fo->addr - info->dlpi_addr;
		fo->found = true;
		return 1;
	}
	return 0;
}

static void on_usr2(int sig)
{
}

/* Where a signal handler returns to (glibc's __restore_rt, as sigaction set it up) is SIGNAL. */
static void test_restore_rt_signal(void **state)
{
	struct sigaction sa = { .sa_handler = on_usr2 }, old;
	struct find_obj fo = { 0 };
	const struct unw_row *row;
	struct tk_unw_table *t;

	FX(sigaction(SIGUSR2, &sa, NULL));
	FX(sigaction(SIGUSR2, NULL, &old));
	assert_true(old.sa_flags & 0x04000000);	/* SA_RESTORER */
	fo.addr = (uintptr_t)old.sa_restorer;
	dl_iterate_phdr(find_obj_cb, &fo);
	assert_true(fo.found);
	assert_non_null(strstr(fo.path, "libc.so.6"));
	t = build(fo.path, NULL);
	row = tk_unw_table__find(t, fo.vaddr);
	assert_non_null(row);
	assert_int_equal(row->kind, UNW_ROW_SIGNAL);
	/* the FDE starts one byte early, at the nop before it, as the unwinders look up ip - 1 */
	row = tk_unw_table__find(t, fo.vaddr - 1);
	assert_non_null(row);
	assert_int_equal(row->kind, UNW_ROW_SIGNAL);
	assert_int_equal(t->st.signal, 1);
	tk_unw_table__free(t);
}

/* Address of section @name of @path, or 0. */
static uint64_t section_addr(const char *path, const char *name)
{
	char cmd[PATH_MAX + 64], line[512];
	uint64_t addr = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -SW '%s'", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		char sec[64], type[64];
		uint64_t a;
		const char *s = strchr(line, ']');

		if (s && sscanf(s + 1, "%63s %63s %" SCNx64, sec, type, &a) == 3 &&
		    !strcmp(sec, name))
			addr = a;
	}
	pclose(p);
	return addr;
}

static uint64_t entry_point(const char *path)
{
	Elf64_Ehdr eh;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(read(fd, &eh, sizeof(eh)), sizeof(eh));
	close(fd);
	return eh.e_entry;
}

/* A PIE's PLT entries are PLT rows; its _start is the outermost frame. */
static void test_pie_plt_and_start(void **state)
{
	char path[PATH_MAX];
	const struct unw_row *row;
	struct tk_unw_table *t;
	uint64_t plt;

	build_prog("prog", "-O2 -fomit-frame-pointer", path, sizeof(path));
	plt = section_addr(path, ".plt");
	assert_true(plt != 0);
	t = build(path, NULL);
	/* PLT0 pushes once, then jumps; the entries after it are the PLT rule */
	row = tk_unw_table__find(t, plt);
	assert_non_null(row);
	assert_int_equal(row->kind, UNW_ROW_SP);
	assert_int_equal(row->cfa_off, 16);
	row = tk_unw_table__find(t, plt + 16);
	assert_non_null(row);
	assert_int_equal(row->kind, UNW_ROW_PLT);
	assert_in_range(row->cfa_off, 10, 11);	/* 11: lazy PLT; 10: IBT PLT */
	assert_ptr_equal(tk_unw_table__find(t, plt + 16 + 15), row);
	row = tk_unw_table__find(t, entry_point(path));
	assert_non_null(row);
	assert_int_equal(row->kind, UNW_ROW_END);
	tk_unw_table__free(t);
}

static void test_no_cfi(void **state)
{
	char src[PATH_MAX], so[PATH_MAX], prog[PATH_MAX], bare[PATH_MAX], cmd[4 * PATH_MAX];
	struct tk_unw_table *t;

	need_tool("gcc");
	need_tool("objcopy");
	FX(fx_write(fx, "nocfi.c",
		    "int f(int x) { return x * 3; }\nint g(int x) { return f(x) + 1; }\n"));
	FX(fx_path(fx, "nocfi.c", src, sizeof(src)));
	FX(fx_path(fx, "nocfi.so", so, sizeof(so)));
	snprintf(cmd, sizeof(cmd),
		 "gcc -O2 -shared -fPIC -nostdlib -fno-asynchronous-unwind-tables "
		 "-fno-unwind-tables -o '%s' '%s'", so, src);
	run(cmd);
	t = build(so, NULL);
	check_invariants(t);
	assert_int_equal(t->source, TK_UNW_SRC_NONE);
	assert_int_equal(t->nr, 0);
	assert_null(t->rows);
	assert_null(tk_unw_table__find(t, 0x1000));
	tk_unw_table__free(t);

	/* a program whose .eh_frame objcopy took out, and no .debug_frame */
	build_prog("prog", "-O2 -fomit-frame-pointer", prog, sizeof(prog));
	FX(fx_path(fx, "prog-noeh", bare, sizeof(bare)));
	snprintf(cmd, sizeof(cmd), "objcopy -R .eh_frame -R .eh_frame_hdr '%s' '%s' 2>/dev/null",
		 prog, bare);
	run(cmd);
	t = build(bare, NULL);
	assert_int_equal(t->source, TK_UNW_SRC_NONE);
	assert_int_equal(t->nr, 0);
	tk_unw_table__free(t);
}

/* Without .eh_frame: .debug_frame, its own or a separate debug file's, readelf agreeing. */
static void test_debug_frame(void **state)
{
	char prog[PATH_MAX], own[PATH_MAX], dbg[PATH_MAX], bare[PATH_MAX], cmd[4 * PATH_MAX];
	struct tk_unw_table *t, *t2;
	size_t i;

	need_tool("objcopy");
	build_prog("prog-g", "-g -O2 -fomit-frame-pointer -fno-asynchronous-unwind-tables", prog,
		   sizeof(prog));
	FX(fx_path(fx, "prog-g-own", own, sizeof(own)));
	FX(fx_path(fx, "prog-g.debug", dbg, sizeof(dbg)));
	FX(fx_path(fx, "prog-g-bare", bare, sizeof(bare)));
	snprintf(cmd, sizeof(cmd),
		 "objcopy -R .eh_frame -R .eh_frame_hdr '%s' '%s' 2>/dev/null && "
		 "objcopy --only-keep-debug '%s' '%s' && "
		 "objcopy --strip-debug -R .eh_frame -R .eh_frame_hdr '%s' '%s' 2>/dev/null",
		 prog, own, prog, dbg, prog, bare);
	run(cmd);

	/* with .eh_frame (crt1.o's _start and the PLT) it is .eh_frame alone */
	t = build(prog, NULL);
	assert_int_equal(t->source, TK_UNW_SRC_EH_FRAME);
	tk_unw_table__free(t);

	against_readelf("prog -g own", own, NULL, ".debug_frame", TK_UNW_SRC_DEBUG_FRAME);
	t = build(own, NULL);
	assert_true(t->st.deref > 0);
	/* the same rows from the separate debug file */
	t2 = build(bare, dbg);
	assert_int_equal(t2->source, TK_UNW_SRC_DEBUG_FRAME);
	assert_int_equal(t2->nr, t->nr);
	assert_int_equal(t2->base, t->base);
	for (i = 0; i < t->nr; i++)
		assert_memory_equal(&t->rows[i], &t2->rows[i], sizeof(t->rows[i]));
	tk_unw_table__free(t2);
	against_readelf("prog -g debug", bare, dbg, ".debug_frame", TK_UNW_SRC_DEBUG_FRAME);
	/* the stripped one alone has no CFI */
	t2 = build(bare, NULL);
	assert_int_equal(t2->source, TK_UNW_SRC_NONE);
	tk_unw_table__free(t2);
	tk_unw_table__free(t);
}

/* ---- a hand-made .eh_frame: one rule per row ------------------------------------------- */

struct cfi {
	uint8_t b[1 << 18];
	size_t n;
};

static void put(struct cfi *c, const void *p, size_t n)
{
	assert_true(c->n + n <= sizeof(c->b));
	memcpy(c->b + c->n, p, n);
	c->n += n;
}

static void put32(struct cfi *c, uint32_t v)
{
	put(c, &v, 4);
}

static void put64(struct cfi *c, uint64_t v)
{
	put(c, &v, 8);
}

static size_t entry_begin(struct cfi *c)
{
	size_t at = c->n;

	put32(c, 0);
	return at;
}

static void entry_end(struct cfi *c, size_t at)
{
	uint32_t len;

	while ((c->n - at) % 8)
		put(c, "\0", 1);	/* DW_CFA_nop */
	len = c->n - at - 4;
	memcpy(c->b + at, &len, 4);
}

/* A CIE: "zR" (or "zRS"), absolute 8-byte pointers, CFA = rsp + 8, ra at CFA - 8. */
static size_t cie(struct cfi *c, bool signal)
{
	static const uint8_t body[] = { 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x00,
					0x0c, 7, 8, 0x90, 1 };
	static const uint8_t body_s[] = { 1, 'z', 'R', 'S', 0, 1, 0x78, 16, 1, 0x00,
					  0x0c, 7, 8, 0x90, 1 };
	size_t at = entry_begin(c);

	put32(c, 0);
	if (signal)
		put(c, body_s, sizeof(body_s));
	else
		put(c, body, sizeof(body));
	entry_end(c, at);
	return at;
}

static void fde(struct cfi *c, size_t cie_at, uint64_t start, uint64_t len, const uint8_t *prog,
		size_t n)
{
	size_t at = entry_begin(c);

	put32(c, c->n - cie_at);
	put64(c, start);
	put64(c, len);
	put(c, "\0", 1);	/* no augmentation data */
	put(c, prog, n);
	entry_end(c, at);
}

#define FDE(c, cie_at, start, len, ...)                                                        \
	do {                                                                                   \
		static const uint8_t prog[] = { __VA_ARGS__ };                                 \
		fde(c, cie_at, start, len, prog, sizeof(prog));                                \
	} while (0)

#define HAND_BASE 0x1000ULL

static void hand_cfi(struct cfi *c)
{
	size_t ci, cs;

	memset(c, 0, sizeof(*c));
	ci = cie(c, false);
	/* push %rbp; mov %rsp,%rbp; ...; leave */
	FDE(c, ci, 0x1000, 0x40, 0x41, 0x0e, 0x10, 0x86, 0x02, 0x43, 0x0d, 0x06, 0x70, 0x0c, 0x07,
	    0x08, 0xc6);
	/* overlaps the one before: left out */
	FDE(c, ci, 0x1008, 0x8, 0x0c, 0x07, 0x20);
	/* DRAP; CFA rsp+40016; rbp by an expression; ra in rax */
	FDE(c, ci, 0x1040, 0x20, 0x0f, 0x03, 0x76, 0x70, 0x06, 0x44, 0x0c, 0x07, 0xd0, 0xb8, 0x02,
	    0x44, 0x10, 0x06, 0x02, 0x76, 0x00, 0x0c, 0x07, 0x10, 0x44, 0x09, 0x10, 0x00);
	/* ra undefined */
	FDE(c, ci, 0x1100, 0x10, 0x07, 0x10);
	/* binutils' PLT rule */
	FDE(c, ci, 0x1200, 0x10, 0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33,
	    0x24, 0x22);
	cs = cie(c, true);
	FDE(c, cs, 0x1300, 0x10, 0x00);
	/* rbp at CFA - 1040 (past the s8); then at CFA + 8 */
	FDE(c, ci, 0x1400, 0x10, 0x0e, 0x10, 0x86, 0x82, 0x01, 0x41, 0x11, 0x06, 0x7f);
	/* right after, starting as the one before ends: merged */
	FDE(c, ci, 0x1410, 0x10, 0x0e, 0x10, 0x11, 0x06, 0x7f);
	/* 5 GiB further: past what a __u32 pc holds */
	FDE(c, ci, HAND_BASE + (5ULL << 30), 0x10, 0x0e, 0x10);
	/* empty */
	FDE(c, ci, 0x1500, 0, 0x0e, 0x10);
	put32(c, 0);
}

#define HAND_HDR 0x80		/* where .eh_frame_hdr goes */
#define HAND_CFI 0x100		/* where the CFI section goes */

/*
 * An ELF image with the CFI section @name (@c), .shstrtab and, when @hdr is
 * not NULL, an .eh_frame_hdr of @hdr_len bytes before it; no segments. Each
 * section's address is its offset.
 */
static uint8_t *hand_image_of(const uint8_t *cfi, size_t cfi_len, const char *name,
			      const uint8_t *hdr, size_t hdr_len, size_t *len)
{
	static const char hdr_name[] = ".eh_frame_hdr";
	size_t off_str = HAND_CFI + cfi_len, nlen = strlen(name), strsz, off_sh, nsec = hdr ? 4 : 3;
	unsigned int i = 1;
	Elf64_Ehdr *eh;
	Elf64_Shdr *sh;
	uint8_t *b;
	char *str;

	assert_true(hdr_len <= HAND_CFI - HAND_HDR);
	strsz = 1 + nlen + 1 + sizeof(".shstrtab") + sizeof(hdr_name);
	off_sh = (off_str + strsz + 7) & ~7UL;
	*len = off_sh + nsec * sizeof(*sh);
	b = calloc(1, *len);
	assert_non_null(b);
	eh = (Elf64_Ehdr *)b;
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_DYN;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_shoff = off_sh;
	eh->e_ehsize = sizeof(*eh);
	eh->e_shentsize = sizeof(*sh);
	eh->e_shnum = nsec;
	eh->e_shstrndx = nsec - 1;
	memcpy(b + HAND_CFI, cfi, cfi_len);
	str = (char *)b + off_str;
	memcpy(str + 1, name, nlen);
	memcpy(str + 1 + nlen + 1, ".shstrtab", sizeof(".shstrtab"));
	memcpy(str + 1 + nlen + 1 + sizeof(".shstrtab"), hdr_name, sizeof(hdr_name));
	sh = (Elf64_Shdr *)(b + off_sh);
	if (hdr) {
		memcpy(b + HAND_HDR, hdr, hdr_len);
		sh[i].sh_name = 1 + nlen + 1 + sizeof(".shstrtab");
		sh[i].sh_type = SHT_PROGBITS;
		sh[i].sh_flags = SHF_ALLOC;
		sh[i].sh_addr = sh[i].sh_offset = HAND_HDR;
		sh[i].sh_size = hdr_len;
		sh[i++].sh_addralign = 4;
	}
	sh[i].sh_name = 1;
	sh[i].sh_type = SHT_PROGBITS;
	sh[i].sh_flags = SHF_ALLOC;
	sh[i].sh_addr = sh[i].sh_offset = HAND_CFI;
	sh[i].sh_size = cfi_len;
	sh[i++].sh_addralign = 8;
	sh[i].sh_name = 1 + nlen + 1;
	sh[i].sh_type = SHT_STRTAB;
	sh[i].sh_offset = off_str;
	sh[i].sh_size = strsz;
	sh[i].sh_addralign = 1;
	return b;
}

static uint8_t *hand_image(const struct cfi *c, const char *name, const uint8_t *hdr,
			   size_t hdr_len, size_t *len)
{
	return hand_image_of(c->b, c->n, name, hdr, hdr_len, len);
}

static uint8_t *hand_elf(const struct cfi *c, const char *name, size_t *len)
{
	return hand_image(c, name, NULL, 0, len);
}

/*
 * With an .eh_frame_hdr whose one-entry table says @loc is described by the
 * second entry of @c (an FDE after its CIE), @skew bytes off.
 */
static uint8_t *hand_elf_hdr(const struct cfi *c, uint64_t loc, int skew, size_t *len)
{
	uint8_t hdr[20] = { 1, 0x1b, 0x03, 0x3b };	/* pcrel sdata4, udata4, datarel sdata4 */
	int32_t v[4];
	uint32_t cie_len;

	memcpy(&cie_len, c->b, 4);
	v[0] = HAND_CFI - (HAND_HDR + 4);		/* eh_frame_ptr */
	v[1] = 1;					/* fde_count */
	v[2] = loc - HAND_HDR;
	v[3] = HAND_CFI + 4 + cie_len + skew - HAND_HDR;
	memcpy(hdr + 4, v, sizeof(v));
	return hand_image(c, ".eh_frame", hdr, sizeof(hdr), len);
}

static struct tk_unw_table *build_mem(const uint8_t *img, size_t len)
{
	struct tk_unw_table *t;
	struct tk_elf *elf;

	FX(tk_elf__open_mem(img, len, &elf));
	FX(tk_unw_table__build(elf, NULL, &t));
	tk_elf__free(elf);
	return t;
}

static void test_hand_made_rules(void **state)
{
	static const struct {
		uint64_t at;
		uint8_t kind;
		int16_t cfa_off;
		int8_t rbp_off;
	} want[] = {
		{ 0x1000, UNW_ROW_SP, 8, 0 },
		{ 0x1001, UNW_ROW_SP, 16, -2 },
		{ 0x1004, UNW_ROW_FP, 16, -2 },
		{ 0x1034, UNW_ROW_SP, 8, 0 },
		{ 0x1040, UNW_ROW_DEREF_FP, -16, 0 },
		{ 0x1044, UNW_ROW_UNSUPPORTED, 0, 0 },
		{ 0x1048, UNW_ROW_SP, 16, UNW_RBP_LOST },
		{ 0x104c, UNW_ROW_UNSUPPORTED, 0, 0 },
		{ 0x1060, UNW_ROW_INVALID, 0, 0 },
		{ 0x1100, UNW_ROW_END, 0, 0 },
		{ 0x1110, UNW_ROW_INVALID, 0, 0 },
		{ 0x1200, UNW_ROW_PLT, 11, 0 },
		{ 0x1210, UNW_ROW_INVALID, 0, 0 },
		{ 0x1300, UNW_ROW_SIGNAL, 0, 0 },
		{ 0x1310, UNW_ROW_INVALID, 0, 0 },
		{ 0x1400, UNW_ROW_SP, 16, UNW_RBP_LOST },
		{ 0x1401, UNW_ROW_SP, 16, 1 },
		{ 0x1420, UNW_ROW_INVALID, 0, 0 },
	};
	struct tk_unw_table *t;
	struct cfi *c = calloc(1, sizeof(*c));
	uint8_t *img;
	size_t len, i;

	assert_non_null(c);
	hand_cfi(c);
	img = hand_elf(c, ".eh_frame", &len);
	t = build_mem(img, len);
	check_invariants(t);
	assert_int_equal(t->source, TK_UNW_SRC_EH_FRAME);
	assert_int_equal(t->base, HAND_BASE);
	for (i = 0; i < t->nr && i < sizeof(want) / sizeof(want[0]); i++) {
		const struct unw_row *r = &t->rows[i];

		if (t->base + r->pc != want[i].at || r->kind != want[i].kind ||
		    r->cfa_off != want[i].cfa_off || r->rbp_off != want[i].rbp_off)
			fail_msg("row %zu: %#" PRIx64 " %s %d %d, want %#" PRIx64 " %s %d %d", i,
				 t->base + r->pc, kind_name(r->kind), r->cfa_off, r->rbp_off,
				 want[i].at, kind_name(want[i].kind), want[i].cfa_off,
				 want[i].rbp_off);
	}
	assert_int_equal(t->nr, sizeof(want) / sizeof(want[0]));
	/* the overlapping, the empty and the one past 4 GiB left out */
	assert_int_equal(t->st.fdes, 7);
	assert_int_equal(t->st.plt, 1);
	assert_int_equal(t->st.signal, 1);
	assert_int_equal(t->st.deref, 1);
	assert_int_equal(t->st.unsupported, 2);
	/* lookups: below the first row, inside rows, in a gap, past 4 GiB */
	assert_null(tk_unw_table__find(t, HAND_BASE - 1));
	assert_null(tk_unw_table__find(t, 0));
	assert_int_equal(tk_unw_table__find(t, 0x1003)->cfa_off, 16);
	assert_int_equal(tk_unw_table__find(t, 0x103f)->kind, UNW_ROW_SP);
	assert_int_equal(tk_unw_table__find(t, 0x10ff)->kind, UNW_ROW_INVALID);
	assert_int_equal(tk_unw_table__find(t, 0x141f)->rbp_off, 1);
	assert_int_equal(tk_unw_table__find(t, HAND_BASE + 0xffffffffULL)->kind, UNW_ROW_INVALID);
	assert_null(tk_unw_table__find(t, HAND_BASE + (5ULL << 30)));
	assert_null(tk_unw_table__find(NULL, 0x1000));
	tk_unw_table__free(t);
	tk_unw_table__free(NULL);
	free(img);
	free(c);
}

/* Wrong arguments and objects the rows cannot describe: clear errors. */
static void test_errors(void **state)
{
	struct tk_unw_table *t = (void *)1;
	struct tk_elf *elf;
	int i;
	struct cfi *c = calloc(1, sizeof(*c));
	uint8_t *img;
	size_t len;

	assert_int_equal(tk_unw_table__build(NULL, NULL, &t), -EINVAL);
	assert_null(t);
	assert_int_equal(tk_unw_table__build(NULL, NULL, NULL), -EINVAL);
	assert_non_null(c);
	hand_cfi(c);
	img = hand_elf(c, ".eh_frame", &len);
	((Elf64_Ehdr *)img)->e_machine = EM_PPC64;	/* neither x86-64 nor AArch64 */
	FX(tk_elf__open_mem(img, len, &elf));
	assert_int_equal(tk_unw_table__build(elf, NULL, &t), -ENOTSUP);
	assert_null(t);
	/* an x86-64 object whose debug file is an AArch64 one: not its debug file */
	{
		struct tk_elf *dbg;
		uint8_t *img2 = hand_elf(c, ".eh_frame", &len);

		((Elf64_Ehdr *)img2)->e_machine = EM_AARCH64;
		((Elf64_Ehdr *)img)->e_machine = EM_X86_64;
		tk_elf__free(elf);
		FX(tk_elf__open_mem(img, len, &elf));
		FX(tk_elf__open_mem(img2, len, &dbg));
		assert_int_equal(tk_unw_table__build(elf, dbg, &t), -ENOTSUP);
		assert_null(t);
		tk_elf__free(dbg);
		free(img2);
	}
	tk_elf__free(elf);
	free(img);
	/*
	 * programs libdw would take gigabytes for: a register numbered 100000000,
	 * remember_state nested 65 deep, the same register after an operand of 11
	 * bytes (libdw reads 10 and takes the 11th for an instruction: the scan
	 * read another program); and a table in .eh_frame_hdr that sends libdw to
	 * an offset that is no FDE
	 */
	for (i = 0; i < 4; i++) {
		uint8_t deep[65];
		size_t ci;

		memset(c, 0, sizeof(*c));
		ci = cie(c, false);
		FDE(c, ci, 0x1000, 0x10, 0x0e, 0x10);
		if (i == 0)
			FDE(c, ci, 0x1600, 0x10, 0x05, 0x80, 0xc2, 0xd7, 0x2f, 0x01);
		memset(deep, 0x0a, sizeof(deep));	/* DW_CFA_remember_state */
		if (i == 1)
			fde(c, ci, 0x1700, 0x10, deep, sizeof(deep));
		/* DW_CFA_GNU_args_size, 10 bytes 0x80, then 0x05 ending it or starting one */
		if (i == 2)
			FDE(c, ci, 0x1800, 0x10, 0x2e, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
			    0x80, 0x80, 0x05, 0x80, 0xc2, 0xd7, 0x2f, 0x01);
		put32(c, 0);
		img = i < 3 ? hand_elf(c, ".eh_frame", &len) : hand_elf_hdr(c, 0x1000, 4, &len);
		FX(tk_elf__open_mem(img, len, &elf));
		assert_int_equal(tk_unw_table__build(elf, NULL, &t), -EBADMSG);
		assert_null(t);
		tk_elf__free(elf);
		free(img);
	}
	/* the same table, right: built */
	img = hand_elf_hdr(c, 0x1000, 0, &len);
	t = build_mem(img, len);
	assert_int_equal(t->source, TK_UNW_SRC_EH_FRAME);
	assert_int_equal(t->nr, 2);
	tk_unw_table__free(t);
	free(img);

	/* a .eh_frame whose first entry is garbage */
	hand_cfi(c);
	img = hand_elf(c, ".eh_frame", &len);
	((Elf64_Ehdr *)img)->e_machine = EM_X86_64;
	memset(img + 0x100, 0xff, 12);
	FX(tk_elf__open_mem(img, len, &elf));
	assert_int_equal(tk_unw_table__build(elf, NULL, &t), -EBADMSG);
	assert_null(t);
	tk_elf__free(elf);
	free(img);
	free(c);
}

/* Build from @img of @len; when it succeeds, the table must hold its invariants. */
static void poke(const uint8_t *img, size_t len)
{
	struct tk_unw_table *t;
	struct tk_elf *elf;
	int err;

	if (tk_elf__open_mem(img, len, &elf))
		return;
	err = tk_unw_table__build(elf, NULL, &t);
	if (!err) {
		check_invariants(t);
		tk_unw_table__free(t);
	} else {
		assert_true(err < 0);
		assert_null(t);
	}
	tk_elf__free(elf);
}

static void corrupt(uint8_t *img, size_t len, size_t from, size_t to)
{
	static const uint8_t vals[] = { 0xff, 0x80, 0x00, 0x7f, 0x01 };
	size_t i, v;

	for (i = from; i < to && i < len; i++) {
		uint8_t keep = img[i];

		for (v = 0; v < sizeof(vals); v++) {
			img[i] = vals[v];
			poke(img, len);
			img[i] = keep ^ 0x40;
			poke(img, len);
		}
		img[i] = keep;
	}
}

static int read_whole(const char *path, uint8_t **buf, size_t *len)
{
	struct stat st;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !(*buf = malloc(st.st_size))) {
		close(fd);
		return -EIO;
	}
	n = read(fd, *buf, st.st_size);
	close(fd);
	if (n != st.st_size) {
		free(*buf);
		return -EIO;
	}
	*len = n;
	return 0;
}

/* Section @name's file offset and size in @path (readelf -SW). */
static bool section_span(const char *path, const char *name, size_t *off, size_t *size)
{
	char cmd[PATH_MAX + 64], line[512];
	bool found = false;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "readelf -SW '%s'", path);
	p = popen(cmd, "r");
	assert_non_null(p);
	while (fgets(line, sizeof(line), p)) {
		char sec[64], type[64];
		uint64_t a, o, s;
		const char *b = strchr(line, ']');

		if (b && sscanf(b + 1, "%63s %63s %" SCNx64 " %" SCNx64 " %" SCNx64, sec, type, &a,
				&o, &s) == 5 && !strcmp(sec, name)) {
			*off = o;
			*size = s;
			found = true;
		}
	}
	pclose(p);
	return found;
}

/* Cut short and corrupted, byte by byte: no crash, no broken table, a clean errno. */
static void test_corrupt(void **state)
{
	char path[PATH_MAX];
	size_t len, cut, off, size;
	struct cfi *c = calloc(1, sizeof(*c));
	uint8_t *img;

	assert_non_null(c);
	hand_cfi(c);
	img = hand_elf(c, ".eh_frame", &len);
	for (cut = 1; cut < len; cut++)
		poke(img, cut);
	corrupt(img, len, 0x100, 0x100 + c->n);
	free(img);

	/* the same as .debug_frame: its CIE ids (0) are then FDE pointers to offset 0 */
	img = hand_elf(c, ".debug_frame", &len);
	poke(img, len);
	corrupt(img, len, 0x100, 0x100 + c->n);
	free(img);
	free(c);

	build_prog("prog", "-O2 -fomit-frame-pointer", path, sizeof(path));
	FX(read_whole(path, &img, &len));
	for (cut = 0; cut < len; cut += 97)
		poke(img, cut);
	assert_true(section_span(path, ".eh_frame", &off, &size));
	corrupt(img, len, off, off + size);
	assert_true(section_span(path, ".eh_frame_hdr", &off, &size));
	corrupt(img, len, off, off + size);
	free(img);
}

/*
 * The build's deadline is looked at every TK_UNW_CLOCK_ROWS rows, not at each
 * (a clock call per row was 5.6 % of a capture's CPU): 2000 FDEs of 4 rows
 * each, cheap rows, a few reads of the clock.
 */
static void test_clock_not_per_row(void **state)
{
	const uint8_t prog[] = { 0x41, 0x0e, 16, 0x41, 0x0e, 24, 0x41, 0x0e, 32 };
	struct cfi *c = calloc(1, sizeof(*c));
	struct tk_unw_table *t;
	uint64_t reads;
	size_t len, i, ci;
	uint8_t *img;

	assert_non_null(c);
	ci = cie(c, false);
	for (i = 0; i < 2000; i++)
		fde(c, ci, 0x10000 + 16 * i, 16, prog, sizeof(prog));
	put32(c, 0);
	img = hand_elf(c, ".eh_frame", &len);
	reads = tk_unw_table__clock_reads();
	t = build_mem(img, len);
	reads = tk_unw_table__clock_reads() - reads;
	check_invariants(t);
	print_message("  %zu rows, %" PRIu64 " clock reads\n", t->nr, reads);
	assert_true(t->nr >= 8000);
	assert_true(reads <= t->nr / 256 + 8);
	tk_unw_table__free(t);
	free(img);
	free(c);
}

/*
 * One FDE of 40000 rows: libdw runs its program from the start for each, 40000
 * times 120 KB. The builder stops asking past its budget: a bounded time, and
 * the rest of the FDE is UNSUPPORTED.
 */
static void test_quadratic_budget(void **state)
{
	struct cfi *c = calloc(1, sizeof(*c));
	struct tk_unw_table *t;
	uint8_t *prog, *img;
	size_t len, n = 0, i, ci;

	assert_non_null(c);
	prog = malloc(3 * 40000);
	assert_non_null(prog);
	for (i = 0; i < 40000; i++) {
		prog[n++] = 0x41;			/* DW_CFA_advance_loc 1 */
		prog[n++] = 0x0e;			/* DW_CFA_def_cfa_offset */
		prog[n++] = 8 + 8 * (i & 7);		/* a row unlike the one before */
	}
	ci = cie(c, false);
	fde(c, ci, 0x10000, 40001, prog, n);
	FDE(c, ci, 0x30000, 0x10, 0x0e, 0x10);
	put32(c, 0);
	img = hand_elf(c, ".eh_frame", &len);
	t = build_mem(img, len);
	check_invariants(t);
	print_message("  %zu rows of 40001 in %.1f ms\n", t->nr, t->st.build_ns / 1e6);
	assert_true(t->nr > 100 && t->nr < 40000);
	assert_true(t->st.build_ns < 2000000000ULL);
	assert_int_equal(t->rows[t->nr - 4].kind, UNW_ROW_UNSUPPORTED);
	/* the FDE after it: past the budget too, one UNSUPPORTED row */
	assert_int_equal(tk_unw_table__find(t, 0x30000)->kind, UNW_ROW_UNSUPPORTED);
	tk_unw_table__free(t);
	free(img);
	free(prog);
	free(c);
}

/*
 * One FDE of 20000 locations, where each either remembers the state and saves rbx (a
 * register no row reads) or restores the state, and every 5000th moves the CFA too: five
 * rows. libdw runs the program from its start for each query, so a query at every location
 * is quadratic: 20000 queries of 70 KB each passed the budget (1024 times the section) a
 * fraction of the way in, and the rest was UNSUPPORTED; so did a query at each of the 10000
 * restore_state. trixie's arm64 python3.13 has such an FDE: 8385 locations, most restoring
 * x19..x28, 1677 restore_state after its epilogues. Queried only where a row may change, the
 * five rows are all there.
 */
static void test_many_locations_few_rows(void **state)
{
	struct cfi *c = calloc(1, sizeof(*c));
	const struct unw_row *r;
	struct tk_unw_table *t;
	uint8_t *prog, *img;
	size_t len, n = 0, i, ci;

	assert_non_null(c);
	prog = malloc(6 * 20000);
	assert_non_null(prog);
	for (i = 0; i < 20000; i++) {
		prog[n++] = 0x41;			/* DW_CFA_advance_loc 1 */
		if (i & 1) {
			prog[n++] = 0x0b;		/* DW_CFA_restore_state */
		} else {
			prog[n++] = 0x0a;		/* DW_CFA_remember_state */
			prog[n++] = 0x83;		/* DW_CFA_offset rbx, */
			prog[n++] = 2 + (i & 2);	/* at cfa-16 or cfa-32 */
		}
		if (i % 5000 == 4999) {
			prog[n++] = 0x0e;		/* DW_CFA_def_cfa_offset */
			prog[n++] = 16 + 8 * (i / 5000);
		}
	}
	ci = cie(c, false);
	fde(c, ci, 0x10000, 20001, prog, n);
	put32(c, 0);
	img = hand_elf(c, ".eh_frame", &len);
	t = build_mem(img, len);
	check_invariants(t);
	print_message("  %zu rows of 20001 locations in %.1f ms\n", t->nr, t->st.build_ns / 1e6);
	assert_int_equal(t->st.unsupported, 0);
	for (i = 0; i < 4; i++) {
		/* the CFA moves at 5000 * i (i > 0) and holds up to the next move */
		r = tk_unw_table__find(t, 0x10000 + 5000 * i);
		assert_non_null(r);
		assert_int_equal(r->kind, UNW_ROW_SP);
		assert_int_equal(r->cfa_off, 8 + 8 * i);
		r = tk_unw_table__find(t, 0x10000 + 5000 * i + 4999);
		assert_non_null(r);
		assert_int_equal(r->cfa_off, 8 + 8 * i);
	}
	/* five CFA moves, then the FDE's end (INVALID) */
	assert_int_equal(t->nr, 6);
	tk_unw_table__free(t);
	free(img);
	free(prog);
	free(c);
}

/*
 * A crafted .eh_frame of 16 MiB: 140 FDEs of 40000 rows each. The budget that grows with the
 * section (1024 bytes run per byte, 16 GiB here) kept the builder at it for 4.75 s (measured; 300
 * MB would be 90 s); the absolute ceiling (2 GiB of program run, 2 s) ends it after 0.24 s, and
 * the object gets no table (-E2BIG: its frames go by the frame pointer). A section past the
 * ceiling's size is not read at all, and the time alone ends a build too.
 */
static uint8_t *crafted_cfi(size_t nr_fdes, size_t *len)
{
	static const uint8_t cie_body[] = { 1, 'z', 'R', 0, 1, 0x78, 16, 1, 0x00,
					    0x0c, 7, 8, 0x90, 1 };
	size_t rows = 40000, prog = 3 * rows, fde_len = 4 + 8 + 8 + 1 + prog, cie_len, n = 0, i, k;
	uint8_t *b;
	uint32_t v;

	cie_len = (4 + sizeof(cie_body) + 7) & ~7UL;
	fde_len = (fde_len + 7) & ~7UL;
	b = calloc(1, 4 + cie_len + nr_fdes * (4 + fde_len) + 4);
	assert_non_null(b);
	v = cie_len;
	memcpy(b, &v, 4);
	memcpy(b + 8, cie_body, sizeof(cie_body));	/* CIE id 0 at b + 4 */
	n = 4 + cie_len;
	for (i = 0; i < nr_fdes; i++) {
		uint64_t start = 0x10000 + i * 0x20000, size = rows + 1;
		size_t at = n;

		v = fde_len;
		memcpy(b + n, &v, 4);
		v = n + 4;				/* back to the CIE at 0 */
		memcpy(b + n + 4, &v, 4);
		memcpy(b + n + 8, &start, 8);
		memcpy(b + n + 16, &size, 8);
		n += 25;				/* and no augmentation data */
		for (k = 0; k < rows; k++) {
			b[n++] = 0x41;			/* DW_CFA_advance_loc 1 */
			b[n++] = 0x0e;			/* DW_CFA_def_cfa_offset */
			b[n++] = 8 + 8 * (k & 7);	/* a row unlike the one before */
		}
		n = at + 4 + fde_len;			/* DW_CFA_nop to the end */
	}
	n += 4;						/* the terminator */
	*len = n;
	return b;
}

static double mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void test_absolute_ceiling(void **state)
{
	struct tk_unw_limits lim = { TK_UNW_MAX_CFI_BYTES, UINT64_MAX, 300000000ULL };
	struct tk_unw_table *t = (void *)1;
	size_t cfi_len, len;
	struct tk_elf *elf;
	uint8_t *cfi, *img;
	double t0, took;

	cfi = crafted_cfi(140, &cfi_len);
	assert_true(cfi_len > (16u << 20) && cfi_len < TK_UNW_MAX_CFI_BYTES);
	img = hand_image_of(cfi, cfi_len, ".eh_frame", NULL, 0, &len);
	FX(tk_elf__open_mem(img, len, &elf));

	t0 = mono_now();
	assert_int_equal(tk_unw_table__build(elf, NULL, &t), -E2BIG);
	took = mono_now() - t0;
	print_message("  %.1f MiB of .eh_frame: cut after %.2f s\n", cfi_len / 1048576.0, took);
	assert_null(t);
	/* at most the ceiling's 2 s and one query more: never the budget's 4.75 s */
	assert_true(took < 2.5);

	/* the time alone, where the build is slow: libdw's queries (TK_UNW_LIBDW=1) */
	tk_unw_table__set_limits(&lim);
	tk_unw_rows_use_libdw(1);
	t0 = mono_now();
	assert_int_equal(tk_unw_table__build(elf, NULL, &t), -E2BIG);
	took = mono_now() - t0;
	tk_unw_rows_use_libdw(-1);
	assert_true(took >= 0.3 && took < 1.5);
	/* the interpreter (unwind_cfa.c) builds it within that time: the budget cuts its FDEs */
	t0 = mono_now();
	FX(tk_unw_table__build(elf, NULL, &t));
	took = mono_now() - t0;
	print_message("  the same, run once per FDE: %zu rows in %.2f s\n", t->nr, took);
	assert_true(took < 0.3);
	tk_unw_table__free(t);

	/* a section larger than the ceiling is not even scanned */
	lim.cfi_bytes = 1 << 20;
	tk_unw_table__set_limits(&lim);
	t0 = mono_now();
	assert_int_equal(tk_unw_table__build(elf, NULL, &t), -E2BIG);
	assert_true(mono_now() - t0 < 0.1);
	tk_unw_table__set_limits(NULL);
	tk_elf__free(elf);
	free(img);
	free(cfi);
}

/* An object stripped of its section headers: .eh_frame found through PT_GNU_EH_FRAME. */
static void test_no_section_headers(void **state)
{
	struct tk_unw_table *t, *t2;
	char path[PATH_MAX];
	Elf64_Ehdr *eh;
	uint8_t *img;
	size_t len, i;

	build_prog("prog", "-O2 -fomit-frame-pointer", path, sizeof(path));
	t = build(path, NULL);
	FX(read_whole(path, &img, &len));
	eh = (Elf64_Ehdr *)img;
	eh->e_shoff = 0;
	eh->e_shnum = 0;
	eh->e_shstrndx = 0;
	t2 = build_mem(img, len);
	check_invariants(t2);
	assert_int_equal(t2->source, TK_UNW_SRC_EH_FRAME);
	assert_int_equal(t2->nr, t->nr);
	assert_int_equal(t2->base, t->base);
	for (i = 0; i < t->nr; i++)
		assert_memory_equal(&t->rows[i], &t2->rows[i], sizeof(t->rows[i]));
	tk_unw_table__free(t2);
	tk_unw_table__free(t);
	free(img);
}

/* Build times of the objects a profile meets most, printed. */
static void test_build_times(void **state)
{
	static const char *const objs[] = { LIBC, LIBSTDCXX, PYTHON, REDIS };
	size_t i;
	int k;

	for (i = 0; i < sizeof(objs) / sizeof(objs[0]); i++) {
		uint64_t best = UINT64_MAX, first = 0;
		struct tk_unw_table *t = NULL;
		struct tk_elf *elf;

		if (tk_elf__open(objs[i], &elf))
			continue;
		for (k = 0; k < 5; k++) {
			tk_unw_table__free(t);
			FX(tk_unw_table__build(elf, NULL, &t));
			if (!k)
				first = t->st.build_ns;
			if (t->st.build_ns < best)
				best = t->st.build_ns;
		}
		print_message("  %-40s %6" PRIu64 " FDEs %7zu rows  first %6.2f ms  best %6.2f "
			      "ms\n", objs[i], t->st.fdes, t->nr, first / 1e6, best / 1e6);
		tk_unw_table__free(t);
		tk_elf__free(elf);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hand_made_rules),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_libc_readelf),
		cmocka_unit_test(test_system_objects_readelf),
		cmocka_unit_test(test_prog_readelf),
		cmocka_unit_test(test_restore_rt_signal),
		cmocka_unit_test(test_pie_plt_and_start),
		cmocka_unit_test(test_no_cfi),
		cmocka_unit_test(test_debug_frame),
		cmocka_unit_test(test_no_section_headers),
		cmocka_unit_test(test_quadratic_budget),
		cmocka_unit_test(test_clock_not_per_row),
		cmocka_unit_test(test_many_locations_few_rows),
		cmocka_unit_test(test_absolute_ceiling),
		cmocka_unit_test(test_corrupt),
		cmocka_unit_test(test_build_times),
	};

	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
