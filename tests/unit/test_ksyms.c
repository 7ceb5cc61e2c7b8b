// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * kallsyms: parsing excerpts (text symbols only, modules, aliases, unsorted
 * and broken lines), lookups at and between symbols, kptr_restrict, loading
 * through a fixture /proc (with an overlong line), the symbolizer's kernel
 * side on it, and the live /proc/kallsyms (timed, not asserted on speed).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sym/symbolize.h"

static const char excerpt[] =
	"ffffffff81000000 T _stext\n"
	"ffffffff81000000 T _text\n"			/* an alias, shorter: kept */
	"ffffffff81001000 T do_one\n"
	"ffffffff81001000 t __pfx_do_one\n"		/* alias with underscores */
	"ffffffff81003000 D some_data\n"		/* data: ignored */
	"ffffffff81002000 t local_fn\n"			/* out of order */
	"ffffffff81004000 W weak_fn\n"
	"ffffffff81005000 r rodata\n"
	"ffffffff81005800 b bss\n"
	"0000000000000000 T zero_addr\n"		/* hidden address: not kept */
	"ffffffffc0200000 t nft_do_chain\t[nf_tables]\n"
	"ffffffffc0200400 T nft_register\t[nf_tables]\n"
	"ffffffffc0300000 t bpf_prog_6deef7357e7b4530_sd_fw\t[bpf]\n"
	"not a line at all\n"
	"ffffffff8100zzzz T broken_hex\n"
	"1ffffffff81000000 T too_many_digits\n"
	"ffffffff81006000 T\n"				/* no name */
	"ffffffff81006000\n"
	"\n"
	"ffffffff81007000 w weak_local";		/* no newline at the end */

static void find_ok(const struct tk_ksyms *k, uint64_t addr, const char *name, const char *module)
{
	struct tk_sym_frame f;
	int err = tk_ksyms__find(k, addr, &f);

	if (err || strcmp(f.function, name) || strcmp(f.module, module))
		fail_msg("0x%" PRIx64 ": want %s %s, got %d %s %s", addr, name, module, err,
			 f.function ? f.function : "-", f.module ? f.module : "-");
}

static void test_parse_excerpt(void **state)
{
	struct tk_sym_frame f;
	struct tk_ksyms *k;

	assert_int_equal(tk_ksyms__parse(excerpt, strlen(excerpt), &k), 0);
	assert_false(tk_ksyms__restricted(k));
	/* _text, do_one, local_fn, weak_fn, 2 nf_tables, bpf, weak_local */
	assert_int_equal(tk_ksyms__count(k), 8);
	find_ok(k, 0xffffffff81000000, "_text", "[kernel.kallsyms]");
	find_ok(k, 0xffffffff81000fff, "_text", "[kernel.kallsyms]");
	find_ok(k, 0xffffffff81001000, "do_one", "[kernel.kallsyms]");
	find_ok(k, 0xffffffff81002010, "local_fn", "[kernel.kallsyms]");
	/* data symbols do not end a function: local_fn reaches weak_fn */
	find_ok(k, 0xffffffff81003010, "local_fn", "[kernel.kallsyms]");
	find_ok(k, 0xffffffff81004000, "weak_fn", "[kernel.kallsyms]");
	find_ok(k, 0xffffffff81007010, "weak_local", "[kernel.kallsyms]");
	find_ok(k, 0xffffffffc0200010, "nft_do_chain", "[nf_tables]");
	find_ok(k, 0xffffffffc0200410, "nft_register", "[nf_tables]");
	find_ok(k, 0xffffffffc0300020, "bpf_prog_6deef7357e7b4530_sd_fw", "[bpf]");

	assert_int_equal(tk_ksyms__find(k, 0xffffffffc0200410, &f), 0);
	assert_int_equal(f.map_start, 0xffffffffc0200000);
	assert_int_equal(f.module_offset, 0x410);
	assert_true(f.map_limit > 0xffffffffc0200400);
	assert_int_equal(tk_ksyms__find(k, 0xffffffff81001234, &f), 0);
	assert_int_equal(f.map_start, 0xffffffff81000000);
	assert_int_equal(f.module_offset, 0x1234);

	/* before the first symbol, and far past the last of a module */
	assert_int_equal(tk_ksyms__find(k, 0xffffffff80000000, &f), -ESRCH);
	assert_null(f.function);
	assert_int_equal(tk_ksyms__find(k, 0xffffffffc0280000, &f), -ESRCH);
	assert_int_equal(tk_ksyms__find(k, 0xffffffffc0400000, &f), -ESRCH);
	assert_int_equal(tk_ksyms__find(k, 0, &f), -ESRCH);
	tk_ksyms__free(k);
}

static void test_restricted(void **state)
{
	static const char text[] = "0000000000000000 T _stext\n"
				   "0000000000000000 t do_one\n"
				   "0000000000000000 D data\n"
				   "0000000000000000 t nft_do_chain\t[nf_tables]\n";
	struct tk_sym_frame f;
	struct tk_ksyms *k;

	assert_int_equal(tk_ksyms__parse(text, strlen(text), &k), 0);
	assert_true(tk_ksyms__restricted(k));
	assert_int_equal(tk_ksyms__count(k), 0);
	assert_int_equal(tk_ksyms__find(k, 0xffffffff81000000, &f), -ESRCH);
	tk_ksyms__free(k);

	/* empty is not restricted, only empty */
	assert_int_equal(tk_ksyms__parse("", 0, &k), 0);
	assert_false(tk_ksyms__restricted(k));
	assert_int_equal(tk_ksyms__count(k), 0);
	tk_ksyms__free(k);
}

/* The same symbols whatever the order of the lines. */
static void test_unsorted(void **state)
{
	static const char a[] = "ffffffff81000300 T c\nffffffff81000100 T a\n"
				"ffffffff81000200 T b\n";
	struct tk_ksyms *k;

	assert_int_equal(tk_ksyms__parse(a, strlen(a), &k), 0);
	find_ok(k, 0xffffffff81000150, "a", "[kernel.kallsyms]");
	find_ok(k, 0xffffffff81000250, "b", "[kernel.kallsyms]");
	find_ok(k, 0xffffffff81000350, "c", "[kernel.kallsyms]");
	tk_ksyms__free(k);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	return remove(path);
}

struct fixture {
	char root[PATH_MAX];
	char proc[PATH_MAX + 16];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	snprintf(f->root, sizeof(f->root), "%s/tk-ksyms-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(f->root))
		return -1;
	snprintf(f->proc, sizeof(f->proc), "%s/proc", f->root);
	if (mkdir(f->proc, 0755))
		return -1;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	nftw(f->root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	free(f);
	return 0;
}

static void write_kallsyms(const struct fixture *fx, const char *text, size_t long_line)
{
	char path[PATH_MAX + 32];
	FILE *f;
	size_t i;

	snprintf(path, sizeof(path), "%s/kallsyms", fx->proc);
	f = fopen(path, "w");
	assert_non_null(f);
	if (long_line) {
		/*
		 * @long_line bytes of one line, then what looks like a symbol: the
		 * whole line is skipped, its tail is not read as a line of its own
		 */
		fputs("ffffffff81000800 T ", f);
		for (i = strlen("ffffffff81000800 T "); i < long_line; i++)
			fputc('x', f);
		fputs("ffffffff81000900 T fake_tail\n", f);
	}
	fputs(text, f);
	fclose(f);
}

static void test_load_fixture(void **state)
{
	struct fixture *fx = *state;
	struct tk_ksyms *k;
	int i;

	write_kallsyms(fx, excerpt, 0);
	assert_int_equal(tk_ksyms__load(fx->proc, &k), 0);
	assert_int_equal(tk_ksyms__count(k), 8);
	find_ok(k, 0xffffffff81007010, "weak_local", "[kernel.kallsyms]");
	find_ok(k, 0xffffffffc0200010, "nft_do_chain", "[nf_tables]");
	tk_ksyms__free(k);

	/* a line of exactly the read buffer (256 KiB), of a megabyte and more, then the excerpt */
	for (i = 0; i < 2; i++) {
		write_kallsyms(fx, excerpt, i ? (1 << 20) + 7 : 1 << 18);
		assert_int_equal(tk_ksyms__load(fx->proc, &k), 0);
		assert_int_equal(tk_ksyms__count(k), 8);
		find_ok(k, 0xffffffff81000900, "_text", "[kernel.kallsyms]");
		tk_ksyms__free(k);
	}

	assert_int_equal(tk_ksyms__load("/nonexistent", &k), -ENOENT);
	assert_null(k);
}

static void test_symbolizer_kernel(void **state)
{
	struct fixture *fx = *state;
	struct tk_symbolizer_opts o = { .sz = sizeof(o), .proc_root = fx->proc };
	struct tk_symbolizer *s;
	struct tk_sym_frame f;

	/* no kallsyms: every kernel frame unresolved */
	assert_int_equal(tk_symbolizer__new(&o, &s), 0);
	assert_int_equal(tk_symbolizer__kernel(s, 0xffffffff81001000, &f), -ESRCH);
	assert_int_equal(tk_symbolizer__kernel_status(s), -ENOENT);
	tk_symbolizer__free(s);

	/* kptr_restrict */
	write_kallsyms(fx, "0000000000000000 T _stext\n0000000000000000 T do_one\n", 0);
	assert_int_equal(tk_symbolizer__new(&o, &s), 0);
	assert_int_equal(tk_symbolizer__kernel_status(s), -EPERM);
	assert_int_equal(tk_symbolizer__kernel(s, 0xffffffff81001000, &f), -ESRCH);
	tk_symbolizer__free(s);

	/* the status alone reads kallsyms without keeping its table */
	write_kallsyms(fx, excerpt, 0);
	assert_int_equal(tk_symbolizer__new(&o, &s), 0);
	assert_int_equal(tk_symbolizer__kernel_status(s), 0);
	write_kallsyms(fx, "", 0);
	assert_int_equal(tk_symbolizer__kernel(s, 0xffffffff81001010, &f), -ESRCH);
	assert_int_equal(tk_symbolizer__kernel_status(s), 0);
	tk_symbolizer__free(s);

	/* loaded once, on first use */
	write_kallsyms(fx, excerpt, 0);
	assert_int_equal(tk_symbolizer__new(&o, &s), 0);
	assert_int_equal(tk_symbolizer__kernel(s, 0xffffffff81001010, &f), 0);
	assert_string_equal(f.function, "do_one");
	assert_string_equal(f.module, "[kernel.kallsyms]");
	assert_int_equal(tk_symbolizer__kernel_status(s), 0);
	write_kallsyms(fx, "", 0);
	assert_int_equal(tk_symbolizer__kernel(s, 0xffffffffc0200010, &f), 0);
	assert_string_equal(f.function, "nft_do_chain");
	tk_symbolizer__free(s);
}

/* tk_ksyms__resolve_text(@text) gives for each of @addrs exactly what the table's find does. */
static void same_as_table(const char *text, size_t len, const uint64_t *addrs, size_t n,
			  bool streamed)
{
	struct tk_ksyms_resolved *r;
	struct tk_sym_frame a, b;
	struct tk_ksyms *k;
	size_t i;
	int ea, eb;

	assert_int_equal(tk_ksyms__parse(text, len, &k), 0);
	assert_int_equal(tk_ksyms__resolve_text(text, len, addrs, n, &r), 0);
	assert_int_equal(tk_ksyms_resolved__streamed(r), streamed);
	assert_int_equal(tk_ksyms_resolved__restricted(r), tk_ksyms__restricted(k));
	for (i = 0; i < n; i++) {
		ea = tk_ksyms__find(k, addrs[i], &a);
		eb = tk_ksyms_resolved__find(r, addrs[i], &b);
		if (ea != eb)
			fail_msg("0x%" PRIx64 ": table %d, streamed %d", addrs[i], ea, eb);
		if (ea)
			continue;
		if (strcmp(a.function, b.function) || strcmp(a.module, b.module) ||
		    a.map_start != b.map_start || a.map_limit != b.map_limit ||
		    a.module_offset != b.module_offset)
			fail_msg("0x%" PRIx64 ": table %s %s [%" PRIx64 ", %" PRIx64 ") +%" PRIx64
				 ", streamed %s %s [%" PRIx64 ", %" PRIx64 ") +%" PRIx64, addrs[i],
				 a.function, a.module, a.map_start, a.map_limit, a.module_offset,
				 b.function, b.module, b.map_start, b.map_limit, b.module_offset);
	}
	tk_ksyms_resolved__free(r);
	tk_ksyms__free(k);
}

/* Every edge of the excerpt: at, before and after each symbol, past the modules, 0 and ~0. */
static void test_resolve_excerpt(void **state)
{
	static const uint64_t at[] = {
		0, 1, 0xffffffff80000000, 0xffffffff81000000, 0xffffffff81000fff,
		0xffffffff81001000, 0xffffffff81001234, 0xffffffff81002010, 0xffffffff81003010,
		0xffffffff81004000, 0xffffffff81006000, 0xffffffff81007000, 0xffffffff81007010,
		0xffffffff81016fff, 0xffffffff81017000, 0xffffffff81017001, 0xffffffffc01fffff,
		0xffffffffc0200000, 0xffffffffc0200010, 0xffffffffc0200410, 0xffffffffc020ffff,
		0xffffffffc0210400, 0xffffffffc0280000, 0xffffffffc0300000, 0xffffffffc0300020,
		0xffffffffc030ffff, 0xffffffffc0310000, 0xffffffffc0400000, UINT64_MAX,
		0xffffffff81001000,	/* twice: asked once */
	};
	static const char open_end[] = "fffffffffffffff0 T last\nfffffffffffff000 t m\t[mod]\n";
	static const uint64_t ends[] = { UINT64_MAX, 0xfffffffffffffff0, 0xffffffffffffffef,
					 0xfffffffffffff001 };
	struct tk_ksyms_resolved *r;
	struct tk_sym_frame f;

	same_as_table(excerpt, strlen(excerpt), at, sizeof(at) / sizeof(at[0]), true);
	/* one address alone, and none */
	same_as_table(excerpt, strlen(excerpt), &at[6], 1, true);
	same_as_table(excerpt, strlen(excerpt), at, 0, true);
	/* a span that runs past the end of the address space */
	same_as_table(open_end, strlen(open_end), ends, 4, true);
	/* an address not asked */
	assert_int_equal(tk_ksyms__resolve_text(excerpt, strlen(excerpt), &at[6], 1, &r), 0);
	assert_int_equal(tk_ksyms_resolved__find(r, at[7], &f), -ENOENT);
	assert_int_equal(tk_ksyms_resolved__find(r, at[6], &f), 0);
	assert_string_equal(f.function, "do_one");
	assert_int_equal(f.module_offset, 0x1234);
	tk_ksyms_resolved__free(r);
}

/*
 * Aliases across modules and within one (the lowest module index wins an
 * address, then the name), a module whose lowest and highest symbols lose
 * their addresses to the core kernel (its span is then what it won: the
 * table is built after all; so too for a module that loses its lowest to
 * another), unsorted lines, and kptr_restrict.
 */
static void test_resolve_aliases(void **state)
{
	static const char aliases[] =
		"ffffffff81000200 T b\n"
		"ffffffffc0000000 t m_first\t[m]\n"
		"ffffffff81000100 T __a\n"
		"ffffffff81000100 T _a\n"
		"ffffffff81000100 T zz\n"
		"ffffffff81000100 T aa\n"
		"ffffffffc0000100 t m_x\t[m]\n"
		"ffffffffc0000100 t m_y\t[n]\n"		/* [n] loses to [m] here, */
		"ffffffffc0000050 t n_low\t[n]\n"	/* not at its ends: streamed */
		"ffffffffc0000200 t n_only\t[n]\n"
		"ffffffff81000300 T c\n";
	static const char shadowed[] =
		"ffffffff81000100 T a\n"
		"ffffffff81000200 t m_low\t[m]\n"	/* loses to b: [m] starts at 0x300 */
		"ffffffff81000300 t m_mid\t[m]\n"
		"ffffffff81000400 t m_high\t[m]\n"	/* loses to c: [m]'s last is 0x300 */
		"ffffffff81000200 T b\n"
		"ffffffff81000400 T c\n";
	static const char restricted[] = "0000000000000000 T a\n0000000000000000 t b\t[m]\n";
	static const uint64_t at[] = {
		0xffffffff81000100, 0xffffffff81000150, 0xffffffff81000200, 0xffffffff81000310,
		0xffffffffc0000000, 0xffffffffc0000100, 0xffffffffc0000180, 0xffffffffc0000200,
		0xffffffffc0000210, 0xffffffff81000250, 0xffffffff81000350, 0xffffffff81000410,
	};
	struct tk_ksyms_resolved *r;
	struct tk_sym_frame f;

	same_as_table(aliases, strlen(aliases), at, sizeof(at) / sizeof(at[0]), true);
	assert_int_equal(tk_ksyms__resolve_text(aliases, strlen(aliases), at, 2, &r), 0);
	assert_int_equal(tk_ksyms_resolved__find(r, at[0], &f), 0);
	assert_string_equal(f.function, "aa");
	tk_ksyms_resolved__free(r);

	same_as_table(shadowed, strlen(shadowed), at, sizeof(at) / sizeof(at[0]), false);
	assert_int_equal(tk_ksyms__resolve_text(shadowed, strlen(shadowed), at, 12, &r), 0);
	assert_int_equal(tk_ksyms_resolved__find(r, 0xffffffff81000310, &f), 0);
	assert_string_equal(f.function, "m_mid");
	assert_int_equal(f.map_start, 0xffffffff81000300);
	assert_int_equal(f.module_offset, 0x10);
	tk_ksyms_resolved__free(r);

	{
		static const char lost_low[] = "ffffffffc0000100 t m_x\t[m]\n"
					       "ffffffffc0000200 t m_z\t[m]\n"
					       "ffffffffc0000100 t n_x\t[n]\n"
					       "ffffffffc0000300 t n_z\t[n]\n";
		static const uint64_t in_n[] = { 0xffffffffc0000110, 0xffffffffc0000310 };

		/* only a module some address resolves into has its span checked */
		same_as_table(lost_low, strlen(lost_low), in_n, 1, true);
		same_as_table(lost_low, strlen(lost_low), in_n, 2, false);
	}
	same_as_table(restricted, strlen(restricted), at, 4, true);
	assert_int_equal(tk_ksyms__resolve_text(restricted, strlen(restricted), at, 1, &r), 0);
	assert_true(tk_ksyms_resolved__restricted(r));
	tk_ksyms_resolved__free(r);
}

/* Through a fixture /proc: as loaded, overlong lines skipped; a missing file is its errno. */
static void test_resolve_fixture(void **state)
{
	static const uint64_t at[] = { 0xffffffff81000900, 0xffffffff81007010,
				       0xffffffffc0200010 };
	struct fixture *fx = *state;
	struct tk_ksyms_resolved *r;
	struct tk_sym_frame f;

	write_kallsyms(fx, excerpt, (1 << 20) + 7);
	assert_int_equal(tk_ksyms__resolve(fx->proc, at, 3, &r), 0);
	assert_int_equal(tk_ksyms_resolved__find(r, at[0], &f), 0);
	assert_string_equal(f.function, "_text");
	assert_int_equal(tk_ksyms_resolved__find(r, at[1], &f), 0);
	assert_string_equal(f.function, "weak_local");
	assert_int_equal(tk_ksyms_resolved__find(r, at[2], &f), 0);
	assert_string_equal(f.module, "[nf_tables]");
	tk_ksyms_resolved__free(r);
	assert_int_equal(tk_ksyms__resolve("/nonexistent", at, 3, &r), -ENOENT);
	assert_null(r);
}

/* Every text symbol of the live kernel resolves to itself or an alias at its address. */
static void test_live_kallsyms(void **state)
{
	struct timespec t0, t1;
	struct tk_sym_frame f;
	struct tk_ksyms *k;
	unsigned long long a;
	unsigned int n = 0, ok = 0;
	char line[512], type, name[256];
	double ms;
	FILE *fp;

	if (access("/proc/kallsyms", R_OK))
		skip();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(tk_ksyms__load(NULL, &k), 0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	print_message("/proc/kallsyms: %zu text symbols loaded in %.1f ms%s\n", tk_ksyms__count(k),
		      ms, tk_ksyms__restricted(k) ? " (restricted: all addresses 0)" : "");
	if (tk_ksyms__restricted(k)) {
		tk_ksyms__free(k);
		skip();
	}
	fp = fopen("/proc/kallsyms", "r");
	assert_non_null(fp);
	while (fgets(line, sizeof(line), fp) && n < 20000) {
		if (sscanf(line, "%llx %c %255s", &a, &type, name) != 3 || !a ||
		    !strchr("tTwW", type))
			continue;
		n++;
		assert_int_equal(tk_ksyms__find(k, a, &f), 0);
		assert_int_equal(f.map_start + f.module_offset, a);
		ok += !strcmp(f.function, name);
	}
	fclose(fp);
	/* most symbols have no alias: their own name comes back */
	assert_true(n > 0);
	assert_true(ok > n / 2);
	tk_ksyms__free(k);
}

/* The live kernel's: 4000 addresses, at and between symbols, as the table resolves them. */
static void test_live_resolve(void **state)
{
	struct tk_ksyms_resolved *r;
	struct tk_sym_frame a, b;
	struct tk_ksyms *k;
	unsigned long long v;
	uint64_t *at;
	size_t n = 0, i;
	char line[512], type;
	FILE *fp;

	if (access("/proc/kallsyms", R_OK))
		skip();
	assert_int_equal(tk_ksyms__load(NULL, &k), 0);
	if (tk_ksyms__restricted(k)) {
		tk_ksyms__free(k);
		skip();
	}
	at = calloc(4000, sizeof(*at));
	assert_non_null(at);
	fp = fopen("/proc/kallsyms", "r");
	assert_non_null(fp);
	for (i = 0; fgets(line, sizeof(line), fp) && n < 4000; i++)
		if (i % 29 == 0 && sscanf(line, "%llx %c", &v, &type) == 2 && v)
			at[n++] = v + (i % 3 ? 0x11 * (i % 7) : 0);
	fclose(fp);
	assert_int_equal(tk_ksyms__resolve(NULL, at, n, &r), 0);
	assert_true(tk_ksyms_resolved__streamed(r));
	for (i = 0; i < n; i++) {
		int ea = tk_ksyms__find(k, at[i], &a), eb = tk_ksyms_resolved__find(r, at[i], &b);

		assert_int_equal(ea, eb);
		if (!ea && (strcmp(a.function, b.function) || strcmp(a.module, b.module) ||
			    a.map_start != b.map_start || a.map_limit != b.map_limit))
			fail_msg("0x%" PRIx64 ": %s %s vs %s %s", at[i], a.function, a.module,
				 b.function, b.module);
	}
	print_message("/proc/kallsyms: %zu addresses resolved streaming, as the table does\n", n);
	tk_ksyms_resolved__free(r);
	tk_ksyms__free(k);
	free(at);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_excerpt),
		cmocka_unit_test(test_restricted),
		cmocka_unit_test(test_unsorted),
		cmocka_unit_test_setup_teardown(test_load_fixture, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symbolizer_kernel, setup, teardown),
		cmocka_unit_test(test_resolve_excerpt),
		cmocka_unit_test(test_resolve_aliases),
		cmocka_unit_test_setup_teardown(test_resolve_fixture, setup, teardown),
		cmocka_unit_test(test_live_kallsyms),
		cmocka_unit_test(test_live_resolve),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
