// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * tk_open_untrusted(): what another user may put at a name root opens. In a
 * fixture tree: a regular file is read; a symlink (last part or directory),
 * a FIFO with a writer waiting (it must stay waiting: nothing opened it), a
 * device, a directory, a name leaving the root, a file over the size asked,
 * an owner not expected, another name of someone else's file, a bind mount
 * over the name (as root, in a mount namespace of its own) are refused; each
 * with openat2 and with the walk of kernels without it.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../lib/fixture.h"
#include "../lib/spawn.h"
#include "core/untrusted.h"

static struct fx *fx;
static int rootfd;

static int setup(void **state)
{
	char p[PATH_MAX];

	fx = fx_new();
	if (!fx)
		return -1;
	fx_write(fx, "tmp/perf-1.map", "1000 10 f\n");
	fx_mkdir(fx, "real");
	fx_write(fx, "real/secret", "root only\n");
	fx_symlink(fx, "/real/secret", "tmp/link-abs");
	fx_symlink(fx, "../real/secret", "tmp/link-rel");
	fx_symlink(fx, "/real", "dirlink");
	fx_mkdir(fx, "tmp/dir");
	fx_path(fx, "tmp/fifo", p, sizeof(p));
	if (mkfifo(p, 0666))
		return -1;
	fx_path(fx, "", p, sizeof(p));
	rootfd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return rootfd < 0 ? -1 : 0;
}

static int teardown(void **state)
{
	close(rootfd);
	fx_free(fx);
	return 0;
}

/* The rules for the current user's files, with or without openat2. */
static struct tk_open_rules mine(unsigned int flags)
{
	return (struct tk_open_rules){ .flags = flags | TK_OPEN_IN_ROOT,
				       .owners = { geteuid() }, .nr_owners = 1 };
}

static const unsigned int modes[] = { 0, TK_OPEN_NO_OPENAT2 };

static void test_regular_file(void **state)
{
	struct stat st;
	char buf[32];
	size_t i;

	for (i = 0; i < 2; i++) {
		struct tk_open_rules r = mine(modes[i]);
		int fd = tk_open_untrusted(rootfd, "/tmp/perf-1.map", &r, &st);
		ssize_t n;

		assert_true(fd >= 0);
		assert_true(S_ISREG(st.st_mode));
		n = read(fd, buf, sizeof(buf) - 1);
		assert_int_equal(n, 10);
		buf[n] = 0;
		assert_string_equal(buf, "1000 10 f\n");
		/* not blocking, not a terminal, closed at exec */
		assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
		assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
		assert_int_equal(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
		close(fd);
		/* relative, and "." parts */
		fd = tk_open_untrusted(rootfd, "tmp/./perf-1.map", &r, NULL);
		assert_true(fd >= 0);
		close(fd);
	}
}

static void test_symlinks(void **state)
{
	size_t i;
	int fd;

	for (i = 0; i < 2; i++) {
		struct tk_open_rules r = mine(modes[i]);

		assert_int_equal(tk_open_untrusted(rootfd, "/tmp/link-abs", &r, NULL), -ELOOP);
		assert_int_equal(tk_open_untrusted(rootfd, "/tmp/link-rel", &r, NULL), -ELOOP);
		/* a symlink as a directory */
		assert_int_equal(tk_open_untrusted(rootfd, "/dirlink/secret", &r, NULL), -ELOOP);
		/* a magic link */
		r.flags &= ~TK_OPEN_IN_ROOT;
		fd = tk_open_untrusted(AT_FDCWD, "/proc/self/fd/0", &r, NULL);
		assert_true(fd == -ELOOP);
	}
	/* followed, with openat2: inside the root ("/real" is the fixture's) */
	{
		struct tk_open_rules r = mine(TK_OPEN_FOLLOW);
		struct stat st, want;
		char p[PATH_MAX];

		fd = tk_open_untrusted(rootfd, "/tmp/link-abs", &r, &st);
		assert_true(fd >= 0);
		close(fd);
		fx_path(fx, "real/secret", p, sizeof(p));
		assert_int_equal(stat(p, &want), 0);
		assert_true(st.st_ino == want.st_ino && st.st_dev == want.st_dev);
		/* without openat2 nothing is followed */
		r.flags |= TK_OPEN_NO_OPENAT2;
		assert_int_equal(tk_open_untrusted(rootfd, "/tmp/link-abs", &r, NULL), -ELOOP);
	}
}

static void test_leaving_the_root(void **state)
{
	size_t i;

	for (i = 0; i < 2; i++) {
		struct tk_open_rules r = mine(modes[i]);
		int err;

		/* in the root, ".." of "/" is "/" (openat2); the walk refuses ".." */
		err = tk_open_untrusted(rootfd, "/../../../../etc/passwd", &r, NULL);
		assert_true(err == (modes[i] ? -EXDEV : -ENOENT));
		r.flags = (r.flags & ~TK_OPEN_IN_ROOT) | TK_OPEN_BENEATH;
		assert_int_equal(tk_open_untrusted(rootfd, "tmp/../../etc/passwd", &r, NULL),
				 -EXDEV);
		assert_int_equal(tk_open_untrusted(rootfd, "/etc/passwd", &r, NULL), -EXDEV);
		/* a root needs a directory */
		assert_int_equal(tk_open_untrusted(AT_FDCWD, "/etc/passwd", &r, NULL), -EINVAL);
	}
}

static void test_not_regular(void **state)
{
	size_t i;

	for (i = 0; i < 2; i++) {
		struct tk_open_rules r = mine(modes[i]);

		assert_int_equal(tk_open_untrusted(rootfd, "/tmp/dir", &r, NULL), -EISDIR);
		assert_int_equal(tk_open_untrusted(rootfd, "/tmp/", &r, NULL), -EISDIR);
		assert_int_equal(tk_open_untrusted(rootfd, "/tmp/fifo", &r, NULL), -ENODEV);
		/* a device (root's): never opened */
		r.flags &= ~TK_OPEN_IN_ROOT;
		r.flags |= TK_OPEN_ANY_OWNER;
		assert_int_equal(tk_open_untrusted_path("/dev/null", &r, NULL), -ENODEV);
		r.flags |= TK_OPEN_IN_ROOT;
		assert_int_equal(tk_open_untrusted(rootfd, "/dev/null", &r, NULL), -ENOENT);
	}
}

/*
 * A writer waits in open(2) on the FIFO for a reader. Had the helper opened
 * it for reading, even O_NONBLOCK, the writer would be let through.
 */
static void test_fifo_writer_stays_blocked(void **state)
{
	char p[PATH_MAX];
	int status, fd;
	size_t i;
	pid_t pid;

	fx_path(fx, "tmp/fifo", p, sizeof(p));
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		fd = open(p, O_WRONLY);	/* blocks until a reader opens it */
		_exit(fd >= 0 ? 0 : 1);
	}
	usleep(100 * 1000);
	for (i = 0; i < 2; i++) {
		struct tk_open_rules r = mine(modes[i] | TK_OPEN_FOLLOW * !modes[i]);

		assert_int_equal(tk_open_untrusted(rootfd, "/tmp/fifo", &r, NULL), -ENODEV);
	}
	usleep(200 * 1000);
	assert_int_equal(waitpid(pid, &status, WNOHANG), 0);
	/* now a reader: the writer goes on */
	fd = open(p, O_RDONLY | O_NONBLOCK);
	assert_true(fd >= 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(fd);
}

static void test_owner_size_links(void **state)
{
	uid_t other = geteuid() == 65534 ? 65533 : 65534;
	char p[PATH_MAX], q[PATH_MAX];
	size_t i;

	fx_path(fx, "tmp/private", p, sizeof(p));
	for (i = 0; i < 2; i++) {
		struct tk_open_rules r = mine(modes[i]);
		int fd;

		fx_write(fx, "tmp/private", "x");
		/* not the owner expected (root's files are, unless READABLE) */
		r.owners[0] = other;
		if (geteuid())
			assert_int_equal(tk_open_untrusted(rootfd, "/tmp/private", &r, NULL),
					 -EPERM);
		/* READABLE: what @other could read by the mode bits */
		r.flags |= TK_OPEN_READABLE;
		chmod(p, 0600);
		assert_int_equal(tk_open_untrusted(rootfd, "/tmp/private", &r, NULL), -EPERM);
		chmod(p, 0644);
		fd = tk_open_untrusted(rootfd, "/tmp/private", &r, NULL);
		assert_true(fd >= 0);
		close(fd);
		/* the owner itself, with S_IRUSR */
		r.owners[0] = geteuid();
		chmod(p, 0400);
		fd = tk_open_untrusted(rootfd, "/tmp/private", &r, NULL);
		assert_true(fd >= 0);
		close(fd);
		chmod(p, 0600);
		r.flags &= ~TK_OPEN_READABLE;
		/* size */
		r.max_size = 1;
		fd = tk_open_untrusted(rootfd, "/tmp/private", &r, NULL);
		assert_true(fd >= 0);
		close(fd);
		fx_write(fx, "tmp/private", "xy");
		assert_int_equal(tk_open_untrusted(rootfd, "/tmp/private", &r, NULL), -EFBIG);
		r.max_size = 0;
		/* another name of someone else's file: refused with ONE_LINK */
		fx_path(fx, "tmp/hardlink", q, sizeof(q));
		unlink(q);
		assert_int_equal(link(p, q), 0);
		r.flags |= TK_OPEN_ONE_LINK;
		fd = tk_open_untrusted(rootfd, "/tmp/hardlink", &r, NULL);
		assert_true(fd >= 0);	/* ours */
		close(fd);
		if (!geteuid()) {
			/* root's file, another name, the owner expected another user */
			r.owners[0] = other;
			assert_int_equal(tk_open_untrusted(rootfd, "/tmp/hardlink", &r, NULL),
					 -EMLINK);
		}
		unlink(q);
	}
}

/*
 * A bind mount over the name (what a user does in a mount namespace of its
 * own to make /tmp/perf-PID.map a file it could not read): refused. Needs
 * root (unshare CLONE_NEWNS): skipped otherwise.
 */
static void test_bind_mount_over_the_name(void **state)
{
	char src[PATH_MAX], dst[PATH_MAX];
	int status;
	pid_t pid;

	if (geteuid()) {
		print_message("  skipped: mounting needs root\n");
		skip();
	}
	fx_path(fx, "real/secret", src, sizeof(src));
	fx_write(fx, "tmp/perf-2.map", "");
	fx_path(fx, "tmp/perf-2.map", dst, sizeof(dst));
	pid = fork();
	assert_true(pid >= 0);
	if (!pid) {
		struct tk_open_rules r = mine(0);
		int a, b, dfd;

		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
		    mount(src, dst, NULL, MS_BIND, NULL))
			_exit(77);
		/* the tree as this namespace has it (rootfd is of the one before) */
		dfd = open(fx->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		a = tk_open_untrusted(dfd, "/tmp/perf-2.map", &r, NULL);
		r.flags |= TK_OPEN_NO_OPENAT2;
		b = tk_open_untrusted(dfd, "/tmp/perf-2.map", &r, NULL);
		_exit(a == -EXDEV && b == -EXDEV ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	if (WEXITSTATUS(status) == 77) {
		print_message("  skipped: no mount namespace here\n");
		skip();
	}
	assert_int_equal(WEXITSTATUS(status), 0);
}

/*
 * openat2 refused by a seccomp filter, as container runtimes' profiles do
 * (ENOSYS, or EPERM in older ones): the walk takes over, as strict.
 */
static void test_openat2_refused(void **state)
{
	static const int errs[] = { ENOSYS, EPERM };
	size_t i;

	for (i = 0; i < 2; i++) {
		int status;
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (!pid) {
			struct tk_open_rules r = mine(0);
			int fd;

			if (tk_test_deny_syscall(SYS_openat2, errs[i]))
				_exit(77);
			fd = tk_open_untrusted(rootfd, "/tmp/perf-1.map", &r, NULL);
			if (fd < 0)
				_exit(1);
			close(fd);
			if (tk_open_untrusted(rootfd, "/tmp/link-abs", &r, NULL) != -ELOOP ||
			    tk_open_untrusted(rootfd, "/tmp/fifo", &r, NULL) != -ENODEV ||
			    tk_open_untrusted(rootfd, "/../etc/passwd", &r, NULL) != -EXDEV)
				_exit(2);
			_exit(0);
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFEXITED(status));
		if (WEXITSTATUS(status) == 77) {
			print_message("  skipped: no seccomp here\n");
			skip();
		}
		assert_int_equal(WEXITSTATUS(status), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_regular_file),
		cmocka_unit_test(test_symlinks),
		cmocka_unit_test(test_leaving_the_root),
		cmocka_unit_test(test_not_regular),
		cmocka_unit_test(test_fifo_writer_stays_blocked),
		cmocka_unit_test(test_owner_size_links),
		cmocka_unit_test(test_bind_mount_over_the_name),
		cmocka_unit_test(test_openat2_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
