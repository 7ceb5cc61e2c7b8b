// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Starting a command that runs only once tracing is attached (spawn.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/spawn_held.h"

/* In the child, before exec: add @add to the environment. */
static int child_env(char *const *env_add)
{
	char *const *e;

	for (e = env_add; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		char name[64], *cur, *merged;
		size_t n;

		if (!eq || eq == *e || (size_t)(eq - *e) >= sizeof(name))
			return EINVAL;
		n = eq - *e;
		memcpy(name, *e, n);
		name[n] = '\0';
		cur = getenv(name);
		if (!strcmp(name, "LD_PRELOAD") && cur && *cur) {
			/* ours first, then what the command was given */
			if (asprintf(&merged, "%s:%s", eq + 1, cur) < 0)
				return ENOMEM;
			if (setenv(name, merged, 1))
				return errno;
			continue;	/* the child execs or exits: no free needed */
		}
		if (setenv(name, eq + 1, 1))
			return errno;
	}
	return 0;
}

pid_t tk_spawn_held(char *const *argv, char *const *env_add, int keep_fd, int *release_fd,
		    int *exec_err_fd)
{
	int hold[2], errp[2];
	pid_t pid;

	if (!argv || !argv[0])
		return -EINVAL;
	if (pipe2(hold, O_CLOEXEC))
		return -errno;
	if (pipe2(errp, O_CLOEXEC)) {
		int err = -errno;

		close(hold[0]);
		close(hold[1]);
		return err;
	}
	pid = fork();
	if (pid < 0) {
		int err = -errno;

		close(hold[0]);
		close(hold[1]);
		close(errp[0]);
		close(errp[1]);
		return err;
	}
	if (pid == 0) {
		char c;
		int e;

		close(hold[1]);
		close(errp[0]);
		sigset_t none;

		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGPIPE, SIG_DFL);
		/* the caller's thread may block signals (a host's worker): the command does not */
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (read(hold[0], &c, 1) != 1)
			_exit(127);	/* tracekit gave up before starting it */
		e = child_env(env_add);
		if (!e && keep_fd >= 0 && fcntl(keep_fd, F_SETFD, 0))
			e = errno;
		if (!e) {
			execvp(argv[0], argv);
			e = errno;
		}
		if (write(errp[1], &e, sizeof(e)) < 0)
			_exit(126);
		_exit(127);
	}
	close(hold[0]);
	close(errp[1]);
	*release_fd = hold[1];
	*exec_err_fd = errp[0];
	return pid;
}

int tk_spawn_release(int *release_fd, int *exec_err_fd)
{
	ssize_t n;
	int e = 0;

	if (write(*release_fd, "x", 1) != 1) {
		e = -errno;
		close(*release_fd);
		*release_fd = -1;
		close(*exec_err_fd);
		*exec_err_fd = -1;
		return e ? e : -EIO;
	}
	close(*release_fd);
	*release_fd = -1;
	/* EOF: the command is running; an errno: it could not be run */
	do {
		n = read(*exec_err_fd, &e, sizeof(e));
	} while (n < 0 && errno == EINTR);
	close(*exec_err_fd);
	*exec_err_fd = -1;
	return n == sizeof(e) ? (e > 0 ? e : EIO) : 0;
}
