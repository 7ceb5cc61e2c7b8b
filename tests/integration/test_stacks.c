// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tracekit stacks on the running kernel, both backends, against a workload of
 * known shape (tests/workloads/stacks_shape.c): each thread's state, syscall,
 * wait (the pipe whose write end the process holds, the mutex and its holder),
 * wait channel and whole user stack; nothing stopped (the busy thread's counter
 * keeps moving while the stacks are taken, TracerPid stays 0, no thread is seen
 * stopped, no signal arrives); the same for another user's process, and what
 * that user may not read; the command line (--repeat, --state, grouping, the
 * formats, errors).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stdarg.h>
#include <setjmp.h>
#include <cmocka.h>

#include "need.h"
#include "spawn.h"
#include "tracekit/stacks.h"

static char tmpdir[] = "/tmp/tk-stacks-test.XXXXXX";
static char out[1 << 20];

#define path_in_tmp(name) tk_test_path(tmpdir, name)

struct shape {
	pid_t pid, outer;
	int main, holder, waiter, sleeper, dthread;
	char dkind[8];
	unsigned long long progress, signals, blocked_ns;
};

/* every workload started, killed after each test whatever its outcome */
static pid_t started[16];

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

/* Start the workload (as uid/gid 65534 with @other) and read its line. */
static void start_shape(struct shape *s, bool other, const char *arg)
{
	int pfd[2];
	char line[512];

	memset(s, 0, sizeof(*s));
	NEED_DEP(!access(tk_test_workload("stacks_shape"), X_OK), "%s (make)\n",
		 tk_test_workload("stacks_shape"));
	assert_int_equal(pipe(pfd), 0);
	s->pid = fork();
	assert_true(s->pid >= 0);
	if (!s->pid) {
		dup2(pfd[1], 1);
		close(pfd[0]);
		close(pfd[1]);
		if (other && (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
			      setresuid(65534, 65534, 65534)))
			_exit(120);
		execl(tk_test_workload("stacks_shape"), "stacks_shape", arg, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	for (size_t i = 0; i < sizeof(started) / sizeof(started[0]); i++)
		if (!started[i]) {
			started[i] = s->pid;
			break;
		}
	tk_test_read_line(pfd[0], line, sizeof(line), 5000);
	assert_int_equal(sscanf(line, "pid %*d progress %llx signals %llx main %d holder %d "
				"waiter %d sleeper %d dthread %d dkind %7s blocked_ns %llu",
				&s->progress, &s->signals, &s->main, &s->holder, &s->waiter,
				&s->sleeper, &s->dthread, s->dkind, &s->blocked_ns), 9);
}

static void stop_shape(struct shape *s)
{
	if (s->pid > 0) {
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
	}
	s->pid = 0;
}

/* ---- nothing stopped: a watcher of the workload ------------------------------------------ */

struct watch {
	pid_t pid;
	unsigned long long progress_addr, signals_addr;
	volatile bool stop;
	uint64_t longest_still_ns;	/* the longest time the counter did not move */
	unsigned long first, last, signals;
	int tracer_seen;		/* a TracerPid other than 0 */
	int stopped_seen;		/* a thread in state T or t */
	pthread_t th;
};

static void scan_tasks(struct watch *w, int memfd)
{
	char path[128], buf[2048], *p;
	struct dirent *e;
	DIR *d;
	int fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/task", w->pid);
	d = opendir(path);
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/status", w->pid, e->d_name);
		fd = open(path, O_RDONLY);
		n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
		if (fd >= 0)
			close(fd);
		if (n <= 0)
			continue;
		buf[n] = 0;
		p = strstr(buf, "TracerPid:");
		if (p && atoi(p + 10) != 0)
			w->tracer_seen++;
		p = strstr(buf, "State:");
		if (p && (strstr(p, "(stopped)") || strstr(p, "(tracing stop)")))
			w->stopped_seen++;
	}
	if (d)
		closedir(d);
	(void)memfd;
}

static void *watch_fn(void *arg)
{
	struct watch *w = arg;
	char path[64];
	unsigned long v, prev = 0;
	uint64_t since = mono_ns(), now;
	int fd, k = 0;

	snprintf(path, sizeof(path), "/proc/%d/mem", w->pid);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return NULL;
	while (!w->stop) {
		if (pread(fd, &v, sizeof(v), w->progress_addr) != sizeof(v))
			break;
		now = mono_ns();
		if (!k)
			w->first = v;
		if (v != prev || !k) {
			if (k && now - since > w->longest_still_ns)
				w->longest_still_ns = now - since;
			since = now;
			prev = v;
		}
		w->last = v;
		if (k++ % 25 == 0)
			scan_tasks(w, fd);
		usleep(200);
	}
	if (pread(fd, &v, sizeof(v), w->signals_addr) == sizeof(v))
		w->signals = v;
	close(fd);
	return NULL;
}

static void watch_start(struct watch *w, const struct shape *s)
{
	memset(w, 0, sizeof(*w));
	w->pid = s->pid;
	w->progress_addr = s->progress;
	w->signals_addr = s->signals;
	assert_int_equal(pthread_create(&w->th, NULL, watch_fn, w), 0);
	usleep(20000);
}

static void watch_stop(struct watch *w)
{
	w->stop = true;
	pthread_join(w->th, NULL);
}

/* ---- checks on a snapshot ---------------------------------------------------------------- */

static const struct tk_stacks_thread *thread_of(const struct tk_stacks_snapshot *sn, int tid)
{
	for (size_t i = 0; i < sn->nr_threads; i++)
		if ((int)sn->threads[i].tid == tid)
			return &sn->threads[i];
	return NULL;
}

/* True when the user stack holds @fn. */
static bool has_ufn(const struct tk_stacks_thread *t, const char *fn)
{
	for (uint32_t i = 0; i < t->nr_uframes; i++)
		if (t->uframes[i].function && !strcmp(t->uframes[i].function, fn))
			return true;
	return false;
}

static const char *last_ufn(const struct tk_stacks_thread *t)
{
	return t->nr_uframes ? t->uframes[t->nr_uframes - 1].function : NULL;
}

static void print_thread(const struct tk_stacks_thread *t)
{
	print_message("  tid %u %c sys %lld wchan %s wait %s holder %u off %lld whole %d note %s:",
		      t->tid, t->state, (long long)t->syscall, t->wchan ?: "-", t->wait ?: "-",
		      t->holder_tid, (long long)t->off_cpu_ns, t->user_whole,
		      t->user_note ?: "-");
	for (uint32_t i = 0; i < t->nr_uframes; i++)
		print_message(" %s", t->uframes[i].function ?: "?");
	print_message("\n");
}

/* Thread by thread, what the workload is known to be doing. @kernel: kernel stacks expected. */
static void check_shape(const struct tk_stacks_result *r, const struct shape *s, bool kernel)
{
	const struct tk_stacks_snapshot *sn;
	const struct tk_stacks_thread *t;

	assert_int_equal(r->nr_snapshots, 1);
	sn = &r->snapshots[0];
	for (size_t i = 0; i < sn->nr_threads; i++)
		print_thread(&sn->threads[i]);
	assert_int_equal(sn->nr_threads, 5);

	/* the holder: in read() on the pipe whose write end its own process holds */
	t = thread_of(sn, s->holder);
	assert_non_null(t);
	assert_int_equal(t->state, 'S');
	assert_int_equal(t->syscall, 0);
	assert_string_equal(t->syscall_name, "read");
	assert_non_null(t->wait);
	assert_non_null(strstr(t->wait, "fd 3 pipe:["));
	assert_non_null(strstr(t->wait, "write end is this process's fd 4"));
	assert_true(has_ufn(t, "holder_read") && has_ufn(t, "holder"));
	assert_true(t->user_whole);
	assert_string_equal(last_ufn(t), "clone3");
	if (kernel) {
		assert_non_null(t->wchan);
		assert_non_null(strstr(t->wchan, "pipe_read"));
		assert_true(t->nr_kframes > 0);
	}

	/* the waiter: the mutex, and its holder named */
	t = thread_of(sn, s->waiter);
	assert_non_null(t);
	assert_int_equal(t->state, 'S');
	assert_int_equal(t->syscall, 202);
	assert_int_equal(t->holder_tid, s->holder);
	assert_non_null(strstr(t->wait, "mutex"));
	assert_true(has_ufn(t, "pthread_mutex_lock") && has_ufn(t, "waiter"));
	assert_true(t->user_whole);
	assert_string_equal(last_ufn(t), "clone3");

	/* the sleeper: in nanosleep when not caught between two */
	t = thread_of(sn, s->sleeper);
	assert_non_null(t);
	if (t->state == 'S') {
		assert_true(t->syscall == 230 || t->syscall == 35);
		assert_true(has_ufn(t, "sleeper"));
		assert_true(t->user_whole);
	}

	/* the D thread */
	t = thread_of(sn, s->dthread);
	assert_non_null(t);
	assert_int_equal(t->state, 'D');
	if (!strcmp(s->dkind, "uffd")) {
		assert_int_equal(t->syscall, 310);
		assert_true(has_ufn(t, "d_uffd") && has_ufn(t, "dthread"));
		assert_true(t->user_whole);
		assert_string_equal(last_ufn(t), "clone3");
		if (kernel)
			assert_string_equal(t->wchan, "handle_userfault");
	} else {
		/* glibc's vfork keeps its return address in rdi: the walk stops there */
		assert_int_equal(t->syscall, 58);
		assert_true(t->nr_uframes >= 1);
		assert_string_equal(t->uframes[0].function, "vfork");
		assert_non_null(strstr(t->wait, "vfork"));
	}

	/* the busy main thread: running; preempted (its saved registers) or sampled on its CPU */
	t = thread_of(sn, s->main);
	assert_non_null(t);
	assert_int_equal(t->state, 'R');
	assert_true(has_ufn(t, "main"));
	assert_true(t->user_whole);
	assert_string_equal(last_ufn(t), "_start");
}

static struct tk_stacks_result *take(enum tk_backend b, const int *pids, size_t n, char *why,
				     size_t why_sz, int *err)
{
	struct tk_stacks_opts o = { .sz = TK_OPTS_SZ(tk_stacks_opts), .backend = b };
	struct tk_stacks_result *r = NULL;

	*err = tk_stacks__take(&o, pids, n, &r, why, why_sz);
	return r;
}

/* Take the shape's stacks on backend @b, watched: nothing may stop or signal it. */
static void check_backend(enum tk_backend b, bool other, bool plain, bool task_stack)
{
	struct shape s;
	struct watch base, w;
	struct tk_stacks_result *r;
	char why[512];
	int err, pid;
	uint64_t before, after;
	const struct tk_stacks_thread *h;

	NEED_ROOT();
	start_shape(&s, other, NULL);
	pid = s.pid;
	/* the same watch without tracekit: this machine's noise */
	watch_start(&base, &s);
	usleep(300000);
	watch_stop(&base);
	watch_start(&w, &s);
	if (plain)
		setenv("TK_STACKS_PLAIN_ITER", "1", 1);
	if (task_stack)
		setenv("TK_STACKS_TASK_STACK", "1", 1);
	before = mono_ns() - s.blocked_ns;
	r = take(b, &pid, 1, why, sizeof(why), &err);
	after = mono_ns() - s.blocked_ns;
	unsetenv("TK_STACKS_PLAIN_ITER");
	unsetenv("TK_STACKS_TASK_STACK");
	usleep(50000);
	watch_stop(&w);
	if (err)
		fail_msg("tk_stacks__take: %s (%d)", why, err);
	print_message("backend %s: %s, %.1f ms; counter %lu -> %lu, longest stand-still %.1f ms "
		      "(baseline %.1f ms), TracerPid seen %d, stopped seen %d, signals %lu\n",
		      tk_backend__name(r->backend), r->backend_reason,
		      r->snapshots[0].took_ns / 1e6, w.first, w.last, w.longest_still_ns / 1e6,
		      base.longest_still_ns / 1e6, w.tracer_seen, w.stopped_seen, w.signals);
	assert_int_equal(r->backend, b);
	check_shape(r, &s, true);
	/* nothing stopped, traced or signalled */
	assert_true(w.last > w.first);
	assert_int_equal(w.tracer_seen, 0);
	assert_int_equal(w.stopped_seen, 0);
	assert_int_equal(w.signals, 0);
	/* a stop of the process shows as hundreds of ms; a loaded machine's noise as tens */
	assert_true(w.longest_still_ns < 300000000ULL + 3 * base.longest_still_ns);
	if (b == TK_BACKEND_BPF) {
		/* how long off the CPU, from the scheduler's fields: ~2 ms off monotonic here */
		h = thread_of(&r->snapshots[0], s.holder);
		print_message("holder off-CPU %.1f ms, blocked %.1f to %.1f ms before\n",
			      h->off_cpu_ns / 1e6, before / 1e6, after / 1e6);
		assert_true(h->off_cpu_ns > 0);
		assert_true(h->off_cpu_ns + 20000000LL >= (int64_t)before);
		assert_true(h->off_cpu_ns <= (int64_t)after + 20000000LL);
		assert_true(strstr(r->backend_reason, plain ? "(iter/task" : "(iter.s/task"));
	}
	tk_stacks_result__free(r);
	stop_shape(&s);
}

static void test_bpf(void **state)
{
	check_backend(TK_BACKEND_BPF, false, false, false);
}

static void test_proc(void **state)
{
	check_backend(TK_BACKEND_PROC, false, false, false);
}

/* The plain iterator (no bpf_copy_from_user_task, kernels 5.8-5.17): stacks from /proc/PID/mem. */
static void test_bpf_plain(void **state)
{
	check_backend(TK_BACKEND_BPF, false, true, false);
}

/*
 * The plain iterator with the user registers found from task_struct.stack, as on
 * 5.10-5.14 (no bpf_task_pt_regs): the same stacks.
 */
static void test_bpf_task_stack(void **state)
{
	check_backend(TK_BACKEND_BPF, false, true, true);
}

/* Another user's process: root reads it whole on both backends. */
static void test_other_user_bpf(void **state)
{
	check_backend(TK_BACKEND_BPF, true, false, false);
}

static void test_other_user_proc(void **state)
{
	check_backend(TK_BACKEND_PROC, true, false, false);
}

/*
 * As that other user (uid 65534): root's process may not be read at all (a clear
 * error, no partial result), its own process's user stacks may, kernel stacks not
 * (said and counted).
 */
static void test_unprivileged(void **state)
{
	struct shape mine;
	int status, pfd[2];
	pid_t child;
	char res[1024] = "";
	ssize_t n;

	NEED_ROOT();
	start_shape(&mine, true, NULL);
	assert_int_equal(pipe(pfd), 0);
	child = fork();
	assert_true(child >= 0);
	if (!child) {
		struct tk_stacks_result *r;
		int root_pid = getppid(), err, rc = 0;
		char why[512];

		close(pfd[0]);
		if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
		    setresuid(65534, 65534, 65534))
			_exit(120);
		r = take(TK_BACKEND_NONE, &root_pid, 1, why, sizeof(why), &err);
		dprintf(pfd[1], "root: err %d why %s\n", err, why);
		if (!(err == -EPERM || err == -EACCES) || r || !why[0])
			rc |= 1;
		r = take(TK_BACKEND_NONE, &mine.pid, 1, why, sizeof(why), &err);
		if (err || !r) {
			dprintf(pfd[1], "own: err %d why %s\n", err, why);
			_exit(rc | 2);
		}
		dprintf(pfd[1], "own: backend %s, %zu threads, kernel_stack_denied %llu\n",
			tk_backend__name(r->backend), r->snapshots[0].nr_threads,
			(unsigned long long)r->losses[5].count);
		if (r->backend != TK_BACKEND_PROC || r->snapshots[0].nr_threads != 5 ||
		    strcmp(r->losses[5].name, "kernel_stack_denied") || !r->losses[5].count ||
		    !r->nr_notes)
			rc |= 4;
		for (size_t i = 0; i < r->snapshots[0].nr_threads; i++) {
			const struct tk_stacks_thread *t = &r->snapshots[0].threads[i];

			if ((int)t->tid == mine.waiter &&
			    (!has_ufn(t, "waiter") || !t->user_whole || t->holder_tid != (unsigned)mine.holder))
				rc |= 8;
			if (t->nr_kframes)
				rc |= 16;
		}
		tk_stacks_result__free(r);
		_exit(rc);
	}
	close(pfd[1]);
	for (size_t got = 0; got < sizeof(res) - 1; got += n) {
		n = read(pfd[0], res + got, sizeof(res) - 1 - got);
		if (n <= 0)
			break;
		res[got + n] = 0;
	}
	close(pfd[0]);
	assert_int_equal(waitpid(child, &status, 0), child);
	print_message("%s", res);
	stop_shape(&mine);
	if (!WIFEXITED(status))
		fail_msg("the unprivileged child was killed by signal %d", WTERMSIG(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- the command line ---------------------------------------------------------------------- */

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

static void test_cli(void **state)
{
	const char *json = path_in_tmp("s.json"), *pb = path_in_tmp("s.pb.gz");
	char spid[16], filter[512];
	struct shape s;
	unsigned char magic[2] = { 0 };
	FILE *f;

	NEED_ROOT();
	start_shape(&s, false, "-t20");
	snprintf(spid, sizeof(spid), "%d", s.pid);
	{
		char *args[] = { "stacks", "-p", spid, NULL };

		assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
		/* grouped: the 20 extra threads are one group, listed first */
		assert_non_null(strstr(out, "20 threads: sleeping in futex()"));
		assert_true(strstr(out, "20 threads:") < strstr(out, "1 thread:"));
		snprintf(filter, sizeof(filter), "held by tid %d (stacks_shape)", s.holder);
		assert_non_null(strstr(out, filter));
		assert_non_null(strstr(out, "losses: "));
	}
	{
		/* three snapshots: the blocked threads did not move, the sleeper did */
		char *args[] = { "stacks", "-p", spid, "--repeat", "3", "--interval", "0.2", "-o",
				 (char *)json, NULL };

		assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
		assert_true(jq_file(json, ".schema == \"tracekit.stacks/1\" and "
				    "(.snapshots | length) == 3"));
		snprintf(filter, sizeof(filter),
			 "[.snapshots[2].threads[] | select(.tid == %d or .tid == %d or "
			 ".tid == %d)] | length == 3 and all(.moved == false)", s.holder, s.waiter,
			 s.dthread);
		assert_true(jq_file(json, filter));
		snprintf(filter, sizeof(filter),
			 ".snapshots[2].threads[] | select(.tid == %d) | .moved == true", s.sleeper);
		assert_true(jq_file(json, filter));
		snprintf(filter, sizeof(filter),
			 ".snapshots[0].threads[] | select(.tid == %d) | .holder_tid == %d and "
			 ".syscall_name == \"futex\" and .user_whole and "
			 "(.user_stack | map(.function) | index(\"waiter\") != null)", s.waiter,
			 s.holder);
		assert_true(jq_file(json, filter));
	}
	{
		char *args[] = { "stacks", "-p", spid, "--repeat", "2", "--interval", "0.1", NULL };

		assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
		assert_non_null(strstr(out, "2 snapshots:"));
		/* the ones that did not move first */
		assert_true(strstr(out, "did not move\n") < strstr(out, ", moved\n"));
	}
	{
		/* --state D: only the D thread; on both backends */
		char *args[] = { "stacks", "-p", spid, "--state", "D", "--json", NULL };
		char *argp[] = { "stacks", "-p", spid, "--state", "D", "--json", "--backend", "proc",
				 NULL };

		assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
		f = fopen(json, "w");
		fputs(out, f);
		fclose(f);
		snprintf(filter, sizeof(filter),
			 "[.snapshots[0].threads[].tid] == [%d] and .backend == \"bpf\"", s.dthread);
		assert_true(jq_file(json, filter));
		assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, argp), 0);
		f = fopen(json, "w");
		fputs(out, f);
		fclose(f);
		snprintf(filter, sizeof(filter),
			 "[.snapshots[0].threads[].tid] == [%d] and .backend == \"proc\"", s.dthread);
		assert_true(jq_file(json, filter));
	}
	{
		/* the whole system, D only: this D thread among them */
		char *args[] = { "stacks", "--state", "D", "--json", NULL };

		assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
		f = fopen(json, "w");
		fputs(out, f);
		fclose(f);
		snprintf(filter, sizeof(filter),
			 "(.snapshots[0].threads | map(select(.tid == %d)) | length) == 1 and "
			 "all(.snapshots[0].threads[]; .state == \"D\")", s.dthread);
		assert_true(jq_file(json, filter));
	}
	{
		/* Ctrl-C between snapshots: those taken, written whole, and said */
		char *args[] = { "stacks", "-p", spid, "--repeat", "100", "--interval", "0.5", "-o",
				 (char *)json, NULL };
		pid_t tk;
		int status;

		unlink(json);
		tk = tk_test_start_tracekit(args);
		assert_true(tk > 0);
		usleep(1300000);
		kill(tk, SIGINT);
		assert_int_equal(waitpid(tk, &status, 0), tk);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
		assert_true(jq_file(json, "(.snapshots | length) >= 2 and (.snapshots | length) < 6 "
				    "and (.notes | any(test(\"stopped after\")))"));
	}
	{
		/* kernel threads (idle ones: all are), by /proc: their kernel stacks, no syscall */
		char *args[] = { "stacks", "--state", "I", "--json", "--backend", "proc", NULL };

		assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
		f = fopen(json, "w");
		fputs(out, f);
		fclose(f);
		assert_true(jq_file(json, "(.snapshots[0].threads | length) > 0 and "
				    "all(.snapshots[0].threads[]; .syscall == null and "
				    ".user_note == null and .state == \"I\" and "
				    "(.kernel_stack | length) > 0 and .wchan != null)"));
	}
	{
		char *args[] = { "stacks", "-p", spid, "-o", (char *)pb, NULL };

		assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
		f = fopen(pb, "rb");
		assert_non_null(f);
		assert_int_equal(fread(magic, 1, 2, f), 2);
		fclose(f);
		assert_int_equal(magic[0], 0x1f);
		assert_int_equal(magic[1], 0x8b);
		/* one sample per thread, labelled with its state, as go tool pprof reads it */
		if (system("command -v go >/dev/null 2>&1") == 0) {
			char cmd[1024];

			snprintf(cmd, sizeof(cmd), "HOME=${HOME:-/tmp} PPROF_TMPDIR=%s go tool pprof "
				 "-tags %s 2>/dev/null", tmpdir, pb);
			assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
			assert_non_null(strstr(out, "thread_state: Total 25.0"));
			assert_non_null(strstr(out, "1.0 ( 4.00%): uninterruptible"));
			snprintf(filter, sizeof(filter), "1.0 ( 4.00%%): %d\n", s.holder);
			assert_non_null(strstr(out, filter));
		} else {
			NEED_DEP(false, "go (for go tool pprof)\n");
		}
	}
	stop_shape(&s);
}

/* --cgroup: the processes of a cgroup v2 directory and of those below it, and only those. */
static void test_cgroup(void **state)
{
	char dir[128], sub[160], file[192], spid[16], filter[256];
	const char *json = path_in_tmp("cg.json");
	struct shape s;
	FILE *f;
	int rc;

	char mnt[96] = "";
	FILE *m;

	NEED_ROOT();
	/* where cgroup2 is mounted: /sys/fs/cgroup, or /sys/fs/cgroup/unified (hybrid) */
	m = fopen("/proc/mounts", "r");
	assert_non_null(m);
	while (fgets(file, sizeof(file), m))
		if (sscanf(file, "cgroup2 %95s ", mnt) == 1)
			break;
	fclose(m);
	snprintf(dir, sizeof(dir), "%s/tk-stacks-test.%d", mnt, getpid());
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	if (!mnt[0] || mkdir(dir, 0755) || mkdir(sub, 0755)) {
		rmdir(dir);
		print_message("skip: no cgroup v2 directory can be made here\n");
		skip();
	}
	start_shape(&s, false, NULL);
	snprintf(file, sizeof(file), "%s/cgroup.procs", sub);
	snprintf(spid, sizeof(spid), "%d", s.pid);
	f = fopen(file, "w");
	assert_non_null(f);
	fputs(spid, f);
	rc = fclose(f);
	if (!rc) {
		for (int b = 0; b < 2; b++) {
			char *args[] = { "stacks", "--cgroup", dir, "--json", "--backend",
					 b ? "proc" : "bpf", NULL };

			rc |= tk_test_run_tracekit(out, sizeof(out), false, args);
			f = fopen(json, "w");
			fputs(out, f);
			fclose(f);
			snprintf(filter, sizeof(filter),
				 "(.snapshots[0].threads | length) == 5 and "
				 "all(.snapshots[0].threads[]; .pid == %d)", s.pid);
			if (!jq_file(json, filter))
				rc |= 1;
		}
	}
	stop_shape(&s);
	rmdir(sub);
	rmdir(dir);
	assert_int_equal(rc, 0);
}

static void test_cli_errors(void **state)
{
	char cmd[PATH_MAX * 2 + 128];
	char *help[] = { "stacks", "--help", NULL };
	char *bad_state[] = { "stacks", "--state", "Q", NULL };
	char *bad_repeat[] = { "stacks", "--repeat", "0", NULL };
	char *both[] = { "stacks", "-p", "1", "--cgroup", "/sys/fs/cgroup", NULL };
	char *gone[] = { "stacks", "-p", "2147483646", NULL };
	char *bad_fmt[] = { "stacks", "-p", "1", "-o", "x.svg", NULL };
	char *bad_format[] = { "stacks", "-p", "1", "--format", "folded", NULL };
	char *bad_backend[] = { "stacks", "--backend", "perf", NULL };
	char *no_cg[] = { "stacks", "--cgroup", "/nonexistent", NULL };
	/* a directory that is not of the cgroup2 file system, whatever files it holds */
	char *not_cg[] = { "stacks", "--cgroup", tmpdir, NULL };

	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, help), 0);
	assert_non_null(strstr(out, "--state LIST"));
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, bad_state), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, bad_repeat), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, both), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, bad_fmt), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, bad_format), 2);
	/* what they say: the formats stacks writes, not every format */
	snprintf(cmd, sizeof(cmd), "%s/tracekit stacks -p 1 -o x.svg 2>&1; "
		 "%s/tracekit stacks -p 1 --format folded 2>&1", tk_test_build_dir(),
		 tk_test_build_dir());
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 2);
	assert_non_null(strstr(out, "stacks writes no svg (use .pb.gz, .json, .txt or --format)"));
	assert_non_null(strstr(out, "unknown format 'folded' for stacks (pprof, json, text)"));
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, bad_backend), 2);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, gone), 1);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, no_cg), 1);
	{
		FILE *f = fopen(path_in_tmp("cgroup.procs"), "w");

		assert_non_null(f);
		fprintf(f, "%d\n", getpid());
		fclose(f);
	}
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, not_cg), 1);
	assert_null(strstr(out, "tracekit stacks:"));
}

/* Without bpf(2) (a container runtime's seccomp profile): the proc backend, said. */
static void test_fallback_under_seccomp(void **state)
{
	struct shape s;
	char spid[16];
	char *args[] = { "stacks", "-p", spid, "--json", NULL };
	const char *json = path_in_tmp("seccomp.json");
	FILE *f;
	char filter[512];

	NEED_ROOT();
	start_shape(&s, false, NULL);
	snprintf(spid, sizeof(spid), "%d", s.pid);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), true, args), 0);
	f = fopen(json, "w");
	fputs(out, f);
	fclose(f);
	snprintf(filter, sizeof(filter),
		 ".backend == \"proc\" and (.backend_reason | test(\"bpf backend\")) and "
		 "(.snapshots[0].threads[] | select(.tid == %d) | .holder_tid == %d)", s.waiter,
		 s.holder);
	assert_true(jq_file(json, filter));
	/* what 'tracekit caps' says stacks will use, here and without bpf(2), is what it used */
	{
		char *caps[] = { "caps", "--json", NULL };

		assert_int_equal(tk_test_run_tracekit(out, sizeof(out), true, caps), 0);
		f = fopen(json, "w");
		fputs(out, f);
		fclose(f);
		assert_true(jq_file(json, ".backends.stacks.backend == \"proc\""));
		assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, caps), 0);
		f = fopen(json, "w");
		fputs(out, f);
		fclose(f);
		assert_true(jq_file(json, ".backends.stacks.backend == \"bpf\" and "
				    "(.backends.stacks.reason | test(\"iter.s/task\"))"));
	}
	stop_shape(&s);
}

/*
 * A container as runtimes make one (pivot_root, mount and pid namespaces of its own:
 * tk_test_spawn_in_root) of another Debian release (TK_OTHER_ROOT, tests/lib/mkroot.sh:
 * another glibc build): the workload runs from a tmpfs over the root's /tmp, mounted in
 * a mount namespace of a helper's own, so the root itself is not changed. Its tids
 * differ from the host's: the mutex's holder, a tid of the container's, is named by its
 * host tid; its libc is read from the container's root.
 */
static void test_container(void **state)
{
	const char *root = getenv("TK_OTHER_ROOT");
	int pfd[2], lfd[2], n = 0, status, host_holder = 0;
	char dir[PATH_MAX], dst[PATH_MAX], line[512];
	struct tk_stacks_result *r;
	const struct tk_stacks_thread *t;
	const struct tk_stacks_snapshot *sn;
	struct shape s = { 0 };
	pid_t helper, ids[2];
	struct pollfd p;
	char why[512];
	int err, ns_pid;

	NEED_ROOT();
	snprintf(dir, sizeof(dir), "%s/tmp", root ? root : "");
	if (!root || access(dir, F_OK)) {
		print_message("no container root (TK_OTHER_ROOT; tests/lib/mkroot.sh trixie DIR)\n");
		if (tk_test_in_ci())
			fail();
		skip();
	}
	assert_int_equal(pipe(pfd), 0);
	assert_int_equal(pipe(lfd), 0);
	helper = fork();
	assert_true(helper >= 0);
	if (!helper) {
		char *argv[] = { "/tmp/stacks_shape", NULL };
		int in, outf;
		pid_t outer = 0;
		struct stat st;

		close(pfd[0]);
		close(lfd[0]);
		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount("tk-stacks", dir, "tmpfs", 0, "mode=0755"))
			_exit(120);
		snprintf(dst, sizeof(dst), "%s/stacks_shape", dir);
		in = open(tk_test_workload("stacks_shape"), O_RDONLY);
		outf = open(dst, O_WRONLY | O_CREAT | O_EXCL, 0755);
		if (in < 0 || outf < 0 || fstat(in, &st) ||
		    sendfile(outf, in, NULL, st.st_size) != st.st_size)
			_exit(121);
		close(in);
		close(outf);
		ids[0] = tk_test_spawn_in_root(root, argv, -1, lfd[1], &outer);
		ids[1] = outer;
		close(lfd[1]);
		if (write(pfd[1], ids, sizeof(ids)) != sizeof(ids) || ids[0] <= 0)
			_exit(122);
		close(pfd[1]);
		waitpid(outer, NULL, 0);
		_exit(0);
	}
	close(pfd[1]);
	close(lfd[1]);
	if (read(pfd[0], ids, sizeof(ids)) != sizeof(ids) || ids[0] <= 0) {
		waitpid(helper, &status, 0);
		fail_msg("the container did not start (helper status %d)", status);
	}
	close(pfd[0]);
	s.pid = ids[0];
	started[sizeof(started) / sizeof(started[0]) - 1] = s.pid;
	p.fd = lfd[0];
	p.events = POLLIN;
	while (n < (int)sizeof(line) - 1 && poll(&p, 1, 5000) == 1) {
		ssize_t k = read(lfd[0], line + n, sizeof(line) - 1 - n);

		if (k <= 0)
			break;
		n += k;
		if (memchr(line, '\n', n))
			break;
	}
	close(lfd[0]);
	line[n] = 0;
	print_message("container (%s): host pid %d: %s", root, s.pid, line);
	assert_int_equal(sscanf(line, "pid %d progress %llx signals %llx main %d holder %d "
				"waiter %d sleeper %d dthread %d dkind %7s blocked_ns %llu",
				&ns_pid, &s.progress, &s.signals, &s.main, &s.holder, &s.waiter,
				&s.sleeper, &s.dthread, s.dkind, &s.blocked_ns), 10);
	assert_int_equal(ns_pid, 1);
	for (int b = 0; b < 2; b++) {
		r = take(b ? TK_BACKEND_PROC : TK_BACKEND_BPF, &s.pid, 1, why, sizeof(why), &err);
		if (err)
			fail_msg("tk_stacks__take: %s (%d)", why, err);
		sn = &r->snapshots[0];
		assert_int_equal(sn->nr_threads, 5);
		for (size_t i = 0; i < sn->nr_threads; i++) {
			print_thread(&sn->threads[i]);
			/* in its own pid namespace: every tid differs from the host's */
			assert_int_not_equal(sn->threads[i].ns_tid, sn->threads[i].tid);
			if ((int)sn->threads[i].ns_tid == s.holder)
				host_holder = sn->threads[i].tid;
		}
		assert_true(host_holder > 0);
		for (size_t i = 0; i < sn->nr_threads; i++) {
			t = &sn->threads[i];
			if ((int)t->ns_tid == s.waiter) {
				assert_int_equal(t->holder_tid, host_holder);
				assert_true(has_ufn(t, "waiter") && t->user_whole);
				/* trixie's libc has no .symtab: clone3 is libc.so.6+0x... */
				assert_non_null(t->uframes[t->nr_uframes - 1].module);
				assert_non_null(strstr(t->uframes[t->nr_uframes - 1].module,
						       "libc.so.6"));
				assert_non_null(strstr(t->wait, "held by tid"));
			}
			if ((int)t->ns_tid == s.holder) {
				assert_true(has_ufn(t, "holder_read") && t->user_whole);
				assert_non_null(strstr(t->wait, "write end is this process's fd"));
				/* the container's own libc, by its own path */
				assert_non_null(t->uframes[0].module);
				assert_non_null(strstr(t->uframes[0].module, "libc.so.6"));
			}
			if ((int)t->ns_tid == s.dthread)
				assert_int_equal(t->state, 'D');
		}
		tk_stacks_result__free(r);
	}
	kill(s.pid, SIGKILL);
	waitpid(helper, &status, 0);
	started[sizeof(started) / sizeof(started[0]) - 1] = 0;
}

/*
 * The embedder's example (docs/examples/stacks_self.c, public headers only), run as
 * uid 65534: its own late request's thread, the mutex and its holder (the thread
 * taking the snapshot), with no privileges.
 */
static void test_example(void **state)
{
	char cmd[2048];

	NEED_ROOT();
	/*
	 * Below a directory its user cannot search (as a checkout in /root), run from
	 * inside: neither the path nor PID/root reach its executable, PID/map_files
	 * needs CAP_SYS_ADMIN, and PID/exe is the way.
	 */
	snprintf(cmd, sizeof(cmd), "mkdir -m 0700 %s/closed && mkdir -m 0755 %s/closed/in && "
		 "cp %s/examples/stacks_self %s/closed/in/ && cd %s/closed/in && "
		 "setpriv --reuid=65534 --regid=65534 --clear-groups ./stacks_self", tmpdir,
		 tmpdir, tk_test_build_dir(), tmpdir, tmpdir);
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
	print_message("%s", out);
	assert_non_null(strstr(out, "backend proc"));
	assert_non_null(strstr(out, "(user stack: the thread taking the snapshot)"));
	assert_non_null(strstr(out, "      late_request (stacks_self)\n      start_thread"));
	assert_non_null(strstr(out, "      waits for mutex 0x"));
	assert_non_null(strstr(out, "kernel_stack_denied=1"));
}

static int kill_started(void **state)
{
	for (size_t i = 0; i < sizeof(started) / sizeof(started[0]); i++) {
		if (started[i] > 0 && !kill(started[i], SIGKILL))
			waitpid(started[i], NULL, WNOHANG);
		started[i] = 0;
	}
	return 0;
}

/* Kill and reap the shape 400 ms from now (a thread of the process that started it). */
static void *end_shape_later(void *arg)
{
	usleep(400 * 1000);
	stop_shape(arg);
	return NULL;
}

/*
 * tk_stacks__begin and tk_stacks__again (record's start and end of window), on both
 * backends: the second snapshot is of the same scope and compared to the first by the
 * same rule as --repeat (the blocked holder and waiter did not move, main and the
 * nanosleep loop did); a result of tk_stacks__take takes no more snapshots.
 */
static void test_begin_again(void **state)
{
	static const enum tk_backend backends[] = { TK_BACKEND_BPF, TK_BACKEND_PROC };
	struct tk_stacks_opts o = { .sz = TK_OPTS_SZ(tk_stacks_opts) };
	struct tk_stacks_result *r;
	struct shape s;
	char why[512];
	int err, pid;

	NEED_ROOT();
	start_shape(&s, false, "-n");
	pid = s.pid;
	for (size_t b = 0; b < sizeof(backends) / sizeof(backends[0]); b++) {
		o.backend = backends[b];
		err = tk_stacks__begin(&o, &pid, 1, &r, why, sizeof(why));
		if (err)
			fail_msg("tk_stacks__begin (%s): %s (%d)", tk_backend__name(o.backend), why,
				 err);
		assert_int_equal(r->nr_snapshots, 1);
		assert_non_null(thread_of(&r->snapshots[0], s.holder));
		usleep(300 * 1000);
		err = tk_stacks__again(r, why, sizeof(why));
		if (err)
			fail_msg("tk_stacks__again (%s): %s (%d)", tk_backend__name(o.backend), why,
				 err);
		assert_int_equal(r->nr_snapshots, 2);
		assert_true(r->snapshots[1].time_nanos - r->snapshots[0].time_nanos >= 300000000);
		assert_false(thread_of(&r->snapshots[1], s.holder)->moved);
		assert_false(thread_of(&r->snapshots[1], s.waiter)->moved);
		assert_true(thread_of(&r->snapshots[1], s.main)->moved);
		assert_true(thread_of(&r->snapshots[1], s.sleeper)->moved);
		tk_stacks_result__free(r);
	}
	/* the process gone: said, and the snapshots taken are kept */
	o.backend = TK_BACKEND_PROC;
	assert_int_equal(tk_stacks__begin(&o, &pid, 1, &r, why, sizeof(why)), 0);
	stop_shape(&s);
	assert_int_equal(tk_stacks__again(r, why, sizeof(why)), -ESRCH);
	assert_non_null(strstr(why, "exited"));
	assert_int_equal(r->nr_snapshots, 1);
	tk_stacks_result__free(r);
	/* --repeat whose process exits (and is reaped) between snapshots keeps the ones taken */
	{
		pthread_t th;

		start_shape(&s, false, "-n");
		pid = s.pid;
		o.repeat = 5;
		o.interval_ms = 300;
		assert_int_equal(pthread_create(&th, NULL, end_shape_later, &s), 0);
		err = tk_stacks__take(&o, &pid, 1, &r, why, sizeof(why));
		pthread_join(th, NULL);
		if (err)
			fail_msg("take --repeat 5, the process gone at 400 ms: %s (%d)", why, err);
		assert_true(r->nr_snapshots >= 1 && r->nr_snapshots < 5);
		assert_non_null(thread_of(&r->snapshots[0], s.holder));
		{
			bool said = false;

			for (size_t i = 0; i < r->nr_notes; i++)
				said |= strstr(r->notes[i], "the process exited after") != NULL;
			assert_true(said);
		}
		tk_stacks_result__free(r);
		o.repeat = 0;
	}
	/* one-shot results are not held open */
	assert_int_equal(tk_stacks__take(&o, &(int){ getpid() }, 1, &r, why, sizeof(why)), 0);
	assert_int_equal(tk_stacks__again(r, why, sizeof(why)), -EINVAL);
	assert_int_equal(r->nr_snapshots, 1);
	tk_stacks_result__free(r);
}

static int setup(void **state)
{
	return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	return system(cmd) ? -1 : 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_bpf, kill_started),
		cmocka_unit_test_teardown(test_bpf_plain, kill_started),
		cmocka_unit_test_teardown(test_bpf_task_stack, kill_started),
		cmocka_unit_test_teardown(test_proc, kill_started),
		cmocka_unit_test_teardown(test_other_user_bpf, kill_started),
		cmocka_unit_test_teardown(test_other_user_proc, kill_started),
		cmocka_unit_test_teardown(test_unprivileged, kill_started),
		cmocka_unit_test_teardown(test_cli, kill_started),
		cmocka_unit_test_teardown(test_begin_again, kill_started),
		cmocka_unit_test_teardown(test_cgroup, kill_started),
		cmocka_unit_test_teardown(test_cli_errors, kill_started),
		cmocka_unit_test_teardown(test_fallback_under_seccomp, kill_started),
		cmocka_unit_test_teardown(test_example, kill_started),
		cmocka_unit_test_teardown(test_container, kill_started),
	};
	const char *filter = getenv("TK_TEST_FILTER");

	if (filter && *filter)
		cmocka_set_test_filter(filter);
	return cmocka_run_group_tests_name("stacks", tests, setup, teardown);
}
