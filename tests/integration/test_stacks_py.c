// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Python frames in tracekit stacks, both backends: tests/workloads/py/pystacks.py
 * has one thread blocked in threading.Lock.acquire() under lock_outer → lock_inner
 * and one in time.sleep() under sleep_outer → sleep_inner. Each thread's user stack
 * must show those functions, named as the cpu profile names them (qualified name,
 * the workload's file, the line it blocks on), in the right order, each run of
 * Python frames just before an interpreter-loop frame (_PyEval_EvalFrameDefault),
 * the leaf's run after the C function it called (PyThread_acquire_lock_timed for the
 * lock, _PySemaphore_Wait from 3.13); no Python loss counted; and go tool pprof reads
 * them back from the pprof output. A thread spinning in Python is not read (on a CPU:
 * its frames move), said and counted. Debian's /usr/bin/python3 (3.11) always; bullseye's 3.9, trixie's 3.13
 * and sid's 3.14 from the roots tests/lib/mkroot.sh makes (TK_PY_ROOTS, default
 * build/roots: SUITE-py), run by chroot; trixie's 3.13 also in a container of its
 * own pid namespace (its tids differ from the host's: the proc backend ties thread
 * states to threads by the tid the process sees).
 */
#include <errno.h>
#include <fcntl.h>
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

#include "need.h"
#include "spawn.h"
#include "tracekit/stacks.h"

static char tmpdir[] = "/tmp/tk-stacks-py.XXXXXX";
static char out[1 << 20];
static char script[1024];	/* tests/workloads/py/pystacks.py, absolute */
static pid_t started, reap;

struct py_run {
	pid_t pid;
	int lock_tid, lock_line;	/* as the process sees them */
	int sleep_tid, sleep_line;
	int spin_tid;			/* a thread spinning in Python: 0 none */
	char file[256];			/* the script's path as the interpreter sees it */
};

static const char *roots_dir(void)
{
	static char d[512];
	const char *e = getenv("TK_PY_ROOTS");

	snprintf(d, sizeof(d), "%s", e ? e : tk_test_path(tk_test_build_dir(), "roots"));
	return d;
}

/* Start the workload (@root NULL: the host's; @container: pivot_root and a pid ns). */
static bool start(const char *root, const char *exe, bool container, bool spin,
		  struct py_run *r)
{
	char host_ready[1024], ready[256], cmd[2048], line[128];
	char *argv[] = { (char *)exe, r->file, ready, spin ? "spin" : NULL, NULL };
	FILE *f;

	memset(r, 0, sizeof(*r));
	snprintf(cmd, sizeof(cmd), "%s%s", root ? root : "", exe);
	if (access(cmd, X_OK))
		return false;
	if (root) {
		snprintf(cmd, sizeof(cmd), "mkdir -p %s/tmp/tkps && cp %s %s/tmp/tkps/", root,
			 script, root);
		assert_int_equal(system(cmd), 0);
		snprintf(r->file, sizeof(r->file), "/tmp/tkps/pystacks.py");
		snprintf(ready, sizeof(ready), "/tmp/tkps/ready");
		snprintf(host_ready, sizeof(host_ready), "%s/tmp/tkps/ready", root);
	} else {
		snprintf(r->file, sizeof(r->file), "%s", script);
		snprintf(ready, sizeof(ready), "%s", tk_test_path(tmpdir, "ready"));
		snprintf(host_ready, sizeof(host_ready), "%s", ready);
	}
	unlink(host_ready);
	if (container) {
		r->pid = tk_test_spawn_in_root(root, argv, -1, -1, &reap);
		assert_true(r->pid > 0);
	} else {
		r->pid = fork();
		assert_true(r->pid >= 0);
		if (!r->pid) {
			if (root && chroot(root))
				_exit(126);
			execv(exe, argv);
			_exit(127);
		}
		reap = r->pid;
	}
	started = r->pid;
	for (int i = 0; i < 300 && access(host_ready, F_OK); i++)
		usleep(20000);
	f = fopen(host_ready, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		if (!strncmp(line, "lock ", 5))
			sscanf(line + 5, "%d %d", &r->lock_tid, &r->lock_line);
		else if (!strncmp(line, "sleep ", 6))
			sscanf(line + 6, "%d %d", &r->sleep_tid, &r->sleep_line);
		else if (!strncmp(line, "spin ", 5))
			sscanf(line + 5, "%d", &r->spin_tid);
	}
	fclose(f);
	assert_true(r->lock_tid > 0 && r->lock_line > 0 && r->sleep_tid > 0 && r->sleep_line > 0);
	assert_true(!spin || r->spin_tid > 0);
	return true;
}

static void stop(void)
{
	if (started > 0)
		kill(started, SIGKILL);
	if (reap > 0)
		waitpid(reap, NULL, 0);
	started = reap = 0;
}

static void print_thread(const struct tk_stacks_thread *t)
{
	print_message("tid %u (%u) %c: %s\n", t->tid, t->ns_tid, t->state,
		      t->python_note ? t->python_note : "");
	for (uint32_t i = 0; i < t->nr_uframes; i++) {
		const struct tk_stacks_frame *f = &t->uframes[i];

		print_message("    %s%s %s:%d\n", f->python ? "py " : "",
			      f->function ? f->function : "?", f->file ? f->file : "", f->line);
	}
}

/*
 * @t's user stack: @inner at @file:@line, then @outer at @file, both Python frames in
 * that order, with only Python frames between them up to the first run's end (3.11+:
 * one activation) or loop frames (<= 3.10: one per frame); before @inner, the native
 * frame @called (the C function the leaf called: NULL any); every run of Python frames
 * followed by an interpreter-loop frame.
 */
static void check_thread(const struct tk_stacks_thread *t, const char *inner, const char *outer,
			 const char *file, int line, const char *called)
{
	int at_inner = -1, at_outer = -1, py = 0;

	for (uint32_t i = 0; i < t->nr_uframes; i++) {
		const struct tk_stacks_frame *f = &t->uframes[i];

		if (!f->python)
			continue;
		py++;
		assert_non_null(f->function);
		if (at_inner < 0 && !strcmp(f->function, inner))
			at_inner = i;
		else if (at_outer < 0 && !strcmp(f->function, outer))
			at_outer = i;
		/* the run of Python frames ends at an interpreter-loop frame */
		if (i + 1 < t->nr_uframes && !t->uframes[i + 1].python) {
			assert_non_null(t->uframes[i + 1].function);
			if (strcmp(t->uframes[i + 1].function, "_PyEval_EvalFrameDefault")) {
				print_thread(t);
				fail_msg("frame %u after a Python frame: %s", i + 1,
					 t->uframes[i + 1].function);
			}
		}
	}
	if (at_inner < 0 || at_outer < at_inner) {
		print_thread(t);
		fail_msg("%s then %s not found in order (%d, %d; %d Python frames)", inner, outer,
			 at_inner, at_outer, py);
	}
	assert_string_equal(t->uframes[at_inner].file, file);
	assert_int_equal(t->uframes[at_inner].line, line);
	assert_string_equal(t->uframes[at_outer].file, file);
	assert_true(t->uframes[at_outer].line > t->uframes[at_outer].first_line);
	assert_true(at_inner > 0 && !t->uframes[at_inner - 1].python);
	if (called && !t->uframes[at_inner - 1].python) {
		bool seen = false;

		/* the C function is among the native frames just before (wrappers lie
		   between, some without a symbol of their own: sid's 3.14 has few) */
		for (int i = at_inner - 1; i >= 0 && i >= at_inner - 5; i--)
			seen |= t->uframes[i].function && !strcmp(t->uframes[i].function, called);
		if (!seen) {
			print_thread(t);
			fail_msg("%s not before %s", called, inner);
		}
	}
	assert_null(t->python_note);
}

static uint64_t loss(const struct tk_stacks_result *r, const char *name)
{
	for (size_t i = 0; i < r->nr_losses; i++)
		if (!strcmp(r->losses[i].name, name))
			return r->losses[i].count;
	fail_msg("no loss counter %s", name);
	return 0;
}

static void check_backend(enum tk_backend b, const struct py_run *run, int minor)
{
	struct tk_stacks_opts o = { .sz = sizeof(o), .backend = b };
	const struct tk_stacks_thread *lock = NULL, *sleep = NULL, *spin = NULL;
	static const char *const losses[] = {
		"python_unknown_version", "python_threads_unmatched", "python_running",
		"python_moved", "python_tstate_not_found", "python_frame_read_fault",
		"python_misaligned", "python_depth_limit", "python_name_unreadable",
	};
	const char *inner_lock = "lock_inner", *outer_lock = "lock_outer";
	struct tk_stacks_result *r;
	char why[256];
	int pid = run->pid;

	assert_int_equal(tk_stacks__take(&o, &pid, 1, &r, why, sizeof(why)), 0);
	assert_int_equal(r->backend, b);
	for (size_t i = 0; i < r->snapshots[0].nr_threads; i++) {
		const struct tk_stacks_thread *t = &r->snapshots[0].threads[i];

		if ((int)t->ns_tid == run->lock_tid)
			lock = t;
		else if ((int)t->ns_tid == run->sleep_tid)
			sleep = t;
		else if ((int)t->ns_tid == run->spin_tid)
			spin = t;
	}
	assert_non_null(lock);
	assert_non_null(sleep);
	print_message("%s: lock thread tid %u, sleep thread tid %u\n", tk_backend__name(b),
		      lock->tid, sleep->tid);
	/* 3.13 made the lock a PyMutex, parked in the parking lot on a semaphore */
	check_thread(lock, inner_lock, outer_lock, run->file, run->lock_line,
		     minor >= 13 ? "_PySemaphore_Wait" : "PyThread_acquire_lock_timed");
	check_thread(sleep, "sleep_inner", "sleep_outer", run->file, run->sleep_line, NULL);
	if (run->spin_tid) {
		bool loop = false;

		/*
		 * On a CPU: its native stack from a perf sample, its Python frames not read
		 * (they move), said and counted; never frames of another moment.
		 */
		assert_non_null(spin);
		print_thread(spin);
		for (uint32_t i = 0; i < spin->nr_uframes; i++) {
			assert_false(spin->uframes[i].python);
			loop |= spin->uframes[i].function &&
				!strcmp(spin->uframes[i].function, "_PyEval_EvalFrameDefault");
		}
		if (loop) {
			assert_non_null(spin->python_note);
			assert_true(loss(r, "python_running") >= 1);
		}
	}
	for (size_t i = 0; i < sizeof(losses) / sizeof(losses[0]); i++)
		if (loss(r, losses[i]) && (strcmp(losses[i], "python_running") || !run->spin_tid)) {
			print_thread(lock);
			print_thread(sleep);
			fail_msg("%s = %llu", losses[i], (unsigned long long)loss(r, losses[i]));
		}
	tk_stacks_result__free(r);
}

/* The CLI's pprof read back by go tool pprof: the Python frames, inner above outer. */
static void check_pprof(const struct py_run *run)
{
	const char *pb = tk_test_path(tmpdir, "py.pb.gz");
	char spid[16], cmd[1024], *a, *b;
	char *args[] = { "stacks", "-p", spid, "-o", (char *)pb, NULL };

	if (system("command -v go >/dev/null 2>&1")) {
		NEED_DEP(false, "go (for go tool pprof)\n");
		return;
	}
	snprintf(spid, sizeof(spid), "%d", run->pid);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	snprintf(cmd, sizeof(cmd), "HOME=${HOME:-/tmp} PPROF_TMPDIR=%s go tool pprof -traces "
		 "-lines %s 2>/dev/null", tmpdir, pb);
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
	/* -traces -lines: "lock_inner FILE:LINE" leaf first, in one trace */
	snprintf(cmd, sizeof(cmd), "lock_inner %s:%d", run->file, run->lock_line);
	a = strstr(out, cmd);
	b = a ? strstr(a, "lock_outer ") : NULL;
	if (!a || !b || memmem(a, b - a, "-----------", 11)) {
		print_message("%s\n", out);
		fail_msg("go tool pprof: %s then lock_outer not in one trace", cmd);
	}
}

static void run_interp(const char *root, const char *exe, int minor, bool container,
		       bool spin, const char *label)
{
	struct py_run run;

	NEED_ROOT();
	if (!start(root, exe, container, spin, &run)) {
		NEED_DEP(false, "%s (%s%s; tests/lib/mkroot.sh SUITE DIR --python)\n", label,
			 root ? root : "", exe);
		return;
	}
	print_message("%s: pid %d\n", label, run.pid);
	check_backend(TK_BACKEND_BPF, &run, minor);
	check_backend(TK_BACKEND_PROC, &run, minor);
	if (!root)
		check_pprof(&run);
	stop();
}

static void test_bookworm_311(void **state)
{
	run_interp(NULL, "/usr/bin/python3.11", 11, false, false, "bookworm 3.11");
}

/* With a thread spinning in Python: on a CPU, its Python frames are not read (counted). */
static void test_bookworm_311_running(void **state)
{
	run_interp(NULL, "/usr/bin/python3.11", 11, false, true, "bookworm 3.11 spinning");
}

static void root_interp(const char *suite, const char *exe, int minor, bool container)
{
	char root[1024], label[64];

	snprintf(root, sizeof(root), "%s/%s-py", roots_dir(), suite);
	snprintf(label, sizeof(label), "%s 3.%d%s", suite, minor, container ? " container" : "");
	run_interp(root, exe, minor, container, false, label);
}

static void test_bullseye_39(void **state)
{
	root_interp("bullseye", "/usr/bin/python3.9", 9, false);
}

static void test_trixie_313(void **state)
{
	root_interp("trixie", "/usr/bin/python3.13", 13, false);
}

static void test_sid_314(void **state)
{
	root_interp("sid", "/usr/bin/python3.14", 14, false);
}

static void test_trixie_313_container(void **state)
{
	root_interp("trixie", "/usr/bin/python3.13", 13, true);
}

static int kill_started(void **state)
{
	stop();
	return 0;
}

static int setup(void **state)
{
	char cwd[512];

	if (!getcwd(cwd, sizeof(cwd)))
		return -1;
	snprintf(script, sizeof(script), "%s/tests/workloads/py/pystacks.py", cwd);
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
		cmocka_unit_test_teardown(test_bookworm_311, kill_started),
		cmocka_unit_test_teardown(test_bookworm_311_running, kill_started),
		cmocka_unit_test_teardown(test_bullseye_39, kill_started),
		cmocka_unit_test_teardown(test_trixie_313, kill_started),
		cmocka_unit_test_teardown(test_sid_314, kill_started),
		cmocka_unit_test_teardown(test_trixie_313_container, kill_started),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
