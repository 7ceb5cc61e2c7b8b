// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The streaming JSON writer: exact bytes for nesting, commas, empty
 * containers and escapes, every output accepted by a strict checker, and
 * misuse reported by tk_json__finish().
 */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../lib/fixture.h"
#include "core/json.h"

struct out {
	FILE *f;
	char *buf;
	size_t len;
	struct tk_json j;
};

static int setup(void **state)
{
	struct out *o = calloc(1, sizeof(*o));

	if (!o)
		return -1;
	o->f = open_memstream(&o->buf, &o->len);
	if (!o->f) {
		free(o);
		return -1;
	}
	*state = o;
	return 0;
}

static int teardown(void **state)
{
	struct out *o = *state;

	if (o->f)
		fclose(o->f);
	free(o->buf);
	free(o);
	return 0;
}

static struct tk_json *begin(void **state, bool pretty)
{
	struct out *o = *state;

	tk_json__init(&o->j, o->f, pretty);
	return &o->j;
}

/* Finish, close the stream; return tk_json__finish()'s answer, the text in o->buf. */
static int end(void **state)
{
	struct out *o = *state;
	int err = tk_json__finish(&o->j);

	fclose(o->f);
	o->f = NULL;
	return err;
}

static const char *text(void **state)
{
	return ((struct out *)*state)->buf;
}

static void assert_valid_json(const char *s)
{
	char why[128];

	if (fx_json_check(s, strlen(s), why, sizeof(why))) {
		print_error("invalid JSON (%s):\n%s\n", why, s);
		fail();
	}
}

static void test_empty_containers(void **state)
{
	struct tk_json *j = begin(state, false);

	tk_json__begin_object(j, NULL);
	tk_json__begin_object(j, "o");
	tk_json__end_object(j);
	tk_json__begin_array(j, "a");
	tk_json__end_array(j);
	tk_json__begin_array(j, "aa");
	tk_json__begin_array(j, NULL);
	tk_json__end_array(j);
	tk_json__begin_object(j, NULL);
	tk_json__end_object(j);
	tk_json__end_array(j);
	tk_json__end_object(j);
	assert_int_equal(end(state), 0);
	assert_string_equal(text(state), "{\"o\":{},\"a\":[],\"aa\":[[],{}]}\n");
	assert_valid_json(text(state));
}

static void test_empty_top_level(void **state)
{
	struct tk_json *j = begin(state, true);

	tk_json__begin_object(j, NULL);
	tk_json__end_object(j);
	assert_int_equal(end(state), 0);
	assert_string_equal(text(state), "{}\n");
}

static void test_nesting_and_commas_compact(void **state)
{
	struct tk_json *j = begin(state, false);

	tk_json__begin_object(j, NULL);
	tk_json__int(j, "a", 1);
	tk_json__begin_array(j, "b");
	tk_json__int(j, NULL, 1);
	tk_json__int(j, NULL, 2);
	tk_json__begin_object(j, NULL);
	tk_json__bool(j, "c", true);
	tk_json__null(j, "d");
	tk_json__end_object(j);
	tk_json__end_array(j);
	tk_json__bool(j, "e", false);
	tk_json__string(j, "f", "x");
	tk_json__string(j, "g", NULL);
	tk_json__end_object(j);
	assert_int_equal(end(state), 0);
	assert_string_equal(text(state),
			    "{\"a\":1,\"b\":[1,2,{\"c\":true,\"d\":null}],\"e\":false,"
			    "\"f\":\"x\",\"g\":null}\n");
	assert_valid_json(text(state));
}

static void test_nesting_pretty(void **state)
{
	struct tk_json *j = begin(state, true);

	tk_json__begin_object(j, NULL);
	tk_json__string(j, "schema", "x/1");
	tk_json__begin_array(j, "list");
	tk_json__int(j, NULL, 1);
	tk_json__begin_object(j, NULL);
	tk_json__uint(j, "n", 2);
	tk_json__end_object(j);
	tk_json__end_array(j);
	tk_json__begin_object(j, "empty");
	tk_json__end_object(j);
	tk_json__begin_array(j, "none");
	tk_json__end_array(j);
	tk_json__end_object(j);
	assert_int_equal(end(state), 0);
	assert_string_equal(text(state), "{\n"
					 "  \"schema\": \"x/1\",\n"
					 "  \"list\": [\n"
					 "    1,\n"
					 "    {\n"
					 "      \"n\": 2\n"
					 "    }\n"
					 "  ],\n"
					 "  \"empty\": {},\n"
					 "  \"none\": []\n"
					 "}\n");
	assert_valid_json(text(state));
}

static void test_escaping(void **state)
{
	struct tk_json *j = begin(state, false);

	tk_json__begin_object(j, NULL);
	tk_json__string(j, "q", "say \"hi\"");
	tk_json__string(j, "b", "C:\\dir\\");
	tk_json__string(j, "ws", "a\nb\tc\rd");
	tk_json__string(j, "ctl", "\x01\b\f\x1f\x7f");
	tk_json__string(j, "slash", "/sys/fs");
	tk_json__string(j, "utf8", "n\xc3\xa4\xe2\x82\xac");
	tk_json__string(j, "k\"e\\y\n", "");
	tk_json__end_object(j);
	assert_int_equal(end(state), 0);
	assert_string_equal(text(state),
			    "{\"q\":\"say \\\"hi\\\"\","
			    "\"b\":\"C:\\\\dir\\\\\","
			    "\"ws\":\"a\\nb\\tc\\rd\","
			    "\"ctl\":\"\\u0001\\u0008\\u000c\\u001f\\u007f\","
			    "\"slash\":\"/sys/fs\","
			    "\"utf8\":\"n\xc3\xa4\xe2\x82\xac\","
			    "\"k\\\"e\\\\y\\n\":\"\"}\n");
	assert_valid_json(text(state));
}

/* Every byte from 1 to 127 goes through, and the result parses. */
static void test_escaping_every_ascii_byte(void **state)
{
	struct tk_json *j = begin(state, true);
	char all[128];
	int i;

	for (i = 1; i < 128; i++)
		all[i - 1] = (char)i;
	all[127] = '\0';
	tk_json__begin_array(j, NULL);
	tk_json__string(j, NULL, all);
	tk_json__end_array(j);
	assert_int_equal(end(state), 0);
	assert_valid_json(text(state));
	/* no raw control character reached the output except the newlines of pretty */
	for (i = 0; text(state)[i]; i++)
		assert_true((unsigned char)text(state)[i] >= 0x20 || text(state)[i] == '\n');
}

static void test_numbers(void **state)
{
	struct tk_json *j = begin(state, false);

	tk_json__begin_array(j, NULL);
	tk_json__int(j, NULL, INT64_MIN);
	tk_json__int(j, NULL, INT64_MAX);
	tk_json__uint(j, NULL, UINT64_MAX);
	tk_json__int(j, NULL, 0);
	tk_json__double(j, NULL, 1.5);
	tk_json__double(j, NULL, -0.25);
	tk_json__double(j, NULL, NAN);
	tk_json__double(j, NULL, INFINITY);
	tk_json__double(j, NULL, -INFINITY);
	tk_json__end_array(j);
	assert_int_equal(end(state), 0);
	assert_string_equal(text(state), "[-9223372036854775808,9223372036854775807,"
					 "18446744073709551615,0,1.500,-0.250,null,null,null]\n");
	assert_valid_json(text(state));
}

static void test_top_level_scalar(void **state)
{
	struct tk_json *j = begin(state, true);

	tk_json__string(j, NULL, "alone");
	assert_int_equal(end(state), 0);
	assert_string_equal(text(state), "\"alone\"\n");
}

static void test_deepest_nesting_allowed(void **state)
{
	struct tk_json *j = begin(state, false);
	int i;

	for (i = 0; i < TK_JSON_MAX_DEPTH - 1; i++)
		tk_json__begin_array(j, NULL);
	for (i = 0; i < TK_JSON_MAX_DEPTH - 1; i++)
		tk_json__end_array(j);
	assert_int_equal(end(state), 0);
	assert_int_equal(strlen(text(state)), 2 * (TK_JSON_MAX_DEPTH - 1) + 1);
	assert_valid_json(text(state));
}

/* ---- misuse -------------------------------------------------------------- */

static void test_misuse_unclosed(void **state)
{
	struct tk_json *j = begin(state, false);

	tk_json__begin_object(j, NULL);
	tk_json__begin_array(j, "a");
	tk_json__end_array(j);
	assert_int_equal(end(state), -EINVAL);
}

static void test_misuse_extra_close(void **state)
{
	struct tk_json *j = begin(state, false);

	tk_json__begin_object(j, NULL);
	tk_json__end_object(j);
	tk_json__end_object(j);
	assert_int_equal(end(state), -EINVAL);
}

static void test_misuse_close_without_open(void **state)
{
	struct tk_json *j = begin(state, false);

	tk_json__end_array(j);
	assert_int_equal(end(state), -EINVAL);
}

static void test_misuse_too_deep(void **state)
{
	struct tk_json *j = begin(state, false);
	int i;

	for (i = 0; i < TK_JSON_MAX_DEPTH; i++)
		tk_json__begin_object(j, i ? "k" : NULL);
	for (i = 0; i < TK_JSON_MAX_DEPTH; i++)
		tk_json__end_object(j);
	assert_int_equal(end(state), -EINVAL);
}

/* The first error is the one reported. */
static void test_misuse_error_is_sticky(void **state)
{
	struct tk_json *j = begin(state, false);

	tk_json__end_object(j);
	tk_json__begin_object(j, NULL);
	tk_json__end_object(j);
	assert_int_equal(j->err, -EINVAL);
	assert_int_equal(end(state), -EINVAL);
}

static void test_misuse_mismatched_close(void **state)
{
	struct tk_json *j = begin(state, false);

	tk_json__begin_object(j, NULL);
	tk_json__begin_array(j, "a");
	tk_json__end_object(j);
	tk_json__end_array(j);
	assert_int_equal(end(state), -EINVAL);
}

static void test_misuse_member_without_key(void **state)
{
	struct tk_json *j = begin(state, false);

	tk_json__begin_object(j, NULL);
	tk_json__int(j, NULL, 1);
	tk_json__end_object(j);
	assert_int_equal(end(state), -EINVAL);
}

static void test_misuse_key_in_array(void **state)
{
	struct tk_json *j = begin(state, false);

	tk_json__begin_array(j, NULL);
	tk_json__int(j, "k", 1);
	tk_json__end_array(j);
	assert_int_equal(end(state), -EINVAL);
}

static void test_misuse_two_top_level_values(void **state)
{
	struct tk_json *j = begin(state, false);

	tk_json__begin_object(j, NULL);
	tk_json__end_object(j);
	tk_json__begin_object(j, NULL);
	tk_json__end_object(j);
	assert_int_equal(end(state), -EINVAL);
}

/* A failed write is -EIO (an unbuffered stream, so the error shows at once). */
static void test_write_error(void **state)
{
	struct tk_json j;
	FILE *f = fopen("/dev/full", "w");

	if (!f)
		skip();
	setvbuf(f, NULL, _IONBF, 0);
	tk_json__init(&j, f, false);
	tk_json__begin_object(&j, NULL);
	tk_json__string(&j, "k", "v");
	tk_json__end_object(&j);
	assert_int_equal(tk_json__finish(&j), -EIO);
	fclose(f);
}

/* The checker the other tests rely on must reject what is not JSON. */
static void test_checker_rejects(void **state)
{
	static const char *const bad[] = {
		"", "{", "{}}", "{\"a\"}", "{\"a\":1,}", "[1,]", "[01]", "[1.]", "[.5]",
		"{\"a\":1,\"a\":2}", "\"\x01\"", "\"\\x\"", "\"\\ud800\"", "\"\xc3\"",
		"\"\xc0\xaf\"", "{}{}", "[1]x", "nul", "{1:2}", "[\"a\":1]", "{\"a\":1]",
		"\"abc", "-", "[1e]",
	};
	static const char *const good[] = {
		"{}", "[]", "0", "-0.5e+3", "\"\\ud83d\\ude00\"", " [ true , false , null ] ",
		"{\"a\":{\"a\":[{\"a\":1}]}}", "\"\xf0\x9f\x98\x80\"",
	};
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (!fx_json_check(bad[i], strlen(bad[i]), NULL, 0)) {
			print_error("accepted: %s\n", bad[i]);
			fail();
		}
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		assert_valid_json(good[i]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
		T(test_empty_containers),
		T(test_empty_top_level),
		T(test_nesting_and_commas_compact),
		T(test_nesting_pretty),
		T(test_escaping),
		T(test_escaping_every_ascii_byte),
		T(test_numbers),
		T(test_top_level_scalar),
		T(test_deepest_nesting_allowed),
		T(test_misuse_unclosed),
		T(test_misuse_extra_close),
		T(test_misuse_close_without_open),
		T(test_misuse_too_deep),
		T(test_misuse_error_is_sticky),
		T(test_misuse_mismatched_close),
		T(test_misuse_member_without_key),
		T(test_misuse_key_in_array),
		T(test_misuse_two_top_level_values),
		T(test_write_error),
		T(test_checker_rejects),
#undef T
	};

	return cmocka_run_group_tests_name("json", tests, NULL, NULL);
}
