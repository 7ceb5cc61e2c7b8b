// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * jemalloc heap profile dumps into the profile model (user/alloc/jeprof.c).
 *
 * - The sampling adjustment against numbers computed apart from the code
 *   (Python's math.expm1, values in the table), and its edges.
 * - A handwritten dump, every field read back; malformed dumps (truncated at
 *   every byte, bad hex, huge counts, missing lines) refused with the errno
 *   the header promises.
 * - A handwritten dump whose MAPPED_LIBRARIES are this test's own maps,
 *   converted for a pid that does not exist: names come from the files the
 *   dump lists, glibc's malloc frame and what is inside it are removed.
 * - Real dumps: build/workloads/alloc_leak_je under MALLOC_CONF=prof:true,
 *   lg_prof_sample:12 asks for prof.dump before it exits; alloc_leak (glibc
 *   malloc) under LD_PRELOAD=libjemalloc with prof_final:true. The leaked
 *   bytes the workload prints must land on leak_site (64 KiB blocks at a 4 KiB
 *   mean are sampled with probability 1 - e^-16: the estimate is exact, and a
 *   1 % tolerance is kept; 1 KiB blocks: measured within ±3.5 % over 8 runs,
 *   σ ≈ 2 %, so 10 %), churn holds nothing in use, `go tool pprof
 *   -sample_index=inuse_space -top` shows leak_site on top, and Debian's
 *   `jeprof --text --show_bytes` agrees to the byte (it truncates where we
 *   round: at most 1 per stack). Without go, jeprof or libjemalloc those
 *   parts skip and say why.
 */
#include <dlfcn.h>
#include <errno.h>
#include <glob.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "need.h"

#include "../lib/fixture.h"
#include "../lib/spawn.h"
#include "alloc/jeprof.h"
#include "profile/profile.h"
#include "sym/symbolize.h"

/* a pid above any pid_max: the process of the dump is gone */
#define GONE_PID 99999999u

/* ---- helpers ----------------------------------------------------------------------- */

static char *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "r");
	size_t cap = 0, n;
	char *buf = NULL;

	assert_non_null(f);
	*len = 0;
	do {
		if (cap - *len < 65536) {
			cap = cap ? cap * 2 : 1 << 20;
			buf = realloc(buf, cap);
			assert_non_null(buf);
		}
		n = fread(buf + *len, 1, cap - *len - 1, f);
		*len += n;
	} while (n);
	fclose(f);
	buf[*len] = '\0';
	return buf;
}

static struct tk_jeprof *parse_ok(const char *text)
{
	struct tk_jeprof *d = NULL;

	assert_int_equal(tk_jeprof__parse(text, strlen(text), &d), 0);
	assert_non_null(d);
	return d;
}

static int parse_err(const char *text)
{
	struct tk_jeprof *d = (void *)1;
	int err = tk_jeprof__parse(text, strlen(text), &d);

	assert_null(d);
	return err;
}

static const char *leaf_name(const struct tk_profile *p, const struct tk_sample *s)
{
	const struct tk_location *l;

	if (!s->nr_locations)
		return "";
	l = &p->locations[s->location_ids[0] - 1];
	return l->function_id ? p->functions[l->function_id - 1].name : "";
}

static const char *frame_name(const struct tk_profile *p, const struct tk_sample *s, uint32_t i)
{
	const struct tk_location *l = &p->locations[s->location_ids[i] - 1];

	return l->function_id ? p->functions[l->function_id - 1].name : "";
}

/* Sum of value @v over samples whose leaf is @name (pprof's "flat"), and their number. */
static int64_t flat(const struct tk_profile *p, const char *name, int v, int *nr)
{
	int64_t sum = 0;
	size_t i;

	if (nr)
		*nr = 0;
	for (i = 0; i < p->nr_samples; i++) {
		if (strcmp(leaf_name(p, &p->samples[i]), name))
			continue;
		sum += p->samples[i].values[v];
		if (nr)
			(*nr)++;
	}
	return sum;
}

static int64_t total(const struct tk_profile *p, int v)
{
	int64_t sum = 0;
	size_t i;

	for (i = 0; i < p->nr_samples; i++)
		sum += p->samples[i].values[v];
	return sum;
}

enum { V_ALLOC_OBJS, V_ALLOC_SPACE, V_INUSE_OBJS, V_INUSE_SPACE };

/* ---- the sampling adjustment --------------------------------------------------------- */

/*
 * Expected values from Python 3:
 *   x = bytes / objs / period; s = 1 / -math.expm1(-x); round(objs * s), round(bytes * s)
 * (1 - math.exp(-x), jeprof's form, gives the same except where noted).
 */
static const struct {
	uint64_t period, objs, bytes;
	int64_t e_objs, e_bytes;
} unsample_table[] = {
	/* 64 KiB blocks at a 4 KiB mean: scale 1.0000001125354021 */
	{ 4096, 128, 8388607, 128, 8388608 },
	/* the churn line of a real dump; jeprof --alloc_space printed 529781034 */
	{ 4096, 99693, 222728927, 237129, 529781034 },
	/* 4 KiB objects at jemalloc's default 512 KiB: scale 128.50065104100443 */
	{ 524288, 10, 40960, 1285, 5263387 },
	{ 524288, 1, 8, 65537, 524292 },
	{ 4096, 2048, 2796202, 7225, 9864238 },
	{ 524288, 5000, 5120000, 2562501, 2624000833 },
	{ 1, 7, 7, 11, 11 },
	{ 4096, 1812, 1855488, 8192, 8388312 },
	/* x near 0: jeprof's 1 - exp(-x) loses digits (989548385550: 3298494618501); expm1 not */
	{ 1ULL << 40, 3, 10, 989560465000, 3298534883333 },
	{ 1ULL << 40, 1, 10, 109951162778, 1099511627781 },
	/* x = 2^18: scale exactly 1 */
	{ 4096, 1, 1ULL << 30, 1, 1LL << 30 },
};

static void test_unsample_table(void **state)
{
	size_t i;

	for (i = 0; i < sizeof(unsample_table) / sizeof(unsample_table[0]); i++) {
		int64_t o = -1, b = -1;

		assert_int_equal(tk_jeprof__unsample(unsample_table[i].period,
						     unsample_table[i].objs,
						     unsample_table[i].bytes, &o, &b), 0);
		if (o != unsample_table[i].e_objs || b != unsample_table[i].e_bytes)
			fail_msg("case %zu: %lld: %lld, want %lld: %lld", i, (long long)o,
				 (long long)b, (long long)unsample_table[i].e_objs,
				 (long long)unsample_table[i].e_bytes);
	}
}

static void test_unsample_edges(void **state)
{
	int64_t o = -1, b = -1;

	/* no objects: as written, as jeprof does (prof_unbias can round objects to 0) */
	assert_int_equal(tk_jeprof__unsample(524288, 0, 319, &o, &b), 0);
	assert_int_equal(o, 0);
	assert_int_equal(b, 319);
	assert_int_equal(tk_jeprof__unsample(524288, 0, 0, &o, &b), 0);
	assert_int_equal(o, 0);
	assert_int_equal(b, 0);
	/* period 0: nothing to scale by */
	assert_int_equal(tk_jeprof__unsample(0, 3, 300, &o, &b), 0);
	assert_int_equal(o, 3);
	assert_int_equal(b, 300);
	/* objects without bytes: jeprof would divide by zero */
	assert_int_equal(tk_jeprof__unsample(4096, 3, 0, &o, &b), -EINVAL);
	assert_int_equal(tk_jeprof__unsample(4096, 1ULL << 63, 1, &o, &b), -EINVAL);
	assert_int_equal(tk_jeprof__unsample(4096, 1, 1ULL << 63, &o, &b), -EINVAL);
	/* estimates past int64_t */
	assert_int_equal(tk_jeprof__unsample(1ULL << 62, 1ULL << 40, 1ULL << 40, &o, &b),
			 -ERANGE);
	assert_int_equal(tk_jeprof__unsample(4096, INT64_MAX, INT64_MAX, &o, &b), -ERANGE);
	/* the largest that fits */
	assert_int_equal(tk_jeprof__unsample(1, 1, INT64_MAX, &o, &b), 0);
	assert_int_equal(o, 1);
	assert_int_equal(b, INT64_MAX);
}

/* ---- parsing ------------------------------------------------------------------------- */

static const char handwritten[] =
	"heap_v2/4096\n"
	"  t*: 3: 12288 [10: 40960]\n"
	"  t0: 2: 8192 [8: 32768] main thread\n"
	"  t7: 1: 4096 [2: 8192]\n"
	"@ 0x7f0000001234 0x555500001100 0X555500002200\n"
	"  t*: 2: 8192 [8: 32768]\n"
	"  t0: 2: 8192 [8: 32768]\n"
	"@ 0x7f0000001234 0x555500001300\r\n"
	"  t*: 1: 4096 [2: 8192]\r\n"
	"  t0: 0: 0 [1: 4096]\n"
	"  t7: 1: 4096 [1: 4096]\n"
	"@\n"
	"  t*: 0: 0 [0: 0]\n"
	"\n"
	"MAPPED_LIBRARIES:\n"
	"555500000000-555500001000 r--p 00000000 fe:00 42    /usr/bin/prog\n"
	"555500001000-555500003000 r-xp 00001000 fe:00 42    /usr/bin/prog\n"
	"555500003000-555500004000 rw-p 00003000 fe:00 42    /usr/bin/prog\n"
	"555500004000-555500025000 rw-p 00000000 00:00 0     [heap]\n"
	"7f0000000000-7f0000010000 r-xp 00000000 fe:00 77    /usr/lib/libjemalloc.so.2\n"
	"7f0000010000-7f0000020000 rwxp 00000000 00:00 0 \n"
	"7ffff7fc1000-7ffff7fc3000 r-xp 00000000 00:00 0     [vdso]\n"
	"7ffff7fd0000-7ffff7fd1000 r-xp 00000000 fe:00 78    /usr/lib/gone.so (deleted)\n";

static void test_parse_handwritten(void **state)
{
	struct tk_jeprof *d = parse_ok(handwritten);
	const struct tk_jeprof_counts *c;
	const struct tk_jeprof_stack *s;
	const struct tk_jeprof_thread *t;
	const struct tk_jeprof_mapping *m;

	assert_int_equal(tk_jeprof__sample_period(d), 4096);
	c = tk_jeprof__total(d);
	assert_int_equal(c->cur_objs, 3);
	assert_int_equal(c->cur_bytes, 12288);
	assert_int_equal(c->accum_objs, 10);
	assert_int_equal(c->accum_bytes, 40960);
	assert_true(tk_jeprof__has_accum(d));

	assert_int_equal(tk_jeprof__nr_threads(d), 2);
	t = tk_jeprof__thread(d, 0);
	assert_int_equal(t->uid, 0);
	assert_string_equal(t->name, "main thread");
	assert_int_equal(t->counts.accum_objs, 8);
	t = tk_jeprof__thread(d, 1);
	assert_int_equal(t->uid, 7);
	assert_string_equal(t->name, "");
	assert_null(tk_jeprof__thread(d, 2));

	assert_int_equal(tk_jeprof__nr_stacks(d), 3);
	s = tk_jeprof__stack(d, 0);
	assert_int_equal(s->nr_addrs, 3);
	assert_int_equal(s->addrs[0], 0x7f0000001234ULL);
	assert_int_equal(s->addrs[1], 0x555500001100ULL);
	assert_int_equal(s->addrs[2], 0x555500002200ULL);
	assert_int_equal(s->nr_threads, 1);
	assert_int_equal(s->counts.cur_objs, 2);
	assert_int_equal(s->counts.cur_bytes, 8192);
	assert_int_equal(s->counts.accum_objs, 8);
	assert_int_equal(s->counts.accum_bytes, 32768);
	s = tk_jeprof__stack(d, 1);
	assert_int_equal(s->nr_addrs, 2);
	assert_int_equal(s->addrs[1], 0x555500001300ULL);
	assert_int_equal(s->nr_threads, 2);
	assert_int_equal(s->counts.cur_bytes, 4096);
	s = tk_jeprof__stack(d, 2);
	assert_int_equal(s->nr_addrs, 0);
	assert_int_equal(s->counts.accum_objs, 0);
	assert_null(tk_jeprof__stack(d, 3));

	/* executable files, [vdso]; not data, not anonymous code */
	assert_int_equal(tk_jeprof__nr_mappings(d), 4);
	m = tk_jeprof__mapping(d, 0);
	assert_int_equal(m->start, 0x555500001000ULL);
	assert_int_equal(m->end, 0x555500003000ULL);
	assert_int_equal(m->offset, 0x1000);
	assert_string_equal(m->path, "/usr/bin/prog");
	assert_string_equal(tk_jeprof__mapping(d, 1)->path, "/usr/lib/libjemalloc.so.2");
	assert_string_equal(tk_jeprof__mapping(d, 2)->path, "[vdso]");
	assert_string_equal(tk_jeprof__mapping(d, 3)->path, "/usr/lib/gone.so");
	assert_null(tk_jeprof__mapping(d, 4));
	assert_string_equal(tk_jeprof__program(d), "/usr/bin/prog");
	tk_jeprof__free(d);
}

static void test_parse_minimal(void **state)
{
	struct tk_jeprof *d;

	/* no stacks, no maps, no final newline; prof_accum off */
	d = parse_ok("heap_v2/524288\n  t*: 0: 0 [0: 0]");
	assert_int_equal(tk_jeprof__sample_period(d), 524288);
	assert_int_equal(tk_jeprof__nr_stacks(d), 0);
	assert_int_equal(tk_jeprof__nr_mappings(d), 0);
	assert_null(tk_jeprof__program(d));
	assert_false(tk_jeprof__has_accum(d));
	tk_jeprof__free(d);

	/* "%#x" prints 0 as "0"; gperftools' map sentinel */
	d = parse_ok("heap_v2/1\n t*: 1: 8 [0: 0]\n@ 0 0x10\n t*: 1: 8 [0: 0]\n"
		     "--- Memory map: ---\n");
	assert_int_equal(tk_jeprof__stack(d, 0)->addrs[0], 0);
	assert_int_equal(tk_jeprof__stack(d, 0)->addrs[1], 0x10);
	tk_jeprof__free(d);

	/* a thread name with control bytes is kept printable, and cut */
	d = parse_ok("heap_v2/1\n t*: 0: 0 [0: 0]\n t1: 0: 0 [0: 0] a\x1b[2Jb"
		     "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n");
	assert_int_equal(strncmp(tk_jeprof__thread(d, 0)->name, "a?[2Jbxxx", 9), 0);
	assert_int_equal(strlen(tk_jeprof__thread(d, 0)->name), TK_JEPROF_MAX_NAME - 1);
	tk_jeprof__free(d);
}

static void test_parse_malformed(void **state)
{
	static const struct {
		const char *text;
		int err;
	} bad[] = {
		{ "", -EINVAL },
		{ "heap_v2/\n t*: 0: 0 [0: 0]\n", -EINVAL },
		{ "heap_v2/12x\n t*: 0: 0 [0: 0]\n", -EINVAL },
		{ "heap_v2/99999999999999999999\n t*: 0: 0 [0: 0]\n", -ERANGE },
		/* gperftools' older format is not this one */
		{ "heap profile: 1: 2 [3: 4] @ heap_v2/524288\n", -EINVAL },
		/* the header's total is missing or cut */
		{ "heap_v2/4096\n", -EINVAL },
		{ "heap_v2/4096\n@ 0x1\n t*: 1: 8 [0: 0]\n", -EINVAL },
		{ "heap_v2/4096\n t*: 1: 40 [1: 4", -EINVAL },
		{ "heap_v2/4096\n t*: 1: 40 1: 40]\n", -EINVAL },
		{ "heap_v2/4096\n t*: 1 40 [1: 40]\n", -EINVAL },
		/* a stack cut before its total, or a blank line in between */
		{ "heap_v2/4096\n t*: 0: 0 [0: 0]\n@ 0x1 0x2\n", -EINVAL },
		{ "heap_v2/4096\n t*: 0: 0 [0: 0]\n@ 0x1 0x2\n\n t*: 1: 8 [0: 0]\n", -EINVAL },
		{ "heap_v2/4096\n t*: 0: 0 [0: 0]\n@ 0x1\n t3: 1: 8 [0: 0]\n", -EINVAL },
		{ "heap_v2/4096\n t*: 0: 0 [0: 0]\n@ 0x1\n t*: 1: 8 [0: 0]\n t*: 1: 8 [0: 0]\n",
		  -EINVAL },
		/* bad hex */
		{ "heap_v2/4096\n t*: 0: 0 [0: 0]\n@ 0x12g4\n t*: 1: 8 [0: 0]\n", -EINVAL },
		{ "heap_v2/4096\n t*: 0: 0 [0: 0]\n@ 0x\n t*: 1: 8 [0: 0]\n", -EINVAL },
		{ "heap_v2/4096\n t*: 0: 0 [0: 0]\n@ 0x1,0x2\n t*: 1: 8 [0: 0]\n", -EINVAL },
		{ "heap_v2/4096\n t*: 0: 0 [0: 0]\n@0x1\n t*: 1: 8 [0: 0]\n", -EINVAL },
		{ "heap_v2/4096\n t*: 0: 0 [0: 0]\n@ -0x1\n t*: 1: 8 [0: 0]\n", -EINVAL },
		{ "heap_v2/4096\n t*: 0: 0 [0: 0]\n@ 0x10000000000000000\n t*: 1: 8 [0: 0]\n",
		  -ERANGE },
		/* huge or negative counts, objects without bytes, trailing junk */
		{ "heap_v2/4096\n t*: 9223372036854775808: 1 [0: 0]\n", -ERANGE },
		{ "heap_v2/4096\n t*: 1: 99999999999999999999999 [0: 0]\n", -ERANGE },
		{ "heap_v2/4096\n t*: 1: 8 [-1: 8]\n", -EINVAL },
		{ "heap_v2/4096\n t*: 3: 0 [0: 0]\n", -EINVAL },
		{ "heap_v2/4096\n t*: 0: 0 [3: 0]\n", -EINVAL },
		{ "heap_v2/4096\n t*: 0: 0 [0: 0] x\n", -EINVAL },
		{ "heap_v2/4096\n t*: 0: 0 [0: 0]\n@ 0x1\n t*: 1: 8 [0: 0] x\n", -EINVAL },
		{ "heap_v2/4096\n t*: 0: 0 [0: 0]\nhello\n", -EINVAL },
		{ "heap_v2/4096\n t*: 0: 0 [0: 0]\n t*: 0: 0 [0: 0]\n", -EINVAL },
		{ "heap_v2/4096\n t*: 0: 0 [0: 0]\nMAPPED_LIBRARIES: x\n", -EINVAL },
		/* a bad maps line */
		{ "heap_v2/4096\n t*: 0: 0 [0: 0]\nMAPPED_LIBRARIES:\nnot a mapping\n", -EINVAL },
		{ "heap_v2/4096\n t*: 0: 0 [0: 0]\nMAPPED_LIBRARIES:\n1000-zz r-xp 0 0:0 0 /x\n",
		  -EINVAL },
	};
	char text[8192], *p;
	struct tk_jeprof *d;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int err = parse_err(bad[i].text);

		if (err != bad[i].err)
			fail_msg("case %zu: %d, want %d: %s", i, err, bad[i].err, bad[i].text);
	}

	/* a NUL inside a line is no character of the format */
	d = (void *)1;
	assert_int_equal(tk_jeprof__parse("heap_v2/4096\n t*: 0\0: 0 [0: 0]\n", 30, &d), -EINVAL);
	assert_null(d);
	/* too long: refused before it is read */
	assert_int_equal(tk_jeprof__parse("x", TK_JEPROF_MAX_LEN + 1, &d), -EFBIG);

	/* too many frames */
	p = text + sprintf(text, "heap_v2/4096\n t*: 0: 0 [0: 0]\n@");
	for (i = 0; i <= TK_JEPROF_MAX_FRAMES; i++)
		p += sprintf(p, " 0x%zx", i + 1);
	sprintf(p, "\n t*: 1: 8 [0: 0]\n");
	assert_int_equal(parse_err(text), -E2BIG);
}

static void test_parse_too_many_mappings(void **state)
{
	size_t cap = (TK_JEPROF_MAX_MAPPINGS + 2) * 64 + 256, i;
	char *text = malloc(cap), *p = text;
	struct tk_jeprof *d;

	assert_non_null(text);
	p += sprintf(p, "heap_v2/4096\n t*: 0: 0 [0: 0]\nMAPPED_LIBRARIES:\n");
	for (i = 0; i < TK_JEPROF_MAX_MAPPINGS; i++)
		p += sprintf(p, "%zx-%zx r-xp 00000000 fe:00 9 /lib/l.so\n", (i + 1) << 12,
			     (i + 2) << 12);
	d = parse_ok(text);
	assert_int_equal(tk_jeprof__nr_mappings(d), TK_JEPROF_MAX_MAPPINGS);
	tk_jeprof__free(d);
	sprintf(p, "%zx-%zx r-xp 00000000 fe:00 9 /lib/l.so\n", (i + 1) << 12, (i + 2) << 12);
	assert_int_equal(parse_err(text), -E2BIG);
	free(text);
}

/*
 * A dump cut at every byte: refused, or read as a shorter dump whose stacks
 * are whole (a stack needs its "t*" line after its "@" line); never a crash.
 */
static void test_parse_truncated_everywhere(void **state)
{
	size_t len = strlen(handwritten), cut, ok = 0, i;
	struct tk_jeprof *full = parse_ok(handwritten);
	char *copy;

	for (cut = 0; cut < len; cut++) {
		struct tk_jeprof *d = NULL;
		int err;

		/* a copy of exactly @cut bytes, so ASan sees any read past it */
		copy = malloc(cut ? cut : 1);
		assert_non_null(copy);
		memcpy(copy, handwritten, cut);
		err = tk_jeprof__parse(copy, cut, &d);
		free(copy);
		if (err) {
			assert_int_equal(err, -EINVAL);
			assert_null(d);
			continue;
		}
		ok++;
		assert_true(tk_jeprof__nr_stacks(d) <= tk_jeprof__nr_stacks(full));
		for (i = 0; i < tk_jeprof__nr_stacks(d); i++) {
			const struct tk_jeprof_stack *a = tk_jeprof__stack(d, i);
			const struct tk_jeprof_stack *b = tk_jeprof__stack(full, i);

			assert_int_equal(a->nr_addrs, b->nr_addrs);
			assert_memory_equal(&a->counts, &b->counts, sizeof(a->counts));
		}
		tk_jeprof__free(d);
	}
	assert_true(ok > 0);
	tk_jeprof__free(full);
}

/* ---- conversion of a handwritten dump of this process -------------------------------- */

static volatile int sink;

__attribute__((noinline)) uint64_t jp_return_address(void)
{
	uint64_t r = (uint64_t)__builtin_return_address(0);

	sink++;
	return r;
}

__attribute__((noinline)) uint64_t jp_leaky_caller(void)
{
	uint64_t r = jp_return_address();

	sink++;
	return r;
}

__attribute__((noinline)) uint64_t jp_other_caller(void)
{
	uint64_t r = jp_return_address();

	sink++;
	return r;
}

/* "@ MALLOC+4 LEAKY" with this process's maps; the jemalloc-less glibc malloc. */
static char *self_dump(uint64_t *leaky, uint64_t *other)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	uint64_t m;
	size_t maps_len;
	char *maps, *text;

	assert_non_null(libc);
	/* libc's own malloc, not a sanitizer's interceptor */
	m = (uint64_t)dlsym(libc, "malloc");
	assert_true(m != 0);
	dlclose(libc);
	*leaky = jp_leaky_caller();
	*other = jp_other_caller();
	maps = read_all("/proc/self/maps", &maps_len);
	text = malloc(maps_len + 4096);
	assert_non_null(text);
	sprintf(text,
		"heap_v2/4096\n"
		"  t*: 130: 8392704 [140: 8433664]\n"
		"  t0: 130: 8392704 [140: 8433664]\n"
		"@ 0x%" PRIx64 " 0x%" PRIx64 "\n"
		"  t*: 128: 8388607 [128: 8388607]\n"
		"@ 0x%" PRIx64 "\n"
		"  t*: 2: 4096 [12: 45056]\n"
		"@ 0x1 0x2\n"
		"  t*: 0: 0 [0: 0]\n"
		"\nMAPPED_LIBRARIES:\n%s",
		m + 4, *leaky, *other, maps);
	free(maps);
	return text;
}

static void test_to_profile_self(void **state)
{
	struct tk_symbolizer *s;
	struct tk_jeprof *d;
	struct tk_profile *p;
	uint64_t leaky, other;
	char *text = self_dump(&leaky, &other);
	const struct tk_sample *a, *b;
	bool accum_comment = false;
	int i;

	d = parse_ok(text);
	free(text);
	assert_int_equal(tk_symbolizer__new(NULL, &s), 0);
	p = tk_profile__new_heap("jemalloc");
	assert_non_null(p);
	/* a CPU profile is refused */
	{
		struct tk_profile *cpu = tk_profile__new_cpu("bpf", 99);

		assert_int_equal(tk_jeprof__to_profile(d, s, GONE_PID, cpu), -EINVAL);
		tk_profile__free(cpu);
	}
	assert_int_equal(tk_jeprof__to_profile(d, s, GONE_PID, p), 0);
	assert_int_equal(p->period, 4096);
	/* the all-zero stack is left out */
	assert_int_equal(p->nr_samples, 2);
	a = &p->samples[0];
	b = &p->samples[1];
	/* malloc removed: jp_leaky_caller is the leaf, its caller above */
	assert_string_equal(leaf_name(p, a), "jp_leaky_caller");
	assert_int_equal(a->nr_locations, 1);
	assert_int_equal(p->locations[a->location_ids[0] - 1].address, leaky);
	assert_int_equal(a->pid, GONE_PID);
	/* Python: see unsample_table[0] */
	assert_int_equal(a->values[V_ALLOC_OBJS], 128);
	assert_int_equal(a->values[V_ALLOC_SPACE], 8388608);
	assert_int_equal(a->values[V_INUSE_OBJS], 128);
	assert_int_equal(a->values[V_INUSE_SPACE], 8388608);
	/* nothing named an allocator here: kept whole; 2048-byte mean, scale 1/(1-e^-0.5) */
	assert_string_equal(leaf_name(p, b), "jp_other_caller");
	assert_int_equal(b->values[V_INUSE_OBJS], 5);	/* 2 * 2.5414940825367984 */
	assert_int_equal(b->values[V_INUSE_SPACE], 10410);
	/* 12 / (1 - e^-(3754.67 / 4096)): scale 1.6662491444678789 */
	assert_int_equal(b->values[V_ALLOC_OBJS], 20);
	assert_int_equal(b->values[V_ALLOC_SPACE], 75075);
	for (i = 0; i < p->nr_comments; i++)
		if (strstr(p->comments[i], "prof_accum"))
			accum_comment = true;
	assert_false(accum_comment);
	assert_string_equal(p->default_sample_type, "inuse_space");
	tk_profile__free(p);
	tk_symbolizer__free(s);
	tk_jeprof__free(d);
}

/*
 * A heap dump is the process's own writing: its MAPPED_LIBRARIES may name any
 * file, and root must not read the symbols of one the process could not read
 * itself. A copy of this test program, root's and mode 0700, named in a dump
 * of a uid 65534 process (alive, mapping not that file) and of one gone: its
 * function stays unnamed; made world-readable (0755), the same dump names it.
 * Needs root (a root-only file, a process of another user).
 */
static const char *named_leaf(const char *copy, uint64_t leaky, uint32_t pid,
			      uint64_t *refused)
{
	static char name[64];
	char exe[PATH_MAX], line[PATH_MAX + 256], *text;
	struct tk_symbolizer_stats st;
	struct tk_symbolizer *s;
	struct tk_profile *p;
	struct tk_jeprof *d;
	struct stat cs;
	size_t off, cap = 1 << 16;
	ssize_t n;
	FILE *f;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = 0;
	assert_int_equal(stat(copy, &cs), 0);
	text = malloc(cap);
	assert_non_null(text);
	off = snprintf(text, cap, "heap_v2/4096\n  t*: 1: 4096 [1: 4096]\n"
		       "  t0: 1: 4096 [1: 4096]\n@ 0x%" PRIx64 "\n  t*: 1: 4096 [1: 4096]\n"
		       "\nMAPPED_LIBRARIES:\n", leaky);
	/* this program's mappings, as the copy's: its path, device and inode */
	f = fopen("/proc/self/maps", "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		char range[64], perms[8], foff[32], path[PATH_MAX];

		if (sscanf(line, "%63s %7s %31s %*s %*s %4095s", range, perms, foff, path) != 4 ||
		    strcmp(path, exe))
			continue;
		off += snprintf(text + off, cap - off, "%s %s %s %02x:%02x %llu %s\n", range,
				perms, foff, major(cs.st_dev), minor(cs.st_dev),
				(unsigned long long)cs.st_ino, copy);
		assert_true(off < cap);
	}
	fclose(f);
	d = parse_ok(text);
	free(text);
	assert_int_equal(tk_symbolizer__new(NULL, &s), 0);
	p = tk_profile__new_heap("jemalloc");
	assert_non_null(p);
	assert_int_equal(tk_jeprof__to_profile(d, s, pid, p), 0);
	assert_int_equal(p->nr_samples, 1);
	snprintf(name, sizeof(name), "%s", leaf_name(p, &p->samples[0]));
	tk_symbolizer__stats(s, &st);
	*refused = st.named_refused;
	tk_profile__free(p);
	tk_symbolizer__free(s);
	tk_jeprof__free(d);
	return name;
}

static void test_dump_names_root_only_file(void **state)
{
	char dir[] = "/tmp/tk-jeprof-named.XXXXXX", copy[PATH_MAX], cmd[2 * PATH_MAX];
	uint64_t leaky = jp_leaky_caller(), refused[3];
	const char *leaf[3];
	pid_t child;

	if (geteuid()) {
		print_message("  skipped: needs root (a root-only file, a uid 65534 process)\n");
		skip();
	}
	assert_non_null(mkdtemp(dir));
	chmod(dir, 0755);
	snprintf(copy, sizeof(copy), "%s/private-program", dir);
	snprintf(cmd, sizeof(cmd), "cp /proc/%d/exe '%s'", (int)getpid(), copy);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(chmod(copy, 0700), 0);
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(1);
		pause();
		_exit(0);
	}
	usleep(50000);
	/* root's, 0700: not for the process of uid 65534, nor for one gone */
	leaf[0] = strdup(named_leaf(copy, leaky, child, &refused[0]));
	leaf[1] = strdup(named_leaf(copy, leaky, GONE_PID, &refused[1]));
	/* readable by everyone: named */
	chmod(copy, 0755);
	leaf[2] = strdup(named_leaf(copy, leaky, child, &refused[2]));
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	unlink(copy);
	rmdir(dir);
	print_message("  0700: '%s', gone: '%s'; 0755: '%s'\n", leaf[0], leaf[1], leaf[2]);
	assert_string_not_equal(leaf[0], "jp_leaky_caller");
	assert_string_not_equal(leaf[1], "jp_leaky_caller");
	assert_string_equal(leaf[2], "jp_leaky_caller");
	assert_true(refused[0] >= 1 && refused[1] >= 1);
	free((void *)leaf[0]);
	free((void *)leaf[1]);
	free((void *)leaf[2]);
}

static void test_to_profile_no_maps(void **state)
{
	struct tk_symbolizer *s;
	struct tk_jeprof *d;
	struct tk_profile *p;
	int i;
	bool noted = false;

	d = parse_ok("heap_v2/4096\n t*: 1: 65536 [0: 0]\n@ 0x10 0x20\n t*: 1: 65536 [0: 0]\n");
	assert_int_equal(tk_symbolizer__new(NULL, &s), 0);
	p = tk_profile__new_heap("jemalloc");
	assert_int_equal(tk_jeprof__to_profile(d, s, GONE_PID, p), 0);
	assert_int_equal(p->nr_samples, 1);
	assert_int_equal(p->samples[0].nr_locations, 2);
	assert_string_equal(frame_name(p, &p->samples[0], 0), "[unknown]");
	assert_int_equal(p->samples[0].values[V_ALLOC_SPACE], 0);
	assert_int_equal(p->samples[0].values[V_INUSE_SPACE], 65536);
	for (i = 0; i < p->nr_losses; i++)
		if (!strcmp(p->losses[i].name, "unsymbolized_frames"))
			assert_int_equal(p->losses[i].count, 2);
	for (i = 0; i < p->nr_comments; i++)
		if (strstr(p->comments[i], "prof_accum"))
			noted = true;
	assert_true(noted);
	tk_profile__free(p);
	tk_symbolizer__free(s);
	tk_jeprof__free(d);
}

/* ---- real dumps -------------------------------------------------------------------- */

struct run {
	struct fx *fx;
	char dump[PATH_MAX];
	char prog[PATH_MAX];	/* absolute path of the workload */
	uint32_t pid;		/* from the dump's name */
	size_t leaked, usable, blocks, churned;
	struct tk_jeprof *d;
	struct tk_profile *p;
};

static bool have(const char *cmd)
{
	char line[512], out[16];

	snprintf(line, sizeof(line), "command -v %s >/dev/null 2>&1 && echo yes", cmd);
	return tk_test_capture(line, out, sizeof(out)) == 0 && !strncmp(out, "yes", 3);
}

static const char *libjemalloc(void)
{
	static const char *const paths[] = {
		"/usr/lib/x86_64-linux-gnu/libjemalloc.so.2",
		"/usr/lib64/libjemalloc.so.2",
		"/usr/lib/libjemalloc.so.2",
	};
	size_t i;

	for (i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		if (!access(paths[i], R_OK))
			return paths[i];
	return NULL;
}

/*
 * Run workload @name with @env (MALLOC_CONF=... and the like) and @args in a
 * fresh directory; find the one dump jemalloc wrote there, parse and convert it.
 */
static void run_workload(struct run *r, const char *env, const char *name, const char *args)
{
	char cmd[4 * PATH_MAX], out[1024], pattern[PATH_MAX + 32], rel[PATH_MAX];
	struct tk_symbolizer *s;
	const char *base;
	glob_t g;
	size_t len;
	char *text;
	int status;

	memset(r, 0, sizeof(*r));
	r->fx = fx_new();
	assert_non_null(r->fx);
	snprintf(rel, sizeof(rel), "%s/workloads/%s", tk_test_build_dir(), name);
	if (!realpath(rel, r->prog))
		fail_msg("%s: not built (make %s)", rel, rel);
	snprintf(cmd, sizeof(cmd), "cd '%s' && env %s '%s' %s", r->fx->root, env, r->prog, args);
	status = tk_test_capture(cmd, out, sizeof(out));
	if (status)
		fail_msg("`%s` exited %d:\n%s", cmd, status, out);
	if (sscanf(out, "leaked=%zu usable=%zu blocks=%zu churned=%zu", &r->leaked, &r->usable,
		   &r->blocks, &r->churned) != 4)
		fail_msg("workload output: %s", out);
	snprintf(pattern, sizeof(pattern), "%s/jeprof.*.heap", r->fx->root);
	assert_int_equal(glob(pattern, 0, NULL, &g), 0);
	if (g.gl_pathc != 1)
		fail_msg("%zu dumps in %s", (size_t)g.gl_pathc, r->fx->root);
	snprintf(r->dump, sizeof(r->dump), "%s", g.gl_pathv[0]);
	globfree(&g);
	base = strrchr(r->dump, '/') + 1;
	assert_int_equal(sscanf(base, "jeprof.%u.", &r->pid), 1);

	text = read_all(r->dump, &len);
	assert_int_equal(tk_jeprof__parse(text, len, &r->d), 0);
	free(text);
	/* the workload has exited: names come from the files its dump lists */
	assert_int_equal(tk_symbolizer__new(NULL, &s), 0);
	r->p = tk_profile__new_heap("jemalloc");
	assert_non_null(r->p);
	assert_int_equal(tk_jeprof__to_profile(r->d, s, r->pid, r->p), 0);
	tk_symbolizer__free(s);
}

static void run_free(struct run *r)
{
	tk_profile__free(r->p);
	tk_jeprof__free(r->d);
	fx_free(r->fx);
}

static double rel_error(int64_t est, size_t truth)
{
	return ((double)est - (double)truth) / (double)truth;
}

/* leak_site holds the leak; churn allocated plenty and holds nothing */
static void check_leak(struct run *r, double tolerance, bool accum)
{
	int64_t leak = flat(r->p, "leak_site", V_INUSE_SPACE, NULL);
	int64_t leak_objs = flat(r->p, "leak_site", V_INUSE_OBJS, NULL);
	int nr;

	print_message("leak_site: estimated %lld bytes in %lld objects, leaked %zu (usable %zu)"
		      " in %zu blocks: %+.2f%%\n", (long long)leak, (long long)leak_objs,
		      r->leaked, r->usable, r->blocks, 100 * rel_error(leak, r->usable));
	if (rel_error(leak, r->usable) > tolerance || rel_error(leak, r->usable) < -tolerance)
		fail_msg("leak_site: %lld bytes in use, %zu leaked: beyond %.0f%%",
			 (long long)leak, r->usable, 100 * tolerance);
	/* everything else in use is small: the C++ runtime's pool, ld.so */
	assert_true(total(r->p, V_INUSE_SPACE) - leak < (int64_t)r->usable / 20);
	assert_int_equal(flat(r->p, "churn", V_INUSE_SPACE, NULL), 0);
	assert_int_equal(flat(r->p, "churn", V_INUSE_OBJS, NULL), 0);
	if (accum) {
		int64_t churned = flat(r->p, "churn", V_ALLOC_SPACE, &nr);

		assert_int_equal(nr, 1);
		/* usable sizes: size classes round 16..4111 up by ~10 % on average */
		print_message("churn: estimated %lld bytes allocated, %zu asked for\n",
			      (long long)churned, r->churned);
		assert_true(churned > (int64_t)r->churned * 0.95);
		assert_true(churned < (int64_t)r->churned * 1.35);
		assert_true(flat(r->p, "leak_site", V_ALLOC_SPACE, NULL) >= leak);
	} else {
		/* without prof_accum jemalloc drops stacks with nothing in use */
		assert_int_equal(flat(r->p, "churn", V_ALLOC_SPACE, &nr), 0);
		assert_int_equal(nr, 0);
		assert_int_equal(total(r->p, V_ALLOC_SPACE), 0);
	}
	/* leak_site is under work (the loop main runs) */
	for (nr = 0; nr < (int)r->p->nr_samples; nr++) {
		const struct tk_sample *s = &r->p->samples[nr];

		if (!strcmp(leaf_name(r->p, s), "leak_site")) {
			assert_true(s->nr_locations >= 2);
			assert_string_equal(frame_name(r->p, s, 1), "work");
		}
	}
}

static void check_go_pprof(struct run *r)
{
	char path[PATH_MAX], tmp[PATH_MAX], cmd[3 * PATH_MAX], out[16384], *row, *end;
	FILE *f;

	if (!have("go")) {
		print_message("skip part: `go` is not on PATH, cannot run go tool pprof\n");
		return;
	}
	assert_int_equal(fx_path(r->fx, "heap.pb.gz", path, sizeof(path)), 0);
	assert_int_equal(fx_path(r->fx, "home", tmp, sizeof(tmp)), 0);
	assert_int_equal(fx_mkdir(r->fx, "home"), 0);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(tk_profile__write_pprof(r->p, f), 0);
	assert_int_equal(fclose(f), 0);
	snprintf(cmd, sizeof(cmd),
		 "HOME='%s' PPROF_TMPDIR='%s' go tool pprof -sample_index=inuse_space -top '%s'"
		 " 2>&1", tmp, tmp, path);
	if (tk_test_capture(cmd, out, sizeof(out)))
		fail_msg("`%s` failed:\n%s", cmd, out);
	/* the first row after the column names is leak_site */
	row = strstr(out, "flat%");
	row = row ? strchr(row, '\n') : NULL;
	end = row ? strchr(row + 1, '\n') : NULL;
	if (!end || end - row < 10 || strncmp(end - 9, "leak_site", 9))
		fail_msg("leak_site is not on top:\n%s", out);
	assert_non_null(strstr(out, "Type: inuse_space"));
	/* and inuse_space is what pprof shows unasked */
	snprintf(cmd, sizeof(cmd), "HOME='%s' PPROF_TMPDIR='%s' go tool pprof -top '%s' 2>&1",
		 tmp, tmp, path);
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "Type: inuse_space"));
}

/* jeprof's flat bytes of @func (0 when not listed), from `jeprof --text --show_bytes`. */
static int64_t jeprof_flat(struct run *r, const char *opt, const char *func, int64_t *tot)
{
	char cmd[3 * PATH_MAX], out[65536], *line;
	long long v = 0, t = -1;

	snprintf(cmd, sizeof(cmd), "jeprof --text --show_bytes %s '%s' '%s' 2>/dev/null", opt,
		 r->prog, r->dump);
	if (tk_test_capture(cmd, out, sizeof(out)))
		fail_msg("`%s` failed:\n%s", cmd, out);
	for (line = strtok(out, "\n"); line; line = strtok(NULL, "\n")) {
		size_t n = strlen(line), f = strlen(func);

		if (sscanf(line, "Total: %lld B", &t) == 1)
			continue;
		if (n > f && !strcmp(line + n - f, func) && line[n - f - 1] == ' ')
			sscanf(line, "%lld", &v);
	}
	assert_true(t >= 0);
	*tot = t;
	return v;
}

/* jeprof truncates each estimate where we round: at most 1 apart per stack. */
static void check_jeprof(struct run *r, bool accum)
{
	int64_t jt, ours, inuse_total;
	int nr;

	if (!have("jeprof")) {
		print_message("skip part: `jeprof` is not on PATH\n");
		return;
	}
	ours = flat(r->p, "leak_site", V_INUSE_SPACE, &nr);
	assert_true(llabs(ours - jeprof_flat(r, "--inuse_space", "leak_site", &jt)) <= nr);
	assert_true(llabs(total(r->p, V_INUSE_SPACE) - jt) <= (long long)r->p->nr_samples);
	inuse_total = jt;
	if (!accum) {
		print_message("jeprof agrees: %lld B in use\n", (long long)inuse_total);
		return;
	}
	ours = flat(r->p, "churn", V_ALLOC_SPACE, &nr);
	assert_true(llabs(ours - jeprof_flat(r, "--alloc_space", "churn", &jt)) <= nr);
	assert_true(llabs(total(r->p, V_ALLOC_SPACE) - jt) <= (long long)r->p->nr_samples);
	print_message("jeprof agrees: %lld B in use, %lld B allocated\n", (long long)inuse_total,
		      (long long)jt);
	ours = flat(r->p, "leak_site", V_ALLOC_OBJS, &nr);
	assert_true(llabs(ours - jeprof_flat(r, "--alloc_objects", "leak_site", &jt)) <= nr);
}

#define PROF_CONF "MALLOC_CONF=prof:true,prof_accum:true,lg_prof_sample:12,prof_prefix:jeprof"

static void test_real_dump_linked(void **state)
{
	struct run r;

	/* 64 KiB blocks at a 4 KiB mean: every block sampled but with probability e^-16 */
	run_workload(&r, PROF_CONF, "alloc_leak_je", "-d 0.3 --dump");
	assert_true(tk_jeprof__has_accum(r.d));
	assert_int_equal(tk_jeprof__sample_period(r.d), 4096);
	assert_string_equal(tk_jeprof__program(r.d), r.prog);
	check_leak(&r, 0.01, true);
	check_go_pprof(&r);
	check_jeprof(&r, true);
	run_free(&r);
}

static void test_real_dump_small_blocks(void **state)
{
	struct run r;

	/* 1 KiB blocks: sampled with probability 1 - e^-0.25; 8192 of them, σ ≈ 2 % */
	run_workload(&r, PROF_CONF, "alloc_leak_je", "-d 0.3 --leak-block 1024 --dump");
	check_leak(&r, 0.10, true);
	check_jeprof(&r, true);
	run_free(&r);
}

/* tracekit's `-- CMD` fallback: a glibc program with Debian's libjemalloc preloaded */
static void test_real_dump_preloaded_final(void **state)
{
	const char *lib = libjemalloc();
	char env[PATH_MAX + 128];
	struct run r;

	NEED_DEP(lib, "no libjemalloc.so.2 to preload\n");
	snprintf(env, sizeof(env),
		 "LD_PRELOAD=%s MALLOC_CONF=prof:true,prof_final:true,lg_prof_sample:12,"
		 "prof_prefix:jeprof", lib);
	run_workload(&r, env, "alloc_leak", "-d 0.3");
	assert_false(tk_jeprof__has_accum(r.d));
	check_leak(&r, 0.01, false);
	check_go_pprof(&r);
	check_jeprof(&r, false);
	run_free(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_unsample_table),
		cmocka_unit_test(test_unsample_edges),
		cmocka_unit_test(test_parse_handwritten),
		cmocka_unit_test(test_parse_minimal),
		cmocka_unit_test(test_parse_malformed),
		cmocka_unit_test(test_parse_too_many_mappings),
		cmocka_unit_test(test_parse_truncated_everywhere),
		cmocka_unit_test(test_to_profile_self),
		cmocka_unit_test(test_to_profile_no_maps),
		cmocka_unit_test(test_dump_names_root_only_file),
		cmocka_unit_test(test_real_dump_linked),
		cmocka_unit_test(test_real_dump_small_blocks),
		cmocka_unit_test(test_real_dump_preloaded_final),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
