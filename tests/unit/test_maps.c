// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* tk_maps__parse(): /proc/PID/maps text, well-formed and broken. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/fsutil.h"
#include "proc/maps.h"

#define MAX_SEEN 16

struct seen {
	int n;
	struct tk_map m[MAX_SEEN];
	int stop_at;		/* return 42 at this mapping (1-based), 0: never */
};

static int collect(const struct tk_map *m, void *ctx)
{
	struct seen *s = ctx;

	if (s->n < MAX_SEEN)
		s->m[s->n] = *m;
	s->n++;
	return s->stop_at && s->n == s->stop_at ? 42 : 0;
}

static void test_parse_typical(void **state)
{
	static const char text[] =
		"55d4a2a00000-55d4a2a02000 r--p 00000000 08:01 1835023          /usr/bin/cat\n"
		"55d4a2a02000-55d4a2a07000 r-xp 00002000 08:01 1835023          /usr/bin/cat\n"
		"55d4a3c3e000-55d4a3c5f000 rw-p 00000000 00:00 0                          [heap]\n"
		"7f1c2a400000-7f1c2a428000 r--p 00000000 fd:1a 4026531 /opt/my app/x.so (deleted)\n"
		"7f1c2a600000-7f1c2a700000 rw-p 00000000 00:00 0 \n"
		"7f1c2a700000-7f1c2a701000 rw-s 00000000 00:05 7 [anon:tk buffer]\n"
		"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0        [vsyscall]";
	struct seen s = { 0 };

	assert_int_equal(tk_maps__parse(text, collect, &s), 0);
	assert_int_equal(s.n, 7);

	assert_int_equal(s.m[0].start, 0x55d4a2a00000ULL);
	assert_int_equal(s.m[0].end, 0x55d4a2a02000ULL);
	assert_string_equal(s.m[0].perms, "r--p");
	assert_int_equal(s.m[0].offset, 0);
	assert_int_equal(s.m[0].dev_major, 8);
	assert_int_equal(s.m[0].dev_minor, 1);
	assert_int_equal(s.m[0].inode, 1835023);
	assert_string_equal(s.m[0].path, "/usr/bin/cat");
	assert_false(s.m[0].deleted);
	assert_true(tk_map__is_file(&s.m[0]));

	assert_string_equal(s.m[1].perms, "r-xp");
	assert_int_equal(s.m[1].offset, 0x2000);

	assert_string_equal(s.m[2].path, "[heap]");
	assert_false(tk_map__is_file(&s.m[2]));

	/* spaces inside the path are kept, " (deleted)" is taken off */
	assert_string_equal(s.m[3].path, "/opt/my app/x.so");
	assert_true(s.m[3].deleted);
	assert_int_equal(s.m[3].dev_major, 0xfd);
	assert_int_equal(s.m[3].dev_minor, 0x1a);

	/* anonymous: no path at all */
	assert_string_equal(s.m[4].path, "");
	assert_int_equal(s.m[4].inode, 0);

	assert_string_equal(s.m[5].perms, "rw-s");
	assert_string_equal(s.m[5].path, "[anon:tk buffer]");

	/* last line without a newline, a 64-bit address at the top */
	assert_int_equal(s.m[6].start, 0xffffffffff600000ULL);
	assert_string_equal(s.m[6].path, "[vsyscall]");
}

static void test_parse_empty_and_blank(void **state)
{
	struct seen s = { 0 };

	assert_int_equal(tk_maps__parse("", collect, &s), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(tk_maps__parse("\n\n", collect, &s), 0);
	assert_int_equal(s.n, 0);
}

static void test_callback_stops(void **state)
{
	static const char text[] = "1000-2000 r--p 00000000 00:00 0\n"
				   "2000-3000 r--p 00000000 00:00 0\n"
				   "3000-4000 r--p 00000000 00:00 0\n";
	struct seen s = { .stop_at = 2 };

	assert_int_equal(tk_maps__parse(text, collect, &s), 42);
	assert_int_equal(s.n, 2);
}

static void test_malformed(void **state)
{
	static const char *const bad[] = {
		"garbage\n",
		"1000 r--p 00000000 00:00 0\n",			/* no end */
		"1000-2000\n",					/* cut short */
		"1000-2000 r--p\n",
		"1000-2000 r--p 00000000 00:00\n",		/* no inode */
		"1000-2000 r--p 00000000 0000 0\n",		/* no ':' in dev */
		"2000-1000 r--p 00000000 00:00 0\n",		/* end before start */
		"1000-2000 rq-p 00000000 00:00 0\n",		/* bad perms */
		"1000-2000 r--p 0000zz00 00:00 0\n",
		"1000-2000 r--p 00000000 00:00 12x /a\n",	/* junk after inode */
		"10000000000000000-10000000000000001 r--p 00000000 00:00 0\n", /* overflow */
		"1000-2000 r--p 00000000 100000000:00 0\n",	/* major > 32 bits */
		"-1000 r--p 00000000 00:00 0\n",
	};
	struct seen s = { 0 };
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		s.n = 0;
		if (tk_maps__parse(bad[i], collect, &s) != -EINVAL)
			fail_msg("accepted: %s", bad[i]);
		assert_int_equal(s.n, 0);
	}
	/* a good line before a bad one was already delivered */
	s.n = 0;
	assert_int_equal(tk_maps__parse("1000-2000 r--p 0 0:0 0\nbad\n", collect, &s), -EINVAL);
	assert_int_equal(s.n, 1);
}

static void test_path_too_long(void **state)
{
	size_t n = sizeof(((struct tk_map *)0)->path) + 10, head;
	struct seen s = { 0 };
	char *text = malloc(n + 64);

	assert_non_null(text);
	head = sprintf(text, "1000-2000 r--p 00000000 00:00 5 /");
	memset(text + head, 'a', n);
	text[head + n] = '\0';
	assert_int_equal(tk_maps__parse(text, collect, &s), -ENAMETOOLONG);
	free(text);
}

static void test_parse_line_not_terminated(void **state)
{
	/* only @len bytes count, the rest must not be read as part of the path */
	static const char buf[] = "1000-2000 r-xp 00000010 08:02 77 /lib/a.soXXXX";
	struct tk_map m;

	assert_int_equal(tk_maps__parse_line(buf, sizeof(buf) - 1 - 4, &m), 0);
	assert_string_equal(m.path, "/lib/a.so");
	assert_int_equal(m.offset, 0x10);
	assert_int_equal(m.inode, 77);
	/* an embedded NUL is not a path */
	assert_int_equal(tk_maps__parse_line("1000-2000 r-xp 0 0:0 1 /a\0b", 27, &m), -EINVAL);
}

struct self_ctx {
	char exe[4096];
	int exe_maps;
	int exec_maps;
	uint64_t probe;
	bool probe_found;
};

static int self_cb(const struct tk_map *m, void *ctx)
{
	struct self_ctx *c = ctx;

	assert_true(m->start < m->end);
	if (!strcmp(m->path, c->exe)) {
		c->exe_maps++;
		if (m->perms[2] == 'x')
			c->exec_maps++;
	}
	if (c->probe >= m->start && c->probe < m->end && m->perms[2] == 'x' &&
	    !strcmp(m->path, c->exe))
		c->probe_found = true;
	return 0;
}

/* The real thing: our own maps hold our executable, and our code is in it. */
static void test_parse_self(void **state)
{
	struct self_ctx c = { 0 };
	char *text = NULL;
	ssize_t n;

	n = readlink("/proc/self/exe", c.exe, sizeof(c.exe) - 1);
	assert_true(n > 0);
	c.exe[n] = '\0';
	c.probe = (uint64_t)(uintptr_t)&test_parse_self;
	assert_int_equal(tk_read_file_alloc("/proc", "self/maps", 64 << 20, &text, NULL), 0);
	assert_int_equal(tk_maps__parse(text, self_cb, &c), 0);
	free(text);
	assert_true(c.exe_maps >= 2);
	assert_true(c.exec_maps >= 1);
	assert_true(c.probe_found);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_typical),
		cmocka_unit_test(test_parse_empty_and_blank),
		cmocka_unit_test(test_callback_stops),
		cmocka_unit_test(test_malformed),
		cmocka_unit_test(test_path_too_long),
		cmocka_unit_test(test_parse_line_not_terminated),
		cmocka_unit_test(test_parse_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
