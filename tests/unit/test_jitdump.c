// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * jitdump files (sym/jitdump.c) as V8's --perf-prof and Python's -X perf_jit
 * write them: loads with their code, moves, the records that are skipped,
 * fed whole and one byte at a time as a growing file is read; garbage (a
 * foreign header, another pid, sizes that lie, names without their NUL);
 * and the symbolizer on a fixture /proc: JIT code in anonymous executable
 * mappings (one area however its permissions cut it), named from the
 * jitdump the process maps, read inside its root, and only when it is the
 * very file its maps line names.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fixture.h"
#include "sym/symbolize.h"

struct buf {
	unsigned char b[1 << 16];
	size_t n;
};

static void put(struct buf *b, const void *p, size_t n)
{
	assert_true(b->n + n <= sizeof(b->b));
	memcpy(b->b + b->n, p, n);
	b->n += n;
}

static void put32(struct buf *b, uint32_t v)
{
	put(b, &v, 4);
}

static void put64(struct buf *b, uint64_t v)
{
	put(b, &v, 8);
}

static void header(struct buf *b, uint32_t magic, uint32_t pid)
{
	put32(b, magic);
	put32(b, 1);		/* version */
	put32(b, 40);		/* total_size */
	put32(b, 62);		/* EM_X86_64 */
	put32(b, 0);
	put32(b, pid);
	put64(b, 123);		/* timestamp */
	put64(b, 0);		/* flags */
}

/* A JIT_CODE_LOAD of [@addr, @addr + @size) named @name, with @size bytes of code. */
static void load(struct buf *b, uint64_t addr, uint64_t size, const char *name)
{
	size_t nl = strlen(name) + 1, i;

	put32(b, 0);
	put32(b, 16 + 40 + nl + size);
	put64(b, 1);
	put32(b, 17);		/* pid */
	put32(b, 18);		/* tid */
	put64(b, addr);		/* vma */
	put64(b, addr);		/* code_addr */
	put64(b, size);
	put64(b, 1);		/* code_index */
	put(b, name, nl);
	for (i = 0; i < size; i++)
		put(b, "\xcc", 1);
}

static void move(struct buf *b, uint64_t from, uint64_t to, uint64_t size)
{
	put32(b, 1);
	put32(b, 16 + 48);
	put64(b, 2);
	put32(b, 17);
	put32(b, 18);
	put64(b, to);
	put64(b, from);
	put64(b, to);
	put64(b, size);
	put64(b, 2);
}

/* A record of kind @id with @len bytes of anything after its header. */
static void other(struct buf *b, uint32_t id, size_t len)
{
	size_t i;

	put32(b, id);
	put32(b, 16 + len);
	put64(b, 3);
	for (i = 0; i < len; i++)
		put(b, "\x5a", 1);
}

static void expect(struct tk_jitdump *d, uint64_t addr, const char *name)
{
	const char *got = tk_jitdump__find(d, addr, NULL, NULL);

	if (!name && got)
		fail_msg("0x%llx: want nothing, got %s", (unsigned long long)addr, got);
	if (name && (!got || strcmp(got, name)))
		fail_msg("0x%llx: want %s, got %s", (unsigned long long)addr, name,
			 got ? got : "nothing");
}

/* A file as the runtimes write it: loads, debug and unwinding records, a move. */
static void sample_file(struct buf *b)
{
	header(b, 0x4A695444, 17);
	other(b, 2, 40);			/* DEBUG_INFO, before its load */
	load(b, 0x7f0000001000, 0x100, "JS:*leafHot /app.js:1:17");
	other(b, 4, 20 + 24);			/* UNWINDING_INFO */
	load(b, 0x7f0000002000, 0x80, "py::handler:/app.py");
	move(b, 0x7f0000002000, 0x7f0000003000, 0x80);
	other(b, 99, 0);			/* a kind not known yet */
	load(b, 0x7f0000004000, 0x10, "tab\there");
}

static void check_sample(struct tk_jitdump *d)
{
	struct tk_jitdump_stats st;
	uint64_t lo, hi;

	expect(d, 0x7f0000001000, "JS:*leafHot /app.js:1:17");
	expect(d, 0x7f00000010ff, "JS:*leafHot /app.js:1:17");
	expect(d, 0x7f0000001100, NULL);
	expect(d, 0x7f0000002010, "py::handler:/app.py");
	expect(d, 0x7f0000003010, "py::handler:/app.py");
	expect(d, 0x7f0000004000, "tab?here");	/* no control characters reach the outputs */
	tk_jitdump__span(d, &lo, &hi);
	assert_true(lo == 0x7f0000001000 && hi == 0x7f0000004010);
	tk_jitdump__stats(d, &st);
	assert_int_equal(st.records, 7);
	assert_int_equal(st.loads, 3);
	assert_int_equal(st.moves, 1);
	assert_int_equal(st.bad, 0);
	assert_int_equal(st.entries, 4);
	assert_false(st.broken);
}

static void test_parse(void **state)
{
	static struct buf b;
	struct tk_jitdump *d = tk_jitdump__new(17);
	size_t used;

	b.n = 0;
	sample_file(&b);
	assert_non_null(d);
	assert_int_equal(tk_jitdump__feed(d, b.b, b.n, &used), 0);
	assert_int_equal(used, b.n);
	check_sample(d);
	tk_jitdump__free(d);

	/* a reader that expects no pid in particular takes it too */
	d = tk_jitdump__new(0);
	assert_int_equal(tk_jitdump__feed(d, b.b, b.n, &used), 0);
	check_sample(d);
	tk_jitdump__free(d);
}

/* A growing file: fed one byte at a time, what was not used given again with the next. */
static void test_pieces(void **state)
{
	static struct buf b;
	struct tk_jitdump *d = tk_jitdump__new(17);
	size_t off = 0, end, used;

	b.n = 0;
	sample_file(&b);
	for (end = 1; end <= b.n; end++) {
		assert_int_equal(tk_jitdump__feed(d, b.b + off, end - off, &used), 0);
		assert_true(used <= end - off);
		off += used;
	}
	assert_int_equal(off, b.n);
	check_sample(d);
	tk_jitdump__free(d);
}

static struct tk_jitdump *parse(const struct buf *b, uint32_t pid, struct tk_jitdump_stats *st)
{
	struct tk_jitdump *d = tk_jitdump__new(pid);
	size_t used;

	assert_non_null(d);
	assert_int_equal(tk_jitdump__feed(d, b->b, b->n, &used), 0);
	tk_jitdump__stats(d, st);
	return d;
}

static void test_garbage(void **state)
{
	static struct buf b;
	struct tk_jitdump_stats st;
	struct tk_jitdump *d;

	/* a byte-swapped magic (another machine's file), another pid: nothing read */
	b.n = 0;
	header(&b, 0x4454694A, 17);
	load(&b, 0x1000, 0x10, "x");
	d = parse(&b, 17, &st);
	assert_true(st.broken);
	expect(d, 0x1000, NULL);
	tk_jitdump__free(d);
	b.n = 0;
	header(&b, 0x4A695444, 18);
	load(&b, 0x1000, 0x10, "x");
	d = parse(&b, 17, &st);
	assert_true(st.broken);
	expect(d, 0x1000, NULL);
	tk_jitdump__free(d);

	/* a name with no NUL in its record, a record too short for its fields: skipped */
	b.n = 0;
	header(&b, 0x4A695444, 17);
	put32(&b, 0);
	put32(&b, 16 + 40 + 3);
	put64(&b, 1);
	put32(&b, 17);
	put32(&b, 18);
	put64(&b, 0x1000);
	put64(&b, 0x1000);
	put64(&b, 0x10);
	put64(&b, 1);
	put(&b, "abc", 3);
	put32(&b, 0);
	put32(&b, 20);		/* a load of 20 bytes */
	put64(&b, 1);
	put32(&b, 0);
	move(&b, 0x5000, 0x6000, 0x10);	/* of nothing known */
	load(&b, 0x2000, 0x10, "after");
	d = parse(&b, 17, &st);
	assert_false(st.broken);
	assert_int_equal(st.bad, 3);
	expect(d, 0x1000, NULL);
	expect(d, 0x6000, NULL);
	expect(d, 0x2000, "after");
	tk_jitdump__free(d);

	/* a record size under its own header, or past the bound: no record after it is read */
	b.n = 0;
	header(&b, 0x4A695444, 17);
	load(&b, 0x1000, 0x10, "before");
	put32(&b, 0);
	put32(&b, 8);
	put64(&b, 1);
	load(&b, 0x2000, 0x10, "lost");
	d = parse(&b, 17, &st);
	assert_true(st.broken);
	expect(d, 0x1000, "before");
	expect(d, 0x2000, NULL);
	tk_jitdump__free(d);
	b.n = 0;
	header(&b, 0x4A695444, 17);
	put32(&b, 2);
	put32(&b, TK_JITDUMP_MAX_RECORD + 1);
	put64(&b, 1);
	d = parse(&b, 17, &st);
	assert_true(st.broken);
	tk_jitdump__free(d);

	/* code that wraps past the top of the address space, or of size 0 */
	b.n = 0;
	header(&b, 0x4A695444, 17);
	load(&b, UINT64_MAX - 4, 0x10, "wraps");
	load(&b, 0x3000, 0, "empty");
	d = parse(&b, 17, &st);
	assert_int_equal(st.bad, 2);
	assert_int_equal(st.entries, 0);
	tk_jitdump__free(d);
}

static struct tk_symbolizer *sym_new(const char *proc_root)
{
	struct tk_symbolizer_opts o = { .sz = sizeof(o), .proc_root = proc_root };
	struct tk_symbolizer *s;

	assert_int_equal(tk_symbolizer__new(&o, &s), 0);
	return s;
}

static int count_jit(const struct tk_sym_map_info *m, void *ctx)
{
	int *n = ctx;

	if (m->jit) {
		assert_string_equal(m->module, "[jit]");
		assert_null(m->unw);
		assert_true(m->start == 0x7f0000000000 && m->end == 0x7f0000300000);
		(*n)++;
	}
	return 0;
}

/*
 * Process 4242 (17 in its namespace) runs JIT code in an area its
 * permissions cut in two, and maps /work/jit-17.dump (in its root).
 */
static void test_symbolizer_jitdump(void **state)
{
	static struct buf b;
	struct tk_symbolizer_stats sst;
	struct tk_symbolizer *s;
	struct tk_sym_frame f;
	struct fx *fx = fx_new();
	unsigned int uid = getuid();
	char path[PATH_MAX], other[PATH_MAX];
	struct stat st;
	FILE *fp;
	int n = 0;

	assert_non_null(fx);
	b.n = 0;
	sample_file(&b);
	assert_int_equal(fx_write(fx, "proc/4242/root/work/jit-17.dump", ""), 0);
	assert_int_equal(fx_path(fx, "proc/4242/root/work/jit-17.dump", path, sizeof(path)), 0);
	fp = fopen(path, "w");
	assert_non_null(fp);
	assert_int_equal(fwrite(b.b, 1, b.n, fp), b.n);
	fclose(fp);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(fx_writef(fx, "proc/4242/maps",
				   "7f0000000000-7f0000100000 r-xp 00000000 00:00 0 \n"
				   "7f0000100000-7f0000300000 rwxp 00000000 00:00 0 \n"
				   "7f0000400000-7f0000401000 r-xp 00000000 %02x:%02x %llu"
				   "                   /work/jit-17.dump\n",
				   major(st.st_dev), minor(st.st_dev),
				   (unsigned long long)st.st_ino), 0);
	assert_int_equal(fx_writef(fx, "proc/4242/status",
				   "Name:\tnode\nUid:\t%u\t%u\t%u\t%u\nNSpid:\t4242\t17\n", uid,
				   uid, uid, uid), 0);
	s = sym_new(fx->proc);
	assert_int_equal(tk_symbolizer__capture(s, 4242, 0), 0);
	assert_int_equal(tk_symbolizer__for_each_map(s, 4242, 0, count_jit, &n), 0);
	assert_int_equal(n, 1);
	assert_int_equal(tk_symbolizer__user(s, 4242, 0, 0x7f0000001010, &f), 0);
	assert_string_equal(f.function, "JS:*leafHot /app.js:1:17");
	assert_string_equal(f.module, "[jit-17.dump]");
	assert_true(f.jit);
	assert_int_equal(tk_symbolizer__user(s, 4242, 0, 0x7f0000003000, &f), 0);
	assert_string_equal(f.function, "py::handler:/app.py");
	/* code no record names: JIT code all the same */
	assert_int_equal(tk_symbolizer__user(s, 4242, 0, 0x7f0000150000, &f), -ENOENT);
	assert_string_equal(f.module, "[jit]");
	assert_true(f.jit);
	/* the dump is no code: an address in it is in no mapping */
	assert_int_equal(tk_symbolizer__user(s, 4242, 0, 0x7f0000400010, &f), -ESRCH);
	tk_symbolizer__stats(s, &sst);
	assert_int_equal(sst.jitdump_files, 1);
	assert_int_equal(sst.jitdump_entries, 4);
	tk_symbolizer__free(s);

	/* another file put at its name (made while it exists: another inode): not read */
	assert_int_equal(fx_path(fx, "proc/4242/root/work/other", other, sizeof(other)), 0);
	fp = fopen(other, "w");
	assert_non_null(fp);
	assert_int_equal(fwrite(b.b, 1, b.n, fp), b.n);
	fclose(fp);
	assert_int_equal(rename(other, path), 0);
	s = sym_new(fx->proc);
	assert_int_equal(tk_symbolizer__capture(s, 4242, 0), 0);
	assert_int_equal(tk_symbolizer__user(s, 4242, 0, 0x7f0000001010, &f), -ENOENT);
	assert_null(f.function);
	tk_symbolizer__free(s);
	fx_free(fx);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_pieces),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_symbolizer_jitdump),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
