// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * JIT code's names and libraries loaded late: the perf map parser (good
 * lines in the ways JITs write them, malformed, overlong, overlapping, fed in
 * pieces as a growing file is read); the symbolizer on a fixture /proc whose
 * process keeps its perf map under its own root and names it by its pid in
 * its namespace (NSpid), read again once it grew; and this very process
 * dlopen()ing a library after its capture, named at the next lookup by
 * reading its maps again, once a second.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"
#include "sym/symbolize.h"

static void expect_find(struct tk_perfmap *m, uint64_t addr, const char *name)
{
	const char *got = tk_perfmap__find(m, addr, NULL, NULL);

	if (!name && got)
		fail_msg("0x%llx: want nothing, got %s", (unsigned long long)addr, got);
	if (name && (!got || strcmp(got, name)))
		fail_msg("0x%llx: want %s, got %s", (unsigned long long)addr, name,
			 got ? got : "nothing");
}

/* What Java's agent, Node, Python 3.12 write, and lines that must be skipped. */
static void test_parse_lines(void **state)
{
	static const char text[] =
		"7f0000001000 40 jitted_hot\n"
		"0x7f0000001040 0x20 LazyCompile:~foo /app/x.js:12\n"	/* 0x, spaces in name */
		"7F0000002000 100 py::burn:/app/b.py\r\n"		/* upper case, CRLF */
		"  7f0000003000\t10\tLjava/lang/String;::hashCode  \n"	/* tabs, blanks */
		"7f0000004000 10 ctl\x01name\n"				/* control char: '?' */
		"\n"							/* empty: not bad */
		"not a line\n"
		"7f0000005000 10\n"					/* no name */
		"7f0000005000 0 zero_size\n"
		"7f000000zz00 10 bad_hex\n"
		"17f00000000000000 10 too_many_digits\n"
		"ffffffffffffff00 200 wraps\n"
		"7f0000006000 10 no_newline";
	struct tk_perfmap_stats st;
	struct tk_perfmap *m;
	uint64_t start, size, lo, hi;

	assert_int_equal(tk_perfmap__parse(text, sizeof(text) - 1, &m), 0);
	expect_find(m, 0x7f0000001000, "jitted_hot");
	expect_find(m, 0x7f000000103f, "jitted_hot");
	expect_find(m, 0x7f0000001040, "LazyCompile:~foo /app/x.js:12");
	expect_find(m, 0x7f0000001060, NULL);
	expect_find(m, 0x7f00000020ff, "py::burn:/app/b.py");
	expect_find(m, 0x7f0000003008, "Ljava/lang/String;::hashCode");
	expect_find(m, 0x7f0000004000, "ctl?name");
	expect_find(m, 0x7f0000005000, NULL);
	expect_find(m, 0x7f0000006000, "no_newline");
	expect_find(m, 0xffffffffffffff80, NULL);
	expect_find(m, 0, NULL);
	expect_find(m, UINT64_MAX, NULL);
	assert_non_null(tk_perfmap__find(m, 0x7f0000001010, &start, &size));
	assert_int_equal(start, 0x7f0000001000);
	assert_int_equal(size, 0x40);
	tk_perfmap__span(m, &lo, &hi);
	assert_int_equal(lo, 0x7f0000001000);
	assert_int_equal(hi, 0x7f0000006010);
	tk_perfmap__stats(m, &st);
	assert_int_equal(st.entries, 6);
	assert_int_equal(st.bad, 6);
	assert_int_equal(st.lines, 13);
	assert_int_equal(st.overlapping, 0);
	tk_perfmap__free(m);
}

/* Code freed and JITted again at the same place: the later line wins. */
static void test_overlapping(void **state)
{
	static const char text[] =
		"1000 100 old_big\n"
		"1040 10 newer_inside\n"
		"2000 10 a\n"
		"2000 10 a_again\n"
		"3000 20 first\n"
		"3010 20 second\n";
	struct tk_perfmap_stats st;
	struct tk_perfmap *m;

	assert_int_equal(tk_perfmap__parse(text, sizeof(text) - 1, &m), 0);
	expect_find(m, 0x1040, "newer_inside");
	expect_find(m, 0x1000, NULL);	/* old_big is dropped whole */
	expect_find(m, 0x2000, "a_again");
	expect_find(m, 0x3018, "second");
	expect_find(m, 0x3000, NULL);
	tk_perfmap__stats(m, &st);
	assert_int_equal(st.overlapping, 3);
	assert_int_equal(st.entries, 3);
	tk_perfmap__free(m);
}

/* A file being appended to: whole lines only; an overlong line is skipped across pieces. */
static void test_feed_pieces(void **state)
{
	struct tk_perfmap_stats st;
	struct tk_perfmap *m = tk_perfmap__new();
	static char longline[TK_PERFMAP_MAX_LINE + 100];
	const char *a = "1000 10 one\n2000 10 tw";
	size_t used;

	assert_non_null(m);
	assert_int_equal(tk_perfmap__feed(m, a, strlen(a), false, &used), 0);
	assert_int_equal(used, strlen("1000 10 one\n"));
	expect_find(m, 0x1000, "one");
	expect_find(m, 0x2000, NULL);
	/* the rest of the line, then a line too long to keep, in two pieces */
	assert_int_equal(tk_perfmap__feed(m, "2000 10 two\n", 12, false, &used), 0);
	assert_int_equal(used, 12);
	expect_find(m, 0x2000, "two");
	memset(longline, 'x', sizeof(longline));
	memcpy(longline, "3000 10 ", 8);
	assert_int_equal(tk_perfmap__feed(m, longline, sizeof(longline), false, &used), 0);
	assert_int_equal(used, sizeof(longline));
	assert_int_equal(tk_perfmap__feed(m, "xxx\n4000 10 four\n", 17, false, &used), 0);
	assert_int_equal(used, 17);
	expect_find(m, 0x3000, NULL);
	expect_find(m, 0x4000, "four");
	tk_perfmap__stats(m, &st);
	assert_int_equal(st.bad, 1);
	assert_int_equal(st.entries, 3);
	tk_perfmap__free(m);
}

/* Garbage of every byte: never a crash, nothing kept. */
static void test_garbage(void **state)
{
	struct tk_perfmap_stats st;
	struct tk_perfmap *m;
	char buf[8192];
	size_t i;

	for (i = 0; i < sizeof(buf); i++)
		buf[i] = (char)(i * 7919 % 251);
	assert_int_equal(tk_perfmap__parse(buf, sizeof(buf), &m), 0);
	tk_perfmap__stats(m, &st);
	assert_true(st.entries + st.bad <= st.lines);
	tk_perfmap__free(m);
}

static struct tk_symbolizer *sym_new(const char *proc_root)
{
	struct tk_symbolizer_opts o = { .sz = sizeof(o), .proc_root = proc_root };
	struct tk_symbolizer *s;

	assert_int_equal(tk_symbolizer__new(&o, &s), 0);
	return s;
}

/*
 * Process 4242 (17 in its pid namespace) with an anonymous executable
 * mapping; its perf map under its root is /tmp/perf-17.map, and grows.
 */
static void test_symbolizer_jit(void **state)
{
	struct tk_symbolizer_stats sst;
	struct tk_symbolizer *s;
	struct tk_sym_frame f;
	struct fx *fx = fx_new();
	unsigned int uid = getuid();
	char path[PATH_MAX];

	assert_non_null(fx);
	assert_int_equal(fx_write(fx, "proc/4242/maps",
				  "7f0000000000-7f0000100000 r-xp 00000000 00:00 0 \n"), 0);
	assert_int_equal(fx_writef(fx, "proc/4242/status",
				   "Name:\tjava\nUid:\t%u\t%u\t%u\t%u\nNSpid:\t4242\t17\n", uid, uid,
				   uid, uid), 0);
	assert_int_equal(fx_write(fx, "proc/4242/root/tmp/perf-17.map",
				  "7f0000000800 100 jitted_hot\ngarbage\n"), 0);
	/* the host's pid names no file of this process */
	assert_int_equal(fx_write(fx, "proc/4242/root/tmp/perf-4242.map",
				  "7f0000000800 100 wrong_file\n"), 0);
	s = sym_new(fx->proc);
	assert_int_equal(tk_symbolizer__capture(s, 4242, 0), 0);
	assert_int_equal(tk_symbolizer__user(s, 4242, 0, 0x7f0000000810, &f), 0);
	assert_string_equal(f.function, "jitted_hot");
	assert_string_equal(f.module, "[perf-17.map]");
	assert_true(f.map_start <= 0x7f0000000810 && 0x7f0000000810 < f.map_limit);
	/* appended: not read again within the second, then read from where it stopped */
	assert_int_equal(fx_append(fx, "proc/4242/root/tmp/perf-17.map",
				   "7f0000002000 40 jitted_later\n"), 0);
	assert_int_equal(tk_symbolizer__user(s, 4242, 0, 0x7f0000002000, &f), -ENOENT);
	usleep(1100000);
	assert_int_equal(tk_symbolizer__user(s, 4242, 0, 0x7f0000002000, &f), 0);
	assert_string_equal(f.function, "jitted_later");
	assert_int_equal(tk_symbolizer__user(s, 4242, 0, 0x7f00000008ff, &f), 0);
	assert_string_equal(f.function, "jitted_hot");
	tk_symbolizer__stats(s, &sst);
	assert_int_equal(sst.jit_files, 1);
	assert_int_equal(sst.jit_entries, 2);
	assert_int_equal(sst.jit_bad_lines, 1);
	tk_symbolizer__free(s);

	/*
	 * a symlink resolves inside the process's root (here to nothing), and a
	 * FIFO is no file: the frame stays JIT code, unnamed
	 */
	assert_int_equal(fx_remove(fx, "proc/4242/root/tmp/perf-17.map"), 0);
	assert_int_equal(fx_symlink(fx, "/dev/zero", "proc/4242/root/tmp/perf-17.map"), 0);
	s = sym_new(fx->proc);
	assert_int_equal(tk_symbolizer__capture(s, 4242, 0), 0);
	assert_int_equal(tk_symbolizer__user(s, 4242, 0, 0x7f0000000810, &f), -ENOENT);
	assert_null(f.function);
	assert_string_equal(f.module, "[jit]");
	assert_true(f.jit);
	tk_symbolizer__free(s);
	assert_int_equal(fx_remove(fx, "proc/4242/root/tmp/perf-17.map"), 0);
	assert_int_equal(fx_path(fx, "proc/4242/root/tmp/perf-17.map", path, sizeof(path)), 0);
	assert_int_equal(mkfifo(path, 0600), 0);
	s = sym_new(fx->proc);
	assert_int_equal(tk_symbolizer__capture(s, 4242, 0), 0);
	assert_int_equal(tk_symbolizer__user(s, 4242, 0, 0x7f0000000810, &f), -ENOENT);
	assert_null(f.function);
	assert_true(f.jit);
	tk_symbolizer__free(s);
	fx_free(fx);
}

/*
 * A perf map left by an earlier process of the same pid, read before this
 * one truncated it and wrote its own, longer, in the same file (its inode):
 * what was read of the old one is dropped, the new one read from its start.
 */
static void test_symbolizer_jit_rewritten(void **state)
{
	struct tk_symbolizer *s;
	struct tk_sym_frame f;
	struct fx *fx = fx_new();
	unsigned int uid = getuid();
	char path[PATH_MAX];
	FILE *fp;

	assert_non_null(fx);
	assert_int_equal(fx_write(fx, "proc/4242/maps",
				  "7f0000000000-7f0000100000 r-xp 00000000 00:00 0 \n"), 0);
	assert_int_equal(fx_writef(fx, "proc/4242/status",
				   "Name:\tnode\nUid:\t%u\t%u\t%u\t%u\nNSpid:\t4242\n", uid, uid,
				   uid, uid), 0);
	assert_int_equal(fx_write(fx, "proc/4242/root/tmp/perf-4242.map",
				  "7f0000000800 100 stale_name\n"), 0);
	s = sym_new(fx->proc);
	assert_int_equal(tk_symbolizer__capture(s, 4242, 0), 0);
	assert_int_equal(tk_symbolizer__user(s, 4242, 0, 0x7f0000000810, &f), 0);
	assert_string_equal(f.function, "stale_name");
	/* truncated and written again, in place */
	assert_int_equal(fx_path(fx, "proc/4242/root/tmp/perf-4242.map", path, sizeof(path)), 0);
	fp = fopen(path, "r+");
	assert_non_null(fp);
	assert_int_equal(ftruncate(fileno(fp), 0), 0);
	fputs("7f0000000800 100 fresh_name\n7f0000001000 100 fresh_other\n", fp);
	fclose(fp);
	usleep(1100000);
	assert_int_equal(tk_symbolizer__user(s, 4242, 0, 0x7f0000001010, &f), 0);
	assert_string_equal(f.function, "fresh_other");
	assert_int_equal(tk_symbolizer__user(s, 4242, 0, 0x7f0000000810, &f), 0);
	assert_string_equal(f.function, "fresh_name");
	tk_symbolizer__free(s);
	fx_free(fx);
}

/*
 * A library dlopen()ed after the capture: its address is in no mapping, the
 * maps are read again at the lookup, and the name comes; another miss within
 * the second reads nothing.
 */
static void test_recapture_dlopen(void **state)
{
	const char *dir = getenv("TK_BUILD_DIR");
	struct tk_symbolizer_stats st;
	struct tk_symbolizer *s;
	struct tk_sym_frame f;
	char path[PATH_MAX];
	void *h, *fn;

	snprintf(path, sizeof(path), "%s/workloads/libunwlate.so", dir && *dir ? dir : "build");
	if (access(path, R_OK))
		fail_msg("%s missing: build it first", path);
	s = sym_new(NULL);
	assert_int_equal(tk_symbolizer__capture(s, getpid(), 0), 0);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	assert_non_null(h);
	fn = dlsym(h, "late_outer");
	assert_non_null(fn);
	assert_int_equal(tk_symbolizer__user(s, getpid(), 0, (uint64_t)fn, &f), 0);
	assert_string_equal(f.function, "late_outer");
	assert_non_null(strstr(f.module, "libunwlate.so"));
	tk_symbolizer__stats(s, &st);
	assert_int_equal(st.recaptures, 1);
	assert_true(st.recapture_maps >= 1);
	/* an address of nothing: no second read within the second */
	assert_int_equal(tk_symbolizer__user(s, getpid(), 0, 0x10, &f), -ESRCH);
	tk_symbolizer__stats(s, &st);
	assert_int_equal(st.recaptures, 1);
	/* a generation never captured is not read again */
	assert_int_equal(tk_symbolizer__user(s, getpid(), 1, (uint64_t)fn, &f), -ESRCH);
	tk_symbolizer__free(s);
	dlclose(h);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_lines),
		cmocka_unit_test(test_overlapping),
		cmocka_unit_test(test_feed_pieces),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_symbolizer_jit),
		cmocka_unit_test(test_symbolizer_jit_rewritten),
		cmocka_unit_test(test_recapture_dlopen),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
