/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/* Starting a command that runs only once tracing is attached, and ending it. */
#ifndef __TK_SPAWN_HELD_H
#define __TK_SPAWN_HELD_H

#include <sys/types.h>

/*
 * Fork @argv held before exec: it calls execvp only after a byte is written
 * to *@release_fd, a socket (EOF on it: it exits 127 without running). Its exec error,
 * if any, comes back as an int errno through *@exec_err_fd (close-on-exec on
 * the child's side: EOF means the exec happened). @env_add (NULL, or
 * NULL-terminated "NAME=VALUE" strings) is added to the command's
 * environment; an LD_PRELOAD there goes before the one the environment
 * already has. @keep_fd (or -1) is left open across the exec (its
 * close-on-exec flag cleared in the child only). SIGINT, SIGTERM and SIGPIPE
 * are reset to their defaults in the child, and its signal mask emptied (the
 * calling thread's may block some). Returns the pid or a negative errno.
 */
pid_t tk_spawn_held(char *const *argv, char *const *env_add, int keep_fd, int *release_fd,
		    int *exec_err_fd);

/*
 * Release a held command and wait for its exec: 0 when it runs, a positive
 * errno when it could not be run (then it has exited), or a negative errno
 * when it could not be released. Closes both descriptors (sets them to -1).
 */
int tk_spawn_release(int *release_fd, int *exec_err_fd);

/*
 * End our child @pid if it still runs, and reap it, as `perf record` ends its
 * workload: SIGTERM (and SIGCONT, for a stopped one), then SIGKILL when it
 * has not exited within @grace_ms (<= 0: SIGKILL at once). Signals go
 * through @pidfd where it is >= 0, so a pid that another waiter of the host
 * reaped (and the kernel reused) is never signalled. Returns the last signal
 * sent, or 0 when it had exited already; *@status is its wait status, or -1
 * when another waiter reaped it.
 */
int tk_spawn_stop(pid_t pid, int pidfd, int grace_ms, int *status);

#endif /* __TK_SPAWN_HELD_H */
