// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Waits that span the capture (cpu --off-cpu): threads blocked since before
 * the capture, that never run during it, carry the whole window of wait
 * under the stack they are blocked in. cpu_offcpu_span's two blocked
 * threads (read() on a pipe nobody writes, holding a mutex; the mutex) with
 * `cpu --off-cpu -d 3 -p PID`: 3.0 s ± 5 % each under blocked_read and
 * blocked_lock, read back with go tool pprof (and a third, in D state,
 * labelled uninterruptible under blocked_d), labelled off_cpu_began
 * before_capture with how long before it they blocked; the same through the
 * raw_tp path, --cgroup, record and serve; Debian's redis-server's bio_*
 * threads with waits equal to the window. The perf backend says it does not
 * see them.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <setjmp.h>
#include <cmocka.h>

#include "need.h"
#include "spawn.h"

static char tmpdir[] = "/tmp/tk-offspan-test.XXXXXX";
static char out[1 << 20];

#define path_in_tmp(name) tk_test_path(tmpdir, name)

struct span {
	pid_t pid;
	int reader, locker;	/* the blocked threads' tids */
	int dstate;		/* with "d": the one in D state; else 0 */
	struct timespec ready;	/* when it said both were blocked */
};

/*
 * Start cpu_offcpu_span for @secs seconds (in cgroup @procs, a cgroup.procs
 * file, unless NULL) and wait for its "ready" line.
 */
static void span_start_n(struct span *s, int secs, const char *procs, bool d, int n)
{
	char line[256], arg[16], narg[16];
	int fds[2];
	FILE *f;

	assert_int_equal(pipe(fds), 0);
	snprintf(arg, sizeof(arg), "%d", secs);
	s->pid = fork();
	assert_true(s->pid >= 0);
	if (s->pid == 0) {
		if (procs) {
			int fd = open(procs, O_WRONLY);
			char me[32];

			snprintf(me, sizeof(me), "%d", getpid());
			if (fd < 0 || write(fd, me, strlen(me)) < 0)
				_exit(125);
			close(fd);
		}
		dup2(fds[1], 1);
		close(fds[0]);
		snprintf(narg, sizeof(narg), "%d", n);
		if (d)
			execl(tk_test_workload("cpu_offcpu_span"), "cpu_offcpu_span", arg, "d",
			      n ? narg : NULL, (char *)NULL);
		execl(tk_test_workload("cpu_offcpu_span"), "cpu_offcpu_span", arg, n ? narg : NULL,
		      (char *)NULL);
		_exit(126);
	}
	close(fds[1]);
	f = fdopen(fds[0], "r");
	assert_non_null(f);
	if (!fgets(line, sizeof(line), f))
		fail_msg("cpu_offcpu_span said nothing");
	fclose(f);
	s->dstate = 0;
	assert_int_equal(sscanf(line, "ready pid=%*d reader=%d locker=%d dstate=%d", &s->reader,
				&s->locker, &s->dstate), d ? 3 : 2);
	clock_gettime(CLOCK_MONOTONIC, &s->ready);
}

static void span_start(struct span *s, int secs, const char *procs, bool d)
{
	span_start_n(s, secs, procs, d, 0);
}

static void span_end(struct span *s)
{
	int status;

	kill(s->pid, SIGKILL);
	waitpid(s->pid, &status, 0);
}

static double since_s(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - t->tv_sec) + (now.tv_nsec - t->tv_nsec) / 1e9;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc(n + 1);
	assert_non_null(buf);
	assert_int_equal(fread(buf, 1, n, f), n);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

/*
 * The off_cpu milliseconds go tool pprof gives the samples of thread @tid
 * (0: any) whose stacks pass through function @fn.
 */
static double pprof_ms(const char *pb, int tid, const char *fn)
{
	char cmd[1024], tag[64] = "", *p;

	if (tid)
		snprintf(tag, sizeof(tag), "-tagfocus=tid=%d", tid);
	snprintf(cmd, sizeof(cmd), "HOME=${HOME:-/tmp} PPROF_TMPDIR=%s go tool pprof "
		 "-sample_index=off_cpu -unit=ms %s -focus='^%s$' -top -nodecount=1 %s 2>&1",
		 tmpdir, tag, fn, pb);
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "Type: off_cpu"));
	p = strstr(out, "Showing nodes accounting for ");
	return p ? strtod(p + strlen("Showing nodes accounting for "), NULL) : 0;
}

/* One entry of a JSON profile's stacks, as far as these tests read it. */
struct entry {
	long pid, tid;
	char comm[32], state[32];
	bool before;
	double before_ns, off_ns;
};

/* The next entry from *@pos on; false at the end. */
static bool next_entry(const char **pos, struct entry *e)
{
	const char *p = strstr(*pos, "{\"pid\":"), *end, *q;

	if (!p)
		return false;
	end = strstr(p, "\"frames\":");
	if (!end)
		return false;
	memset(e, 0, sizeof(*e));
	e->pid = strtol(p + 7, NULL, 10);
	q = strstr(p, "\"tid\":");
	e->tid = q && q < end ? strtol(q + 6, NULL, 10) : 0;
	q = strstr(p, "\"comm\":\"");
	if (q && q < end)
		snprintf(e->comm, sizeof(e->comm), "%.*s", (int)strcspn(q + 8, "\""), q + 8);
	q = strstr(p, "\"thread_state\":\"");
	if (q && q < end)
		snprintf(e->state, sizeof(e->state), "%.*s", (int)strcspn(q + 16, "\""), q + 16);
	q = strstr(p, "\"off_cpu_began\":\"before_capture\"");
	e->before = q && q < end;
	q = strstr(p, "\"off_cpu_before_ns\":");
	e->before_ns = q && q < end ? strtod(q + 20, NULL) : 0;
	q = strstr(p, "\"values\":[");
	if (q && q < end) {
		q += 10;
		for (int k = 0; k < 3; k++) {
			e->off_ns = strtod(q, (char **)&q);
			if (*q == ',')
				q++;
		}
	}
	*pos = end;
	return true;
}

/* The number after "@name": in @json (a loss counter), or -1. */
static long json_num(const char *json, const char *name)
{
	char key[128];
	const char *p;

	snprintf(key, sizeof(key), "\"%s\":", name);
	p = strstr(json, key);
	return p ? strtol(p + strlen(key), NULL, 10) : -1;
}

#define NEAR(v, want) ((v) > (want) * 0.95 && (v) < (want) * 1.05)

/*
 * The two blocked threads of @s in JSON profile @json and pprof @pb (NULL:
 * none) of a @secs-second capture: each about @secs of wait under its
 * blocking function, as one wait labelled as begun before the capture, in
 * state sleeping, with how long before it (at least the time between
 * "ready" and the capture, @before_s).
 */
static void check_blocked(const struct span *s, const char *json, const char *pb, double secs,
			  double before_s)
{
	double hi = secs * 1000 * 1.05;
	struct entry e;
	const char *pos;
	double ms_read, ms_lock;
	char *text = slurp(json);
	int seen = 0;

	for (pos = text; next_entry(&pos, &e);) {
		if (e.tid != s->reader && e.tid != s->locker && (!s->dstate || e.tid != s->dstate))
			continue;
		if (!e.off_ns)
			continue;
		print_message("tid %ld %s %s before %.3f s: %.3f s off\n", e.tid, e.state,
			      e.before ? "began before the capture" : "", e.before_ns / 1e9,
			      e.off_ns / 1e9);
		assert_true(e.before);
		assert_string_equal(e.state, e.tid == s->dstate ? "uninterruptible" : "sleeping");
		assert_true(e.before_ns / 1e9 > before_s);
		seen++;
	}
	assert_int_equal(seen, s->dstate ? 3 : 2);
	/*
	 * only the busy thread, when it was preempted at the start, can run while
	 * its entry is made or before its stack is read (the blocked threads'
	 * stacks are checked below)
	 */
	assert_true(json_num(text, "off_cpu_seed_raced") >= 0 &&
		    json_num(text, "off_cpu_seed_raced") <= 1);
	assert_true(json_num(text, "off_cpu_seed_stack_unread") >= 0 &&
		    json_num(text, "off_cpu_seed_stack_unread") <= 1);
	assert_int_equal(json_num(text, "off_cpu_start_full"), 0);
	assert_non_null(strstr(text, "were off the CPU when the capture began"));
	/*
	 * record starts its other collectors after cpu's, and its window after
	 * them: the waits span cpu's whole capture, which its duration says
	 */
	if (strstr(json, "/cpu.json"))
		hi = json_num(text, "duration_nanos") / 1e6;
	free(text);
	if (!pb)
		return;
	ms_read = pprof_ms(pb, s->reader, "blocked_read");
	ms_lock = pprof_ms(pb, s->locker, "blocked_lock");
	print_message("pprof: reader %.1f ms under blocked_read, locker %.1f ms under "
		      "blocked_lock (window %.1f s)\n", ms_read, ms_lock, secs);
	assert_true(ms_read > secs * 1000 * 0.95 && ms_read <= hi);
	assert_true(ms_lock > secs * 1000 * 0.95 && ms_lock <= hi);
	/* not the other's stack */
	assert_true(pprof_ms(pb, s->reader, "blocked_lock") == 0);
	if (s->dstate) {
		double ms_d = pprof_ms(pb, s->dstate, "blocked_d");

		print_message("pprof: D thread %.1f ms under blocked_d\n", ms_d);
		assert_true(ms_d > secs * 1000 * 0.95 && ms_d <= hi);
	}
}

static void check_cpu(const char *backend, const char *env)
{
	const char *json = path_in_tmp("span.json"), *pb = path_in_tmp("span.pb.gz");
	char pidbuf[16];
	char *args[] = { "cpu", "--backend", (char *)backend, "--off-cpu", "-d", "3", "-p", pidbuf,
			 "-o", (char *)json, "-o", (char *)pb, NULL };
	struct span s;
	double before_s;
	char name[64];

	NEED_ROOT();
	NEED_DEP(system("command -v go >/dev/null 2>&1") == 0, "go (for go tool pprof)\n");
	span_start(&s, 30, NULL, true);
	snprintf(pidbuf, sizeof(pidbuf), "%d", s.pid);
	if (env) {
		snprintf(name, sizeof(name), "%.*s", (int)strcspn(env, "="), env);
		setenv(name, env + strlen(name) + 1, 1);
	}
	before_s = since_s(&s.ready);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	if (env)
		unsetenv(name);
	span_end(&s);
	check_blocked(&s, json, pb, 3.0, before_s);
}

static void test_span_bpf(void **state)
{
	check_cpu("bpf", NULL);
}

/* keyed by task address (the raw_tp program), the seeds as well */
static void test_span_raw_tp_bpf(void **state)
{
	check_cpu("bpf", "TK_TEST_OFF_RAW_TP=1");
}

/* user registers from task->stack, as kernels before 5.15 (no bpf_task_pt_regs) give them */
static void test_span_task_stack_bpf(void **state)
{
	check_cpu("bpf", "TK_UNWIND_TASK_STACK=1");
}

/* perf sees no wait that does not end in the capture, and says so */
static void test_span_perf(void **state)
{
	const char *json = path_in_tmp("perf.json");
	char pidbuf[16];
	char *args[] = { "cpu", "--backend", "perf", "--off-cpu", "-d", "1", "-p", pidbuf, "-o",
			 (char *)json, NULL };
	struct span s;
	struct entry e;
	const char *pos;
	char *text;

	NEED_ROOT();
	span_start(&s, 30, NULL, false);
	snprintf(pidbuf, sizeof(pidbuf), "%d", s.pid);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	span_end(&s);
	text = slurp(json);
	assert_non_null(strstr(text, "perf sees a wait only when its thread switches out during "
				     "the capture"));
	for (pos = text; next_entry(&pos, &e);)
		assert_false(e.tid == s.reader && e.off_ns > 0);
	free(text);
}

/*
 * A kernel that refuses the task iterator: the capture runs without it, and
 * the profile says which waits it does not see and why
 */
static void test_span_refused_bpf(void **state)
{
	const char *json = path_in_tmp("refused.json");
	char pidbuf[16];
	char *args[] = { "cpu", "--backend", "bpf", "--off-cpu", "-d", "1", "-p", pidbuf, "-o",
			 (char *)json, NULL };
	struct span s;
	struct entry e;
	const char *pos;
	char *text;

	NEED_ROOT();
	span_start(&s, 30, NULL, false);
	snprintf(pidbuf, sizeof(pidbuf), "%d", s.pid);
	setenv("TK_TEST_OFF_SEED_REFUSED", "1", 1);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	unsetenv("TK_TEST_OFF_SEED_REFUSED");
	span_end(&s);
	text = slurp(json);
	assert_non_null(strstr(text, "waits that began before the capture and did not end in it "
				     "are not seen: this kernel refused the task iterator"));
	/* the rest of off-CPU time is there: the busy thread's preemptions */
	assert_non_null(strstr(text, "off-CPU time: sched_switch (tp_btf)"));
	for (pos = text; next_entry(&pos, &e);)
		assert_false(e.tid == s.reader && e.off_ns > 0);
	free(text);
}

/*
 * A thousand blocked threads more (on a condition variable nobody signals):
 * every one seeded, each with the window's wait and its user stack, though
 * their records fill the iterator's seq buffer several times over (a record
 * that does not fit is dropped and the program run again for its task)
 */
static void test_span_many_bpf(void **state)
{
	const char *json = path_in_tmp("many.json");
	char pidbuf[16];
	char *args[] = { "cpu", "--backend", "bpf", "--off-cpu", "-d", "2", "-p", pidbuf, "-o",
			 (char *)json, NULL };
	int nthreads = 0, nouser = 0, far = 0;
	long last = -1;
	struct span s;
	struct entry e;
	const char *pos;
	double dur;
	char *text;

	NEED_ROOT();
	span_start_n(&s, 30, NULL, false, 1000);
	snprintf(pidbuf, sizeof(pidbuf), "%d", s.pid);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	span_end(&s);
	text = slurp(json);
	/*
	 * each cond thread's one entry: its whole wait, under blocked_cond: from
	 * 2 s (the window; less 5 %) to the capture's own duration, which a loaded
	 * machine stretches past it (100 of 1002 were not within 5 % of 2 s at a
	 * load of 9)
	 */
	dur = json_num(text, "duration_nanos");
	for (pos = text; next_entry(&pos, &e);) {
		const char *end = strstr(pos, "]}"), *fn;

		if (!e.before || e.tid == s.pid || e.tid == last)
			continue;
		fn = strstr(pos, "\"name\":\"blocked_");
		nthreads++;
		last = e.tid;
		if (!fn || fn > end)
			nouser++;
		if (e.off_ns < 0.95 * 2e9 || e.off_ns > dur)
			far++;
	}
	print_message("%d threads seeded, %d without their user frames, %d not within "
		      "1.9 s and the capture's %.3f s; stacks_missing_at_drain %ld\n", nthreads, nouser, far,
		      dur / 1e9, json_num(text, "stacks_missing_at_drain"));
	assert_true(dur >= 2e9);
	assert_int_equal(nthreads, 1002);
	assert_int_equal(nouser, 0);
	assert_int_equal(far, 0);
	assert_int_equal(json_num(text, "stacks_missing_at_drain"), 0);
	assert_int_equal(json_num(text, "off_cpu_seed_stack_unread"), 0);
	free(text);
}

static const char *cgroup2_mount(void)
{
	static char mnt[512];
	char line[1024], dev[256], dir[512], type[64];
	FILE *f = fopen("/proc/self/mounts", "r");

	while (f && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%255s %511s %63s", dev, dir, type) == 3 &&
		    !strcmp(type, "cgroup2")) {
			snprintf(mnt, sizeof(mnt), "%s", dir);
			fclose(f);
			return mnt;
		}
	}
	if (f)
		fclose(f);
	return NULL;
}

/* --cgroup: the threads of a child cgroup of the one named, nobody else's */
static void test_span_cgroup_bpf(void **state)
{
	const char *json = path_in_tmp("cg.json"), *pb = path_in_tmp("cg.pb.gz");
	const char *mnt = cgroup2_mount();
	char dir[600], sub[700], procs[800];
	char *args[] = { "cpu", "--backend", "bpf", "--off-cpu", "-d", "2", "--cgroup", dir, "-o",
			 (char *)json, "-o", (char *)pb, NULL };
	struct span s;
	struct entry e;
	const char *pos;
	double before_s;
	char *text;

	NEED_ROOT();
	NEED_DEP(system("command -v go >/dev/null 2>&1") == 0, "go (for go tool pprof)\n");
	if (!mnt) {
		print_message("skip: no cgroup v2 hierarchy is mounted\n");
		skip();
	}
	snprintf(dir, sizeof(dir), "%s/tk-offspan-%d", mnt, getpid());
	snprintf(sub, sizeof(sub), "%s/inner", dir);
	snprintf(procs, sizeof(procs), "%s/cgroup.procs", sub);
	assert_int_equal(mkdir(dir, 0755), 0);
	assert_int_equal(mkdir(sub, 0755), 0);
	span_start(&s, 30, procs, false);
	before_s = since_s(&s.ready);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	span_end(&s);
	rmdir(sub);
	rmdir(dir);
	check_blocked(&s, json, pb, 2.0, before_s);
	text = slurp(json);
	for (pos = text; next_entry(&pos, &e);)
		if (e.before)
			assert_int_equal(e.pid, s.pid);
	free(text);
}

/* record's cpu profile: the same code path */
static void test_span_record(void **state)
{
	char dir[256], pidbuf[16], cmd[512];
	char *args[] = { "record", "-d", "3", "-p", pidbuf, "-o", dir, NULL };
	struct span s;
	double before_s;

	NEED_ROOT();
	NEED_DEP(system("command -v go >/dev/null 2>&1") == 0, "go (for go tool pprof)\n");
	snprintf(dir, sizeof(dir), "%s/bundle", tmpdir);
	span_start(&s, 60, NULL, false);
	snprintf(pidbuf, sizeof(pidbuf), "%d", s.pid);
	before_s = since_s(&s.ready);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	span_end(&s);
	snprintf(cmd, sizeof(cmd), "ls %s", dir);
	tk_test_capture(cmd, out, sizeof(out));
	print_message("bundle: %s\n", out);
	check_blocked(&s, tk_test_path(dir, "cpu.json"), tk_test_path(dir, "cpu.pb.gz"), 3.0,
		      before_s);
}

/* serve's off-CPU capture over HTTP: the same code path */
static void test_span_serve(void **state)
{
	const char *err = path_in_tmp("serve.err"), *pb = path_in_tmp("serve.pb.gz");
	char line[512], base[128] = "", cmd[1024], token[128] = "", *p;
	struct span s;
	pid_t srv;
	FILE *f;
	int i;

	NEED_ROOT();
	NEED_DEP(system("command -v go >/dev/null 2>&1") == 0 &&
		 system("command -v curl >/dev/null 2>&1") == 0, "go, curl\n");
	span_start(&s, 60, NULL, false);
	srv = fork();
	assert_true(srv >= 0);
	if (srv == 0) {
		int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		dup2(fd, 2);
		execl(tk_test_path(tk_test_build_dir(), "tracekit"), "tracekit", "serve",
		      "--listen", "127.0.0.1:0", "--allow-off-cpu", (char *)NULL);
		_exit(127);
	}
	for (i = 0; i < 200 && !base[0]; i++) {
		usleep(50 * 1000);
		f = fopen(err, "r");
		while (f && fgets(line, sizeof(line), f)) {
			p = strstr(line, "listening on ");
			if (p && strstr(p, "token in ")) {
				char tf[256];
				const char *t = strstr(p, "token in ") + strlen("token in ");
				FILE *tfile;

				snprintf(tf, sizeof(tf), "%.*s", (int)strcspn(t, " \n,"), t);
				tfile = fopen(tf, "r");
				if (tfile && fgets(token, sizeof(token), tfile))
					token[strcspn(token, "\n")] = 0;
				if (tfile)
					fclose(tfile);
			}
			if (p) {
				p += strlen("listening on ");
				p[strcspn(p, " \n,")] = 0;
				snprintf(base, sizeof(base), "%s", p);
			}
		}
		if (f)
			fclose(f);
	}
	if (!base[0]) {
		kill(srv, SIGKILL);
		waitpid(srv, NULL, 0);
		span_end(&s);
		fail_msg("serve did not listen");
	}
	snprintf(cmd, sizeof(cmd), "curl -s -f -H 'Authorization: Bearer %s' -o %s "
		 "'%s/debug/pprof/profile?seconds=3&pid=%d&off_cpu=1'", token, pb, base, s.pid);
	i = tk_test_capture(cmd, out, sizeof(out));
	kill(srv, SIGTERM);
	waitpid(srv, NULL, 0);
	span_end(&s);
	assert_int_equal(i, 0);
	{
		double r = pprof_ms(pb, s.reader, "blocked_read");
		double l = pprof_ms(pb, s.locker, "blocked_lock");

		print_message("serve: reader %.1f ms, locker %.1f ms\n", r, l);
		assert_true(NEAR(r, 3000));
		assert_true(NEAR(l, 3000));
	}
}

/*
 * Debian's redis-server: its bio_* threads wait on condition variables for
 * work that seldom comes; each carries about the whole window of wait.
 */
static void test_redis_bio(void **state)
{
	const char *json = path_in_tmp("redis.json");
	char pidbuf[16];
	char *args[] = { "cpu", "--backend", "bpf", "--off-cpu", "-d", "2", "-p", pidbuf, "-o",
			 (char *)json, NULL };
	struct { long tid; double ns; bool before; } bio[8] = { 0 };
	int nbio = 0, i, port = 20000 + getpid() % 20000;
	struct entry e;
	const char *pos;
	pid_t redis;
	char *text;

	NEED_ROOT();
	NEED_DEP(access("/usr/bin/redis-server", X_OK) == 0, "redis-server\n");
	redis = tk_test_start_redis(port);
	assert_true(redis > 0);
	usleep(500 * 1000);
	snprintf(pidbuf, sizeof(pidbuf), "%d", redis);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	kill(redis, SIGKILL);
	waitpid(redis, NULL, 0);
	text = slurp(json);
	for (pos = text; next_entry(&pos, &e);) {
		if (strncmp(e.comm, "bio_", 4) || !e.off_ns)
			continue;
		for (i = 0; i < nbio && bio[i].tid != e.tid; i++)
			;
		if (i == nbio && nbio < 8)
			bio[nbio++].tid = e.tid;
		if (i < 8) {
			bio[i].ns += e.off_ns;
			bio[i].before |= e.before;
		}
	}
	free(text);
	print_message("%d bio_* threads\n", nbio);
	assert_true(nbio >= 2);
	for (i = 0; i < nbio; i++) {
		print_message("bio tid %ld: %.3f s off the CPU%s\n", bio[i].tid, bio[i].ns / 1e9,
			      bio[i].before ? ", from before the capture" : "");
		assert_true(bio[i].before);
		assert_true(NEAR(bio[i].ns, 2e9));
	}
}

static int setup(void **state)
{
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_span_bpf),
		cmocka_unit_test(test_span_raw_tp_bpf),
		cmocka_unit_test(test_span_task_stack_bpf),
		cmocka_unit_test(test_span_perf),
		cmocka_unit_test(test_span_refused_bpf),
		cmocka_unit_test(test_span_many_bpf),
		cmocka_unit_test(test_span_cgroup_bpf),
		cmocka_unit_test(test_span_record),
		cmocka_unit_test(test_span_serve),
		cmocka_unit_test(test_redis_bio),
	};

	/* TK_TEST_FILTER="*bpf*" runs a subset (cmocka's glob) */
	if (getenv("TK_TEST_FILTER"))
		cmocka_set_test_filter(getenv("TK_TEST_FILTER"));
	return cmocka_run_group_tests(tests, setup, teardown);
}
