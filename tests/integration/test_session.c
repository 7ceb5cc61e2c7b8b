// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Sessions on the real kernel, as users meet them: docs/api.md's example
 * program (built against the public headers only) profiling a workload whose
 * answer is known, read back by go tool pprof; and the intervals every
 * collector now has (tracekit cpu -i), whose -o file still holds the whole run.
 */
#include <stdarg.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "spawn.h"

static char tmpdir[] = "/tmp/tk-session-test.XXXXXX";
static char out[1 << 16];

/* hot's share of the samples whose stacks hold hot or cold, from a folded file */
static double hot_share(const char *folded, unsigned long *total)
{
	unsigned long hot = 0, cold = 0, n;
	char line[8192], *sp;
	FILE *f = fopen(folded, "r");

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		sp = strrchr(line, ' ');
		if (!sp)
			continue;
		n = strtoul(sp + 1, NULL, 10);
		if (strstr(line, ";hot"))
			hot += n;
		else if (strstr(line, ";cold"))
			cold += n;
	}
	fclose(f);
	*total = hot + cold;
	return hot + cold ? (double)hot / (hot + cold) : 0;
}

static int count(const char *s, const char *needle)
{
	int n = 0;

	for (; (s = strstr(s, needle)); s += strlen(needle))
		n++;
	return n;
}

static void test_example_program(void **state)
{
	char cmd[4096];

	NEED_ROOT();
	snprintf(cmd, sizeof(cmd), "%s/examples/profile_cmd %s/ex.pb.gz %s 3 2>&1",
		 tk_test_build_dir(), tmpdir, tk_test_workload("cpu_split"));
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
	print_message("%s", strstr(out, "ended:") ? strstr(out, "ended:") : out);
	assert_true(count(out, "--- ") >= 2);
	assert_non_null(strstr(out, "ended: command exited"));
	/* what an embedder wrote, read by go tool pprof */
	snprintf(cmd, sizeof(cmd), "HOME=${HOME:-/tmp} PPROF_TMPDIR=%s go tool pprof -top "
		 "-nodecount=50 %s/ex.pb.gz 2>&1", tmpdir, tmpdir);
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
	assert_non_null(strstr(out, " hot"));
	assert_non_null(strstr(out, " cold"));
	assert_non_null(strstr(out, " main"));
}

static void test_cpu_intervals(void **state)
{
	char cmd[4096], folded[4200];
	unsigned long total, interval_sum;
	double share;
	int sections;

	NEED_ROOT();
	snprintf(folded, sizeof(folded), "%s/whole.folded", tmpdir);
	snprintf(cmd, sizeof(cmd), "%s/tracekit cpu -F 199 -i 1 -o %s -o - -- %s 3 2>/dev/null",
		 tk_test_build_dir(), folded, tk_test_workload("cpu_split"));
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
	sections = count(out, "--- ");
	print_message("%d interval reports\n", sections);
	assert_true(sections >= 2);
	/*
	 * Each report holds its interval only (about 1 s of one busy thread: at most
	 * ~260 samples at 199 Hz), not everything so far; their sum is at most the run.
	 */
	{
		unsigned long n, sum = 0;
		const char *p = out;
		int i;

		/* the interval reports come first, the whole run's summary (-o -) last */
		for (i = 0; i < sections && (p = strstr(p, "CPU profile: ")); i++) {
			n = strtoul(p + 13, NULL, 10);
			print_message("interval: %lu samples\n", n);
			assert_true(n <= 260);
			sum += n;
			p += 13;
		}
		interval_sum = sum;
	}
	/* every interval names the hot function */
	assert_true(count(out, " hot ") >= sections);
	/*
	 * The file is the whole run, not the last interval: one interval holds at
	 * most ~199 samples (1 s at 199 Hz), the 3 s run more (fewer than 597
	 * on a busy machine); hot 75 %.
	 */
	share = hot_share(folded, &total);
	print_message("whole run: %lu samples, hot share %.3f\n", total, share);
	assert_true(total >= 250);
	assert_true(interval_sum <= total + 10);
	assert_true(share > 0.65 && share < 0.85);
}

static void test_interval_usage(void **state)
{
	char cmd[4096];

	snprintf(cmd, sizeof(cmd), "%s/tracekit cpu -i 0 -d 1 2>&1", tk_test_build_dir());
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 2);
	assert_non_null(strstr(out, "invalid interval '0'"));
}

static int setup(void **state)
{
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) ? -1 : 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_example_program),
		cmocka_unit_test(test_cpu_intervals),
		cmocka_unit_test(test_interval_usage),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
