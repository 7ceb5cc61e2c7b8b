/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * What the arm64 unwinding tests share (test_unwind_a64.c, the tables;
 * test_unwind_a64_walk.c, stacks synthesised from them): the fixture, the
 * cross-built program, readelf's rows as the oracle, symbols and sections.
 */
#ifndef __TEST_UNWIND_A64_H
#define __TEST_UNWIND_A64_H

#define A64_LIBC "/usr/lib/aarch64-linux-gnu/libc.so.6"
#define A64_CC "aarch64-linux-gnu-gcc"

#define FX(call) assert_int_equal((call), 0)

static __attribute__((unused)) struct fx *fx;

static __attribute__((unused)) int group_setup(void **state)
{
	fx = fx_new();
	return fx ? 0 : -1;
}

static __attribute__((unused)) int group_teardown(void **state)
{
	fx_free(fx);
	return 0;
}

static __attribute__((unused)) void run(const char *cmd)
{
	int status = system(cmd);

	if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status))
		fail_msg("%s failed (status %#x)", cmd, status);
}

static __attribute__((unused)) void need(const char *tool, const char *file)
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
static __attribute__((unused)) void build_prog(const char *name, const char *flags, char *out, size_t size)
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

static __attribute__((unused)) struct tk_unw_table *build(const char *path)
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
static __attribute__((unused)) void oracle_read(struct oracle *o, const char *path)
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

static __attribute__((unused)) void oracle_free(struct oracle *o)
{
	free(o->fdes);
	free(o->rows);
}

static __attribute__((unused)) uint64_t sym_addr(const char *path, const char *name)
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
static __attribute__((unused)) bool section(const char *path, const char *name, uint64_t *addr, uint64_t *size)
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

static __attribute__((unused)) struct tk_unw_table *build_vdso(const unsigned char *img, size_t len)
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
#endif /* __TEST_UNWIND_A64_H */
