// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The pprof writer, read back two ways: by a small protobuf reader of this
 * test's own (inflate, varints, length-delimited fields, packed or not), which
 * checks each field of profile.proto; and by `go tool pprof -raw` and `-top`,
 * whose counts and function names must be the ones put in and the ones the
 * text summary shows. Without `go` on PATH those tests skip and say so.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <zlib.h>

#include <cmocka.h>

#include "need.h"

#include "../lib/fixture.h"
#include "profile/profile.h"
#include "test_pprof_decode.h"
#include "test_profile_fixture.h"

/* ---- fixtures --------------------------------------------------------------------- */

struct t {
	struct fx *fx;
	char path[PATH_MAX];	/* fx root/cpu.pb.gz */
	struct tk_profile *p;
	struct pf_ids ids;
};

static int setup(void **state)
{
	struct t *t = calloc(1, sizeof(*t));

	if (!t)
		return -1;
	t->fx = fx_new();
	if (!t->fx || fx_path(t->fx, "cpu.pb.gz", t->path, sizeof(t->path)))
		return -1;
	t->p = pf_build(true, &t->ids);
	if (!t->p)
		return -1;
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct t *t = *state;

	tk_profile__free(t->p);
	fx_free(t->fx);
	free(t);
	return 0;
}

static void write_file(const struct tk_profile *p, const char *path)
{
	FILE *f = fopen(path, "wb");

	assert_non_null(f);
	assert_int_equal(tk_profile__write_pprof(p, f), 0);
	assert_int_equal(fclose(f), 0);
}

static void write_and_decode(struct t *t, struct dec *d)
{
	uint8_t *data;
	size_t len;

	write_file(t->p, t->path);
	data = dec_gunzip_file(t->path, &len);
	dec_profile(data, len, d);
	free(data);
}

/* ---- the fields, read back ---------------------------------------------------------- */

static int64_t label_num(const struct dec *d, const struct dec_sample *s, const char *key)
{
	int i;

	for (i = 0; i < s->nr_labels; i++)
		if (!strcmp(dec_str(d, s->labels[i].key), key) && !s->labels[i].str)
			return s->labels[i].num;
	return -1;
}

static const char *label_str(const struct dec *d, const struct dec_sample *s, const char *key)
{
	int i;

	for (i = 0; i < s->nr_labels; i++)
		if (!strcmp(dec_str(d, s->labels[i].key), key) && s->labels[i].str)
			return dec_str(d, s->labels[i].str);
	return NULL;
}

static const char *function_name(const struct dec *d, uint64_t loc_id)
{
	int i, j;

	for (i = 0; i < d->nr_locations; i++) {
		if (d->locations[i].id != loc_id)
			continue;
		for (j = 0; j < d->nr_functions; j++)
			if (d->functions[j].id == d->locations[i].function_id)
				return dec_str(d, d->functions[j].name);
	}
	return NULL;
}

static void test_fields(void **state)
{
	struct t *t = *state;
	struct dec d;
	int i, kernel_mapping = -1;
	bool found[5] = {};

	write_and_decode(t, &d);
	assert_true(d.nr_strings > 0);
	assert_string_equal(d.strings[0], "");
	for (i = 1; i < d.nr_strings; i++) {
		int j;

		for (j = 1; j < i; j++)
			assert_string_not_equal(d.strings[i], d.strings[j]);
	}
	assert_int_equal(d.nr_sample_types, 2);
	assert_string_equal(dec_str(&d, d.sample_type[0][0]), "samples");
	assert_string_equal(dec_str(&d, d.sample_type[0][1]), "count");
	assert_string_equal(dec_str(&d, d.sample_type[1][0]), "cpu");
	assert_string_equal(dec_str(&d, d.sample_type[1][1]), "nanoseconds");
	assert_string_equal(dec_str(&d, d.period_type[0]), "cpu");
	assert_string_equal(dec_str(&d, d.period_type[1]), "nanoseconds");
	assert_int_equal(d.period, PF_PERIOD);
	assert_int_equal(d.time_nanos, 1700000000000000000LL);
	assert_int_equal(d.duration_nanos, 1000000000LL);
	assert_string_equal(dec_str(&d, d.default_sample_type), "cpu");

	/* comments: backend, frequency, each loss, then the profile's own */
	assert_int_equal(d.nr_comments, 5);
	assert_string_equal(dec_str(&d, d.comments[0]), "backend: bpf");
	assert_string_equal(dec_str(&d, d.comments[1]), "frequency: 99 Hz");
	assert_string_equal(dec_str(&d, d.comments[2]), "lost: stack_map_full=3");
	assert_string_equal(dec_str(&d, d.comments[3]), "lost: truncated_stacks=0");
	assert_string_equal(dec_str(&d, d.comments[4]), "command: app --run");

	/* samples: leaf first, both values, pid/tid numbers and comm */
	assert_int_equal(d.nr_samples, 5);
	assert_int_equal(d.samples[0].nr_locs, 3);
	assert_int_equal(d.samples[0].locs[0], t->ids.l_hot);
	assert_int_equal(d.samples[0].locs[1], t->ids.l_caller);
	assert_int_equal(d.samples[0].locs[2], t->ids.l_main);
	assert_int_equal(d.samples[0].nr_values, 2);
	assert_int_equal(d.samples[0].values[0], 70);
	assert_int_equal(d.samples[0].values[1], 70 * PF_PERIOD);
	assert_int_equal(label_num(&d, &d.samples[0], "pid"), PF_PID);
	assert_int_equal(label_num(&d, &d.samples[0], "tid"), 100);
	assert_int_equal(label_num(&d, &d.samples[2], "tid"), 101);
	assert_string_equal(label_str(&d, &d.samples[0], "comm"), "app");
	assert_int_equal(d.samples[3].nr_locs, 5);
	assert_string_equal(function_name(&d, d.samples[3].locs[0]), "ksys_write");
	assert_string_equal(function_name(&d, d.samples[3].locs[3]), "libx.so+0x1234");
	/* the location without a function got one named as the other writers name it */
	assert_string_equal(function_name(&d, d.samples[4].locs[0]), "libx.so+0x3000");

	/* mappings: the two of the profile, then the kernel's */
	assert_int_equal(d.nr_mappings, 3);
	assert_int_equal(d.mappings[0].id, 1);
	assert_int_equal(d.mappings[0].start, PF_APP_START);
	assert_int_equal(d.mappings[0].limit, 0x500000);
	assert_string_equal(dec_str(&d, d.mappings[0].filename), "/usr/bin/app");
	assert_string_equal(dec_str(&d, d.mappings[0].build_id), "0123456789abcdef");
	assert_int_equal(d.mappings[0].has_functions, 1);
	assert_int_equal(d.mappings[1].offset, PF_LIBX_OFFSET);
	assert_string_equal(dec_str(&d, d.mappings[1].filename), "/usr/lib/libx.so");
	assert_int_equal(d.mappings[1].build_id, 0);
	assert_int_equal(d.mappings[1].has_functions, 0);	/* one location lacks a function */
	for (i = 0; i < d.nr_mappings; i++)
		if (!strcmp(dec_str(&d, d.mappings[i].filename), "[kernel.kallsyms]"))
			kernel_mapping = i;
	assert_int_equal(kernel_mapping, 2);
	assert_int_equal(d.mappings[2].id, 3);
	assert_int_equal(d.mappings[2].start, PF_KADDR + 0x100);
	assert_int_equal(d.mappings[2].limit, PF_KADDR + 0x30001);
	assert_int_equal(d.mappings[2].has_functions, 1);

	/* locations: kernel ones in the kernel mapping, each with one line */
	assert_int_equal(d.nr_locations, 9);
	for (i = 0; i < d.nr_locations; i++) {
		uint64_t id = d.locations[i].id;

		assert_int_equal(id, i + 1);
		assert_int_equal(d.locations[i].nr_lines, 1);
		assert_int_not_equal(d.locations[i].mapping_id, 0);
		if (id == t->ids.l_write || id == t->ids.l_do_syscall || id == t->ids.l_entry) {
			assert_int_equal(d.locations[i].mapping_id, 3);
			found[0] = true;
		}
		if (id == t->ids.l_hot) {
			assert_int_equal(d.locations[i].mapping_id, t->ids.m_app);
			assert_int_equal(d.locations[i].address, 0x401030);
			found[1] = true;
		}
		if (id == t->ids.l_libx_nofunc) {
			assert_int_equal(d.locations[i].mapping_id, t->ids.m_libx);
			found[2] = true;
		}
	}
	assert_true(found[0] && found[1] && found[2]);

	/* functions: name = system name, filename */
	assert_int_equal(d.nr_functions, 9);	/* 8 of the profile, one made up */
	for (i = 0; i < d.nr_functions; i++) {
		assert_int_equal(d.functions[i].id, i + 1);
		assert_int_equal(d.functions[i].name, d.functions[i].system_name);
	}
	assert_string_equal(dec_str(&d, d.functions[t->ids.f_hot - 1].name), "hot");
	assert_string_equal(dec_str(&d, d.functions[t->ids.f_hot - 1].filename), "/src/app.c");
	assert_int_equal(d.functions[t->ids.f_write - 1].filename, 0);
	dec_free(&d);
}

/* The same address in the kernel and in user space: two locations, two mappings. */
static void test_kernel_apart(void **state)
{
	struct t *t = *state;
	struct tk_profile *p = tk_profile__new_cpu("perf", 999);
	int64_t v[2] = { 1, 1000000 };
	uint64_t l[2];
	struct dec d;

	assert_non_null(p);
	l[0] = tk_profile__location(p, 0, 0xffffffff81001000ULL,
				    tk_profile__function(p, "schedule", NULL), true);
	l[1] = tk_profile__location(p, 0, 0xffffffff81001000ULL,
				    tk_profile__function(p, "schedule", NULL), false);
	assert_int_not_equal(l[0], l[1]);
	assert_int_equal(tk_profile__add_sample(p, l, 2, v, 0, 0, ""), 0);
	tk_profile__free(t->p);
	t->p = p;
	write_and_decode(t, &d);
	assert_int_equal(d.nr_mappings, 1);
	assert_string_equal(dec_str(&d, d.mappings[0].filename), "[kernel.kallsyms]");
	assert_int_equal(d.locations[0].mapping_id, 1);
	assert_int_equal(d.locations[1].mapping_id, 0);
	assert_int_equal(d.period, 1001001);
	/* pid 0 and an empty comm leave nothing to label */
	assert_int_equal(d.samples[0].nr_labels, 0);
	dec_free(&d);
}

/* ---- go tool pprof ----------------------------------------------------------------- */

static bool have_go(void)
{
	FILE *f = popen("command -v go >/dev/null 2>&1 && echo yes", "r");
	char buf[8] = "";
	bool yes;

	if (!f)
		return false;
	yes = fgets(buf, sizeof(buf), f) && !strncmp(buf, "yes", 3);
	pclose(f);
	return yes;
}

/* stdout of `go tool pprof ARGS FILE` (caller frees); stderr kept in root/pprof.err. */
static char *go_pprof(struct t *t, const char *args, const char *file)
{
	char cmd[3 * PATH_MAX], err_path[PATH_MAX], tmp[PATH_MAX];
	char *out = NULL;
	size_t cap = 0, len = 0, n;
	FILE *f;
	int status;

	assert_int_equal(fx_path(t->fx, "pprof.err", err_path, sizeof(err_path)), 0);
	assert_int_equal(fx_path(t->fx, "pprof-tmp", tmp, sizeof(tmp)), 0);
	assert_int_equal(fx_mkdir(t->fx, "pprof-tmp"), 0);
	/* pprof keeps state under $HOME/pprof unless told otherwise */
	setenv("PPROF_TMPDIR", tmp, 1);
	if (!getenv("HOME"))
		setenv("HOME", tmp, 1);
	snprintf(cmd, sizeof(cmd), "go tool pprof %s '%s' 2>'%s'", args, file, err_path);
	f = popen(cmd, "r");
	assert_non_null(f);
	do {
		if (cap - len < 4096) {
			cap = cap ? cap * 2 : 16384;
			out = realloc(out, cap);
			assert_non_null(out);
		}
		n = fread(out + len, 1, cap - len - 1, f);
		len += n;
	} while (n);
	out[len] = '\0';
	status = pclose(f);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		print_error("`%s` failed (%d):\n%s\n", cmd, status, out);
		fail();
	}
	return out;
}

#define SKIP_WITHOUT_GO()                                                              \
	do {                                                                           \
		NEED_DEP(have_go(), "`go` is not on PATH, cannot run go tool pprof\n"); \
	} while (0)

static void test_go_raw(void **state)
{
	struct t *t = *state;
	char *out;

	SKIP_WITHOUT_GO();
	write_file(t->p, t->path);
	out = go_pprof(t, "-raw", t->path);
	assert_non_null(strstr(out, "PeriodType: cpu nanoseconds\n"));
	assert_non_null(strstr(out, "Period: 10101010\n"));
	assert_non_null(strstr(out, "Duration: 1s\n"));
	assert_non_null(strstr(out, "samples/count cpu/nanoseconds[dflt]\n"));
	/* every sample with its two values and leaf-first locations */
	assert_non_null(strstr(out, "         70  707070700: 1 2 3 \n"));
	assert_non_null(strstr(out, "         25  252525250: 4 2 3 \n"));
	assert_non_null(strstr(out, "          5   50505050: 1 2 3 \n"));
	assert_non_null(strstr(out, "          4   40404040: 5 6 7 8 3 \n"));
	assert_non_null(strstr(out, "          2   20202020: 9 3 \n"));
	assert_non_null(strstr(out, "pid:[4242] tid:[101]"));
	assert_non_null(strstr(out, "comm:[app]"));
	assert_non_null(strstr(out, "     1: 0x401030 M=1 hot /src/app.c:0 s=0\n"));
	assert_non_null(strstr(out, "     5: 0xffffffff81030000 M=2 ksys_write :0 s=0\n"));
	assert_non_null(strstr(out, "     9: 0x7f0000002000 M=3 libx.so+0x3000 :0 s=0\n"));
	/* pprof puts the main binary first and renumbers the rest */
	assert_non_null(strstr(out, "1: 0x400000/0x500000/0x0 /usr/bin/app "
				    "0123456789abcdef [FN]\n"));
	assert_non_null(strstr(out, "2: 0xffffffff81000100/0xffffffff81030001/0x0 "
				    "[kernel.kallsyms]"));
	assert_non_null(strstr(out, "3: 0x7f0000000000/0x7f0000010000/0x1000 /usr/lib/libx.so"));
	free(out);

	out = go_pprof(t, "-comments", t->path);
	assert_string_equal(out, "backend: bpf\nfrequency: 99 Hz\nlost: stack_map_full=3\n"
				 "lost: truncated_stacks=0\ncommand: app --run\n");
	free(out);
}

struct row {
	char name[128];
	long long self;
};

/* Rows "FLAT FLAT% SUM% CUM CUM% NAME" of `pprof -top`. */
static int parse_top(const char *out, struct row *rows, int max)
{
	const char *line = strstr(out, "flat  flat%");
	int nr = 0;

	assert_non_null(line);
	for (line = strchr(line, '\n'); line && *++line && nr < max; line = strchr(line, '\n')) {
		long long cum;

		if (sscanf(line, "%lld %*[0-9.]%% %*[0-9.]%% %lld %*[0-9.]%% %127[^\n]",
			   &rows[nr].self, &cum, rows[nr].name) == 3)
			nr++;
	}
	return nr;
}

/* Rows "SELF SELF% TOTAL% NAME MODULE" of the text summary. */
static int parse_text(const char *out, struct row *rows, int max)
{
	const char *line = strstr(out, "total%  function");
	int nr = 0;

	assert_non_null(line);
	for (line = strchr(line, '\n'); line && *++line && nr < max; line = strchr(line, '\n')) {
		if (sscanf(line, "%lld %*[0-9.]%% %*[0-9.]%% %127s", &rows[nr].self,
			   rows[nr].name) == 2)
			nr++;
	}
	return nr;
}

static char *text_summary(const struct tk_profile *p)
{
	/* on the heap: gcc takes a pointer into a local open_memstream buffer for a dangling one */
	struct {
		char *buf;
		size_t len;
	} *m = calloc(1, sizeof(*m));
	char *buf;
	FILE *f;

	assert_non_null(m);
	f = open_memstream(&m->buf, &m->len);
	assert_non_null(f);
	assert_int_equal(tk_profile__write_text(p, f, 20), 0);
	fclose(f);
	buf = m->buf;
	free(m);
	return buf;
}

static void test_go_top_agrees_with_text(void **state)
{
	struct t *t = *state;
	struct row top[32], text[32];
	int nr_top, nr_text, i;
	char *out, *summary;

	SKIP_WITHOUT_GO();
	write_file(t->p, t->path);
	out = go_pprof(t, "-top -sample_index=samples", t->path);
	assert_non_null(strstr(out, "Total samples = 106"));
	nr_top = parse_top(out, top, 32);
	free(out);
	summary = text_summary(t->p);
	nr_text = parse_text(summary, text, 32);
	free(summary);

	assert_int_equal(nr_top, 9);
	assert_string_equal(top[0].name, "hot");
	assert_int_equal(top[0].self, 75);
	assert_string_equal(top[1].name, "cold");
	assert_int_equal(top[1].self, 25);
	/* the same functions, the same self counts, in the same order */
	assert_int_equal(nr_text, nr_top);
	for (i = 0; i < nr_top; i++) {
		assert_string_equal(text[i].name, top[i].name);
		assert_int_equal(text[i].self, top[i].self);
	}

	/* the default sample type is CPU time: 75 samples of 10101010 ns */
	out = go_pprof(t, "-top", t->path);
	assert_non_null(strstr(out, "Type: cpu\n"));
	assert_non_null(strstr(out, "757.58ms"));
	free(out);
}

/*
 * C++-looking names: pprof would demangle "_Z" names and cut parameters and
 * template arguments, merging overloads, if they were their own system names.
 * They are shown as written, by pprof as in the text summary.
 */
static void test_go_cpp_names(void **state)
{
	static const struct {
		const char *name;
		int64_t count;
	} fns[] = {
		{ "ns::Foo::bar(int)", 30 },
		{ "ns::Foo::bar(long)", 20 },
		{ "std::vector<int>::push_back", 10 },
		{ "_ZN2ns3bazEv", 5 },
		{ "plain_c", 3 },
	};
	struct t *t = *state;
	struct tk_profile *p = tk_profile__new_cpu("bpf", 99);
	struct row top[16], text[16];
	int nr_top, nr_text, i;
	char *out, *summary;
	struct dec d;

	assert_non_null(p);
	for (i = 0; i < 5; i++) {
		int64_t v[2] = { fns[i].count, fns[i].count * p->period };
		uint64_t f = tk_profile__function(p, fns[i].name, NULL);
		uint64_t l = tk_profile__location(p, 0, 0x1000 + i, f, false);

		assert_int_equal(tk_profile__add_sample(p, &l, 1, v, 7, 7, "cc"), 0);
	}
	tk_profile__free(t->p);
	t->p = p;
	write_and_decode(t, &d);
	for (i = 0; i < 4; i++)
		assert_int_equal(d.functions[i].system_name, 0);
	assert_string_equal(dec_str(&d, d.functions[4].system_name), "plain_c");
	dec_free(&d);

	SKIP_WITHOUT_GO();
	out = go_pprof(t, "-top -sample_index=samples", t->path);
	nr_top = parse_top(out, top, 16);
	free(out);
	summary = text_summary(p);
	nr_text = parse_text(summary, text, 16);
	free(summary);
	assert_int_equal(nr_top, 5);
	assert_int_equal(nr_text, 5);
	for (i = 0; i < 5; i++) {
		assert_string_equal(top[i].name, fns[i].name);
		assert_int_equal(top[i].self, fns[i].count);
		assert_string_equal(text[i].name, fns[i].name);
		assert_int_equal(text[i].self, fns[i].count);
	}
}

/* A profile of 100k locations: written, decoded, and read by pprof in full. */
static void test_large(void **state)
{
	struct t *t = *state;
	struct tk_profile *p = tk_profile__new_cpu("bpf", 99);
	const int nr_locs = 100000, depth = 20;
	long long total = 0;
	uint64_t m, stack[20];
	struct dec d;
	char name[32];
	int i, j;

	assert_non_null(p);
	m = tk_profile__mapping(p, 0x400000, 0x1000000, 0, "/opt/big", NULL);
	for (i = 0; i < nr_locs; i++) {
		snprintf(name, sizeof(name), "f%d", i % 20000);
		assert_int_equal(tk_profile__location(p, m, 0x400000 + i * 16,
						      tk_profile__function(p, name, NULL), false),
				 i + 1);
	}
	for (i = 0; i < nr_locs / depth; i++) {
		int64_t v[2] = { 1 + i % 7, (1 + i % 7) * p->period };

		for (j = 0; j < depth; j++)
			stack[j] = (uint64_t)i * depth + j + 1;
		assert_int_equal(tk_profile__add_sample(p, stack, depth, v, 1, 1, "big"), 0);
		total += v[0];
	}
	tk_profile__free(t->p);
	t->p = p;
	write_and_decode(t, &d);
	assert_int_equal(d.nr_locations, nr_locs);
	assert_int_equal(d.nr_functions, 20000);
	assert_int_equal(d.nr_samples, nr_locs / depth);
	assert_int_equal(d.samples[4999].locs[19], nr_locs);
	dec_free(&d);

	if (have_go()) {
		char *out = go_pprof(t, "-top -sample_index=samples -nodecount=3", t->path);
		char want[64];

		snprintf(want, sizeof(want), "of %lld total", total);
		if (!strstr(out, want)) {
			print_error("no \"%s\" in:\n%s\n", want, out);
			fail();
		}
		free(out);
	}
}

/* A write error is reported, not swallowed. */
static void test_write_error(void **state)
{
	struct t *t = *state;
	FILE *f = fopen("/dev/full", "w");

	if (!f)
		skip();
	assert_int_equal(tk_profile__write_pprof(t->p, f), -EIO);
	fclose(f);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
	const struct CMUnitTest tests[] = {
		T(test_fields),
		T(test_kernel_apart),
		T(test_go_raw),
		T(test_go_top_agrees_with_text),
		T(test_go_cpp_names),
		T(test_large),
		T(test_write_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
