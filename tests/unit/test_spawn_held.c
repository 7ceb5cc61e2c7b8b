// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Starting a held command (core/spawn_held.c): it runs only once released,
 * with the caller's signal mask and ignored signals not passed on, and an
 * exec failure comes back as its errno; a release of a command that died is
 * an error, not a SIGPIPE; ending one (tk_spawn_stop): SIGTERM, SIGKILL
 * after the grace, reaped, and nothing sent to one already gone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/spawn_held.h"

/* Run @argv held, release it, and return its wait status. */
static int run_held(char *const *argv, int *exec_err)
{
	int rel, errfd, status;
	pid_t pid;

	pid = tk_spawn_held(argv, NULL, -1, &rel, &errfd);
	assert_true(pid > 0);
	*exec_err = tk_spawn_release(&rel, &errfd);
	assert_int_equal(rel, -1);
	assert_int_equal(errfd, -1);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

/*
 * A caller that blocks SIGINT and SIGTERM and ignores SIGINT: the command
 * starts with an empty mask and SIGINT at its default (a shell's status line
 * says so: SigBlk and SigIgn hold neither bit).
 */
static void test_mask_not_inherited(void **state)
{
	char *argv[] = { "sh", "-c",
			 "m=$(sed -n 's/^SigBlk:[[:space:]]*//p' /proc/self/status); "
			 "i=$(sed -n 's/^SigIgn:[[:space:]]*//p' /proc/self/status); "
			 "[ $((0x$m & 0x4002)) -eq 0 ] && [ $((0x$i & 0x2)) -eq 0 ]",
			 NULL };
	sigset_t block, old;
	int status, err;

	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	assert_int_equal(sigprocmask(SIG_BLOCK, &block, &old), 0);
	signal(SIGINT, SIG_IGN);
	status = run_held(argv, &err);
	signal(SIGINT, SIG_DFL);
	sigprocmask(SIG_SETMASK, &old, NULL);
	assert_int_equal(err, 0);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* A command that does not exist: its exec errno, and it exits 127 */
static void test_exec_error(void **state)
{
	char *argv[] = { "/nonexistent/tk-no-such-command", NULL };
	int status, err;

	status = run_held(argv, &err);
	assert_int_equal(err, ENOENT);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 127);
}

/* Start @argv held and released: its pid (and *@pidfd, or -1). */
static pid_t start_running(char *const *argv, int *pidfd)
{
	int rel, errfd;
	pid_t pid = tk_spawn_held(argv, NULL, -1, &rel, &errfd);

	assert_true(pid > 0);
	*pidfd = syscall(SYS_pidfd_open, pid, 0);
	assert_int_equal(tk_spawn_release(&rel, &errfd), 0);
	return pid;
}

/* A command that ends on SIGTERM: SIGTERM, within the grace, and reaped */
static void test_stop_sigterm(void **state)
{
	char *argv[] = { "sleep", "30", NULL };
	int pidfd, status;
	pid_t pid = start_running(argv, &pidfd);

	assert_int_equal(tk_spawn_stop(pid, pidfd, 5000, &status), SIGTERM);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	assert_int_equal(waitpid(pid, NULL, WNOHANG), -1);
	assert_int_equal(errno, ECHILD);
	if (pidfd >= 0)
		close(pidfd);
}

/* One that ignores SIGTERM: SIGKILL once the grace is over, and reaped */
static void test_stop_sigkill_after_grace(void **state)
{
	char *argv[] = { "sh", "-c", "trap '' TERM; echo ready; exec sleep 30", NULL };
	struct timespec a, b;
	int pidfd, status;
	pid_t pid = start_running(argv, &pidfd);

	usleep(200 * 1000);	/* its trap is set */
	clock_gettime(CLOCK_MONOTONIC, &a);
	assert_int_equal(tk_spawn_stop(pid, pidfd, 300, &status), SIGKILL);
	clock_gettime(CLOCK_MONOTONIC, &b);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	assert_true((b.tv_sec - a.tv_sec) * 1000 + (b.tv_nsec - a.tv_nsec) / 1000000 >= 290);
	if (pidfd >= 0)
		close(pidfd);
}

/* One that had exited: nothing sent, its status kept; one reaped by another waiter: gone */
static void test_stop_exited_or_reaped(void **state)
{
	char *argv[] = { "sh", "-c", "exit 3", NULL };
	int pidfd, status;
	pid_t pid = start_running(argv, &pidfd);

	usleep(200 * 1000);
	assert_int_equal(tk_spawn_stop(pid, pidfd, 5000, &status), 0);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 3);
	if (pidfd >= 0)
		close(pidfd);

	pid = start_running(argv, &pidfd);
	assert_int_equal(waitpid(pid, NULL, 0), pid);	/* the host's own waiter */
	assert_int_equal(tk_spawn_stop(pid, pidfd, 5000, &status), 0);
	assert_int_equal(status, -1);
	if (pidfd >= 0)
		close(pidfd);
}

/* A held command that died before its release: -EPIPE, and no SIGPIPE for the caller */
static void test_release_of_dead_command(void **state)
{
	char *argv[] = { "sleep", "30", NULL };
	int rel, errfd, status;
	pid_t pid = tk_spawn_held(argv, NULL, -1, &rel, &errfd);

	assert_true(pid > 0);
	assert_int_equal(kill(pid, SIGKILL), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	/* SIGPIPE at its default here: a write() would end this test */
	signal(SIGPIPE, SIG_DFL);
	assert_int_equal(tk_spawn_release(&rel, &errfd), -EPIPE);
	assert_int_equal(rel, -1);
	assert_int_equal(errfd, -1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mask_not_inherited),
		cmocka_unit_test(test_exec_error),
		cmocka_unit_test(test_stop_sigterm),
		cmocka_unit_test(test_stop_sigkill_after_grace),
		cmocka_unit_test(test_stop_exited_or_reaped),
		cmocka_unit_test(test_release_of_dead_command),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
