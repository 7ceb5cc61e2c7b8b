// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause
/* Starting a command that runs only once tracing is attached, and ending it (spawn_held.h). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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
	/* a socket, not a pipe: releasing a command that died meanwhile is EPIPE, no SIGPIPE */
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, hold))
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

	if (send(*release_fd, "x", 1, MSG_NOSIGNAL) != 1) {
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

#ifndef __NR_pidfd_send_signal
#define __NR_pidfd_send_signal 424
#endif

/* Reap @pid if it has exited (@flags 0: wait for it). True when it is gone. */
static bool reap(pid_t pid, int flags, int *status)
{
	pid_t r;
	int st;

	do {
		r = waitpid(pid, &st, flags);
	} while (r < 0 && errno == EINTR);
	if (r == pid) {
		*status = st;
		return true;
	}
	if (r < 0 && errno == ECHILD) {
		/* reaped by another waiter of the host's (SIGCHLD ignored, waitpid(-1)) */
		*status = -1;
		return true;
	}
	return false;
}

/* By its pidfd where there is one: a pid reaped by someone else is never signalled. */
static void send_signal(pid_t pid, int pidfd, int sig)
{
	if (pidfd >= 0 && !syscall(__NR_pidfd_send_signal, pidfd, sig, NULL, 0))
		return;
	if (pidfd >= 0 && errno == ESRCH)
		return;
	kill(pid, sig);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

/* Reap @pid once it exits, waiting at most @ms. True when it is gone. */
static bool wait_gone(pid_t pid, int pidfd, int ms, int *status)
{
	int64_t end = now_ms() + ms, left;

	for (;;) {
		if (reap(pid, WNOHANG, status))
			return true;
		left = end - now_ms();
		if (left <= 0)
			return false;
		if (pidfd >= 0) {
			struct pollfd pfd = { .fd = pidfd, .events = POLLIN };

			/* readable once it exited; EINTR: look again */
			poll(&pfd, 1, (int)left);
		} else {
			usleep((left < 10 ? left : 10) * 1000);
		}
	}
}

int tk_spawn_stop(pid_t pid, int pidfd, int grace_ms, int *status)
{
	*status = -1;
	if (pid <= 0 || reap(pid, WNOHANG, status))
		return 0;
	if (grace_ms > 0) {
		send_signal(pid, pidfd, SIGTERM);
		/* a stopped process (^Z, SIGSTOP) acts on SIGTERM only once continued */
		send_signal(pid, pidfd, SIGCONT);
		if (wait_gone(pid, pidfd, grace_ms, status))
			return SIGTERM;
	}
	send_signal(pid, pidfd, SIGKILL);
	reap(pid, 0, status);
	return SIGKILL;
}
