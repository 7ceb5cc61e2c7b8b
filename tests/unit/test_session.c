// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The session core with a fake collector: the fallback chain and its notes,
 * no_fallback, explicit backends, the held command, liveness by pidfd (a
 * zombie counts as gone), stop from a signal handler, intervals, results and
 * their writers, and option structs of other sizes.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "caps/caps.h"
#include "core/session.h"
#include "profile/profile.h"

/* What the fake collector does, per backend. */
struct fake {
	enum tk_backend refuse_open[4];	/* these backends fail to open */
	int nr_refuse_open;
	enum tk_backend refuse_start;	/* this one fails to attach */
	enum tk_backend opened[8];	/* every open, in order */
	int nr_opened;
	int polls, rotations, finals, closes;
	char log[2048];
};

static struct fake fk;

struct coll {
	enum tk_backend b;
};

static const char *bname(enum tk_backend b)
{
	return tk_backend__name(b);
}

static int f_open(struct tk_session *s, enum tk_backend b, char *why, size_t why_sz)
{
	struct coll *c;
	int i;

	if (b == TK_BACKEND_NONE)
		b = tk_caps__backend(s->caps, s->ops->id, NULL);
	fk.opened[fk.nr_opened++] = b;
	for (i = 0; i < fk.nr_refuse_open; i++) {
		if (fk.refuse_open[i] == b) {
			snprintf(why, why_sz, "%s refused to load", bname(b));
			return -EPERM;
		}
	}
	c = calloc(1, sizeof(*c));
	c->b = b;
	s->coll = c;
	return 0;
}

static int f_start(struct tk_session *s, char *why, size_t why_sz)
{
	struct coll *c = s->coll;

	if (c->b == fk.refuse_start) {
		snprintf(why, why_sz, "%s refused to attach", bname(c->b));
		return -EACCES;
	}
	return 0;
}

static int f_poll(struct tk_session *s, int timeout_ms)
{
	fk.polls++;
	usleep(1000 * (timeout_ms < 20 ? timeout_ms : 20));
	return 0;
}

static int f_rotate(struct tk_session *s, bool final, struct tk_result *r)
{
	struct coll *c = s->coll;
	uint64_t loc;
	int64_t v[2] = { 1, 1000 };

	if (final)
		fk.finals++;
	else
		fk.rotations++;
	r->profile = tk_profile__new_cpu(bname(c->b), 99);
	if (!r->profile)
		return -ENOMEM;
	loc = tk_profile__location(r->profile, 0, 0x1000,
				   tk_profile__function(r->profile, "fake_hot", "fake.c"), false);
	return tk_profile__add_sample(r->profile, &loc, 1, v, 1, 1, "fake");
}

static const char *f_backend(const struct tk_session *s)
{
	return bname(((struct coll *)s->coll)->b);
}

static void f_close(struct tk_session *s)
{
	fk.closes++;
	free(s->coll);
}

static const struct tk_collector_ops fake_ops = {
	.id = TK_COLLECT_CPU,
	.chain = { TK_BACKEND_BPF, TK_BACKEND_PERF },
	.nr_chain = 2,
	.takes_command = true,
	.open = f_open,
	.start = f_start,
	.poll = f_poll,
	.rotate = f_rotate,
	.backend = f_backend,
	.close = f_close,
};

static void log_to_fake(void *ctx, enum tk_log_level level, const char *fmt, va_list ap)
{
	size_t n = strlen(fk.log);

	vsnprintf(fk.log + n, sizeof(fk.log) - n, fmt, ap);
}

static struct tk_caps caps;

static struct tk_session *open_fake(bool auto_backend, char *const *argv, const int *pids,
				    int nr, bool no_fallback, char *why, size_t why_sz)
{
	struct tk_session_opts so = {
		.sz = sizeof(so), .caps = &caps, .argv = argv, .log = log_to_fake,
		.no_fallback = no_fallback,
	};

	return tk_session__new(&fake_ops, calloc(1, 16), auto_backend, &so, pids, nr, why,
			       why_sz);
}

static int setup(void **state)
{
	memset(&fk, 0, sizeof(fk));
	memset(&caps, 0, sizeof(caps));
	caps.backends[TK_COLLECT_CPU].backend = TK_BACKEND_BPF;
	snprintf(caps.backends[TK_COLLECT_CPU].reason, sizeof(caps.backends[0].reason),
		 "bpf(2) and perf_event programs work");
	return 0;
}

static char *result_text(struct tk_result *r)
{
	static char buf[8192];
	FILE *f = fmemopen(buf, sizeof(buf), "w");

	assert_int_equal(tk_result__write(r, TK_FORMAT_JSON, f, 10), 0);
	fclose(f);
	return buf;
}

static void test_first_choice(void **state)
{
	struct tk_session *s;
	struct tk_result *r;
	char why[256];

	s = open_fake(true, NULL, NULL, 0, false, why, sizeof(why));
	assert_non_null(s);
	assert_string_equal(tk_session__backend(s), "bpf");
	assert_string_equal(tk_session__why_backend(s), "bpf(2) and perf_event programs work");
	assert_int_equal(tk_session__start(s, why, sizeof(why)), 0);
	assert_int_equal(tk_session__start(s, why, sizeof(why)), -EALREADY);
	assert_int_equal(tk_session__finish(s, &r), 0);
	assert_null(strstr(result_text(r), "used instead"));
	assert_true(tk_result__has_format(r, TK_FORMAT_PPROF));
	tk_result__free(r);
	tk_session__free(s);
	assert_int_equal(fk.closes, 1);
	assert_string_equal(fk.log, "");
}

static void test_fallback_on_open(void **state)
{
	struct tk_session *s;
	struct tk_result *r;
	char why[256];

	fk.refuse_open[fk.nr_refuse_open++] = TK_BACKEND_BPF;
	s = open_fake(true, NULL, NULL, 0, false, why, sizeof(why));
	assert_non_null(s);
	assert_string_equal(tk_session__backend(s), "perf");
	assert_int_equal(fk.nr_opened, 2);
	assert_string_equal(tk_session__why_backend(s), "bpf backend: bpf refused to load");
	assert_non_null(strstr(fk.log, "tracekit: cpu: bpf backend: bpf refused to load; "
				       "trying perf instead"));
	assert_int_equal(tk_session__start(s, why, sizeof(why)), 0);
	assert_int_equal(tk_session__finish(s, &r), 0);
	/* every result says what happened */
	assert_non_null(strstr(result_text(r), "bpf backend: bpf refused to load; perf used "
					       "instead"));
	tk_result__free(r);
	tk_session__free(s);
}

static void test_fallback_on_start(void **state)
{
	struct tk_session *s;
	char why[256];

	fk.refuse_start = TK_BACKEND_BPF;
	s = open_fake(true, NULL, NULL, 0, false, why, sizeof(why));
	assert_non_null(s);
	assert_string_equal(tk_session__backend(s), "bpf");
	assert_int_equal(tk_session__start(s, why, sizeof(why)), 0);
	assert_string_equal(tk_session__backend(s), "perf");
	assert_int_equal(fk.closes, 1);		/* the bpf one, closed before perf opened */
	tk_session__free(s);
}

static void test_no_fallback_and_explicit(void **state)
{
	struct tk_session *s;
	char why[256];

	fk.refuse_open[fk.nr_refuse_open++] = TK_BACKEND_BPF;
	s = open_fake(true, NULL, NULL, 0, true, why, sizeof(why));
	assert_null(s);
	assert_int_equal(errno, EPERM);
	assert_string_equal(why, "bpf refused to load");
	/* asked for: never another */
	fk.nr_opened = 0;
	s = open_fake(false, NULL, NULL, 0, false, why, sizeof(why));
	assert_null(s);
	assert_int_equal(fk.nr_opened, 1);
}

static void test_chain_exhausted(void **state)
{
	struct tk_session *s;
	char why[256];

	fk.refuse_open[fk.nr_refuse_open++] = TK_BACKEND_BPF;
	fk.refuse_open[fk.nr_refuse_open++] = TK_BACKEND_PERF;
	s = open_fake(true, NULL, NULL, 0, false, why, sizeof(why));
	assert_null(s);
	/* the first failure first: it says most */
	assert_string_equal(why, "bpf backend: bpf refused to load; perf backend: perf refused "
			    "to load");
}

static void test_bad_options(void **state)
{
	struct { struct tk_session_opts o; char more[16]; } big = {};
	char *argv[] = { "/bin/true", NULL };
	int pid = getpid();
	struct tk_session *s;
	char why[256];

	s = open_fake(true, argv, &pid, 1, false, why, sizeof(why));
	assert_null(s);
	assert_int_equal(errno, EINVAL);
	assert_string_equal(why, "processes and a command exclude each other");
	/* a newer caller's larger struct: fine while what we do not know is zero */
	big.o.sz = sizeof(big);
	big.o.caps = &caps;
	s = tk_session__new(&fake_ops, calloc(1, 16), true, &big.o, NULL, 0, why, sizeof(why));
	assert_non_null(s);
	tk_session__free(s);
	big.more[3] = 1;
	s = tk_session__new(&fake_ops, calloc(1, 16), true, &big.o, NULL, 0, why, sizeof(why));
	assert_null(s);
	assert_int_equal(errno, EINVAL);
	pid = 0x7ffffffe;
	s = open_fake(true, NULL, &pid, 1, false, why, sizeof(why));
	assert_null(s);
	assert_int_equal(errno, ESRCH);
}

static void test_command(void **state)
{
	char *argv[] = { "/bin/sh", "-c", "exit 3", NULL };
	struct tk_run_opts ro = { .sz = sizeof(ro) };
	struct tk_session *s;
	char why[256];
	int st;

	s = open_fake(true, argv, NULL, 0, false, why, sizeof(why));
	assert_non_null(s);
	assert_true(tk_session__command_pid(s) > 0);
	/* held: it has not run */
	usleep(100000);
	assert_int_equal(waitpid(tk_session__command_pid(s), &st, WNOHANG), 0);
	assert_int_equal(tk_session__run(s, &ro), 0);
	assert_int_equal(tk_session__ended(s), TK_END_COMMAND_EXITED);
	st = tk_session__exit_status(s);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 3);
	tk_session__free(s);
}

static void test_command_never_started(void **state)
{
	char *argv[] = { "/bin/sleep", "30", NULL };
	struct tk_session *s;
	char why[256];
	int pid;

	s = open_fake(true, argv, NULL, 0, false, why, sizeof(why));
	assert_non_null(s);
	pid = tk_session__command_pid(s);
	tk_session__free(s);
	/* freed before start: killed and reaped, it never ran untraced */
	assert_int_equal(kill(pid, 0), -1);
	assert_int_equal(errno, ESRCH);
}

static void test_bad_command(void **state)
{
	char *argv[] = { "/nonexistent/cmd", NULL };
	struct tk_session *s;
	char why[256];

	s = open_fake(true, argv, NULL, 0, false, why, sizeof(why));
	assert_non_null(s);
	assert_int_equal(tk_session__start(s, why, sizeof(why)), -ENOENT);
	assert_string_equal(why, "cannot run '/nonexistent/cmd': No such file or directory");
	tk_session__free(s);
}

static void test_processes_gone_zombie(void **state)
{
	struct tk_run_opts ro = { .sz = sizeof(ro), .duration_ms = 10000 };
	struct tk_session *s;
	char why[256];
	pid_t child;
	int st;

	child = fork();
	if (!child) {
		usleep(200000);
		_exit(0);
	}
	s = open_fake(true, NULL, &child, 1, false, why, sizeof(why));
	assert_non_null(s);
	/* never reaped by anyone while the session runs: a zombie is gone too */
	assert_int_equal(tk_session__run(s, &ro), 0);
	assert_int_equal(tk_session__ended(s), TK_END_PROCESSES_GONE);
	assert_int_equal(waitpid(child, &st, 0), child);
	tk_session__free(s);
}

static struct tk_session *to_stop;

static void on_alarm(int sig)
{
	tk_session__stop(to_stop);
}

static int count_interval(struct tk_session *s, struct tk_result *r, double elapsed, void *ctx)
{
	int *n = ctx;

	assert_non_null(tk_result__profile(r));
	tk_result__free(r);
	(*n)++;
	return 0;
}

static void test_stop_and_intervals(void **state)
{
	struct tk_run_opts ro = { .sz = sizeof(ro), .interval_ms = 100, .poll_ms = 10 };
	struct sigaction sa = { .sa_handler = on_alarm };
	struct tk_session *s;
	char why[256];
	int n = 0;

	ro.on_interval = count_interval;
	ro.ctx = &n;
	s = open_fake(true, NULL, NULL, 0, false, why, sizeof(why));
	assert_non_null(s);
	to_stop = s;
	sigaction(SIGALRM, &sa, NULL);
	ualarm(550000, 0);
	assert_int_equal(tk_session__run(s, &ro), 0);
	assert_int_equal(tk_session__ended(s), TK_END_STOPPED);
	assert_string_equal(tk_session_end__name(tk_session__ended(s)), "stopped");
	assert_in_range(n, 3, 6);
	assert_int_equal(fk.rotations, n);
	tk_session__free(s);
}

static void test_duration(void **state)
{
	struct tk_run_opts ro = { .sz = sizeof(ro), .duration_ms = 200, .poll_ms = 10 };
	struct tk_session *s;
	struct tk_result *r;
	char why[256], path[] = "/tmp/tk-session-XXXXXX";
	FILE *f;
	int fd;

	s = open_fake(true, NULL, NULL, 0, false, why, sizeof(why));
	assert_int_equal(tk_session__run(s, &ro), 0);
	assert_int_equal(tk_session__ended(s), TK_END_DURATION);
	assert_int_equal(tk_session__finish(s, &r), 0);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	close(fd);
	assert_int_equal(tk_result__write_file(r, path, TK_FORMAT_FOLDED, 0), 0);
	f = fopen(path, "r");
	assert_non_null(f);
	assert_non_null(fgets(why, sizeof(why), f));
	fclose(f);
	assert_non_null(strstr(why, "fake_hot"));
	unlink(path);
	tk_result__free(r);
	tk_session__free(s);
}

/* The collectors' openers refuse what cannot work before anything is taken or started. */
static void test_openers_refuse(void **state)
{
	struct tk_cpu_opts co = { .sz = sizeof(co), .nr_pids = TK_CPU_MAX_PIDS + 1 };
	struct tk_numa_opts no = { .sz = sizeof(no), .stacks = true,
				   .backend = TK_BACKEND_VMSTAT };
	struct tk_alloc_opts ao = { .sz = sizeof(ao) };
	struct { struct tk_cpu_opts o; long newer; } big = { .o.sz = sizeof(big), .newer = 1 };
	char why[256];

	assert_null(tk_session__open_cpu(&co, NULL, why, sizeof(why)));
	assert_int_equal(errno, EINVAL);
	assert_string_equal(why, "bad number of processes (65)");
	assert_null(tk_session__open_cpu(&big.o, NULL, why, sizeof(why)));
	assert_int_equal(errno, EINVAL);
	assert_non_null(strstr(why, "options unknown to this libtracekit"));
	co.nr_pids = 0;
	co.cgroup = "/proc";
	assert_null(tk_session__open_cpu(&co, NULL, why, sizeof(why)));
	assert_int_equal(errno, ENOTDIR);
	assert_non_null(strstr(why, "is not a cgroup v2 directory"));
	assert_null(tk_session__open_numa(&no, NULL, why, sizeof(why)));
	assert_string_equal(why, "--stacks needs the bpf backend: vmstat has no stacks");
	assert_null(tk_session__open_alloc(&ao, NULL, why, sizeof(why)));
	assert_string_equal(why, "give a process (opts->pid) or a command (sopts->argv)");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(test_first_choice, setup),
		cmocka_unit_test_setup(test_fallback_on_open, setup),
		cmocka_unit_test_setup(test_fallback_on_start, setup),
		cmocka_unit_test_setup(test_no_fallback_and_explicit, setup),
		cmocka_unit_test_setup(test_chain_exhausted, setup),
		cmocka_unit_test_setup(test_bad_options, setup),
		cmocka_unit_test_setup(test_command, setup),
		cmocka_unit_test_setup(test_command_never_started, setup),
		cmocka_unit_test_setup(test_bad_command, setup),
		cmocka_unit_test_setup(test_processes_gone_zombie, setup),
		cmocka_unit_test_setup(test_stop_and_intervals, setup),
		cmocka_unit_test_setup(test_duration, setup),
		cmocka_unit_test_setup(test_openers_refuse, setup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
