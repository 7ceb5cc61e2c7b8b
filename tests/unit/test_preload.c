// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The two libraries `tracekit alloc -- CMD` preloads, seen from outside:
 * build/workloads/preload_check runs under them and reports.
 *
 * libtkalloc.so (with TK_ALLOC_TEST_COUNTS=1 its markers log what they are
 * called with): without a valid TK_ALLOC_SAMPLE_BYTES nothing is sampled; the
 * number of sampled blocks is binomial with p = 1 - exp(-size / mean) (checked
 * at 6 sigma); a sampled block gets one free marker and no other block does,
 * across realloc, threads and fork; the estimate from the samples is within
 * 10 % of the bytes allocated; errno is the allocator's; under jemalloc the
 * blocks are jemalloc's.
 *
 * libtkagent.so, with this test in tracekit's place on the socket: the hold
 * keeps main from running until 'G' (or EOF), the TK_AGENT_* variables are
 * gone and the descriptor is close-on-exec in the command, a dump request
 * writes a jemalloc heap profile (ENOENT without jemalloc), and the agent's
 * thread does not keep the command from exiting.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "need.h"

#include "../lib/spawn.h"

extern char **environ;

#define JEMALLOC "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"

static char sampler[PATH_MAX], agent[PATH_MAX], check[PATH_MAX];

/* Absolute paths of what the test runs; false (and a message) when missing. */
static bool find_build(void)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/libtkalloc.so", tk_test_build_dir());
	if (!realpath(p, sampler))
		goto missing;
	snprintf(p, sizeof(p), "%s/libtkagent.so", tk_test_build_dir());
	if (!realpath(p, agent))
		goto missing;
	snprintf(p, sizeof(p), "%s/workloads/preload_check", tk_test_build_dir());
	if (!realpath(p, check))
		goto missing;
	return true;
missing:
	print_message("%s: missing, run make\n", p);
	return false;
}

static int setup(void **state)
{
	return find_build() ? 0 : -1;
}

static bool have_jemalloc(void)
{
	if (access(JEMALLOC, R_OK) == 0)
		return true;
	print_message("skip: no %s (apt-get install libjemalloc2)\n", JEMALLOC);
	return false;
}

/*
 * Run preload_check ARGS with the environment assignments @env ("A=1 B=2"),
 * bounded by timeout(1); its stdout in @out. Returns its exit status.
 */
static int run_check(const char *env, const char *args, char *out, size_t out_sz)
{
	char cmd[PATH_MAX * 4];

	snprintf(cmd, sizeof(cmd),
		 "env -u LD_PRELOAD -u TK_ALLOC_SAMPLE_BYTES %s timeout 120 %s %s", env, check,
		 args);
	return tk_test_capture(cmd, out, out_sz);
}

/* Under the sampler with mean @mean ("" for none): the exit status. */
static int run_sampled(const char *mean, const char *args, bool jemalloc, char *out, size_t out_sz)
{
	char env[PATH_MAX * 3];

	snprintf(env, sizeof(env), "LD_PRELOAD='%s%s%s' TK_ALLOC_TEST_COUNTS=1%s%s", sampler,
		 jemalloc ? " " : "", jemalloc ? JEMALLOC : "",
		 *mean ? " TK_ALLOC_SAMPLE_BYTES=" : "", mean);
	return run_check(env, args, out, out_sz);
}

/* The number after "@key=" in @text; fails the test when absent. */
static double kv(const char *text, const char *key)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), "%s=", key);
	for (p = text; (p = strstr(p, pat)); p++)
		if (p == text || p[-1] == ' ' || p[-1] == '\n')
			return strtod(p + strlen(pat), NULL);
	fail_msg("no %s= in: %s", key, text);
	return 0;
}

/* Binomial count @k of @n trials with probability @p, within 6 sigma. */
static void assert_binomial(double k, double n, double p)
{
	double mu = n * p, sigma = sqrt(n * p * (1 - p));

	if (fabs(k - mu) > 6 * sigma + 1)
		fail_msg("%.0f sampled, expected %.1f +- 6 * %.1f", k, mu, sigma);
}

static void test_off_without_mean(void **state)
{
	static const char *const means[] = { "", "0", "abc", "-5", "12x", "99999999999999999999" };
	char out[4096];
	size_t i;

	for (i = 0; i < sizeof(means) / sizeof(means[0]); i++) {
		char env[PATH_MAX * 2];

		snprintf(env, sizeof(env), "LD_PRELOAD='%s' TK_ALLOC_TEST_COUNTS=1 %s%s", sampler,
			 i ? "TK_ALLOC_SAMPLE_BYTES=" : "", means[i]);
		assert_int_equal(run_check(env, "off", out, sizeof(out)), 0);
		if (!strstr(out, "log=1 mean=0 alloc=0 free=0"))
			fail_msg("TK_ALLOC_SAMPLE_BYTES='%s': %s", means[i], out);
	}
}

/* N blocks of one size: binomial count, one free marker per sampled block. */
static void count_case(const char *mean, long n, size_t size)
{
	char out[4096], args[64];
	double p = 1 - exp(-(double)size / atof(mean));

	snprintf(args, sizeof(args), "count %ld %zu", n, size);
	assert_int_equal(run_sampled(mean, args, false, out, sizeof(out)), 0);
	assert_int_equal(kv(out, "bad"), 0);
	assert_true(kv(out, "free") == kv(out, "sampled"));
	assert_binomial(kv(out, "sampled"), (double)n, p);
}

static void test_count_binomial(void **state)
{
	count_case("4096", 20000, 1024);
	count_case("4096", 20000, 100);
	count_case("524288", 20000, 65536);
}

static void estimate_case(const char *mean, bool jemalloc)
{
	char out[4096];
	double truth, est;

	assert_int_equal(run_sampled(mean, "estimate 200000", jemalloc, out, sizeof(out)), 0);
	truth = kv(out, "true");
	est = kv(out, "estimate");
	if (fabs(est - truth) > 0.1 * truth)
		fail_msg("estimate %.0f, true %.0f: %s", est, truth, out);
}

static void test_estimate_unbiased(void **state)
{
	estimate_case("4096", false);
	estimate_case("65536", false);
}

static void test_apis(void **state)
{
	char out[8192];
	int rc = run_sampled("1", "apis", false, out, sizeof(out));

	if (rc || !strstr(out, "apis=ok"))
		fail_msg("status %d: %s", rc, out);
}

/* What a uprobe's frame-pointer walk from a marker's entry finds first: the caller. */
static void test_frames(void **state)
{
	char out[8192];
	int rc = run_sampled("1", "frames", false, out, sizeof(out));

	if (rc || !strstr(out, "frames=ok"))
		fail_msg("status %d: %s", rc, out);
	if (!have_jemalloc())
		return;
	rc = run_sampled("1", "frames", true, out, sizeof(out));
	if (rc || !strstr(out, "frames=ok"))
		fail_msg("under jemalloc: status %d: %s", rc, out);
}

static void test_realloc_moves(void **state)
{
	char out[8192];
	int rc = run_sampled("1", "realloc", false, out, sizeof(out));

	if (rc || !strstr(out, "realloc=ok"))
		fail_msg("status %d: %s", rc, out);
}

static void test_errno_kept(void **state)
{
	static const char *const means[] = { "", "1", "4096", "524288" };
	char out[8192];
	size_t i;

	for (i = 0; i < sizeof(means) / sizeof(means[0]); i++) {
		int rc = run_sampled(means[i], "errno", false, out, sizeof(out));

		if (rc || !strstr(out, "errno=ok"))
			fail_msg("mean '%s': status %d: %s", means[i], rc, out);
	}
}

static void test_threads(void **state)
{
	char out[8192];
	double p = 0;
	int rc, k;

	/* 4 threads x 4 rounds x 5000 blocks of 256..263 bytes */
	rc = run_sampled("4096", "threads 4 5000 256", false, out, sizeof(out));
	if (rc)
		fail_msg("status %d: %s", rc, out);
	for (k = 0; k < 8; k++)
		p += (1 - exp(-(256.0 + k) / 4096)) / 8;
	assert_true(kv(out, "alloc") == kv(out, "free"));
	assert_binomial(kv(out, "alloc"), 80000, p);
}

static void test_fork(void **state)
{
	char out[8192];
	int rc = run_sampled("1", "fork", false, out, sizeof(out));

	if (rc || !strstr(out, "fork=ok"))
		fail_msg("status %d: %s", rc, out);
	/* a child forked while another thread holds the set's lock does not hang */
	rc = run_sampled("1", "forkstress", false, out, sizeof(out));
	if (rc || !strstr(out, "forkstress=ok"))
		fail_msg("forkstress: status %d: %s", rc, out);
}

/* ld.so, dlsym and a shell start and run under the sampler. */
static void test_starts(void **state)
{
	char cmd[PATH_MAX * 2], out[256];

	snprintf(cmd, sizeof(cmd),
		 "LD_PRELOAD='%s' TK_ALLOC_SAMPLE_BYTES=1 sh -c 'x=$(echo ok); echo $x'", sampler);
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
	assert_string_equal(out, "ok\n");
}

static void test_jemalloc_kept(void **state)
{
	char out[8192];
	int rc;

	NEED_DEP(have_jemalloc(), "no %s (apt-get install libjemalloc2)\n", JEMALLOC);
	rc = run_sampled("1", "jemalloc", true, out, sizeof(out));
	if (rc || !strstr(out, "jemalloc=ok"))
		fail_msg("status %d: %s", rc, out);
	rc = run_sampled("1", "apis", true, out, sizeof(out));
	if (rc || !strstr(out, "apis=ok"))
		fail_msg("apis under jemalloc: status %d: %s", rc, out);
	rc = run_sampled("1", "realloc", true, out, sizeof(out));
	if (rc || !strstr(out, "realloc=ok"))
		fail_msg("realloc under jemalloc: status %d: %s", rc, out);
	rc = run_sampled("4096", "errno", true, out, sizeof(out));
	if (rc || !strstr(out, "errno=ok"))
		fail_msg("errno under jemalloc: status %d: %s", rc, out);
	estimate_case("4096", true);
}

/* ---- libtkagent.so ---------------------------------------------------------- */

struct child {
	pid_t pid;
	int sock;		/* tracekit's end */
	int in;			/* the child's stdin */
	int out;		/* the child's stdout */
};

/*
 * preload_check agent FD under LD_PRELOAD=@preload with @vars ("NAME=VALUE",
 * NULL-terminated) added; FD is a socketpair end, c->sock the other.
 */
static void spawn_agent(struct child *c, const char *preload, const char *const *vars, bool fd)
{
	char *envp[256], *argv[4], fdstr[16], fdvar[32], ldp[PATH_MAX * 2];
	int sv[2], in[2], out[2], n = 0, i;

	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	assert_int_equal(fcntl(sv[0], F_SETFD, FD_CLOEXEC), 0);
	assert_int_equal(pipe2(in, O_CLOEXEC), 0);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	for (i = 0; environ[i] && n < 240; i++)
		if (strncmp(environ[i], "LD_PRELOAD=", 11) && strncmp(environ[i], "TK_", 3) &&
		    strncmp(environ[i], "MALLOC_CONF=", 12))
			envp[n++] = environ[i];
	snprintf(ldp, sizeof(ldp), "LD_PRELOAD=%s", preload);
	envp[n++] = ldp;
	snprintf(fdvar, sizeof(fdvar), "TK_AGENT_FD=%d", sv[1]);
	if (fd)
		envp[n++] = fdvar;
	for (i = 0; vars && vars[i]; i++)
		envp[n++] = (char *)vars[i];
	envp[n] = NULL;
	snprintf(fdstr, sizeof(fdstr), "%d", sv[1]);
	argv[0] = check;
	argv[1] = "agent";
	argv[2] = fdstr;
	argv[3] = NULL;
	c->pid = fork();
	assert_true(c->pid >= 0);
	if (c->pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		execve(check, argv, envp);
		_exit(127);
	}
	close(sv[1]);
	close(in[0]);
	close(out[1]);
	c->sock = sv[0];
	c->in = in[1];
	c->out = out[0];
}

/* Up to @sz - 1 bytes that arrive within @ms, up to a newline; the count. */
static int read_line(int fd, char *buf, size_t sz, int ms)
{
	size_t len = 0;

	while (len + 1 < sz) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&p, 1, ms) <= 0)
			break;
		n = read(fd, buf + len, 1);
		if (n <= 0)
			break;
		if (buf[len++] == '\n')
			break;
	}
	buf[len] = '\0';
	return (int)len;
}

/* Close stdin: the child returns from main and exits 0 within 10 s. */
static void finish(struct child *c)
{
	int status = 0, i;

	close(c->in);
	for (i = 0; i < 1000; i++) {
		if (waitpid(c->pid, &status, WNOHANG) == c->pid)
			break;
		usleep(10000);
	}
	if (i == 1000) {
		kill(c->pid, SIGKILL);
		waitpid(c->pid, &status, 0);
		fail_msg("the command did not exit when main returned");
	}
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	close(c->sock);
	close(c->out);
}

/*
 * main ran, the variables are gone, the descriptor is close-on-exec when the
 * dump server keeps it (@dump) and closed when not.
 */
static void expect_main(struct child *c, bool dump)
{
	char line[256];

	read_line(c->out, line, sizeof(line), 10000);
	assert_string_equal(line, "main\n");
	read_line(c->out, line, sizeof(line), 10000);
	assert_string_equal(line, dump ? "env=gone cloexec=1\n" : "env=gone cloexec=closed\n");
}

static void test_agent_hold(void **state)
{
	static const char *const vars[] = { "TK_AGENT_HOLD=1", NULL };
	struct child c;
	char b, line[256];

	spawn_agent(&c, agent, vars, true);
	assert_int_equal(read_line(c.sock, line, 2, 10000), 1);
	assert_int_equal(line[0], 'H');
	/* held: main has not run */
	assert_int_equal(read_line(c.out, line, sizeof(line), 300), 0);
	b = 'G';
	assert_int_equal(write(c.sock, &b, 1), 1);
	expect_main(&c, false);
	/* no dump server asked for: the agent closed its end */
	assert_int_equal(read_line(c.sock, line, sizeof(line), 10000), 0);
	finish(&c);
}

static void test_agent_hold_eof_releases(void **state)
{
	static const char *const vars[] = { "TK_AGENT_HOLD=1", NULL };
	struct child c;
	char line[2];

	spawn_agent(&c, agent, vars, true);
	assert_int_equal(read_line(c.sock, line, 2, 10000), 1);
	assert_int_equal(line[0], 'H');
	shutdown(c.sock, SHUT_WR);
	expect_main(&c, false);
	finish(&c);
}

static void test_agent_without_fd(void **state)
{
	struct child c;
	char line[256];

	spawn_agent(&c, agent, NULL, false);
	read_line(c.out, line, sizeof(line), 10000);
	assert_string_equal(line, "main\n");
	finish(&c);
}

/* Send @req, return the reply line. */
static void request(struct child *c, const char *req, char *reply, size_t sz)
{
	assert_int_equal(write(c->sock, req, strlen(req)), (ssize_t)strlen(req));
	read_line(c->sock, reply, sz, 30000);
}

static void test_agent_dump_jemalloc(void **state)
{
	static const char *const vars[] = { "TK_AGENT_HOLD=1", "TK_AGENT_JEMALLOC=1",
					    "MALLOC_CONF=prof:true", NULL };
	char preload[PATH_MAX * 2 + 2], dir[] = "/tmp/tk-preload-XXXXXX", path[PATH_MAX];
	char req[PATH_MAX + 8], reply[64], head[16] = "";
	struct child c;
	char b;
	FILE *f;

	NEED_DEP(have_jemalloc(), "no %s (apt-get install libjemalloc2)\n", JEMALLOC);
	assert_non_null(mkdtemp(dir));
	snprintf(preload, sizeof(preload), "%s %s", agent, JEMALLOC);
	spawn_agent(&c, preload, vars, true);
	assert_int_equal(read_line(c.sock, reply, 2, 10000), 1);
	assert_int_equal(reply[0], 'H');
	b = 'G';
	assert_int_equal(write(c.sock, &b, 1), 1);
	expect_main(&c, true);

	snprintf(path, sizeof(path), "%s/cmd.heap", dir);
	snprintf(req, sizeof(req), "D %s\n", path);
	request(&c, req, reply, sizeof(reply));
	assert_string_equal(reply, "0\n");
	f = fopen(path, "r");
	assert_non_null(f);
	assert_true(fread(head, 1, 8, f) == 8);
	fclose(f);
	assert_memory_equal(head, "heap_v2/", 8);
	unlink(path);

	/* jemalloc cannot write there: its errno, not a success */
	request(&c, "D /nonexistent-dir/x.heap\n", reply, sizeof(reply));
	assert_true(atoi(reply) > 0);
	request(&c, "X what\n", reply, sizeof(reply));
	assert_string_equal(reply, "22\n");
	/* the dump thread still reads its socket: main returning ends the command */
	finish(&c);
	rmdir(dir);
}

static void test_agent_dump_without_jemalloc(void **state)
{
	static const char *const vars[] = { "TK_AGENT_JEMALLOC=1", NULL };
	struct child c;
	char reply[64];

	spawn_agent(&c, agent, vars, true);
	expect_main(&c, true);
	request(&c, "D /tmp/never-written.heap\n", reply, sizeof(reply));
	assert_string_equal(reply, "2\n");
	assert_int_equal(access("/tmp/never-written.heap", F_OK), -1);
	finish(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_off_without_mean),
		cmocka_unit_test(test_count_binomial),
		cmocka_unit_test(test_estimate_unbiased),
		cmocka_unit_test(test_apis),
		cmocka_unit_test(test_realloc_moves),
		cmocka_unit_test(test_frames),
		cmocka_unit_test(test_errno_kept),
		cmocka_unit_test(test_threads),
		cmocka_unit_test(test_fork),
		cmocka_unit_test(test_starts),
		cmocka_unit_test(test_jemalloc_kept),
		cmocka_unit_test(test_agent_hold),
		cmocka_unit_test(test_agent_hold_eof_releases),
		cmocka_unit_test(test_agent_without_fd),
		cmocka_unit_test(test_agent_dump_jemalloc),
		cmocka_unit_test(test_agent_dump_without_jemalloc),
	};

	signal(SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests(tests, setup, NULL);
}
