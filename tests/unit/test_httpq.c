// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* serve's query parser (core/httpq.c): splitting, decoding, and a capture's parameters. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "core/httpq.h"

static struct tk_httpq q;
static char why[256];

static int parse(const char *s)
{
	why[0] = 0;
	return tk_httpq__parse(s, strlen(s), &q, why, sizeof(why));
}

static void test_split_decode(void **state)
{
	assert_int_equal(parse("a=1&&b=x%2Fy+z&c&d=&e=%41%62"), 0);
	assert_int_equal(q.n, 5);
	assert_string_equal(q.key[0], "a");
	assert_string_equal(q.val[0], "1");
	assert_string_equal(tk_httpq__get(&q, "b"), "x/y z");
	assert_string_equal(tk_httpq__get(&q, "c"), "");
	assert_string_equal(tk_httpq__get(&q, "d"), "");
	assert_string_equal(tk_httpq__get(&q, "e"), "Ab");
	assert_null(tk_httpq__get(&q, "f"));
	/* "=" inside a value is the value's */
	assert_int_equal(parse("k=a=b"), 0);
	assert_string_equal(q.val[0], "a=b");
	assert_int_equal(parse(""), 0);
	assert_int_equal(q.n, 0);
	assert_int_equal(parse("&&&"), 0);
	assert_int_equal(q.n, 0);
}

static void test_refused(void **state)
{
	char big[TK_HTTPQ_MAX_LEN + 2];
	int i, n = 0;

	assert_int_equal(parse("a=%4"), -EINVAL);
	assert_non_null(strstr(why, "cut short"));
	assert_int_equal(parse("a=%"), -EINVAL);
	assert_int_equal(parse("a=%zz"), -EINVAL);
	assert_int_equal(parse("a=%00"), -EINVAL);	/* NUL */
	assert_non_null(strstr(why, "control character"));
	assert_int_equal(parse("a=%0a"), -EINVAL);
	assert_int_equal(parse("=1"), -EINVAL);
	assert_non_null(strstr(why, "without a name"));
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	assert_int_equal(parse(big), -EINVAL);
	for (i = 0; i <= TK_HTTPQ_MAX_PAIRS; i++)
		n += snprintf(big + n, sizeof(big) - (size_t)n, "k=%d&", i);
	assert_int_equal(parse(big), -EINVAL);
	assert_non_null(strstr(why, "more than"));
	/* exactly the limit is taken, and the buffer holds it all */
	n = 0;
	for (i = 0; i < TK_HTTPQ_MAX_PAIRS; i++)
		n += snprintf(big + n, sizeof(big) - (size_t)n, "k%d=%d&", i, i);
	assert_int_equal(parse(big), 0);
	assert_int_equal(q.n, TK_HTTPQ_MAX_PAIRS);
	assert_string_equal(q.val[TK_HTTPQ_MAX_PAIRS - 1], "79");
}

static int args(const char *s, enum tk_httpq_kind kind, struct tk_capture_args *a)
{
	assert_int_equal(parse(s), 0);
	why[0] = 0;
	return tk_httpq__capture_args(&q, kind, a, why, sizeof(why));
}

static void test_profile_args(void **state)
{
	struct tk_capture_args a;

	assert_int_equal(args("", TK_HTTPQ_PROFILE, &a), 0);
	assert_int_equal(a.seconds, 30);
	assert_int_equal(a.nr_pids, 0);
	assert_int_equal(args("seconds=5&pid=10&pid=11&hz=499&off_cpu=1&cgroup=%2Fsys%2Ffs%2Fcgroup"
			      "%2Fx&debug=0", TK_HTTPQ_PROFILE, &a), 0);
	assert_int_equal(a.seconds, 5);
	assert_int_equal(a.nr_pids, 2);
	assert_int_equal(a.pids[1], 11);
	assert_int_equal(a.freq_hz, 499);
	assert_true(a.off_cpu);
	assert_string_equal(a.cgroup, "/sys/fs/cgroup/x");

	assert_int_equal(args("seconds=0", TK_HTTPQ_PROFILE, &a), -EINVAL);
	assert_non_null(strstr(why, "invalid seconds"));
	assert_int_equal(args("seconds=3601", TK_HTTPQ_PROFILE, &a), -EINVAL);
	assert_int_equal(args("seconds=1.5", TK_HTTPQ_PROFILE, &a), -EINVAL);
	assert_int_equal(args("seconds=+5", TK_HTTPQ_PROFILE, &a), -EINVAL);
	assert_int_equal(args("seconds=", TK_HTTPQ_PROFILE, &a), -EINVAL);
	assert_int_equal(args("seconds=5&seconds=6", TK_HTTPQ_PROFILE, &a), -EINVAL);
	assert_non_null(strstr(why, "twice"));
	assert_int_equal(args("pid=-1", TK_HTTPQ_PROFILE, &a), -EINVAL);
	assert_int_equal(args("pid=5&pid=5", TK_HTTPQ_PROFILE, &a), -EINVAL);
	assert_int_equal(args("hz=0", TK_HTTPQ_PROFILE, &a), -EINVAL);
	assert_int_equal(args("off_cpu=yes", TK_HTTPQ_PROFILE, &a), -EINVAL);
	assert_int_equal(args("cgroup=relative", TK_HTTPQ_PROFILE, &a), -EINVAL);
	assert_int_equal(args("cgroup=%2Fa%2F..%2Fb", TK_HTTPQ_PROFILE, &a), -EINVAL);
	assert_int_equal(args("debug=1", TK_HTTPQ_PROFILE, &a), -EINVAL);
	assert_non_null(strstr(why, "binary"));
	assert_int_equal(args("mode=growth", TK_HTTPQ_PROFILE, &a), -EINVAL);
	assert_non_null(strstr(why, "unknown parameter 'mode'"));
	assert_int_equal(args("bogus=1", TK_HTTPQ_PROFILE, &a), -EINVAL);
}

static void test_heap_args(void **state)
{
	struct tk_capture_args a;

	assert_int_equal(args("pid=42", TK_HTTPQ_HEAP, &a), 0);
	assert_int_equal(a.pids[0], 42);
	assert_int_equal(a.seconds, 30);
	assert_false(a.growth);
	assert_int_equal(args("pid=42&seconds=2&mode=growth&gc=1", TK_HTTPQ_HEAP, &a), 0);
	assert_true(a.growth);
	assert_int_equal(a.seconds, 2);
	assert_int_equal(args("seconds=2", TK_HTTPQ_HEAP, &a), -EINVAL);
	assert_non_null(strstr(why, "pid=PID"));
	assert_int_equal(args("pid=1&pid=2", TK_HTTPQ_HEAP, &a), -EINVAL);
	assert_int_equal(args("pid=1&mode=full", TK_HTTPQ_HEAP, &a), -EINVAL);
	assert_int_equal(args("pid=1&cgroup=%2Fx", TK_HTTPQ_HEAP, &a), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_split_decode),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_profile_args),
		cmocka_unit_test(test_heap_args),
	};

	return cmocka_run_group_tests_name("httpq", tests, NULL, NULL);
}
