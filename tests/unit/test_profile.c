// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The profile model and its text writers: interning gives one id per key
 * (also at 100k locations), each sample keeps its location list, folded stacks line by line, the text summary
 * with the hot function on top inside 80 columns, JSON a strict checker
 * accepts, an SVG flame graph with balanced tags, a title per frame, escaped
 * names and widths in proportion, and the output format names.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../lib/fixture.h"
#include "profile/profile.h"
#include "profile/profile_int.h"
#include "test_profile_fixture.h"

typedef int (*writer_fn)(const struct tk_profile *p, FILE *f);

/* What @w writes for @p, NUL-terminated (caller frees); fails the test on an error. */
static char *render(const struct tk_profile *p, writer_fn w)
{
	/* on the heap: gcc takes a pointer into a local open_memstream buffer for a dangling one */
	struct {
		char *buf;
		size_t len;
	} *m = calloc(1, sizeof(*m));
	char *buf;
	FILE *f;
	int err;

	assert_non_null(m);
	f = open_memstream(&m->buf, &m->len);
	assert_non_null(f);
	err = w(p, f);
	fclose(f);
	buf = m->buf;
	free(m);
	if (err) {
		free(buf);
		print_error("writer failed: %d\n", err);
		fail();
	}
	return buf;
}

static int write_text20(const struct tk_profile *p, FILE *f)
{
	return tk_profile__write_text(p, f, 20);
}

static int write_svg(const struct tk_profile *p, FILE *f)
{
	return tk_profile__write_svg(p, f, "CPU <test> & \"flame\"");
}

static void assert_within_80(const char *text)
{
	const char *where;
	size_t n = fx_longest_line(text, &where);

	if (n > 80) {
		print_error("line of %zu columns: %.*s\n", n, (int)n, where);
		fail();
	}
}

/* ---- the model ---------------------------------------------------------------- */

static void test_new_cpu(void **state)
{
	struct tk_profile *p = tk_profile__new_cpu("perf", 99);

	assert_non_null(p);
	assert_int_equal(p->nr_values, 2);
	assert_string_equal(p->value_types[0].type, "samples");
	assert_string_equal(p->value_types[0].unit, "count");
	assert_string_equal(p->value_types[1].type, "cpu");
	assert_string_equal(p->value_types[1].unit, "nanoseconds");
	assert_string_equal(p->period_type.type, "cpu");
	assert_string_equal(p->period_type.unit, "nanoseconds");
	assert_int_equal(p->period, 10101010);
	assert_int_equal(p->freq_hz, 99);
	assert_string_equal(p->backend, "perf");
	assert_int_equal(p->nr_samples, 0);
	tk_profile__free(p);

	errno = 0;
	assert_null(tk_profile__new_cpu("bpf", 0));
	assert_int_equal(errno, EINVAL);
	tk_profile__free(NULL);
}

static void test_interning(void **state)
{
	struct tk_profile *p = tk_profile__new_cpu("bpf", 99);
	uint64_t m1, m2, f1, f2, l1, l2, locs[2];
	int64_t v[2] = { 1, 1 };

	assert_non_null(p);
	m1 = tk_profile__mapping(p, 0x1000, 0x2000, 0, "/bin/a", "beef");
	assert_int_equal(m1, 1);
	assert_int_equal(tk_profile__mapping(p, 0x1000, 0x2000, 0, "/bin/a", "beef"), m1);
	m2 = tk_profile__mapping(p, 0x1000, 0x2000, 0, "/bin/a", NULL);
	assert_int_equal(m2, 2);
	assert_int_equal(tk_profile__mapping(p, 0x1000, 0x2000, 0x10, "/bin/a", "beef"), 3);
	assert_int_equal(tk_profile__mapping(p, 0x1000, 0x2000, 0, "/bin/a", NULL), m2);
	assert_int_equal(p->nr_mappings, 3);
	assert_string_equal(p->mappings[0].file, "/bin/a");
	assert_string_equal(p->mappings[0].build_id, "beef");
	assert_null(p->mappings[1].build_id);
	/* one copy of a file's name and build-id for all its mappings */
	assert_ptr_equal(p->mappings[0].file, p->mappings[2].file);
	assert_ptr_equal(p->mappings[0].build_id, p->mappings[2].build_id);
	assert_int_equal(tk_profile__mapping(p, 0x9000, 0xa000, 0, "/bin/b", "beef"), 4);
	assert_string_equal(p->mappings[3].file, "/bin/b");
	assert_ptr_equal(p->mappings[3].build_id, p->mappings[0].build_id);
	assert_int_equal(tk_profile__mapping(p, 0x1000, 0x2000, 0, NULL, NULL), 5);
	assert_string_equal(p->mappings[4].file, "");

	f1 = tk_profile__function(p, "main", NULL);
	f2 = tk_profile__function(p, "main", "/src/a.c");
	assert_int_equal(f1, 1);
	assert_int_equal(f2, 2);
	assert_int_equal(tk_profile__function(p, "main", NULL), f1);
	assert_int_equal(tk_profile__function(p, "main", "/src/a.c"), f2);
	errno = 0;
	assert_int_equal(tk_profile__function(p, NULL, NULL), 0);
	assert_int_equal(errno, EINVAL);

	l1 = tk_profile__location(p, m1, 0x1234, f1, false);
	l2 = tk_profile__location(p, 0, 0x1234, f1, true);
	assert_int_equal(l1, 1);
	assert_int_equal(l2, 2);
	assert_int_equal(tk_profile__location(p, m1, 0x1234, f1, false), l1);
	assert_int_equal(tk_profile__location(p, 0, 0x1234, f1, true), l2);
	assert_int_equal(tk_profile__location(p, m1, 0x1234, f2, false), 3);
	assert_int_equal(p->nr_locations, 3);
	assert_true(p->locations[1].kernel);
	/* a reference to nothing */
	errno = 0;
	assert_int_equal(tk_profile__location(p, 99, 0x1, 0, false), 0);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(tk_profile__location(p, 0, 0x1, 99, false), 0);

	/* a location without a function leaves its mapping not fully symbolized */
	assert_true(p->mappings[m2 - 1].has_functions);
	assert_int_not_equal(tk_profile__location(p, m2, 0x1500, 0, false), 0);
	assert_false(p->mappings[m2 - 1].has_functions);
	assert_true(p->mappings[m1 - 1].has_functions);

	locs[0] = l1;
	locs[1] = 42;
	assert_int_equal(tk_profile__add_sample(p, locs, 2, v, 1, 1, "x"), -EINVAL);
	assert_int_equal(tk_profile__add_sample(p, locs, 1, NULL, 1, 1, "x"), -EINVAL);
	assert_int_equal(tk_profile__add_sample(p, locs, 1, v, 1, 2, "a-rather-long-command-name"),
			 0);
	assert_int_equal(tk_profile__add_sample(p, NULL, 0, v, 1, 2, NULL), 0);
	assert_int_equal(p->nr_samples, 2);
	assert_string_equal(p->samples[0].comm, "a-rather-long-c");
	assert_string_equal(p->samples[1].comm, "");
	tk_profile__free(p);
}

/* 100k locations, interned twice: every second lookup finds the first id. */
static void test_interning_many(void **state)
{
	struct tk_profile *p = tk_profile__new_cpu("bpf", 99);
	const uint64_t n = 100000;
	char name[32];
	uint64_t i, m;

	assert_non_null(p);
	m = tk_profile__mapping(p, 0x400000, 0x800000, 0, "/bin/big", NULL);
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "fn_%llu", (unsigned long long)(i % 5000));
		assert_int_equal(tk_profile__location(p, m, 0x400000 + i * 4,
						      tk_profile__function(p, name, NULL), false),
				 i + 1);
	}
	assert_int_equal(p->nr_functions, 5000);
	for (i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "fn_%llu", (unsigned long long)(i % 5000));
		assert_int_equal(tk_profile__function(p, name, NULL), i % 5000 + 1);
		assert_int_equal(tk_profile__location(p, m, 0x400000 + i * 4, i % 5000 + 1, false),
				 i + 1);
	}
	assert_int_equal(p->nr_locations, n);
	tk_profile__free(p);
}

/* Does @s have the @n locations @l? */
static bool has_list(const struct tk_sample *s, const uint64_t *l, uint32_t n)
{
	uint32_t i;

	if (s->nr_locations != n)
		return false;
	for (i = 0; i < n; i++)
		if (s->location_ids[i] != l[i])
			return false;
	return true;
}

/*
 * Each sample keeps its own location list, equal or not to another's, a
 * prefix or empty; a list stays where it is while 100,000 more samples are
 * added (the lists lie in blocks), one longer than a block too.
 */
static void test_location_lists(void **state)
{
	struct tk_profile *p = tk_profile__new_cpu("bpf", 99);
	uint64_t m, a, b, c, l1[3], l2[3], l3[2], i, *big;
	int64_t v[2] = { 1, 10 };
	const uint32_t *first;

	assert_non_null(p);
	m = tk_profile__mapping(p, 0x400000, 0x800000, 0, "/bin/pool", NULL);
	a = tk_profile__location(p, m, 0x401000, tk_profile__function(p, "futex_wait", NULL), true);
	b = tk_profile__location(p, m, 0x402000, tk_profile__function(p, "worker", NULL), false);
	c = tk_profile__location(p, m, 0x403000, tk_profile__function(p, "main", NULL), false);
	l1[0] = l2[0] = l3[0] = a;
	l1[1] = l2[1] = l3[1] = b;
	l1[2] = c;
	l2[2] = b;
	assert_int_equal(tk_profile__add_sample(p, l1, 3, v, 10, 11, "pool"), 0);
	v[0] = 2;
	assert_int_equal(tk_profile__add_sample(p, l1, 3, v, 10, 12, "pool"), 0);
	assert_int_equal(tk_profile__add_sample(p, l2, 3, v, 10, 13, "pool"), 0);
	assert_int_equal(tk_profile__add_sample(p, l3, 2, v, 10, 14, "pool"), 0);
	assert_int_equal(tk_profile__add_sample(p, NULL, 0, v, 10, 15, "idle"), 0);
	assert_int_equal(p->nr_samples, 5);
	assert_true(has_list(&p->samples[0], l1, 3));
	assert_true(has_list(&p->samples[1], l1, 3));
	assert_true(has_list(&p->samples[2], l2, 3));
	assert_true(has_list(&p->samples[3], l3, 2));
	assert_int_equal(p->samples[4].nr_locations, 0);
	assert_int_equal(p->samples[0].tid, 11);
	assert_int_equal(p->samples[1].tid, 12);
	assert_int_equal(p->samples[0].values[0], 1);
	assert_int_equal(p->samples[1].values[0], 2);
	assert_string_equal(p->samples[4].comm, "idle");
	first = p->samples[0].location_ids;
	for (i = 0; i < 100000; i++) {
		uint64_t l[2] = { a, tk_profile__location(p, m, 0x500000 + i * 4, 0, false) };

		assert_int_equal(tk_profile__add_sample(p, l, 2, v, 20, 20 + i, "many"), 0);
		assert_true(has_list(&p->samples[p->nr_samples - 1], l, 2));
	}
	/* longer than a block of ids */
	big = malloc(40000 * sizeof(*big));
	assert_non_null(big);
	for (i = 0; i < 40000; i++)
		big[i] = i % 2 ? a : c;
	assert_int_equal(tk_profile__add_sample(p, big, 40000, v, 30, 30, "deep"), 0);
	assert_int_equal(tk_profile__add_sample(p, l3, 2, v, 31, 31, "after"), 0);
	assert_true(has_list(&p->samples[p->nr_samples - 2], big, 40000));
	assert_true(has_list(&p->samples[p->nr_samples - 1], l3, 2));
	free(big);
	assert_ptr_equal(p->samples[0].location_ids, first);
	assert_true(has_list(&p->samples[0], l1, 3));
	assert_int_equal(p->samples[100004].location_ids[0], a);
	assert_int_equal(p->samples[100004].location_ids[1], 4 + 99999);
	assert_int_equal(tk_profile__check(p), 0);
	tk_profile__free(p);
}

static void test_losses_and_comments(void **state)
{
	struct tk_profile *p = tk_profile__new_cpu("bpf", 99);
	char name[32];
	int i;

	assert_non_null(p);
	tk_profile__set_loss(p, "stack_map_full", 1);
	tk_profile__set_loss(p, "stack_map_full", 7);
	tk_profile__set_loss(p, "truncated_stacks", 0);
	assert_int_equal(p->nr_losses, 2);
	assert_string_equal(p->losses[0].name, "stack_map_full");
	assert_int_equal(p->losses[0].count, 7);
	assert_int_equal(p->losses[1].count, 0);
	/* past the table's end nothing is dropped: "other" sums the rest */
	for (i = 2; i < TK_PROFILE_MAX_LOSSES + 3; i++) {
		snprintf(name, sizeof(name), "loss_%d", i);
		tk_profile__set_loss(p, name, 10);
	}
	assert_int_equal(p->nr_losses, TK_PROFILE_MAX_LOSSES);
	assert_string_equal(p->losses[TK_PROFILE_MAX_LOSSES - 1].name, "other");
	assert_int_equal(p->losses[TK_PROFILE_MAX_LOSSES - 1].count, 40);

	/* the table holds 24: a collector's notes (kernel, unwinder, Python, backend) fit */
	for (i = 0; i < 24; i++)
		assert_int_equal(tk_profile__add_comment(p, "note %d", i), 0);
	assert_int_equal(tk_profile__add_comment(p, "one too many"), -ENOSPC);
	assert_string_equal(p->comments[23], "note 23");
	tk_profile__free(p);
}

/* ---- folded --------------------------------------------------------------------- */

static void test_folded(void **state)
{
	struct tk_profile *p = pf_build(true, NULL);
	char *out;

	assert_non_null(p);
	out = render(p, tk_profile__write_folded);
	assert_string_equal(out, "app;main;caller;cold 25\n"
				 "app;main;caller;hot 75\n"
				 "app;main;libx.so+0x1234;entry_SYSCALL_64_[k];do_syscall_64_[k];"
				 "ksys_write_[k] 4\n"
				 "app;main;libx.so+0x3000 2\n");
	free(out);
	tk_profile__free(p);
}

/* A heap profile: the writers count its default sample type, inuse_space, not values[0]. */
static void test_heap_profile_counts_inuse(void **state)
{
	struct tk_profile *p = tk_profile__new_heap("jemalloc");
	/* alloc_objects, alloc_space, inuse_objects, inuse_space */
	const int64_t leak[4] = { 4, 4096, 4, 4096 }, churn[4] = { 1000, 64000, 0, 0 };
	uint64_t m, fl, fc, fm, loc[2];
	char *out;

	assert_non_null(p);
	m = tk_profile__mapping(p, 0x1000, 0x2000, 0, "/bin/app", NULL);
	fm = tk_profile__function(p, "main", NULL);
	fl = tk_profile__function(p, "leak_site", NULL);
	fc = tk_profile__function(p, "churn", NULL);
	loc[1] = tk_profile__location(p, m, 0x1100, fm, false);
	loc[0] = tk_profile__location(p, m, 0x1200, fl, false);
	assert_int_equal(tk_profile__add_sample(p, loc, 2, leak, 1, 1, "app"), 0);
	loc[0] = tk_profile__location(p, m, 0x1300, fc, false);
	assert_int_equal(tk_profile__add_sample(p, loc, 2, churn, 1, 1, "app"), 0);

	out = render(p, tk_profile__write_folded);
	/* churn holds nothing in use: no line at all */
	assert_string_equal(out, "app;main;leak_site 4096\n");
	free(out);
	out = render(p, write_text20);
	assert_non_null(strstr(out, "Profile: 4096 inuse_space (bytes, 4096B)"));
	/* bytes in binary units in the self column, 8 wide */
	assert_non_null(strstr(out, "   4096B  100.0%"));
	assert_null(strstr(out, "CPU profile"));
	assert_within_80(out);
	free(out);
	tk_profile__free(p);
}

static void test_folded_names(void **state)
{
	struct tk_profile *p = tk_profile__new_cpu("bpf", 99);
	int64_t v[2] = { 3, 3 };
	uint64_t l[3];
	char *out;

	assert_non_null(p);
	l[0] = tk_profile__location(p, 0, 1, tk_profile__function(p, "a;b c", NULL), false);
	l[1] = tk_profile__location(p, 0, 2, tk_profile__function(p, "new\nline", NULL), false);
	l[2] = tk_profile__location(p, 0, 3, tk_profile__function(p, "", NULL), false);
	assert_int_equal(tk_profile__add_sample(p, l, 3, v, 1, 1, "my;cmd"), 0);
	/* the same text from another thread and one with no count */
	assert_int_equal(tk_profile__add_sample(p, l, 3, v, 1, 2, "my;cmd"), 0);
	v[0] = 0;
	assert_int_equal(tk_profile__add_sample(p, l, 1, v, 1, 2, "my;cmd"), 0);
	out = render(p, tk_profile__write_folded);
	assert_string_equal(out, "my:cmd;[unknown];new?line;a:b c 6\n");
	free(out);
	tk_profile__free(p);
}

/* ---- text ----------------------------------------------------------------------- */

static void test_text_base(void **state)
{
	struct tk_profile *p = pf_build(false, NULL);
	char *out;

	assert_non_null(p);
	out = render(p, write_text20);
	assert_string_equal(
		out,
		"CPU profile: 100 samples in 1.00 s at 99 Hz, backend bpf\n"
		"losses: none counted\n"
		"    self   self%  total%  function                            module\n"
		"      75   75.0%   75.0%  hot                                 app\n"
		"      25   25.0%   25.0%  cold                                app\n"
		"       0    0.0%  100.0%  caller                              app\n"
		"       0    0.0%  100.0%  main                                app\n");
	assert_within_80(out);
	free(out);
	tk_profile__free(p);
}

static void test_text_full(void **state)
{
	struct tk_profile *p = pf_build(true, NULL);
	char *out, *line;

	assert_non_null(p);
	out = render(p, write_text20);
	assert_within_80(out);
	assert_non_null(strstr(out, "CPU profile: 106 samples in 1.00 s at 99 Hz, backend bpf\n"
				    "losses: stack_map_full=3, truncated_stacks=0\n"));
	/* the hot function on top */
	line = strstr(out, "total%  function");
	assert_non_null(line);
	line = strchr(line, '\n') + 1;
	assert_memory_equal(line, "      75   70.8%   70.8%  hot ", 30);
	assert_non_null(strstr(out, "       4    3.8%    3.8%  ksys_write"
				    "                          [kernel.kallsyms]\n"));
	assert_non_null(strstr(out, "       2    1.9%    1.9%  libx.so+0x3000"
				    "                      libx.so\n"));
	/* counted once per sample: main is in every stack */
	assert_non_null(strstr(out, "       0    0.0%  100.0%  main "));
	free(out);

	/* top 1 */
	out = NULL;
	{
		size_t len = 0;
		FILE *f = open_memstream(&out, &len);

		assert_int_equal(tk_profile__write_text(p, f, 1), 0);
		fclose(f);
	}
	assert_non_null(strstr(out, "hot"));
	assert_null(strstr(out, "cold"));
	free(out);
	tk_profile__free(p);
}

static void test_text_long_names(void **state)
{
	struct tk_profile *p = tk_profile__new_cpu("bpf", 99);
	const char *name = "std::vector<std::basic_string<char>>::_M_realloc_insert(iterator)";
	int64_t v[2] = { 5, 5 };
	uint64_t m, l;
	char *out;
	int i;

	assert_non_null(p);
	m = tk_profile__mapping(p, 0x1000, 0x2000, 0,
				"/opt/some/vendor/libextraordinarily_long_name.so.1.2.3", NULL);
	l = tk_profile__location(p, m, 0x1100, tk_profile__function(p, name, NULL), false);
	assert_int_equal(tk_profile__add_sample(p, &l, 1, v, 1, 1, "x"), 0);
	for (i = 0; i < TK_PROFILE_MAX_LOSSES; i++) {
		char loss[40];

		snprintf(loss, sizeof(loss), "a_long_loss_counter_name_%d", i);
		tk_profile__set_loss(p, loss, 123456789);
	}
	out = render(p, write_text20);
	assert_within_80(out);
	assert_non_null(strstr(out, "std::vector<std::basic_string<c...  libextraordinar...\n"));
	{
		char last[64];

		snprintf(last, sizeof(last), "a_long_loss_counter_name_%d=123456789\n",
			 TK_PROFILE_MAX_LOSSES - 1);
		assert_non_null(strstr(out, last));
	}
	free(out);
	tk_profile__free(p);
}

/* A recursive function counts once per sample in total%. */
static void test_text_recursion(void **state)
{
	struct tk_profile *p = tk_profile__new_cpu("bpf", 99);
	int64_t v[2] = { 10, 10 };
	uint64_t rec, main_loc, stack[4];
	char *out;

	assert_non_null(p);
	rec = tk_profile__location(p, 0, 0x10, tk_profile__function(p, "rec", NULL), false);
	main_loc = tk_profile__location(p, 0, 0x20, tk_profile__function(p, "main", NULL), false);
	stack[0] = stack[1] = stack[2] = rec;
	stack[3] = main_loc;
	assert_int_equal(tk_profile__add_sample(p, stack, 4, v, 1, 1, "r"), 0);
	out = render(p, write_text20);
	assert_non_null(strstr(out, "      10  100.0%  100.0%  rec "));
	assert_non_null(strstr(out, "       0    0.0%  100.0%  main "));
	free(out);
	tk_profile__free(p);
}

/* ---- JSON ----------------------------------------------------------------------- */

static void test_json(void **state)
{
	struct tk_profile *p = pf_build(true, NULL);
	char why[128];
	char *out;

	assert_non_null(p);
	out = render(p, tk_profile__write_json);
	if (fx_json_check(out, strlen(out), why, sizeof(why))) {
		print_error("invalid JSON (%s):\n%s\n", why, out);
		fail();
	}
	assert_non_null(strstr(out, "{\"backend\":\"bpf\",\"freq_hz\":99,\"period_ns\":10101010,"));
	assert_non_null(strstr(out, "\"losses\":{\"stack_map_full\":3,\"truncated_stacks\":0}"));
	assert_non_null(strstr(out, "\"comments\":[\"command: app --run\"]"));
	assert_non_null(strstr(out, "\"samples\":106,"));
	assert_non_null(strstr(out, "{\"pid\":4242,\"tid\":101,\"comm\":\"app\",\"count\":5,"
				    "\"values\":[5,50505050],\"frames\":[{\"name\":\"hot\","
				    "\"module\":\"/usr/bin/app\",\"address\":\"0x401030\","
				    "\"kernel\":false},"));
	assert_non_null(strstr(out, "{\"name\":\"ksys_write\",\"module\":\"[kernel.kallsyms]\","
				    "\"address\":\"0xffffffff81030000\",\"kernel\":true}"));
	assert_non_null(strstr(out, "{\"name\":\"libx.so+0x3000\","
				    "\"module\":\"/usr/lib/libx.so\""));
	free(out);
	tk_profile__free(p);
}

/* ---- SVG ------------------------------------------------------------------------ */

/*
 * Well-formed enough: every start tag closed in order, no '<' or '&' loose in
 * text, no markup in comments, one root. Returns NULL or what is wrong.
 */
static const char *xml_check(const char *s)
{
	char stack[64][32];
	int depth = 0, roots = 0;

	while (*s) {
		if (*s == '&') {
			if (strncmp(s, "&amp;", 5) && strncmp(s, "&lt;", 4) &&
			    strncmp(s, "&gt;", 4) && strncmp(s, "&quot;", 6) &&
			    strncmp(s, "&apos;", 6))
				return "loose &";
			s++;
			continue;
		}
		if (*s != '<') {
			s++;
			continue;
		}
		if (!strncmp(s, "<?", 2)) {
			s = strstr(s, "?>");
			if (!s)
				return "open <?";
			s += 2;
		} else if (!strncmp(s, "<![CDATA[", 9)) {
			s = strstr(s, "]]>");
			if (!s)
				return "open CDATA";
			s += 3;
		} else if (!strncmp(s, "<!--", 4)) {
			s = strstr(s, "-->");
			if (!s)
				return "open comment";
			s += 3;
		} else if (s[1] == '/') {
			size_t n = strcspn(s + 2, ">");

			if (!depth || strlen(stack[depth - 1]) != n ||
			    strncmp(stack[depth - 1], s + 2, n))
				return "unbalanced end tag";
			depth--;
			s += 2 + n + 1;
		} else {
			size_t n = strcspn(s + 1, " \t\n/>");
			const char *end = s + 1, *q;

			/* the tag's end, quotes respected */
			for (; *end && *end != '>'; end++) {
				if (*end == '"') {
					q = strchr(end + 1, '"');
					if (!q)
						return "open quote";
					if (memchr(end + 1, '<', q - end - 1))
						return "'<' in an attribute";
					end = q;
				}
			}
			if (!*end)
				return "open tag";
			if (n == 0 || n >= sizeof(stack[0]))
				return "bad tag name";
			if (end[-1] != '/') {
				if (depth == 64)
					return "too deep";
				if (!depth)
					roots++;
				memcpy(stack[depth], s + 1, n);
				stack[depth++][n] = '\0';
			}
			s = end + 1;
		}
	}
	if (depth)
		return "unclosed tags";
	return roots == 1 ? NULL : "not one root element";
}

static void assert_xml(const char *svg)
{
	const char *why = xml_check(svg);

	if (why) {
		print_error("SVG is not well-formed: %s\n", why);
		fail();
	}
}

static size_t count(const char *s, const char *what)
{
	size_t n = 0;

	while ((s = strstr(s, what))) {
		n++;
		s += strlen(what);
	}
	return n;
}

/* The value of attribute @attr in the first <rect> after @from. */
static double rect_attr(const char *from, const char *attr)
{
	char key[32];
	const char *r = strstr(from, "<rect ");

	assert_non_null(r);
	snprintf(key, sizeof(key), " %s=\"", attr);
	r = strstr(r, key);
	assert_non_null(r);
	return strtod(r + strlen(key), NULL);
}

static void test_svg(void **state)
{
	struct tk_profile *p = pf_build(true, NULL);
	const char *hot, *all, *kernel;
	char *out;

	assert_non_null(p);
	out = render(p, write_svg);
	assert_xml(out);
	assert_non_null(strstr(out, "<svg xmlns=\"http://www.w3.org/2000/svg\""));
	/* self-contained: the namespace is the only address, nothing is fetched */
	assert_int_equal(count(out, "http"), 1);
	assert_null(strstr(out, "href"));
	assert_null(strstr(out, "src="));
	assert_null(strstr(out, "@import"));
	/* the title line, escaped */
	assert_non_null(strstr(out, ">CPU &lt;test&gt; &amp; &quot;flame&quot;</text>"));
	/* one <g> with title, rect and text per frame: all, app, main, caller, hot,
	 * cold, libx.so+0x1234, 3 kernel frames, libx.so+0x3000 */
	assert_int_equal(count(out, "<g class=\"f\">"), 11);
	assert_int_equal(count(out, "<title>"), 11);
	assert_int_equal(count(out, "<rect "), 12);	/* and the background */
	hot = strstr(out, "<title>hot (75 samples, 70.75%)</title>");
	all = strstr(out, "<title>all (106 samples, 100.00%)</title>");
	kernel = strstr(out, "<title>ksys_write (4 samples, 3.77%)</title>");
	assert_non_null(hot);
	assert_non_null(all);
	assert_non_null(kernel);
	assert_non_null(strstr(out, "<title>main (106 samples, 100.00%)</title>"));
	assert_non_null(strstr(out, "<title>libx.so+0x3000 (2 samples, 1.89%)</title>"));
	/* widths in proportion, the root at the bottom, the kernel in another hue */
	assert_float_equal(rect_attr(all, "width"), 1180.0, 0.1);
	assert_float_equal(rect_attr(hot, "width"), 1180.0 * 75 / 106, 0.1);
	assert_true(rect_attr(all, "y") > rect_attr(hot, "y"));
	assert_non_null(strstr(kernel, "fill=\"rgb("));
	assert_true(strtol(strstr(kernel, "fill=\"rgb(") + 10, NULL, 10) < 120);
	assert_true(strtol(strstr(hot, "fill=\"rgb(") + 10, NULL, 10) >= 205);
	free(out);

	/* the same colors every time */
	out = render(p, write_svg);
	{
		char *again = render(p, write_svg);

		assert_string_equal(out, again);
		free(again);
	}
	free(out);
	tk_profile__free(p);
}

static int write_svg_inline(const struct tk_profile *p, FILE *f)
{
	return tk_profile__write_svg_inline(p, f, "CPU", "fg-cpu");
}

/* The graph as an element of an HTML page: no declaration, its own ids, its script scoped. */
static void test_svg_inline(void **state)
{
	struct tk_profile *p = pf_build(true, NULL);
	char *out, *alone;
	FILE *f;

	assert_non_null(p);
	out = render(p, write_svg_inline);
	assert_xml(out);
	assert_true(!strncmp(out, "<svg id=\"fg-cpu\" xmlns=\"", strlen("<svg id=\"fg-cpu\" xmlns=\"")));
	assert_null(strstr(out, "<?xml"));
	assert_non_null(strstr(out, "<text id=\"fg-cpu-unzoom\""));
	assert_non_null(strstr(out, "<text id=\"fg-cpu-details\""));
	assert_non_null(strstr(out, "#fg-cpu-unzoom { cursor"));
	assert_non_null(strstr(out, "var svg = document.getElementById('fg-cpu')"));
	assert_non_null(strstr(out, "svg.querySelectorAll('g.f')"));
	/* no id of its own that another graph on the page would share */
	assert_null(strstr(out, "id=\"unzoom\""));
	assert_null(strstr(out, "id=\"details\""));
	assert_null(strstr(out, "document.documentElement"));
	/* the same frames as the document */
	alone = render(p, write_svg);
	assert_int_equal(count(out, "<g class=\"f\">"), count(alone, "<g class=\"f\">"));
	assert_non_null(strstr(alone, "var svg = document.documentElement"));
	free(alone);
	free(out);
	/* an id that could break out of its attribute or the script's string is refused */
	f = fopen("/dev/null", "w");
	assert_non_null(f);
	assert_int_equal(tk_profile__write_svg_inline(p, f, "x", "a'b"), -EINVAL);
	assert_int_equal(tk_profile__write_svg_inline(p, f, "x", "a\"b"), -EINVAL);
	assert_int_equal(tk_profile__write_svg_inline(p, f, "x", ""), -EINVAL);
	assert_int_equal(tk_profile__write_svg_inline(p, f, "x", NULL), -EINVAL);
	fclose(f);
	tk_profile__free(p);
}

static void test_svg_escaping(void **state)
{
	struct tk_profile *p = tk_profile__new_cpu("bpf", 99);
	int64_t v[2] = { 10, 10 };
	uint64_t l[2];
	char *out;

	assert_non_null(p);
	l[0] = tk_profile__location(p, 0, 1, tk_profile__function(p, "operator<<&>\"'", NULL),
				    false);
	l[1] = tk_profile__location(p, 0, 2, tk_profile__function(p, "bad\xff\x01utf8 caf\xc3\xa9",
								  NULL), false);
	assert_int_equal(tk_profile__add_sample(p, l, 2, v, 1, 1, "a<b>"), 0);
	out = render(p, write_svg);
	assert_xml(out);
	assert_non_null(strstr(out, "<title>operator&lt;&lt;&amp;&gt;&quot;&apos; (10 samples, "
				    "100.00%)</title>"));
	assert_non_null(strstr(out, "<title>bad??utf8 caf\xc3\xa9 (10 samples"));
	assert_non_null(strstr(out, "<title>a&lt;b&gt; (10 samples"));
	assert_null(strstr(out, "operator<<"));
	free(out);
	tk_profile__free(p);
}

/* Frames under 0.1 % are left out; their samples still count in the parent. */
static void test_svg_narrow(void **state)
{
	struct tk_profile *p = tk_profile__new_cpu("bpf", 99);
	int64_t big[2] = { 9999, 0 }, tiny[2] = { 1, 0 };
	uint64_t top, wide[2], narrow[2];
	char *out;

	assert_non_null(p);
	top = tk_profile__location(p, 0, 1, tk_profile__function(p, "top", NULL), false);
	wide[0] = tk_profile__location(p, 0, 2, tk_profile__function(p, "wide", NULL), false);
	narrow[0] = tk_profile__location(p, 0, 3, tk_profile__function(p, "narrow", NULL), false);
	wide[1] = narrow[1] = top;
	assert_int_equal(tk_profile__add_sample(p, wide, 2, big, 1, 1, "x"), 0);
	assert_int_equal(tk_profile__add_sample(p, narrow, 2, tiny, 1, 1, "x"), 0);
	out = render(p, write_svg);
	assert_xml(out);
	assert_null(strstr(out, "narrow"));
	assert_non_null(strstr(out, "<title>top (10000 samples, 100.00%)</title>"));
	assert_non_null(strstr(out, "<title>wide (9999 samples, 99.99%)</title>"));
	free(out);
	tk_profile__free(p);
}

/* ---- every writer, formats -------------------------------------------------------- */

static void test_empty_profile(void **state)
{
	struct tk_profile *p = tk_profile__new_cpu("perf", 49);
	char why[128];
	char *out;

	assert_non_null(p);
	out = render(p, write_text20);
	assert_within_80(out);
	assert_non_null(strstr(out, "losses: none counted\n"));
	assert_non_null(strstr(out, "(no samples)"));
	free(out);
	out = render(p, tk_profile__write_folded);
	assert_string_equal(out, "");
	free(out);
	out = render(p, write_svg);
	assert_xml(out);
	free(out);
	out = render(p, tk_profile__write_json);
	assert_int_equal(fx_json_check(out, strlen(out), why, sizeof(why)), 0);
	assert_non_null(strstr(out, "\"stacks\":[]"));
	free(out);
	tk_profile__free(p);
}

static void test_format_names(void **state)
{
	enum tk_format fmt;

	assert_int_equal(tk_format__parse("pprof", &fmt), 0);
	assert_int_equal(fmt, TK_FORMAT_PPROF);
	assert_int_equal(tk_format__parse("folded", &fmt), 0);
	assert_int_equal(fmt, TK_FORMAT_FOLDED);
	assert_int_equal(tk_format__parse("svg", &fmt), 0);
	assert_int_equal(fmt, TK_FORMAT_SVG);
	assert_int_equal(tk_format__parse("json", &fmt), 0);
	assert_int_equal(fmt, TK_FORMAT_JSON);
	assert_int_equal(tk_format__parse("text", &fmt), 0);
	assert_int_equal(fmt, TK_FORMAT_TEXT);
	assert_int_equal(tk_format__parse("PPROF", &fmt), -EINVAL);
	assert_int_equal(tk_format__parse("", &fmt), -EINVAL);
	assert_int_equal(tk_format__parse(NULL, &fmt), -EINVAL);

	assert_int_equal(tk_format__from_path("out.pb.gz", &fmt), 0);
	assert_int_equal(fmt, TK_FORMAT_PPROF);
	assert_int_equal(tk_format__from_path("/tmp/x/cpu.pprof", &fmt), 0);
	assert_int_equal(fmt, TK_FORMAT_PPROF);
	assert_int_equal(tk_format__from_path("a.folded", &fmt), 0);
	assert_int_equal(fmt, TK_FORMAT_FOLDED);
	assert_int_equal(tk_format__from_path("flame.SVG", &fmt), 0);
	assert_int_equal(fmt, TK_FORMAT_SVG);
	assert_int_equal(tk_format__from_path("p.json", &fmt), 0);
	assert_int_equal(fmt, TK_FORMAT_JSON);
	assert_int_equal(tk_format__from_path("top.txt", &fmt), 0);
	assert_int_equal(fmt, TK_FORMAT_TEXT);
	assert_int_equal(tk_format__from_path("out.gz", &fmt), -EINVAL);
	assert_int_equal(tk_format__from_path("out.pb", &fmt), -EINVAL);
	assert_int_equal(tk_format__from_path("out", &fmt), -EINVAL);
	assert_int_equal(tk_format__from_path("dir.svg/out", &fmt), -EINVAL);
	assert_int_equal(tk_format__from_path(".svg", &fmt), -EINVAL);
	assert_int_equal(tk_format__from_path("", &fmt), -EINVAL);
	assert_int_equal(tk_format__from_path(NULL, &fmt), -EINVAL);
}

static void test_write_dispatch(void **state)
{
	struct tk_profile *p = pf_build(true, NULL);
	enum tk_format fmts[] = { TK_FORMAT_TEXT, TK_FORMAT_PPROF, TK_FORMAT_FOLDED,
				  TK_FORMAT_SVG, TK_FORMAT_JSON };
	size_t i;

	assert_non_null(p);
	for (i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		assert_int_equal(tk_profile__write(p, fmts[i], f), 0);
		fclose(f);
		assert_true(len > 0);
		if (fmts[i] == TK_FORMAT_TEXT) {
			/* the top 20 */
			assert_non_null(strstr(buf, "CPU profile:"));
		}
		if (fmts[i] == TK_FORMAT_PPROF)
			assert_memory_equal(buf, "\x1f\x8b", 2);
		free(buf);
	}
	assert_int_equal(tk_profile__write(p, (enum tk_format)99, stdout), -EINVAL);
	tk_profile__free(p);
}

/* A profile whose references point at nothing is refused, not read out of bounds. */
static void test_broken_profile(void **state)
{
	struct tk_profile *p = pf_build(false, NULL);
	FILE *f = fopen("/dev/null", "w");
	uint32_t *ids;

	assert_non_null(p);
	assert_non_null(f);
	/* the profile's own list, broken on purpose */
	ids = (uint32_t *)p->samples[0].location_ids;
	ids[1] = 999;
	assert_int_equal(tk_profile__write_text(p, f, 20), -EINVAL);
	assert_int_equal(tk_profile__write_folded(p, f), -EINVAL);
	assert_int_equal(tk_profile__write_svg(p, f, NULL), -EINVAL);
	assert_int_equal(tk_profile__write_json(p, f), -EINVAL);
	assert_int_equal(tk_profile__write_pprof(p, f), -EINVAL);
	ids[1] = 2;
	p->locations[0].function_id = 77;
	assert_int_equal(tk_profile__write_pprof(p, f), -EINVAL);
	p->locations[0].function_id = 1;
	assert_int_equal(tk_profile__write_pprof(p, f), 0);
	fclose(f);
	tk_profile__free(p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_new_cpu),
		cmocka_unit_test(test_interning),
		cmocka_unit_test(test_interning_many),
		cmocka_unit_test(test_location_lists),
		cmocka_unit_test(test_losses_and_comments),
		cmocka_unit_test(test_folded),
		cmocka_unit_test(test_folded_names),
		cmocka_unit_test(test_heap_profile_counts_inuse),
		cmocka_unit_test(test_text_base),
		cmocka_unit_test(test_text_full),
		cmocka_unit_test(test_text_long_names),
		cmocka_unit_test(test_text_recursion),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_svg),
		cmocka_unit_test(test_svg_inline),
		cmocka_unit_test(test_svg_escaping),
		cmocka_unit_test(test_svg_narrow),
		cmocka_unit_test(test_empty_profile),
		cmocka_unit_test(test_format_names),
		cmocka_unit_test(test_write_dispatch),
		cmocka_unit_test(test_broken_profile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
