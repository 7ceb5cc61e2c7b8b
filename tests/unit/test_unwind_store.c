// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * What the unwind store decides beside the tables: which executable mappings
 * a process entry keeps when there are more than it holds (UNW_MAX_MAPS),
 * and the table of processes that missed, waiting to be captured again
 * (pruned, and counted when full); and the row search of the user-space
 * evaluator over the largest table --unwind-mem admits (4096 MiB: 2^29
 * rows), which 24 steps of binary search did not cover.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "sym/symbolize.h"
#include "unwind/unwind.h"
#include "unwind/unwind_bpf.h"

/* ---- which mappings an overflowed entry keeps ------------------------------------------- */

#define MAX_TEST_MAPS 400

static struct tk_sym_map_info maps[MAX_TEST_MAPS];
static char names[MAX_TEST_MAPS][64];
static bool keep[MAX_TEST_MAPS];
static size_t nr;

static size_t add(uint64_t start, uint64_t size, const char *name, bool main_exe)
{
	assert_true(nr < MAX_TEST_MAPS);
	snprintf(names[nr], sizeof(names[nr]), "%s", name);
	maps[nr] = (struct tk_sym_map_info){ .start = start, .end = start + size,
					     .module = names[nr], .main_exe = main_exe };
	return nr++;
}

/*
 * A JIT's code areas (large) among many libraries past UNW_MAX_MAPS: they go
 * before any file, whose CFI would be lost for them (JIT code goes by the
 * frame pointer in the entry or not).
 */
static void test_pick_jit_last(void **state);

static bool kept(const char *name)
{
	size_t i;

	for (i = 0; i < nr; i++)
		if (!strcmp(maps[i].module, name))
			return keep[i];
	fail_msg("no mapping %s", name);
	return false;
}

static size_t count_kept(void)
{
	size_t i, n = 0;

	for (i = 0; i < nr; i++)
		n += keep[i];
	return n;
}

/*
 * A Python process as the address space lays it out: the executable low,
 * then @nlibs extension modules dlopen'ed late (the lowest libraries),
 * then what ld.so mapped at the start, ld.so and the vdso at the top.
 */
static void python_layout(int nlibs)
{
	uint64_t at = 0x7f0000000000ULL;
	char name[64];
	int i;

	nr = 0;
	add(0x555555554000ULL, 0x2a0000, "/usr/bin/python3.11", true);
	for (i = 0; i < nlibs; i++) {
		snprintf(name, sizeof(name), "/usr/lib/python3/dist-packages/m%03d.so", i);
		/* two of them bigger than the rest */
		add(at, i == 7 || i == 250 ? 0x80000 : 0x3000, name, false);
		at += 0x10000;
	}
	add(at += 0x100000, 0x1000, "/usr/lib/x86_64-linux-gnu/libffi.so.8.1.2", false);
	add(at += 0x100000, 0x3a0000, "/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", false);
	add(at += 0x400000, 0x4a000, "/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30", false);
	add(at += 0x100000, 0x16000, "/usr/lib/x86_64-linux-gnu/libgcc_s.so.1", false);
	add(at += 0x100000, 0x7f000, "/usr/lib/x86_64-linux-gnu/libm.so.6", false);
	add(at += 0x100000, 0x155000, "/usr/lib/x86_64-linux-gnu/libc.so.6", false);
	add(at += 0x200000, 0x25000, "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", false);
	add(0x7ffff7fc1000ULL, 0x2000, "[vdso]", false);
	add(0xffffffffff600000ULL, 0x1000, "[vsyscall]", false);
}

/* Up to UNW_MAX_MAPS: every mapping, in the order given. */
static void test_pick_all_when_they_fit(void **state)
{
	python_layout(UNW_MAX_MAPS - 10);
	assert_int_equal(nr, UNW_MAX_MAPS);
	assert_int_equal(tk_unw__pick_maps(maps, nr, keep), UNW_MAX_MAPS);
	assert_int_equal(count_kept(), UNW_MAX_MAPS);
}

/*
 * Past UNW_MAX_MAPS: the executable, libc, ld.so, the vdso, the interpreter
 * and C++'s runtime stay whatever their address; then the largest; then the
 * lowest addresses. (In address order, libc and all above it went first.)
 */
static void test_pick_overflow_keeps_what_matters(void **state)
{
	char name[64];
	int i;

	python_layout(300);
	assert_int_equal(tk_unw__pick_maps(maps, nr, keep), UNW_MAX_MAPS);
	assert_int_equal(count_kept(), UNW_MAX_MAPS);
	assert_true(kept("/usr/bin/python3.11"));
	assert_true(kept("/usr/lib/x86_64-linux-gnu/libc.so.6"));
	assert_true(kept("/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"));
	assert_true(kept("[vdso]"));
	assert_true(kept("/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0"));
	assert_true(kept("/usr/lib/x86_64-linux-gnu/libstdc++.so.6.0.30"));
	assert_true(kept("/usr/lib/x86_64-linux-gnu/libgcc_s.so.1"));
	/* the largest of the rest: libm (0x7f000), the two big modules (0x80000) */
	assert_true(kept("/usr/lib/x86_64-linux-gnu/libm.so.6"));
	assert_true(kept("/usr/lib/python3/dist-packages/m007.so"));
	assert_true(kept("/usr/lib/python3/dist-packages/m250.so"));
	/* then equal sizes by address: the lowest modules, never the highest */
	assert_true(kept("/usr/lib/python3/dist-packages/m000.so"));
	assert_false(kept("/usr/lib/python3/dist-packages/m299.so"));
	assert_false(kept("/usr/lib/x86_64-linux-gnu/libffi.so.8.1.2"));	/* 4 KiB */
	assert_false(kept("[vsyscall]"));
	/* 128 - 7 named - libm - 2 big = 118 small modules, the first 118 but m007 */
	for (i = 0; i < 300; i++) {
		snprintf(name, sizeof(name), "/usr/lib/python3/dist-packages/m%03d.so", i);
		if (i == 7 || i == 250)
			continue;
		if (kept(name) != (i < 119))
			fail_msg("%s kept: %d", name, (int)kept(name));
	}
}

/*
 * The executable by what PID/exe names, wherever it is mapped (a program
 * started through ld.so lies among the libraries); old glibc's libc-2.NN.so,
 * musl's loader, other runtimes by their names.
 */
static void test_pick_by_name_anywhere(void **state)
{
	uint64_t at = 0x7f0000000000ULL;
	char name[64];
	int i;

	nr = 0;
	for (i = 0; i < 200; i++) {
		snprintf(name, sizeof(name), "/opt/plugins/p%03d.so", i);
		add(at, 0x10000, name, false);
		at += 0x20000;
	}
	add(at += 0x100000, 0x1000, "/opt/app/server", true);
	add(at += 0x100000, 0x1000, "/lib/x86_64-linux-gnu/libc-2.31.so", false);
	add(at += 0x100000, 0x1000, "/lib/ld-musl-x86_64.so.1", false);
	add(at += 0x100000, 0x1000, "/usr/lib/jvm/java-17/lib/server/libjvm.so", false);
	add(at += 0x100000, 0x1000, "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1", false);
	add(at += 0x100000, 0x1000, "/usr/lib/x86_64-linux-gnu/libperl.so.5.36", false);
	add(at += 0x100000, 0x1000, "/usr/lib/libnode.so.108", false);
	add(at += 0x100000, 0x1000, "/usr/lib/x86_64-linux-gnu/libpthread.so.0", false);
	add(at += 0x100000, 0x1000, "/usr/lib/x86_64-linux-gnu/libcrypto.so.3", false);
	assert_int_equal(tk_unw__pick_maps(maps, nr, keep), UNW_MAX_MAPS);
	assert_true(kept("/opt/app/server"));
	assert_true(kept("/lib/x86_64-linux-gnu/libc-2.31.so"));
	assert_true(kept("/lib/ld-musl-x86_64.so.1"));
	assert_true(kept("/usr/lib/jvm/java-17/lib/server/libjvm.so"));
	assert_true(kept("/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1"));
	assert_true(kept("/usr/lib/x86_64-linux-gnu/libperl.so.5.36"));
	assert_true(kept("/usr/lib/libnode.so.108"));
	assert_true(kept("/usr/lib/x86_64-linux-gnu/libpthread.so.0"));
	/* 4 KiB, named by no rule: below the 64 KiB plugins */
	assert_false(kept("/usr/lib/x86_64-linux-gnu/libcrypto.so.3"));
	assert_true(kept("/opt/plugins/p000.so"));
	assert_false(kept("/opt/plugins/p199.so"));
	assert_int_equal(count_kept(), UNW_MAX_MAPS);
}

/* ---- the processes that missed ------------------------------------------------------------ */

#define SEC 1000000000LL

static uint32_t gone_below;	/* pids under this have ended */
static int gone_calls;

static bool gone(uint32_t pid, void *ctx)
{
	gone_calls++;
	return pid < gone_below;
}

/* Each miss handled (captured again) and its second gone: the slot serves another process. */
static void test_misses_pruned_when_handled(void **state)
{
	static struct tk_unw_misses t;
	uint32_t pid, gen, p;
	int64_t now = 100 * SEC;

	memset(&t, 0, sizeof(t));
	gone_below = 0;
	for (p = 1; p <= 3 * TK_UNW_MAX_MISSES; p++) {
		assert_true(tk_unw_misses__add(&t, p, 7, now, gone, NULL));
		assert_true(tk_unw_misses__next_due(&t, now, SEC, &pid, &gen));
		assert_int_equal(pid, p);
		assert_int_equal(gen, 7);
		assert_false(tk_unw_misses__next_due(&t, now, SEC, &pid, &gen));
		now += SEC / 10;
	}
	assert_int_equal(t.dropped, 0);
	assert_true(t.pruned >= 2 * TK_UNW_MAX_MISSES);
	assert_true(t.nr <= TK_UNW_MAX_MISSES);
}

/* A process captured again waits a second before the next capture, whatever it misses. */
static void test_misses_rate_limited(void **state)
{
	static struct tk_unw_misses t;
	uint32_t pid, gen;

	memset(&t, 0, sizeof(t));
	assert_true(tk_unw_misses__add(&t, 42, 1, 10 * SEC, NULL, NULL));
	assert_true(tk_unw_misses__next_due(&t, 10 * SEC, SEC, &pid, &gen));
	assert_true(tk_unw_misses__add(&t, 42, 2, 10 * SEC + 1, NULL, NULL));
	assert_false(tk_unw_misses__next_due(&t, 10 * SEC + SEC / 2, SEC, &pid, &gen));
	assert_true(tk_unw_misses__next_due(&t, 11 * SEC, SEC, &pid, &gen));
	assert_int_equal(pid, 42);
	assert_int_equal(gen, 2);	/* the latest generation */
}

/*
 * Every slot waiting: the slots of processes that ended go first; with
 * none ended a miss is dropped and counted. Forgetting frees a slot.
 */
static void test_misses_full_gone_dropped_forgotten(void **state)
{
	static struct tk_unw_misses t;
	uint32_t p;

	memset(&t, 0, sizeof(t));
	gone_below = 0;
	for (p = 1; p <= TK_UNW_MAX_MISSES; p++)
		assert_true(tk_unw_misses__add(&t, p, 0, SEC, gone, NULL));
	gone_calls = 0;
	/* all pending, all alive: dropped, counted */
	assert_false(tk_unw_misses__add(&t, 100000, 0, SEC, gone, NULL));
	assert_int_equal(t.dropped, 1);
	assert_true(gone_calls > 0);
	/* a miss of a process already waiting is no new slot */
	assert_true(tk_unw_misses__add(&t, 5, 1, SEC, gone, NULL));
	assert_int_equal(t.dropped, 1);
	/* three have ended: seen a second after the last look */
	gone_below = 4;
	gone_calls = 0;
	assert_false(tk_unw_misses__add(&t, 100001, 0, SEC + SEC / 2, gone, NULL));
	assert_int_equal(gone_calls, 0);
	assert_int_equal(t.dropped, 2);
	assert_true(tk_unw_misses__add(&t, 100001, 0, 2 * SEC, gone, NULL));
	assert_true(tk_unw_misses__add(&t, 100002, 0, 2 * SEC, gone, NULL));
	assert_true(tk_unw_misses__add(&t, 100003, 0, 2 * SEC, gone, NULL));
	assert_false(tk_unw_misses__add(&t, 100004, 0, 2 * SEC, gone, NULL));
	assert_int_equal(t.dropped, 3);
	/* forgotten (its exit seen) */
	tk_unw_misses__forget(&t, 10);
	assert_true(tk_unw_misses__add(&t, 100004, 0, 2 * SEC, gone, NULL));
	assert_int_equal(t.nr, TK_UNW_MAX_MISSES);
}

/* ---- the row search over the largest table ---------------------------------------------- */

/* The stack image: this process's memory inside [lo, lo + 32). */
static int read_stack(void *ctx, uint64_t addr, void *buf, size_t len)
{
	uint64_t lo = (uintptr_t)ctx;

	if (addr < lo || addr + len > lo + 32)
		return -1;
	memcpy(buf, (const void *)(uintptr_t)addr, len);
	return 0;
}

/*
 * A table of 2^29 rows (--unwind-mem 4096, all of it one object's), the row
 * for the address its last: 24 steps of binary search ended 2^5 rows short
 * of it. Only the pages the search reads are ever touched.
 */
static void test_row_search_largest_table(void **state)
{
	const size_t n = (4096ull << 20) / sizeof(struct unw_row);
	static struct unw_proc p;
	uint64_t stack[4] = { 0, 0, 0, 0 }, ips[4];
	struct tk_unw_regs regs = { 0x100010, (uintptr_t)stack, 0 };
	struct unw_row *rows;
	uint32_t causes, frames[2];
	int got;

	assert_int_equal(n, 1u << 29);
	rows = mmap(NULL, n * sizeof(*rows), PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (rows == MAP_FAILED)
		skip();
	/* rows of pc 0 (the zero pages, kind 0: not a rule), and the last an SP row */
	rows[n - 1] = (struct unw_row){ .pc = 0, .cfa_off = 8, .kind = UNW_ROW_SP };
	memset(&p, 0, sizeof(p));
	p.nr = 1;
	p.maps[0] = (struct unw_map){ .start = 0x100000, .end = 0x200000, .bias = 0x100000,
				      .row_start = 0, .row_count = n };
	got = tk_unw__walk(&p, rows, n, &regs, read_stack, stack, ips, 4, &causes, frames);
	/* the SP row: the return address at rsp, 0: the walk ends after one frame by CFI */
	assert_int_equal(got, 1);
	assert_int_equal(causes, 0);
	assert_int_equal(frames[0], 1);
	munmap(rows, n * sizeof(*rows));
}

/* ---- tables laid out in chunks made as they come (the BPF backend's rows) ------------------ */

#define CH 16			/* rows of a chunk here (the BPF backend's: UNW_CHUNK_ROWS) */

struct chunks {
	struct unw_row *mem;	/* the flat view */
	size_t made;		/* chunks made */
	size_t limit;		/* chunks that can be made */
	int fail;		/* the error once past limit */
};

static int grow(void *ctx, size_t rows, size_t *mapped)
{
	struct chunks *c = ctx;
	int err = 0;

	while (c->made * CH < rows) {
		if (c->made == c->limit) {
			err = c->fail;
			break;
		}
		c->made++;
	}
	*mapped = c->made * CH;
	return err;
}

/* A table of @n rows whose pcs are @tag * 1000 + i: where it lands can be checked. */
static struct tk_unw_table *table(uint32_t tag, size_t n)
{
	struct tk_unw_table *t = calloc(1, sizeof(*t));
	size_t i;

	assert_non_null(t);
	t->nr = n;
	t->rows = calloc(n, sizeof(*t->rows));
	assert_non_null(t->rows);
	for (i = 0; i < n; i++)
		t->rows[i] = (struct unw_row){ .pc = tag * 1000 + i, .kind = UNW_ROW_SP };
	return t;
}

static void table_free(struct tk_unw_table *t)
{
	free(t->rows);
	free(t);
}

static struct tk_unw_store *chunked(struct chunks *c, size_t cap, size_t limit)
{
	struct tk_unw_store *s;

	memset(c, 0, sizeof(*c));
	c->mem = calloc(cap, sizeof(*c->mem));
	c->limit = limit;
	c->fail = -ENOMEM;
	assert_non_null(c->mem);
	assert_int_equal(tk_unw_store__new(c->mem, cap, &s), 0);
	tk_unw_store__set_grow(s, CH, 0, grow, c);
	return s;
}

/* @t laid out at @want, its rows there, inside memory made */
static void placed_at(struct tk_unw_store *s, struct chunks *c, struct tk_unw_table *t,
		      uint32_t want)
{
	uint32_t at = UINT32_MAX;

	assert_int_equal(tk_unw_store__place(s, t, &at), 0);
	assert_int_equal(at, want);
	assert_true(at + t->nr <= c->made * CH);
	assert_memory_equal(c->mem + at, t->rows, t->nr * sizeof(*t->rows));
}

/*
 * A table that fits in a chunk never crosses into the next: it goes to the
 * first chunk with room at its end, else to a fresh one (what stays free is
 * counted); chunks are made only as tables need them.
 */
static void test_chunks_no_straddle(void **state)
{
	struct tk_unw_table *a = table(1, 10), *b = table(2, 10), *c6 = table(3, 6),
			    *d = table(4, 16);
	struct tk_unw_store_stats st;
	struct tk_unw_store *s;
	struct chunks c;
	uint32_t at;

	s = chunked(&c, 8 * CH, 8);
	assert_int_equal(c.made, 0);
	placed_at(s, &c, a, 0);
	assert_int_equal(c.made, 1);
	placed_at(s, &c, b, CH);		/* [10, 20) would cross: at 16 */
	assert_int_equal(c.made, 2);
	placed_at(s, &c, c6, 10);		/* [10, 16): the end of chunk 0 */
	assert_int_equal(c.made, 2);
	placed_at(s, &c, d, 2 * CH);		/* a whole chunk: chunk 1 has 6 left */
	assert_int_equal(c.made, 3);
	/* asked again: where it is, nothing made */
	assert_int_equal(tk_unw_store__place(s, b, &at), 0);
	assert_int_equal(at, CH);
	tk_unw_store__stats(s, &st);
	assert_int_equal(st.tables, 4);
	assert_int_equal(st.skipped, 6);
	assert_int_equal(st.rows, 3 * CH);
	assert_int_equal(st.mapped, 3 * CH);
	assert_int_equal(st.full, 0);
	tk_unw_store__free(s);
	free(c.mem);
	table_free(a), table_free(b), table_free(c6), table_free(d);
}

/* A table larger than a chunk takes consecutive chunks from where the last one ended. */
static void test_chunks_big_table(void **state)
{
	struct tk_unw_table *a = table(1, 4), *big = table(2, 2 * CH + 8), *e = table(3, 8);
	struct tk_unw_store *s;
	struct chunks c;

	s = chunked(&c, 8 * CH, 8);
	placed_at(s, &c, a, 0);
	placed_at(s, &c, big, 4);		/* [4, 44): chunks 0, 1 and 2 */
	assert_int_equal(c.made, 3);
	placed_at(s, &c, e, 3 * CH);		/* [44, 52) would cross into chunk 3 */
	assert_int_equal(c.made, 4);
	tk_unw_store__free(s);
	free(c.mem);
	table_free(a), table_free(big), table_free(e);
}

/*
 * Under the ceiling: a table that only fits by crossing crosses (the walk
 * reads such tables too); one that does not fit, or whose chunk cannot be
 * made, is counted once as full, however often it is asked for.
 */
static void test_chunks_full_counted(void **state)
{
	struct tk_unw_table *a = table(1, 30), *b = table(2, 8), *big = table(3, 20),
			    *x = table(4, 4), *a10 = table(5, 10);
	struct tk_unw_store_stats st;
	struct tk_unw_store *s;
	struct chunks c;
	uint32_t at;

	s = chunked(&c, 38, 8);			/* a ceiling that is not a chunk multiple */
	placed_at(s, &c, a, 0);
	placed_at(s, &c, b, 30);		/* at 32 it would pass 38: it crosses */
	assert_int_equal(tk_unw_store__place(s, big, &at), -ENOSPC);
	assert_int_equal(tk_unw_store__place(s, big, &at), -ENOSPC);
	tk_unw_store__stats(s, &st);
	assert_int_equal(st.full, 1);
	assert_int_equal(st.tables, 2);
	tk_unw_store__free(s);
	free(c.mem);

	/* room under the ceiling, but the kernel makes no more chunks */
	s = chunked(&c, 8 * CH, 1);
	placed_at(s, &c, a10, 0);
	assert_int_equal(tk_unw_store__place(s, b, &at), -ENOSPC);
	assert_int_equal(tk_unw_store__place(s, b, &at), -ENOSPC);
	placed_at(s, &c, x, 10);		/* what still fits in what is made goes in */
	tk_unw_store__stats(s, &st);
	assert_int_equal(st.full, 1);
	assert_int_equal(st.mapped, CH);
	tk_unw_store__free(s);
	free(c.mem);
	table_free(a), table_free(b), table_free(big), table_free(x), table_free(a10);
}

/*
 * A store that is its symbolizer's only reader lets a table's own rows go once
 * they are laid out (the BPF backends: the kernel's copy is the one read);
 * asked again, the table is where it was. Without release, they stay.
 */
static void test_chunks_release_rows(void **state)
{
	struct tk_unw_table *a = table(1, 10), *b = table(2, 10);
	struct tk_unw_store *s;
	struct chunks c;
	uint32_t at;

	s = chunked(&c, 8 * CH, 8);
	tk_unw_store__release_rows(s, true);
	assert_int_equal(tk_unw_store__place(s, a, &at), 0);
	assert_null(a->rows);
	assert_int_equal(a->nr, 10);
	assert_int_equal(c.mem[9].pc, 1009);
	assert_null(tk_unw_table__find(a, 5));
	assert_int_equal(tk_unw_store__place(s, a, &at), 0);
	assert_int_equal(at, 0);
	tk_unw_store__release_rows(s, false);
	placed_at(s, &c, b, CH);
	assert_non_null(b->rows);
	tk_unw_store__free(s);
	free(c.mem);
	table_free(a), table_free(b);
}

static void test_pick_jit_last(void **state)
{
	uint64_t at = 0x7f0000000000ULL;
	char name[64];
	size_t j;
	int i;

	nr = 0;
	for (i = 0; i < 130; i++) {
		snprintf(name, sizeof(name), "/opt/plugins/p%03d.so", i);
		add(at, 0x1000, name, false);
		at += 0x20000;
	}
	for (i = 0; i < 10; i++) {
		j = add(at, 0x4000000, "[jit]", false);
		maps[j].jit = true;
		at += 0x8000000;
	}
	assert_int_equal(tk_unw__pick_maps(maps, nr, keep), UNW_MAX_MAPS);
	for (j = 0; j < nr; j++)
		if (maps[j].jit && keep[j])
			fail_msg("a JIT area kept before a file");
	assert_true(kept("/opt/plugins/p000.so"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_pick_all_when_they_fit),
		cmocka_unit_test(test_pick_overflow_keeps_what_matters),
		cmocka_unit_test(test_pick_by_name_anywhere),
		cmocka_unit_test(test_pick_jit_last),
		cmocka_unit_test(test_misses_pruned_when_handled),
		cmocka_unit_test(test_misses_rate_limited),
		cmocka_unit_test(test_misses_full_gone_dropped_forgotten),
		cmocka_unit_test(test_row_search_largest_table),
		cmocka_unit_test(test_chunks_no_straddle),
		cmocka_unit_test(test_chunks_big_table),
		cmocka_unit_test(test_chunks_full_counted),
		cmocka_unit_test(test_chunks_release_rows),
	};

	return cmocka_run_group_tests_name("unwind_store", tests, NULL, NULL);
}
