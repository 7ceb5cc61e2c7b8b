// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Output files and signals, with real tracekit processes: files are 0600; a
 * FIFO nobody reads (or a missing directory) is refused before the capture,
 * within seconds, never a hang; a FIFO with a reader gets the whole profile;
 * what a SIGKILL'd run left of an output (PATH.tmp.PID.N, and the jemalloc
 * backend's /tmp/tracekit-je.PID.XXXXXX) goes at the next run, and only that;
 * SIGHUP writes whole files like SIGINT (and nohup's ignored SIGHUP stays
 * ignored); `| head` leaves the -o files whole and exits 141; another user's
 * FIFO at an output path, there at the start or put there during the
 * capture with its reader waiting, gets nothing. Profiles are
 * read back by go tool pprof. A missing dependency is a skip, a failure
 * under CI=true.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stdarg.h>
#include <setjmp.h>
#include <cmocka.h>

#include "need.h"

#include "spawn.h"

static char tmpdir[] = "/tmp/tk-outputs-test.XXXXXX";
static char out[1 << 16];

static const char *path_in_tmp(const char *name)
{
	static char buf[8][512];
	static int i;

	i = (i + 1) % 8;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", tmpdir, name);
	return buf[i];
}


static void need_go(void)
{
	NEED_DEP(system("command -v go >/dev/null 2>&1") == 0, "go (for go tool pprof)\n");
}

static void need_workload(const char *name)
{
	NEED_DEP(access(tk_test_workload(name), X_OK) == 0, "%s (make the workloads)\n",
	     tk_test_workload(name));
}

/* go tool pprof reads @pb whole */
static void assert_pprof_whole(const char *pb)
{
	char cmd[1024];

	snprintf(cmd, sizeof(cmd),
		 "HOME=${HOME:-/tmp} PPROF_TMPDIR=%s go tool pprof -top %s >/dev/null 2>&1", tmpdir,
		 pb);
	if (system(cmd) != 0)
		fail_msg("go tool pprof cannot read %s", pb);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * build/tracekit ARGS in a process group of its own (so that the command it
 * starts can be killed with it), stdout to /dev/null, stderr to @err_file
 * (NULL: passed through); with SIGHUP ignored when @ignore_hup (as nohup does).
 */
static pid_t start_tracekit(char *const args[], const char *err_file, bool ignore_hup)
{
	char path[512], *argv[32] = { path };
	pid_t pid;
	int i;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		int fd = open("/dev/null", O_WRONLY);

		setpgid(0, 0);
		if (fd >= 0)
			dup2(fd, 1);
		if (err_file) {
			fd = open(err_file, O_WRONLY | O_CREAT | O_TRUNC, 0600);
			if (fd >= 0)
				dup2(fd, 2);
		}
		/* as a terminal's shell starts it, whatever this test inherited (nohup) */
		signal(SIGHUP, ignore_hup ? SIG_IGN : SIG_DFL);
		snprintf(path, sizeof(path), "%s/tracekit", tk_test_build_dir());
		for (i = 0; args[i] && i < 30; i++)
			argv[i + 1] = args[i];
		execv(path, argv);
		_exit(121);
	}
	setpgid(pid, pid);
	return pid;
}

/* Wait at most @limit seconds for @pid: its exit status, or -1 (killed, with its group). */
static int wait_for(pid_t pid, double limit, double *took)
{
	double t0 = now_s();
	int status;

	for (;;) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			break;
		if (now_s() - t0 > limit) {
			kill(-pid, SIGKILL);
			waitpid(pid, &status, 0);
			*took = now_s() - t0;
			return -1;
		}
		usleep(20 * 1000);
	}
	*took = now_s() - t0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static bool file_has(const char *path, const char *needle)
{
	char buf[8192];
	size_t n;
	FILE *f = fopen(path, "r");

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return strstr(buf, needle) != NULL;
}

/* A pid that is not alive: a child that has exited and been reaped. */
static pid_t dead_pid(void)
{
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (!pid)
		_exit(0);
	assert_int_equal(waitpid(pid, NULL, 0), pid);
	return pid;
}

/* Profiles name paths and command lines: 0600, whatever the umask; /dev/null still works */
static void test_files_are_private(void **state)
{
	const char *pb = path_in_tmp("mode.pb.gz"), *folded = path_in_tmp("mode.folded");
	char *args[] = { "cpu", "-d", "1", "-o", (char *)pb, "-o", (char *)folded, NULL };
	char *devnull[] = { "cpu", "-d", "1", "--format", "text", "-o", "/dev/null", NULL };
	struct stat st;
	mode_t old;

	NEED_ROOT();
	old = umask(022);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	umask(old);
	assert_int_equal(stat(pb, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(stat(folded, &st), 0);
	assert_int_equal(st.st_mode & 07777, 0600);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, devnull), 0);
	assert_int_equal(stat("/dev/null", &st), 0);
	assert_true(S_ISCHR(st.st_mode));
}

/* A FIFO nobody reads, or a missing directory: an error at once, before a 30 s capture */
static void test_unwritable_output_refused_at_start(void **state)
{
	const char *fifo = path_in_tmp("noreader.pb.gz"), *err = path_in_tmp("noreader.err");
	char *args[] = { "cpu", "-d", "30", "-o", (char *)fifo, NULL };
	char *nodir[] = { "cpu", "-d", "30", "-o", (char *)path_in_tmp("no/such/x.pb.gz"), NULL };
	double took;
	pid_t tk;

	NEED_ROOT();
	assert_int_equal(mkfifo(fifo, 0600), 0);
	tk = start_tracekit(args, err, false);
	assert_int_equal(wait_for(tk, 10, &took), 1);
	print_message("FIFO without a reader: exit 1 after %.2f s\n", took);
	assert_true(took < 5);
	assert_true(file_has(err, "is a FIFO nobody reads"));

	tk = start_tracekit(nodir, err, false);
	assert_int_equal(wait_for(tk, 10, &took), 1);
	assert_true(took < 5);
	assert_true(file_has(err, "No such file or directory"));
}

/* A FIFO with a reader gets the whole profile: opened at the start and held, never reopened */
static void test_fifo_with_reader(void **state)
{
	const char *fifo = path_in_tmp("reader.pb.gz"), *copy = path_in_tmp("copy.pb.gz");
	char *args[] = { "cpu", "-d", "2", "-o", (char *)fifo, NULL };
	double took;
	pid_t reader;
	int hold;

	NEED_ROOT();
	need_go();
	assert_int_equal(mkfifo(fifo, 0600), 0);
	/* a reader is there from now on, whenever the child below gets to its open */
	hold = open(fifo, O_RDONLY | O_NONBLOCK);
	assert_true(hold >= 0);
	fflush(NULL);
	reader = fork();
	assert_true(reader >= 0);
	if (!reader) {
		char buf[65536];
		int in = open(fifo, O_RDONLY), o = open(copy, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		ssize_t n;

		if (in < 0 || o < 0)
			_exit(2);
		while ((n = read(in, buf, sizeof(buf))) > 0)
			if (write(o, buf, n) != n)
				_exit(3);
		_exit(n < 0 ? 4 : 0);
	}
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	close(hold);
	assert_int_equal(wait_for(reader, 10, &took), 0);
	assert_pprof_whole(copy);
}

static void touch(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "partial", 7), 7);
	close(fd);
}

/* What a SIGKILL'd run left of the same output goes; a live pid's and other names stay */
static void test_stale_temporary_removed(void **state)
{
	const char *pb = path_in_tmp("stale.pb.gz"), *pb2 = path_in_tmp("killed.pb.gz");
	char dead_tmp[600], alive_tmp[600], other[600], cmd[1200];
	char *args[] = { "cpu", "-d", "1", "-o", (char *)pb, NULL };
	char *kill_args[] = { "cpu", "-d", "30", "-o", (char *)pb2, NULL };
	pid_t dead = dead_pid(), tk;
	double took;

	NEED_ROOT();
	need_go();
	snprintf(dead_tmp, sizeof(dead_tmp), "%s.tmp.%d.0", pb, (int)dead);
	snprintf(alive_tmp, sizeof(alive_tmp), "%s.tmp.%d.0", pb, (int)getpid());
	snprintf(other, sizeof(other), "%s.tmp.%d.0.keep", pb, (int)dead);
	touch(dead_tmp);
	touch(alive_tmp);
	touch(other);
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, args), 0);
	assert_int_equal(access(dead_tmp, F_OK), -1);
	assert_int_equal(access(alive_tmp, F_OK), 0);
	assert_int_equal(access(other, F_OK), 0);
	assert_pprof_whole(pb);

	/*
	 * A real SIGKILL during the capture: no output, only its temporary
	 * file (held from the start, so that nothing another user puts at the
	 * name meanwhile is written), which the next run of it removes.
	 */
	tk = start_tracekit(kill_args, NULL, false);
	usleep(1500 * 1000);
	kill(tk, SIGKILL);
	assert_int_equal(wait_for(tk, 10, &took), -1);
	snprintf(cmd, sizeof(cmd), "test $(ls %s.tmp.* | wc -l) = 1", pb2);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(access(pb2, F_OK), -1);
	kill_args[2] = "1";
	assert_int_equal(tk_test_run_tracekit(out, sizeof(out), false, kill_args), 0);
	snprintf(cmd, sizeof(cmd), "ls %s.tmp.* >/dev/null 2>&1", pb2);
	assert_int_not_equal(system(cmd), 0);
	assert_pprof_whole(pb2);
}

/* The jemalloc backend's directory a SIGKILL left goes at the next start; a live one's stays */
static void test_stale_je_dir_removed(void **state)
{
	const char *pb = path_in_tmp("je.pb.gz");
	char *args[] = { "alloc", "--backend", "jemalloc", "-o", (char *)pb, "--",
			 (char *)tk_test_workload("alloc_leak"), "-d", "1", "--leak-bytes",
			 "1048576", NULL };
	char dead_dir[128], alive_dir[128], odd_dir[128], dump[200];
	bool dead_gone, alive_kept, odd_kept;
	pid_t dead = dead_pid();
	int status;

	NEED_ROOT();
	need_workload("alloc_leak");
	NEED_DEP(access("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", R_OK) == 0,
	     "libjemalloc2 (tools/install-deps.sh installs it)\n");
	snprintf(dead_dir, sizeof(dead_dir), "/tmp/tracekit-je.%d.Ab12Cd", (int)dead);
	snprintf(alive_dir, sizeof(alive_dir), "/tmp/tracekit-je.%d.Ab12Cd", (int)getpid());
	snprintf(odd_dir, sizeof(odd_dir), "/tmp/tracekit-je.%d.Ab12Cd.keep", (int)dead);
	assert_int_equal(mkdir(dead_dir, 0700), 0);
	assert_int_equal(mkdir(alive_dir, 0700), 0);
	assert_int_equal(mkdir(odd_dir, 0700), 0);
	snprintf(dump, sizeof(dump), "%s/jeprof.%d.0.f.heap", dead_dir, (int)dead);
	touch(dump);

	status = tk_test_run_tracekit(out, sizeof(out), false, args);
	dead_gone = access(dead_dir, F_OK) == -1;
	alive_kept = rmdir(alive_dir) == 0;
	odd_kept = rmdir(odd_dir) == 0;
	/* whatever the outcome, nothing of the test's stays in /tmp */
	unlink(dump);
	rmdir(dead_dir);
	assert_int_equal(status, 0);
	assert_true(dead_gone);
	assert_true(alive_kept);
	assert_true(odd_kept);
}

/* A closed terminal (SIGHUP) ends the capture like Ctrl-C: whole file, exit 0 */
static void test_sighup_writes_whole_output(void **state)
{
	const char *pb = path_in_tmp("sighup.pb.gz");
	char *args[] = { "cpu", "-d", "30", "-o", (char *)pb, "--",
			 (char *)tk_test_workload("cpu_split"), "20", NULL };
	double took;
	pid_t tk;

	NEED_ROOT();
	need_go();
	need_workload("cpu_split");
	tk = start_tracekit(args, NULL, false);
	/* the handlers are set once the session is open: a fresh machine's start can take seconds */
	assert_int_equal(tk_test_wait_attached(tk, 20000), 0);
	kill(tk, SIGHUP);
	assert_int_equal(wait_for(tk, 15, &took), 0);
	kill(-tk, SIGKILL);	/* the workload, which a real hangup would have ended too */
	print_message("SIGHUP: exit 0 after %.2f s\n", took);
	assert_true(took < 10);
	assert_pprof_whole(pb);
}

/* Started with SIGHUP ignored (nohup): a hangup does not end the capture; SIGINT does */
static void test_nohup_keeps_sighup_ignored(void **state)
{
	const char *pb = path_in_tmp("nohup.pb.gz");
	char *args[] = { "cpu", "-d", "30", "-o", (char *)pb, NULL };
	double took;
	pid_t tk;
	int status;

	NEED_ROOT();
	need_go();
	tk = start_tracekit(args, NULL, true);
	assert_int_equal(tk_test_wait_attached(tk, 20000), 0);
	kill(tk, SIGHUP);
	usleep(1000 * 1000);
	assert_int_equal(waitpid(tk, &status, WNOHANG), 0);
	kill(tk, SIGINT);
	assert_int_equal(wait_for(tk, 15, &took), 0);
	assert_pprof_whole(pb);
}

/* `| head -c 1`: SIGPIPE does not kill tracekit; the -o file is whole; stdout's loss is 141 */
static void test_closed_stdout(void **state)
{
	const char *pb = path_in_tmp("head.pb.gz"), *pb2 = path_in_tmp("head-i.pb.gz");
	char cmd[2048];

	NEED_ROOT();
	need_go();
	need_workload("cpu_split");
	NEED_DEP(system("command -v bash >/dev/null 2>&1") == 0, "bash\n");
	/* as the issue says it: nothing of tracekit's goes to stdout here */
	snprintf(cmd, sizeof(cmd), "bash -c '%s/tracekit cpu -d 2 -o %s -- %s 3 | head -c 1 "
		 ">/dev/null; echo ${PIPESTATUS[0]}'", tk_test_build_dir(), pb,
		 tk_test_workload("cpu_split"));
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
	assert_int_equal(atoi(out), 0);
	assert_pprof_whole(pb);

	/* interval reports on stdout: head leaves after one byte, the next report meets EPIPE */
	snprintf(cmd, sizeof(cmd), "bash -c '%s/tracekit cpu -d 2 -i 0.5 -o %s -- %s 3 | "
		 "head -c 1 >/dev/null; echo ${PIPESTATUS[0]}'", tk_test_build_dir(), pb2,
		 tk_test_workload("cpu_split"));
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
	print_message("-i 0.5 -o FILE | head -c 1: exit %d\n", atoi(out));
	assert_int_equal(atoi(out), 141);
	assert_pprof_whole(pb2);

	/* stdout the only output: the capture ends at once, not after -d */
	snprintf(cmd, sizeof(cmd), "bash -c 'SECONDS=0; %s/tracekit cpu -d 30 -i 0.5 | head -c 1 "
		 ">/dev/null; echo ${PIPESTATUS[0]} $SECONDS'", tk_test_build_dir());
	assert_int_equal(tk_test_capture(cmd, out, sizeof(out)), 0);
	print_message("-d 30 -i 0.5 | head -c 1: exit and seconds %s", out);
	assert_int_equal(atoi(out), 141);
	assert_true(atoi(strchr(out, ' ') + 1) < 10);
}

/* ---- another user's FIFO at an output path ------------------------------------------- */

#define NOBODY 65534

/* /tmp as it is: a directory everyone writes into, sticky; in tmpdir (0711). */
static const char *shared_dir(void)
{
	const char *dir = path_in_tmp("shared");

	mkdir(dir, 0755);
	assert_int_equal(chmod(tmpdir, 0711), 0);
	assert_int_equal(chmod(dir, 01777), 0);
	return dir;
}

/*
 * uid 65534 makes a FIFO at @path (unless @exists) and reads it to the end:
 * its exit code is 0 when it read nothing, 1 when something reached it.
 */
static pid_t fifo_reader(const char *path, bool exists)
{
	pid_t pid;

	fflush(NULL);
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		char buf[4096];
		long total = 0;
		ssize_t n;
		int fd;

		if (setresgid(NOBODY, NOBODY, NOBODY) || setresuid(NOBODY, NOBODY, NOBODY))
			_exit(2);
		if (!exists && mkfifo(path, 0666))
			_exit(3);
		fd = open(path, O_RDONLY);	/* waits for a writer */
		if (fd < 0)
			_exit(4);
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			total += n;
		_exit(total ? 1 : 0);
	}
	return pid;
}

/* The reader's verdict: 0 (nothing reached it, or it still waits for a writer), else 1. */
static int reader_got(pid_t reader)
{
	int status;
	pid_t r = waitpid(reader, &status, WNOHANG);

	if (r == 0) {
		kill(reader, SIGKILL);
		waitpid(reader, &status, 0);
		return 0;
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Another user's FIFO at the -o path, its reader waiting: refused at once, said why */
static void test_fifo_of_another_user_refused(void **state)
{
	const char *pb = path_in_tmp("shared/cpu.pb.gz"), *err = path_in_tmp("nobody.err");
	char *args[] = { "cpu", "-d", "10", "-o", (char *)pb, NULL };
	pid_t tk, reader;
	double took;
	int rc;

	NEED_ROOT();
	shared_dir();
	unlink(pb);
	assert_int_equal(mkfifo(pb, 0666), 0);
	assert_int_equal(lchown(pb, NOBODY, NOBODY), 0);
	reader = fifo_reader(pb, true);
	usleep(100 * 1000);
	tk = start_tracekit(args, err, false);
	rc = wait_for(tk, 8, &took);
	print_message("another user's FIFO: exit %d after %.2f s\n", rc, took);
	assert_int_equal(reader_got(reader), 0);
	unlink(pb);
	assert_int_equal(rc, 1);
	assert_true(file_has(err, "is a FIFO of uid 65534, not ours"));
}

/*
 * The output path free at the start, and a FIFO another user puts there
 * during the capture, with its reader waiting: the profile is written as a
 * file in its place (the FIFO replaced), never into the FIFO.
 */
static void test_fifo_put_during_capture_gets_nothing(void **state)
{
	const char *pb = path_in_tmp("shared/late.pb.gz");
	char *args[] = { "cpu", "-d", "3", "-o", (char *)pb, NULL };
	struct stat st;
	pid_t tk, reader;
	double took;
	int rc;

	NEED_ROOT();
	need_go();
	shared_dir();
	unlink(pb);
	tk = start_tracekit(args, NULL, false);
	usleep(1000 * 1000);
	reader = fifo_reader(pb, false);
	rc = wait_for(tk, 20, &took);
	usleep(200 * 1000);
	assert_int_equal(reader_got(reader), 0);
	assert_int_equal(rc, 0);
	assert_int_equal(lstat(pb, &st), 0);
	assert_true(S_ISREG(st.st_mode) && st.st_uid == 0);
	assert_pprof_whole(pb);
	unlink(pb);
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
		cmocka_unit_test(test_files_are_private),
		cmocka_unit_test(test_unwritable_output_refused_at_start),
		cmocka_unit_test(test_fifo_with_reader),
		cmocka_unit_test(test_stale_temporary_removed),
		cmocka_unit_test(test_stale_je_dir_removed),
		cmocka_unit_test(test_sighup_writes_whole_output),
		cmocka_unit_test(test_nohup_keeps_sighup_ignored),
		cmocka_unit_test(test_closed_stdout),
		cmocka_unit_test(test_fifo_of_another_user_refused),
		cmocka_unit_test(test_fifo_put_during_capture_gets_nothing),
	};

	/* TK_TEST_FILTER="*fifo*" runs a subset (cmocka's glob) */
	if (getenv("TK_TEST_FILTER"))
		cmocka_set_test_filter(getenv("TK_TEST_FILTER"));
	return cmocka_run_group_tests_name("outputs", tests, setup, teardown);
}
