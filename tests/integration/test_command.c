// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * The command after -d (-- CMD): what is left when a capture ends while its
 * command still runs. tracekit stops it as perf record stops its workload
 * (SIGTERM, SIGKILL after the grace) and reaps it, says so on stderr and in
 * the output, and leaves no process behind; the preloaded sampler of a
 * command that outlived a SIGKILLed tracekit turns itself off; a library
 * host gets no zombie and no untraced command, also when its session is
 * freed early or the release fails.
 *
 * This process is a child subreaper: whatever a tracekit run leaves running
 * is reparented here, not to init, and counted.
 */
#include <stdarg.h>
#include <setjmp.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "need.h"
#include "spawn.h"
#include "tracekit/tracekit.h"

static char tmpdir[] = "/tmp/tk-command-test.XXXXXX";

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static char *read_all(const char *path)
{
	static char buf[1 << 16];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	buf[0] = '\0';
	if (fd < 0)
		return buf;
	n = read(fd, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	close(fd);
	return buf;
}

/* Our children, alive or zombie (with @kill: killed and reaped); their number. */
static int children(bool kill_them)
{
	char path[64], buf[512], *p;
	struct dirent *de;
	DIR *d = opendir("/proc");
	int n = 0, fd, pid, ppid;

	assert_non_null(d);
	while ((de = readdir(d))) {
		pid = atoi(de->d_name);
		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		buf[0] = '\0';
		if (read(fd, buf, sizeof(buf) - 1) > 0)
			buf[sizeof(buf) - 1] = '\0';
		close(fd);
		p = strrchr(buf, ')');
		if (!p || sscanf(p + 2, "%*c %d", &ppid) != 1 || ppid != getpid())
			continue;
		print_message("child left: %.80s\n", buf);
		n++;
		if (kill_them) {
			kill(pid, SIGKILL);
			waitpid(pid, NULL, 0);
		}
	}
	closedir(d);
	return n;
}

/* No child of ours remains (and none is left for the next test). */
static void assert_no_children(void)
{
	int n = children(true);

	assert_int_equal(n, 0);
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
}

/*
 * Run build/tracekit @args with stdout to @out_fd (-1: /dev/null) and stderr
 * into a file; its exit status (-1: not normal), stderr in @err, seconds taken.
 */
static int run_cli(char *const args[], int out_fd, char **err, double *secs)
{
	char errpath[256], exe[512];
	double t0 = now();
	int status, fd;
	pid_t pid;

	snprintf(errpath, sizeof(errpath), "%s/stderr", tmpdir);
	snprintf(exe, sizeof(exe), "%s/tracekit", tk_test_build_dir());
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(fd, 2);
		fd = out_fd >= 0 ? out_fd : open("/dev/null", O_WRONLY);
		dup2(fd, 1);
		execv(exe, args);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	*secs = now() - t0;
	*err = read_all(errpath);
	fprintf(stderr, "%s", *err);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static const char *tmp(const char *name)
{
	return tk_test_path(tmpdir, name);
}

/* ---- the command line ---------------------------------------------------------------- */

/* cpu -d 1 -- sleep 6: ends after a second, sleep stopped, said, nothing left */
static void test_cpu_duration_stops_command(void **state)
{
	char *args[] = { "tracekit", "cpu", "-d", "1", "-o", (char *)tmp("cpu.json"), "--",
			 "sleep", "6", NULL };
	double secs;
	char *err;

	NEED_ROOT();
	assert_int_equal(run_cli(args, -1, &err, &secs), 0);
	assert_non_null(strstr(err, "'sleep' was still running when the capture ended: "
				    "stopped with SIGTERM"));
	assert_true(secs < 4.5);
	assert_non_null(strstr(read_all(tmp("cpu.json")), "was still running when the capture "
				    "ended (duration): tracekit stopped it with SIGTERM"));
	assert_no_children();
}

/* alloc -d 1 -- sleep 7: the same, with the sampler preloaded */
static void test_alloc_duration_stops_command(void **state)
{
	char *args[] = { "tracekit", "alloc", "-d", "1", "-o", (char *)tmp("alloc.json"), "--",
			 "sleep", "7", NULL };
	double secs;
	char *err;

	NEED_ROOT();
	assert_int_equal(run_cli(args, -1, &err, &secs), 0);
	assert_non_null(strstr(err, "'sleep' was still running when the capture ended: "
				    "stopped with SIGTERM"));
	assert_true(secs < 5.5);
	assert_non_null(strstr(read_all(tmp("alloc.json")), "was still running when the "
				    "capture ended (duration): tracekit stopped it with SIGTERM"));
	assert_no_children();
}

/* record -d 1 -- sleep 6: the bundle says so (summary, manifest) */
static void test_record_duration_stops_command(void **state)
{
	char *args[] = { "tracekit", "record", "-d", "1", "-o", (char *)tmp("rec"), "--",
			 "sleep", "6", NULL };
	char path[512], *m;
	double secs;
	char *err;

	NEED_ROOT();
	assert_int_equal(run_cli(args, -1, &err, &secs), 0);
	assert_non_null(strstr(err, "'sleep' was still running when the recording ended "
				    "(duration): stopped with SIGTERM"));
	assert_true(secs < 5.5);
	snprintf(path, sizeof(path), "%s/rec/manifest.json", tmpdir);
	m = read_all(path);
	assert_non_null(strstr(m, "\"command_stopped_with\": \"SIGTERM\""));
	assert_non_null(strstr(m, "\"command_signal\": 15"));
	assert_no_children();
}

/* A command that exits by itself is not said to be stopped */
static void test_command_exits_first(void **state)
{
	char *args[] = { "tracekit", "cpu", "-d", "5", "-o", (char *)tmp("cpu2.json"), "--",
			 "sleep", "0.3", NULL };
	double secs;
	char *err;

	NEED_ROOT();
	assert_int_equal(run_cli(args, -1, &err, &secs), 0);
	assert_null(strstr(err, "still running"));
	assert_null(strstr(read_all(tmp("cpu2.json")), "still running"));
	assert_true(secs < 4);
	assert_no_children();
}

/* One "round=..." line of alloc_steady from @f (NULL at EOF). */
static bool next_round(FILE *f, long long *allocs, long long *off, long long *mean, double *ns)
{
	char line[256];
	long r;

	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "round=%ld allocs=%lld off=%lld mean=%lld ns=%lf", &r, allocs,
			   off, mean, ns) == 5)
			return true;
	return false;
}

/*
 * The worst case: tracekit SIGKILLed while alloc -- CMD runs. The command
 * lives on (nothing can stop it), but its sampler turns itself off once the
 * uprobes left: no more marker calls, its mean 0, off=1.
 */
static void test_sampler_off_after_sigkill(void **state)
{
	char exe[512], *wl = (char *)tk_test_workload("alloc_steady");
	char *args[] = { "tracekit", "alloc", "-o", (char *)tmp("killed.pb.gz"), "--", wl,
			 "-d", "30", NULL };
	long long allocs, off, mean, last = -1;
	double ns, ns_on = 0, ns_off = 0, t0;
	int p[2], i, status;
	pid_t pid;
	FILE *f;

	NEED_ROOT();
	NEED_DEP(!access(wl, X_OK), "%s (make)\n", wl);
	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		close(p[0]);
		dup2(p[1], 1);
		setenv("TK_ALLOC_TEST_COUNTS", "1", 1);
		snprintf(exe, sizeof(exe), "%s/tracekit", tk_test_build_dir());
		execv(exe, args);
		_exit(127);
	}
	close(p[1]);
	f = fdopen(p[0], "r");
	assert_non_null(f);
	/* sampling under tracekit: the marker is called */
	t0 = now();
	while (next_round(f, &allocs, &off, &mean, &ns) && allocs <= 0 && now() - t0 < 15)
		;
	assert_true(allocs > 0);
	assert_int_equal(off, 0);
	assert_true(mean > 0);
	ns_on = ns;
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	/* the sampler's next sample sees no probe: off for good, nothing sampled after */
	for (i = 0; i < 12 && next_round(f, &allocs, &off, &mean, &ns); i++) {
		if (i < 3)
			continue;
		assert_int_equal(off, 1);
		assert_int_equal(mean, 0);
		if (last >= 0)
			assert_int_equal(allocs, last);
		last = allocs;
		ns_off = ns;
	}
	assert_int_equal(i, 12);
	print_message("malloc+free: %.1f ns under tracekit, %.1f ns once it was killed\n",
		      ns_on, ns_off);
	fclose(f);
	/* the command outlived its tracer (reparented here): ours to end */
	assert_int_equal(children(true), 1);
	assert_no_children();
}

/* ---- a library host ------------------------------------------------------------------- */

static struct tk_session *open_cpu_cmd(char *const *argv, int grace_ms)
{
	struct tk_cpu_opts co = { .sz = sizeof(co) };
	struct tk_session_opts so = { .sz = sizeof(so), .argv = argv,
				      .command_grace_ms = grace_ms };
	char why[512] = "";
	struct tk_session *s = tk_session__open_cpu(&co, &so, why, sizeof(why));

	if (!s)
		print_error("open: %s\n", why);
	assert_non_null(s);
	return s;
}

/* A session freed while its released command runs: stopped and reaped */
static void test_host_free_stops_command(void **state)
{
	char *argv[] = { "sleep", "30", NULL };
	struct tk_session *s;
	char why[512];
	double t0;
	int pid;

	NEED_ROOT();
	s = open_cpu_cmd(argv, 0);
	assert_int_equal(tk_session__start(s, why, sizeof(why)), 0);
	pid = tk_session__command_pid(s);
	assert_true(pid > 0);
	usleep(200 * 1000);
	t0 = now();
	tk_session__free(s);
	assert_true(now() - t0 < 3);
	assert_int_equal(kill(pid, 0), -1);
	assert_int_equal(errno, ESRCH);
	assert_no_children();
}

/* finish: the command still running is stopped, and the result says so */
static void test_host_finish_notes_stop(void **state)
{
	char *argv[] = { "sleep", "30", NULL };
	struct tk_run_opts ro = { .sz = sizeof(ro), .duration_ms = 500 };
	struct tk_result *r = NULL;
	struct tk_session *s;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;
	int st;

	NEED_ROOT();
	s = open_cpu_cmd(argv, 0);
	assert_int_equal(tk_session__run(s, &ro), 0);
	assert_int_equal(tk_session__ended(s), TK_END_DURATION);
	assert_int_equal(tk_session__command_stopped(s), 0);
	assert_int_equal(tk_session__finish(s, &r), 0);
	assert_int_equal(tk_session__command_stopped(s), SIGTERM);
	st = tk_session__exit_status(s);
	assert_true(st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
	f = open_memstream(&buf, &len);
	assert_int_equal(tk_result__write(r, TK_FORMAT_JSON, f, 10), 0);
	fclose(f);
	assert_non_null(strstr(buf, "'sleep' (pid "));
	assert_non_null(strstr(buf, "was still running when the capture ended (duration): "
				    "tracekit stopped it with SIGTERM"));
	free(buf);
	tk_result__free(r);
	/* reaped at finish already, before free */
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	tk_session__free(s);
	assert_no_children();
}

/* A command that ignores SIGTERM: SIGKILL after the grace */
static void test_host_grace_then_kill(void **state)
{
	char *argv[] = { "sh", "-c", "trap '' TERM; exec sleep 30", NULL };
	struct tk_run_opts ro = { .sz = sizeof(ro), .duration_ms = 300 };
	struct tk_result *r = NULL;
	struct tk_session *s;
	double t0;
	int st;

	NEED_ROOT();
	s = open_cpu_cmd(argv, 300);
	assert_int_equal(tk_session__run(s, &ro), 0);
	t0 = now();
	assert_int_equal(tk_session__finish(s, &r), 0);
	assert_true(now() - t0 >= 0.29 && now() - t0 < 3);
	assert_int_equal(tk_session__command_stopped(s), SIGKILL);
	st = tk_session__exit_status(s);
	assert_true(st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	tk_result__free(r);
	tk_session__free(s);
	assert_no_children();
}

/*
 * A release that fails (the held command was killed meanwhile): an error, no
 * SIGPIPE for the host, and the command reaped at once, before any free.
 */
static void test_host_failed_release_reaps(void **state)
{
	char *argv[] = { "sleep", "30", NULL };
	struct tk_session *s;
	char why[512] = "";
	int pid, err;

	NEED_ROOT();
	s = open_cpu_cmd(argv, 0);
	pid = tk_session__command_pid(s);
	assert_true(pid > 0);
	assert_int_equal(kill(pid, SIGKILL), 0);
	/* a zombie now: its end of the hold channel is closed */
	for (int i = 0; i < 100; i++) {
		char path[64];
		struct stat sb;
		char *st;

		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		if (stat(path, &sb))
			break;
		st = strrchr(read_all(path), ')');
		if (st && st[2] == 'Z')
			break;
		usleep(10 * 1000);
	}
	err = tk_session__start(s, why, sizeof(why));
	assert_true(err < 0);
	print_message("start: %s\n", why);
	assert_non_null(strstr(why, "cannot run 'sleep'"));
	assert_int_equal(waitpid(-1, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	tk_session__free(s);
	assert_no_children();
}

/* An allocation session (the sampler preloaded) freed early: the same */
static void test_host_alloc_free_stops_command(void **state)
{
	char *wl = (char *)tk_test_workload("alloc_steady");
	char *argv[] = { wl, "-d", "30", NULL };
	struct tk_alloc_opts ao = { .sz = sizeof(ao) };
	struct tk_session_opts so = { .sz = sizeof(so), .argv = argv };
	char why[512] = "", dir[4096];
	struct tk_session *s;
	int pid, devnull, saved;

	NEED_ROOT();
	NEED_DEP(!access(wl, X_OK), "%s (make)\n", wl);
	/* libtkalloc.so and libtkagent.so of this build */
	assert_non_null(realpath(tk_test_build_dir(), dir));
	ao.preload_dir = dir;
	/* its rounds to /dev/null */
	saved = dup(1);
	devnull = open("/dev/null", O_WRONLY);
	dup2(devnull, 1);
	s = tk_session__open_alloc(&ao, &so, why, sizeof(why));
	dup2(saved, 1);
	close(saved);
	close(devnull);
	if (!s)
		print_error("open: %s\n", why);
	assert_non_null(s);
	assert_int_equal(tk_session__start(s, why, sizeof(why)), 0);
	pid = tk_session__command_pid(s);
	assert_true(pid > 0);
	usleep(300 * 1000);
	tk_session__free(s);
	assert_int_equal(kill(pid, 0), -1);
	assert_no_children();
}

/* A test that failed midway may leave its command: not the next test's to count */
static int end_leftovers(void **state)
{
	children(true);
	return 0;
}

static int setup(void **state)
{
	if (!mkdtemp(tmpdir))
		return -1;
	/* orphans of a tracekit run come here, not to init: counted, then ended */
	return prctl(PR_SET_CHILD_SUBREAPER, 1);
}

static int teardown(void **state)
{
	char cmd[512];

	children(true);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_teardown(test_cpu_duration_stops_command, end_leftovers),
		cmocka_unit_test_teardown(test_alloc_duration_stops_command, end_leftovers),
		cmocka_unit_test_teardown(test_record_duration_stops_command, end_leftovers),
		cmocka_unit_test_teardown(test_command_exits_first, end_leftovers),
		cmocka_unit_test_teardown(test_sampler_off_after_sigkill, end_leftovers),
		cmocka_unit_test_teardown(test_host_free_stops_command, end_leftovers),
		cmocka_unit_test_teardown(test_host_finish_notes_stop, end_leftovers),
		cmocka_unit_test_teardown(test_host_grace_then_kill, end_leftovers),
		cmocka_unit_test_teardown(test_host_failed_release_reaps, end_leftovers),
		cmocka_unit_test_teardown(test_host_alloc_free_stops_command, end_leftovers),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
