// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/*
 * Starting a held command (core/spawn_held.c): it runs only once released,
 * with the caller's signal mask and ignored signals not passed on, and an
 * exec failure comes back as its errno.
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_mask_not_inherited),
		cmocka_unit_test(test_exec_error),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
