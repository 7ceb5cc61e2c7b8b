// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tracekit numa end to end, as a user runs it, on the running kernel: the
 * backend the capability report chose, the parts it could not see named
 * (compared with what 'tracekit caps' says of fentry and kprobes), the vmstat
 * fallback under a seccomp filter that denies bpf(2), intervals, the end when
 * the -p processes exit, and the command line's errors and exit codes.
 * (Migrations with a known count, on two nodes, are test_numa_bpf's.)
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stdarg.h>
#include <setjmp.h>
#include <cmocka.h>

#include "fixture.h"
#include "spawn.h"

static char tmpdir[] = "/tmp/tk-numa-test.XXXXXX";
static char out[1 << 20];

/* a file in this test's temporary directory */
#define path_in_tmp(name) tk_test_path(tmpdir, name)

/* jq -e @filter on @file: true when it holds */
static bool jq_file(const char *file, const char *filter)
{
	char cmd[2048], res[512];
	int rc;

	snprintf(cmd, sizeof(cmd), "jq -e '%s' %s 2>&1", filter, file);
	rc = tk_test_capture(cmd, res, sizeof(res));
	if (rc)
		print_error("jq '%s' on %s: %d: %s\n", filter, file, rc, res);
	return rc == 0;
}

static void save(const char *file, const char *text)
{
	FILE *f = fopen(file, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* The capability report of this machine, as JSON in @file. */
static void caps_json(const char *file)
{
	char *args[] = { "caps", "--json", NULL };

	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	save(file, out);
}

static void test_help(void **state)
{
	static const char *const options[] = {
		"--pid", "--cgroup", "--duration", "--interval", "--stacks", "--output",
		"--format", "--json", "--backend", "--top", "--verbose", "--help", "Exit codes",
	};
	char *args[] = { "numa", "--help", NULL };
	char *main_help[] = { "--help", NULL };
	const char *line;
	size_t i;

	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	for (i = 0; i < sizeof(options) / sizeof(options[0]); i++)
		assert_non_null(strstr(out, options[i]));
	assert_true(fx_longest_line(out, &line) <= 80);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, main_help), 0);
	assert_non_null(strstr(out, "  numa "));
}

static void test_cli_errors(void **state)
{
	char *bad_d[] = { "numa", "-d", "0", NULL };
	char *bad_i[] = { "numa", "-i", "x", NULL };
	char *bad_backend[] = { "numa", "--backend", "perf", NULL };
	char *bad_format[] = { "numa", "--format", "svg", NULL };
	char *pprof_no_stacks[] = { "numa", "--format", "pprof", "-d", "1", NULL };
	char *pb_no_stacks[] = { "numa", "-o", "x.pb.gz", "-d", "1", NULL };
	char *bad_ext[] = { "numa", "-o", "x.unknown", NULL };
	char *stacks_vmstat[] = { "numa", "--stacks", "--backend", "vmstat", NULL };
	char *extra[] = { "numa", "-d", "1", "stray", NULL };
	char *unknown[] = { "numa", "--bogus", NULL };
	char *bad_top[] = { "numa", "--top", "0", NULL };
	char *bad_pid[] = { "numa", "-p", "-3", NULL };
	char *no_pid[] = { "numa", "-p", "2147483646", "-d", "1", NULL };
	char *bad_cgroup[] = { "numa", "--cgroup", "/tmp", "-d", "1", NULL };
	char *json_err[] = { "numa", "--json", "--backend", "perf", NULL };
	const char *link = path_in_tmp("link.json"), *victim = path_in_tmp("victim");
	char *to_link[] = { "numa", "-d", "0.2", "-o", (char *)link, NULL };
	char buf[4096];
	FILE *f;

	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, bad_d), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, bad_i), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, bad_backend), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, bad_format), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, pprof_no_stacks), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, pb_no_stacks), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, bad_ext), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, stacks_vmstat), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, extra), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, unknown), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, bad_top), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, bad_pid), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, no_pid), 1);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, bad_cgroup), 1);
	/* with --json, errors are JSON on stdout */
	assert_int_equal(tk_test_run_tracekit(buf, sizeof(buf), false, json_err), 2);
	assert_non_null(strstr(buf, "\"error\":\"numa: invalid backend 'perf'"));
	assert_int_equal(fx_json_check(buf, strlen(buf), NULL, 0), 0);

	/* -o to a symlink: refused, neither followed nor replaced */
	save(victim, "untouched\n");
	assert_int_equal(symlink(victim, link), 0);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, to_link), 1);
	f = fopen(victim, "r");
	assert_non_null(f);
	assert_non_null(fgets(buf, sizeof(buf), f));
	fclose(f);
	assert_string_equal(buf, "untouched\n");
	assert_int_equal(readlink(link, buf, sizeof(buf)), (ssize_t)strlen(victim));
}

/* On this host: exit 0, the backend the snapshot chose, the parts it lacks named. */
static void test_host_json(void **state)
{
	const char *json = path_in_tmp("host.json"), *caps = path_in_tmp("caps.json");
	char *args[] = { "numa", "-d", "2", "--json", NULL };
	char line[256];

	NEED_ROOT();
	caps_json(caps);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	save(json, out);
	assert_int_equal(fx_json_check(out, strlen(out), line, sizeof(line)), 0);
	/* the backend is the one 'tracekit caps' announced */
	snprintf(line, sizeof(line), ".backend == \"%s\"", strstr(out, "\"backend\":\"bpf\"") ?
		 "bpf" : "vmstat");
	assert_true(jq_file(json, line));
	assert_true(jq_file(caps, strstr(out, "\"backend\":\"bpf\"") ?
			    ".backends.numa.backend == \"bpf\"" :
			    ".backends.numa.backend == \"vmstat\""));
	assert_true(jq_file(json, ".duration_ns >= 1900000000 and .duration_ns < 10000000000"));
	assert_true(jq_file(json, "(.have | keys | length) == 8 and (.reasons | keys | length) "
				  "== 11 and (.missing | type) == \"array\""));
	/* a part not observed is null, never zeros */
	assert_true(jq_file(json, "[.have.pairs, .pairs == null] | .[0] != .[1]"));
	assert_true(jq_file(json, "[.have.processes, .processes == null] | .[0] != .[1]"));
	assert_true(jq_file(json, "[.have.latency, .latency == null] | .[0] != .[1]"));
	assert_true(jq_file(json, "[.have.skip_vma, .skip_vma == null] | .[0] != .[1]"));
	if (!strstr(out, "\"backend\":\"bpf\"")) {
		assert_true(jq_file(json, "any(.missing[]; test(\"need eBPF\"))"));
		return;
	}
	assert_true(jq_file(json, ".have.reasons and .have.sched and .attach != \"\""));
	/* what the kernel refuses is said: fentry refused here, kprobes not built */
	if (jq_file(caps, ".entries[\"bpf.prog.fentry\"].status != \"supported\"")) {
		assert_true(jq_file(json, "any(.missing[]; test(\"fentry\"))"));
		print_message("fentry refused here: the report says so\n");
	}
	if (jq_file(caps, ".entries[\"bpf.prog.kprobe\"].status != \"supported\""))
		assert_true(jq_file(json, "any(.missing[]; test(\"kprobe\"))"));
}

/* bpf(2) denied by seccomp: the capability report picks vmstat, and the run says so */
static void test_fallback_under_seccomp(void **state)
{
	const char *json = path_in_tmp("fallback.json");
	char *args[] = { "numa", "-d", "1", "-o", (char *)json, NULL };
	char *bpf_args[] = { "numa", "--backend", "bpf", "-d", "1", NULL };
	char *text_args[] = { "numa", "-d", "0.5", NULL };

	NEED_ROOT();
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), true, args), 0);
	assert_true(jq_file(json, ".backend == \"vmstat\" and .have.vmstat and "
				  "(.have.processes | not) and .processes == null"));
	assert_true(jq_file(json, "any(.missing[]; test(\"per process, per reason .* need "
				  "eBPF\"))"));
	assert_true(jq_file(json, ".numastat | length >= 1"));
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), true, text_args), 0);
	assert_non_null(strstr(out, "backend vmstat"));
	assert_non_null(strstr(out, "not seen: per process"));
	assert_true(fx_longest_line(out, NULL) <= 80);
	/* asking for bpf explicitly under the filter is a clear error */
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), true, bpf_args), 1);
}

static void test_interval(void **state)
{
	char *args[] = { "numa", "-d", "1.3", "-i", "0.5", "--backend", "vmstat", NULL };
	const char *p;
	int reports = 0;

	NEED_ROOT();
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	for (p = out; (p = strstr(p, "NUMA page migrations: ")); p++)
		reports++;
	/* two intervals (0.5 s each), then the total */
	assert_int_equal(reports, 3);
	assert_non_null(strstr(out, "--- 0.5 s\nNUMA page migrations: 0.5 s"));
	assert_non_null(strstr(out, "NUMA page migrations: 1.3 s"));
}

/* -p: the capture ends when the process exits, not at -d */
static void test_ends_with_pid(void **state)
{
	char pid[16];
	char *args[] = { "numa", "-p", pid, "-d", "30", "--backend", "vmstat", NULL };
	struct timespec a, b;
	pid_t child;

	NEED_ROOT();
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		execlp("sleep", "sleep", "1", (char *)NULL);
		_exit(127);
	}
	snprintf(pid, sizeof(pid), "%d", child);
	clock_gettime(CLOCK_MONOTONIC, &a);
	/* the child, once exited, stays a zombie until reaped: that counts as gone */
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	clock_gettime(CLOCK_MONOTONIC, &b);
	waitpid(child, NULL, 0);
	assert_true(b.tv_sec - a.tv_sec < 10);
	assert_non_null(strstr(out, "only these processes (-p)"));
}

static int setup(void **state)
{
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_help),
		cmocka_unit_test(test_cli_errors),
		cmocka_unit_test(test_host_json),
		cmocka_unit_test(test_fallback_under_seccomp),
		cmocka_unit_test(test_interval),
		cmocka_unit_test(test_ends_with_pid),
	};
	const char *filter = getenv("TK_TEST_FILTER");

	if (filter && *filter)
		cmocka_set_test_filter(filter);
	return cmocka_run_group_tests_name("numa", tests, setup, teardown);
}
