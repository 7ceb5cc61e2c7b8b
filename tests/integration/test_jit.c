// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Code the symbolizer learns of late, as a user sees it with tracekit cpu on
 * both backends: JIT code named in /tmp/perf-PID.map (cpu_jit: a command that
 * leaves its map behind as it exits, a -p process, and one in pid and mount
 * namespaces of its own, whose map is /tmp/perf-1.map in its own tmpfs), and
 * a library dlopen()ed after the capture started (cpu_dlopen), by command
 * and, with --unwind fp (no unwinder to ask for the maps again), by -p. A
 * command with --unwind fp on the bpf backend is not tested: it has exited
 * when its frames are named, and its maps cannot be read again.
 * Real JITs are not run: python3 here is 3.11 (-X perf is 3.12's), and
 * neither node nor a JVM is installed.
 *
 * And what another user may put at /tmp/perf-PID.map to make root open it:
 * a FIFO (or a symlink to one) with a writer waiting in open(2) for a reader.
 * Root must not open it — the writer stays waiting — and the profile is
 * still written.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/stat.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stdarg.h>
#include <setjmp.h>
#include <cmocka.h>

#include "spawn.h"

/*
 * Enough samples to judge a share by: the workloads burn 2-3 s at 499 Hz, but
 * a loaded machine (other builds on its 2 cores) gives them less CPU.
 */
#define MIN_SAMPLES 150

static char tmpdir[] = "/tmp/tk-jit-test.XXXXXX";
static char out[1 << 20];

static const char *path_in_tmp(const char *name)
{
	static char buf[8][512];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", tmpdir, name);
	return buf[i];
}

/* Samples of a folded file whose leaf is @leaf; the total in *total. */
static unsigned long leaf_samples(const char *file, const char *leaf, unsigned long *total)
{
	static char line[1 << 16];
	unsigned long n, with = 0;
	FILE *f = fopen(file, "r");
	size_t ll = strlen(leaf);

	assert_non_null(f);
	*total = 0;
	while (fgets(line, sizeof(line), f)) {
		char *sp = strrchr(line, ' ');

		assert_non_null(sp);
		n = strtoul(sp + 1, NULL, 10);
		*sp = '\0';
		*total += n;
		if ((size_t)(sp - line) >= ll && !strcmp(sp - ll, leaf) &&
		    (sp - line == (long)ll || sp[-(long)ll - 1] == ';'))
			with += n;
	}
	fclose(f);
	return with;
}

static int run(char **args)
{
	return tk_test_run_tracekit(out, sizeof(out), false, args);
}

/* The share of samples whose leaf is @leaf in @folded; at least @min samples in all. */
static double share(const char *what, const char *folded, const char *leaf, unsigned long min)
{
	unsigned long total, with = leaf_samples(folded, leaf, &total);

	print_message("%s: %lu samples, %lu in %s\n", what, total, with, leaf);
	assert_true(total >= min);
	return (double)with / total;
}

/* The "perfmap PATH" cpu_jit -v printed (in the captured output), removed. */
static void remove_perfmap(void)
{
	char *p = strstr(out, "perfmap /tmp/perf-"), path[64];

	if (p && sscanf(p, "perfmap %63s", path) == 1)
		unlink(path);
}

/* A command: its map is read once it has exited (its root was ours: /tmp). */
static void check_jit_command(const char *backend)
{
	const char *folded = path_in_tmp("jit.folded");
	char *args[] = { "cpu", "--backend", (char *)backend, "-F", "499", "-o", (char *)folded,
			 "--", (char *)tk_test_workload("cpu_jit"), "-v", "3", NULL };
	int rc;

	rc = run(args);
	remove_perfmap();
	assert_int_equal(rc, 0);
	assert_true(share(backend, folded, "jitted_hot", MIN_SAMPLES) >= 0.9);
}

static void test_jit_command_bpf(void **state)
{
	NEED_ROOT();
	check_jit_command("bpf");
}

static void test_jit_command_perf(void **state)
{
	NEED_ROOT();
	check_jit_command("perf");
}

/* @path @arg1 @arg2 in the background, stdout to /dev/null; its pid. */
static pid_t start(const char *path, const char *arg1, const char *arg2)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		if (!freopen("/dev/null", "w", stdout))
			_exit(127);
		execl(path, path, arg1, arg2, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* A -p process: alive when its frames are named. */
static void test_jit_pid_bpf(void **state)
{
	const char *folded = path_in_tmp("jitp.folded");
	char spid[16], map[64];
	char *args[] = { "cpu", "--backend", "bpf", "-p", spid, "-d", "2", "-F", "499", "-o",
			 (char *)folded, NULL };
	pid_t pid;
	int rc;

	NEED_ROOT();
	pid = start(tk_test_workload("cpu_jit"), "6", NULL);
	snprintf(spid, sizeof(spid), "%d", pid);
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", pid);
	usleep(200000);	/* its map written */
	rc = run(args);
	stop(pid);
	unlink(map);
	assert_int_equal(rc, 0);
	assert_true(share("bpf -p", folded, "jitted_hot", MIN_SAMPLES) >= 0.9);
}

/*
 * In pid and mount namespaces of its own with a tmpfs on /tmp: pid 1 there,
 * its map /tmp/perf-1.map in its own /tmp, which only PID/root reaches.
 */
static void test_jit_namespaces(void **state)
{
	const char *folded = path_in_tmp("jitns.folded");
	char cmd[2048], spid[16];
	char *args[] = { "cpu", "--backend", "bpf", "-p", spid, "-d", "2", "-F", "499", "-o",
			 (char *)folded, NULL };
	pid_t outer, pid = 0;
	int i, rc;

	NEED_ROOT();
	snprintf(cmd, sizeof(cmd),
		 "unshare --mount --propagation private --pid --fork sh -c "
		 "'mount -t tmpfs none /tmp && exec %s 6' >/dev/null 2>&1 & echo $!",
		 tk_test_workload("cpu_jit"));
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
	outer = atoi(out);
	assert_true(outer > 0);
	for (i = 0; i < 100 && !pid; i++) {
		char link[64], target[512];
		ssize_t n;

		snprintf(cmd, sizeof(cmd), "pgrep -P %d", outer);
		if (!tk_test_capture(cmd, out, sizeof(out)) && atoi(out) > 0) {
			snprintf(link, sizeof(link), "/proc/%d/exe", atoi(out));
			n = readlink(link, target, sizeof(target) - 1);
			if (n > 0 && (target[n] = '\0', strstr(target, "cpu_jit")))
				pid = atoi(out);
		}
		if (!pid)
			usleep(20000);
	}
	assert_true(pid > 0);
	usleep(200000);
	snprintf(spid, sizeof(spid), "%d", pid);
	rc = run(args);
	kill(pid, SIGKILL);	/* pid 1 there: the namespace, and unshare, end with it */
	assert_int_equal(rc, 0);
	/* the host has no /tmp/perf-1.map of it: the names came from its own root */
	assert_true(share("namespaces", folded, "jitted_hot", MIN_SAMPLES) >= 0.9);
}

/* ---- a perf map another user made a trap of ------------------------------------------- */

#define NOBODY 65534

static void become_nobody(void)
{
	if (setgroups(0, NULL) || setresgid(NOBODY, NOBODY, NOBODY) ||
	    setresuid(NOBODY, NOBODY, NOBODY))
		_exit(126);
}

/* A process of uid 65534 waiting in open(2) to write @fifo; its pid. */
static pid_t blocked_writer(const char *fifo)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid) {
		int fd;

		become_nobody();
		fd = open(fifo, O_WRONLY);	/* until a reader opens it */
		if (fd >= 0 && write(fd, "1 1 x\n", 6) < 0)
			_exit(2);
		_exit(fd >= 0 ? 0 : 1);
	}
	return pid;
}

/*
 * @how: "fifo" (the map is a FIFO) or "link" (a symlink to a FIFO elsewhere
 * in /tmp), both of uid 65534, whose process runs JIT code during a
 * capture of it as root.
 */
static void check_perfmap_trap(const char *how)
{
	const char *folded = path_in_tmp("trap.folded");
	char spid[16], map[64], fifo[64];
	char *args[] = { "cpu", "--backend", "bpf", "-p", spid, "-d", "2", "-F", "499", "-o",
			 (char *)folded, NULL };
	unsigned long total;
	pid_t pid, writer, waited;
	int rc, status;

	NEED_ROOT();
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		if (!freopen("/dev/null", "w", stdout))
			_exit(127);
		become_nobody();
		execl(tk_test_workload("cpu_jit"), "cpu_jit", "6", (char *)NULL);
		_exit(127);
	}
	snprintf(spid, sizeof(spid), "%d", pid);
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", pid);
	snprintf(fifo, sizeof(fifo), "/tmp/tk-trap-%d.fifo", pid);
	usleep(300000);	/* its map written: now replaced */
	assert_int_equal(unlink(map), 0);
	if (!strcmp(how, "fifo")) {
		assert_int_equal(mkfifo(map, 0666), 0);
		assert_int_equal(lchown(map, NOBODY, NOBODY), 0);
		writer = blocked_writer(map);
	} else {
		assert_int_equal(mkfifo(fifo, 0666), 0);
		assert_int_equal(lchown(fifo, NOBODY, NOBODY), 0);
		assert_int_equal(symlink(fifo, map), 0);
		assert_int_equal(lchown(map, NOBODY, NOBODY), 0);
		writer = blocked_writer(fifo);
	}
	usleep(100000);
	assert_int_equal(waitpid(writer, &status, WNOHANG), 0);
	rc = run(args);
	stop(pid);
	waited = waitpid(writer, &status, WNOHANG);
	kill(writer, SIGKILL);
	waitpid(writer, NULL, 0);
	unlink(map);
	unlink(fifo);
	/* root never opened it: the writer still waits */
	assert_int_equal(waited, 0);
	assert_int_equal(rc, 0);
	/* and the profile is there, its JIT frames unnamed */
	assert_int_equal(leaf_samples(folded, "jitted_hot", &total), 0);
	print_message("%s: %lu samples\n", how, total);
	assert_true(total > 0);
}

static void test_perfmap_fifo(void **state)
{
	check_perfmap_trap("fifo");
}

static void test_perfmap_link_to_fifo(void **state)
{
	check_perfmap_trap("link");
}

/* ---- a library dlopen()ed after the capture started ---------------------------------- */

static void check_dlopen_command(const char *backend, const char *unwind)
{
	const char *folded = path_in_tmp("dl.folded");
	char *args[] = { "cpu", "--backend", (char *)backend, "--unwind", (char *)unwind, "-F",
			 "499", "-o", (char *)folded, "--", (char *)tk_test_workload("cpu_dlopen"),
			 "1", "3", NULL };
	char what[64];

	assert_int_equal(run(args), 0);
	snprintf(what, sizeof(what), "%s --unwind %s dlopen", backend, unwind);
	/* 0.3 s before the dlopen, 3 s after: the capture came first */
	assert_true(share(what, folded, "before_dlopen", MIN_SAMPLES) > 0.02);
	assert_true(share(what, folded, "cpulate_hot", MIN_SAMPLES) >= 0.75);
}

static void test_dlopen_command_bpf(void **state)
{
	NEED_ROOT();
	check_dlopen_command("bpf", "auto");
}

static void test_dlopen_command_perf(void **state)
{
	NEED_ROOT();
	check_dlopen_command("perf", "auto");
}

/*
 * -p, captured at its first samples (before_dlopen), and no unwinder: only
 * the lookup, at the end with the process alive, reads the maps again (the
 * perf backend has the library's mmap record besides).
 */
static void check_dlopen_pid(const char *backend)
{
	const char *folded = path_in_tmp("dlp.folded");
	char spid[16], what[64];
	char *args[] = { "cpu", "--backend", (char *)backend, "--unwind", "fp", "-p", spid, "-d",
			 "3", "-F", "499", "-o", (char *)folded, NULL };
	pid_t pid;
	int rc;

	pid = start(tk_test_workload("cpu_dlopen"), "1", "6");
	snprintf(spid, sizeof(spid), "%d", pid);
	rc = run(args);
	stop(pid);
	assert_int_equal(rc, 0);
	snprintf(what, sizeof(what), "%s --unwind fp -p dlopen", backend);
	/* asleep for the first second, then 0.3 s before the dlopen: captured then */
	assert_true(share(what, folded, "before_dlopen", MIN_SAMPLES) > 0.02);
	assert_true(share(what, folded, "cpulate_hot", MIN_SAMPLES) >= 0.75);
}

static void test_dlopen_pid_fp_bpf(void **state)
{
	NEED_ROOT();
	check_dlopen_pid("bpf");
}

static void test_dlopen_pid_fp_perf(void **state)
{
	NEED_ROOT();
	check_dlopen_pid("perf");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_jit_command_bpf),
		cmocka_unit_test(test_jit_command_perf),
		cmocka_unit_test(test_jit_pid_bpf),
		cmocka_unit_test(test_jit_namespaces),
		cmocka_unit_test(test_perfmap_fifo),
		cmocka_unit_test(test_perfmap_link_to_fifo),
		cmocka_unit_test(test_dlopen_command_bpf),
		cmocka_unit_test(test_dlopen_command_perf),
		cmocka_unit_test(test_dlopen_pid_fp_bpf),
		cmocka_unit_test(test_dlopen_pid_fp_perf),
	};
	int ret;

	if (!mkdtemp(tmpdir))
		return 1;
	ret = cmocka_run_group_tests(tests, NULL, NULL);
	if (!getenv("TK_KEEP_TMP")) {
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		if (system(cmd))
			ret = ret ? ret : 1;
	}
	return ret;
}
