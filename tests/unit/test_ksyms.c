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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_excerpt),
		cmocka_unit_test(test_restricted),
		cmocka_unit_test(test_unsorted),
		cmocka_unit_test_setup_teardown(test_load_fixture, setup, teardown),
		cmocka_unit_test_setup_teardown(test_symbolizer_kernel, setup, teardown),
		cmocka_unit_test(test_live_kallsyms),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
