// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The perf_event CPU backend through the session API (cpu.h) with
 * opts.backend = TK_BACKEND_PERF, as root, on the running kernel: what the
 * command-line tests (test_cpu.c) do not reach. Threads that exist at start
 * and threads started later; children followed only when asked; an exec
 * starting a new generation of the same pid, both named; children forked
 * and gone before their first sample was read still named (their parent's
 * mappings came from MMAP2 records); truncated stacks and lost records
 * counted; user-only and kernel-only; kernel sampling refused to an
 * unprivileged user and said so; this process never sampled in whole-system
 * mode; nothing left open after free. User stacks of code without frame
 * pointers unwound from CFI in user space: the leaf's samples carry the whole
 * chain up to main (and, with frame pointers only, they do not). Workloads:
 * tests/workloads/perf_tasks.c, unw_chain.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
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

#include "cpu/cpu.h"
#include "cpu/perf_ring.h"
#include "spawn.h"
#include "caps/caps.h"

static struct tk_caps *caps;

/* Start build/workloads/perf_tasks ARGS... (NULL-terminated), stdout to /dev/null. */
/* Where perf_tasks runs from: the build's, or a copy any user can run (tasks_for_anyone). */
static const char *tasks_path;

static pid_t spawn_tasks(const char *mode, ...)
{
	char *argv[16] = { (char *)(tasks_path ? tasks_path : tk_test_workload("perf_tasks")),
			   (char *)mode };
	va_list ap;
	int n = 2;
	pid_t pid;

	va_start(ap, mode);
	while (n < 15 && (argv[n] = va_arg(ap, char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_WRONLY);

		if (fd >= 0)
			dup2(fd, STDOUT_FILENO);
		execv(argv[0], argv);
		_exit(127);
	}
	assert_true(pid > 0);
	return pid;
}

static void reap(pid_t pid)
{
	int status;

	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void opts_init(struct tk_cpu_opts *o, int freq)
{
	memset(o, 0, sizeof(*o));
	o->sz = sizeof(*o);
	o->freq_hz = freq;
	o->backend = TK_BACKEND_PERF;
}

static struct tk_cpu *open_session(const struct tk_cpu_opts *o)
{
	struct tk_cpu *c = NULL;
	char why[256] = "";
	int err = tk_cpu__open(o, caps, &c, why, sizeof(why));

	if (err)
		print_error("tk_cpu__open: %s: %s\n", strerror(-err), why);
	assert_int_equal(err, 0);
	assert_string_equal(tk_cpu__backend(c), "perf");
	return c;
}

static struct tk_cpu *start_session(const struct tk_cpu_opts *o)
{
	struct tk_cpu *c = open_session(o);

	assert_int_equal(tk_cpu__start(c), 0);
	return c;
}

/* Poll every @poll_ms for @seconds, or until @until_exit has exited; then finish. */
static struct tk_profile *run(struct tk_cpu *c, double seconds, int poll_ms, pid_t until_exit)
{
	struct tk_profile *p = NULL;
	double end = now() + seconds;
	int status;

	while (now() < end) {
		assert_int_equal(tk_cpu__poll(c, poll_ms), 0);
		if (until_exit > 0 && waitpid(until_exit, &status, WNOHANG) == until_exit) {
			assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
			until_exit = 0;
			break;
		}
	}
	if (until_exit > 0)
		reap(until_exit);
	assert_int_equal(tk_cpu__finish(c, &p), 0);
	assert_non_null(p);
	return p;
}

/* run(), then free the session: the profile outlives it. */
static struct tk_profile *run_free(struct tk_cpu *c, double seconds, int poll_ms, pid_t until_exit)
{
	struct tk_profile *p = run(c, seconds, poll_ms, until_exit);

	tk_cpu__free(c);
	return p;
}

static const char *fn_name(const struct tk_profile *p, uint64_t loc_id)
{
	const struct tk_location *l = &p->locations[loc_id - 1];

	return l->function_id ? p->functions[l->function_id - 1].name : "";
}

static bool has_fn(const struct tk_profile *p, const struct tk_sample *s, const char *name)
{
	uint32_t i;

	for (i = 0; i < s->nr_locations; i++)
		if (!strcmp(fn_name(p, s->location_ids[i]), name))
			return true;
	return false;
}

static bool has_kernel(const struct tk_profile *p, const struct tk_sample *s)
{
	uint32_t i;

	for (i = 0; i < s->nr_locations; i++)
		if (p->locations[s->location_ids[i] - 1].kernel)
			return true;
	return false;
}

static bool has_user(const struct tk_profile *p, const struct tk_sample *s)
{
	uint32_t i;

	for (i = 0; i < s->nr_locations; i++)
		if (!p->locations[s->location_ids[i] - 1].kernel)
			return true;
	return false;
}

/* Samples of @pid (0: any) whose stack holds @name ("": any stack). */
static uint64_t count(const struct tk_profile *p, uint32_t pid, const char *name)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < p->nr_samples; i++) {
		const struct tk_sample *s = &p->samples[i];

		if ((!pid || s->pid == pid) && (!*name || has_fn(p, s, name)))
			n += s->values[0];
	}
	return n;
}

static uint64_t loss(const struct tk_profile *p, const char *name)
{
	int i;

	for (i = 0; i < p->nr_losses; i++)
		if (!strcmp(p->losses[i].name, name))
			return p->losses[i].count;
	fail_msg("no loss counter %s", name);
	return 0;
}

static int count_fds(void)
{
	struct dirent *de;
	int n = -1;	/* opendir's own */
	DIR *d = opendir("/proc/self/fd");

	assert_non_null(d);
	while ((de = readdir(d)))
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* ---- processes ------------------------------------------------------------------- */

/* -p: threads there at start and threads started later, each under its own comm */
static void test_threads_existing_and_later(void **state)
{
	struct tk_cpu_opts o;
	struct tk_profile *p;
	uint64_t early = 0, late = 0, all;
	pid_t pid;
	size_t i;

	NEED_ROOT();
	pid = spawn_tasks("threads", "1.5", NULL);
	usleep(100 * 1000);	/* "early" runs; "late" comes at 300 ms */
	opts_init(&o, 199);
	o.pids[0] = pid;
	o.nr_pids = 1;
	p = run_free(start_session(&o), 10, 200, pid);
	all = count(p, pid, "");
	for (i = 0; i < p->nr_samples; i++) {
		const struct tk_sample *s = &p->samples[i];

		if (has_fn(p, s, "task_early_spin")) {
			assert_string_equal(s->comm, "early");
			early += s->values[0];
		}
		if (has_fn(p, s, "task_late_spin")) {
			assert_string_equal(s->comm, "late");
			assert_int_not_equal(s->tid, pid);
			late += s->values[0];
		}
	}
	print_message("samples %lu: early %lu, late %lu\n", (unsigned long)all,
		      (unsigned long)early, (unsigned long)late);
	assert_int_equal(count(p, 0, ""), all);	/* nothing but the target */
	assert_true(early > 50 && late > 50);
	tk_profile__free(p);
}

static void check_children(bool follow)
{
	struct tk_cpu_opts o;
	struct tk_profile *p;
	uint64_t parent, child, others;
	pid_t pid;

	pid = spawn_tasks("fork", "1", NULL);
	usleep(50 * 1000);
	opts_init(&o, 199);
	o.pids[0] = pid;
	o.nr_pids = 1;
	o.follow_children = follow;
	p = run_free(start_session(&o), 10, 200, pid);
	parent = count(p, pid, "task_parent_spin");
	child = count(p, 0, "task_child_spin");
	others = count(p, 0, "") - count(p, pid, "");
	print_message("follow %d: parent %lu, child %lu, other pids %lu\n", follow,
		      (unsigned long)parent, (unsigned long)child, (unsigned long)others);
	assert_true(parent > 50);
	if (follow) {
		assert_true(child > 50);
		/* under its own pid */
		assert_int_equal(count(p, pid, "task_child_spin"), 0);
	} else {
		assert_int_equal(child, 0);
		assert_int_equal(others, 0);
	}
	tk_profile__free(p);
}

static void test_children_not_followed(void **state)
{
	NEED_ROOT();
	check_children(false);
}

static void test_children_followed(void **state)
{
	NEED_ROOT();
	check_children(true);
}

/* exec: the same pid, a new generation, each named from its own image */
static void test_exec_generation(void **state)
{
	struct tk_cpu_opts o;
	struct tk_profile *p;
	uint64_t before, after, mixed = 0;
	pid_t pid;
	size_t i;

	NEED_ROOT();
	pid = spawn_tasks("exec", "0.7", tk_test_workload("cpu_short"), "1000", NULL);
	usleep(50 * 1000);
	opts_init(&o, 199);
	o.pids[0] = pid;
	o.nr_pids = 1;
	p = run_free(start_session(&o), 10, 200, pid);
	before = count(p, pid, "task_before_exec");
	after = count(p, pid, "short_lived_hot");
	for (i = 0; i < p->nr_samples; i++)
		if (has_fn(p, &p->samples[i], "task_before_exec") &&
		    has_fn(p, &p->samples[i], "short_lived_hot"))
			mixed++;
	print_message("before exec %lu, after %lu\n", (unsigned long)before, (unsigned long)after);
	/* cpu_short burns wall time: a busy machine gives it less */
	assert_true(before > 50 && after > 30);
	assert_int_equal(mixed, 0);
	tk_profile__free(p);
}

/* A named task_* frame other than @mine: a stray perf_tasks of another test. */
static bool other_task_fn(const struct tk_profile *p, const struct tk_sample *s, const char *mine)
{
	uint32_t i;

	for (i = 0; i < s->nr_locations; i++) {
		const char *fn = fn_name(p, s->location_ids[i]);

		if (!strncmp(fn, "task_", 5) && strcmp(fn, mine))
			return true;
	}
	return false;
}

/*
 * Whole system: a process started during the capture forks children that
 * live 150 ms each and are gone long before the next poll reads their
 * samples; their names come from the MMAP2 records of their parent's exec.
 * Frame pointers: samples that carry 16 KiB of stack for unwinding would
 * overflow rings not read for 600 ms (test_lost_records counts that).
 */
static void test_forked_children_named_after_exit(void **state)
{
	uint64_t child, named;
	struct tk_cpu_opts o;
	struct tk_profile *p;
	struct tk_cpu *c;
	pid_t pid;
	size_t i;

	NEED_ROOT();
	opts_init(&o, 499);
	o.unwind = TK_UNWIND_FP;
	c = open_session(&o);
	assert_int_equal(tk_cpu__start(c), 0);
	pid = spawn_tasks("forkshort", "150", "4", NULL);
	reap(pid);			/* not one poll meanwhile: all children are gone */
	p = run(c, 0.5, 100, 0);
	child = named = 0;
	for (i = 0; i < p->nr_samples; i++) {
		const struct tk_sample *s = &p->samples[i];

		if (strcmp(s->comm, "perf_tasks") || s->pid == (uint32_t)pid || !has_user(p, s) ||
		    other_task_fn(p, s, "task_fork_child"))
			continue;
		child += s->values[0];
		if (has_fn(p, s, "task_fork_child"))
			named += s->values[0];
	}
	print_message("children's samples %lu, named task_fork_child %lu\n",
		      (unsigned long)child, (unsigned long)named);
	assert_true(child > 100);
	assert_true(named > child * 8 / 10);
	tk_profile__free(p);
	tk_cpu__free(c);
}

/* ---- stacks and losses ----------------------------------------------------------- */

static void test_truncated_stacks(void **state)
{
	struct tk_cpu_opts o;
	struct tk_profile *p;
	uint64_t deep;
	pid_t pid;

	NEED_ROOT();
	pid = spawn_tasks("deep", "1", "300", NULL);
	usleep(50 * 1000);
	opts_init(&o, 199);
	o.pids[0] = pid;
	o.nr_pids = 1;
	o.user_only = true;
	p = run_free(start_session(&o), 10, 200, pid);
	deep = count(p, pid, "task_deep_leaf");
	print_message("deep samples %lu, truncated_stacks %lu\n", (unsigned long)deep,
		      (unsigned long)loss(p, "truncated_stacks"));
	assert_true(deep > 50);
	/* 300 frames: every sample at the leaf is cut at the limit */
	assert_true(loss(p, "truncated_stacks") >= deep);
	tk_profile__free(p);
}

/* A one-page ring not read for a second at 999 Hz overflows: PERF_RECORD_LOST counted. */
static void test_lost_records(void **state)
{
	struct tk_cpu_perf_opts po = { .ring_pages = 1, .wake_fd = -1 };
	struct tk_cpu_opts o;
	struct tk_profile *p;
	struct tk_cpu *c;
	pid_t pid;

	NEED_ROOT();
	pid = spawn_tasks("deep", "1.2", "200", NULL);
	opts_init(&o, 999);
	o.pids[0] = pid;
	o.nr_pids = 1;
	c = open_session(&o);
	assert_int_equal(tk_cpu_perf__start(c, &po), 0);
	usleep(1300 * 1000);
	p = run(c, 0, 100, pid);
	print_message("samples %lu, perf_lost_records %lu\n", (unsigned long)count(p, pid, ""),
		      (unsigned long)loss(p, "perf_lost_records"));
	assert_true(loss(p, "perf_lost_records") > 0);
	tk_profile__free(p);
	tk_cpu__free(c);
}

static void check_sides(bool user_only)
{
	struct tk_cpu_opts o;
	struct tk_profile *p;
	struct tk_cpu *c;
	uint64_t k = 0, u = 0, total;
	pid_t pid;
	size_t i;

	opts_init(&o, 499);
	o.user_only = user_only;
	o.kernel_only = !user_only;
	c = open_session(&o);
	assert_int_equal(tk_cpu__start(c), 0);
	pid = fork();
	if (pid == 0) {
		execl(tk_test_workload("cpu_syscalls"), "cpu_syscalls", "1", NULL);
		_exit(127);
	}
	p = run(c, 10, 200, pid);
	total = count(p, 0, "");
	for (i = 0; i < p->nr_samples; i++) {
		k += has_kernel(p, &p->samples[i]) ? p->samples[i].values[0] : 0;
		u += has_user(p, &p->samples[i]) ? p->samples[i].values[0] : 0;
	}
	print_message("%s: %lu samples, with kernel frames %lu, with user frames %lu\n",
		      user_only ? "user only" : "kernel only", (unsigned long)total,
		      (unsigned long)k, (unsigned long)u);
	assert_true(total > 100);
	if (user_only) {
		assert_int_equal(k, 0);
		/*
		 * samples in the kernel still carry the user stack that made the
		 * call (from libc's read/write, which keep no frame pointer, so
		 * the walk goes on at main)
		 */
		assert_true(count(p, pid, "main") > 100);
	} else {
		assert_int_equal(u, 0);
		assert_true(k > 100);
	}
	tk_profile__free(p);
	tk_cpu__free(c);
}

static void test_user_only(void **state)
{
	NEED_ROOT();
	check_sides(true);
}

static void test_kernel_only(void **state)
{
	NEED_ROOT();
	check_sides(false);
}

/* ---- user stacks unwound from CFI ---------------------------------------------------- */

/* The function of the first user frame of @s (its leaf), "" when it has none. */
static const char *user_leaf(const struct tk_profile *p, const struct tk_sample *s)
{
	uint32_t i;

	for (i = 0; i < s->nr_locations; i++)
		if (!p->locations[s->location_ids[i] - 1].kernel)
			return fn_name(p, s->location_ids[i]);
	return "";
}

static const char *const unw_chain[] = { "burn", "compare", "stage_b", "stage_a", "run", "main" };

/* Whether @s holds unw_chain's functions in chain order, leaf first. */
static bool whole_chain(const struct tk_profile *p, const struct tk_sample *s)
{
	uint32_t i, k = 0;

	for (i = 0; i < s->nr_locations && k < sizeof(unw_chain) / sizeof(unw_chain[0]); i++)
		if (!strcmp(fn_name(p, s->location_ids[i]), unw_chain[k]))
			k++;
	return k == sizeof(unw_chain) / sizeof(unw_chain[0]);
}

/*
 * unw_chain (no frame pointers, glibc's qsort in the middle) profiled by pid;
 * the samples whose user leaf is burn: *@leaf of them, *@whole with the chain
 * burn → compare → … → stage_b → stage_a → run → main in order.
 */
static struct tk_profile *profile_unw_chain(enum tk_unwind_mode mode, uint64_t *leaf,
					    uint64_t *whole)
{
	struct tk_cpu_opts o;
	struct tk_profile *p;
	pid_t pid;
	size_t i;

	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		execl(tk_test_workload("unw_chain"), "unw_chain", "1.5", NULL);
		_exit(127);
	}
	usleep(50 * 1000);
	opts_init(&o, 299);
	o.pids[0] = pid;
	o.nr_pids = 1;
	o.unwind = mode;
	p = run_free(start_session(&o), 10, 200, pid);
	*leaf = *whole = 0;
	for (i = 0; i < p->nr_samples; i++) {
		const struct tk_sample *s = &p->samples[i];

		if (s->pid != (uint32_t)pid || strcmp(user_leaf(p, s), "burn"))
			continue;
		*leaf += s->values[0];
		if (whole_chain(p, s))
			*whole += s->values[0];
	}
	return p;
}

static void test_unwind_cfi_whole_chain(void **state)
{
	uint64_t leaf, whole, stacks;
	struct tk_profile *p;
	bool said = false;
	int i;

	NEED_ROOT();
	p = profile_unw_chain(TK_UNWIND_AUTO, &leaf, &whole);
	for (i = 0; i < p->nr_comments; i++) {
		if (!strncmp(p->comments[i], "unwinding: frame pointers only", 30)) {
			print_message("skip: %s\n", p->comments[i]);
			tk_profile__free(p);
			skip();
		}
	}
	stacks = count(p, 0, "");
	print_message("cfi: %lu samples, %lu with burn as leaf, %lu of them whole to main\n",
		      (unsigned long)stacks, (unsigned long)leaf, (unsigned long)whole);
	for (i = 0; i < p->nr_comments; i++)
		print_message("  %s\n", p->comments[i]);
	for (i = 0; i < p->nr_losses; i++)
		if (!strncmp(p->losses[i].name, "unwind_", 7) && p->losses[i].count)
			print_message("  %s %lu\n", p->losses[i].name,
				      (unsigned long)p->losses[i].count);
	assert_true(leaf > 100);
	assert_int_equal(whole, leaf);
	/* walked here, each stack with the process's entry, none gone astray */
	for (i = 0; i < p->nr_comments; i++)
		said |= strstr(p->comments[i], "unwinding: CFI in user space") != NULL;
	assert_true(said);
	assert_int_equal(loss(p, "unwind_process_unknown"), 0);
	assert_int_equal(loss(p, "unwind_stack_read_fault"), 0);
	assert_int_equal(loss(p, "unwind_bad_frame"), 0);
	tk_profile__free(p);

	/* the same by frame pointers, as the kernel walks them: the chain breaks */
	p = profile_unw_chain(TK_UNWIND_FP, &leaf, &whole);
	print_message("fp: %lu with burn as leaf, %lu of them whole to main\n",
		      (unsigned long)leaf, (unsigned long)whole);
	assert_true(leaf > 100);
	assert_true(whole < leaf / 2);
	tk_profile__free(p);
}

/* ---- privileges and hygiene --------------------------------------------------------- */

/*
 * As an unprivileged user (perf_event_paranoid 2 here): a process of one's
 * own is profiled with user frames only and the session says why; the whole
 * system is refused. Exit codes tell which check failed.
 */
/*
 * A copy of perf_tasks that user nobody can run: the checkout may be where
 * nobody cannot go (a clone in /root, mode 0700). NULL when it cannot be made.
 */
static const char *tasks_for_anyone(void)
{
	static char dir[] = "/tmp/tk-unpriv-XXXXXX", path[64];
	char cmd[4200];

	if (!mkdtemp(dir))
		return NULL;
	snprintf(path, sizeof(path), "%s/perf_tasks", dir);
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s' && chmod 0755 '%s' '%s'",
		 tk_test_workload("perf_tasks"), path, dir, path);
	return system(cmd) ? NULL : path;
}

static int unprivileged_child(void)
{
	struct tk_profile *p = NULL;
	struct tk_cpu_opts o;
	struct tk_cpu *c = NULL;
	char why[256];
	pid_t pid;
	int err;
	size_t i;

	if (!tasks_path)
		return 9;
	if (setgroups(0, NULL) || setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
		return 10;
	opts_init(&o, 199);
	if (tk_cpu__open(&o, caps, &c, why, sizeof(why)))
		return 11;
	err = tk_cpu__start(c);
	tk_cpu__free(c);
	if (err != -EACCES)
		return 12;

	pid = spawn_tasks("fork", "1.5", NULL);
	/* until its exec, the child of a process that changed its uids is not ptraceable */
	usleep(50 * 1000);
	o.pids[0] = pid;
	o.nr_pids = 1;
	if (tk_cpu__open(&o, caps, &c, why, sizeof(why)) || tk_cpu__start(c))
		return 13;
	if (!strstr(tk_cpu_perf__note(c), "kernel frames excluded"))
		return 14;
	while (waitpid(pid, NULL, WNOHANG) != pid)
		tk_cpu__poll(c, 100);
	if (tk_cpu__finish(c, &p))
		return 15;
	dprintf(STDOUT_FILENO, "unprivileged: %lu samples; note: %s\n",
		(unsigned long)count(p, pid, "task_parent_spin"), tk_cpu_perf__note(c));
	if (count(p, pid, "task_parent_spin") < 30)
		return 16;
	for (i = 0; i < p->nr_samples; i++)
		if (has_kernel(p, &p->samples[i]))
			return 17;
	tk_profile__free(p);
	tk_cpu__free(c);
	return 0;
}

static void test_unprivileged_user_only(void **state)
{
	long paranoid;
	int status;
	pid_t pid;
	FILE *f;

	NEED_ROOT();
	f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld", &paranoid), 1);
	fclose(f);
	if (paranoid != 2) {
		print_message("skip: kernel.perf_event_paranoid is %ld, this test wants 2\n",
			      paranoid);
		skip();
	}
	tasks_path = tasks_for_anyone();
	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0)
		_exit(unprivileged_child());
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (tasks_path) {
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf \"$(dirname '%s')\"", tasks_path);
		assert_int_equal(system(cmd), 0);
		tasks_path = NULL;
	}
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static volatile unsigned long sink;

/* Whole system: never this process; and free leaves no descriptor behind. */
static void test_self_excluded_nothing_left(void **state)
{
	struct tk_cpu_opts o;
	struct tk_profile *p;
	struct tk_cpu *c;
	int fds;
	double end;

	NEED_ROOT();
	fds = count_fds();
	opts_init(&o, 499);
	c = open_session(&o);
	assert_int_equal(tk_cpu__start(c), 0);
	assert_true(count_fds() > fds);
	end = now() + 1;
	while (now() < end) {
		unsigned long x = sink;
		int i;

		for (i = 0; i < 100000; i++)
			x = x * 6364136223846793005UL + 1;
		sink = x;
		tk_cpu__poll(c, 0);
	}
	assert_int_equal(tk_cpu__finish(c, &p), 0);
	print_message("whole system: %lu samples, %lu of this process\n",
		      (unsigned long)count(p, 0, ""), (unsigned long)count(p, getpid(), ""));
	assert_int_equal(count(p, getpid(), ""), 0);
	tk_profile__free(p);
	tk_cpu__free(c);
	assert_int_equal(count_fds(), fds);
}

static int setup(void **state)
{
	struct tk_caps_opts co = { .sz = TK_OPTS_SZ(tk_caps_opts) };

	caps = calloc(1, sizeof(*caps));
	if (!caps || tk_caps__snapshot(&co, caps))
		return -1;
	return 0;
}

static int teardown(void **state)
{
	free(caps);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_threads_existing_and_later),
		cmocka_unit_test(test_children_not_followed),
		cmocka_unit_test(test_children_followed),
		cmocka_unit_test(test_exec_generation),
		cmocka_unit_test(test_forked_children_named_after_exit),
		cmocka_unit_test(test_truncated_stacks),
		cmocka_unit_test(test_lost_records),
		cmocka_unit_test(test_user_only),
		cmocka_unit_test(test_kernel_only),
		cmocka_unit_test(test_unwind_cfi_whole_chain),
		cmocka_unit_test(test_unprivileged_user_only),
		cmocka_unit_test(test_self_excluded_nothing_left),
	};

	return cmocka_run_group_tests_name("cpu_perf", tests, setup, teardown);
}
